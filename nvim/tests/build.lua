-- The lazy.nvim build step, headless (run by tests/e2e/test_nvim_build.py):
--   nvim --headless --clean -l nvim/tests/build.lua CHECKOUT SITE_PACKAGES_JSON WORKSPACE
-- CHECKOUT is a copy of the repository (the plugin as lazy.nvim clones it); the venv borrows the
-- dependencies from SITE_PACKAGES (so nothing is downloaded). The lazy.nvim spec is the one the README
-- documents (its `build` and `config` run as lazy.nvim runs them). Prints BUILD OK, or exits 1.
local root = assert(_G.arg[1], 'usage: build.lua CHECKOUT SITE_PACKAGES_JSON WORKSPACE')
local sites = vim.json.decode(assert(_G.arg[2]))
local ws = assert(_G.arg[3])

local function check(cond, fmt, ...)
  if not cond then
    error('check failed: ' .. fmt:format(...), 2)
  end
end

--- The lazy.nvim spec documented in a README: the Lua block that starts with the repository's name.
local function documented_spec(readme)
  local text = table.concat(vim.fn.readfile(readme), '\n')
  local block = text:match("```lua\n({\n  'memsearch%-lsp/memsearch%-lsp',.-\n})\n```")
  check(block ~= nil, 'no lazy.nvim spec in %s', readme)
  return assert(loadstring('return ' .. block))()
end

local ok, err = xpcall(function()
  local spec = documented_spec(root .. '/README.md')
  local spec2 = documented_spec(root .. '/nvim/README.md')
  check(spec.cmd == 'Memsearch' and spec.ft == 'markdown' and spec2.cmd == spec.cmd, 'spec %s', vim.inspect(spec))
  -- its build step loads memsearch.install from the checkout with dofile (the plugin is not on the
  -- runtimepath yet) and calls build(): record what it loads, then run that build with the test's options
  local loaded
  local real_dofile = dofile
  _G.dofile = function(path)
    loaded = path
    return { build = function() end }
  end
  spec.build({ dir = root, name = 'memsearch-lsp' })
  spec2.build({ dir = root, name = 'memsearch-lsp' })
  _G.dofile = real_dofile
  check(loaded == root .. '/nvim/lua/memsearch/install.lua', 'the build step loads %s', tostring(loaded))
  local install = dofile(loaded)
  check(install.checkout_root() == vim.fs.normalize(root), 'checkout root %s', install.checkout_root())
  local before, source = install.server_cmd()
  check(before[1] == 'memsearch-lsp' and source == 'path', 'before the build: %s %s', vim.inspect(before), source)
  local home = vim.fs.normalize(vim.fn.stdpath('data')) .. '/memsearch'
  check(install.venv() == home .. '/venv', 'venv under stdpath("data"): %s', install.venv())

  local borrowed = 0
  local opts = {
    pip_args = { '--no-deps', '--no-index', '--no-build-isolation' },
    after_venv = function(python)
      local purelib = vim.trim(vim.system({ python, '-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])' },
        { text = true }):wait().stdout)
      vim.fn.writefile(sites, purelib .. '/borrowed-deps.pth')
      -- the venv's own setuptools (ensurepip's, older) would shadow the borrowed one that builds the checkout
      vim.system({ python, '-m', 'pip', 'uninstall', '-y', '-q', 'setuptools' }):wait()
      borrowed = borrowed + 1
    end,
  }
  -- a session that already resolved the config (an enabled config caches it) gets the new server without a restart
  vim.opt.rtp:prepend(root .. '/nvim')
  vim.lsp.enable('memsearch')
  check(vim.lsp.config.memsearch.cmd[1] == 'memsearch-lsp', 'cmd before the build %s', vim.inspect(vim.lsp.config.memsearch.cmd))
  local version = install.build(opts)
  check(vim.lsp.config.memsearch.cmd[1] == install.venv_bin(), 'cmd after the build %s', vim.inspect(vim.lsp.config.memsearch.cmd))
  check(version:match('^memsearch%-lsp %d') ~= nil, 'version %q', version)
  check(borrowed == 1, 'after_venv called %d times', borrowed)
  check(vim.fn.executable(install.venv_bin()) == 1, 'no %s', install.venv_bin())
  local log = table.concat(vim.fn.readfile(install.log_file()), '\n')
  check(log:find('-m venv', 1, true) ~= nil and log:find(root .. '[mcp]', 1, true) ~= nil, 'build.log:\n%s', log)
  local where = vim.system({ install.venv_python(), '-c', 'import memsearch_lsp; print(memsearch_lsp.__file__)' }, { text = true }):wait()
  check(vim.startswith(vim.trim(where.stdout), install.venv() .. '/'), 'memsearch_lsp from %s', where.stdout .. where.stderr)

  -- the documented config: the plugin now finds that server by itself
  spec.config({ dir = root, name = 'memsearch-lsp' }, spec.opts)
  check(vim.fn.exists(':Memsearch') == 2, ':Memsearch is not defined by the documented config')
  local ms = require('memsearch')
  check(vim.lsp.is_enabled('memsearch') and ms.options.settings.search.topK == 5, 'setup(opts) %s', vim.inspect(ms.options))
  check(vim.lsp.config.memsearch.cmd[1] == install.venv_bin(), 'cmd %s', vim.inspect(vim.lsp.config.memsearch.cmd))
  vim.cmd.cd(vim.fn.fnameescape(ws))
  vim.cmd('checkhealth memsearch')
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  check(text:find(("OK server: %s (from the plugin's build step"):format(install.venv_bin()), 1, true) ~= nil, 'health:\n%s', text)
  check(text:find('OK version: memsearch-lsp', 1, true) ~= nil, 'health:\n%s', text)
  vim.cmd.bwipeout()

  -- one command makes a memory: :Memsearch init opens MEMORY.md, which starts that server; then remember
  local done
  vim.cmd('Memsearch init')
  check(vim.wait(60000, function()
    return vim.uv.fs_stat(ws .. '/memory/MEMORY.md') ~= nil and vim.api.nvim_buf_get_name(0):find('MEMORY%.md$') ~= nil
  end, 50), 'init did not create and open memory/MEMORY.md (buffer %s)', vim.api.nvim_buf_get_name(0))
  check(vim.wait(60000, function()
    local c = vim.lsp.get_clients({ name = 'memsearch', bufnr = 0 })[1]
    return c ~= nil and c.initialized
  end, 50), 'no memsearch client started for MEMORY.md')
  local client = vim.lsp.get_clients({ name = 'memsearch', bufnr = 0 })[1]
  check(vim.fs.normalize(client.root_dir) == vim.fs.normalize(vim.uv.fs_realpath(ws)) and client.config.cmd[1] == install.venv_bin(),
    'client %s %s', client.root_dir, vim.inspect(client.config.cmd))
  ms.remember('The build step installs the server under stdpath data', function(e, note)
    done = { err = e, note = note }
  end)
  check(vim.wait(180000, function()
    return done ~= nil
  end, 50), 'remember did not finish')
  check(done.err == nil and done.note.source == 'memory/' .. os.date('%Y-%m-%d') .. '.md', 'remember %s', vim.inspect(done))
  local today = table.concat(vim.fn.readfile(ws .. '/' .. done.note.source), '\n')
  check(today:find('installs the server under stdpath data', 1, true) ~= nil, 'today:\n%s', today)

  check(vim.wait(60000, function()
    return ms.last_indexed ~= nil
  end, 50), 'the server never indexed')
  client:stop(true)
  vim.wait(5000, function()
    return client:is_stopped()
  end, 50)

  -- building again (lazy.nvim after an update) upgrades the same venv
  install.build(opts)
  log = table.concat(vim.fn.readfile(install.log_file()), '\n')
  check(log:find('-m venv', 1, true) == nil and borrowed == 2, 'the venv was recreated:\n%s', log)
  check(log:find('Successfully installed memsearch', 1, true) ~= nil, 'not reinstalled:\n%s', log)

  -- a failure says what to do
  local failed, msg = pcall(install.build, { root = ws })
  check(not failed and tostring(msg):find('is not a memsearch%-lsp checkout') ~= nil, 'bad root: %s', tostring(msg))
end, debug.traceback)

if ok then
  io.stdout:write('BUILD OK\n')
  vim.cmd('qall!')
else
  io.stdout:write('BUILD FAILED: ' .. tostring(err) .. '\n')
  vim.cmd('cquit 1')
end
