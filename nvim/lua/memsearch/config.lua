-- memsearch.config: the options, setup() and the resolved LSP config.
local M = require('memsearch')
local util = require('memsearch.util')

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

--- What marks a memory workspace (as in lsp/memsearch.lua); `memsearch-lsp init` creates both.
M.root_markers = { '.memsearch.toml', 'memory' }
M.NO_MEMORY = 'no memory here: run `memsearch-lsp init`'

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
  vim.lsp.config(util.NAME, cfg)
  util.watch_missing_server() -- (before enable: it looks at the buffers already open)
  if M.options.enable ~= false then
    vim.lsp.enable(util.NAME)
  end
end

M._warned_missing = false

--- Warns once per session when `buf` is a file of a memory workspace and the server command is not executable,
--- with the way out (the build step). Neovim itself only writes it to lsp.log.
---@param buf integer
function M.warn_missing_server(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  if M._warned_missing or name == '' or vim.bo[buf].buftype ~= '' then
    return
  end
  local cfg = M.lsp_config()
  local cmd = cfg and cfg.cmd
  if type(cmd) ~= 'table' or vim.fn.executable(cmd[1]) == 1 or not M.find_root(name) then
    return
  end
  M._warned_missing = true
  util.notify(("no server for this memory: `%s` is not executable: run :lua require('memsearch.install').build()"
    .. ' (or put memsearch-lsp on PATH); see :checkhealth memsearch'):format(cmd[1]), vim.log.levels.WARN)
end

--- The resolved config (lsp/memsearch.lua + vim.lsp.config calls), or nil when there is none.
---@return vim.lsp.Config?
function M.lsp_config()
  local ok, cfg = pcall(function()
    return vim.lsp.config[util.NAME]
  end)
  return ok and cfg or nil
end
