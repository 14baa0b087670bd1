"""The search mirror saved beside a local index (core/store/snapshot.py): read at open instead of the engine,
equal to the store's own rows, and never stale, even when a process is killed between a store write and the save."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.store import lite, snapshot
from memsearch_lsp.core.store.client import LiteClient
from memsearch_lsp.core.store.milvus import MilvusStore
from tests.fakes import FakeEmbedder
from tests.helpers import LONG, ROOT, through_the_engine

QUERIES = [
    "deploy",
    "kangaroo paddock fence ranger",
    "database migration rollback",
    "budget spreadsheet finance",
    "koala wombat zoo",
    "error",
    "quarterly review",
    "platypus certificates",
]


@pytest.fixture
def indexed(workspace: Path, make_memory: Callable[..., Memory]) -> Memory:
    (workspace / "memory" / "2026-01-05.md").write_text(LONG)  # a chunk with several windows
    memory = make_memory(workspace)
    memory.index()
    return memory


def _results(memory: Memory) -> list[list[Any]]:
    return [
        [
            (h.id, h.source, h.heading, h.start_line, h.end_line, h.snippet, round(h.score, 6))
            for h in memory.search(q, top_k=10)
        ]
        for q in QUERIES
    ]


def _from_the_engine(workspace: Path) -> list[list[Any]]:
    """What a search answers with the mirror read from the store itself (no saved copy)."""
    return through_the_engine(workspace, _results)


def _state(mirror: Any) -> dict[str, Any]:
    live = mirror.chunks.live[: mirror.chunks.n]
    slots = {k: s for k, s in mirror.chunks.slot.items()}
    return {
        "rows": {k: mirror.row(k) for k in mirror.rows},
        "live": int(live.sum()),
        "vecs": {k: mirror.chunks.vecs[s].tolist() for k, s in slots.items()},
        "terms": {k: (mirror.terms[s].tolist(), mirror.weights[s].tolist()) for k, s in slots.items()},
        "windows": {k: (mirror.owner[s], mirror.windows.vecs[s].tolist()) for k, s in mirror.windows.slot.items()},
    }


def test_a_reopened_index_reads_its_mirror_from_disk_equal_to_the_store(
    indexed: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    indexed.index_text("memory/2026-02-20.md", "# 2026-02-20\n\n## Ops\n\nrotated the platypus certificates\n")
    indexed.remove("memory/MEMORY.md")  # deleted slots are saved as such
    store = indexed.store
    want_results, want_state = _results(indexed), _state(store.mirror())
    indexed.close()

    again = Memory(indexed.root, embedder=FakeEmbedder())
    try:

        def no_engine_read(*args: object, **kwargs: object) -> Any:
            raise AssertionError("read the engine although the saved mirror is valid")

        store = again.store
        store.open()  # the mirror comes from disk, before any search
        assert store.mirrors.current is not None and store.mirrors.loading is None
        with monkeypatch.context() as patched:
            patched.setattr(MilvusStore, "iter_rows", no_engine_read)  # the manifest comes from the row cache
            patched.setattr(MilvusStore, "_read_mirror", no_engine_read)
            assert _results(again) == want_results
            assert store.mirrors.loading is None, "no background load"
            assert _state(store.mirror()) == want_state
            assert again.status()["chunks"] == len(want_state["rows"])
        # Written after opening from disk (copy-on-write arrays), then searched and saved again.
        again.index_text("memory/2026-02-21.md", "# 2026-02-21\n\n## Zoo\n\nthe kangaroo escaped the paddock\n")
        after = _results(again)
    finally:
        again.close()
    assert after == _from_the_engine(indexed.root)


def test_the_first_search_after_a_full_index_finds_the_mirror_loaded(
    workspace: Path, make_memory: Callable[..., Memory]
) -> None:
    memory = make_memory(workspace)
    memory.index()
    store = memory.store
    assert store.mirrors.current is not None, "a new index keeps its mirror from the first write"
    assert memory.search("deploy") and store.mirrors.loading is None
    assert (Path(store.uri) / snapshot.FOLDER / snapshot.META).is_file(), "saved after the full index"


def test_a_saved_mirror_of_another_layout_or_damaged_is_not_read(
    indexed: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    store = indexed.store
    want = _results(indexed)
    indexed.close()
    uri, names = store.uri, (store.collection, store.windows_collection)
    from memsearch_lsp.core.store.schema import SCALARS

    gen = json.loads((Path(uri) / snapshot.FOLDER / snapshot.META).read_text())["generation"]
    assert snapshot.load(uri, store.dim, SCALARS, names, gen) is not None
    assert snapshot.load(uri, store.dim + 1, SCALARS, names, gen) is None, "another dimension"
    assert snapshot.load(uri, store.dim, ("heading_path",), names, gen) is None, "other fields"
    assert snapshot.load(uri, store.dim, SCALARS, names, [gen[0] + 1, gen[1]]) is None, "another generation"
    assert snapshot.load(uri, store.dim, SCALARS, names, [None, gen[1]]) is None, "an engine that does not say"
    vecs = Path(uri) / snapshot.FOLDER / "chunk_vecs.npy"
    np.save(vecs, np.zeros((1, store.dim), dtype=np.float32))  # fewer rows than meta.json says
    with caplog.at_level(logging.WARNING):
        assert snapshot.load(uri, store.dim, SCALARS, names, gen) is None
    assert "cannot be read" in caplog.text
    again = Memory(indexed.root, embedder=FakeEmbedder())
    try:
        assert again.store.client is not None and again.store.mirrors.current is None, "read from the store instead"
        again.store.mirror()
        assert _results(again) == want
    finally:
        again.close()


CHILD = """
import os, signal, sys
sys.path.insert(0, {root!r})
from tests.fakes import FakeEmbedder
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.store import lite, snapshot

memory = Memory(sys.argv[1], embedder=FakeEmbedder())
memory.search("deploy")  # the mirror is read from its saved copy
assert memory.store.mirrors.current is not None
if sys.argv[2] == "during-save":  # killed half-way through writing the saved copy
    real, done = snapshot._replace, []
    def replace(path, write):
        if len(done) == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        done.append(path)
        real(path, write)
    snapshot._replace = replace
memory.index_text("memory/2026-02-20.md", "# 2026-02-20\\n\\n## Ops\\n\\nrotated the platypus certificates\\n")
memory.remove("memory/MEMORY.md")
if sys.argv[2] == "during-save":
    memory.store.mirrors.save(force=True)
os.kill(os.getpid(), signal.SIGKILL)  # after the store write, before the save
"""


@pytest.mark.parametrize("when", ["after-write", "during-save"])
def test_a_process_killed_between_the_store_write_and_the_save_never_serves_stale_rows(
    indexed: Memory, when: str
) -> None:
    before = _results(indexed)
    meta = Path(indexed.store.uri) / snapshot.FOLDER / snapshot.META
    indexed.close()
    assert meta.is_file()
    code = textwrap.dedent(CHILD).format(root=str(ROOT))
    child = subprocess.run(
        [sys.executable, "-c", code, str(indexed.root), when], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert not meta.exists(), "the saved copy was invalidated before the store changed"

    again = Memory(indexed.root, embedder=FakeEmbedder())
    try:
        again.store.open()
        assert again.store.mirrors.current is None, "no saved copy to read: the mirror is read from the store"
        again.store.mirror()  # (not loading in the background: Milvus' own legs order ties otherwise)
        got = _results(again)
        hits = again.search("platypus certificates")
        assert hits and hits[0].source == "memory/2026-02-20.md", "the killed process's write is found"
        assert "memory/MEMORY.md" not in {h.source for q in QUERIES for h in again.search(q, top_k=50)}
    finally:
        again.close()
    assert got != before
    assert got == _from_the_engine(indexed.root)


def test_a_saved_mirror_that_a_process_not_knowing_it_wrote_past_is_not_read(indexed: Memory) -> None:
    """A write by a process that does not invalidate the saved copy (an older memsearch-lsp, or Milvus Lite
    opened by hand) moves the store's write sequence past the one `meta.json` names: the copy is not read."""
    store = indexed.store
    uri, collection = store.uri, store.collection
    gone = next(iter(store.rows([r["id"] for r in store.iter_rows(["id"])][:1])))
    indexed.close()
    meta = Path(uri) / snapshot.FOLDER / snapshot.META
    assert meta.is_file()
    client = LiteClient(uri)
    try:
        client.delete(collection, ids=[gone.id])
        client.flush(collection)
    finally:
        client.close()
        lite.release(uri)
    assert meta.is_file(), "left as it was: only the store's generation tells"
    again = Memory(indexed.root, embedder=FakeEmbedder())
    try:
        again.store.open()
        assert again.store.mirrors.current is None, "not read: the store moved on"
        mirror = again.store.mirror()
        assert gone.id not in mirror.rows and mirror.rows
    finally:
        again.close()
    reopened = Memory(indexed.root, embedder=FakeEmbedder())
    try:
        reopened.store.open()
        assert reopened.store.mirrors.current is not None, "saved again after the read, and read at the next opening"
        assert gone.id not in reopened.store.mirrors.current.rows
    finally:
        reopened.close()
