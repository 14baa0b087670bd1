-- memsearch: Neovim client for memsearch-lsp (setup, :Memsearch, search pickers, indexed events).
local M = {}

---@class memsearch.Options
---@field cmd? string[]|fun(...):vim.lsp.rpc.PublicClient  server command (default from lsp/memsearch.lua)
---@field settings? table   server settings of section `memsearch` (docs/protocol.md), e.g. { search = { topK = 5 } }
---@field enable? boolean   call vim.lsp.enable('memsearch') (default true)
---@field top_k? integer    hits asked for by :Memsearch search (default 15)
---@field picker? 'select'|'telescope'  how :Memsearch search lets you jump (default 'select' = vim.ui.select)
---@field lsp? vim.lsp.Config  extra fields for vim.lsp.config('memsearch', ...) (root_markers, on_attach, ...)
M.defaults = {
  cmd = nil,
  settings = {},
  enable = true,
  top_k = 15,
  picker = 'select',
  lsp = {},
}

---@type memsearch.Options
M.options = vim.deepcopy(M.defaults)

--- Last `memsearch/indexed` payload (plus `client_id` and `time`), and the last one per root.
M.last_indexed = nil ---@type table?
M.indexed = {} ---@type table<string, table>
M.last_hits = nil ---@type table[]?

M.subcommands = { 'search', 'remember', 'today', 'reindex', 'compact', 'status', 'init' }

local NAME = 'memsearch'

--- What marks a memory workspace (as in lsp/memsearch.lua); `memsearch-lsp init` creates both.
M.root_markers = { '.memsearch.toml', 'memory' }
M.NO_MEMORY = 'no memory here: run `memsearch-lsp init`'

local function notify(msg, level)
  vim.notify('memsearch: ' .. msg, level or vim.log.levels.INFO, { title = 'memsearch' })
end

--- A JSON value as a Lua string ('' for nil / vim.NIL).
local function str(v)
  if v == nil or v == vim.NIL then
    return ''
  end
  return tostring(v)
end

local function one_line(s, max)
  s = str(s):gsub('%s+', ' '):gsub('^ ', ''):gsub(' $', '')
  if max and #s > max then
    s = s:sub(1, max - 1) .. '…'
  end
  return s
end

local function err_text(err)
  if type(err) == 'table' then
    return str(err.message ~= nil and err.message or vim.inspect(err))
  end
  return str(err)
end

---@param opts? memsearch.Options
function M.setup(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  local cfg = vim.deepcopy(M.options.lsp or {})
  if M.options.cmd then
    cfg.cmd = M.options.cmd
  end
  local settings = M.options.settings
  if type(settings) == 'table' and next(settings) ~= nil then
    cfg.init_options = settings
    cfg.settings = { memsearch = settings }
  end
  vim.lsp.config(NAME, cfg)
  if M.options.enable ~= false then
    vim.lsp.enable(NAME)
  end
end

--- The resolved config (lsp/memsearch.lua + vim.lsp.config calls), or nil when there is none.
---@return vim.lsp.Config?
function M.lsp_config()
  local ok, cfg = pcall(function()
    return vim.lsp.config[NAME]
  end)
  return ok and cfg or nil
end

--- The workspace root for `path` (default: the current buffer, else the cwd), by the root markers.
---@param path? string
---@return string?
function M.find_root(path)
  local cfg = M.lsp_config() or {}
  local markers = cfg.root_markers or M.root_markers
  if not path then
    local name = vim.api.nvim_buf_get_name(0)
    path = (vim.bo.buftype == '' and name ~= '') and name or (vim.fn.getcwd() .. '/.')
  end
  return vim.fs.root(path, markers)
end

--- The memsearch client for the current buffer, else the one whose root holds the cwd, else any.
---@return vim.lsp.Client?
function M.get_client()
  local clients = vim.lsp.get_clients({ name = NAME, bufnr = 0 })
  if #clients > 0 then
    return clients[1]
  end
  clients = vim.lsp.get_clients({ name = NAME })
  local cwd = vim.fs.normalize(vim.fn.getcwd())
  for _, client in ipairs(clients) do
    local root = client.root_dir and vim.fs.normalize(client.root_dir)
    if root and (cwd == root or vim.startswith(cwd, root .. '/')) then
      return client
    end
  end
  return clients[1]
end

--- Calls `cb(client)` with an initialized client, starting one for the cwd's workspace if none
--- runs (so :Memsearch works from any buffer); `cb(nil, reason)` when that is impossible.
---@param cb fun(client: vim.lsp.Client?, err: string?)
function M.with_client(cb)
  local client = M.get_client()
  if not client then
    local cfg = M.lsp_config()
    if not cfg or not cfg.cmd then
      return cb(nil, 'no memsearch LSP config (call require("memsearch").setup())')
    end
    cfg = vim.deepcopy(cfg)
    if type(cfg.root_dir) ~= 'string' then
      cfg.root_dir = M.find_root()
    end
    if not cfg.root_dir then -- never start a server (and an index) outside a memory workspace
      return cb(nil, M.NO_MEMORY .. ' (no ' .. table.concat(cfg.root_markers or M.root_markers, ' or ')
        .. ' above ' .. vim.fn.getcwd() .. ')')
    end
    local ok, id = pcall(vim.lsp.start, cfg, { attach = false, silent = true })
    client = ok and id and vim.lsp.get_client_by_id(id) or nil
    if not client then
      return cb(nil, 'could not start the server ' .. vim.inspect(cfg.cmd))
    end
  end
  if client.initialized then
    return cb(client)
  end
  local waited, timer = 0, assert(vim.uv.new_timer())
  timer:start(
    50,
    50,
    vim.schedule_wrap(function()
      waited = waited + 50
      if client.initialized or client:is_stopped() or waited > 60000 then
        timer:stop()
        timer:close()
        if client.initialized then
          cb(client)
        else
          cb(nil, 'the server did not initialize')
        end
      end
    end)
  )
end

--- Sends `method` to the server; `cb(err, result, client)`. Pending buffer edits are flushed first.
---@param method string
---@param params table
---@param cb fun(err: any, result: any, client: vim.lsp.Client?)
function M.request(method, params, cb)
  M.with_client(function(client, why)
    if not client then
      return cb(why, nil, nil)
    end
    local ok, sent = pcall(client.request, client, method, params, function(err, result)
      cb(err, result, client)
    end)
    if not ok or not sent then
      cb(not ok and sent or 'the server is not running', nil, client)
    end
  end)
end

--- workspace/executeCommand `command` with `arguments` (a list); `cb(err, result, client)`.
function M.exec(command, arguments, cb)
  M.request('workspace/executeCommand', { command = command, arguments = arguments or {} }, cb)
end

---------------------------------------------------------------------------------------------------
-- search

--- Quickfix items for search hits: file, line = start_line, text = heading + snippet.
---@param hits table[]
---@return vim.quickfix.entry[]
function M.to_qf_items(hits)
  local items = {}
  for _, hit in ipairs(hits) do
    local file = str(hit.uri) ~= '' and vim.uri_to_fname(hit.uri) or str(hit.source)
    local heading = one_line(hit.heading)
    local snippet = one_line(hit.snippet, 240)
    items[#items + 1] = {
      filename = file,
      lnum = tonumber(hit.start_line) or 1,
      end_lnum = tonumber(hit.end_line),
      col = 1,
      text = heading ~= '' and (heading .. ': ' .. snippet) or snippet,
      user_data = { memsearch_id = str(hit.id), score = hit.score },
    }
  end
  return items
end

--- One line for a picker: `source:line  heading — snippet  (score)`.
function M.format_hit(hit)
  return ('%s:%s  %s — %s'):format(
    str(hit.source),
    str(hit.start_line),
    one_line(hit.heading),
    one_line(hit.snippet, 120)
  )
end

--- Opens a hit: its file, cursor on its first line.
function M.open_hit(hit)
  local file = str(hit.uri) ~= '' and vim.uri_to_fname(hit.uri) or str(hit.source)
  vim.cmd.edit(vim.fn.fnameescape(file))
  local line = math.max(1, math.min(tonumber(hit.start_line) or 1, vim.api.nvim_buf_line_count(0)))
  vim.api.nvim_win_set_cursor(0, { line, 0 })
  vim.cmd('normal! zv')
end

--- Searches the memory: fills the quickfix list with every hit and opens a picker to jump to one.
--- Without a query, asks for one with vim.ui.input.
---@param query? string
---@param opts? { top_k?: integer, picker?: 'select'|'telescope'|false, on_results?: fun(hits: table[]) }
function M.search(query, opts)
  opts = opts or {}
  if not query or vim.trim(query) == '' then
    vim.ui.input({ prompt = 'Memsearch: ' }, function(input)
      if input and vim.trim(input) ~= '' then
        M.search(input, opts)
      end
    end)
    return
  end
  query = vim.trim(query)
  local params = { query = query, topK = opts.top_k or M.options.top_k }
  M.request('memsearch/search', params, function(err, hits)
    if err then
      return notify('search failed: ' .. err_text(err), vim.log.levels.ERROR)
    end
    hits = type(hits) == 'table' and hits or {}
    M.last_hits = hits
    vim.fn.setqflist({}, ' ', { title = 'Memsearch: ' .. query, items = M.to_qf_items(hits) })
    if opts.on_results then
      opts.on_results(hits)
    end
    if #hits == 0 then
      return notify('no memories match "' .. query .. '"', vim.log.levels.WARN)
    end
    local picker = opts.picker == nil and M.options.picker or opts.picker
    if picker == false then
      return
    end
    if picker == 'telescope' and pcall(require, 'telescope') then
      return require('memsearch.telescope').pick_hits(hits, { query = query })
    end
    vim.ui.select(hits, {
      prompt = ('Memsearch (%d hits, also in quickfix): '):format(#hits),
      kind = 'memsearch',
      format_item = M.format_hit,
    }, function(choice)
      if choice then
        M.open_hit(choice)
      end
    end)
  end)
end

--- Telescope picker (live search when no query); needs nvim-telescope/telescope.nvim.
function M.telescope(opts)
  if not pcall(require, 'telescope') then
    return notify('Telescope is not installed; use :Memsearch search', vim.log.levels.WARN)
  end
  require('memsearch.telescope').picker(opts)
end

---------------------------------------------------------------------------------------------------
-- commands

local function today_local(client)
  local root = client and client.root_dir or M.find_root() or vim.fn.getcwd()
  local paths = vim.tbl_get(M.options, 'settings', 'memory', 'paths')
  local dir = vim.fs.joinpath(root, type(paths) == 'table' and paths[1] or 'memory')
  local date = os.date('%Y-%m-%d') --[[@as string]]
  local path = vim.fs.joinpath(dir, date .. '.md')
  if not vim.uv.fs_stat(path) then
    vim.fn.mkdir(dir, 'p')
    vim.fn.writefile({ '# ' .. date, '' }, path)
  end
  return path
end

--- Opens today's daily log (memsearch.today); creates memory/YYYY-MM-DD.md locally if the server fails.
function M.today()
  M.exec('memsearch.today', {}, function(err, result, client)
    local path
    if not err and type(result) == 'table' and (str(result.uri) ~= '' or str(result.path) ~= '') then
      path = str(result.uri) ~= '' and vim.uri_to_fname(result.uri) or result.path
    else
      path = today_local(client)
      notify(('server could not open today (%s); using %s'):format(err_text(err), path), vim.log.levels.WARN)
    end
    vim.cmd.edit(vim.fn.fnameescape(path))
  end)
end

local function seconds(v)
  local n = tonumber(v)
  return n and ('%.2fs'):format(n) or '?'
end

--- "+a ~m -r files, N chunks (E embedded, R reused) in S" for a memsearch.reindex result.
function M.format_reindex(r)
  if type(r) ~= 'table' then
    return 'reindexed: ' .. vim.inspect(r)
  end
  return ('reindexed: +%s ~%s -%s files, %s chunks (%s embedded, %s reused) in %s'):format(
    str(r.files_added),
    str(r.files_modified),
    str(r.files_removed),
    str(r.chunks_total),
    str(r.chunks_embedded),
    str(r.chunks_reused),
    seconds(r.seconds)
  )
end

--- A readable compaction plan: "compact (dry run): 13 daily logs into 4 summaries (extractive; 9000 -> 3100
--- characters)", one line per summary created and per log archived; falls back to listing the plan's fields.
function M.format_compact(plan)
  if type(plan) ~= 'table' then
    return 'compact: ' .. str(plan)
  end
  if type(plan.summaries) == 'table' and type(plan.archive) == 'table' then
    local mode = plan.applied == true and 'applied' or 'dry run'
    local left = type(plan.left) == 'table' and #plan.left > 0
        and ('\n  left (changed while compacting): ' .. table.concat(plan.left, ', '))
      or ''
    if #plan.summaries == 0 and #plan.archive == 0 then
      return ('compact (%s): %s'):format(mode, str(plan.note) ~= '' and str(plan.note) or 'nothing to compact') .. left
    end
    local stats = type(plan.stats) == 'table' and plan.stats or {}
    local before = plan.chars_before ~= nil and plan.chars_before or stats.chars_in
    local after = plan.chars_after ~= nil and plan.chars_after or stats.chars_out
    local lines = {
      ('compact (%s): %d daily logs into %d summaries (%s; %s -> %s characters)'):format(
        mode, #plan.archive, #plan.summaries, str(plan.summarizer),
        str(before ~= nil and before or '?'), str(after ~= nil and after or '?')),
    }
    for _, s in ipairs(plan.summaries) do
      local sources = vim.tbl_map(function(p)
        return vim.fs.basename(str(p))
      end, type(s.sources) == 'table' and s.sources or {})
      lines[#lines + 1] = ('  %s %s <- %s'):format(str(s.action), str(s.path), table.concat(sources, ', '))
    end
    for _, m in ipairs(plan.archive) do
      lines[#lines + 1] = ('  %s %s -> %s'):format(m.merge == true and 'merge' or 'move', str(m.from), str(m.to))
    end
    return table.concat(lines, '\n') .. left
  end
  local parts = {}
  for key, value in vim.spairs(plan) do
    if type(value) == 'table' then
      parts[#parts + 1] = ('%s: %d'):format(key, vim.tbl_count(value))
    elseif value ~= vim.NIL then
      parts[#parts + 1] = ('%s: %s'):format(key, one_line(value, 80))
    end
  end
  return 'compact: ' .. (#parts > 0 and table.concat(parts, ', ') or 'nothing to do')
end

--- "memsearch-lsp 0.1.0 | /ws: 12 files, 40 chunks (model, collection) | last pass: ..."
function M.format_status(s)
  if type(s) ~= 'table' then
    return 'status: ' .. vim.inspect(s)
  end
  local lines = { 'memsearch-lsp ' .. str(s.version) }
  for _, r in ipairs(type(s.roots) == 'table' and s.roots or { s }) do
    if r.root or r.files or r.chunks then
      lines[#lines + 1] = ('%s: %s files, %s chunks (model %s, collection %s)'):format(
        str(r.root),
        str(r.files),
        str(r.chunks),
        str(r.model),
        str(r.collection)
      )
    end
  end
  local last = M.last_indexed
  if last then
    lines[#lines + 1] = ('last index pass %s: %s files, %s chunks, %s embedded, %s reused, %s ms'):format(
      os.date('%H:%M:%S', last.time),
      str(last.files),
      str(last.chunks),
      str(last.embedded),
      str(last.reused),
      str(last.ms ~= nil and last.ms ~= vim.NIL and math.floor(tonumber(last.ms) or 0) or '')
    )
  end
  return table.concat(lines, '\n')
end

function M.reindex(force)
  notify(force and 'reindexing everything…' or 'reindexing…')
  M.exec('memsearch.reindex', force and { { force = true } } or {}, function(err, result)
    if err then
      return notify('reindex failed: ' .. err_text(err), vim.log.levels.ERROR)
    end
    notify(M.format_reindex(result))
  end)
end

--- The loaded buffer of `path`, or nil.
local function loaded_buf(path)
  local buf = vim.fn.bufnr(vim.fs.normalize(path))
  return (buf ~= -1 and vim.api.nvim_buf_is_loaded(buf)) and buf or nil
end

--- Re-reads `path` from disk when it is loaded without unsaved changes.
local function reload_clean(path)
  local buf = loaded_buf(path)
  if buf and not vim.bo[buf].modified then
    vim.api.nvim_buf_call(buf, function()
      vim.cmd('silent! edit!')
    end)
  end
end

--- After the server applied a compaction on disk: close the buffers of the logs it moved, reload
--- the open summaries it wrote.
function M._after_compact(root, result)
  for _, m in ipairs(type(result.archive) == 'table' and result.archive or {}) do
    local buf = loaded_buf(vim.fs.joinpath(root, str(m.from)))
    if buf and not vim.bo[buf].modified then
      pcall(vim.api.nvim_buf_delete, buf, { force = false })
    end
  end
  for _, s in ipairs(type(result.summaries) == 'table' and result.summaries or {}) do
    reload_clean(vim.fs.joinpath(root, str(s.path)))
  end
end

--- Compacts old daily logs, reviewed first: asks the server for the plan (a dry run), shows it (files
--- created, logs archived, characters before and after) and asks; on yes the server applies that
--- same plan on disk (it refuses one that changed meanwhile), then the buffers of the moved logs are
--- closed and open summaries reloaded. `dry_run` only shows the plan; `confirm = false` skips the question.
---@param opts? { dry_run?: boolean, older_than_days?: integer, files?: string[], confirm?: boolean }
function M.compact(opts)
  opts = opts or {}
  local arg = {}
  if opts.older_than_days then
    arg.olderThanDays = opts.older_than_days
  end
  if opts.files then
    arg.files = opts.files
  end
  M.exec('memsearch.compact', { vim.tbl_extend('force', arg, { dryRun = true }) }, function(err, plan, client)
    if err then
      return notify('compact failed: ' .. err_text(err), vim.log.levels.ERROR)
    end
    M.last_compact = plan
    local text = M.format_compact(plan)
    if opts.dry_run or type(plan) ~= 'table' or type(plan.archive) ~= 'table' or #plan.archive == 0 then
      return notify(text)
    end
    local root = client and client.root_dir or M.find_root() or vim.fn.getcwd()
    local unsaved = {}
    for _, m in ipairs(plan.archive) do
      local buf = loaded_buf(vim.fs.joinpath(root, str(m.from)))
      if buf and vim.bo[buf].modified then
        unsaved[#unsaved + 1] = str(m.from)
      end
    end
    if #unsaved > 0 then
      return notify('compact: save these logs first: ' .. table.concat(unsaved, ', '), vim.log.levels.ERROR)
    end
    local function apply()
      M.exec('memsearch.compact', { vim.tbl_extend('force', arg, { planId = plan.plan_id }) }, function(err2, done)
        if err2 then
          return notify('compact failed: ' .. err_text(err2), vim.log.levels.ERROR)
        end
        M.last_compact = done
        if type(done) == 'table' and done.applied == true then
          M._after_compact(root, done)
        end
        notify(M.format_compact(done))
      end)
    end
    if opts.confirm == false then
      return apply()
    end
    vim.ui.select({ 'Apply', 'Cancel' }, {
      prompt = text .. '\nApply this compaction? ',
      kind = 'memsearch.compact',
    }, function(choice)
      if choice == 'Apply' then
        apply()
      else
        notify('compaction cancelled; nothing changed')
      end
    end)
  end)
end

--- Client-side `memsearch.compact` (code actions): the same review as :Memsearch compact.
function M._compact_command(command)
  local args = type(command.arguments) == 'table' and command.arguments[1] or {}
  args = type(args) == 'table' and args or {}
  M.compact({
    older_than_days = args.olderThanDays,
    files = args.files,
    dry_run = args.dryRun == true,
  })
end

---------------------------------------------------------------------------------------------------
-- remember, init (the CLI of the server's command)

--- The CLI of the configured server (`{ 'memsearch-lsp' }`, or `{ python, '-m', 'memsearch_lsp' }`), or nil and why.
---@return string[]? prefix, string? err
function M.cli()
  local cfg = M.lsp_config()
  local cmd = cfg and cfg.cmd
  if type(cmd) ~= 'table' then
    return nil, 'the memsearch config has no cmd list (a custom transport cannot run the CLI)'
  end
  if vim.fn.executable(cmd[1]) ~= 1 then
    return nil, ("`%s` is not executable: run :lua require('memsearch.install').build() or see :checkhealth memsearch"):format(cmd[1])
  end
  return require('memsearch.health').cli_prefix(cmd)
end

--- Runs `<cli> args...` asynchronously; `cb(err, decoded_json)` on the main loop.
local function run_cli(args, stdin, cb)
  local prefix, why = M.cli()
  if not prefix then
    return cb(why)
  end
  local argv = vim.list_extend(vim.deepcopy(prefix), args)
  local ok, err = pcall(vim.system, argv, { text = true, stdin = stdin }, vim.schedule_wrap(function(obj)
    if obj.code ~= 0 then
      local lines = vim.split(vim.trim((obj.stderr or '') .. '\n' .. (obj.stdout or '')), '\n', { trimempty = true })
      return cb(lines[#lines] or ('exit ' .. obj.code))
    end
    local decoded, result = pcall(vim.json.decode, obj.stdout or '')
    cb(nil, decoded and result or {})
  end))
  if not ok then
    cb(tostring(err))
  end
end

--- Appends a note to today's log (`memsearch-lsp remember`, indexed at once); asks for it without `text`.
--- Reloads today's log if it is open. `cb(err, note)` when given.
---@param text? string
---@param cb? fun(err: string?, note: table?)
function M.remember(text, cb)
  cb = cb or function() end
  if text == nil or vim.trim(text) == '' then
    return vim.ui.input({ prompt = 'Remember: ' }, function(input)
      if input ~= nil and vim.trim(input) ~= '' then
        M.remember(input, cb)
      end
    end)
  end
  local client = M.get_client()
  local root = client and client.root_dir or M.find_root()
  if not root then
    notify(M.NO_MEMORY, vim.log.levels.ERROR)
    return cb(M.NO_MEMORY)
  end
  run_cli({ 'remember', '--workspace', root, '--json', '-' }, text, function(err, note)
    if err then
      notify('remember failed: ' .. err_text(err), vim.log.levels.ERROR)
      return cb(err)
    end
    reload_clean(vim.fs.joinpath(root, str(note.source)))
    notify(('remembered in %s (%s)'):format(str(note.source), str(note.heading)))
    cb(nil, note)
  end)
end

--- Starts a memory in `dir` (default: the cwd) with `memsearch-lsp init`, then opens its MEMORY.md
--- (which starts the server there). `cb(err, result)` when given.
---@param dir? string
---@param cb? fun(err: string?, result: table?)
function M.init(dir, cb)
  cb = cb or function() end
  dir = vim.fs.normalize(vim.fn.fnamemodify((dir ~= nil and dir ~= '') and dir or vim.fn.getcwd(), ':p'))
  run_cli({ 'init', dir, '--json' }, nil, function(err, result)
    if err then
      notify('init failed: ' .. err_text(err), vim.log.levels.ERROR)
      return cb(err)
    end
    local created = type(result.created) == 'table' and result.created or {}
    notify(#created > 0 and ('memory ready in %s (created %s)'):format(dir, table.concat(created, ', '))
      or ('%s already had a memory; nothing was overwritten'):format(dir))
    vim.cmd.edit(vim.fn.fnameescape(vim.fs.joinpath(dir, 'memory', 'MEMORY.md')))
    cb(nil, result)
  end)
end

--- :Memsearch status: the server's status as a notification.
function M.show_status()
  M.exec('memsearch.status', {}, function(err, result)
    if err then
      return notify('status failed: ' .. err_text(err), vim.log.levels.ERROR)
    end
    M.last_status = result
    notify(M.format_status(result))
  end)
end

--- :Memsearch {search|remember|today|reindex|compact|status|init} [args]
function M.command(args)
  local sub, rest = (args.args or ''):match('^%s*(%S*)%s*(.-)%s*$')
  if sub == '' or sub == 'search' then
    return M.search(rest)
  elseif sub == 'today' then
    return M.today()
  elseif sub == 'reindex' then
    return M.reindex(args.bang or rest == 'force')
  elseif sub == 'compact' then
    local days = tonumber(rest:match('(%d+)'))
    return M.compact({ dry_run = rest:find('dry') ~= nil, older_than_days = days })
  elseif sub == 'status' then
    return M.show_status()
  elseif sub == 'remember' then
    return M.remember(rest)
  elseif sub == 'init' then
    return M.init(rest)
  end
  notify(('unknown subcommand "%s"; use one of: %s'):format(sub, table.concat(M.subcommands, ', ')), vim.log.levels.ERROR)
end

function M.complete(arglead, cmdline, _)
  local words = vim.split(vim.trim(cmdline:gsub('^%s*%S+', '', 1)), '%s+', { trimempty = true })
  local after_space = cmdline:match('%s$') ~= nil
  local nth = #words + (after_space and 1 or 0)
  local choices = {}
  if nth <= 1 then
    choices = M.subcommands
  elseif words[1] == 'reindex' then
    choices = { 'force' }
  elseif words[1] == 'compact' then
    choices = { 'dry-run' }
  elseif words[1] == 'init' and nth == 2 then
    return vim.fn.getcompletion(arglead, 'dir')
  end
  return vim.tbl_filter(function(c)
    return vim.startswith(c, arglead)
  end, choices)
end

--- Handler for the server's `memsearch/indexed` notification (wired in lsp/memsearch.lua).
function M._on_indexed(err, result, ctx)
  if err or type(result) ~= 'table' then
    return
  end
  local info = vim.deepcopy(result)
  info.client_id = ctx and ctx.client_id
  info.time = os.time()
  M.last_indexed = info
  M.indexed[str(result.root)] = info
  vim.g.memsearch_indexed = info
  vim.api.nvim_exec_autocmds('User', { pattern = 'MemsearchIndexed', data = info, modeline = false })
  M._redraw()
end

---------------------------------------------------------------------------------------------------
-- statusline

--- Work-done progress of memsearch clients, by client id: `{ title, message, percentage }`.
M.progress = {} ---@type table<integer, table>

function M._redraw()
  vim.schedule(function()
    pcall(vim.cmd.redrawstatus)
  end)
end

--- `LspProgress` handler: keeps the last progress value of each memsearch client (cleared at 'end').
function M._on_progress(ev)
  local data = ev and ev.data or {}
  local client = data.client_id and vim.lsp.get_client_by_id(data.client_id)
  local value = vim.tbl_get(data, 'params', 'value')
  if not client or client.name ~= NAME or type(value) ~= 'table' then
    return
  end
  if value.kind == 'end' then
    M.progress[client.id] = nil
  else
    local last = M.progress[client.id] or {}
    M.progress[client.id] = {
      title = value.title or last.title,
      message = value.message or last.message,
      percentage = tonumber(value.percentage) or last.percentage,
    }
  end
  M._redraw()
end

vim.api.nvim_create_autocmd('LspProgress', {
  group = vim.api.nvim_create_augroup('memsearch.status', { clear = true }),
  callback = function(ev)
    M._on_progress(ev)
  end,
})

--- Statusline component: `memsearch: indexing 40%` while the server indexes, then
--- `memsearch: 123 chunks`; `memsearch: starting` before the first pass; '' without a memsearch
--- client (outside memory workspaces). E.g. `vim.o.statusline = "%f %= %{v:lua.require'memsearch'.status()}"`.
---@param opts? { bufnr?: integer }
---@return string
function M.status(opts)
  local bufnr = opts and opts.bufnr
  if not bufnr then
    local win = vim.g.statusline_winid
    bufnr = (win and win ~= 0 and vim.api.nvim_win_is_valid(win)) and vim.api.nvim_win_get_buf(win) or 0
  end
  local clients = vim.lsp.get_clients({ name = NAME, bufnr = bufnr })
  if #clients == 0 then
    clients = vim.lsp.get_clients({ name = NAME })
  end
  local client = clients[1]
  if not client then
    return ''
  end
  local progress = M.progress[client.id]
  if progress then
    return progress.percentage and ('memsearch: indexing %d%%'):format(progress.percentage) or 'memsearch: indexing'
  end
  local chunks, seen = 0, false
  for _, info in pairs(M.indexed) do
    if info.client_id == client.id and tonumber(info.chunks) then
      chunks, seen = chunks + tonumber(info.chunks), true
    end
  end
  return seen and ('memsearch: %d chunks'):format(chunks) or 'memsearch: starting'
end

---------------------------------------------------------------------------------------------------
-- live search (pickers that search as you type)

--- A searcher for pickers: each `ask(prompt, cb)` cancels the request before it, and only the
--- newest prompt's answer reaches its `cb(hits)`; an older one gets `cb(nil)` (stale, dropped).
--- Never waits: the request is asynchronous.
---@param client vim.lsp.Client
---@param top_k integer
function M.live_searcher(client, top_k)
  local self = { generation = 0, pending = nil }
  function self.ask(prompt, cb)
    self.generation = self.generation + 1
    local mine = self.generation
    if self.pending then
      pcall(client.cancel_request, client, self.pending)
      self.pending = nil
    end
    local ok, sent, id = pcall(client.request, client, 'memsearch/search', { query = prompt, topK = top_k },
      function(err, result)
        if mine ~= self.generation then
          return cb(nil) -- a newer prompt was asked meanwhile
        end
        self.pending = nil
        cb((not err and type(result) == 'table') and result or {})
      end)
    if ok and sent then
      self.pending = id
    else
      cb(mine == self.generation and {} or nil)
    end
  end
  return self
end

return M
