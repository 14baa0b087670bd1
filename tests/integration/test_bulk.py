"""A large index pass in a child process (core/process/bulk.py): the owner lets the index go, a real child
(`python -m memsearch_lsp.core.process.bulk`, the bundled model) indexes it, and the owner takes it back from
the saved state without opening the engine; what changed meanwhile and unsaved buffers are indexed here; a child
that fails or is killed mid-pass leaves the pass to this process, and the index whole."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memsearch_lsp.core.index import HandOver, IndexStats
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.process import bulk
from memsearch_lsp.core.store import lite, snapshot
from memsearch_lsp.core.store.milvus import IndexBusy
from tests.fakes import FakeEmbedder

QUERIES = ["redis ttl", "deploy the database", "kangaroo paddock fence ranger"]
AT = 1000  # characters: the example memory (~6k) is a large pass at this threshold


@pytest.fixture
def memory(workspace: Path) -> Iterator[Memory]:
    """The workspace's Memory with the embedder its settings name (the bundled model), holding the index."""
    memory = Memory(workspace)
    memory.claim()
    yield memory
    memory.close()


@pytest.fixture
def children(monkeypatch: pytest.MonkeyPatch) -> list[subprocess.Popen[str]]:
    """Every child process bulk starts."""
    started: list[subprocess.Popen[str]] = []
    real = subprocess.Popen

    def spy(command: Any, *args: Any, **kwargs: Any) -> subprocess.Popen[str]:
        child = real(command, *args, **kwargs)
        if command is bulk.CHILD:  # (not ctypes' ldconfig)
            started.append(child)
        return child

    monkeypatch.setattr(bulk.subprocess, "Popen", spy)
    return started


def _results(memory: Memory) -> list[list[tuple[str, str, int]]]:
    return [[(h.id, h.source, h.start_line) for h in memory.search(q, top_k=5)] for q in QUERIES]


def _expected(workspace: Path, tmp_path: Path) -> IndexStats:
    """The totals of an in-process pass over a copy of the workspace."""
    copy = tmp_path / "copy"
    shutil.copytree(workspace / "memory", copy / "memory")
    reference = Memory(copy, embedder=FakeEmbedder())
    try:
        return reference.index()
    finally:
        reference.close()


def _through_the_engine(memory: Memory) -> list[list[tuple[str, str, int]]]:
    """The same searches by another Memory reading the index's own rows (no saved copy)."""
    uri, embedder = memory.store.uri, memory.embedder
    memory.close()
    snapshot.invalidate(uri)
    again = Memory(memory.root, embedder=embedder)
    try:
        _ = again.store.client  # the engine opened, the mirror read from it
        return _results(again)
    finally:
        again.close()


def test_a_large_pass_runs_in_a_child_and_the_owner_takes_the_index_back_without_its_engine(
    memory: Memory, workspace: Path, tmp_path: Path, children: list[subprocess.Popen[str]]
) -> None:
    reports: list[tuple[int, int, str]] = []
    stats = bulk.index(memory, progress=lambda *a: reports.append(a), at=AT)
    expected = _expected(workspace, tmp_path)
    assert len(children) == 1 and children[0].returncode == 0
    assert (stats.files_added, stats.files_total, stats.chunks_total) == (
        expected.files_added,
        expected.files_total,
        expected.chunks_total,
    )
    assert stats.chunks_embedded > 0 and reports and reports[-1][0] == reports[-1][1]
    assert not memory.store.engine_open and not lite.engine_open(memory.store.uri), (
        "taken back from the child's saved state: this process never opened the engine"
    )
    got = _results(memory)
    assert all(got) and got == _through_the_engine(memory)


def test_a_pass_smaller_than_the_threshold_runs_here(memory: Memory, children: list[subprocess.Popen[str]]) -> None:
    stats = bulk.index(memory, at=10**9)
    assert not children and stats.files_added > 0
    assert bulk.index(memory, at=AT).changed is False and not children, "nothing to write: nothing handed over"


def test_an_injected_embedder_or_a_server_index_never_goes_to_a_child(
    workspace: Path, children: list[subprocess.Popen[str]]
) -> None:
    memory = Memory(workspace, embedder=FakeEmbedder())  # a child could not embed as it does
    try:
        assert bulk.index(memory, at=AT).files_added > 0 and not children
    finally:
        memory.close()


def test_the_indexer_hands_over_before_writing_anything(memory: Memory) -> None:
    with pytest.raises(HandOver) as raised:
        memory.index(hand_over=AT)
    assert raised.value.files == len([p for p in (memory.root / "memory").rglob("*.md")])
    assert memory.indexer.manifest() == {} and not memory.store.engine_open, "nothing was written"


def test_unsaved_buffers_and_files_changed_meanwhile_are_indexed_here(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = "memory/MEMORY.md"
    buffer = (memory.root / source).read_text() + "\n## Unsaved\n\nThe wombat feeding roster lives in the buffer.\n"
    memory.indexer.overlays[source] = buffer
    real = bulk.run_child

    def then_an_agent_writes(*args: Any) -> IndexStats:
        done = real(*args)
        (memory.root / "memory" / "2026-03-01.md").write_text("# 2026-03-01\n\n## Koalas\n\nThe koala census is due.\n")
        return done

    monkeypatch.setattr(bulk, "run_child", then_an_agent_writes)
    stats = bulk.index(memory, at=AT)
    assert memory.has_overlay(source), "the buffer is still the truth for its file"
    assert memory.is_indexed("memory/2026-03-01.md")
    assert stats.files_added == len(list((memory.root / "memory").rglob("*.md")))
    assert stats.files_modified == 1, "the buffer's file: the child indexed the disk's text"
    assert memory.search("wombat feeding roster", top_k=1)[0].source == source
    assert memory.search("koala census", top_k=1)[0].source == "memory/2026-03-01.md"


def test_a_child_that_fails_leaves_the_pass_to_this_process(
    memory: Memory, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(bulk, "CHILD", [sys.executable, "-c", "import sys; sys.stdin.readline(); sys.exit(5)"])
    with caplog.at_level(logging.WARNING, logger=bulk.__name__):
        stats = bulk.index(memory, at=AT)
    assert "exit status 5" in caplog.text and "indexing in this process" in caplog.text
    assert stats.chunks_total == _expected(workspace, tmp_path).chunks_total and all(_results(memory))


def test_a_child_killed_mid_pass_leaves_a_whole_index(
    memory: Memory, workspace: Path, tmp_path: Path, children: list[subprocess.Popen[str]]
) -> None:
    """kill -9 after the child wrote its rows, before it saved and let go: this process indexes, and the index
    (read through its engine: the saved state was never written) holds every file once."""

    def kill(done: int, total: int, message: str) -> None:
        if children and children[0].poll() is None:
            os.kill(children[0].pid, signal.SIGKILL)

    stats = bulk.index(memory, progress=kill, at=AT)
    assert children[0].wait() == -signal.SIGKILL
    expected = _expected(workspace, tmp_path)
    assert (stats.files_total, stats.chunks_total) == (expected.files_total, expected.chunks_total)
    manifest = memory.indexer.manifest()
    assert sum(len(s.ids) for s in manifest.values()) == expected.chunks_total
    assert all(_results(memory)) and _results(memory) == _through_the_engine(memory)


def test_while_the_child_indexes_searches_wait_and_the_outline_answers_at_once(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor's document symbols (`outline`, on the server's event loop) never wait for the pass; a search
    (on a worker thread) waits for the index to be taken back, then finds what the child wrote."""
    import memsearch_lsp.core.memory as memory_module

    monkeypatch.setattr(memory_module, "HANDOVER_WAIT_S", 120.0)  # a busy machine: the child may take a while
    real = bulk.run_child
    found: dict[str, Any] = {}

    def while_it_runs(*args: Any) -> IndexStats:
        outline = threading.Thread(target=lambda: found.update(outline=memory.outline("memory/x.md", "# A\n\nb\n")))
        search = threading.Thread(target=lambda: found.update(search=memory.search("redis ttl")))
        outline.start()
        search.start()
        outline.join(10)
        assert "outline" in found, "the outline waited for the pass"
        search.join(0.5)
        assert search.is_alive() and "search" not in found, "the search did not wait for the index"
        found["thread"] = search
        return real(*args)

    monkeypatch.setattr(bulk, "run_child", while_it_runs)
    bulk.index(memory, at=AT)
    found["thread"].join(30)
    assert [c.heading for c in found["outline"]] == ["A"]
    assert found["search"] and found["search"][0].source == "memory/MEMORY.md"


def test_a_read_waits_a_bounded_time_for_a_long_pass_then_says_the_index_is_being_built(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memsearch_lsp.core.memory as memory_module

    monkeypatch.setattr(memory_module, "HANDOVER_WAIT_S", 0.2)
    real = bulk.run_child
    seen: list[BaseException] = []

    def slow(*args: Any) -> IndexStats:  # a long pass: another thread's search gives up first
        reader = threading.Thread(target=lambda: _catch(seen, lambda: memory.search("redis ttl")))
        reader.start()
        reader.join(10)
        return real(*args)

    monkeypatch.setattr(bulk, "run_child", slow)
    bulk.index(memory, at=AT)
    assert len(seen) == 1 and isinstance(seen[0], IndexBusy)
    assert "being built in a child process" in str(seen[0])
    assert memory.search("redis ttl"), "once the pass is over, searches answer"


def _catch(seen: list[BaseException], call: Any) -> None:
    try:
        call()
    except BaseException as exc:  # recorded for the test
        seen.append(exc)


HOLDER = """
import fcntl, os, sys
fd = os.open(os.path.join(sys.argv[1], "LOCK"), os.O_RDWR)
try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("taken")
except OSError:
    print("held")
"""


def test_the_folder_is_never_free_while_it_is_lent_to_the_child(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lock passes to the child with the descriptor that holds it: another process (a CLI that would find the
    owner gone, a bare Milvus Lite) cannot take the folder before the child starts, while it runs, or after it."""
    real = bulk.run_child
    uri = memory.uri
    tries: list[str] = []

    def probe() -> None:
        tries.append(
            subprocess.run(
                [sys.executable, "-c", HOLDER, uri], capture_output=True, text=True, check=True
            ).stdout.strip()
        )

    def around(*args: Any) -> IndexStats:
        probe()  # lent, the child not started yet
        done = real(*args)
        probe()  # the child gone, not taken back yet
        return done

    monkeypatch.setattr(bulk, "run_child", around)
    stats = bulk.index(memory, at=AT)
    probe()
    assert tries == ["held", "held", "held"] and stats.files_added > 0
    assert not lite.engine_open(uri) and uri in lite.opened()
