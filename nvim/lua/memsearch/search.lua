-- memsearch.search: :Memsearch search, its quickfix list and pickers, and the live searcher of pickers.
local M = require('memsearch')
local util = require('memsearch.util')
local notify, str, one_line, err_text = util.notify, util.str, util.one_line, util.err_text

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
