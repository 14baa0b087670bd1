"""LSP features, each with a register(server) function."""
