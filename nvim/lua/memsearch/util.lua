-- memsearch.util: what the plugin's modules share (messages, JSON values as text, loaded buffers).
local U = {}

U.NAME = 'memsearch' -- the LSP config's name (lsp/memsearch.lua)

--- A message to the user; the CLI's advice to start a memory (a server's or the CLI's error, NO_MEMORY) is said with
--- this editor's command, whichever command said it.
function U.notify(msg, level)
  msg = tostring(msg):gsub('run `memsearch%-lsp init`', 'run :Memsearch init')
  vim.notify('memsearch: ' .. msg, level or vim.log.levels.INFO, { title = 'memsearch' })
end

--- A JSON value as a Lua string ('' for nil / vim.NIL).
function U.str(v)
  if v == nil or v == vim.NIL then
    return ''
  end
  return tostring(v)
end

function U.one_line(s, max)
  s = U.str(s):gsub('%s+', ' '):gsub('^ ', ''):gsub(' $', '')
  if max and #s > max then
    s = s:sub(1, max - 1) .. '…'
  end
  return s
end

function U.err_text(err)
  if type(err) == 'table' then
    return U.str(err.message ~= nil and err.message or vim.inspect(err))
  end
  return U.str(err)
end

--- The loaded buffer of `path`, or nil.
function U.loaded_buf(path)
  local buf = vim.fn.bufnr(vim.fs.normalize(path))
  return (buf ~= -1 and vim.api.nvim_buf_is_loaded(buf)) and buf or nil
end

--- Re-reads `path` from disk when it is loaded without unsaved changes.
function U.reload_clean(path)
  local buf = U.loaded_buf(path)
  if buf and not vim.bo[buf].modified then
    local errmsg = vim.v.errmsg
    vim.api.nvim_buf_call(buf, function()
      vim.cmd('silent! edit!')
    end)
    vim.v.errmsg = errmsg -- (markdown's ftplugin undo runs `silent! unmap` on a reload: no error of the user's)
  end
end

--- On a Markdown buffer while the memsearch config is enabled: warn once per session when its server cannot start
--- (Neovim skips a config whose cmd is not executable, and says so only in lsp.log). Cheap until then: the plugin
--- is loaded only for a buffer of an enabled config.
function U.watch_missing_server()
  vim.api.nvim_create_autocmd('FileType', {
    group = vim.api.nvim_create_augroup('memsearch.missing_server', { clear = true }),
    pattern = 'markdown',
    callback = function(args)
      if vim.lsp.is_enabled and vim.lsp.is_enabled(U.NAME) then
        require('memsearch').warn_missing_server(args.buf)
      end
    end,
  })
end

return U
