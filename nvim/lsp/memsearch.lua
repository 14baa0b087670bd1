-- memsearch-lsp: Neovim 0.11 `vim.lsp.Config` for the memsearch language server.
-- Found on 'runtimepath' by `vim.lsp.enable('memsearch')`; `require('memsearch').setup()` layers
-- user options (cmd, settings) on top through `vim.lsp.config('memsearch', ...)`.

-- The server: the one the plugin's build step installed (stdpath('data')/memsearch/venv), else
-- `memsearch-lsp` on PATH (see memsearch.install).
local ok, install = pcall(require, 'memsearch.install')
local cmd = ok and install.server_cmd() or { 'memsearch-lsp', 'serve' }

---@type vim.lsp.Config
return {
  cmd = cmd,
  filetypes = { 'markdown' },
  -- Only memory workspaces (what `memsearch-lsp init` makes): a folder with `.memsearch.toml` or
  -- `memory/`. Not `.git`: Markdown in any other repository starts no server and writes nothing.
  root_markers = { '.memsearch.toml', 'memory' },
  -- No root found: no server (Neovim would otherwise start one in single-file mode).
  workspace_required = true,
  -- Neovim only advertises dynamic registration of watched files on macOS and Windows; turn it on so
  -- memory files written by agents (not through the editor) reach the server on Linux too.
  capabilities = {
    workspace = {
      didChangeWatchedFiles = { dynamicRegistration = true, relativePatternSupport = true },
    },
  },
  -- Section `memsearch` is what the server asks for with workspace/configuration.
  settings = { memsearch = vim.empty_dict() },
  handlers = {
    ['memsearch/indexed'] = function(err, result, ctx)
      local ok, memsearch = pcall(require, 'memsearch')
      if ok then
        memsearch._on_indexed(err, result, ctx)
      end
    end,
  },
  -- The compaction code action runs here, not on the server: the plan is shown and confirmed first.
  commands = {
    ['memsearch.compact'] = function(command)
      require('memsearch')._compact_command(command)
    end,
  },
}
