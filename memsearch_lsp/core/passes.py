"""An index pass: what it reports (IndexStats), and the gate a write meets while one holds the index (PassGate)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from memsearch_lsp.core.files import Skipped

T = TypeVar("T")
# a write (the note `remember` appended) waits this long for a pass that holds the index (a first index of a large
# memory takes minutes), then leaves its file to that pass; as a search waits for one (core/process/door.py)
PASS_WAIT_S = 10.0


@dataclass
class IndexStats:
    files_added: int = 0
    files_modified: int = 0
    files_removed: int = 0
    files_total: int = 0
    chunks_total: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    seconds: float = 0.0
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[Skipped] = field(default_factory=list)

    def __str__(self) -> str:
        text = (
            f"+{self.files_added} added ~{self.files_modified} modified -{self.files_removed} removed, "
            f"{self.chunks_embedded} chunks embedded, {self.chunks_reused} reused "
            f"({self.chunks_total} chunks in {self.files_total} files, {self.seconds:.2f}s)"
        )
        for item in self.skipped:
            text += f"\nskipped {item.source}: {item.reason}"
        for item in self.warnings:
            text += f"\nwarning {item.source}: {item.reason}"
        return text

    @property
    def changed(self) -> bool:
        return bool(self.files_added or self.files_modified or self.files_removed)

    def add(self, other: IndexStats) -> None:
        """Count in a later pass of the same call (`PassGate.run`): its changes, and the totals it left."""
        for name in ("files_added", "files_modified", "files_removed", "chunks_embedded", "chunks_reused"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.files_total, self.chunks_total = other.files_total, other.chunks_total

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["seconds"] = round(self.seconds, 3)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IndexStats:
        """The stats as `to_dict` (or `asdict`) gave them, from another process."""
        notes = {key: [Skipped(**item) for item in data.get(key, [])] for key in ("skipped", "warnings")}
        return cls(**{**data, **notes})


class PassGate:
    """The index's lock as passes and writes share it: a pass (`run`) holds it throughout; a write of one file
    (`index_soon`) waits for it PASS_WAIT_S at most, then leaves that file to the pass, which reads it again before it
    lets go (a note `remember` appended is searchable once the pass ends, whether it had read the file or not)."""

    def __init__(self, lock: threading.RLock):
        self.lock = lock
        self._due: set[str] = set()  # files left to the pass that holds the lock
        self._passing = False  # a pass holds the lock and looks at `_due` again before it lets go
        self._state = threading.Lock()  # (`_due` and `_passing`)

    def run(self, one_pass: Callable[[bool], T]) -> list[T]:
        """`one_pass(False)` under the lock, then `one_pass(True)` as long as files were left to it meanwhile."""
        with self.lock:
            with self._state:
                self._passing, self._due = True, set()  # (this pass reads every file)
            try:
                done = [one_pass(False)]
                while self._more_due():
                    done.append(one_pass(True))
                return done
            finally:
                with self._state:
                    self._passing = False

    def _more_due(self) -> bool:
        """Whether files were left to the pass since it last looked; False: it lets go of the lock, and a write that
        comes later waits for the lock itself."""
        with self._state:
            self._passing, self._due = bool(self._due), set()
            return self._passing

    def index_soon(self, source: str, index: Callable[[], T], wait_s: float | None = None) -> T | None:
        """`index()` (of the file `source`, just written) under the lock; while a pass holds it, waiting `wait_s`
        (PASS_WAIT_S) at most, or not at all once another write was left to that pass: None, and the pass reads
        `source` again before it ends. A holder that is no pass (one file's write) is waited for."""
        deadline = time.monotonic() + (PASS_WAIT_S if wait_s is None else wait_s)
        while not self.lock.acquire(timeout=min(0.5, max(0.05, deadline - time.monotonic()))):
            with self._state:
                if self._passing and (self._due or time.monotonic() >= deadline):
                    self._due.add(source)
                    return None
        try:
            return index()
        finally:
            self.lock.release()
