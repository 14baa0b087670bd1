"""On a Milvus server the index drops or rebuilds only collections it made: another application's collection of the
same name (or `<name>_windows`) is refused with a clear error and left as it is, by `index` and by `reset`; an index
made by an earlier version of this program is still rebuilt."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.store import StoreError
from memsearch_lsp.core.store.schema import FIELDS
from tests.helpers import milvus_lite_server


@pytest.fixture(scope="module")
def milvus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One `milvus-lite server` for the module (each test uses collections of its own names)."""
    with milvus_lite_server(tmp_path_factory.mktemp("server-data")) as uri:
        yield uri


@pytest.fixture
def client(milvus_server: str) -> Iterator[Any]:
    from pymilvus import MilvusClient

    made = MilvusClient(uri=milvus_server)
    yield made
    made.close()


def another_application(client: Any, name: str, rows: int = 100) -> None:
    """A collection of someone else's (fields `pk` and `v`) holding `rows` rows."""
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False)
    schema.add_field("pk", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    index = client.prepare_index_params()
    index.add_index(field_name="v", index_type="AUTOINDEX", metric_type="L2")
    client.create_collection(name, schema=schema, index_params=index)
    client.insert(name, [{"pk": i, "v": [0.1, 0.2, 0.3, float(i)]} for i in range(rows)])
    client.flush(name)


def untouched(client: Any, name: str, rows: int = 100) -> bool:
    fields = [f["name"] for f in client.describe_collection(name)["fields"]]
    client.load_collection(name)
    return fields == ["pk", "v"] and len(client.query(name, filter="pk >= 0", output_fields=["pk"])) == rows


def test_two_workspaces_naming_one_collection_get_one_each(
    tmp_path: Path, make_memory: Callable[..., Memory], milvus_server: str
) -> None:
    """A name in the user's settings holds for every workspace: each gets its own collection under it, never one
    shared (each workspace's index would take the other's notes out)."""
    names = set()
    for folder in ("a", "b"):
        (tmp_path / folder / "memory").mkdir(parents=True)
        (tmp_path / folder / "memory" / "MEMORY.md").write_text(f"# Memory\n\n## {folder}\n\nnote {folder}\n")
        memory = make_memory(tmp_path / folder, milvus_uri=milvus_server, milvus_collection="team_notes")
        memory.index()
        names.add(memory.collection)
    assert len(names) == 2 and all(n.startswith("team_notes_") for n in names)


def test_index_and_reset_never_drop_another_applications_collection(
    workspace: Path, make_memory: Callable[..., Memory], milvus_server: str, client: Any
) -> None:
    memory = make_memory(workspace, milvus_uri=milvus_server, milvus_collection="customers")
    name = memory.collection  # customers_<the root's hash>: one per workspace, the setting its prefix
    assert name.startswith("customers_") and name != "customers"
    another_application(client, name)
    with pytest.raises(StoreError, match=rf"collection {name} .* not made by memsearch-lsp.*milvus\.collection"):
        memory.index()
    assert untouched(client, name)
    assert not client.has_collection(f"{name}_windows"), "nothing made beside it"
    with pytest.raises(StoreError, match=f"collection {name}"):
        memory.reset()
    assert untouched(client, name)


def test_another_applications_windows_collection_is_never_dropped(
    workspace: Path, make_memory: Callable[..., Memory], milvus_server: str, client: Any
) -> None:
    memory = make_memory(workspace, milvus_uri=milvus_server, milvus_collection="orders")
    another_application(client, f"{memory.collection}_windows", rows=7)
    with pytest.raises(StoreError, match=f"collection {memory.collection}_windows"):
        memory.index()
    with pytest.raises(StoreError, match=f"collection {memory.collection}_windows"):
        memory.reset()
    assert untouched(client, f"{memory.collection}_windows", rows=7)
    assert not client.has_collection(memory.collection)


def first_version_index(client: Any, name: str, dim: int) -> None:
    """A chunk collection as the first version made it: no `windows` field and no windows collection."""
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=64)
    for field in ("source", "heading", "heading_path"):
        schema.add_field(field, DataType.VARCHAR, max_length=2048)
    for field in ("level", "start_line", "end_line"):
        schema.add_field(field, DataType.INT64)
    for field in ("content_hash", "embed_hash", "file_hash", "model", "date"):
        schema.add_field(field, DataType.VARCHAR, max_length=512)
    schema.add_field("content", DataType.VARCHAR, max_length=65535)
    schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dim)
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    index = client.prepare_index_params()
    index.add_index(field_name="dense", index_type="AUTOINDEX", metric_type="COSINE")
    index.add_index(field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
    client.create_collection(name, schema=schema, index_params=index)


def test_an_index_of_an_earlier_version_is_rebuilt_and_an_own_index_reset(
    workspace: Path, make_memory: Callable[..., Memory], milvus_server: str, client: Any
) -> None:
    memory = make_memory(workspace, milvus_uri=milvus_server, milvus_collection="mine")
    mine = memory.collection
    first_version_index(client, mine, memory.embedder.dim)
    stats = memory.index()
    assert stats.chunks_total > 0 and memory.search("deploy")
    assert {f["name"] for f in client.describe_collection(mine)["fields"]} == FIELDS
    assert client.has_collection(f"{mine}_windows")

    memory.reset()
    assert client.has_collection(mine) and memory.status()["chunks"] == 0
    assert memory.index().chunks_total == stats.chunks_total


def released(client: Any, memory: Memory) -> None:
    """What an administrator's release_collection (or a restart that does not load them again) leaves."""
    for name in (memory.collection, f"{memory.collection}_windows"):
        client.release_collection(name)
        assert str(client.get_load_state(name)["state"]) != "Loaded"


def test_collections_the_server_released_are_loaded_again_by_the_open_index(
    workspace: Path, make_memory: Callable[..., Memory], milvus_server: str, client: Any
) -> None:
    """Audit U 2: a language server's (or MCP server's) open index failed every search with "Collection ... is in
    state 'released'; call load()" once the server had released its collections, until it was restarted."""
    memory = make_memory(workspace, milvus_uri=milvus_server, milvus_collection="released")
    memory.index()
    before = [(h.source, h.heading) for h in memory.search("redis cache")]
    assert before
    released(client, memory)
    assert [(h.source, h.heading) for h in memory.search("redis cache")] == before
    released(client, memory)
    (workspace / "memory" / "MEMORY.md").write_text("# Memory\n\n## Kafka\n\nthe kafka topic keeps 7 days\n")
    assert memory.index().files_modified == 1  # (reads the stored rows, then writes)
    assert memory.search("kafka topic")[0].source == "memory/MEMORY.md"
    assert memory.store.count() > 0


def test_a_failure_loading_cannot_mend_is_said_as_it_came(
    workspace: Path, make_memory: Callable[..., Memory], milvus_server: str, client: Any
) -> None:
    memory = make_memory(workspace, milvus_uri=milvus_server, milvus_collection="dropped")
    memory.index()
    for name in (memory.collection, f"{memory.collection}_windows"):
        client.drop_collection(name)
    with pytest.raises(Exception, match=r"(?i)not (found|exist)") as failed:
        memory.search("redis cache")
    assert "load" not in str(failed.value).lower()
    assert not client.has_collection(memory.collection), "nothing made again by a search"
