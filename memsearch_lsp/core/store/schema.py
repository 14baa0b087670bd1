"""What the store holds: the chunk and window collections' fields, a stored chunk's Row, sparse vectors, filters."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

MAX_CONTENT_BYTES = 60000
INTS = ("level", "start_line", "end_line", "windows")  # windows: dense vectors of the chunk (its own + extra)
TEXTS = ("heading", "heading_path", "content_hash", "embed_hash", "file_hash", "model", "date", "content")
SCALARS = ("source", *TEXTS, *INTS[:3])
WINDOW_SUFFIX = "_windows"
# (name, kind, max_length) of each collection's fields besides `id` (the primary key) and `dense`: one collection of
# chunks, and one of their dense vectors after the first (windows), so BM25, counts and scans see chunks only.
CHUNK_FIELDS = (
    *((name, "VARCHAR", 2048) for name in ("source", "heading", "heading_path")),
    *((name, "INT64", 0) for name in INTS),
    *((name, "VARCHAR", 512) for name in ("content_hash", "embed_hash", "file_hash", "model", "date")),
    ("content", "VARCHAR", 65535),
    ("sparse", "SPARSE_FLOAT_VECTOR", 0),  # BM25 document weights (core/search/bm25.py)
)
WINDOW_FIELDS = (
    ("chunk_id", "VARCHAR", 64),
    ("source", "VARCHAR", 2048),
    ("embed_hash", "VARCHAR", 512),
    ("model", "VARCHAR", 512),
)
FIELDS = {"id", "dense", *(name for name, _, _ in CHUNK_FIELDS)}
# The fields every version of this program has given its collections (the first had no `windows`, nor a second
# collection): a Milvus server's collection without them is another application's, never dropped nor rebuilt.
OUR_CHUNK_FIELDS = frozenset(FIELDS - {"windows"})
OUR_WINDOW_FIELDS = frozenset({"id", "dense", *(name for name, _, _ in WINDOW_FIELDS)})


@dataclass(frozen=True)
class Row:
    """One stored chunk as the store returns it."""

    id: str
    source: str
    heading: str
    heading_path: str
    level: int
    start_line: int
    end_line: int
    content_hash: str
    embed_hash: str
    file_hash: str
    model: str
    date: str
    content: str
    score: float = 0.0

    @classmethod
    def from_entity(cls, pk: str, entity: dict[str, Any], score: float = 0.0) -> Row:
        values = {name: entity.get(name, "") for name in SCALARS}
        for name in INTS[:3]:
            values[name] = int(values[name] or 0)
        return cls(id=pk, score=score, **values)


def best_windows(
    chunks: Iterable[tuple[str, float]], windows: Iterable[tuple[str, float]], limit: int
) -> dict[str, float]:
    """The `limit` best chunks of a dense search, each scored by its best window (the chunk's own vector is its
    first): the chunks' hits, and the windows' by the chunk they belong to."""
    scores = dict(chunks)
    for chunk, score in windows:
        if score > scores.get(chunk, -2.0):
            scores[chunk] = score
    return dict(sorted(scores.items(), key=lambda kv: -kv[1])[:limit])


def idf(n_docs: int, df: int) -> float:
    """BM25's inverse document frequency of a term found in `df` of `n_docs` chunks."""
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


def cut_short(content: str) -> bool:
    """Whether a stored text may be its chunk's cut at MAX_CONTENT_BYTES (a character cut in two is left out: up to 3
    bytes less): its whole, and its last line, are then in its file."""
    return len(content.encode("utf-8")) > MAX_CONTENT_BYTES - 4


def clip(text: str) -> str:
    data = text.encode("utf-8")
    if len(data) <= MAX_CONTENT_BYTES:
        return text
    return data[:MAX_CONTENT_BYTES].decode("utf-8", "ignore")


def stored(row: dict[str, Any]) -> dict[str, Any]:
    """A chunk row with its text fields cut to what the collection holds."""
    return dict(
        row, content=clip(row["content"]), heading=row["heading"][:500], heading_path=row["heading_path"][:2000]
    )


def sparse_dict(value: Any) -> dict[int, float]:
    """A stored sparse vector (see `sparse_arrays`) as {term: weight}."""
    terms, weights = sparse_arrays(value)
    return dict(zip(terms.tolist(), weights.tolist(), strict=True))


def sparse_arrays(value: Any) -> tuple[Any, Any]:
    """A sparse vector (Milvus Lite's packed little-endian uint32 index, float32 weight pairs; a dict; or (terms,
    weights) arrays already) as (terms uint32, weights float32) arrays, less the weights that are zero in float32
    (Milvus drops them)."""
    import numpy as np

    if isinstance(value, tuple):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        pairs = np.frombuffer(value, dtype=np.dtype([("i", "<u4"), ("w", "<f4")]))
        terms, weights = pairs["i"], pairs["w"]
    else:
        items = dict(value or {})
        terms = np.fromiter(items.keys(), dtype=np.int64, count=len(items))
        weights = np.fromiter(items.values(), dtype=np.float32, count=len(items))
    keep = weights != 0
    return terms[keep].astype(np.uint32), weights[keep].astype(np.float32)


_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"})


def quote(value: str) -> str:
    """A Milvus filter string literal; any file name fits."""
    return '"' + value.translate(_ESCAPES) + '"'


def where(exclude_source: str, only: Collection[str] | None = None) -> str:
    """A Milvus filter: not from `exclude_source`, and (with `only`) from those sources alone."""
    parts = [f"source != {quote(exclude_source)}"] if exclude_source else []
    if only is not None:
        parts.append(f"source in [{', '.join(quote(s) for s in sorted(only))}]")
    return " and ".join(parts)


def with_arrays(rows: list[dict[str, Any]], dim: int) -> list[dict[str, Any]]:
    """Rows with their vectors converted once, for the read model and the wire alike: `dense` a float32 row of one
    matrix, `sparse` (when given) its (terms, weights) arrays."""
    import numpy as np

    dense = np.asarray([r["dense"] for r in rows], dtype=np.float32).reshape(len(rows), dim)
    for row, vector in zip(rows, dense, strict=True):
        row["dense"] = vector
        if "sparse" in row:
            row["sparse"] = sparse_arrays(row["sparse"])
    return rows
