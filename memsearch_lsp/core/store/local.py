"""LocalStore: a local index folder: Milvus Lite the durable store of record, the read model the one copy read.

Every read is answered by the read model (core/store/readmodel.py), loaded at open from its saved copy (saved.py) or
rebuilt from the engine. A write changes the read model at once and is queued for the engine, which a writer thread
hands to the engine's process (writer.py): what the engine took is in its write-ahead log, folded into segments when
the engine closes after ENGINE_IDLE_S without writes. The Markdown is the truth: a process killed before its queue
reached the engine leaves no valid saved copy, and the next start brings the index up to date. `close()` drains it.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from memsearch_lsp.core.files import links_in
from memsearch_lsp.core.memory_use import release_unused_memory
from memsearch_lsp.core.store import Store, saved
from memsearch_lsp.core.store.engine import Incompatible, engine_files, explained
from memsearch_lsp.core.store.folder import (
    TOLD,
    IndexBusy,
    StoreError,
    claim,
    let_go,
    locked_by_other,
    mark,
    move_aside,
    still_held,
)
from memsearch_lsp.core.store.readmodel import ReadModel
from memsearch_lsp.core.store.schema import WINDOW_SUFFIX, Row, stored, with_arrays
from memsearch_lsp.core.store.writer import Damaged, EngineProcess

log = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")

ENGINE_IDLE_S = 2.0  # the engine closes after this long without a write (reopening costs ~0.5 s per 10k chunks)
SAVE_AFTER = 1024  # rows written since the last save that make the writer save the read model when it goes idle


_shared: dict[str, tuple[LocalStore, int]] = {}  # folder -> its store in this process, and how many hold it
_sharing = threading.Lock()


def shared_store(uri: str, collection: str, dim: int) -> LocalStore:
    """The one LocalStore of a folder in this process (two memories of one workspace share it), opened."""
    key = str(Path(uri).absolute())
    with _sharing:
        store, users = _shared.get(key, (None, 0))
        if store is None or (store.collection, store.dim) != (collection, dim):
            if store is not None:
                raise IndexBusy(f"the index at {uri} is open in this process with another model or collection")
            store = LocalStore(uri, collection, dim)
        store.open()
        _shared[key] = (store, users + 1)
        return store


def _locked(method: Callable[Concatenate[ReadModel, P], R]) -> Callable[Concatenate[LocalStore, P], R]:
    """A call of the read model, under the store's lock."""

    def call(self: LocalStore, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._lock:
            return method(self.model, *args, **kwargs)

    return call


class LocalStore(Store):
    """One local index folder (`uri`): its two collections (chunks and their extra windows) and its read model."""

    is_local = True

    def __init__(self, uri: str, collection: str, dim: int):
        self.uri, self.collection, self.dim = uri, collection, dim
        self.folder = Path(uri)
        self.engine = EngineProcess(uri, (collection, collection + WINDOW_SUFFIX), dim)
        self.epoch = 0  # counts the times the index was (re)created empty
        self.writes = 0  # counts the writes, so each reader of the rows knows when another wrote
        self._model: ReadModel | None = None
        self._lock = threading.RLock()  # the read model and the queue
        self._engine_lock = threading.Lock()  # one engine user at a time (the writer, close, drop)
        self._queue: list[tuple[list[dict[str, Any]], list[dict[str, Any]], list[str], list[str]]] = []
        self._wake = threading.Condition(self._lock)
        self._writer: threading.Thread | None = None
        self._unsaved = 0  # rows written since the read model was saved (or loaded)
        self._valid_save = False  # the saved copy is the present state
        self._held: int | None = None  # the folder lock's descriptor
        self._closing = False
        self.failure: BaseException | None = None  # the writer's last failure (its queue is kept and retried)
        self.moved_aside: tuple[str, str] | None = None

    @property
    def identity(self) -> dict[str, Any]:
        return {"dim": self.dim, "collections": list(self.engine.collections)}

    # -- lifecycle -----------------------------------------------------------------------------
    def open(self) -> None:
        """Take the folder (IndexBusy when another process holds it) and load the read model: from its saved copy
        when that is valid, else from the engine (an index of another layout or that cannot be read is moved aside
        and started afresh)."""
        with self._lock:
            if self._held is not None:
                return
            self._held, fresh = claim(self.folder)
            try:
                self._remove_old_copy()
                if fresh or not engine_files(self.folder):
                    self._start_empty(sign=fresh)  # (a folder holding something else is signed only once written)
                    return
                self._model = saved.load(self.folder, self.identity, self.dim)
                self._valid_save = self._model is not None
                if self._model is None:
                    self._rebuild()
            except BaseException:
                self._release()
                raise

    def _start_empty(self, sign: bool = True) -> None:
        if sign:
            mark(self.folder)
        self._model, self._unsaved, self._valid_save = ReadModel(self.dim), 0, False
        self.epoch += 1

    def _remove_old_copy(self) -> None:
        """Remove the saved mirror of earlier versions, and a saved-copy folder that is a link or no folder (neither is
        ever read or followed: rmtree and unlink never follow a link)."""
        for name in (saved.OLD_FOLDER, saved.FOLDER):
            path = self.folder / name
            if path.is_symlink() or (path.exists() and not path.is_dir()):
                path.unlink()
            elif name == saved.OLD_FOLDER and path.is_dir():
                shutil.rmtree(path)

    def _rebuild(self) -> None:
        """The read model rebuilt from the engine's rows by the engine's process and saved, then loaded here."""
        linked = links_in(self.folder, skip=saved.FOLDER)
        if linked:
            self._move_aside(f"it holds links or files of another user ({', '.join(linked[:3])})")
            return
        with self._engine_lock:
            try:
                self.engine.open()
                self.engine.rebuild(self.identity)
            except (Incompatible, Damaged) as exc:
                self.engine.close()
                if isinstance(exc, Incompatible):
                    self._move_aside(str(exc), "previous")
                else:
                    self._move_aside(f"it cannot be read ({exc})")
                return
            except BaseException as exc:
                self.engine.close()
                raise explained(self.uri, exc) if isinstance(exc, Exception) else exc from exc
        self._model = saved.load(self.folder, self.identity, self.dim)
        if self._model is None:
            raise StoreError(f"the read model rebuilt from {self.uri} cannot be read back (see the warning above)")
        mark(self.folder)
        self._unsaved, self._valid_save = 0, True
        self._close_engine()

    def _move_aside(self, why: str, kind: str = "broken") -> None:
        if self._held is not None:
            let_go(self._held)
        self._held = None
        aside = move_aside(self.folder, why, kind)
        self.moved_aside = (aside.name if aside else "", why)
        self._held, _ = claim(self.folder)
        if aside is None:
            log.warning(
                "the index at %s is gone because %s; rebuilding it from the Markdown", self.uri, why, extra=TOLD
            )
        self._start_empty()

    def _afresh(self, why: str) -> None:
        """The index damaged or deleted in use (`why`) started afresh as at open; when its folder cannot be made again,
        the read model is kept for the searches and that failure said once (the next write or `keep_folder` retries)."""
        self._queue = []
        try:
            self._move_aside(why)
            self.failure = None
        except (StoreError, OSError) as exc:
            self._cannot_write(exc)

    def _take_again(self) -> None:
        """The folder taken again after `_afresh` could not: the index (and read model: a read fills it) afresh."""
        self._queue = []
        try:
            self._held, fresh = claim(self.folder)
        except (StoreError, OSError) as exc:
            self._cannot_write(exc)
            return
        if fresh:
            self._start_empty()
            self.failure = None
            log.info("the index at %s can be written again; rebuilding it from the Markdown", self.folder)
        else:  # (another process made an index there meanwhile: not the one this read model holds)
            self._afresh("it was made again by another process")

    def _cannot_write(self, exc: BaseException) -> None:
        said = str(exc) if isinstance(exc, StoreError) else f"cannot write the index at {self.uri}: {exc}"
        failure = StoreError(
            f"{said}; until it can be, searches answer from what was indexed and nothing is saved (the next change or "
            "reindex tries again)"
        )
        if str(failure) != str(self.failure):  # (said once, not at every try)
            log.warning("%s", failure, extra=TOLD)
        self.failure = failure

    def keep_folder(self) -> bool:
        """True while this store holds its folder; one deleted under it (`rm -rf .memsearch`, `git clean -xfd`) is made
        again at once and its lock taken, the index started afresh as after a failed write (so no other process opens
        a second index there); False while another process holds the one there (it is tried again at the next call)."""
        with self._engine_lock, self._lock:
            if self._model is None or (self._held is not None and still_held(self._held, self.folder)):
                return self._held is not None
            if locked_by_other(self.folder):
                return False
            self.engine.close()
            if self._held is None:  # (its folder could not be made again: tried again now)
                self._take_again()
            else:
                self._afresh(
                    "it was deleted while in use" + (", then made again by another process" * self.folder.exists())
                )
            return self._held is not None

    def close(self) -> None:
        """Write what is queued, save the read model when it changed, close the engine and let the folder go (once
        the last memory of this process that holds it closes it)."""
        key = str(self.folder.absolute())
        with _sharing:
            store, users = _shared.get(key, (None, 0))
            if store is self and users > 1:
                _shared[key] = (self, users - 1)
                return
            if store is self:
                del _shared[key]
        with self._lock:
            if self._held is None and self._model is None:
                return
            self._closing = True
            self._wake.notify_all()
        writer = self._writer
        if writer is not None:
            writer.join()
        try:
            self._drain()
            self._close_engine(save_after=0)
        finally:
            with self._lock:
                self._release()
        if self.failure is not None:  # the engine could not take the writes: said, and the saved copy not written
            failure, self.failure = self.failure, None
            raise failure

    def _release(self) -> None:
        self.engine.close()
        if self._held is not None:
            let_go(self._held)
        self._held, self._model, self._writer, self._closing = None, None, None, False

    @property
    def model(self) -> ReadModel:
        if self._model is None:
            self.open()
        assert self._model is not None
        return self._model

    # -- writes --------------------------------------------------------------------------------
    def upsert(self, rows: Sequence[dict[str, Any]], windows: Sequence[dict[str, Any]] = ()) -> None:
        """Chunk rows (`id`, `source`, the scalar fields, `dense`, `sparse`), then their extra window rows (`id`
        "<chunk id>:<n>", `chunk_id`, `source`, `embed_hash`, `model`, `dense`): searchable at once, written to the
        engine by the writer."""
        clipped, windows = with_arrays([stored(r) for r in rows], self.dim), with_arrays(list(windows), self.dim)
        with self._lock:
            model = self._writing(len(clipped) + len(windows))
            for row in clipped:
                model.put_chunk(row)
            for w in windows:
                model.put_window(w["id"], w["chunk_id"], w["source"], w["dense"])
            self._queue.append((clipped, windows, [], []))

    def delete(self, ids: Iterable[str]) -> None:
        """Chunk rows and their window rows."""
        ids = list(ids)
        with self._lock:
            model = self._writing(len(ids))
            windows = [w for key in ids for w in model.windows_of.get(key, [])]
            model.delete_chunks(ids)
            self._queue.append(([], [], ids, windows))

    def _writing(self, rows: int) -> ReadModel:
        model = self.model
        self.writes += 1
        if self._valid_save:
            saved.invalidate(self.folder)  # before the engine can hold anything the saved copy lacks
            self._valid_save = False
        self._unsaved += max(1, rows)
        self._start_writer()  # it opens the engine while the caller goes on
        return model

    def _start_writer(self) -> None:
        if self._writer is None:
            self._writer = threading.Thread(target=self._write_loop, name="memsearch-engine", daemon=True)
            self._writer.start()

    def flush(self, wait: bool = False) -> None:
        """Hand what is queued to the writer; it returns at once (searches already see it) unless `wait`: then once the
        engine holds it (the engine's failure, if it could not take it)."""
        if wait:
            self.sync()
            return
        with self._lock:
            if self._queue:
                self._start_writer()
            self._wake.notify_all()

    def sync(self) -> None:
        """Wait until the engine holds every write made so far; the engine's failure if it could not take them."""
        self._drain()
        if self.failure is not None:
            raise self.failure

    def _write_loop(self) -> None:
        """The writer: drains the queue into the engine and, once no write came for ENGINE_IDLE_S, saves the read model
        (after large writes) and closes the engine."""
        with self._engine_lock, contextlib.suppress(Exception):  # (a failure to open is said by the drain)
            if self._held is not None:  # (never a folder this process does not hold)
                self.engine.open()
        while True:
            with self._lock:
                if not self._queue and not self._closing:
                    self._wake.wait(ENGINE_IDLE_S)
                if self._closing:
                    return
                idle = not self._queue
            if idle:
                self._close_engine(save_after=SAVE_AFTER)
                with self._lock:
                    if not self._queue:
                        self._writer = None
                        return
                continue
            self._drain()
            if self.failure is not None:  # tried again with the next write (flush) or at close, not in a loop
                with self._lock:
                    self._writer = None
                return

    def _drain(self) -> None:
        with self._engine_lock:
            with self._lock:
                batch, self._queue = self._queue, []
                if self._held is None and self._model is not None:  # its folder could not be made again: tried again
                    self._take_again()  # (the batch is in the read model, started afresh once it can be written)
                    return
            if not batch:
                return
            try:
                if not self.folder.is_dir():
                    raise Damaged("its folder is gone")
                with contextlib.suppress(OSError, ValueError):
                    saved.discard(self.folder)  # (an invalid saved copy's files: what was deleted since is in them)
                self.engine.open()
                mark(self.folder)  # our collections are in it now
                for upserts, windows, deletes, window_deletes in batch:
                    self.engine.write(upserts, windows, deletes, window_deletes)
                self.failure = None
            except Damaged as exc:  # its files were damaged or deleted while in use: started afresh, as at open
                self.engine.close()
                with self._lock:
                    self._afresh(f"it was damaged or deleted while in use ({exc})")
            except Exception as exc:
                with self._lock:
                    self._queue[:0] = batch  # kept, and tried again with the next write or at close
                failure = explained(self.uri, exc)
                if str(failure) != str(self.failure):  # said once, not at every try
                    log.warning("%s; the write is tried again with the next one", failure)
                self.failure = failure
                self.engine.close()

    def _save(self, reload: bool = True) -> None:
        """Save the read model (under the lock), then (`reload`) read it back mapped from its files: the rows held as
        Python strings and the vectors' spare room go."""
        try:
            saved.save(self.model, self.folder, self.identity)
        except Exception as exc:  # a full disk or an odd value: the next opening reads the engine
            log.warning("saving the read model of %s: %s", self.uri, exc)
            return
        if reload:
            self._model = saved.load(self.folder, self.identity, self.dim) or self._model
        self._valid_save, self._unsaved = True, 0

    def _close_engine(self, save_after: int | None = None) -> None:
        """Close the engine, and meanwhile (while it folds its log into segments) save the read model when `save_after`
        rows or more were written since it was saved; then name the engine's files in the saved copy, which is now
        the present state (the next opening reads it without the engine)."""
        with self._engine_lock:
            self.engine.close(wait=False)
            with self._lock:
                if save_after is not None and not (self.failure or self._valid_save) and self._unsaved >= save_after:
                    self._save(reload=save_after > 0)
            self.engine.close()
            with self._lock, contextlib.suppress(OSError, ValueError):
                if self._valid_save:
                    saved.stamp(self.folder)
        release_unused_memory()

    def drop(self) -> None:
        """Empty the index (reset with a server URI; the local reset removes the folder)."""
        with self._engine_lock, self._lock:
            self._queue = []
            self.engine.open()
            self.engine.drop()
            saved.invalidate(self.folder)
            self._start_empty()

    # -- reads: the read model ---------------------------------------------------------------------
    note_file = _locked(ReadModel.note_file)
    dense_leg = _locked(ReadModel.dense)
    sparse_leg = _locked(ReadModel.sparse)
    idf = _locked(ReadModel.idf)
    coverage = _locked(ReadModel.coverage)
    sections = _locked(ReadModel.sections)
    scan = _locked(ReadModel.scan)
    files = _locked(ReadModel.files)
    ids_of = _locked(ReadModel.ids_of)
    vectors_for = _locked(ReadModel.vectors_for)
    damaged = _locked(ReadModel.damaged)

    def rows(self, ids: Sequence[str]) -> list[Row]:
        """Rows by id, in the order of `ids` (ids that are gone are left out)."""
        with self._lock:
            found = [self.model.row(i) for i in ids]
        return [Row.from_entity(r["id"], r) for r in found if r is not None]

    def count(self) -> int:
        with self._lock:
            return self.model.docs


__all__ = ["IndexBusy", "LocalStore", "StoreError"]
