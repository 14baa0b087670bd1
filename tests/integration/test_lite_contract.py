"""The contract under core/store/lite.py: the same sequence of calls through `LiteClient` (Milvus Lite's engine in
process, through its private parts where it has no public ones) and through pymilvus' `MilvusClient` against
`milvus-lite server` (Milvus Lite's own gRPC servicer, the public path) gives the same results. A Milvus Lite
release that changes what LiteClient relies on shows here, before a user's index meets it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memsearch_lsp.core.store import lite
from memsearch_lsp.core.store.client import LiteClient
from memsearch_lsp.core.store.milvus import sparse_dict
from tests.helpers import milvus_lite_server

DIM = 8
ROWS = [
    {
        "id": f"c{n:02d}",
        "source": f"{'abc'[n % 3]}.md",
        "level": n % 4,
        "content": f"note {n} about " + "xyz"[n % 3],
        "dense": [float((n * 7 + k * 3) % 11) - 5.0 for k in range(DIM)],
        "sparse": {n % 5 + 1: 1.0 + n / 10, 7: 0.5, 100 + n: 2.0},
    }
    for n in range(12)
]
FIELDS = ["source", "level", "content"]


def _unit(vector: list[float]) -> list[float]:
    norm = sum(x * x for x in vector) ** 0.5 or 1.0
    return [x / norm for x in vector]


def _row(entity: Any, fields: list[str]) -> tuple[Any, ...]:
    out: list[Any] = [entity["id"]]
    for name in fields:
        value = entity[name]
        if name == "dense":
            value = tuple(round(float(x), 5) for x in value)
        elif name == "sparse":
            value = tuple(sorted((k, round(v, 5)) for k, v in sparse_dict(value).items()))
        out.append(value)
    return tuple(out)


def _hits(result: Any) -> list[tuple[str, float]]:
    """Hits best first; equal scores by id (their order among themselves is not part of the contract)."""
    found = [(str(hit["id"]), round(float(hit["distance"]), 4)) for hit in result[0]]
    return sorted(found, key=lambda h: (-h[1], h[0]))


def sequence(client: Any, data_type: Any) -> list[tuple[str, Any]]:
    """Every kind of call MilvusStore makes, in the order it makes them; each result normalised."""
    seen: list[tuple[str, Any]] = []
    name = "contract"
    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", data_type.VARCHAR, is_primary=True, max_length=64)
    schema.add_field("source", data_type.VARCHAR, max_length=2048)
    schema.add_field("level", data_type.INT64)
    schema.add_field("content", data_type.VARCHAR, max_length=65535)
    schema.add_field("dense", data_type.FLOAT_VECTOR, dim=DIM)
    schema.add_field("sparse", data_type.SPARSE_FLOAT_VECTOR)
    index = client.prepare_index_params()
    index.add_index(field_name="dense", index_type="FLAT", metric_type="IP")
    index.add_index(field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
    client.create_collection(name, schema=schema, index_params=index)
    client.load_collection(name)
    seen.append(("has_collection", client.has_collection(name)))
    info = client.describe_collection(name)
    seen.append(
        (
            "describe_collection",
            sorted((f["name"], int(f.get("params", {}).get("dim", 0) or 0)) for f in info["fields"]),
        )
    )
    seen.append(("functions", list(info.get("functions") or [])))
    spec = client.describe_index(name, "dense")
    seen.append(("describe_index", (spec.get("field_name"), spec.get("index_type"), spec.get("metric_type"))))
    # The store's metric migration (MilvusStore._ensure_dense_metric): release, drop, create, load. Done on the
    # empty collection: Milvus Lite 3.2 builds index sidecars in a background thread after a flush, outside
    # its lock, and a load() then may read a half-written one ("file seems not fully written"; seen once here,
    # through the server, under load; no upstream issue found). The store only re-indexes right after open.
    client.release_collection(name)
    client.drop_index(name, "dense")
    cosine = client.prepare_index_params()
    cosine.add_index(field_name="dense", index_type="FLAT", metric_type="COSINE")
    client.create_index(name, cosine)
    client.load_collection(name)
    spec = client.describe_index(name, "dense")
    seen.append(("describe_index again", (spec.get("index_type"), spec.get("metric_type"))))

    rows = [dict(r, dense=_unit(r["dense"])) for r in ROWS]
    client.upsert(name, rows[:8])
    client.upsert(name, rows[8:])
    client.upsert(name, [dict(rows[3], content="note 3 rewritten", level=9)])  # upsert replaces by key
    client.flush(name)
    seen.append(("count", client.query(name, filter="", output_fields=["count(*)"])))
    got = client.get(name, ids=["c03", "c05", "missing"], output_fields=[*FIELDS, "dense", "sparse"])
    seen.append(("get", sorted(_row(r, [*FIELDS, "dense", "sparse"]) for r in got)))
    by_filter = client.query(name, filter='source == "a.md" and level >= 1', output_fields=FIELDS)
    seen.append(("query", sorted(_row(r, FIELDS) for r in by_filter)))
    listed = client.query(name, filter='id in ["c01", "c02", "c11"]', output_fields=["source"], limit=16384)
    seen.append(("query in", sorted(_row(r, ["source"]) for r in listed)))

    probe = _unit([1.0, -2.0, 0.5, 3.0, 0.0, -1.0, 2.0, 1.5])
    seen.append(
        (
            "search dense",
            _hits(
                client.search(name, [probe], anns_field="dense", limit=4, filter='source != "b.md"', output_fields=[])
            ),
        )
    )
    dense_with = client.search(name, [probe], anns_field="dense", limit=2, filter="", output_fields=["source"])
    seen.append(("search entity", [(str(h["id"]), h["entity"]["source"]) for h in dense_with[0]]))
    seen.append(
        (
            "search sparse",
            _hits(
                client.search(
                    name, [{7: 1.0, 2: 0.5, 105: 1.0}], anns_field="sparse", limit=5, filter="", output_fields=[]
                )
            ),
        )
    )

    iterator = client.query_iterator(name, batch_size=5, filter="level < 3", output_fields=["source"])
    pages = []
    while True:
        page = iterator.next()
        if not page:
            break
        pages.append(page)
    iterator.close()
    assert all(len(p) <= 5 for p in pages)
    seen.append(("query_iterator", sorted(_row(r, ["source"]) for p in pages for r in p)))

    client.delete(name, ids=["c00", "c01"])
    client.delete(name, filter='source == "c.md"')
    seen.append(
        (
            "after delete",
            sorted(r["id"] for r in client.query(name, filter="level >= 0", output_fields=["id"], limit=100)),
        )
    )
    seen.append(("count after delete", client.query(name, filter="", output_fields=["count(*)"])))
    client.drop_collection(name)
    seen.append(("dropped", client.has_collection(name)))
    return seen


@pytest.fixture
def server_uri(tmp_path: Path) -> Iterator[str]:
    with milvus_lite_server(tmp_path / "server-data") as uri:
        yield uri


def test_lite_client_answers_as_pymilvus_on_a_milvus_lite_server(tmp_path: Path, server_uri: str) -> None:
    from pymilvus import DataType, MilvusClient

    remote = MilvusClient(uri=server_uri)
    try:
        expected = sequence(remote, DataType)
    finally:
        remote.close()
    folder = tmp_path / "in-process"
    local = LiteClient(folder)
    try:
        got = sequence(local, local.DataType)
    finally:
        lite.release(folder)
    assert [name for name, _ in got] == [name for name, _ in expected]
    for (name, mine), (_, theirs) in zip(got, expected, strict=True):
        assert mine == theirs, name
    assert dict(expected)["count"] == [{"count(*)": 12}]  # the sequence means something
    assert dict(expected)["after delete"] and dict(expected)["search sparse"]


def test_the_engine_opens_under_the_lock_this_module_holds(tmp_path: Path) -> None:
    """lite.hold takes Milvus Lite's own lock (`flock` on LOCK) before the engine opens; the engine then takes
    none and releases none (Milvus Lite internals: `MilvusLite._acquire_lock` / `_release_lock` / `_lock_fd`),
    so closing the engine leaves the folder held until lite.release."""
    from milvus_lite.db import MilvusLite
    from milvus_lite.exceptions import DataDirLockedError

    folder = tmp_path / "held"
    lite.hold(folder)
    try:
        with pytest.raises(DataDirLockedError):
            MilvusLite(str(folder))  # any other open of the folder is refused before our engine opens...
        db = lite.open_folder(folder)
        assert db._lock_fd is None and lite.engine_open(folder)
        lite.close_engine(folder)
        assert db.closed and not lite.engine_open(folder)
        with pytest.raises(DataDirLockedError):
            MilvusLite(str(folder))  # ...and after it closed
        assert lite.open_folder(folder) is not db, "opened again under the same lock"
    finally:
        lite.release(folder)
    MilvusLite(str(folder)).close()  # released


def test_an_engine_without_its_lock_method_stops_with_drift(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from milvus_lite.db import MilvusLite

    monkeypatch.delattr(MilvusLite, "_acquire_lock")
    lite._engine_class.cache_clear()
    try:
        with pytest.raises(lite.EngineDrift, match="_acquire_lock"):
            lite.open_folder(tmp_path / "drifted")
    finally:
        lite.release(tmp_path / "drifted")
        monkeypatch.undo()
        lite._engine_class.cache_clear()
