-- memsearch.telescope: Telescope pickers over memsearch hits (static list or live search).
local M = {}

local function memsearch()
  return require('memsearch')
end

--- A Telescope entry for one hit (filename + lnum, so the grep previewer and <CR> work).
function M.entry_maker(hit)
  local file = (hit.uri and hit.uri ~= vim.NIL) and vim.uri_to_fname(hit.uri) or hit.source
  local display = memsearch().format_hit(hit)
  return {
    value = hit,
    display = display,
    ordinal = display,
    filename = file,
    lnum = tonumber(hit.start_line) or 1,
    col = 1,
  }
end

--- Shows a list of hits already fetched (used by :Memsearch search with picker = 'telescope').
---@param hits table[]
---@param opts? table Telescope picker options; `query` for the title
function M.pick_hits(hits, opts)
  opts = opts or {}
  local pickers = require('telescope.pickers')
  local finders = require('telescope.finders')
  local conf = require('telescope.config').values
  pickers
    .new(opts, {
      prompt_title = 'Memsearch: ' .. (opts.query or ''),
      finder = finders.new_table({ results = hits, entry_maker = M.entry_maker }),
      sorter = conf.generic_sorter(opts),
      previewer = conf.grep_previewer(opts),
    })
    :find()
end

--- The live finder's `fn(prompt) -> hits`. Telescope calls it inside a plenary coroutine, so it
--- waits on a oneshot channel (yielding: typing never blocks) while the request runs; a prompt
--- overtaken by a newer one cancels its request and yields no hits (stale answers are dropped).
---@param client vim.lsp.Client
---@param top_k integer
function M.live_fn(client, top_k)
  local searcher = memsearch().live_searcher(client, top_k)
  return function(prompt)
    if not prompt or vim.trim(prompt) == '' then
      return {}
    end
    local tx, rx = require('plenary.async.control').channel.oneshot()
    searcher.ask(prompt, tx)
    return rx() or {}
  end
end

--- `:Telescope memsearch [query=...]`: with a query, its hits; without one, a live search where
--- each prompt change asks the server (memsearch/search) and keeps its ranking.
---@param opts? table Telescope options plus `query` and `top_k`
function M.picker(opts)
  opts = opts or {}
  local ms = memsearch()
  if opts.query and opts.query ~= '' then
    return ms.search(opts.query, { picker = false, top_k = opts.top_k, on_results = function(hits)
      if #hits > 0 then
        M.pick_hits(hits, opts)
      end
    end })
  end
  ms.with_client(function(client, why)
    if not client then
      return require('memsearch.util').notify(tostring(why), vim.log.levels.ERROR)
    end
    local pickers = require('telescope.pickers')
    local finders = require('telescope.finders')
    local sorters = require('telescope.sorters')
    local conf = require('telescope.config').values
    pickers
      .new(vim.tbl_extend('keep', opts, { debounce = 100 }), {
        prompt_title = 'Memsearch (live)',
        finder = finders.new_dynamic({ entry_maker = M.entry_maker, fn = M.live_fn(client, opts.top_k or ms.options.top_k) }),
        sorter = sorters.highlighter_only(opts),
        previewer = conf.grep_previewer(opts),
      })
      :find()
  end)
end

return M
