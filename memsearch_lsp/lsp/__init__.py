"""The language server: thin glue from LSP to core.Memory."""
