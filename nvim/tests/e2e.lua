-- End-to-end test of the nvim/ plugin against a real memsearch-lsp server (run by tests/e2e/test_nvim.py).
--
--   nvim --headless --clean -l nvim/tests/e2e.lua WORKSPACE CMD_JSON
--
-- WORKSPACE holds memory/MEMORY.md (with a "## Redis Caching" section); CMD_JSON is the server
-- command as a JSON list, e.g. ["/venv/bin/python", "-m", "memsearch_lsp", "serve"].
-- Exits 0 when every step passes, 1 (cquit) on the first failure or Lua error.

local script = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p')
local plugin_root = vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(script)))
local ws = (assert(_G.arg[1], 'usage: e2e.lua WORKSPACE CMD_JSON'))
local cmd = vim.json.decode((assert(_G.arg[2], 'usage: e2e.lua WORKSPACE CMD_JSON')))
ws = vim.fs.normalize(vim.fn.fnamemodify(ws, ':p')):gsub('/$', '')

local t0 = vim.uv.hrtime()
local function log(fmt, ...)
  io.stdout:write(('[%6.1fs] '):format((vim.uv.hrtime() - t0) / 1e9) .. fmt:format(...) .. '\n')
  io.stdout:flush()
end

local FIRST_INDEX_MS = 120000 -- the first index loads the embedding model
local STEP_MS = 30000

vim.opt.rtp:prepend(plugin_root)
vim.cmd('filetype on')
vim.cmd.runtime('plugin/memsearch.lua')
vim.cmd.cd(vim.fn.fnameescape(ws))
vim.lsp.log.set_level(vim.log.levels.WARN)

-- Capture messages (and keep them visible in the test output).
local notes = {}
vim.notify = function(msg, level)
  notes[#notes + 1] = { msg = msg, level = level or vim.log.levels.INFO }
  log('notify[%s]: %s', level or vim.log.levels.INFO, msg)
end

local indexed = {}
vim.api.nvim_create_autocmd('User', {
  pattern = 'MemsearchIndexed',
  callback = function(ev)
    indexed[#indexed + 1] = ev.data
    log('memsearch/indexed #%d: files=%s chunks=%s embedded=%s reused=%s ms=%s', #indexed,
      tostring(ev.data.files), tostring(ev.data.chunks), tostring(ev.data.embedded),
      tostring(ev.data.reused), tostring(ev.data.ms))
  end,
})

local function wait_for(ms, cond, what)
  if not vim.wait(ms, cond, 50) then
    error(('timed out after %d ms waiting for %s'):format(ms, what), 2)
  end
end

local function check(cond, fmt, ...)
  if not cond then
    error('check failed: ' .. fmt:format(...), 2)
  end
end

local function ends_with(s, suffix)
  return type(s) == 'string' and s:sub(-#suffix) == suffix
end

local client ---@type vim.lsp.Client
local memory_buf ---@type integer

local function symbols(query)
  local resp, err = client:request_sync('workspace/symbol', { query = query }, STEP_MS, memory_buf)
  check(resp ~= nil, 'workspace/symbol %q: %s', query, tostring(err))
  check(resp.err == nil, 'workspace/symbol %q error: %s', query, vim.inspect(resp.err))
  return resp.result or {}
end

local function sym_uri(s)
  return s.location and s.location.uri or ''
end

local function describe(syms)
  local out = {}
  for i, s in ipairs(syms) do
    if i > 8 then
      break
    end
    out[#out + 1] = ('%d. %s (%s)'):format(i, s.name, vim.fs.basename(vim.uri_to_fname(sym_uri(s))))
  end
  return table.concat(out, '; ')
end

--- Queries workspace/symbol until `pred` accepts a result, waiting for index passes in between.
local function find_symbol(query, pred, timeout_ms, what)
  local deadline = vim.uv.now() + timeout_ms
  local syms
  while true do
    syms = symbols(query)
    for i, s in ipairs(syms) do
      if pred(s) then
        log('workspace/symbol %q -> %s at rank %d of %d', query, s.name, i, #syms)
        return s, i
      end
    end
    local left = deadline - vim.uv.now()
    if left <= 0 then
      error(('%s: workspace/symbol %q never found it; last results: %s'):format(what, query, describe(syms)))
    end
    local n = #indexed
    vim.wait(math.min(left, 3000), function()
      return #indexed > n
    end, 50)
  end
end

local function step1_open_and_index()
  local ms = require('memsearch')
  ms.setup({ cmd = cmd, settings = { watch = { debounceMs = 300 } } })
  vim.cmd.edit(vim.fn.fnameescape(ws .. '/memory/MEMORY.md'))
  memory_buf = vim.api.nvim_get_current_buf()
  check(vim.bo.filetype == 'markdown', 'filetype is %q', vim.bo.filetype)
  wait_for(STEP_MS, function()
    return #vim.lsp.get_clients({ name = 'memsearch', bufnr = memory_buf }) > 0
  end, 'the memsearch client to attach')
  client = vim.lsp.get_clients({ name = 'memsearch', bufnr = memory_buf })[1]
  check(client.root_dir == ws, 'root_dir %q, expected %q', tostring(client.root_dir), ws)
  wait_for(FIRST_INDEX_MS, function()
    return #indexed > 0
  end, 'the first memsearch/indexed')
  check(ms.last_indexed ~= nil and vim.g.memsearch_indexed ~= nil, 'last indexed value not kept')
  check((tonumber(indexed[1].chunks) or 0) > 0, 'first index has no chunks: %s', vim.inspect(indexed[1]))
  check(client.capabilities.workspace.didChangeWatchedFiles.dynamicRegistration == true,
    'dynamicRegistration capability not sent')
end

local function step2_symbol_redis()
  find_symbol('Redis cache config', function(s)
    return s.name:find('Redis') ~= nil and ends_with(sym_uri(s), '/memory/MEMORY.md')
  end, 10000, 'Redis chunk')
end

local kafka_line
local function step3_edit_buffer()
  local n = vim.api.nvim_buf_line_count(memory_buf)
  vim.api.nvim_buf_set_lines(memory_buf, n, n, false, {
    '',
    '## Kafka decision',
    '',
    'We chose Kafka over RabbitMQ for the event bus: replayable partitions, quolvex retention.',
  })
  kafka_line = n + 2
  find_symbol('Kafka decision quolvex', function(s)
    return s.name:find('Kafka') ~= nil and ends_with(sym_uri(s), '/memory/MEMORY.md')
  end, STEP_MS, 'unsaved buffer edit')
  check(vim.bo[memory_buf].modified, 'the buffer should still be unsaved')
end

local function step4_file_on_disk()
  local path = ws .. '/memory/2026-01-01.md'
  local f = assert(io.open(path, 'w'))
  -- a log with an agent's noise around its fact: compacting it gains (a bare line alone would stay as it is)
  f:write('# 2026-01-01\n\n## Zorblat migration\n\nMoved the zorblatizer cron to the new worker pool.\n\n## 16:00\n\n'
    .. 'Ran the whole suite again before leaving; it takes a while on this machine, so I read the open issues '
    .. 'meanwhile. All green. Nothing else to report today; the dashboards look the same as this morning.\n\n'
    .. '```\n$ uv run pytest -q\n' .. string.rep('.', 72) .. ' [100%]\n144 passed in 31.20s\n```\n')
  f:close()
  find_symbol('zorblatizer', function(s)
    return ends_with(sym_uri(s), '/memory/2026-01-01.md')
  end, STEP_MS, 'file written outside the editor (didChangeWatchedFiles)')
end

local function step5_search_command()
  local picked
  vim.ui.select = function(items, opts, on_choice)
    picked = { items = items, prompt = opts.prompt, first = opts.format_item(items[1]) }
    on_choice(nil)
  end
  vim.fn.setqflist({}, 'r')
  vim.cmd('Memsearch search Kafka RabbitMQ event bus quolvex')
  wait_for(STEP_MS, function()
    return picked ~= nil
  end, ':Memsearch search to open vim.ui.select')
  local qf = vim.fn.getqflist()
  check(#qf > 0, 'quickfix list is empty')
  check(#qf == #picked.items, 'quickfix has %d items, picker %d', #qf, #picked.items)
  local first = vim.api.nvim_buf_get_name(qf[1].bufnr)
  check(ends_with(first, '/memory/MEMORY.md'), 'first quickfix item is in %s', first)
  check(qf[1].lnum == kafka_line, 'first quickfix lnum %d, expected %d', qf[1].lnum, kafka_line)
  check(qf[1].text:find('Kafka') ~= nil, 'first quickfix text %q', qf[1].text)
  check(vim.fn.getqflist({ title = 1 }).title:find('Memsearch') ~= nil, 'quickfix title')
  log('quickfix: %d items, first %s:%d %s', #qf, vim.fs.basename(first), qf[1].lnum, qf[1].text)
  log('picker first item: %s', picked.first)
end

--- Returns a function that waits for a message matching `pattern`; an error message fails at once.
local function wait_note(pattern, what)
  local start = #notes
  return function()
    wait_for(STEP_MS, function()
      for i = start + 1, #notes do
        if notes[i].msg:find(pattern) or notes[i].level >= vim.log.levels.ERROR then
          return true
        end
      end
      return false
    end, what)
    for i = start + 1, #notes do
      check(notes[i].level < vim.log.levels.ERROR, '%s reported an error: %s', what, notes[i].msg)
    end
  end
end

local function step5b_commands()
  local ms = require('memsearch')
  local done = wait_note('memsearch%-lsp ', ':Memsearch status')
  vim.cmd('Memsearch status')
  done()
  check(ms.last_status and ms.last_status.version, 'status has no version: %s', vim.inspect(ms.last_status))

  done = wait_note('reindexed:', ':Memsearch reindex')
  vim.cmd('Memsearch reindex')
  done()

  done = wait_note('^memsearch: .*nothing changed', ':Memsearch compact dry-run')
  vim.cmd('Memsearch compact dry-run')
  done()

  vim.cmd('Memsearch today')
  wait_for(STEP_MS, function()
    return vim.api.nvim_buf_get_name(0):match('/memory/%d%d%d%d%-%d%d%-%d%d%.md$') ~= nil
  end, ':Memsearch today to open the daily log')
  check(vim.uv.fs_stat(vim.api.nvim_buf_get_name(0)) ~= nil, 'today file does not exist on disk')
  log('today: %s', vim.api.nvim_buf_get_name(0))
  for _, n in ipairs(notes) do
    check(not n.msg:find('server could not open today'), 'today fell back: %s', n.msg)
  end
end

local function step6_checkhealth()
  vim.cmd('checkhealth memsearch')
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  local text = table.concat(lines, '\n')
  log('checkhealth:\n%s', text)
  check(text:find('OK') ~= nil, 'checkhealth has no OK')
  check(text:find('ERROR') == nil, 'checkhealth reports an ERROR')
  check(text:find('version: memsearch%-lsp') ~= nil, 'checkhealth shows no server version')
end

local function read_file(path)
  local f = io.open(path, 'rb')
  if not f then
    return nil
  end
  local data = f:read('*a')
  f:close()
  return data
end

--- Outside any memory workspace (cwd and buffer in a plain folder) while this workspace's server runs, every command
--- says "no memory here" and acts on nothing; a buffer of the workspace (a file outside memory/, a buffer with no
--- name, or any buffer while the cwd is in it) still gets its server.
local function step5c_outside_a_memory()
  local ms = require('memsearch')
  local back = vim.api.nvim_get_current_buf()
  local plain = vim.fs.normalize(vim.fn.tempname())
  vim.fn.mkdir(plain, 'p')
  vim.fn.writefile({ '# Notes', '', 'hello' }, plain .. '/notes.md')
  vim.cmd.cd(vim.fn.fnameescape(plain))
  vim.cmd.edit(vim.fn.fnameescape(plain .. '/notes.md'))
  check(ms.find_root() == nil, 'a memory workspace above %s: %s', plain, tostring(ms.find_root()))
  local today_log = ws .. '/memory/' .. os.date('%Y-%m-%d') .. '.md'
  local log_before, archived = read_file(today_log), vim.uv.fs_stat(ws .. '/memory/archive')
  vim.ui.select = function(_, _, on_choice)
    on_choice('Apply')
  end
  for _, sub in ipairs({ 'remember a note typed outside any memory', 'today', 'status', 'search Kafka', 'compact' }) do
    local start = #notes
    vim.cmd('Memsearch ' .. sub)
    wait_for(STEP_MS, function()
      return #notes > start
    end, ':Memsearch ' .. sub .. ' outside a memory to answer')
    local said = notes[start + 1]
    check(said.level == vim.log.levels.ERROR and said.msg:find('no memory here: run :Memsearch init', 1, true) ~= nil,
      ':Memsearch %s outside a memory said %q', sub, said.msg)
  end
  vim.wait(500)
  check(read_file(today_log) == log_before, 'a note typed outside any memory went to %s', today_log)
  check(vim.uv.fs_stat(ws .. '/memory/archive') == archived, 'a compaction outside any memory archived logs of %s', ws)
  check(vim.fs.normalize(vim.api.nvim_buf_get_name(0)) == plain .. '/notes.md', ':Memsearch today opened %s',
    vim.api.nvim_buf_get_name(0))

  check(ms.get_client() == nil, 'outside a memory, get_client() gave the client of %s', client.root_dir)

  vim.fn.mkdir(ws .. '/notes', 'p') -- a file of the workspace outside its memory (cwd still outside)
  vim.cmd.edit(vim.fn.fnameescape(ws .. '/notes/todo.txt'))
  check(ms.get_client() == client, 'a file of the workspace did not get its server')
  local start = #notes
  vim.cmd('Memsearch status')
  wait_for(STEP_MS, function()
    return #notes > start
  end, ':Memsearch status from a file of the workspace')
  check(notes[start + 1].level < vim.log.levels.ERROR, ':Memsearch status there said %q', notes[start + 1].msg)
  vim.cmd.cd(vim.fn.fnameescape(ws))
  vim.cmd.enew() -- a buffer with no name: the cwd's workspace
  check(ms.get_client() == client, 'a buffer with no name (cwd in the workspace) did not get its server')
  vim.cmd.edit(vim.fn.fnameescape(plain .. '/notes.md')) -- a file of no workspace: the cwd's
  check(ms.get_client() == client, 'a buffer of no workspace (cwd in the workspace) did not get its server')
  vim.cmd.buffer(back)
end

local function step7_compact_reviewed_and_applied_on_disk()
  local ms = require('memsearch')
  local log_path = ws .. '/memory/2026-02-05.md'
  local log_buf = vim.fn.bufadd(log_path)
  vim.fn.bufload(log_buf)
  local asked
  vim.ui.select = function(items, opts, on_choice)
    asked = { items = items, prompt = opts.prompt }
    on_choice(nil) -- the first time: cancel
  end
  ms.compact()
  wait_for(STEP_MS, function()
    return asked ~= nil
  end, 'the compaction plan to be shown')
  log('plan shown:\n%s', asked.prompt)
  check(asked.prompt:find('daily logs? into') and asked.prompt:find('characters') and asked.prompt:find('%-> memory/archive/'),
    'the plan does not say what it does: %s', asked.prompt)
  check(asked.prompt:find('\n  %- ') ~= nil, 'the review does not show the summary text: %s', asked.prompt)
  check(vim.uv.fs_stat(log_path) ~= nil and vim.uv.fs_stat(ws .. '/memory/archive') == nil, 'cancel changed files')
  local shown = ms.last_compact -- the plan under review: its MEMORY.md additions are in the question too
  for _, p in ipairs(type(shown) == 'table' and type(shown.promoted) == 'table' and shown.promoted or {}) do
    check(asked.prompt:find(p.text, 1, true) ~= nil, 'the review does not show the MEMORY.md addition %q', p.text)
  end

  asked = nil
  vim.ui.select = function(items, opts, on_choice)
    asked = { items = items, prompt = opts.prompt }
    on_choice('Apply')
  end
  -- MEMORY.md still holds step 3's unsaved edit: the server would write the plan's lasting facts under it
  check(vim.bo[memory_buf].modified, 'MEMORY.md should still be unsaved here')
  local before = #notes
  ms.compact()
  wait_for(STEP_MS, function()
    for i = before + 1, #notes do
      if notes[i].msg:find('save memory/MEMORY.md first', 1, true) then
        return true
      end
    end
    return false
  end, 'the compaction to be refused while MEMORY.md is unsaved')
  check(vim.uv.fs_stat(log_path) ~= nil and vim.uv.fs_stat(ws .. '/memory/archive') == nil, 'a refusal moved files')
  vim.v.errmsg = ''
  vim.api.nvim_buf_call(memory_buf, function()
    vim.cmd('silent write')
  end)
  check(vim.v.errmsg == '', 'saving MEMORY.md set v:errmsg: %s', vim.v.errmsg)
  asked = nil
  ms.last_compact = nil
  ms.compact()
  wait_for(FIRST_INDEX_MS, function()
    return type(ms.last_compact) == 'table' and ms.last_compact.applied == true
  end, 'the compaction to be applied')
  local done = ms.last_compact
  check(done.appliedBy == 'server', 'applied by %s', tostring(done.appliedBy))
  for _, s in ipairs(done.summaries) do -- the review showed the very text written
    for line in vim.gsplit(s.content, '\n', { plain = true }) do
      check(line == '' or line:match('^# ') or asked.prompt:find(line, 1, true) ~= nil,
        'the review did not show %q', line)
    end
  end
  check(ms.format_compact(done):find('^compacted .*: applied') ~= nil, 'applied said as %s', ms.format_compact(done))
  check(vim.uv.fs_stat(ws .. '/memory/archive/2026-02-05.md') ~= nil and vim.uv.fs_stat(log_path) == nil,
    'the log was not moved on disk')
  check(#done.summaries > 0, 'no summary')
  for _, p in ipairs(type(done.promoted) == 'table' and done.promoted or {}) do -- applied with the rest
    check((read_file(ws .. '/' .. p.path) or ''):find(p.text, 1, true) ~= nil, '%s lacks %q', p.path, p.text)
  end
  for _, s in ipairs(done.summaries) do
    local on_disk = read_file(ws .. '/' .. s.path)
    check(on_disk ~= nil and #on_disk > 0 and on_disk == s.content, '%s is not written on disk', s.path)
    local buf = vim.fn.bufnr(ws .. '/' .. s.path)
    check(buf == -1 or not vim.bo[buf].modified, '%s left unsaved in a buffer', s.path)
  end
  check(not vim.api.nvim_buf_is_valid(log_buf) or not vim.api.nvim_buf_is_loaded(log_buf),
    'the buffer of the moved log is still open')
  find_symbol('zorblatizer cron worker pool', function(s)
    return sym_uri(s):find('/memory/archive/2026%-01%-01%.md$') ~= nil or sym_uri(s):find('/memory/summary%-') ~= nil
  end, STEP_MS, 'a compacted fact')
  log('COMPACTED %d logs into %d summaries', #done.archive, #done.summaries)
end

local steps = {
  { '1 open MEMORY.md, wait for memsearch/indexed', step1_open_and_index },
  { '2 workspace/symbol finds the Redis chunk', step2_symbol_redis },
  { '3 unsaved edit becomes searchable', step3_edit_buffer },
  { '4 file written on disk becomes searchable', step4_file_on_disk },
  { '5 :Memsearch search fills quickfix', step5_search_command },
  { '5b :Memsearch status/reindex/compact/today', step5b_commands },
  { '5c outside a memory: no command acts on this workspace', step5c_outside_a_memory },
  { '6 :checkhealth memsearch', step6_checkhealth },
  { '7 compaction: plan shown, confirmed, applied on disk', step7_compact_reviewed_and_applied_on_disk },
}

local ok, err = xpcall(function()
  for _, s in ipairs(steps) do
    local started = vim.uv.hrtime()
    log('STEP %s', s[1])
    s[2]()
    log('PASS %s (%.1fs)', s[1], (vim.uv.hrtime() - started) / 1e9)
  end
  check(vim.v.errmsg == '', 'v:errmsg is set: %s', vim.v.errmsg)
end, debug.traceback)

if ok then
  log('ALL PASSED')
  vim.cmd('qall!')
else
  log('FAILED: %s', err)
  log('lsp log: %s', vim.lsp.log.get_filename())
  vim.cmd('cquit 1')
end
