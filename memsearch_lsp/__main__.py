"""`python -m memsearch_lsp` runs the CLI."""

from memsearch_lsp.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
