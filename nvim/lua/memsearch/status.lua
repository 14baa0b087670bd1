-- memsearch.status: the server's status, `memsearch/indexed` events, progress and the statusline component.
local M = require('memsearch')
local util = require('memsearch.util')
local notify, str, err_text = util.notify, util.str, util.err_text

--- "memsearch-lsp 0.1.0 | /ws: 12 files, 40 chunks (model, collection) | last pass: ..."; a root whose first index
--- pass runs has no counts yet (only `root`, `root_uri` and `indexing`): "/ws: indexing…".
function M.format_status(s)
  if type(s) ~= 'table' then
    return 'status: ' .. vim.inspect(s)
  end
  local lines = { 'memsearch-lsp ' .. str(s.version) }
  for _, r in ipairs(type(s.roots) == 'table' and s.roots or { s }) do
    if r.indexing == true then
      lines[#lines + 1] = str(r.root) .. ': indexing…'
    elseif r.root or r.files or r.chunks then
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
  if not client or client.name ~= util.NAME or type(value) ~= 'table' then
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
  local clients = vim.lsp.get_clients({ name = util.NAME, bufnr = bufnr })
  if #clients == 0 then
    clients = vim.lsp.get_clients({ name = util.NAME })
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
