-- memsearch: defines :Memsearch (loaded lazily) and the missing-server warning; starts nothing. See require('memsearch').setup().
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

-- a memory file opened with no server to start: said once (memsearch.warn_missing_server)
require('memsearch.util').watch_missing_server()
