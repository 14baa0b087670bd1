-- Telescope extension: `:Telescope memsearch` (live search) or `:Telescope memsearch query=redis`.
local ok, telescope = pcall(require, 'telescope')
if not ok then
  error('memsearch: this extension needs nvim-telescope/telescope.nvim')
end

return telescope.register_extension({
  exports = {
    memsearch = function(opts)
      require('memsearch.telescope').picker(opts)
    end,
  },
})
