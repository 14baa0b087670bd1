"""MilvusStore: one collection's writes, reads and the two search legs (dense + BM25); a local folder through
core/store/client.py's LiteClient (its engine in this process), a Milvus server by URI through pymilvus."""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memsearch_lsp.core.store import lookups
from memsearch_lsp.core.store.client import LiteClient, connect, pymilvus_types
from memsearch_lsp.core.store.folder import (
    MARKER,
    IndexBusy,
    StoreError,
    claim,
    locked_by_other,
    mark,
    move_aside,
    remove_index,
)
from memsearch_lsp.core.store.lite import EngineDrift, close_engine, corrupt, drift, release
from memsearch_lsp.core.store.memory_use import release_unused_memory
from memsearch_lsp.core.store.schema import (
    FIELDS,
    SCALARS,
    WINDOW_SUFFIX,
    Row,
    clip,
    create_collections,
    dense_dim,
    dense_index,
    quote,
    sparse_arrays,
    sparse_dict,
    where,
)

if TYPE_CHECKING:
    from memsearch_lsp.core.store.mirror import LegMirror

__all__ = ["MARKER", "IndexBusy", "MilvusStore", "Row", "StoreError", "locked_by_other", "remove_index", "sparse_dict"]

log = logging.getLogger(__name__)

_BATCH = 500


class MilvusStore:
    """One collection: scalar metadata, a dense vector (IP locally, COSINE on a server) and a BM25 sparse vector."""

    def __init__(self, uri: str, collection: str, dim: int, token: str = "", in_process: bool | None = None):
        self.uri, self.collection, self.dim, self.token = uri, collection, dim, token
        self._client: Any = None
        # Search legs from an in-process mirror (core/store/mirror.py) locally, else through pymilvus.
        self.in_process = self.is_local if in_process is None else in_process
        self._fresh = False  # the local folder was missing or empty when opened: ours to sign
        self._held = False  # the local folder's lock is held by this store (its engine maybe not opened yet)
        self._unwritten = False  # a new local index, held, its engine not opened yet: empty, and its mirror with it
        self.epoch = 0  # counts the collections created empty (a new index, or one rebuilt after it was moved aside)
        self._lock = threading.RLock()
        from memsearch_lsp.core.store.kept import KeptMirror, Saved  # numpy: loaded with the first store

        # Saved beside a local index (core/store/snapshot.py); every write to it invalidates the saved copy.
        saved = Saved(uri, dim, SCALARS, (collection, self.windows_collection)) if self.is_local else None
        self.mirrors = KeptMirror(self._lock, self._read_mirror, lambda: self._client, saved, self._generation)

    def _generation(self) -> list[int | None]:
        client = self._client
        if not isinstance(client, LiteClient):
            return [None]
        return [client.generation(self.collection), client.generation(self.windows_collection)]

    @property
    def is_local(self) -> bool:
        """A Milvus Lite folder served by this process (else a server reached by URI)."""
        return "://" not in self.uri and not self.uri.startswith("unix:")

    @property
    def dense_metric(self) -> str:
        """IP locally (unit vectors: COSINE's ranking, no re-normalising each vector per query); a server COSINE."""
        return "IP" if self.is_local else "COSINE"

    # -- lifecycle -------------------------------------------------------------------------
    def open(self) -> None:
        """Open the store. A local folder is held (its lock) at once; its engine opens only when needed: a
        valid saved mirror whose files are as they were saved (snapshot.fingerprint), or the empty one of a new
        index, answers searches and reads alone, and the engine (its segments loaded: 0.5 s at 10k chunks,
        seconds at 100k) opens on the first write or a read the mirror cannot answer."""
        with self._lock:
            if self._client is not None or self._held:
                return
            if self.is_local:
                self._hold()
                if self.in_process and self._fresh:  # created by the engine at its first write
                    self._mark()
                    self.mirrors.empty()
                    self._unwritten = True
                if self.in_process and (self._unwritten or self.mirrors.open_saved(fingerprint=True)):
                    return
            self._open_engine()

    def _open_engine(self) -> None:
        with self._lock:
            if self._client is not None:
                return
            try:
                self._client = connect(self.uri, self.token)
                self._ensure_collection()
                if self.is_local:  # Milvus Lite's segment load leaves ~80 MB of freed pages at 10k chunks
                    release_unused_memory()
                    if self.in_process:
                        self.mirrors.engine_opened()
            except StoreError:
                self.close(save=False)
                raise
            except Exception as exc:
                self.close(save=False)  # an engine that did not open says nothing worth saving
                if not self.is_local:
                    raise StoreError(f"cannot open the index at {self.uri}: {exc}") from exc
                if locked_by_other(Path(self.uri)):
                    raise IndexBusy(f"another process holds the index at {self.uri}") from exc
                if isinstance(exc, EngineDrift):  # the engine changed under us: the data is fine, the code is not
                    raise
                if drift(exc):
                    raise EngineDrift.of(exc) from exc
                if not corrupt(exc):  # neither recognisably corrupt data nor drift: a bug, not a rebuild
                    raise StoreError(
                        f"cannot open the index at {self.uri} ({type(exc).__name__}: {exc}); it is "
                        "left as it is: please report this with `memsearch-lsp doctor` output"
                    ) from exc
                self._move_aside(f"it cannot be opened ({type(exc).__name__}: {exc})")
                try:
                    self._client = connect(self.uri, self.token)
                    self._ensure_collection()
                except Exception as again:
                    self._client = None
                    raise StoreError(f"cannot open the index at {self.uri}: {again}") from again

    def _hold(self) -> None:
        """Check the local folder and take its lock (IndexBusy when another process holds it)."""
        self._fresh = claim(Path(self.uri))
        self._held = True

    @property
    def engine_open(self) -> bool:
        """The engine is open (a local store may serve searches from its saved mirror without it)."""
        return self._client is not None

    def _move_aside(self, why: str) -> None:
        """Keep a broken or incompatible local index for inspection and start a fresh one."""
        with contextlib.suppress(Exception):
            self.close()
        release(self.uri)  # stop serving the folder: its lock and files are let go
        move_aside(Path(self.uri), why)
        self._hold()  # the new folder, held before its engine opens
        self._fresh = True

    def close(self, save: bool = True) -> None:
        self.mirrors.settle()
        with self._lock:
            client = self._client
            if client is not None and save:
                self.mirrors.save(force=True)
            self.mirrors.forget()
            try:
                if client is not None:
                    client.close()
            finally:
                self._client, self._unwritten = None, False
                if self._held:
                    self._held = False
                    # The engine closed (its last files written), the lock still held: a saved mirror known to be
                    # this state's names the files as they now stand, so the next opening needs no engine.
                    release(self.uri, self.mirrors.stamp if client is not None else None)

    @property
    def client(self) -> Any:
        """The engine (or the server's client), opened now if needed."""
        if self._client is None:
            self.open()
            self._open_engine()
        return self._client

    def _ensure_collection(self) -> None:
        client = self._client
        if client.has_collection(self.collection):
            info = client.describe_collection(self.collection)
            names = {f.get("name") for f in info.get("fields", [])}
            if (
                names == FIELDS
                and not info.get("functions")
                and dense_dim(info) == self.dim
                and client.has_collection(self.windows_collection)
            ):
                self._ensure_dense_metric()
                client.load_collection(self.collection)
                self._mark()  # recognisably ours: our collection with our schema
                client.load_collection(self.windows_collection)
                return
            why = "it was built by another version of memsearch-lsp or for another embedding dimension"
            if self.is_local:
                self._move_aside(why)
                self._client = client = connect(self.uri, self.token)
            else:
                log.warning("collection %s: %s; rebuilding it from the Markdown", self.collection, why)
                client.drop_collection(self.collection)
                if client.has_collection(self.windows_collection):
                    client.drop_collection(self.windows_collection)
        self._create()

    def _ensure_dense_metric(self) -> None:
        """Re-index `dense` in place when it was built with another metric (no re-embedding)."""
        client = self._client
        try:
            metric = client.describe_index(self.collection, "dense").get("metric_type", "")
        except EngineDrift:
            raise
        except Exception as exc:  # no index on the field: create it below
            log.debug("describe_index(dense): %s", exc)
            metric = ""
        if metric.upper() == self.dense_metric:
            return
        client.release_collection(self.collection)
        if metric:
            client.drop_index(self.collection, "dense")
        client.create_index(self.collection, dense_index(client, self.is_local, self.dense_metric))

    def _create(self) -> None:
        client = self._client
        data_type = client.DataType if isinstance(client, LiteClient) else pymilvus_types()
        if not self._unwritten:  # (a new index was empty already, and so was what its readers read)
            self.mirrors.empty()  # before the store changes: a saved copy is of the old collections
            self.epoch += 1  # readers of the old rows (the indexer's manifest) read again
        self._unwritten = False
        create_collections(
            client,
            data_type,
            self.collection,
            self.windows_collection,
            self.dim,
            lambda: dense_index(client, self.is_local, self.dense_metric),
        )
        if self._fresh:
            self._mark()

    def _mark(self) -> None:
        if self.is_local:
            mark(Path(self.uri))

    @property
    def windows_collection(self) -> str:
        return self.collection + WINDOW_SUFFIX

    def drop(self) -> None:
        with self._lock:
            for name in (self.collection, self.windows_collection):
                if self.client.has_collection(name):
                    self.client.drop_collection(name)
            self._create()

    # -- writes ----------------------------------------------------------------------------
    def upsert(self, rows: Sequence[dict[str, Any]], windows: Sequence[dict[str, Any]] = ()) -> None:
        """Chunk rows, then their extra window rows (`id` "<chunk id>:<n>", `chunk_id`, `source`,
        `embed_hash`, `model`, `dense`)."""
        for start in range(0, len(rows), _BATCH):
            batch = [
                dict(r, content=clip(r["content"]), heading=r["heading"][:500], heading_path=r["heading_path"][:2000])
                for r in rows[start : start + _BATCH]
            ]
            with self._lock, self.mirrors.writing(len(batch)) as mirror:
                self.client.upsert(self.collection, batch)
                if mirror is not None:
                    for r in batch:
                        mirror.put_chunk(r["id"], r["source"], r["dense"], sparse_arrays(r["sparse"]), r)
        for start in range(0, len(windows), _BATCH):
            part = list(windows[start : start + _BATCH])
            with self._lock, self.mirrors.writing(len(part)) as mirror:
                self.client.upsert(self.windows_collection, part)
                if mirror is not None:
                    for w in part:
                        mirror.put_window(w["id"], w["chunk_id"], w["source"], w["dense"])

    def delete(self, ids: Iterable[str]) -> None:
        """Delete chunk rows and their window rows."""
        ids = list(ids)
        for start in range(0, len(ids), _BATCH):
            part = ids[start : start + _BATCH]
            with self._lock, self.mirrors.writing(len(part)) as mirror:
                self.client.delete(self.collection, ids=part)
                self.client.delete(self.windows_collection, filter=f"chunk_id in [{', '.join(quote(i) for i in part)}]")
                if mirror is not None:
                    mirror.delete_chunks(part)

    def mirror(self) -> LegMirror:
        """The in-process mirror of the vectors (core/store/mirror.py), loaded from the store now if needed (the
        engine opened only then)."""
        current = self.mirrors.current
        return current if current is not None else self.mirrors.now(self.client)

    def _ready_mirror(self) -> LegMirror | None:
        return self.mirrors.ready(lambda: self.client)

    def _read_mirror(self, client: Any, stale: Callable[[], bool]) -> LegMirror:
        """The mirror read from `client`'s own engine (mirror.load)."""
        from memsearch_lsp.core.store.mirror import load

        return load(client.table, self.collection, self.windows_collection, self.dim, stale=stale, fields=SCALARS)

    def flush(self) -> None:
        with self._lock:
            self.client.flush(self.collection)
            saved = self.mirrors.save()  # after a large write: the next process opens the mirror from disk
            if saved and self._held:
                self._rest_engine()
            elif self.is_local:
                release_unused_memory()

    def _rest_engine(self) -> None:
        """After a large write, saved: close the engine (the folder stays held), so an idle server holds the mirror
        alone, not every segment as well; the next write opens it again (~0.5 s per 10k chunks, once)."""
        client, self._client = self._client, None
        if client is not None:
            client.close()
        close_engine(self.uri, self.mirrors.stamp)
        self.mirrors.compact()
        gc.collect()  # the engine's objects hold one another: freed now, not at some later collection
        release_unused_memory()

    # -- reads -----------------------------------------------------------------------------
    def iter_rows(self, fields: Sequence[str], expr: str = "", collection: str = "") -> Iterator[dict[str, Any]]:
        with self._lock:
            iterator = self.client.query_iterator(
                collection or self.collection, batch_size=4096, filter=expr, output_fields=list(fields)
            )
            try:
                while True:
                    page = iterator.next()
                    if not page:
                        break
                    yield from page
            finally:
                iterator.close()
                if self.is_local:
                    release_unused_memory()

    def scan(self, fields: Sequence[str]) -> Iterator[dict[str, Any]]:
        """Every chunk row with `fields` (scalar fields only): from the mirror when it is loaded (no read of
        the engine, which materialises every row), else as iter_rows."""
        mirror = self.mirrors.current if self.in_process and set(fields) <= set(SCALARS) else None
        if mirror is None:
            yield from self.iter_rows(fields)
            return
        with self._lock:
            rows = mirror.scan(fields)
        yield from rows

    def _engine(self, collection: str) -> Any:
        """The local engine's collection, read in process (lite.engine); opens the store if needed."""
        return self.client.table(collection)

    def vectors_for(self, embed_hashes: Sequence[str], model: str) -> dict[str, list[list[float]]]:
        """Stored window vectors (in order) by embed_hash, for the embedding cache; only complete sets."""
        return lookups.vectors_for(
            self.client, self._lock, (self.collection, self.windows_collection), embed_hashes, model
        )

    def sparse_of(self, ids: Sequence[str]) -> list[dict[int, float]]:
        """The stored BM25 weights of rows (to take them out of the document frequencies)."""
        return lookups.sparse_of(self.client, self._lock, self.collection, ids)

    def get(self, chunk_id: str) -> Row | None:
        """One row by id: from the mirror when it is loaded (the engine may not even be open), else the engine."""
        mirror = self.mirrors.current if self.in_process else None
        with self._lock:
            if mirror is not None:
                row = mirror.row(chunk_id)
                return Row.from_entity(row["id"], row) if row is not None else None
            rows = self.client.get(self.collection, ids=[chunk_id], output_fields=list(SCALARS))
        return Row.from_entity(rows[0]["id"], rows[0]) if rows else None

    def count(self) -> int:
        with self._lock:
            rows = self.client.query(self.collection, filter="", output_fields=["count(*)"])
        return int(rows[0]["count(*)"]) if rows else 0

    def dense_leg(
        self, vector: list[float], limit: int, exclude_source: str = "", only: Collection[str] | None = None
    ) -> dict[str, float]:
        """The `limit` chunks closest to `vector`, each scored by its best window (cosine); with `only`,
        candidates from those sources alone (a search filter)."""
        if only is not None and not only:
            return {}
        mirror = self._ready_mirror() if self.in_process else None
        if mirror is not None:
            first, tails = mirror.dense(vector, limit, 3 * limit, exclude_source, only)
        else:
            first, tails = lookups.dense(
                self.client,
                self._lock,
                (self.collection, self.windows_collection),
                vector,
                limit,
                where(exclude_source, only),
            )
        scores = dict(first)
        for chunk, score in tails:
            if chunk and score > scores.get(chunk, -2.0):
                scores[chunk] = score
        best = sorted(scores, key=lambda k: -scores[k])[:limit]
        return {k: scores[k] for k in best}

    def sparse_leg(
        self, terms: dict[int, float], limit: int, exclude_source: str = "", only: Collection[str] | None = None
    ) -> dict[str, float]:
        """The `limit` best chunks by BM25 (`terms`: IDF-weighted query terms; `only`: as in dense_leg)."""
        if not terms or (only is not None and not only):
            return {}
        mirror = self._ready_mirror() if self.in_process else None
        if mirror is not None:
            return dict(mirror.sparse(terms, limit, exclude_source, only))
        with self._lock:
            hits = self.client.search(
                self.collection,
                [terms],
                anns_field="sparse",
                limit=limit,
                filter=where(exclude_source, only),
                output_fields=[],
            )
        return {str(h["id"]): float(h["distance"]) for h in hits[0]}

    def _get(self, ids: Sequence[str], fields: list[str]) -> list[dict[str, Any]]:
        """Chunk rows by id with `fields` (the local engine directly, else through the client)."""
        if not ids:
            return []
        with self._lock:
            if self.in_process:
                return list(self._engine(self.collection).get(list(ids), output_fields=fields))
            return list(self.client.get(self.collection, ids=list(ids), output_fields=fields))

    def sections(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """The section (source, heading path) of each chunk in `ids` (from the mirror when it is loaded:
        reading rows from Milvus Lite materialises every column, ~0.1 ms a row)."""
        mirror = self._ready_mirror() if self.in_process else None
        if mirror is not None:
            with self._lock:
                return mirror.sections(ids)
        return {
            str(r["id"]): (str(r.get("source", "")), str(r.get("heading_path", "")))
            for r in self._get(ids, ["source", "heading_path"])
        }

    def coverage(self, ids: Sequence[str], terms: Mapping[int, float]) -> dict[str, float]:
        """For each chunk in `ids`, the share of the query's term weight (`terms`: term id -> IDF) that
        the chunk contains: 1.0 when it has every query term, 0.0 when none (or the query has none)."""
        total = sum(terms.values())
        if not ids or total <= 0:
            return {k: 0.0 for k in ids}
        mirror = self._ready_mirror() if self.in_process else None
        if mirror is not None:
            with self._lock:
                return mirror.coverage(ids, terms)
        found = {str(r["id"]): sparse_dict(r.get("sparse")) for r in self._get(ids, ["sparse"])}
        return {k: sum(w for t, w in terms.items() if t in found.get(k, {})) / total for k in ids}

    def rows(self, ids: Sequence[str]) -> list[Row]:
        """Rows by id, in the order of `ids` (ids that are gone are left out); from the mirror when it is
        loaded (it holds every chunk's scalar fields: no point reads of whole rows)."""
        mirror = self._ready_mirror() if self.in_process else None
        if mirror is not None:
            with self._lock:
                found = [mirror.row(i) for i in ids]
            return [Row.from_entity(r["id"], r) for r in found if r is not None]
        by_id = {r["id"]: r for r in self._get(ids, list(SCALARS))}
        return [Row.from_entity(i, by_id[i]) for i in ids if i in by_id]
