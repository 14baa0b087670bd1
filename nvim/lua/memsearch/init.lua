-- memsearch: Neovim client for memsearch-lsp: the module every part adds its functions to, and :Memsearch.
-- By concern: memsearch.config (options, setup), memsearch.client (the client, requests, the CLI),
-- memsearch.search, memsearch.compact, memsearch.status (events, progress, statusline), memsearch.util.
local M = {}
package.loaded['memsearch'] = M -- the concern modules below add to this table while it loads

--- Last `memsearch/indexed` payload (plus `client_id` and `time`), and the last one per root.
M.last_indexed = nil ---@type table?
M.indexed = {} ---@type table<string, table>
M.last_hits = nil ---@type table[]?

M.subcommands = { 'search', 'remember', 'today', 'reindex', 'compact', 'status', 'init' }

local util = require('memsearch.util')
local notify, str, err_text = util.notify, util.str, util.err_text

require('memsearch.config')
require('memsearch.client')
require('memsearch.search')
require('memsearch.compact')
require('memsearch.status')

---------------------------------------------------------------------------------------------------
-- commands: today, reindex, remember, init and the :Memsearch dispatcher

--- Today's log in the memory folder of an existing memory workspace (nil when there is none: a folder that is
--- not a memory is never made one here; `:Memsearch init` does that).
local function today_local(client)
  local root = client and client.root_dir or M.find_root() or vim.fn.getcwd()
  local paths = vim.tbl_get(M.options, 'settings', 'memory', 'paths')
  local dir = vim.fs.joinpath(root, type(paths) == 'table' and paths[1] or 'memory')
  if vim.fn.isdirectory(dir) == 0 then
    return nil
  end
  local date = os.date('%Y-%m-%d') --[[@as string]]
  local path = vim.fs.joinpath(dir, date .. '.md')
  if not vim.uv.fs_stat(path) then
    vim.fn.writefile({ '# ' .. date, '' }, path)
  end
  return path
end

--- Opens today's daily log (memsearch.today); creates memory/YYYY-MM-DD.md locally if the server fails and the
--- memory folder exists.
function M.today()
  M.exec('memsearch.today', {}, function(err, result, client)
    local path
    if not err and type(result) == 'table' and (str(result.uri) ~= '' or str(result.path) ~= '') then
      path = str(result.uri) ~= '' and vim.uri_to_fname(result.uri) or result.path
    else
      path = today_local(client)
      if not path then
        local why = err_text(err)
        if why:find('no memory here', 1, true) then -- said once (notify says this editor's command)
          notify(why, vim.log.levels.ERROR)
        else
          notify(('no memory here (%s): run :Memsearch init'):format(why), vim.log.levels.ERROR)
        end
        return
      end
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

function M.reindex(force)
  notify(force and 'reindexing everything…' or 'reindexing…')
  M.exec('memsearch.reindex', force and { { force = true } } or {}, function(err, result)
    if err then
      return notify('reindex failed: ' .. err_text(err), vim.log.levels.ERROR)
    end
    notify(M.format_reindex(result))
  end)
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
  M._run_cli({ 'remember', '--workspace', root, '--json', '-' }, text, function(err, note)
    if err then
      notify('remember failed: ' .. err_text(err), vim.log.levels.ERROR)
      return cb(err)
    end
    util.reload_clean(vim.fs.joinpath(root, str(note.source)))
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
  M._run_cli({ 'init', dir, '--json' }, nil, function(err, result)
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

--- :Memsearch {search|remember|today|reindex|compact|status|init} [args]
function M.command(args)
  local sub, rest = (args.args or ''):match('^%s*(%S*)%s*(.-)%s*$')
  local bang = args.bang
  if sub:sub(-1) == '!' then -- `:Memsearch reindex!`: the bang of the subcommand, as documented
    sub, bang = sub:sub(1, -2), true
  end
  if sub == '' or sub == 'search' then
    return M.search(rest)
  elseif sub == 'today' then
    return M.today()
  elseif sub == 'reindex' then
    return M.reindex(bang or rest == 'force')
  elseif sub == 'compact' then
    local days = tonumber(rest:match('(%d+)'))
    return M.compact({ dry_run = rest:find('dry') ~= nil, older_than_days = days })
  elseif sub == 'status' then
    return M.show_status()
  elseif sub == 'remember' then
    return M.remember(rest)
  elseif sub == 'init' then -- its folder as Vim reads a file name (`dir\ with\ space`); unescaped spaces kept too
    return M.init(args.fargs and table.concat(vim.list_slice(args.fargs, 2), ' ') or rest)
  end
  notify(('unknown subcommand "%s"; use one of: %s'):format(sub, table.concat(M.subcommands, ', ')), vim.log.levels.ERROR)
end

function M.complete(arglead, cmdline, _)
  cmdline = cmdline:gsub('\\.', '__') -- an escaped space (`dir\ with\ space`) is part of its word
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
  elseif words[1] == 'init' and nth == 2 then -- escaped as :Memsearch init reads them
    return vim.tbl_map(vim.fn.fnameescape, vim.fn.getcompletion(arglead, 'dir'))
  end
  return vim.tbl_filter(function(c)
    return vim.startswith(c, arglead)
  end, choices)
end

return M
