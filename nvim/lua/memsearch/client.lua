-- memsearch.client: the memsearch client for a buffer or the cwd (started on demand), requests, and the CLI.
local M = require('memsearch')
local util = require('memsearch.util')

--- The workspace root for `path` by the root markers; without `path`, the current buffer's (a file buffer), else
--- the cwd's: nil outside any memory workspace.
---@param path? string
---@return string?
function M.find_root(path)
  local cfg = M.lsp_config() or {}
  local markers = cfg.root_markers or M.root_markers
  if path then
    return vim.fs.root(path, markers)
  end
  local name = vim.api.nvim_buf_get_name(0)
  local root = (vim.bo.buftype == '' and name ~= '') and vim.fs.root(name, markers) or nil
  return root or vim.fs.root(vim.fn.getcwd() .. '/.', markers)
end

--- The memsearch client for the current buffer; else the one of the workspace the buffer (or the cwd) is in (see
--- find_root), nil when that workspace has none running (with_client starts it) and outside any workspace
--- (with_client says so): a command never acts on another workspace, a note never goes to another one's log.
---@return vim.lsp.Client?
function M.get_client()
  local clients = vim.lsp.get_clients({ name = util.NAME, bufnr = 0 })
  if #clients > 0 then
    return clients[1]
  end
  local here = M.find_root()
  if not here then
    return nil
  end
  here = vim.fs.normalize(here)
  for _, client in ipairs(vim.lsp.get_clients({ name = util.NAME })) do
    if client.root_dir and vim.fs.normalize(client.root_dir) == here then
      return client
    end
  end
  return nil
end

--- Calls `cb(client)` with an initialized client, starting one for the cwd's workspace if none
--- runs (so :Memsearch works from any buffer); `cb(nil, reason)` when that is impossible.
---@param cb fun(client: vim.lsp.Client?, err: string?)
function M.with_client(cb)
  local client = M.get_client()
  if not client then
    local cfg = M.lsp_config()
    if not cfg or not cfg.cmd then
      return cb(nil, 'no memsearch LSP config (call require("memsearch").setup())')
    end
    cfg = vim.deepcopy(cfg)
    if type(cfg.root_dir) ~= 'string' then
      cfg.root_dir = M.find_root()
    end
    if not cfg.root_dir then -- never start a server (and an index) outside a memory workspace
      return cb(nil, M.NO_MEMORY .. ' (no ' .. table.concat(cfg.root_markers or M.root_markers, ' or ')
        .. ' above ' .. vim.fn.getcwd() .. ')')
    end
    if type(cfg.cmd) == 'table' and vim.fn.executable(cfg.cmd[1]) ~= 1 then -- say why, and the way out
      return cb(nil, ("could not start the server: `%s` is not executable: run :lua require('memsearch.install').build()"
        .. ' or see :checkhealth memsearch'):format(cfg.cmd[1]))
    end
    local ok, id = pcall(vim.lsp.start, cfg, { attach = false, silent = true })
    client = ok and id and vim.lsp.get_client_by_id(id) or nil
    if not client then
      return cb(nil, 'could not start the server ' .. vim.inspect(cfg.cmd) .. ' (see :checkhealth memsearch)')
    end
  end
  if client.initialized then
    return cb(client)
  end
  local waited, timer = 0, assert(vim.uv.new_timer())
  timer:start(
    50,
    50,
    vim.schedule_wrap(function()
      waited = waited + 50
      if client.initialized or client:is_stopped() or waited > 60000 then
        timer:stop()
        timer:close()
        if client.initialized then
          cb(client)
        else
          cb(nil, 'the server did not initialize')
        end
      end
    end)
  )
end

--- Sends `method` to the server; `cb(err, result, client)`. Pending buffer edits are flushed first.
---@param method string
---@param params table
---@param cb fun(err: any, result: any, client: vim.lsp.Client?)
function M.request(method, params, cb)
  M.with_client(function(client, why)
    if not client then
      return cb(why, nil, nil)
    end
    local ok, sent = pcall(client.request, client, method, params, function(err, result)
      cb(err, result, client)
    end)
    if not ok or not sent then
      cb(not ok and sent or 'the server is not running', nil, client)
    end
  end)
end

--- workspace/executeCommand `command` with `arguments` (a list); `cb(err, result, client)`.
function M.exec(command, arguments, cb)
  M.request('workspace/executeCommand', { command = command, arguments = arguments or {} }, cb)
end

--- The CLI of the configured server (`{ 'memsearch-lsp' }`, or `{ python, '-m', 'memsearch_lsp' }`), or nil and why.
---@return string[]? prefix, string? err
function M.cli()
  local cfg = M.lsp_config()
  local cmd = cfg and cfg.cmd
  if type(cmd) ~= 'table' then
    return nil, 'the memsearch config has no cmd list (a custom transport cannot run the CLI)'
  end
  if vim.fn.executable(cmd[1]) ~= 1 then
    return nil, ("`%s` is not executable: run :lua require('memsearch.install').build() or see :checkhealth memsearch"):format(cmd[1])
  end
  return require('memsearch.health').cli_prefix(cmd)
end

--- Why a CLI call failed: the message (and hint) of its `--json` error (`{"error": {"message", "hint"}}` on stdout),
--- else the last line of its output.
---@param obj vim.SystemCompleted
---@return string
function M._cli_failure(obj)
  local out = vim.split(vim.trim(obj.stdout or ''), '\n', { trimempty = true })
  for i = #out, 1, -1 do
    local ok, decoded = pcall(vim.json.decode, out[i])
    local e = ok and type(decoded) == 'table' and decoded.error or nil
    if type(e) == 'table' and type(e.message) == 'string' and e.message ~= '' then
      return type(e.hint) == 'string' and e.hint ~= '' and ('%s (%s)'):format(e.message, e.hint) or e.message
    end
  end
  local lines = vim.split(vim.trim((obj.stderr or '') .. '\n' .. (obj.stdout or '')), '\n', { trimempty = true })
  return lines[#lines] or ('exit ' .. obj.code)
end

--- Runs `<cli> args...` asynchronously; `cb(err, decoded_json)` on the main loop.
function M._run_cli(args, stdin, cb)
  local prefix, why = M.cli()
  if not prefix then
    return cb(why)
  end
  local argv = vim.list_extend(vim.deepcopy(prefix), args)
  local ok, err = pcall(vim.system, argv, { text = true, stdin = stdin }, vim.schedule_wrap(function(obj)
    if obj.code ~= 0 then
      return cb(M._cli_failure(obj))
    end
    local decoded, result = pcall(vim.json.decode, obj.stdout or '')
    cb(nil, decoded and result or {})
  end))
  if not ok then
    cb(tostring(err))
  end
end
