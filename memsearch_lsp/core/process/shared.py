"""A long-lived process's memory (the MCP server): the index owner's client, or the owner serving others.

Opened lazily like the CLI's (`open_memory`); when this process ends up owning the index it serves it
(`OwnerServer`) so an editor or the CLI started later becomes its client; when the owner it followed
goes away it reopens: following the new owner, or owning the index itself.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from memsearch_lsp.config import Config, load_config
from memsearch_lsp.core.api import MemoryApi
from memsearch_lsp.core.files import MemoryFile, find_memory_files
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.process import bulk
from memsearch_lsp.core.process.owner import OwnerGone, OwnerServer, open_memory

log = logging.getLogger(__name__)
T = TypeVar("T")


class SharedMemory:
    """`call(fn)` runs `fn(memory)` on the workspace's memory, one call at a time."""

    def __init__(self, workspace: str | Path):
        self.root = Path(workspace).expanduser().resolve()
        if not self.root.is_dir():
            raise FileNotFoundError(f"workspace {self.root} is not a folder")
        self.config: Config = load_config(self.root)
        self._memory: MemoryApi | None = None
        self._owner: OwnerServer | None = None
        self._lock = threading.Lock()

    def _open(self) -> MemoryApi:
        memory = open_memory(self.root, config=self.config)
        if isinstance(memory, Memory):
            owner = OwnerServer(memory, process="memsearch-lsp mcp")
            try:
                owner.start()
                self._owner = owner
            except OSError as exc:
                log.warning("cannot serve %s to other processes: %s", self.root, exc)
        log.info("%s: %s", self.root, "following the index owner" if memory.remote else "this process owns the index")
        return memory

    def call(self, fn: Callable[[MemoryApi], T]) -> T:
        with self._lock:
            if self._memory is None:
                self._memory = self._open()
            try:
                return fn(self._memory)
            except OwnerGone:
                log.info("%s: the index owner went away; reopening", self.root)
                self._memory = self._open()
                return fn(self._memory)

    def files(self) -> list[MemoryFile]:
        """The memory files on disk (no index needed)."""
        return find_memory_files(self.root, self.config)[0]

    def close(self) -> None:
        with self._lock:
            if self._owner is not None:
                self._owner.close()
                self._owner = None
            if self._memory is not None:
                self._memory.close()
                self._memory = None


WARM_PROCESS = "memsearch-lsp warm"


def serve_until_idle(workspace: str | Path, idle_s: float, *, poll_s: float = 1.0) -> bool:
    """Own the workspace's index and serve it to other processes (hooks, scripts, the CLI) until no call came
    for `idle_s` seconds; False at once when another process already owns it. The index is reconciled first,
    so the first caller finds it warm."""
    memory = open_memory(workspace)
    if not isinstance(memory, Memory):
        memory.close()
        return False
    owner = OwnerServer(memory, process=WARM_PROCESS)
    try:
        owner.start()
        bulk.index(memory)  # a large first pass in a child process: this one stays small while it waits
        owner.last_call = time.monotonic()
        while time.monotonic() - owner.last_call < idle_s:
            time.sleep(poll_s)
        log.info("%s: no call for %.0f s; closing the index", memory.root, idle_s)
        return True
    finally:
        owner.close()
        memory.close()
