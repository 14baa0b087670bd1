-- memsearch: defines :Memsearch (loaded lazily); starts nothing. See require('memsearch').setup().
if vim.g.loaded_memsearch then
  return
end
vim.g.loaded_memsearch = 1

vim.api.nvim_create_user_command('Memsearch', function(args)
  require('memsearch').command(args)
end, {
  nargs = '*',
  bang = true,
  desc = 'memsearch: search | remember | today | reindex[!] | compact [dry-run] | status | init [dir]',
  complete = function(arglead, cmdline, pos)
    return require('memsearch').complete(arglead, cmdline, pos)
  end,
})
