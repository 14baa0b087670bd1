"""The read model's columns: strings by slot (a saved UTF-8 blob and what was set since), vectors by slot (those
loaded stay memory-mapped; later ones go to a tail), and BM25 postings (term-major), with the top-k they answer."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

import numpy as np

Scored = list[tuple[str, float]]
BLOCK = 512  # rows per inner-product call (single-threaded in OpenBLAS; same float32 results)
UNIT = 1e-3  # every stored vector is of unit length (the Embedder contract) within this: one that is not is damaged


class Texts:
    """A column of strings by slot: those saved (one UTF-8 blob and its offsets, memory-mapped) and those set since."""

    def __init__(self, blob: np.ndarray | None = None, offsets: np.ndarray | None = None) -> None:
        self.blob = blob if blob is not None else np.zeros(0, dtype=np.uint8)
        self.offsets = offsets if offsets is not None else np.zeros(1, dtype=np.int64)
        self.since: dict[int, str] = {}

    def __getitem__(self, slot: int) -> str:
        value = self.since.get(slot)
        if value is not None:
            return value
        if slot + 1 < len(self.offsets):
            return self.blob[self.offsets[slot] : self.offsets[slot + 1]].tobytes().decode("utf-8", "replace")
        return ""

    def __setitem__(self, slot: int, value: str) -> None:
        self.since[slot] = value

    def values(self, n: int) -> list[str]:
        """The strings of slots 0..n-1, as saved (decoded in one pass)."""
        assert not self.since and len(self.offsets) == n + 1
        data, offsets = self.blob.tobytes(), self.offsets.tolist()
        return [data[a:b].decode("utf-8", "replace") for a, b in itertools.pairwise(offsets)]

    def kept(self, slots: Sequence[int]) -> Texts:
        """A new column of the strings of `slots`, in that order."""
        return Texts(*self.encoded(slots))

    def packed(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(blob, offsets) of slots 0..n-1."""
        if not self.since and len(self.offsets) == n + 1:
            return self.blob, self.offsets
        return self.encoded(range(n))

    def encoded(self, slots: Iterable[int]) -> tuple[np.ndarray, np.ndarray]:
        """(blob, offsets) of `slots` in that order: the saved strings' bytes copied as they are, those set since
        encoded (one pass, nothing decoded)."""
        blob, offsets, since, saved = self.blob.tobytes(), self.offsets.tolist(), self.since, len(self.offsets) - 1
        return joined(
            [
                value.encode("utf-8")
                if (value := since.get(s)) is not None
                else blob[offsets[s] : offsets[s + 1]]
                if s < saved
                else b""
                for s in slots
            ]
        )


def pack(values: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Strings as one UTF-8 blob and the offsets of each (n + 1)."""
    return joined([value.encode("utf-8") for value in values])


def joined(data: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Byte strings as one blob and the offsets of each (n + 1)."""
    offsets = np.zeros(len(data) + 1, dtype=np.int64)
    np.cumsum([len(d) for d in data], out=offsets[1:])
    return np.frombuffer(b"".join(data), dtype=np.uint8), offsets


class Vectors:
    """Rows of one collection: id -> slot, float32 vectors, a live mask and a source code per slot. The vectors of
    the slots loaded with the model stay where they were loaded (memory-mapped); later slots go to `tail`, so the
    first write after opening copies nothing."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.slot: dict[str, int] = {}
        self.ids: list[str] = []
        self.vecs = np.zeros((0, dim), dtype=np.float32)  # the loaded slots' vectors
        self.tail = np.zeros((0, dim), dtype=np.float32)  # the vectors of the slots from len(vecs) on
        self.live = np.zeros(0, dtype=bool)
        self.source = np.zeros(0, dtype=np.int32)
        self._sound: np.ndarray | None = None  # per slot: its vector is of unit length (`sound`, read once, kept)

    @property
    def n(self) -> int:
        return len(self.ids)

    def put(self, key: str, vector: Sequence[float] | np.ndarray, source: int) -> tuple[int, bool]:
        """(its slot, True when the row is new)."""
        slot = self.slot.get(key)
        new = slot is None
        if slot is None:
            slot = self.n
            if slot == len(self.live):  # grow by half (at least 64 rows)
                cap = max(64, slot + slot // 2)
                self.live = grown(self.live, cap)
                self.source = grown(self.source, cap)
                if self._sound is not None:
                    self._sound = np.concatenate([self._sound, np.ones(cap - len(self._sound), dtype=bool)])
            if slot - len(self.vecs) == len(self.tail):
                self.tail = grown(self.tail, max(64, len(self.tail) + len(self.tail) // 2))
            self.slot[key] = slot
            self.ids.append(key)
        self.put_vector(slot, vector)
        self.live[slot] = True
        self.source[slot] = source
        return slot, new

    def put_vector(self, slot: int, vector: Sequence[float] | np.ndarray | float) -> None:
        if slot < len(self.vecs):
            self.vecs[slot] = vector
        else:
            self.tail[slot - len(self.vecs)] = vector
        if self._sound is not None:
            self._sound[slot] = bool(unit(self.vector(slot)[None, :])[0])

    def sound(self) -> np.ndarray:
        """Per slot (its capacity): its vector is of unit length, as every stored vector is (the Embedder contract);
        one that is not was damaged on disk. Read over every vector once (as a search does), then kept."""
        if self._sound is None:
            sound = np.ones(len(self.live), dtype=bool)
            n = self.n
            for first, part in ((0, self.vecs[:n]), (len(self.vecs), self.tail[: max(0, n - len(self.vecs))])):
                for start in range(0, len(part), BLOCK):
                    end = min(len(part), start + BLOCK)
                    sound[first + start : first + end] = unit(part[start:end])
            self._sound = sound
        return self._sound

    def is_sound(self, slot: int) -> bool:
        """The slot's vector is of unit length (read alone until every slot was: `sound`)."""
        if self._sound is not None:
            return bool(self._sound[slot])
        return bool(unit(self.vector(slot)[None, :])[0])

    def damaged(self) -> np.ndarray:
        """The live slots whose vector is not of unit length."""
        return np.flatnonzero(self.live[: self.n] & ~self.sound()[: self.n])

    def vector(self, slot: int) -> np.ndarray:
        return self.vecs[slot] if slot < len(self.vecs) else self.tail[slot - len(self.vecs)]

    def matrix(self) -> np.ndarray:
        """Every slot's vector, in order."""
        more = self.n - len(self.vecs)
        return np.concatenate([self.vecs, self.tail[:more]]) if more > 0 else self.vecs[: self.n]

    def remove(self, key: str) -> int | None:
        """The row's slot, no longer live, its vector zeroed."""
        slot = self.slot.pop(key, None)
        if slot is not None:
            self.live[slot] = False
            self.put_vector(slot, 0.0)
        return slot

    @property
    def dead(self) -> int:
        """Slots of rows removed since the last `compact` (their vector zeroed, searched past)."""
        return self.n - len(self.slot)

    def compact(self) -> np.ndarray:
        """Drop the slots of removed rows (the live ones keep their order, so ties fall as before); the slots kept,
        by their old numbers, for the caller to remap what points into them."""
        keep = np.flatnonzero(self.live[: self.n])
        loaded = len(self.vecs)
        self.vecs = np.concatenate([self.vecs[keep[keep < loaded]], self.tail[keep[keep >= loaded] - loaded]])
        self.tail = np.zeros((0, self.dim), dtype=np.float32)
        self.ids = [self.ids[slot] for slot in keep.tolist()]
        self.slot = {key: slot for slot, key in enumerate(self.ids)}
        self.live, self.source = np.ones(len(keep), dtype=bool), self.source[keep]
        if self._sound is not None:
            self._sound = self._sound[keep]
        return keep

    def top(self, query: np.ndarray, limit: int, valid: np.ndarray) -> Scored:
        """The `limit` valid rows with the largest inner product with `query`, best first."""
        n = self.n
        if not n or limit <= 0:
            return []
        sims = np.empty(n, dtype=np.float32)
        for first, part in ((0, self.vecs), (len(self.vecs), self.tail[: n - len(self.vecs)])):
            for start in range(0, len(part), BLOCK):  # one BLAS call over all rows goes multi-threaded and, on a
                end = min(len(part), start + BLOCK)  # busy machine, waits 10-60 ms for its second thread
                np.matmul(part[start:end], query, out=sims[first + start : first + end])
        return best(self.ids, sims, valid & self.sound()[:n], limit)


def unit(vectors: np.ndarray) -> np.ndarray:
    """Per row: of unit length within UNIT (False for a row with an infinite or NaN value)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.abs(np.sqrt(np.einsum("ij,ij->i", vectors, vectors)) - 1.0) <= UNIT


def grown(array: np.ndarray, rows: int) -> np.ndarray:
    out = np.zeros((rows, *array.shape[1:]), dtype=array.dtype)
    out[: len(array)] = array
    return out


def best(ids: Sequence[str], scores: np.ndarray, valid: np.ndarray, limit: int) -> Scored:
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


class Postings:
    """BM25 document weights of some slots, term-major: for a term, the slots holding it and their weights."""

    def __init__(self, slots: Sequence[int], terms: Sequence[np.ndarray], weights: Sequence[np.ndarray]) -> None:
        self.slots = np.zeros(0, dtype=np.int32)
        self.weights = np.zeros(0, dtype=np.float32)
        self.keys = np.zeros(0, dtype=np.uint32)
        self.bounds = np.zeros(1, dtype=np.int64)  # the postings of keys[i] are bounds[i]:bounds[i + 1]
        if slots:
            term = np.concatenate(terms).astype(np.uint32)
            order = np.argsort(term, kind="stable")
            counts = [len(t) for t in terms]
            self.slots = np.repeat(np.asarray(slots, dtype=np.int32), counts)[order]
            self.weights = np.concatenate(weights).astype(np.float32)[order]
            self.keys, starts = np.unique(term[order], return_index=True)
            self.bounds = np.append(starts, len(order)).astype(np.int64)

    def find(self, term: int) -> slice | None:
        i = int(np.searchsorted(self.keys, term))
        return slice(*self.bounds[i : i + 2].tolist()) if i < self.keys.size and self.keys[i] == term else None

    def add_to(self, scores: np.ndarray, hit: np.ndarray, query: Sequence[tuple[int, float]]) -> None:
        for term, weight in query:
            part = self.find(term)
            if part is not None:
                scores[self.slots[part]] += weight * self.weights[part].astype(np.float64)
                hit[self.slots[part]] = True
