"""remember while an index pass holds the index (a first index of a large memory takes minutes): the note is written
and answered within the bound, said `indexing`, and the pass indexes it before it ends, whether it had read the
note's file already or never listed it."""

from __future__ import annotations

import datetime as dt
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from memsearch_lsp.core.memory import Memory
from tests.fakes import GatedEmbedder

TODAY, TOMORROW = dt.datetime(2026, 12, 3, 9, 5), dt.datetime(2026, 12, 4, 9, 5)


def test_a_note_written_during_a_pass_is_answered_at_once_and_indexed_by_that_pass(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(audit Z4) remember waited for the indexer's lock, which a first index holds for the whole pass: no answer
    for minutes, though the note was in the file."""
    monkeypatch.setattr("memsearch_lsp.core.passes.PASS_WAIT_S", 1.0)
    read = workspace / "memory" / "2026-12-03.md"  # read by the pass before the note joins it
    read.write_text("# 2026-12-03\n\n## 08:00\n\nStandup moved to ten.\n")
    embedder = GatedEmbedder()
    memory = Memory(workspace, embedder=embedder)
    passing, pool = threading.Thread(target=memory.index), ThreadPoolExecutor(1)  # (failing in time, not at the end)
    try:
        passing.start()
        assert embedder.waiting.wait(30), "the pass never embedded"
        begin = time.monotonic()
        joined = pool.submit(memory.remember, "We chose Postgres 16 for billing.", now=TODAY).result(timeout=15)
        new = pool.submit(memory.remember, "Kafka retries back off.", now=TOMORROW).result(timeout=15)
        assert time.monotonic() - begin < 10  # 1 s for the first; none for the second (the pass is known long)
        assert passing.is_alive() and not memory.is_indexed(new.source)
        for note, words in ((joined, "Postgres 16"), (new, "Kafka retries")):
            data = note.to_dict()
            assert data["indexing"] is True and "not indexed" not in str(note.stats.warnings)
            text = (workspace / note.source).read_text()
            assert words in text  # written
            first = next(c for c in memory.outline(note.source, text) if c.start_line == data["start_line"])
            assert data["id"] == first.id and words in first.content  # the id its text makes
            assert "searchable once" in str(note)
    finally:
        embedder.opened.set()
        passing.join(60)
        pool.shutdown()
    try:
        for note, query in ((joined, "Postgres billing"), (new, "Kafka retries")):
            assert memory.store.get(note.to_dict()["id"]) is not None  # by that pass: no other ran since
            assert memory.search(query, top_k=1)[0].id == note.to_dict()["id"]
        again = memory.remember("Ana reviews in the morning.", now=TODAY)  # no pass: indexed at once, as before
        assert "indexing" not in again.to_dict() and memory.store.get(again.to_dict()["id"]) is not None
    finally:
        memory.close()
