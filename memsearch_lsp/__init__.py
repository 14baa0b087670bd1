"""memsearch-lsp: long-term Markdown memory with hybrid search, served over LSP and a CLI."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memsearch_lsp.version import __version__

if TYPE_CHECKING:
    from memsearch_lsp.core.memory import Memory

__all__ = ["Memory", "__version__"]


def __getattr__(name: str) -> Any:
    # `from memsearch_lsp import Memory` without importing the engine for `--version`. The public
    # Memory follows the index owner: beside a running editor it is that owner's client.
    if name == "Memory":
        from memsearch_lsp.core.process.owner import PublicMemory

        return PublicMemory
    raise AttributeError(name)
