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

local function is_cmd(v)
  if type(v) == 'function' then
    return true
  end
  if type(v) ~= 'table' or #v == 0 or #v ~= vim.tbl_count(v) then
    return false
  end
  return vim.iter(v):all(function(s)
    return type(s) == 'string'
  end)
end

--- Each option: a test of its value and what it must be (for the message).
local valid = {
  cmd = { is_cmd, 'a list of strings (the server command) or a function' },
  settings = { function(v) return type(v) == 'table' end, 'a table (server settings)' },
  enable = { function(v) return type(v) == 'boolean' end, 'true or false' },
  top_k = { function(v) return type(v) == 'number' and v >= 1 and v % 1 == 0 end, 'a positive integer' },
  picker = { function(v) return v == 'select' or v == 'telescope' or v == false end, "'select' or 'telescope'" },
  lsp = { function(v) return type(v) == 'table' end, 'a table (vim.lsp.Config fields)' },
}

--- Edit distance of two short strings (for "did you mean").
local function distance(a, b)
  local row = {}
  for j = 0, #b do
    row[j] = j
  end
  for i = 1, #a do
    local diag, prev = row[0], i
    row[0] = i
    for j = 1, #b do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      diag, row[j] = row[j], math.min(row[j] + 1, prev + 1, diag + cost)
      prev = row[j]
    end
  end
  return row[#b]
end

--- The options of `opts` that are known and valid; a warning for each unknown key (with the closest option),
--- an error for each bad value (that option keeps its default).
---@return memsearch.Options
local function checked(opts)
  if opts == nil then
    return {}
  elseif type(opts) ~= 'table' then
    util.notify(('setup() takes a table of options, got %s; using the defaults'):format(vim.inspect(opts)),
      vim.log.levels.ERROR)
    return {}
  end
  local keys = vim.tbl_keys(opts)
  table.sort(keys, function(a, b)
    return tostring(a) < tostring(b)
  end)
  local ok = {}
  for _, key in ipairs(keys) do
    local value, rule = opts[key], valid[key]
    if not rule then
      local name, hint = tostring(key):lower(), ''
      local best = math.min(3, #name) -- close: at most 2 edits, and fewer than the key's length
      for option in vim.spairs(valid) do
        local d = distance(name, option)
        if d < best then
          best, hint = d, (" (did you mean '%s'?)"):format(option)
        end
      end
      util.notify(("unknown option '%s'%s"):format(tostring(key), hint), vim.log.levels.WARN)
    elseif not rule[1](value) then
      local default = M.defaults[key] ~= nil and (' (%s)'):format(vim.inspect(M.defaults[key])) or ''
      util.notify(("option '%s' must be %s, got %s; using the default%s"):format(key, rule[2],
        vim.inspect(value, { newline = ' ', indent = '' }), default), vim.log.levels.ERROR)
    else
      ok[key] = value
    end
  end
  return ok
end

--- Checks `opts` (a warning per unknown key, an error per bad value, which keeps its default), merges them over
--- the defaults, configures the LSP client and enables it.
---@param opts? memsearch.Options
function M.setup(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), checked(opts))
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
