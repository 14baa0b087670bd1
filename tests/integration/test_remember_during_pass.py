"""remember while an index pass holds the index (a first index of a large memory takes minutes): the note is written
and answered within the bound, said `indexing`, and the pass indexes it before it ends, whether it had read the
note's file already or never listed it; beside an owner in its first pass, the CLI's remember and search answer too."""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from memsearch_lsp.core.memory import Memory
from tests.fakes import GatedEmbedder
from tests.helpers import cli, owner_process, wait_until

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


# an owner (the fake embedder at a gate) serving `sys.argv[1]`'s index during its first pass; a line opens the gate
SLOW_OWNER = """
import sys, threading
import memsearch_lsp.core.passes
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.process.owner import OwnerServer
from tests.fakes import GatedEmbedder
memsearch_lsp.core.passes.PASS_WAIT_S = 1.0
embedder = GatedEmbedder()
memory = Memory(sys.argv[1], embedder=embedder)
OwnerServer(memory, "a test owner").start()
threading.Thread(target=memory.index, daemon=True).start()
embedder.waiting.wait(60)
print("ready", flush=True)
sys.stdin.readline()
embedder.opened.set()
sys.stdin.read()
"""


def test_the_cli_beside_an_owner_in_its_first_pass_remembers_and_searches_within_the_bound(workspace: Path) -> None:
    """(audit Z4) beside an editor's first index, `remember` and `search` (the Stop hook, scripts) gave no answer in
    60 s: the owner's remember and index waited for its pass."""
    with owner_process(workspace, SLOW_OWNER) as owner:
        assert owner.stdin is not None
        begin = time.monotonic()
        said = cli(workspace, "remember", "We chose Postgres 16 for billing.", "--json", timeout=60)
        assert said.returncode == 0, said.stderr
        assert time.monotonic() - begin < 30
        note = json.loads(said.stdout)
        assert note["indexing"] is True and "Postgres 16" in (workspace / note["source"]).read_text()
        begin = time.monotonic()
        found = cli(workspace, "search", "Redis cache", "--json", timeout=60)  # waits 10 s for the pass, no more
        assert found.returncode == 0 and "still indexing after 10s" in found.stderr, found.stderr
        assert time.monotonic() - begin < 40 and isinstance(json.loads(found.stdout)["hits"], list)
        owner.stdin.write("open\n")
        owner.stdin.flush()

        def searched() -> bool:
            hits = json.loads(cli(workspace, "search", "Postgres billing", "--json", timeout=60).stdout)["hits"]
            return bool(hits) and hits[0]["id"] == note["id"]

        wait_until(searched, "the note indexed by the owner's pass", timeout=90, every=1.0)
