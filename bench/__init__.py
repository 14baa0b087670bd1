"""Benchmarks for memsearch-lsp (not tests): `python -m bench <name> [--quick]`."""
