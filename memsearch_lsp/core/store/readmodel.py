"""ReadModel: the local store's one in-memory copy of its rows, which answers every read (searches and the indexer's).

Milvus Lite 3 is pure Python: a search or point read walks each stored row in Python, and opening it loads every
segment (~0.5 s and ~120 MB at 10k chunks). So the local store (core/store/local.py) writes to Milvus Lite, the
durable store of record, and reads only from this model: the dense vectors of chunks and of their extra windows, the
BM25 document weights (term-major postings, and the document frequencies that give the query its IDF), and each
chunk's scalar fields in columns. It is saved beside the index as plain arrays (core/store/saved.py) and loaded
memory-mapped, so a new process reads it in milliseconds. The legs compute what Milvus computes: float32 inner
products, BM25 as a float64 sum of float32 weights, the best `limit` rows, ties to the earlier row.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memsearch_lsp.core.store.columns import Postings, Texts, Vectors, best, grown
from memsearch_lsp.core.store.schema import INTS, TEXTS, best_windows, idf, sparse_arrays

log = logging.getLogger(__name__)
Scored = list[tuple[str, float]]
REBUILD_SHARE = 8  # BM25 postings are rebuilt once changed rows exceed 1/8 of the rows (and 256)
COMPACT_MIN = 64  # the slots of deleted rows are dropped once they outnumber the live rows and this many


@dataclass(frozen=True)
class FileRecord:
    """What the index holds of one file: its text's hash (`<sha256>:<chunks>`, "" when its rows disagree or
    were made by another model), its chunk count, and the size and change stamp it had when it was read (0: unknown;
    `mtime_ns` holds `files.changed_ns`, the later of mtime and ctime, or the bare mtime in a record saved before)."""

    file_hash: str
    chunks: int
    size: int = 0
    mtime_ns: int = 0


def file_records(
    rows: Iterable[tuple[str, str, str]], model: str, stats: Mapping[str, tuple[int, int]] | None = None
) -> dict[str, FileRecord]:
    """Each file's record from its rows' (source, file_hash, model): the hash when they agree and are of `model`."""
    found: dict[str, list[Any]] = {}
    for source, file_hash, made_by in rows:
        agreed = file_hash if made_by == model else ""
        entry = found.setdefault(source, [agreed, 0])
        entry[0], entry[1] = entry[0] if entry[0] == agreed else "", entry[1] + 1
    return {s: FileRecord(h, n, *(stats or {}).get(s, (0, 0))) for s, (h, n) in found.items()}


class ReadModel:
    """Every chunk row (vectors, BM25 weights, scalar fields) and window vector of one local index."""

    def __init__(self, dim: int) -> None:
        self.chunks = Vectors(dim)
        self.windows = Vectors(dim)
        self.owner: list[str] = []  # chunk id of each window slot
        self.windows_of: dict[str, list[str]] = {}
        self.sources: dict[str, int] = {}
        self.names: list[str] = []  # source of each code
        self.texts = {name: Texts() for name in TEXTS}
        self.ints = np.zeros((0, len(INTS)), dtype=np.int64)
        self.terms: list[np.ndarray] = []
        self.weights: list[np.ndarray] = []
        self.main = Postings([], [], [])
        self.main_upto = 0  # slots below this are in `main` unless changed since
        self.changed: set[int] = set()
        self.delta: Postings | None = None
        self.stale = np.zeros(0, dtype=np.int64)  # the changed slots, as an array (with `delta`)
        self.stats: dict[str, tuple[int, int]] = {}  # source -> (size, mtime_ns) when its text was read from disk
        self.saved_files: tuple[str, dict[str, FileRecord]] | None = None  # (model, files) as saved, until a write
        self._by_embed: dict[bytes, int] | None = None  # embed_hash -> the slot of a row that holds it
        self._said_damaged = False

    @property
    def docs(self) -> int:
        return len(self.chunks.slot)

    def code(self, name: str) -> int:
        code = self.sources.get(name)
        if code is None:
            code = self.sources[name] = len(self.names)
            self.names.append(name)
        return code

    # -- writes (the local store calls these with the rows it writes to Milvus Lite) ---------------
    def put_chunk(self, row: Mapping[str, Any]) -> None:
        """One chunk row as stored: `id`, `source`, `dense`, `sparse` and the scalar fields."""
        slot, _ = self.chunks.put(str(row["id"]), row["dense"], self.code(str(row["source"])))
        if slot >= len(self.ints):
            self.ints = grown(self.ints, len(self.chunks.live))
        self.ints[slot] = [int(row.get(name) or 0) for name in INTS]
        for name in TEXTS:
            self.texts[name][slot] = str(row.get(name) or "")
        terms, weights = sparse_arrays(row["sparse"])
        if slot == len(self.terms):
            self.terms.append(terms)
            self.weights.append(weights)
        else:
            self.terms[slot], self.weights[slot] = terms, weights
        self._changed(slot)
        if self._by_embed is not None:
            self._by_embed[self.texts["embed_hash"][slot].encode()] = slot

    def put_window(self, key: str, chunk_id: str, source: str, dense: Sequence[float] | np.ndarray) -> None:
        slot, new = self.windows.put(key, dense, self.code(source))
        if slot == len(self.owner):
            self.owner.append(chunk_id)
        else:
            self.owner[slot] = chunk_id
        if new:
            self.windows_of.setdefault(chunk_id, []).append(key)

    def delete_chunks(self, ids: Iterable[str]) -> None:
        """Chunk rows and their window rows."""
        for key in ids:
            slot = self.chunks.remove(key)
            if slot is not None:
                self.terms[slot] = self.terms[slot][:0]
                self.weights[slot] = self.weights[slot][:0]
                for name in TEXTS:  # (what a deleted row said is never saved again: a forgotten note is gone)
                    self.texts[name][slot] = ""
                self._changed(slot)
            for window in self.windows_of.pop(key, []):
                self.windows.remove(window)
        if self.chunks.dead + self.windows.dead > max(COMPACT_MIN, self.docs + len(self.windows.slot)):
            self.compact()  # (O(rows) once per as many deletes as there are live rows: amortised)

    def compact(self) -> None:
        """Drop the slots of deleted chunk and window rows, every column and index into them remapped and the live
        rows kept in order: the model then holds and answers what one built afresh from its rows does (postings are
        built again when next read). Under the store's lock; no slot is held outside the model between its calls."""
        if not (self.chunks.dead or self.windows.dead):
            return
        keep = self.chunks.compact()
        slots = keep.tolist()
        self.ints = self.ints[keep]
        self.terms, self.weights = [self.terms[s] for s in slots], [self.weights[s] for s in slots]
        self.texts = {name: column.kept(slots) for name, column in self.texts.items()}
        self.owner = [self.owner[s] for s in self.windows.compact().tolist()]
        self.main, self.main_upto, self.changed, self.delta = Postings([], [], []), 0, set(), None
        self.stale = np.zeros(0, dtype=np.int64)
        self._by_embed = None

    def note_file(self, source: str, size: int, mtime_ns: int) -> None:
        self.stats[source] = (size, mtime_ns)

    def _changed(self, slot: int) -> None:
        if slot < self.main_upto:
            self.changed.add(slot)
        self.delta = None
        self.saved_files = None

    # -- the legs ------------------------------------------------------------------------------
    def valid(self, rows: Vectors, exclude_source: str = "", only: Collection[str] | None = None) -> np.ndarray:
        """The live slots of `rows`, not from `exclude_source`, from `only` when given."""
        n = rows.n
        valid = rows.live[:n].copy()
        if exclude_source and exclude_source in self.sources:
            valid &= rows.source[:n] != self.sources[exclude_source]
        if only is not None:
            codes = [self.sources[s] for s in only if s in self.sources]
            valid &= np.isin(rows.source[:n], np.asarray(codes, dtype=np.int32))
        return valid

    def dense(
        self, vector: Sequence[float], limit: int, exclude_source: str = "", only: Collection[str] | None = None
    ) -> dict[str, float]:
        """The `limit` chunks closest to `vector`, each scored by its best window (the chunk's own vector is its
        first window)."""
        query = np.asarray(vector, dtype=np.float32)
        chunks = self.chunks.top(query, limit, self.valid(self.chunks, exclude_source, only))
        windows = self.windows.top(query, 3 * limit, self.valid(self.windows, exclude_source, only))
        if not self._said_damaged and (damaged := self.damaged()):
            self._said_damaged = True  # (once: every search meets them until they are embedded again)
            log.warning(
                "the index holds %d damaged vector(s) (not of unit length: its files were changed on disk); searches "
                "leave them out: run `memsearch-lsp index --force` to embed their text again",
                damaged,
            )
        return best_windows(chunks, ((self.owner[self.windows.slot[k]], score) for k, score in windows), limit)

    def sparse(
        self, terms: Mapping[int, float], limit: int, exclude_source: str = "", only: Collection[str] | None = None
    ) -> dict[str, float]:
        """The `limit` chunks with the largest BM25 inner product with `terms`, best first."""
        n = self.chunks.n
        if not n or limit <= 0 or not terms:
            return {}
        delta = self._refresh()
        query = sorted((int(t), float(np.float32(w))) for t, w in terms.items() if np.float32(w) != 0)
        scores = np.zeros(n, dtype=np.float64)
        hit = np.zeros(n, dtype=bool)
        self.main.add_to(scores, hit, query)
        scores[self.stale], hit[self.stale] = 0.0, False
        delta.add_to(scores, hit, query)
        valid = hit & self.valid(self.chunks, exclude_source, only)
        return dict(best(self.chunks.ids, scores.astype(np.float32), valid, limit))

    def idf(self, term_ids: Iterable[int]) -> dict[int, float]:
        """BM25 IDF of each term over the stored chunks (log(1 + (N - df + 0.5) / (df + 0.5))): df counts its rows in
        `main` that did not change since, and those in `delta`."""
        delta, n, out = self._refresh(), max(self.docs, 1), {}
        for term in set(term_ids):
            old, new = self.main.find(term), delta.find(term)
            df = new.stop - new.start if new is not None else 0
            if old is not None:
                df += old.stop - old.start
            if old is not None and self.stale.size:
                df -= int(np.isin(self.main.slots[old], self.stale).sum())
            out[term] = idf(n, df)
        return out

    def coverage(self, ids: Iterable[str], terms: Mapping[int, float]) -> dict[str, float]:
        """Share of the query's IDF mass (`terms`: term id -> IDF) each chunk in `ids` contains (one pass over the
        candidates' term arrays together: ~0.2 ms for 60 candidates)."""
        keys = list(ids)
        total = float(sum(terms.values()))
        out = dict.fromkeys(keys, 0.0)
        present = [(k, self.chunks.slot[k]) for k in keys if k in self.chunks.slot]
        if not present or total <= 0:
            return out
        arrays = [self.terms[slot] for _, slot in present]
        held = np.concatenate(arrays)
        owner = np.repeat(np.arange(len(present)), [len(a) for a in arrays])
        query = np.fromiter((int(t) for t in terms), dtype=np.uint32, count=len(terms))
        idf = np.fromiter((float(w) for w in terms.values()), dtype=np.float64, count=len(terms))
        order = np.argsort(query)
        query, idf = query[order], idf[order]
        where = np.minimum(np.searchsorted(query, held), len(query) - 1)
        match = query[where] == held
        sums = np.bincount(owner[match], weights=idf[where[match]], minlength=len(present))
        for (key, _), value in zip(present, sums.tolist(), strict=True):
            out[key] = value / total
        return out

    # -- rows ----------------------------------------------------------------------------------
    def row(self, key: str) -> dict[str, Any] | None:
        """The stored chunk `key` without its vectors (id, source and the scalar fields), or None."""
        slot = self.chunks.slot.get(key)
        if slot is None:
            return None
        row: dict[str, Any] = {"id": key, "source": self.names[int(self.chunks.source[slot])]}
        row.update((name, self.texts[name][slot]) for name in TEXTS)
        row.update(zip(INTS, self.ints[slot].tolist(), strict=True))
        return row

    def scan(self, fields: Sequence[str]) -> list[dict[str, Any]]:
        """Every stored chunk with `fields` (scalar fields only)."""
        out = []
        for key, slot in self.chunks.slot.items():
            row: dict[str, Any] = {"id": key}
            for name in fields:
                if name == "source":
                    row[name] = self.names[int(self.chunks.source[slot])]
                elif name in self.texts:
                    row[name] = self.texts[name][slot]
                elif name in INTS:
                    row[name] = int(self.ints[slot, INTS.index(name)])
            out.append(row)
        return out

    def sections(self, ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """The section (source, heading path) of each chunk in `ids` that is stored."""
        slot, source, names, paths = self.chunks.slot, self.chunks.source, self.names, self.texts["heading_path"]
        return {key: (names[int(source[slot[key]])], paths[slot[key]]) for key in ids if key in slot}

    def ids_of(self, source: str) -> set[str]:
        code = self.sources.get(source)
        if code is None:
            return set()
        n = self.chunks.n
        slots = np.flatnonzero(self.chunks.live[:n] & (self.chunks.source[:n] == code))
        return {self.chunks.ids[s] for s in slots.tolist()}

    def files(self, model: str) -> dict[str, FileRecord]:
        """Each indexed file's record (its rows must agree on the file hash and be of `model`)."""
        if self.saved_files is not None and self.saved_files[0] == model:
            return self.saved_files[1]
        hashes, models, source = self.texts["file_hash"], self.texts["model"], self.chunks.source
        rows = ((self.names[int(source[s])], hashes[s], models[s]) for s in self.chunks.slot.values())
        return file_records(rows, model, self.stats)

    def vectors_for(self, embed_hashes: Iterable[str], model: str) -> dict[str, list[np.ndarray]]:
        """Stored vectors (the chunk's, then its windows' in order) by embed_hash, for the embedding cache."""
        if self._by_embed is None:
            self._by_embed = self._embed_index()
        found = {}
        texts, ints = self.texts, self.ints
        for embed_hash in set(embed_hashes):
            slot = self._by_embed.get(embed_hash.encode())
            if slot is None or not self.chunks.live[slot] or texts["embed_hash"][slot] != embed_hash:
                continue  # (a slot deleted or written over since the index was built)
            key = self.chunks.ids[slot]
            windows = sorted(self.windows_of.get(key, []), key=lambda w: int(w.rsplit(":", 1)[1]))
            if texts["model"][slot] != model or len(windows) != int(ints[slot, INTS.index("windows")]) - 1:
                continue  # another model's, or incomplete: embed again
            if not self.chunks.is_sound(slot) or not all(self.windows.is_sound(self.windows.slot[w]) for w in windows):
                continue  # damaged: embed again (`index --force` mends it)
            found[embed_hash] = [self.chunks.vector(slot)] + [
                self.windows.vector(self.windows.slot[w]) for w in windows
            ]
        return found

    def damaged(self) -> int:
        """Live chunk and window rows whose vector is not of unit length (damaged files: searches leave them out)."""
        return len(self.chunks.damaged()) + len(self.windows.damaged())

    def _embed_index(self) -> dict[bytes, int]:
        """embed_hash -> slot of every live row: the loaded rows' read straight from their column (sha256 hex, one
        width), without decoding each; the rows written since on top."""
        column, loaded = self.texts["embed_hash"], len(self.texts["embed_hash"].offsets) - 1
        offsets, index = column.offsets, {}
        width = int(offsets[1] - offsets[0]) if loaded else 0
        if loaded and width and int(offsets[-1]) == width * loaded:
            keys = np.ascontiguousarray(column.blob[: width * loaded]).view(f"S{width}").tolist()
            index = dict(zip(keys, range(loaded), strict=True))
        else:
            index = {column[s].encode(): s for s in range(loaded)}
        index.update((value.encode(), slot) for slot, value in column.since.items())
        return index

    # -- postings --------------------------------------------------------------------------
    def _refresh(self) -> Postings:
        """The postings of the rows written since the last full build (`stale`: those of them that `main` holds as
        they were); rebuilt in full when they are many."""
        if self.delta is None:
            n, many = self.chunks.n, max(256, self.chunks.n // REBUILD_SHARE)
            if len(self.changed) > many or n - self.main_upto > many:
                self.full_postings()
            self.stale = np.asarray(sorted(self.changed), dtype=np.int64)
            fresh = [*self.stale.tolist(), *range(self.main_upto, n)]
            self.delta = Postings(fresh, [self.terms[s] for s in fresh], [self.weights[s] for s in fresh])
        return self.delta

    def full_postings(self) -> None:
        """Build the BM25 postings of every row now (before a save: they load built)."""
        n = self.chunks.n
        if self.main_upto != n or self.changed:
            self.main = Postings(range(n), self.terms, self.weights)
            self.main_upto, self.changed = n, set()
        self.delta = None
