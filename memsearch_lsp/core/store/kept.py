"""KeptMirror: a local store's search mirror over the store's lifetime (read at open, updated by writes, saved)."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memsearch_lsp.core.store import snapshot

if TYPE_CHECKING:  # numpy: loaded with the first mirror, not with the store
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

    def __init__(
        self,
        lock: threading.RLock,
        read: Callable[[Any, Callable[[], bool]], LegMirror],
        client_now: Callable[[], Any],
        saved: Saved | None = None,
        generation: Callable[[], list[int | None]] = lambda: [None],
    ):
        self._lock = lock  # the store's
        self._read = read  # (the client to read from, stale()) -> the mirror
        self._client_now = client_now  # the store's client now (None once closed)
        self.saved = saved  # where the mirror is saved (a local store), else None
        self._store_generation = generation  # the engine's write sequence of each collection now
        self._current: LegMirror | None = None
        self._pending: dict[str, Any] | None = None  # a saved copy checked by its files, read on first use
        self.generation = 0
        self.loading: threading.Thread | None = None
        self.saved_valid = True  # the saved copy may be valid: invalidate it before the next write
        self.known = False  # the saved copy is known to be the store's present state (read, checked or written)
        self.saved_at: list[Any] | None = None  # a copy read before the engine opened: its generation, to check
        self.unsaved = 0  # rows written since the mirror was saved (or read from its saved copy)

    @property
    def current(self) -> LegMirror | None:
        """The mirror, when loaded (a saved copy checked at open is read here, on first use)."""
        if self._pending is not None:
            with self._lock:  # one reader loads it; another waits for it rather than going to the engine
                if self._pending is not None and self.saved is not None:
                    saved = self.saved
                    mirror = snapshot.load(saved.index, saved.dim, saved.fields, saved.collections, None)
                    if mirror is None:  # damaged arrays: the engine is opened and read instead
                        self.known, self.saved_at = False, None
                    self._current, self._pending = mirror, None
        return self._current

    @current.setter
    def current(self, mirror: LegMirror | None) -> None:
        self._current, self._pending = mirror, None

    def counts(self) -> tuple[int, int] | None:
        """(files, chunks) of a saved copy checked at open and not read yet, from its `meta.json`; else None."""
        return snapshot.counts(self._pending) if self._pending is not None else None

    def open_saved(self, fingerprint: bool = False) -> bool:
        """At open: the mirror from its saved copy when there is a valid one (else it is read from the engine
        on the first search); True when there is. `fingerprint`: the engine is not open, and the copy is valid
        while the index's files stand as they did at its save; it is read on first use (`current`) and checked
        against the engine's write sequence if the engine opens (`engine_opened`). Else it is valid at the
        engine's write sequence, and a copy that is not is removed."""
        if self.saved is None or self._current is not None or self._pending is not None:
            return self._current is not None or self._pending is not None
        saved = self.saved
        if fingerprint:
            meta = snapshot.check(saved.index, saved.dim, saved.fields, saved.collections)
            if meta is None:
                return False
            self._pending, self.unsaved, self.known = meta, 0, True
            generation = meta.get("generation")
            self.saved_at = generation if isinstance(generation, list) else None
            return True
        mirror = snapshot.load(saved.index, saved.dim, saved.fields, saved.collections, self._store_generation())
        if mirror is None:
            self._invalidate()
            return False
        self.current, self.unsaved, self.known = mirror, 0, True
        return True

    def engine_opened(self) -> None:
        """The engine opened: a mirror read from the saved copy before it must be of its write sequence (else it is
        dropped and read from the engine); without one, the saved copy is read now, checked against it."""
        if self._current is None and self._pending is None:
            self.open_saved()
            return
        if self.saved_at is not None:
            saved_at, self.saved_at = self.saved_at, None
            if saved_at != self._store_generation():
                log.warning("the saved search mirror does not match the index it was saved with; reading the index")
                self.forget()
                self._invalidate()

    def compact(self) -> None:
        """After a large write, saved and stamped: hold the mirror as its saved copy (exact-size, file-backed arrays)
        instead of the one grown row by row (arrays with room to grow, a small array per chunk)."""
        if self.saved is None or not self.known or self._current is None:
            return
        saved = self.saved
        # The row cache in memory is the one just saved: kept, not read again (nor its thousands of strings re-made).
        mirror = snapshot.load(saved.index, saved.dim, saved.fields, saved.collections, None, self._current.rows)
        if mirror is not None:
            self._current = mirror

    def stamp(self) -> None:
        """After the engine closed, before the lock is let go: a saved copy known to be the store's present state
        names the index's files as they now stand (the engine's close may flush), so the next opening needs no
        engine."""
        if self.saved is not None and self.known:
            snapshot.stamp(self.saved.index)

    def empty(self) -> None:
        """The store's collections were (re)created empty: so is the mirror, kept from the first write on (the
        first search after a full index finds it loaded); a saved copy is of the old collections."""
        self.forget()
        if self.saved is not None:
            self._invalidate()
            from memsearch_lsp.core.store.mirror import LegMirror

            self.current, self.unsaved = LegMirror(self.saved.dim, self.saved.fields), self.SAVE_AFTER

    def _invalidate(self) -> None:
        self.saved_valid = self.known = False
        if self.saved is not None:
            snapshot.invalidate(self.saved.index)

    @contextlib.contextmanager
    def writing(self, rows: int = 1) -> Iterator[LegMirror | None]:
        """Around one write to the store (under its lock): the mirror to update as well, if loaded. A write
        that fails half-way leaves the mirror unknown: it is dropped and loaded again."""
        mirror = self.current  # a saved copy not read yet is read first: invalidated, it could not be
        if self.saved_valid:  # before the store holds anything the saved copy lacks
            self._invalidate()
        self.generation += 1
        self.unsaved += max(1, rows)
        try:
            yield mirror
        except BaseException:
            self.forget()
            raise

    def save(self, force: bool = False) -> bool:
        """Save the mirror (under the store's lock) when it is loaded and rows changed since the last save
        (`force`: however few); True when it was saved."""
        mirror, saved = self.current, self.saved
        if saved is None or mirror is None or not self.unsaved or (self.unsaved < self.SAVE_AFTER and not force):
            return False
        try:
            snapshot.save(mirror, saved.index, saved.collections, self._store_generation())
        except Exception as exc:  # a full disk or an odd value: the next opening reads the store instead
            log.warning("saving the search mirror: %s", exc)
            with contextlib.suppress(Exception):
                self._invalidate()
            return False
        self.saved_valid, self.known, self.unsaved = True, True, 0
        return True

    def settle(self, timeout_s: float = 60.0) -> None:
        """Let a load from the engine under way finish (not under the store's lock: the loader takes it), so it is
        saved and the next opening reads it from disk: a short-lived process (a CLI search) started it."""
        loading = self.loading
        if loading is not None:
            loading.join(timeout_s)

    def forget(self) -> None:
        self.current, self.saved_at = None, None
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
                self.loading = threading.Thread(
                    target=self.load_in_background,  # `client()` may open the store
                    args=(client(), self.generation),
                    name="memsearch-mirror",
                    daemon=True,
                )
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
