-- memsearch.health: `:checkhealth memsearch` (which server and from where, its version, client, index status).
local M = {}

local health = vim.health

--- The server command without its `serve ...` tail, to run CLI subcommands with the same program
--- (`{ 'memsearch-lsp' }`, or `{ python, '-m', 'memsearch_lsp' }`).
---@param cmd string[]
---@return string[]
function M.cli_prefix(cmd)
  local prefix = {}
  for _, part in ipairs(cmd) do
    if part == 'serve' then
      break
    end
    prefix[#prefix + 1] = part
  end
  return #prefix > 0 and prefix or { cmd[1] }
end

local function run(argv, timeout_ms)
  local ok, obj = pcall(function()
    return vim.system(argv, { text = true }):wait(timeout_ms)
  end)
  if not ok then
    return nil, tostring(obj)
  end
  if obj.code ~= 0 then
    local why = vim.trim((obj.stderr or '') .. '\n' .. (obj.stdout or ''))
    local tail = vim.split(why, '\n', { trimempty = true })
    return nil, ('exit %s: %s'):format(obj.code, tail[#tail] or '')
  end
  return vim.trim(obj.stdout or '')
end

local function str(v)
  return (v == nil or v == vim.NIL) and '?' or tostring(v)
end

local function report_roots(status, source)
  local roots = type(status) == 'table' and (type(status.roots) == 'table' and status.roots or { status }) or {}
  if #roots == 0 then
    health.warn(source .. ': no memory roots indexed yet')
  end
  for _, r in ipairs(roots) do
    local files, chunks = tonumber(r.files), tonumber(r.chunks)
    local msg = ('%s: %s files, %s chunks (model %s, collection %s) [%s]'):format(
      str(r.root), str(r.files), str(r.chunks), str(r.model), str(r.collection), source)
    if files and chunks and files > 0 and chunks > 0 then
      health.ok(msg)
    else
      health.warn(msg, source == 'memsearch.status' and { 'Write notes under memory/ or run :Memsearch reindex' }
        or { 'Open a memory file (the server indexes on start) or run `memsearch-lsp index`' })
    end
  end
end

--- `memsearch-lsp doctor --json` for `root`: one line per check; a failed check is an ERROR with its fix.
function M.report_doctor(prefix, root)
  health.start('memsearch: doctor')
  local argv = vim.list_extend(vim.deepcopy(prefix), { 'doctor', '--json', '--workspace', root })
  local ok, obj = pcall(function()
    return vim.system(argv, { text = true }):wait(120000)
  end)
  local decoded, report = pcall(vim.json.decode, ok and obj.stdout or '')
  if not (decoded and type(report) == 'table' and type(report.checks) == 'table') then
    return health.warn(('`%s` gave no report: %s'):format(table.concat(argv, ' '), str(ok and obj.stderr or obj)))
  end
  for _, c in ipairs(report.checks) do
    local line = ('%s: %s'):format(str(c.name), str(c.detail))
    if c.status == 'fail' then
      health.error(line, { str(c.fix) })
    elseif c.status == 'ok' then
      health.ok(line)
    else
      health.info(line)
    end
  end
end

function M.check()
  local memsearch = require('memsearch')

  health.start('memsearch: Neovim')
  if vim.fn.has('nvim-0.11') == 1 then
    health.ok('Neovim ' .. tostring(vim.version()))
  else
    health.error('Neovim 0.11+ is required (vim.lsp.config / vim.lsp.enable)')
  end
  local cfg = memsearch.lsp_config()
  if not cfg then
    health.error('no `memsearch` LSP config found', { 'Put the plugin on the runtimepath (it ships lsp/memsearch.lua)' })
    return
  end
  if vim.lsp.is_enabled and vim.lsp.is_enabled('memsearch') then
    health.ok('LSP config `memsearch` is enabled')
  else
    health.warn('LSP config `memsearch` is not enabled', {
      "require('memsearch').setup() or vim.lsp.enable('memsearch')",
    })
  end
  if vim.tbl_get(cfg, 'capabilities', 'workspace', 'didChangeWatchedFiles', 'dynamicRegistration') then
    health.ok('didChangeWatchedFiles dynamic registration is on (files written by agents are seen)')
  else
    health.warn('didChangeWatchedFiles dynamic registration is off; the server falls back to polling')
  end

  health.start('memsearch: server')
  local install = require('memsearch.install')
  local cmd = cfg.cmd
  local prefix
  if type(cmd) ~= 'table' then
    health.info('cmd is a function (custom transport); skipping the executable checks')
  elseif vim.fn.executable(cmd[1]) ~= 1 then
    health.error(('`%s` is not executable (cmd = %s, from %s)'):format(cmd[1], vim.inspect(cmd), install.describe(cmd)), {
      ("install it into the plugin's own venv: :lua require('memsearch.install').build()  (lazy.nvim's `build` step does it; log: %s)"):format(install.log_file()),
      'or from a memsearch-lsp checkout: pipx install .  (or: python3 -m pip install --user .)',
      'after a release to PyPI: pipx install memsearch-lsp',
      "or point cmd at it: require('memsearch').setup({ cmd = { '/path/to/memsearch-lsp', 'serve' } })",
    })
  else
    health.ok(('server: %s (from %s)'):format(vim.fn.exepath(cmd[1]), install.describe(cmd)))
    if cmd[1] ~= install.venv_bin() and vim.fn.executable(install.venv_bin()) == 1 then
      health.info(("the plugin's build step also installed %s (not used: cmd is set)"):format(install.venv_bin()))
    end
    prefix = M.cli_prefix(cmd)
    local argv = vim.list_extend(vim.deepcopy(prefix), { '--version' })
    local out, err = run(argv, 30000)
    if out and out ~= '' then
      health.ok('version: ' .. (vim.split(out, '\n')[1]))
    else
      health.error(('`%s` failed: %s'):format(table.concat(argv, ' '), str(err)))
      prefix = nil
    end
  end

  health.start('memsearch: index')
  local clients = vim.lsp.get_clients({ name = 'memsearch' })
  if #clients > 0 then
    for _, client in ipairs(clients) do
      local resp, err = client:request_sync('workspace/executeCommand', { command = 'memsearch.status', arguments = {} }, 10000)
      if resp and not resp.err then
        health.ok(('client %d running for %s (server %s)'):format(client.id, str(client.root_dir), str(type(resp.result) == 'table' and resp.result.version or nil)))
        report_roots(resp.result, 'memsearch.status')
      else
        health.error(('client %d: memsearch.status failed: %s'):format(client.id, str(err or (resp and vim.inspect(resp.err)))))
      end
    end
  else
    local root = memsearch.find_root()
    if not root then
      health.warn(('%s: no %s above %s, so no server starts'):format(memsearch.NO_MEMORY,
        table.concat(cfg.root_markers or memsearch.root_markers, ' or '), vim.fn.getcwd()),
        { 'memsearch-lsp init (in the project folder) creates memory/ and .memsearch.toml' })
    elseif prefix then
      local argv = vim.list_extend(vim.deepcopy(prefix), { 'status', '--json', '--workspace', root })
      local out, err = run(argv, 60000)
      local ok, status = pcall(vim.json.decode, out or '')
      if out and ok then
        health.info('no memsearch client is running; asked the CLI')
        report_roots(status, 'memsearch-lsp status')
      else
        health.warn(('`%s` failed: %s'):format(table.concat(argv, ' '), str(err or out)))
      end
    end
  end
  local root = #clients > 0 and clients[1].root_dir or memsearch.find_root()
  if prefix and root then
    M.report_doctor(prefix, root)
  end
  local last = memsearch.last_indexed
  if last then
    health.ok(('last memsearch/indexed: %s files, %s chunks (%s embedded, %s reused) at %s'):format(
      str(last.files), str(last.chunks), str(last.embedded), str(last.reused), os.date('%H:%M:%S', last.time)))
  elseif #clients > 0 then
    health.info('no memsearch/indexed notification received yet (the first index may still be running)')
  end
end

return M
