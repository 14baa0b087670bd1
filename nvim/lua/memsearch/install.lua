-- memsearch.install: the plugin's own server. `build()` (lazy.nvim's `build` step) installs memsearch-lsp from
-- the plugin's checkout into a venv under stdpath('data'); `server_cmd()` is the command that finds it.
-- Loadable with dofile() too (a build step runs before the plugin is on the runtimepath).
local M = {}

M.MIN_PYTHON = { 3, 10 }

--- The checkout this file belongs to: <root>/nvim/lua/memsearch/install.lua.
---@return string
function M.checkout_root()
  local file = vim.fs.normalize(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p'))
  return vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(file))))
end

--- Where the build step puts the server: stdpath('data')/memsearch.
function M.home()
  return vim.fs.joinpath(vim.fn.stdpath('data') --[[@as string]], 'memsearch')
end

function M.venv()
  return vim.fs.joinpath(M.home(), 'venv')
end

function M.venv_python()
  return vim.fs.joinpath(M.venv(), 'bin', 'python')
end

--- The `memsearch-lsp` executable of the build step's venv.
function M.venv_bin()
  return vim.fs.joinpath(M.venv(), 'bin', 'memsearch-lsp')
end

function M.log_file()
  return vim.fs.joinpath(M.home(), 'build.log')
end

--- The default server command: the build step's venv when it has the server, else `memsearch-lsp` on PATH.
---@return string[] cmd, 'build'|'path' source
function M.server_cmd()
  local bin = M.venv_bin()
  if vim.fn.executable(bin) == 1 then
    return { bin, 'serve' }, 'build'
  end
  return { 'memsearch-lsp', 'serve' }, 'path'
end

--- Where a server command comes from, in words (for :checkhealth).
---@param cmd string[]
---@return string
function M.describe(cmd)
  if cmd[1] == M.venv_bin() then
    return ("the plugin's build step (venv %s)"):format(M.venv())
  elseif cmd[1] == 'memsearch-lsp' then
    return 'PATH'
  end
  return "your cmd (require('memsearch').setup({ cmd = ... }) or vim.lsp.config)"
end

--- After a build in a running session: drops Neovim's resolved `memsearch` config, so the next start (and
--- :Memsearch, :checkhealth) resolves lsp/memsearch.lua again and finds the new venv's server (a cmd you set
--- yourself still wins); when the config is enabled, open Markdown buffers of a memory workspace start it now.
function M.refresh()
  if not (vim.lsp and vim.lsp.config and vim.lsp.is_enabled) then
    return
  end
  vim.lsp.config('memsearch', {})
  if vim.lsp.is_enabled('memsearch') then
    vim.lsp.enable('memsearch')
  end
end

local PROBE = 'import json, platform, sys\n'
  .. 'try:\n    import venv, ensurepip\n    ok = True\nexcept Exception:\n    ok = False\n'
  .. 'sys.stdout.write(json.dumps({"version": platform.python_version(), "executable": sys.executable, "venv": ok}))'

local function supported(version)
  local major, minor = version:match('^(%d+)%.(%d+)')
  major, minor = tonumber(major), tonumber(minor)
  return major ~= nil and (major > M.MIN_PYTHON[1] or (major == M.MIN_PYTHON[1] and minor >= M.MIN_PYTHON[2]))
end

--- The first Python >= 3.10 that can make a venv; else nil and what to do.
---@param candidates? string[]
---@return table? python { exe, version }, string? err
function M.find_python(candidates)
  candidates = candidates or { 'python3', 'python3.13', 'python3.12', 'python3.11', 'python3.10', 'python3.14', 'python' }
  local found = {}
  for _, exe in ipairs(candidates) do
    if vim.fn.executable(exe) == 1 then
      local obj = vim.system({ exe, '-c', PROBE }, { text = true }):wait(20000)
      local ok, info = pcall(vim.json.decode, obj.stdout or '')
      if obj.code == 0 and ok and type(info) == 'table' then
        if supported(info.version) and info.venv then
          return { exe = exe, version = info.version, executable = info.executable }
        end
        found[#found + 1] = info
      end
    end
  end
  local min = table.concat(M.MIN_PYTHON, '.')
  if #found == 0 then
    return nil, ('no Python found (tried %s): install Python %s or newer (python.org, apt install python3 python3-venv, brew install python)'):format(
      table.concat(candidates, ', '), min)
  end
  for _, info in ipairs(found) do
    if supported(info.version) then
      return nil, ('Python %s (%s) cannot create virtual environments: on Debian or Ubuntu run `sudo apt install python3-venv`'):format(
        info.version, info.executable)
    end
  end
  local versions = vim.tbl_map(function(info)
    return ('%s (%s)'):format(info.version, info.executable)
  end, found)
  return nil, ('the server needs Python %s or newer; found only %s'):format(min, table.concat(versions, ', '))
end

--- Network failures of pip, to say "connect to the internet" instead of pip's last line.
local NETWORK = { 'Could not find a version that satisfies', 'No matching distribution found', 'Failed to establish a new connection',
  'Temporary failure in name resolution', 'Network is unreachable', 'Name or service not known', 'ProxyError', 'Read timed out' }

---@class memsearch.BuildOptions
---@field root? string      the checkout to install from (default: the one this file is in)
---@field python? string    the Python to make the venv with (default: the first Python >= 3.10 found)
---@field pip_args? string[] more `pip install` arguments (tests: --no-deps --no-index --no-build-isolation)
---@field after_venv? fun(python: string)  called once the venv exists (tests borrow installed packages here)
---@field on_line? fun(line: string)  each line of output (default: written to build.log only)

--- Installs the server from the checkout into stdpath('data')/memsearch/venv, with the `mcp` extra
--- (its dependencies from PyPI): creates the venv when it has no working pip, `pip install <root>[mcp]`,
--- then checks `memsearch-lsp --version`. The whole output goes to build.log. Raises an error that says
--- what to do when a step fails (lazy.nvim shows it as a failed build).
---@param opts? memsearch.BuildOptions
---@return string the version installed
function M.build(opts)
  opts = opts or {}
  local root = opts.root or M.checkout_root()
  if not vim.uv.fs_stat(vim.fs.joinpath(root, 'pyproject.toml')) then
    error(('memsearch: %s is not a memsearch-lsp checkout (no pyproject.toml); build from the repository'):format(root), 0)
  end
  vim.fn.mkdir(M.home(), 'p')
  local log = assert(io.open(M.log_file(), 'w'))
  local function say(line)
    log:write(line, '\n')
    log:flush()
    if opts.on_line then
      opts.on_line(line)
    end
  end
  local function run(argv)
    say('> ' .. table.concat(argv, ' '))
    local env = { PIP_DISABLE_PIP_VERSION_CHECK = '1', PYTHONUTF8 = '1', PYTHONPATH = '', VIRTUAL_ENV = '' }
    local obj = vim.system(argv, { text = true, env = env }):wait()
    for _, line in ipairs(vim.split((obj.stdout or '') .. (obj.stderr or ''), '\n', { trimempty = true })) do
      say(line)
    end
    return obj
  end
  local function fail(msg)
    say('FAILED: ' .. msg)
    log:close()
    error(('memsearch: %s (log: %s)'):format(msg, M.log_file()), 0)
  end

  local python = M.venv_python()
  local works = vim.fn.executable(python) == 1 and run({ python, '-c', 'import pip' }).code == 0
  if not works then
    local base = opts.python
    if not base then
      local found, err = M.find_python()
      if not found then
        fail(err)
      end
      base = found.exe
      say(('Python %s (%s)'):format(found.version, found.executable))
    end
    vim.fn.delete(M.venv(), 'rf')
    local created = run({ base, '-m', 'venv', M.venv() })
    if created.code ~= 0 then
      local text = (created.stdout or '') .. (created.stderr or '')
      fail(text:find('ensurepip') and 'could not create the venv: on Debian or Ubuntu run `sudo apt install python3-venv`'
        or ('could not create the venv in %s (exit %d)'):format(M.venv(), created.code))
    end
  end
  if opts.after_venv then
    opts.after_venv(python)
  end
  local pip = vim.list_extend({ python, '-m', 'pip', 'install', '--upgrade' }, opts.pip_args or {})
  local installed = run(vim.list_extend(pip, { root .. '[mcp]' }))
  if installed.code ~= 0 then
    local text = (installed.stdout or '') .. (installed.stderr or '')
    for _, pattern in ipairs(NETWORK) do
      if text:find(pattern, 1, true) then
        fail("could not download the server's dependencies from PyPI: connect to the internet (or set HTTPS_PROXY / PIP_INDEX_URL), then build again")
      end
    end
    local why = 'exit ' .. installed.code
    for _, line in ipairs(vim.split(vim.trim(text), '\n', { trimempty = true })) do
      if line:find('Error') or line:find('^%s*error:') or line:find('^ERROR:') then
        why = vim.trim(line)
      end
    end
    fail('pip could not install the server: ' .. why)
  end
  local version = run({ M.venv_bin(), '--version' })
  if version.code ~= 0 then
    fail('the installed server does not run: ' .. vim.trim(version.stderr or ''))
  end
  local text = vim.trim(version.stdout or '')
  say(('installed %s in %s'):format(text, M.venv()))
  log:close()
  M.refresh()
  return text
end

return M
