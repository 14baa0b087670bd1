"""KeptMirror: a local store's search mirror over the store's lifetime (read at open, updated by writes, saved)."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from memsearch_lsp.core.store import snapshot
from memsearch_lsp.core.store.mirror import LegMirror

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Saved:
    """Where and as what a local store's mirror is saved (core/store/snapshot.py)."""

    index: str
    dim: int
    fields: tuple[str, ...]
    collections: tuple[str, str]


class KeptMirror:
    """A store's mirror over its lifetime: read at open from its saved copy (core/store/snapshot.py) or empty
    for a new index, else loaded from the engine in the background on first use (searches go through Milvus
    meanwhile); updated in place by each write, dropped by a write that fails half-way and by close. Every
    write and drop bumps `generation`; a load that crossed one is thrown away, never installed stale. The
    saved copy is invalidated before the first write after a save (`invalidate`) and written again by
    `save` (after a large write, after a load from the engine, at close)."""

    SAVE_AFTER = 1024  # rows written since the last save that make a flush save the mirror

    def __init__(self, lock: threading.RLock, read: Callable[[Any, Callable[[], bool]], LegMirror],
                 client_now: Callable[[], Any], saved: Saved | None = None,
                 generation: Callable[[], list[int | None]] = lambda: [None]):
        self._lock = lock  # the store's
        self._read = read  # (the client to read from, stale()) -> the mirror
        self._client_now = client_now  # the store's client now (None once closed)
        self.saved = saved  # where the mirror is saved (a local store), else None
        self._store_generation = generation  # the engine's write sequence of each collection now
        self.current: LegMirror | None = None
        self.generation = 0
        self.loading: threading.Thread | None = None
        self.saved_valid = True  # the saved copy may be valid: invalidate it before the next write
        self.unsaved = 0  # rows written since the mirror was saved (or read from its saved copy)

    def open_saved(self) -> None:
        """At open: the mirror from its saved copy when there is a valid one (else it is read from the engine
        on the first search)."""
        if self.saved is not None and self.current is None:
            mirror = snapshot.load(self.saved.index, self.saved.dim, self.saved.fields, self.saved.collections,
                                   self._store_generation())
            if mirror is not None:
                self.current, self.unsaved = mirror, 0

    def empty(self) -> None:
        """The store's collections were (re)created empty: so is the mirror, kept from the first write on (the
        first search after a full index finds it loaded); a saved copy is of the old collections."""
        self.forget()
        if self.saved is not None:
            self._invalidate()
            self.current, self.unsaved = LegMirror(self.saved.dim, self.saved.fields), self.SAVE_AFTER

    def _invalidate(self) -> None:
        self.saved_valid = False
        if self.saved is not None:
            snapshot.invalidate(self.saved.index)

    @contextlib.contextmanager
    def writing(self, rows: int = 1) -> Iterator[LegMirror | None]:
        """Around one write to the store (under its lock): the mirror to update as well, if loaded. A write
        that fails half-way leaves the mirror unknown: it is dropped and loaded again."""
        if self.saved_valid:  # before the store holds anything the saved copy lacks
            self._invalidate()
        self.generation += 1
        self.unsaved += max(1, rows)
        try:
            yield self.current
        except BaseException:
            self.forget()
            raise

    def save(self, force: bool = False) -> None:
        """Save the mirror (under the store's lock) when it is loaded and rows changed since the last save
        (`force`: however few)."""
        mirror, saved = self.current, self.saved
        if saved is None or mirror is None or not self.unsaved or (self.unsaved < self.SAVE_AFTER
                                                                            and not force):
            return
        try:
            snapshot.save(mirror, saved.index, saved.collections, self._store_generation())
        except Exception as exc:  # a full disk or an odd value: the next opening reads the store instead
            log.warning("saving the search mirror: %s", exc)
            with contextlib.suppress(Exception):
                self._invalidate()
            return
        self.saved_valid, self.unsaved = True, 0

    def forget(self) -> None:
        self.current = None
        self.generation += 1

    def now(self, client: Any) -> LegMirror:
        """The mirror, read from `client` now if needed (after a background load under way, not beside it)."""
        loading = self.loading
        if loading is not None:
            loading.join()
        with self._lock:
            if self.current is None:
                self.current = self._load(client, self.generation)
                self.unsaved = self.SAVE_AFTER
                self.save()
            return self.current

    def ready(self, client: Callable[[], Any]) -> LegMirror | None:
        """The mirror when it is loaded; else None, and it starts loading in the background (~1 s per 10k
        rows), so the first searches go through Milvus' own search meanwhile instead of waiting for it."""
        with self._lock:
            if self.current is None and self.loading is None:
                self.loading = threading.Thread(target=self.load_in_background,  # `client()` may open the store
                                                args=(client(), self.generation), name="memsearch-mirror",
                                                daemon=True)
                self.loading.start()
            return self.current

    def load_in_background(self, client: Any, generation: int) -> None:
        try:
            mirror = self._load(client, generation)
        except Exception as exc:  # written, closed or failed meanwhile: searches stay on Milvus'
            log.debug("loading the search mirror: %s", exc)
            mirror = None
        with self._lock:
            self.loading = None
            if mirror is not None and generation == self.generation and self._client_now() is client:
                self.current, self.unsaved = mirror, self.SAVE_AFTER
                self.save()  # the next opening reads it from disk

    def _load(self, client: Any, generation: int) -> LegMirror:
        """Abandoned (Stale) once a write or close() bumps the generation, so a loader that outlives close()
        never reads or keeps the folder's next opening."""
        return self._read(client, lambda: generation != self.generation)
