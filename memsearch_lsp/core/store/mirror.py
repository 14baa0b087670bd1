"""LegMirror: an in-process copy of a local store's vectors that answers the two search legs in numpy.

Milvus Lite 3 is pure Python: every search walks each stored row in Python (its MVCC version and
tombstone checks) before any index is used, ~30 ms for the dense leg and ~17 ms for BM25 at 10k chunks
(bench/README.md, "Issue 17"). For the local store only, `MilvusStore` keeps this mirror of the dense
vectors (chunks and their extra windows) and the BM25 document weights, read at open from its saved copy
(core/store/snapshot.py) or else from Milvus on the first search, and updated by every write and delete that
goes through the store (core/store/kept.py); Milvus stays the store and
the source of truth, and a store reached by URI never uses it. It also holds each chunk's scalar fields
(its row without the vectors), which ranking reads for every candidate and result assembly for every hit:
Milvus Lite's point reads materialise every column of a row, dense vector included (~0.25 ms a row);
the cache holds ~6 MiB at 10k chunks. The legs compute what Milvus Lite computes: float32 inner products
for the dense leg, BM25 as a float64 sum of float32 weights (rounded to float32) for the sparse leg, the
best `limit` rows, ties to the earlier row.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from memsearch_lsp.core.store.memory_use import release_unused_memory
from memsearch_lsp.core.store.schema import sparse_arrays

log = logging.getLogger(__name__)

Scored = list[tuple[str, float]]
BLOCK = 512  # rows per inner-product call (single-threaded in OpenBLAS; same float32 results)
REBUILD_SHARE = 8  # BM25 postings are rebuilt once changed rows exceed 1/8 of the rows (and 256)
PAGE = 1024  # rows per page when the mirror is loaded from the local engine


class _Vectors:
    """Rows of one collection: id -> slot, float32 vectors, a live mask and a source code per slot."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.slot: dict[str, int] = {}
        self.ids: list[str] = []
        self.vecs = np.zeros((0, dim), dtype=np.float32)
        self.live = np.zeros(0, dtype=bool)
        self.source = np.zeros(0, dtype=np.int32)

    @property
    def n(self) -> int:
        return len(self.ids)

    def put(self, key: str, vector: Sequence[float], source: int) -> int:
        slot = self.slot.get(key)
        if slot is None:
            slot = self.n
            if slot == len(self.live):  # grow by half (at least 64 rows)
                cap = max(64, slot + slot // 2)
                vecs = np.zeros((cap, self.dim), dtype=np.float32)
                vecs[:slot] = self.vecs[:slot]
                self.vecs = vecs
                self.live = np.concatenate([self.live, np.zeros(cap - slot, dtype=bool)])
                self.source = np.concatenate([self.source, np.zeros(cap - slot, dtype=np.int32)])
            self.slot[key] = slot
            self.ids.append(key)
        self.vecs[slot] = vector
        self.live[slot] = True
        self.source[slot] = source
        return slot

    def remove(self, key: str) -> int | None:
        slot = self.slot.pop(key, None)
        if slot is not None:
            self.live[slot] = False
        return slot

    def top(self, query: np.ndarray, limit: int, exclude: int, allowed: np.ndarray | None = None) -> Scored:
        """The `limit` rows with the largest inner product with `query`, best first (`allowed`: when given,
        only rows of those source codes)."""
        n = self.n
        if not n or limit <= 0:
            return []
        valid = self.live[:n] if exclude < 0 else self.live[:n] & (self.source[:n] != exclude)
        if allowed is not None:
            valid = valid & np.isin(self.source[:n], allowed)
        sims = np.empty(n, dtype=np.float32)
        for start in range(0, n, BLOCK):  # one BLAS call over all rows goes multi-threaded and, on a
            end = min(n, start + BLOCK)  # busy machine, waits 10-60 ms for its second thread
            np.matmul(self.vecs[start:end], query, out=sims[start:end])
        return _best(self.ids, sims, valid, limit)


def _best(ids: Sequence[str], scores: np.ndarray, valid: np.ndarray, limit: int) -> Scored:
    """(id, score) of the `limit` valid slots with the highest score, ties to the lower slot."""
    slots = np.flatnonzero(valid)
    if not slots.size:
        return []
    values = scores[slots]
    if slots.size > limit:
        keep = np.argpartition(-values, limit - 1)[:limit]
        cut = values[keep].min()  # every slot tied with the cut competes on its slot number
        keep = np.flatnonzero(values >= cut)
        slots, values = slots[keep], values[keep]
    order = np.lexsort((slots, -values))[:limit]
    return [(ids[int(slots[i])], float(values[i])) for i in order]


class _Postings:
    """BM25 document weights of some slots, term-major: for a term, the slots holding it and weights."""

    def __init__(self, slots: Sequence[int], terms: Sequence[np.ndarray], weights: Sequence[np.ndarray]) -> None:
        if slots:
            term = np.concatenate(terms)
            order = np.argsort(term, kind="stable")
            counts = [len(t) for t in terms]
            self.slots = np.repeat(np.asarray(slots, dtype=np.int32), counts)[order]
            self.weights = np.concatenate(weights)[order]  # float32, as stored
            self.keys, starts = np.unique(term[order], return_index=True)
            self.ends = np.append(starts[1:], len(order))
            self.starts = starts
        else:
            self.slots = np.zeros(0, dtype=np.int32)
            self.weights = np.zeros(0, dtype=np.float32)
            self.keys = self.starts = self.ends = np.zeros(0, dtype=np.int64)

    def add_to(self, scores: np.ndarray, hit: np.ndarray, query: Sequence[tuple[int, float]]) -> None:
        if not self.keys.size:
            return
        for term, weight in query:
            i = int(np.searchsorted(self.keys, term))
            if i < self.keys.size and self.keys[i] == term:
                part = slice(self.starts[i], self.ends[i])
                scores[self.slots[part]] += weight * self.weights[part].astype(np.float64)
                hit[self.slots[part]] = True


class LegMirror:
    """Dense vectors of chunks and windows and BM25 weights of chunks, kept equal to the store's rows."""

    def __init__(self, dim: int, fields: Sequence[str] = ("heading_path",)) -> None:
        self.chunks = _Vectors(dim)
        self.windows = _Vectors(dim)
        self.owner: list[str] = []  # chunk id of each window slot
        self.windows_of: dict[str, list[str]] = {}
        self.sources: dict[str, int] = {}
        self.names: list[str] = []  # source of each code
        # The scalar fields `rows` holds (the heading path always: `sections` reads it).
        self.fields = tuple(dict.fromkeys(f for f in ("heading_path", *fields) if f not in ("id", "source")))
        self.rows: dict[str, tuple[Any, ...]] = {}  # chunk id -> its scalar values in `fields` order
        self.terms: list[np.ndarray] = []
        self.weights: list[np.ndarray] = []
        self.main = _Postings([], [], [])
        self.main_upto = 0  # slots below this are in `main` unless changed since
        self.changed: set[int] = set()
        self.delta: _Postings | None = None

    def _source(self, name: str) -> int:
        code = self.sources.get(name)
        if code is None:
            code = self.sources[name] = len(self.names)
            self.names.append(name)
        return code

    # -- writes (the store calls these after Milvus accepted the same rows) -------------------
    def put_chunk(
        self,
        key: str,
        source: str,
        dense: Sequence[float],
        sparse: tuple[np.ndarray, np.ndarray],
        row: Mapping[str, Any] | None = None,
    ) -> None:
        """`sparse`: the BM25 weights as (term ids, float32 weights), see lite.sparse_arrays; `row`: the
        chunk's scalar fields as stored (`fields` of them are kept; the source is `source`)."""
        slot = self.chunks.put(key, dense, self._source(source))
        row = row or {}
        # Strings shared by many chunks (a section's heading path, a file's hash, a date, the model) are
        # kept once; every chunk's source is already a code.
        self.rows[key] = tuple(_shared(name, row.get(name)) for name in self.fields)
        terms, weights = sparse[0].astype(np.uint32), sparse[1]
        keep = weights != 0  # Milvus drops weights that are zero in float32
        if slot == len(self.terms):
            self.terms.append(terms[keep])
            self.weights.append(weights[keep])
        else:
            self.terms[slot], self.weights[slot] = terms[keep], weights[keep]
        self._changed(slot)

    def put_window(self, key: str, chunk_id: str, source: str, dense: Sequence[float]) -> None:
        slot = self.windows.put(key, dense, self._source(source))
        if slot == len(self.owner):
            self.owner.append(chunk_id)
            self.windows_of.setdefault(chunk_id, []).append(key)

    def delete_chunks(self, ids: Iterable[str]) -> None:
        """Chunk rows and their window rows (as the store deletes windows by `chunk_id`)."""
        for key in ids:
            slot = self.chunks.remove(key)
            self.rows.pop(key, None)
            if slot is not None:
                self.terms[slot] = self.terms[slot][:0]
                self.weights[slot] = self.weights[slot][:0]
                self._changed(slot)
            for window in self.windows_of.pop(key, []):
                self.windows.remove(window)
        if self.chunks.n - len(self.chunks.slot) > max(1024, len(self.chunks.slot)):
            self._compact()

    def _compact(self) -> None:
        """Drop the slots of deleted rows (the order of the live ones is kept)."""
        fresh, names = LegMirror(self.chunks.dim, self.fields), self.names
        chunks, windows = self.chunks, self.windows
        for slot in np.flatnonzero(chunks.live[: chunks.n]):
            key = chunks.ids[slot]
            fresh.put_chunk(
                key,
                names[int(chunks.source[slot])],
                chunks.vecs[slot],
                (self.terms[slot], self.weights[slot]),
                self.row(key),
            )
        for slot in np.flatnonzero(windows.live[: windows.n]):
            fresh.put_window(windows.ids[slot], self.owner[slot], names[int(windows.source[slot])], windows.vecs[slot])
        self.__dict__.update(fresh.__dict__)

    def _changed(self, slot: int) -> None:
        if slot < self.main_upto:
            self.changed.add(slot)
        self.delta = None

    # -- the legs ------------------------------------------------------------------------
    def dense(
        self,
        vector: Sequence[float],
        limit: int,
        window_limit: int,
        exclude_source: str = "",
        only: Collection[str] | None = None,
    ) -> tuple[Scored, Scored]:
        """(best chunk rows, best window rows as (chunk id, score)), as two Milvus searches return them;
        with `only`, candidates come from those sources alone (a search filter, core/search/filters.py)."""
        query = np.asarray(vector, dtype=np.float32)
        exclude = self._excluded(exclude_source)
        allowed = self._codes(only)
        first = self.chunks.top(query, limit, exclude, allowed)
        tails = [
            (self.owner[self.windows.slot[k]], s) for k, s in self.windows.top(query, window_limit, exclude, allowed)
        ]
        return first, tails

    def sparse(
        self, terms: Mapping[int, float], limit: int, exclude_source: str = "", only: Collection[str] | None = None
    ) -> Scored:
        """The `limit` chunks with the largest BM25 inner product with `terms`, best first (`only`: from
        those sources alone)."""
        n = self.chunks.n
        if not n or limit <= 0:
            return []
        self._refresh()
        assert self.delta is not None
        query = sorted((int(t), float(np.float32(w))) for t, w in terms.items() if np.float32(w) != 0)
        scores = np.zeros(n, dtype=np.float64)
        hit = np.zeros(n, dtype=bool)
        self.main.add_to(scores, hit, query)
        if self.changed:
            stale = np.fromiter(self.changed, dtype=np.int64, count=len(self.changed))
            scores[stale], hit[stale] = 0.0, False
        self.delta.add_to(scores, hit, query)
        valid = hit & self.chunks.live[:n]
        exclude = self._excluded(exclude_source)
        if exclude >= 0:
            valid &= self.chunks.source[:n] != exclude
        allowed = self._codes(only)
        if allowed is not None:
            valid &= np.isin(self.chunks.source[:n], allowed)
        return _best(self.chunks.ids, scores.astype(np.float32), valid, limit)

    def row(self, key: str) -> dict[str, Any] | None:
        """The stored chunk `key` as Milvus returns it without its vectors (id, source and the scalar
        fields), or None when it is not stored."""
        values = self.rows.get(key)
        if values is None:
            return None
        row = dict(zip(self.fields, values, strict=True))
        row["id"], row["source"] = key, self.names[int(self.chunks.source[self.chunks.slot[key]])]
        return row

    def scan(self, fields: Sequence[str]) -> list[dict[str, Any]]:
        """Every stored chunk as `row` gives it, with `fields` only (one pass, no dict per row built twice)."""
        codes, slot, names = self.chunks.source[: self.chunks.n].tolist(), self.chunks.slot, self.names
        at = {name: self.fields.index(name) for name in fields if name in self.fields}
        out = []
        for key, values in self.rows.items():
            row: dict[str, Any] = {"id": key}
            for name in fields:
                row[name] = (
                    names[codes[slot[key]]]
                    if name == "source"
                    else (key if name == "id" else values[at[name]] if name in at else None)
                )
            out.append(row)
        return out

    def sections(self, ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """The section (source, heading path) of each chunk in `ids` that is stored."""
        slot, source, names, rows = self.chunks.slot, self.chunks.source, self.names, self.rows
        path = self.fields.index("heading_path")
        return {key: (names[int(source[slot[key]])], rows[key][path]) for key in ids if key in slot}

    def coverage(self, ids: Iterable[str], terms: Mapping[int, float]) -> dict[str, float]:
        """Share of the query's IDF mass (`terms`: term id -> IDF) each chunk in `ids` contains (one pass
        over the candidates' term arrays together: ~0.2 ms for 60 candidates)."""
        keys = list(ids)
        total = float(sum(terms.values()))
        slots = [self.chunks.slot.get(k) for k in keys]
        present = [n for n, slot in enumerate(slots) if slot is not None]
        out = dict.fromkeys(keys, 0.0)
        if not present or total <= 0:
            return out
        arrays = [self.terms[slots[n]] for n in present]  # type: ignore[index]
        held = np.concatenate(arrays)
        owner = np.repeat(np.arange(len(present)), [len(a) for a in arrays])
        query = np.fromiter((int(t) for t in terms), dtype=np.uint32, count=len(terms))
        idf = np.fromiter((float(w) for w in terms.values()), dtype=np.float64, count=len(terms))
        order = np.argsort(query)
        query, idf = query[order], idf[order]
        where = np.minimum(np.searchsorted(query, held), len(query) - 1)
        match = query[where] == held
        sums = np.bincount(owner[match], weights=idf[where[match]], minlength=len(present))
        for n, value in zip(present, sums.tolist(), strict=True):
            out[keys[n]] = value / total
        return out

    def _codes(self, only: Collection[str] | None) -> np.ndarray | None:
        """The source codes of `only` (None: every source)."""
        if only is None:
            return None
        return np.asarray([self.sources[s] for s in only if s in self.sources], dtype=np.int32)

    def _excluded(self, source: str) -> int:
        return self.sources.get(source, -2) if source else -1

    def _refresh(self) -> None:
        """Postings of the rows changed since the last full build (rebuilt in full when they are many)."""
        n = self.chunks.n
        if self.delta is not None:
            return
        if len(self.changed) > max(256, n // REBUILD_SHARE) or (n - self.main_upto) > max(256, n // REBUILD_SHARE):
            self.main = _Postings(range(n), self.terms, self.weights)
            self.main_upto, self.changed = n, set()
        fresh = sorted(self.changed) + list(range(self.main_upto, n))
        self.delta = _Postings(fresh, [self.terms[s] for s in fresh], [self.weights[s] for s in fresh])

    def full_postings(self) -> None:
        """Build the BM25 postings of every row now (before a save: they load built)."""
        n = self.chunks.n
        if self.main_upto != n or self.changed:
            self.main = _Postings(range(n), self.terms, self.weights)
            self.main_upto, self.changed = n, set()
        self.delta = None

    def stats(self) -> dict[str, Any]:
        return {
            "chunks": int(self.chunks.live[: self.chunks.n].sum()),
            "windows": int(self.windows.live[: self.windows.n].sum()),
            "changed": len(self.changed),
        }


SHARED = frozenset({"heading_path", "file_hash", "date", "model"})  # fields many chunks hold alike


def _shared(name: str, value: Any) -> Any:
    return sys.intern(value) if name in SHARED and isinstance(value, str) else value


class Stale(Exception):
    """The store was written or closed while its mirror loaded: the load is abandoned."""


def load(
    tables: Callable[[str], Any],
    collection: str,
    windows_collection: str,
    dim: int,
    stale: Callable[[], bool] = lambda: False,
    fields: Sequence[str] = ("heading_path",),
) -> LegMirror:
    """The mirror of a local index this process serves, read in process from its engine's collections
    (`tables`: the store's own client's, so a loader that outlives close() never reads a later opening),
    with the chunks' scalar `fields`. Never opens the store; raises Stale, between pages, once `stale()`
    says the store moved on."""
    mirror = LegMirror(dim, fields)
    for r in _all_rows(tables(collection), sorted({"source", *mirror.fields, "dense", "sparse"}), stale):
        mirror.put_chunk(r["id"], r["source"], r["dense"], sparse_arrays(r["sparse"]), r)
    for w in _all_rows(tables(windows_collection), ["chunk_id", "source", "dense"], stale):
        mirror.put_window(w["id"], w["chunk_id"], w["source"], w["dense"])
    return mirror


def _all_rows(table: Any, fields: list[str], stale: Callable[[], bool]) -> Iterator[dict[str, Any]]:
    """Every row: the ids in one query, then the rows by primary key in pages (a few MB of vectors as Python
    floats at a time; a filtered or offset query per page would materialise the whole collection each time)."""
    ids = [r["id"] for r in table.query("", output_fields=["id"])]
    for start in range(0, len(ids), PAGE):
        if stale():
            raise Stale("the store changed while its mirror loaded")
        yield from table.get(ids[start : start + PAGE], output_fields=fields)
        release_unused_memory()
