"""The local store's in-process search legs (core/store/mirror.py) return what the Milvus legs return."""

from __future__ import annotations

import math
import random
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.store import lite, snapshot
from memsearch_lsp.core.store.client import LiteClient
from memsearch_lsp.core.store.milvus import MilvusStore
from memsearch_lsp.core.store.mirror import LegMirror
from memsearch_lsp.core.store.schema import sparse_arrays
from tests.fakes import FakeEmbedder
from tests.helpers import LONG

QUERIES = [
    "deploy",
    "kangaroo paddock fence ranger",
    "database migration rollback",
    "budget spreadsheet finance",
    "who reviewed the release notes",
    "koala wombat zoo",
    "error",
    "Postgres index vacuum",
    "quarterly review",
    "nothing-matches-this-zzz",
]


def _legs(
    store: MilvusStore,
    memory: Memory,
    query: str,
    limit: int,
    exclude: str = "",
) -> tuple[dict[str, float], dict[str, float]]:
    vector = memory.embedder.embed([query])[0]
    return (store.dense_leg(vector, limit, exclude), store.sparse_leg(memory.df.query_vector(query), limit, exclude))


def _close_without_saved_copy(store: MilvusStore) -> None:
    """Close the store and invalidate its saved mirror (core/store/snapshot.py), so the next opening reads the
    mirror from the engine, as one whose saved copy is missing or stale does."""
    store.close()
    snapshot.invalidate(store.uri)


def _assert_same(store: MilvusStore, memory: Memory, queries: list[str], limit: int, exclude: str = "") -> None:
    """Same scores in the same order and the same hits; among rows with equal scores Milvus' order is
    its storage order, so a group of ties is compared as a set (and only by its scores where the limit
    cuts through it)."""
    for query in queries:
        store.in_process = False
        slow = _legs(store, memory, query, limit, exclude)
        store.in_process = True
        store.mirror()  # loaded (else the first searches go through Milvus' search while it loads)
        fast = _legs(store, memory, query, limit, exclude)
        for want, got in zip(slow, fast):
            assert list(got.values()) == pytest.approx(list(want.values()), abs=1e-6), query
            groups = _ties(want)
            for n, (group, other) in enumerate(zip(groups, _ties(got))):
                if n < len(groups) - 1 or len(want) < limit:
                    assert group == other, query
        ids = [*slow[0], *slow[1], "no-such-chunk"]  # the sections ranking reads: the mirror's equal Milvus'
        store.in_process = False
        want_sections = store.sections(ids)
        store.in_process = True
        assert store.sections(ids) == want_sections and "no-such-chunk" not in want_sections, query
    _assert_same_rows(store)


def _assert_same_rows(store: MilvusStore, gone: Iterable[str] = ()) -> None:
    """The rows result assembly reads (every scalar field) come from the mirror's row cache equal to Milvus'
    own rows of every stored chunk, and ids that are `gone` from Milvus are gone from the cache too."""
    ids = sorted(r["id"] for r in store.iter_rows(["id"]))
    asked = [*reversed(ids), *gone, "no-such-chunk"]  # in the order asked, not the stored one
    store.in_process = False
    want = store.rows(asked)
    store.in_process = True
    mirror = store.mirror()
    assert len(want) == len(ids) > 0
    assert store.rows(asked) == want
    assert sorted(mirror.rows) == ids, "exactly the stored chunks, nothing deleted left behind"
    fields = ["source", "file_hash", "model", "embed_hash", "level", "heading"]  # the manifest's and the headings'
    engine = sorted(store.iter_rows(fields), key=lambda r: r["id"])
    assert sorted(store.scan(fields), key=lambda r: r["id"]) == [
        {"id": r["id"], **{f: r[f] for f in fields}} for r in engine
    ], "scan reads the row cache alike"


def _ties(scores: dict[str, float]) -> list[set[str]]:
    groups: list[set[str]] = []
    last = None
    for key, value in scores.items():
        if last is None or abs(value - last) > 1e-6:
            groups.append(set())
        groups[-1].add(key)
        last = value
    return groups


class GaussEmbedder(FakeEmbedder):
    """Each word a fixed pseudo-random direction: no two different texts score exactly alike."""

    def _one(self, text: str) -> list[float]:
        vec = [0.0] * self.dim
        for word in re.findall(r"\w+", text.lower()):
            rng = random.Random(word)
            vec = [v + rng.gauss(0.0, 1.0) for v in vec]
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec] if any(vec) else [1.0] + [0.0] * (self.dim - 1)


@pytest.fixture
def indexed(workspace: Path, make_memory: Callable[..., Memory]) -> Memory:
    (workspace / "memory" / "2026-01-05.md").write_text(LONG)  # a chunk with several windows
    memory = make_memory(workspace, emb=GaussEmbedder())
    memory.index()
    return memory


def test_the_local_store_searches_its_mirror_with_the_same_hits_and_scores(indexed: Memory) -> None:
    store = indexed.store
    assert store.is_local and store.in_process
    words = sorted({w for h in indexed.headings() for w in re.findall(r"[a-z]{4,}", h.heading.lower())})
    queries = QUERIES + words[:40]
    for limit in (1, 3, 10, 30, 1000):
        _assert_same(store, indexed, queries, limit)
    _assert_same(store, indexed, queries, 10, exclude="memory/2026-01-05.md")
    assert store.mirrors.current is not None and store.mirrors.current.windows.n > 0  # windows are mirrored too
    hits = indexed.search("kangaroo paddock fence ranger")
    assert hits[0].source == "memory/2026-01-05.md"
    for query in queries:  # whole results too, with or without the mirror
        store.in_process = False
        want = indexed.search(query, top_k=8)
        store.in_process = True
        got = indexed.search(query, top_k=8)
        assert [replace(h, score=0.0) for h in got] == [replace(h, score=0.0) for h in want]
        assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-5)


def test_the_mirror_follows_every_write_and_delete_without_reloading(indexed: Memory) -> None:
    store = indexed.store
    mirror = store.mirror()
    before = {r["id"] for r in store.iter_rows(["id"])}
    indexed.index_text("memory/2026-02-20.md", "# 2026-02-20\n\n## Ops\n\nrotated the kangaroo certificates\n")
    indexed.index_text("memory/2026-01-05.md", LONG.replace("kangaroo", "platypus"))
    middle = {r["id"]: r["file_hash"] for r in store.iter_rows(["file_hash"], expr='source == "memory/2026-01-05.md"')}
    indexed.index_text("memory/2026-01-05.md", LONG.replace("kangaroo", "platypus") + "\n## Later\n\nnew section\n")
    indexed.remove("memory/MEMORY.md")
    assert store.mirror() is mirror, "updated in place by the writer, not loaded again"
    after = {r["id"]: r["file_hash"] for r in store.iter_rows(["file_hash"])}
    kept = [i for i in middle if i in after]
    assert kept and all(after[i] != middle[i] for i in kept), "chunks kept as they were, rewritten with a new file hash"
    _assert_same_rows(store, gone=(before | set(middle)) - set(after))
    assert "memory/MEMORY.md" not in {h.source for h in indexed.search("deploy", top_k=50)}
    _assert_same(store, indexed, [*QUERIES, "platypus paddock", "certificates"], 10)
    indexed.index(force=True)
    _assert_same(store, indexed, QUERIES, 10)
    indexed.reset()  # a dropped collection drops the mirror with it
    assert store.mirrors.current is None and indexed.search("deploy") == []


def test_a_failed_write_drops_the_mirror_and_the_next_search_reloads_it(
    indexed: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = indexed.store
    store.mirror()

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(store.client, "upsert", broken)
    with pytest.raises(RuntimeError):
        store.upsert(
            [
                {
                    "id": "x",
                    "source": "memory/x.md",
                    "heading": "",
                    "heading_path": "",
                    "content": "x",
                    "dense": [0.0] * store.dim,
                    "sparse": {1: 1.0},
                }
            ]
        )
    assert store.mirrors.current is None
    monkeypatch.undo()
    _assert_same(store, indexed, QUERIES, 10)


def test_the_mirror_ranks_ties_by_row_order_and_compacts_deleted_rows() -> None:
    mirror = LegMirror(2)
    for n in range(3000):
        mirror.put_chunk(f"c{n}", f"s{n % 3}", [1.0, 0.0] if n % 2 else [0.0, 1.0], sparse_arrays({7: 1.0, n: 0.5}))
    assert mirror.sparse({7: 2.0}, 3) == [("c0", 2.0), ("c1", 2.0), ("c2", 2.0)]
    assert mirror.dense([1.0, 0.0], 2, 0)[0] == [("c1", 1.0), ("c3", 1.0)]
    assert mirror.dense([1.0, 0.0], 2, 0, exclude_source="s1")[0] == [("c3", 1.0), ("c5", 1.0)]
    mirror.delete_chunks(f"c{n}" for n in range(2000))
    assert mirror.chunks.n == 1000, "deleted slots are dropped once they outnumber the live ones"
    assert mirror.sparse({7: 2.0, 2500: 1.0}, 2) == [("c2500", 2.5), ("c2000", 2.0)]
    assert mirror.dense([1.0, 0.0], 1, 0)[0] == [("c2001", 1.0)]


def test_the_mirror_loads_every_row_page_by_page(indexed: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    import memsearch_lsp.core.store.mirror as mirror_module

    store = indexed.store
    monkeypatch.setattr(mirror_module, "PAGE", 7)  # many pages, the last one short or empty
    _close_without_saved_copy(store)
    mirror = store.mirror()
    assert mirror.stats()["chunks"] == store.count() and mirror.chunks.n == store.count()
    assert sorted(mirror.chunks.ids) == sorted(r["id"] for r in store.iter_rows(["id"]))
    assert mirror.windows.n == len(list(store.iter_rows(["id"], collection=store.windows_collection)))
    _assert_same(store, indexed, QUERIES, 10)


def test_the_first_searches_go_through_pymilvus_while_the_mirror_loads(indexed: Memory) -> None:
    store = indexed.store
    _close_without_saved_copy(store)
    hits = indexed.search("kangaroo paddock fence ranger")  # answered at once, the mirror loads meanwhile
    assert hits[0].source == "memory/2026-01-05.md"
    loading = store.mirrors.loading
    if loading is not None:
        loading.join()
    assert store.mirrors.current is not None
    assert indexed.search("kangaroo paddock fence ranger") == hits
    # A mirror whose load began before a write is thrown away, never installed stale.
    store.close()
    before = store.mirrors.generation
    indexed.index_text("memory/2026-02-21.md", "# 2026-02-21\n\n## Zoo\n\nthe kangaroo escaped\n")
    store.mirrors.load_in_background(store.client, before)
    assert store.mirrors.current is None
    store.mirrors.load_in_background(store.client, store.mirrors.generation)
    assert store.mirrors.current is not None
    _assert_same(store, indexed, QUERIES, 10)


def test_a_loader_that_outlives_close_never_reads_or_keeps_the_next_opening(
    indexed: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search starts the mirror loading in the background; the store is closed and opened again before
    the loader reads anything. The loader must read only its own (closed) engine and install nothing, and the
    new opening's collections stay loaded (a fresh-clone CI run once failed with "memsearch_windows is in
    state 'released'" when such a loader fetched the next opening's collection beside it)."""
    store = indexed.store
    _close_without_saved_copy(store)
    gate, asked = threading.Event(), []
    real = LiteClient.table

    def held(client: LiteClient, name: str) -> Any:
        if threading.current_thread().name == "memsearch-mirror":
            assert gate.wait(30)
            asked.append(client)
        return real(client, name)

    monkeypatch.setattr(LiteClient, "table", held)
    monkeypatch.setattr(store.mirrors, "settle", lambda *args: None)  # as when close() gives up waiting for it
    assert indexed.search("kangaroo paddock fence ranger")[0].source == "memory/2026-01-05.md"
    loader, first = store.mirrors.loading, store._client
    assert loader is not None
    store.close()
    second = store.client  # the same folder opened again, by a new engine
    gate.set()
    loader.join(30)
    assert asked and all(client is first for client in asked)
    assert store.mirrors.current is None and store.mirrors.loading is None
    for name in (store.collection, store.windows_collection):
        assert second.table(name).load_state == "loaded"
    monkeypatch.setattr(LiteClient, "table", real)
    assert indexed.search("kangaroo paddock fence ranger")[0].source == "memory/2026-01-05.md"


def test_two_threads_asking_the_engine_for_a_collection_first_get_the_same_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import milvus_lite.db

    store = MilvusStore(str(tmp_path / "index"), "memsearch", 4)
    _ = store.client  # the engine opened: the collections created (a new index creates them at its first write)
    store.close()
    db = lite.open_folder(tmp_path / "index")
    try:
        real = milvus_lite.db.load_schema

        def slow(path: str) -> Any:  # widens the engine's unlocked check-then-cache window
            time.sleep(0.05)
            return real(path)

        monkeypatch.setattr(milvus_lite.db, "load_schema", slow)
        got: list[Any] = []
        threads = [threading.Thread(target=lambda: got.append(lite.table(db, "memsearch"))) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(got) == 4 and all(col is got[0] for col in got)
    finally:
        lite.release(tmp_path / "index")
