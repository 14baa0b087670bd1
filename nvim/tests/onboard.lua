-- First-run behaviour of the nvim/ plugin, against an in-process fake server (run by
-- tests/e2e/test_nvim_onboard.py):   nvim --headless --clean -l nvim/tests/onboard.lua TMPDIR
-- Root markers + workspace_required (no server outside memory), the statusline component, the
-- asynchronous Telescope live finder (stale answers dropped) and `:help memsearch`.
-- Prints ONBOARD OK and exits 0, or exits 1 on the first failed check.

local script = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p')
local plugin_root = vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(script)))
local tmp = vim.fs.normalize(assert(_G.arg[1], 'usage: onboard.lua TMPDIR'))
vim.opt.rtp:prepend(plugin_root)
vim.cmd('filetype on')

local function check(cond, fmt, ...)
  if not cond then
    error('check failed: ' .. fmt:format(...), 2)
  end
end

--- A fake server run in-process: answers initialize/shutdown, keeps memsearch/search requests
--- for the test to answer (in any order), records cancellations and can send notifications.
local fake = { searches = {}, cancelled = {}, started = 0 }
local function fake_cmd(dispatchers)
  fake.started = fake.started + 1
  fake.dispatchers = dispatchers
  local next_id, closing = 0, false
  return {
    request = function(method, params, callback)
      next_id = next_id + 1
      if method == 'initialize' then
        fake.root = params.rootUri and vim.uri_to_fname(params.rootUri)
        vim.schedule(function()
          callback(nil, { capabilities = {} })
        end)
      elseif method == 'memsearch/search' then
        fake.searches[#fake.searches + 1] = { id = next_id, query = params.query, reply = callback }
      elseif method == 'workspace/executeCommand' and params.command == 'memsearch.status' then
        vim.schedule(function()
          callback(nil, fake.status)
        end)
      else
        vim.schedule(function()
          callback(nil, vim.NIL)
        end)
      end
      return true, next_id
    end,
    notify = function(method, params)
      if method == '$/cancelRequest' then
        fake.cancelled[#fake.cancelled + 1] = params.id
      elseif method == 'exit' then
        closing = true
        vim.schedule(function()
          dispatchers.on_exit(0, 0)
        end)
      end
      return true
    end,
    is_closing = function()
      return closing
    end,
    terminate = function()
      if not closing then
        closing = true
        vim.schedule(function()
          dispatchers.on_exit(0, 15)
        end)
      end
    end,
  }
end

local function write(path, lines)
  vim.fn.mkdir(vim.fs.dirname(path), 'p')
  vim.fn.writefile(lines, path)
end

local ok, err = xpcall(function()
  -- 0. A build in a running session (install.build() ends with refresh()): the resolved config, cached by
  --    vim.lsp.enable, picks the new venv's server at once, without a restart
  local install = require('memsearch.install')
  vim.lsp.enable('memsearch')
  check(vim.deep_equal(vim.lsp.config.memsearch.cmd, { 'memsearch-lsp', 'serve' }), 'cmd before %s', vim.inspect(vim.lsp.config.memsearch.cmd))
  write(install.venv_bin(), { '#!/bin/sh', 'exit 0' })
  vim.fn.setfperm(install.venv_bin(), 'rwxr-xr-x')
  check(vim.lsp.config.memsearch.cmd[1] == 'memsearch-lsp', 'the cached config changed by itself')
  install.refresh()
  check(vim.deep_equal(vim.lsp.config.memsearch.cmd, { install.venv_bin(), 'serve' }), 'cmd after the build %s',
    vim.inspect(vim.lsp.config.memsearch.cmd))
  vim.fn.delete(install.home(), 'rf')
  install.refresh()
  vim.lsp.enable('memsearch', false)

  local ms = require('memsearch')
  ms.setup({ cmd = fake_cmd })
  local cfg = vim.lsp.config.memsearch
  check(vim.deep_equal(cfg.root_markers, { '.memsearch.toml', 'memory' }), 'root_markers %s', vim.inspect(cfg.root_markers))
  check(cfg.workspace_required == true, 'workspace_required')

  -- 1. Markdown in a repository without memory starts nothing; :Memsearch says to run init.
  local plain = tmp .. '/plain-repo'
  vim.fn.mkdir(plain .. '/.git', 'p')
  write(plain .. '/README.md', { '# A repository' })
  vim.cmd.cd(vim.fn.fnameescape(plain))
  vim.cmd.edit('README.md')
  check(vim.bo.filetype == 'markdown', 'filetype %s', vim.bo.filetype)
  check(#vim.lsp.get_clients({ name = 'memsearch' }) == 0 and fake.started == 0, 'a server started outside memory')
  check(ms.find_root() == nil, 'find_root %s', tostring(ms.find_root()))
  check(ms.status() == '', 'status outside memory: %q', ms.status())
  local why
  ms.with_client(function(client, reason)
    check(client == nil, 'with_client started a client outside memory')
    why = reason
  end)
  check(why and why:find('no memory here: run `memsearch%-lsp init`') ~= nil, 'reason %s', tostring(why))
  check(fake.started == 0, 'with_client started a server outside memory')
  local said, notify = {}, vim.notify
  vim.notify = function(msg)
    said[#said + 1] = msg
  end
  ms.today()
  check(#said == 1 and said[1]:find('no memory here: run :Memsearch init', 1, true) ~= nil
    and not said[1]:find('no memory here.*no memory here'), ':Memsearch today said %s', vim.inspect(said))
  -- every command says this editor's command, not the CLI's (`:Memsearch search` said "run `memsearch-lsp init`")
  for _, sub in ipairs({ 'search foo', 'remember a note', 'reindex', 'status', 'compact dry-run' }) do
    said = {}
    ms.command({ args = sub }) -- (:Memsearch's handler)
    vim.wait(2000, function()
      return #said > 0
    end, 10)
    check(#said >= 1 and said[#said]:find('no memory here: run :Memsearch init', 1, true) ~= nil
      and not said[#said]:find('memsearch-lsp init', 1, true), ':Memsearch %s said %s', sub, vim.inspect(said))
  end
  vim.notify = notify

  -- 2. In a memory workspace the server starts at the root; the statusline follows progress.
  local ws = tmp .. '/project'
  write(ws .. '/memory/MEMORY.md', { '# Memory', '', '## Redis', '', 'ttl 5 min' })
  write(ws .. '/src/notes.md', { '# Not memory, but inside the workspace' })
  vim.cmd.cd(vim.fn.fnameescape(ws))
  vim.cmd.edit('src/notes.md')
  check(vim.wait(5000, function()
    local c = vim.lsp.get_clients({ name = 'memsearch', bufnr = 0 })[1]
    return c ~= nil and c.initialized
  end, 10), 'no initialized client in the memory workspace')
  local client = vim.lsp.get_clients({ name = 'memsearch' })[1]
  check(vim.fs.normalize(client.root_dir) == vim.fs.normalize(vim.uv.fs_realpath(ws)), 'root_dir %s', client.root_dir)
  check(ms.status() == 'memsearch: starting', 'status %q', ms.status())
  local d = fake.dispatchers
  d.notification('$/progress', { token = 't1', value = { kind = 'begin', title = 'Indexing memory', percentage = 0 } })
  check(ms.status() == 'memsearch: indexing 0%', 'status at begin %q', ms.status())
  d.notification('$/progress', { token = 't1', value = { kind = 'report', message = '3/12', percentage = 40 } })
  check(ms.status() == 'memsearch: indexing 40%', 'status at report %q', ms.status())
  d.notification('$/progress', { token = 't1', value = { kind = 'end', message = 'done' } })
  d.notification('memsearch/indexed', { root = ws, files = 2, chunks = 7, embedded = 7, reused = 0, ms = 5 })
  check(ms.status() == 'memsearch: 7 chunks', 'status after indexing %q', ms.status())
  check(ms.status({ bufnr = vim.fn.bufnr('#') }) == 'memsearch: 7 chunks', 'status of another buffer')
  -- :Memsearch status while a folder's first index pass runs: the server gives no counts for it yet
  local other_ws = '/srv/indexed'
  fake.status = { version = '0.1.0', index_passes = 0, roots = {
    { root = ws, root_uri = vim.uri_from_fname(ws), indexing = true },
    { root = other_ws, root_uri = vim.uri_from_fname(other_ws), files = 2, chunks = 7, model = 'm', collection = 'c' },
  } }
  local shown = {}
  vim.notify = function(msg)
    shown[#shown + 1] = msg
  end
  ms.show_status() -- what :Memsearch status runs
  check(vim.wait(5000, function()
    return #shown > 0
  end, 10), ':Memsearch status said nothing')
  vim.notify = notify
  check(shown[1]:find(ws .. ': indexing…', 1, true) ~= nil and not shown[1]:find(ws .. ':  files', 1, true),
    ':Memsearch status while indexing said %q', shown[1])
  check(shown[1]:find(other_ws .. ': 2 files, 7 chunks (model m, collection c)', 1, true) ~= nil,
    ':Memsearch status of an indexed root said %q', shown[1])

  -- 2b. A buffer of another memory workspace (cwd still in the first): its own server, never the first one's
  --     (a note for it went into the first workspace's log)
  local other = tmp .. '/other'
  write(other .. '/memory/MEMORY.md', { '# Memory', '', '## Kafka', '', 'we chose Kafka' })
  write(other .. '/src/app.py', { 'print(1)' })
  vim.cmd.edit(vim.fn.fnameescape(other .. '/src/app.py'))
  check(ms.find_root() == vim.fs.normalize(other), 'find_root %s', tostring(ms.find_root()))
  check(ms.get_client() == nil, 'the first workspace client answered for another workspace')
  local started, theirs = fake.started, nil
  ms.with_client(function(c)
    theirs = c
  end)
  check(vim.wait(5000, function()
    return theirs ~= nil
  end, 10), 'no client for the other workspace')
  check(fake.started == started + 1 and theirs ~= client, 'no server started for the other workspace')
  check(vim.fs.normalize(theirs.root_dir) == vim.fs.normalize(other), 'its root_dir %s', theirs.root_dir)
  theirs:stop(true)
  vim.cmd.edit(vim.fn.fnameescape(ws .. '/src/notes.md'))

  -- 3. The Telescope live finder never blocks: it yields while the request runs; a newer prompt
  --    cancels the older request, whose late answer is dropped.
  package.loaded['plenary.async.control'] = {
    channel = {
      oneshot = function()
        local co, value, done, waiting = coroutine.running(), nil, false, false
        local function tx(v)
          value, done = v, true
          if waiting then
            assert(coroutine.resume(co, v))
          end
        end
        local function rx()
          if done then
            return value
          end
          waiting = true
          return coroutine.yield()
        end
        return tx, rx
      end,
    },
  }
  local fn = require('memsearch.telescope').live_fn(client, 5)
  check(vim.deep_equal(fn('  '), {}), 'an empty prompt asks nothing')
  local results = {}
  local function run(prompt)
    local co = coroutine.create(function()
      results[prompt] = fn(prompt)
    end)
    assert(coroutine.resume(co))
    return co
  end
  local first, second = run('re'), run('redis ttl')
  check(coroutine.status(first) == 'suspended' and coroutine.status(second) == 'suspended', 'the finder blocked')
  check(#fake.searches == 2 and fake.searches[2].query == 'redis ttl', 'searches %s', vim.inspect(fake.searches))
  check(vim.deep_equal(fake.cancelled, { fake.searches[1].id }), 'the older request was not cancelled: %s', vim.inspect(fake.cancelled))
  local hit = { source = 'memory/MEMORY.md', heading = 'Redis', start_line = 3, end_line = 5, snippet = 'ttl 5 min', score = 0.9 }
  fake.searches[2].reply(nil, { hit })
  check(vim.wait(2000, function()
    return coroutine.status(second) == 'dead'
  end, 10), 'the newest answer never arrived')
  check(#results['redis ttl'] == 1 and results['redis ttl'][1].heading == 'Redis', 'newest %s', vim.inspect(results['redis ttl']))
  fake.searches[1].reply(nil, { hit, hit })
  check(vim.wait(2000, function()
    return coroutine.status(first) == 'dead'
  end, 10), 'the cancelled request never finished')
  check(vim.deep_equal(results['re'], {}), 'a stale answer reached the picker: %s', vim.inspect(results['re']))
  local entry = require('memsearch.telescope').entry_maker(hit)
  check(entry.lnum == 3 and entry.filename == 'memory/MEMORY.md', 'entry %s', vim.inspect(entry))

  -- 4. :help memsearch (tags generated from nvim/doc into a scratch runtime folder)
  local rt = tmp .. '/rt'
  vim.fn.mkdir(rt .. '/doc', 'p')
  vim.fn.writefile(vim.fn.readfile(plugin_root .. '/doc/memsearch.txt'), rt .. '/doc/memsearch.txt')
  vim.cmd.helptags(vim.fn.fnameescape(rt .. '/doc')) -- errors on a duplicate or malformed tag
  vim.opt.rtp:prepend(rt)
  vim.cmd.help('memsearch')
  check(vim.bo.filetype == 'help' and vim.api.nvim_buf_get_name(0):find('memsearch%.txt$') ~= nil,
    'help buffer %s (%s)', vim.api.nvim_buf_get_name(0), vim.bo.filetype)
  check(vim.api.nvim_get_current_line():find('*memsearch*', 1, true) ~= nil, 'cursor line %q', vim.api.nvim_get_current_line())
  for _, tag in ipairs({ ':Memsearch', ':Memsearch-search', ':Memsearch-today', ':Memsearch-reindex', ':Memsearch-compact',
    ':Memsearch-status', 'memsearch.status()', 'memsearch.setup()', 'memsearch-workspace', 'memsearch-install',
    ':Telescope-memsearch', 'MemsearchIndexed', 'memsearch-health' }) do
    vim.cmd.help(tag)
    check(vim.api.nvim_get_current_line():find('*' .. tag .. '*', 1, true) ~= nil, ':help %s landed on %q', tag,
      vim.api.nvim_get_current_line())
  end
  for _, sub in ipairs(ms.subcommands) do
    check(#vim.fn.taglist('^:Memsearch-' .. sub .. '$') == 1, ':Memsearch %s is not documented', sub)
  end

  -- 4b. A failed CLI call shows the message and hint of its --json error, not the JSON
  local cli = tmp .. '/fake-cli'
  write(cli, { '#!/bin/sh', 'cat >/dev/null', 'echo "memsearch-lsp WARNING a log line" >&2',
    [[echo '{"error": {"message": "the note is 70000 bytes; notes are limited to 64 KiB", "hint": "split it"}}']], 'exit 1' })
  vim.fn.setfperm(cli, 'rwxr-xr-x')
  ms.setup({ cmd = { cli, 'serve' }, enable = false })
  local said2, notify2, failed = {}, vim.notify, nil
  vim.notify = function(msg)
    said2[#said2 + 1] = msg
  end
  ms.remember('x', function(e)
    failed = e
  end)
  check(vim.wait(10000, function()
    return failed ~= nil
  end, 10), 'remember never failed')
  vim.notify = notify2
  check(failed == 'the note is 70000 bytes; notes are limited to 64 KiB (split it)', 'remember failed with %q', failed)
  check(said2[#said2] == 'memsearch: remember failed: ' .. failed, 'said %s', vim.inspect(said2))

  -- 5. :checkhealth outside memory: the install advice works today, and it says to run init
  client:stop(true)
  check(vim.wait(5000, function()
    return #vim.lsp.get_clients({ name = 'memsearch' }) == 0
  end, 10), 'the fake client did not stop')
  vim.cmd.cd(vim.fn.fnameescape(plain))
  ms.setup({ cmd = { 'memsearch-lsp-not-installed', 'serve' } })
  vim.cmd('checkhealth memsearch')
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  check(text:find('pipx install .', 1, true) ~= nil, 'no checkout install advice:\n%s', text)
  check(text:find('after a release to PyPI: pipx install memsearch-lsp', 1, true) ~= nil, 'registry advice:\n%s', text)
  check(text:find('WARNING no memory here: run `memsearch-lsp init`', 1, true) ~= nil, 'no init advice:\n%s', text)

  -- 6. A memory file opened with no server installed: said once a session, with the build step; not outside memory
  local told, notify3 = {}, vim.notify
  vim.notify = function(msg, level)
    told[#told + 1] = { msg = msg, level = level }
  end
  vim.cmd.edit(vim.fn.fnameescape(plain .. '/README.md'))
  vim.cmd.edit(vim.fn.fnameescape(ws .. '/memory/MEMORY.md'))
  write(ws .. '/memory/2026-01-02.md', { '# 2026-01-02' })
  vim.cmd.edit(vim.fn.fnameescape(ws .. '/memory/2026-01-02.md'))
  vim.notify = notify3
  check(#told == 1 and told[1].level == vim.log.levels.WARN
    and told[1].msg:find("`memsearch-lsp-not-installed` is not executable: run :lua require('memsearch.install').build()", 1, true) ~= nil,
    'told %s', vim.inspect(told))
end, debug.traceback)

if ok then
  io.stdout:write('ONBOARD OK\n')
  vim.cmd('qall!')
else
  io.stdout:write('ONBOARD FAILED: ' .. tostring(err) .. '\n')
  vim.cmd('cquit 1')
end
