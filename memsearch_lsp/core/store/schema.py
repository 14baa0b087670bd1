"""What the store holds: the chunk and window collections' fields and schema, and a stored chunk's Row."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

MAX_CONTENT_BYTES = 60000
SCALARS = (
    "source",
    "heading",
    "heading_path",
    "level",
    "start_line",
    "end_line",
    "content_hash",
    "embed_hash",
    "file_hash",
    "model",
    "date",
    "content",
)
FIELDS = {"id", *SCALARS, "windows", "dense", "sparse"}
# Window rows (a chunk's dense vectors after its first, which lives in the chunk's own row): one
# collection beside the chunks, so BM25, counts and scans see chunks only.
WINDOW_FIELDS = {"id", "chunk_id", "source", "embed_hash", "model", "dense"}
WINDOW_SUFFIX = "_windows"


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
        for name in ("level", "start_line", "end_line"):
            values[name] = int(values[name] or 0)
        return cls(id=pk, score=score, **values)


def clip(text: str) -> str:
    data = text.encode("utf-8")
    if len(data) <= MAX_CONTENT_BYTES:
        return text
    return data[:MAX_CONTENT_BYTES].decode("utf-8", "ignore")


def sparse_dict(value: Any) -> dict[int, float]:
    """A stored sparse vector as {term: weight}: a dict (pymilvus) or Milvus Lite's packed bytes."""
    if isinstance(value, bytes | bytearray | memoryview):
        terms, weights = sparse_arrays(value)
        return dict(zip(terms.tolist(), weights.tolist(), strict=True))
    if isinstance(value, dict):
        return {int(k): float(v) for k, v in value.items()}
    try:  # scipy-like or pymilvus row objects
        return {int(k): float(v) for k, v in dict(value).items()}
    except (TypeError, ValueError):
        return {}


def dense_dim(info: Mapping[str, Any]) -> int | None:
    """The dense vector's dimension in a `describe_collection` answer; None without a dense field."""
    for f in info.get("fields", []):
        if f.get("name") == "dense":
            return int(f.get("params", {}).get("dim", 0))
    return None


def dense_index(client: Any, local: bool, metric: str) -> Any:
    """The dense field's index parameters: FLAT for a local store, AUTOINDEX on a server; `metric`: the
    store's (MilvusStore.dense_metric)."""
    index = client.prepare_index_params()
    index.add_index(field_name="dense", index_type="FLAT" if local else "AUTOINDEX", metric_type=metric)
    return index


def create_collections(
    client: Any, data_type: Any, collection: str, windows_collection: str, dim: int, make_index: Callable[[], Any]
) -> None:
    """The chunk collection (scalars, a dense and a BM25 sparse vector) and the window collection beside it,
    both loaded; `make_index()`: the dense field's index parameters (dense_index, the store's metric)."""
    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", data_type.VARCHAR, is_primary=True, max_length=64)
    for name in ("source", "heading", "heading_path"):
        schema.add_field(name, data_type.VARCHAR, max_length=2048)
    for name in ("level", "start_line", "end_line", "windows"):  # windows: dense vectors of the chunk
        schema.add_field(name, data_type.INT64)
    for name in ("content_hash", "embed_hash", "file_hash", "model", "date"):
        schema.add_field(name, data_type.VARCHAR, max_length=512)
    schema.add_field("content", data_type.VARCHAR, max_length=65535)
    schema.add_field("dense", data_type.FLOAT_VECTOR, dim=dim)
    schema.add_field("sparse", data_type.SPARSE_FLOAT_VECTOR)  # BM25 document weights (core/search/bm25.py)
    index = make_index()
    index.add_index(field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
    client.create_collection(collection, schema=schema, index_params=index)
    client.load_collection(collection)
    if client.has_collection(windows_collection):
        client.drop_collection(windows_collection)
    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", data_type.VARCHAR, is_primary=True, max_length=96)
    schema.add_field("chunk_id", data_type.VARCHAR, max_length=64)
    schema.add_field("source", data_type.VARCHAR, max_length=2048)
    for name in ("embed_hash", "model"):
        schema.add_field(name, data_type.VARCHAR, max_length=512)
    schema.add_field("dense", data_type.FLOAT_VECTOR, dim=dim)
    client.create_collection(windows_collection, schema=schema, index_params=make_index())
    client.load_collection(windows_collection)


def sparse_arrays(value: Any) -> tuple[Any, Any]:
    """A sparse vector as Milvus Lite stores it (packed little-endian uint32 index, float32 weight pairs)
    or as a dict, as (indices int64, weights float32) arrays."""
    import numpy as np

    if isinstance(value, bytes | bytearray | memoryview):
        pairs = np.frombuffer(value, dtype=np.dtype([("i", "<u4"), ("w", "<f4")]))
        return pairs["i"].astype(np.int64), pairs["w"].astype(np.float32)
    items = dict(value or {})
    return (
        np.fromiter(items.keys(), dtype=np.int64, count=len(items)),
        np.fromiter(items.values(), dtype=np.float32, count=len(items)),
    )


_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"})


def quote(value: str) -> str:
    """A Milvus filter string literal (Milvus Lite has no filter templates); any file name fits."""
    return '"' + value.translate(_ESCAPES) + '"'


def where(exclude_source: str, only: Collection[str] | None = None) -> str:
    """A Milvus filter: not from `exclude_source`, and (with `only`) from those sources alone."""
    parts = [f"source != {quote(exclude_source)}"] if exclude_source else []
    if only is not None:
        parts.append(f"source in [{', '.join(quote(s) for s in sorted(only))}]")
    return " and ".join(parts)
