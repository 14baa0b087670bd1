"""memsearch-lsp: long-term Markdown memory with hybrid search, served over LSP and a CLI.

The Python API: `open_memory(root, **settings) -> MemoryApi` opens a workspace's memory, whichever
process owns its index (beside a running editor, that owner's client; else a `Memory` that owns it).
`Memory` is the local implementation, which owns the index itself (`Memory(root).store`, `.indexer`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memsearch_lsp.version import __version__

# ONNX Runtime 1.29+ queues usage telemetry for Microsoft on Linux and macOS (a device id and an events database in
# the user's cache, uploaded in the background) unless this is set before it loads: nothing here talks to anyone.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

if TYPE_CHECKING:
    from memsearch_lsp.config import Config
    from memsearch_lsp.core.api import MemoryApi, Remembered
    from memsearch_lsp.core.memory import Memory
    from memsearch_lsp.core.search.hybrid import Hit

__all__ = [
    "IndexBusy",
    "Memory",
    "MemoryApi",
    "NoMemoryHere",
    "NoteError",
    "Remembered",
    "__version__",
    "open_memory",
    "open_user_memory",
    "search",
]
_ERRORS = {  # what the API raises, by the module that defines it (imported on first use)
    "NoMemoryHere": "memsearch_lsp.core.onboard",
    "NoteError": "memsearch_lsp.core.notes",
    "IndexBusy": "memsearch_lsp.core.store.folder",
}


def open_memory(
    root: str | Path = ".", *, config: Config | None = None, wait_s: float = 30.0, **settings: Any
) -> MemoryApi:
    """The memory of the workspace at `root`: the index owner's client when another process (an editor,
    `memsearch-lsp warm`, the MCP server) owns its index, else a local `Memory` that owns it; either way a
    `MemoryApi`. `settings` as keywords (`top_k=3`, `vector_weight=0.5`, `milvus_uri=...`) override
    `.memsearch.toml`. A local open waits up to `wait_s` while a short-lived process holds the index."""
    from memsearch_lsp.core.process.door import open_memory as open_owned

    return open_owned(root, wait_s=wait_s, config=config, scoped=search, **settings)


def open_user_memory(*, create: bool = False, **settings: Any) -> MemoryApi | None:
    """The user's own memory (`$XDG_DATA_HOME/memsearch-lsp/memory`, private), which every workspace's searches
    include; None when there is none yet and `create` is False (`remember` into it with `create=True`)."""
    from memsearch_lsp.core.scopes import open_user_memory as open_user

    return open_user(create=create, **settings)


def search(
    memory: MemoryApi | None, query: str, top_k: int | None = None, *, scope: str = "all", **filters: Any
) -> list[Hit]:
    """Hits for `query` from `memory` (a workspace's) and the user memory (`scope`: "workspace", "user" or
    "all"), merged by relevance, each with its `scope`; `filters` as `MemoryApi.search` takes them."""
    from memsearch_lsp.core.scopes import search_scopes

    opened: list[MemoryApi] = []

    def user() -> MemoryApi | None:
        mine = open_user_memory()
        opened.extend([mine] if mine is not None else [])
        return mine

    try:
        return search_scopes(memory, user, query, top_k, scope, **filters)
    finally:
        for mine in opened:
            mine.close()


def __getattr__(name: str) -> Any:
    # The engine is imported on first use, not for `memsearch-lsp --version`.
    if name == "Memory":
        from memsearch_lsp.core.memory import Memory

        return Memory
    if name in ("MemoryApi", "Remembered"):
        from memsearch_lsp.core import api

        return getattr(api, name)
    if name in _ERRORS:
        import importlib

        return getattr(importlib.import_module(_ERRORS[name]), name)
    raise AttributeError(name)
