-- Smoke test of the nvim/ plugin without a server (run by tests/e2e/test_nvim.py):
--   nvim --headless --clean -l nvim/tests/smoke.lua
-- Prints SMOKE OK and exits 0, or exits 1 on the first failed check.

local script = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p')
local plugin_root = vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(script)))
vim.opt.rtp:prepend(plugin_root)

local function check(cond, fmt, ...)
  if not cond then
    error('check failed: ' .. fmt:format(...), 2)
  end
end

local ok, err = xpcall(function()
  vim.cmd.runtime('plugin/memsearch.lua')
  check(vim.g.loaded_memsearch == 1, 'plugin/memsearch.lua did not run')
  check(vim.fn.exists(':Memsearch') == 2, ':Memsearch is not defined')
  check(package.loaded['memsearch'] == nil, 'plugin/ must not require memsearch eagerly')
  check(not vim.lsp.is_enabled('memsearch'), 'plugin/ must not enable the server')
  vim.cmd.runtime('plugin/memsearch.lua') -- guarded: a second load is a no-op
  local subs = vim.fn.getcompletion('Memsearch ', 'cmdline')
  check(vim.deep_equal(subs, { 'search', 'remember', 'today', 'reindex', 'compact', 'status', 'init' }), 'completion %s', vim.inspect(subs))
  check(vim.deep_equal(vim.fn.getcompletion('Memsearch rei', 'cmdline'), { 'reindex' }), 'prefix completion')
  check(vim.deep_equal(vim.fn.getcompletion('Memsearch re', 'cmdline'), { 'remember', 'reindex' }), 'prefix completion re')

  -- lsp/memsearch.lua: the default vim.lsp.Config
  local base = dofile(plugin_root .. '/lsp/memsearch.lua')
  check(vim.deep_equal(base.cmd, { 'memsearch-lsp', 'serve' }), 'cmd %s', vim.inspect(base.cmd))
  check(vim.deep_equal(base.filetypes, { 'markdown' }), 'filetypes')
  check(vim.deep_equal(base.root_markers, { '.memsearch.toml', 'memory' }), 'root_markers')
  check(base.workspace_required == true, 'workspace_required')
  check(base.capabilities.workspace.didChangeWatchedFiles.dynamicRegistration == true, 'dynamicRegistration')
  check(type(base.handlers['memsearch/indexed']) == 'function', 'memsearch/indexed handler')

  -- setup(): opts merged over the defaults, cmd replaced (not merged), settings under `memsearch`
  local ms = require('memsearch')
  ms.setup({ cmd = { 'python3', '-m', 'memsearch_lsp', 'serve' }, settings = { search = { topK = 5 } } })
  check(vim.lsp.is_enabled('memsearch'), 'setup() must enable the server')
  local cfg = vim.lsp.config.memsearch
  check(vim.deep_equal(cfg.cmd, { 'python3', '-m', 'memsearch_lsp', 'serve' }), 'cmd %s', vim.inspect(cfg.cmd))
  check(cfg.init_options.search.topK == 5, 'init_options %s', vim.inspect(cfg.init_options))
  check(cfg.settings.memsearch.search.topK == 5, 'settings %s', vim.inspect(cfg.settings))
  check(vim.deep_equal(cfg.filetypes, { 'markdown' }), 'filetypes lost by setup()')
  check(cfg.capabilities.workspace.didChangeWatchedFiles.dynamicRegistration == true, 'capabilities lost by setup()')
  check(ms.options.top_k == 15, 'defaults not kept: %s', vim.inspect(ms.options))
  check(vim.json.encode(cfg.settings):find('"topK":5', 1, true) ~= nil, 'settings encode')
  ms.setup({ settings = { search = { topK = 5 } } })
  check(vim.deep_equal(vim.lsp.config.memsearch.cmd, { 'python3', '-m', 'memsearch_lsp', 'serve' }),
    'a second setup() without cmd keeps the earlier one (vim.lsp.config merges)')

  -- setup() checks its options: a warning per unknown key (with the option it probably meant), an error per bad
  -- value naming the option and what it must be; that option keeps its default, the others still apply
  local told = {}
  local notify_before = vim.notify
  vim.notify = function(msg, level) table.insert(told, { msg = msg, level = level }) end
  local function setup_says(opts)
    told = {}
    ms.setup(opts)
    return told
  end
  local WARN, ERROR = vim.log.levels.WARN, vim.log.levels.ERROR
  local function one(got, level, text)
    return #got == 1 and got[1].level == level and got[1].msg == 'memsearch: ' .. text
  end
  local got = setup_says({ topk = 2, picker = 'fzf', setting = { search = { snippetChars = 20 } }, top_k = 4 })
  check(#got == 3 and got[1].level == ERROR and got[1].msg:find("option 'picker' must be 'select' or 'telescope'", 1, true)
    and got[2].level == WARN and got[2].msg == "memsearch: unknown option 'setting' (did you mean 'settings'?)"
    and got[3].level == WARN and got[3].msg == "memsearch: unknown option 'topk' (did you mean 'top_k'?)",
    'typos told %s', vim.inspect(got))
  check(ms.options.picker == 'select' and ms.options.top_k == 4 and ms.options.topk == nil, 'options %s', vim.inspect(ms.options))
  check(vim.lsp.config.memsearch.init_options.search.snippetChars == nil, 'a misspelt settings reached the server')
  got = setup_says({ top_k = 'two', picker = 'telescope' })
  check(one(got, ERROR, [[option 'top_k' must be a positive integer, got "two"; using the default (15)]]), 'top_k told %s', vim.inspect(got))
  check(ms.options.top_k == 15 and ms.options.picker == 'telescope', 'options %s', vim.inspect(ms.options))
  for _, bad in ipairs({ 0, -3, 2.5, math.huge }) do
    check(one(setup_says({ top_k = bad }), ERROR, ("option 'top_k' must be a positive integer, got %s; using the default (15)")
      :format(vim.inspect(bad))) and ms.options.top_k == 15, 'top_k = %s told %s', bad, vim.inspect(told))
  end
  for key, bad in pairs({ settings = 'search.topK=5', enable = 'yes', lsp = 1, cmd = 'memsearch-lsp serve', picker = 1 }) do
    got = setup_says({ [key] = bad })
    check(#got == 1 and got[1].level == ERROR and got[1].msg:find(("option '%s' must be "):format(key), 1, true),
      '%s = %s told %s', key, vim.inspect(bad), vim.inspect(got))
    check(vim.deep_equal(ms.options[key], ms.defaults[key]), '%s did not keep its default: %s', key, vim.inspect(ms.options))
  end
  check(vim.lsp.config.memsearch.cmd[1] == 'python3' and vim.lsp.is_enabled('memsearch'), 'bad cmd/enable reached the config')
  check(one(setup_says({ zzzzzz = 1 }), WARN, "unknown option 'zzzzzz'"), 'unknown told %s', vim.inspect(told))
  check(one(setup_says('x'), ERROR, 'setup() takes a table of options, got "x"; using the defaults'), 'not a table told %s',
    vim.inspect(told))
  -- valid options say nothing and apply as before
  got = setup_says({ cmd = { 'python3', '-m', 'memsearch_lsp', 'serve' }, settings = { search = { topK = 5 } }, enable = true,
    top_k = 3, picker = 'telescope', lsp = { root_markers = { '.memsearch.toml', 'memory' } } })
  check(#got == 0 and ms.options.top_k == 3 and ms.options.picker == 'telescope', 'valid options told %s', vim.inspect(got))
  check(#setup_says() == 0 and #setup_says({ picker = false }) == 0, 'setup() told %s', vim.inspect(told))
  vim.notify = notify_before
  ms.setup({}) -- back to the defaults for what follows

  -- quickfix items from hits
  local items = ms.to_qf_items({
    { uri = vim.uri_from_fname('/ws/memory/MEMORY.md'), source = 'memory/MEMORY.md', heading = 'Redis Caching',
      start_line = 12, end_line = 16, snippet = 'We use Redis\nfor L1 cache', score = 0.8, id = 'abc' },
  })
  check(items[1].filename == '/ws/memory/MEMORY.md' and items[1].lnum == 12, 'qf item %s', vim.inspect(items[1]))
  check(items[1].text == 'Redis Caching: We use Redis for L1 cache', 'qf text %q', items[1].text)
  check(ms.format_reindex({ files_added = 1, files_modified = 0, files_removed = 2, chunks_total = 9,
    chunks_embedded = 3, chunks_reused = 6, seconds = 0.5 }) == 'reindexed: +1 ~0 -2 files, 9 chunks (3 embedded, 6 reused) in 0.50s',
    'format_reindex')
  check(require('memsearch.health').cli_prefix({ 'py', '-m', 'memsearch_lsp', 'serve', '--tcp', 'x' })[3] == 'memsearch_lsp',
    'cli_prefix')

  -- :Memsearch without a query asks with vim.ui.input, fills quickfix, offers vim.ui.select
  local real_request, sent, offered = ms.request, nil, nil
  ms.request = function(method, params, cb)
    sent = { method = method, params = params }
    cb(nil, { { uri = vim.uri_from_fname('/ws/memory/2026-02-09.md'), source = 'memory/2026-02-09.md',
      heading = 'Deploy', start_line = 4, end_line = 9, snippet = 'rolled back', score = 0.5 } })
  end
  vim.ui.input = function(_, on_confirm) on_confirm('  rollback  ') end
  vim.ui.select = function(items, _, on_choice) offered = items; on_choice(nil) end
  vim.cmd('Memsearch search')
  check(sent and sent.method == 'memsearch/search' and sent.params.query == 'rollback' and sent.params.topK == 15,
    'request %s', vim.inspect(sent))
  check(offered and #offered == 1, 'vim.ui.select not offered the hits')
  local qf = vim.fn.getqflist()
  check(#qf == 1 and qf[1].lnum == 4 and qf[1].text == 'Deploy: rolled back', 'quickfix %s', vim.inspect(qf))

  -- :Memsearch today falls back to creating memory/YYYY-MM-DD.md locally when the server fails
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir .. '/memory', 'p')
  vim.cmd.cd(vim.fn.fnameescape(dir))
  ms.request = function(_, _, cb) cb({ code = -32603, message = 'boom' }, nil, nil) end
  vim.cmd('Memsearch today')
  local today = vim.fs.normalize(vim.uv.fs_realpath(dir)) .. '/memory/' .. os.date('%Y-%m-%d') .. '.md'
  check(vim.fs.normalize(vim.api.nvim_buf_get_name(0)) == today, 'today opened %s', vim.api.nvim_buf_get_name(0))
  check(vim.fn.readfile(today)[1] == '# ' .. os.date('%Y-%m-%d'), 'today file content')
  -- ... but never makes a memory of a folder that has none (`:Memsearch init` does that)
  local plain = vim.fn.tempname()
  vim.fn.mkdir(plain, 'p')
  vim.cmd.cd(vim.fn.fnameescape(plain))
  vim.cmd.enew() -- (the buffer open now decides the workspace: the log above would)
  local said = {}
  local real_notify = vim.notify
  vim.notify = function(msg, level) table.insert(said, { msg = msg, level = level }) end
  vim.cmd('Memsearch today')
  vim.notify = real_notify
  check(vim.fn.isdirectory(plain .. '/memory') == 0, ':Memsearch today made %s/memory', plain)
  check(#said == 1 and said[1].msg:find('no memory here') and said[1].level == vim.log.levels.ERROR,
    'today outside a memory said %s', vim.inspect(said))
  ms.request = real_request

  -- :Memsearch reindex! (the subcommand's bang, as documented) and :Memsearch reindex force re-index all
  local real_reindex, forced = ms.reindex, {}
  ms.reindex = function(force) table.insert(forced, force) end
  vim.cmd('Memsearch reindex!')
  vim.cmd('Memsearch reindex force')
  vim.cmd('Memsearch reindex')
  ms.reindex = real_reindex
  check(vim.deep_equal(forced, { true, true, false }), 'reindex force %s', vim.inspect(forced))

  -- the indexed notification is kept and fires User MemsearchIndexed
  local fired
  vim.api.nvim_create_autocmd('User', { pattern = 'MemsearchIndexed', callback = function(ev) fired = ev.data end })
  base.handlers['memsearch/indexed'](nil, { root = '/ws', files = 3, chunks = 7, embedded = 7, reused = 0, ms = 12 }, { client_id = 1 })
  check(fired and fired.chunks == 7, 'autocmd not fired')
  check(vim.g.memsearch_indexed.files == 3 and ms.last_indexed.root == '/ws', 'last indexed value not kept')

  -- health without a server executable: a clear ERROR naming the missing program
  ms.setup({ cmd = { 'memsearch-lsp-not-installed', 'serve' } })
  vim.cmd('checkhealth memsearch')
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  check(text:find('ERROR `memsearch%-lsp%-not%-installed` is not executable') ~= nil, 'health text:\n%s', text)
  check(text:find('OK Neovim') ~= nil, 'health text:\n%s', text)
  -- and a command in a memory workspace says the same, with the way out (not only "could not start the server")
  vim.fn.mkdir(vim.fn.getcwd() .. '/memory', 'p')
  vim.cmd.enew()
  local why
  ms.with_client(function(_, reason)
    why = reason
  end)
  check(why and why:find('`memsearch%-lsp%-not%-installed` is not executable: run :lua') ~= nil, 'reason %s', tostring(why))

  -- :Memsearch init reads its folder as Vim reads a file name (`new\ proj` is "new proj", `~` is home), and Tab
  -- completes it so; the MEMORY.md it opens starts no server here
  vim.lsp.enable('memsearch', false)
  ms.setup({ cmd = { 'python3', '-m', 'memsearch_lsp', 'serve' }, enable = false })
  local base = vim.fs.normalize(vim.fn.tempname())
  vim.fn.mkdir(base .. '/new proj', 'p')
  for _, typed in ipairs({ base .. '/ne', base .. [[/new\ p]] }) do
    local got = vim.fn.getcompletion('Memsearch init ' .. typed, 'cmdline')
    check(vim.deep_equal(got, { base .. [[/new\ proj/]] }), 'init %s completes to %s', typed, vim.inspect(got))
  end
  local function init_made(typed, dir)
    vim.cmd('Memsearch init ' .. typed)
    local memory = dir .. '/memory/MEMORY.md'
    check(vim.wait(30000, function()
      return vim.fs.normalize(vim.api.nvim_buf_get_name(0)) == memory
    end, 50), ':Memsearch init %s opened %q, not %s', typed, vim.api.nvim_buf_get_name(0), memory)
    check(vim.fn.filereadable(memory) == 1, ':Memsearch init %s made no %s', typed, memory)
  end
  init_made(base .. [[/new\ proj]], base .. '/new proj')
  check(vim.fn.isdirectory(base .. [[/new\ proj]]) == 0, ':Memsearch init made a folder named with a backslash')
  vim.env.HOME = base
  init_made([[~/at\ home]], base .. '/at home')
end, debug.traceback)

if ok then
  io.stdout:write('SMOKE OK\n')
  vim.cmd('qall!')
else
  io.stdout:write('SMOKE FAILED: ' .. tostring(err) .. '\n')
  vim.cmd('cquit 1')
end
