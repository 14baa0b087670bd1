"""core.api: one memory interface, two implementations (local Memory, RemoteMemory over the owner's socket)."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memsearch_lsp.config import load_config
from memsearch_lsp.core.api import IndexApi, MemoryApi
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.process.door import open_memory
from memsearch_lsp.core.process.owner import OwnerServer, RemoteMemory
from memsearch_lsp.core.workspace import index_settings_changed
from tests.fakes import FakeEmbedder

NOTE = "memory/2026-03-01.md"


def _operations(protocol: type) -> set[str]:
    return {name for name in vars(protocol) if not name.startswith("_")}


def test_local_and_remote_memory_implement_one_interface_and_neither_extends_the_other() -> None:
    assert not issubclass(RemoteMemory, Memory) and not issubclass(Memory, RemoteMemory)
    for cls in (Memory, RemoteMemory):
        for name in _operations(IndexApi) | _operations(MemoryApi):
            assert name in vars(cls) or any(name in vars(base) for base in cls.__mro__[1:-1]), (cls, name)
    for name in _operations(IndexApi):  # the index operations are the class's own, not inherited
        assert name in vars(Memory) and name in vars(RemoteMemory), name


@contextlib.contextmanager
def owner_and_client(workspace: Path, owner: Memory) -> Iterator[RemoteMemory]:
    """`owner` indexes and serves its index; the client opened beside it is a RemoteMemory."""
    owner.index()
    server = OwnerServer(owner, process="memsearch-lsp serve for a test")
    server.start()
    try:
        client = open_memory(workspace, embedder=FakeEmbedder())
        assert isinstance(client, RemoteMemory)
        yield client
    finally:
        server.close()


def test_the_owner_socket_serves_every_index_operation(workspace: Path, make_memory) -> None:
    owner = make_memory(workspace)
    with owner_and_client(workspace, owner) as client:
        expected = [h.id for h in owner.search("Redis cache config", top_k=5)]
        hit = owner.search("Redis cache config", top_k=1)[0]
        chunk = owner.expand(hit.id)
        assert chunk is not None
        section = next(
            c for c in owner.outline(chunk.source, owner.path_of(chunk.source).read_text()) if c.id == hit.id
        )
        text = "# 2026-03-01\n\n## Quokka\n\nquokka rollout\n"
        calls: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
            "search": (("Redis cache config",), {"top_k": 5}),
            "expand": ((hit.id,), {}),
            "related": ((section,), {"top_k": 2}),
            "headings": ((), {"limit": 50}),
            "is_indexed": (("memory/MEMORY.md",), {}),
            "index_text": ((NOTE, text), {}),
            "has_overlay": ((NOTE,), {}),
            "is_unsaved": ((NOTE,), {}),
            "drop_overlay": ((NOTE,), {}),
            "index_file": ((NOTE,), {}),
            "remove": ((NOTE,), {}),
            "index": ((), {"force": False}),
            "remember": (("Kiwi quota is 9", "Kiwi"), {"now": dt.datetime(2026, 3, 2, 9, 0), "long_term": True}),
            "forget": ((hit.id,), {"dry_run": True}),
            "status": ((), {}),
            "reset": ((), {}),
        }
        assert set(calls) == _operations(IndexApi)  # a new operation needs a line here (and in dispatch)
        served = {name: getattr(client, name)(*args, **kwargs) for name, (args, kwargs) in calls.items()}
        assert [h.id for h in served["search"]] == expected  # (calls run in order: reset is last)
        assert served["expand"] == chunk and served["related"] and served["headings"]
        assert served["is_indexed"] is True and served["has_overlay"] is True
        assert served["is_unsaved"] is True  # a buffer of a file not on disk: its changes are not there
        assert served["index_text"].files_added == 1  # a buffer only: index_file then finds no file and drops it
        assert served["index_file"].files_removed == 1 and served["remove"].files_removed == 0
        assert served["remember"].chunks[0].heading == "Kiwi" and served["remember"].lines is not None
        long_term = (workspace / "memory" / "MEMORY.md").read_text().split("\n")
        start, end = served["remember"].lines  # the note's own lines (not the heading it created), sent back
        assert long_term[start - 1 : end] == ["Kiwi quota is 9"]
        assert served["forget"].source == hit.source and served["forget"].removed is False
        assert served["status"]["served_by_pid"] == os.getpid() and "chunks" in served["status"]
        assert owner.status()["chunks"] == 0  # reset went to the owner
        assert client.owner_process() == f"memsearch-lsp serve for a test (pid {os.getpid()})"


def test_a_client_sends_its_changed_search_settings_and_keeps_the_owners_index_settings(
    workspace: Path, make_memory
) -> None:
    owner = make_memory(workspace)
    with owner_and_client(workspace, owner) as client:
        query = "message broker decision"
        before = [(h.id, h.rank_score) for h in client.search(query, top_k=5)]
        assert before == [(h.id, h.rank_score) for h in owner.search(query, top_k=5)]
        changed = client.config.merged(
            {
                "search": {"vectorWeight": 0.0, "bm25Weight": 1.0, "topK": 4},
                "memory": {"paths": ["journal"]},
                "embedding": {"batchSize": 4},
                "watch": {"debounceMs": 10},
            }
        )
        assert index_settings_changed(client.config, changed) == ["memory.paths", "embedding.batch_size"]
        assert client.reconfigure(changed) is False  # nothing to re-index in a client
        assert client.config.memory == owner.config.memory and client.config.embedding == owner.config.embedding
        assert client.config.watch.debounce_ms == 10 and client.config.search.top_k == 4  # these apply here
        after = [(h.id, h.rank_score) for h in client.search(query)]
        wanted = owner.search(query, vector_weight=0.0, bm25_weight=1.0, top_k=4)
        assert after == [(h.id, h.rank_score) for h in wanted] and after != before[:4]
        assert owner.config == load_config(workspace)  # the owner's settings did not change
        assert [h.id for h in client.search(query, top_k=2)] == [h.id for h in wanted[:2]]  # an argument still wins


def test_a_reset_asked_of_the_owner_is_rebuilt_by_its_next_read(workspace: Path, make_memory) -> None:
    """`reset` says the next search rebuilds the index: an editor's server that owns it answered nothing instead."""
    owner = make_memory(workspace)
    owner.index()
    before = [h.id for h in owner.search("Redis cache config", top_k=3)]
    with owner_and_client(workspace, owner) as client:
        client.reset()
        assert owner.status()["chunks"] == 0
        assert [h.id for h in owner.search("Redis cache config", top_k=3)] == before
        assert owner.status()["chunks"] > 0 and owner.headings()


def test_a_followers_relative_dates_count_from_its_own_clock_not_the_owners(workspace: Path, make_memory) -> None:
    """A CLI in another time zone (or with MEMSEARCH_NOW) beside a running owner: `remember` writes to the caller's
    day, and `--since today` / "yesterday" in a query are the caller's days too, as when no owner runs."""
    owner = make_memory(workspace)
    owner.clock = lambda: dt.datetime(2026, 12, 7, 10, 0)  # the owner's day is already the 7th
    with owner_and_client(workspace, owner) as client:
        client.clock = lambda: dt.datetime(2026, 12, 6, 22, 0)  # still the 6th here
        note = client.remember("Chose the marmot queue for ingest retries")
        assert note.source == "memory/2026-12-06.md"
        assert [h.source for h in client.search("marmot queue", since="today")] == ["memory/2026-12-06.md"]
        assert owner.search("marmot queue", since="today") == []  # (the owner's own today is another day)
        assert "memory/2026-12-06.md" not in {h.source for h in client.search("marmot queue", until="1d")}
        (workspace / "memory" / "2026-12-05.md").write_text("# 2026-12-05\n\n## 09:00\n\nMarmot queue sizing.\n")
        client.index_file("memory/2026-12-05.md")
        assert client.search("marmot queue yesterday")[0].source == "memory/2026-12-05.md"
        assert owner.search("marmot queue yesterday")[0].source == "memory/2026-12-06.md"
