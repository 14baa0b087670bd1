"""The indexer reports its progress steadily, in chunks, while the embedder works (not once per group of files):
what the CLI's bar, the bulk child and the language server's `$/progress` show."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from memsearch_lsp.core import progress
from memsearch_lsp.core.memory import Memory
from tests.fakes import FakeEmbedder


class SlowEmbedder(FakeEmbedder):
    """Takes its time per text, as a real model does."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        time.sleep(0.002 * len(texts))
        return super().embed(texts)


class BatchReporting(SlowEmbedder):
    """An embedder that says how far it got after each batch of 8 texts (as the bundled model does)."""

    def embed_reporting(self, texts: Sequence[str], done: Callable[[int], None]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), 8):
            vectors += self.embed(texts[start : start + 8])
            done(len(vectors))
        return vectors


def notes(ws: Path, count: int) -> None:
    (ws / "memory").mkdir(parents=True)
    for n in range(count):
        (ws / "memory" / f"note-{n:03d}.md").write_text(f"## Note {n}\n\nkafka retention item {n} step {n % 7}\n")


@pytest.mark.parametrize("embedder", [SlowEmbedder, BatchReporting])
def test_reports_come_steadily_in_chunks_within_one_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: type[FakeEmbedder]
) -> None:
    monkeypatch.setattr(progress, "REPORT_S", 0.02)
    notes(tmp_path, 300)  # fewer chunks than one group (index.GROUP_CHUNKS): once, it was one report at the end
    reports: list[tuple[int, int, str]] = []
    with Memory(tmp_path, embedder=embedder()) as memory:
        stats = memory.index(progress=lambda *a: reports.append(a))
    assert stats.chunks_total == 300
    assert len(reports) >= 5, reports
    assert reports[0] == (0, 300, "0/300 chunks") and reports[-1] == (300, 300, "300/300 chunks")
    done = [d for d, _, _ in reports]
    assert done == sorted(done) and len(set(done)) >= 5
    assert all(total == 300 and message == f"{d}/300 chunks" for d, total, message in reports)


def test_chunks_found_in_the_store_count_at_once_and_nothing_to_do_says_nothing(tmp_path: Path) -> None:
    notes(tmp_path, 20)
    with Memory(tmp_path, embedder=FakeEmbedder()) as memory:
        memory.index()
        reports: list[tuple[int, int, str]] = []
        memory.index(progress=lambda *a: reports.append(a))
        assert reports == []  # nothing changed: no bar, no `$/progress` report
        memory.index(force=True, progress=lambda *a: reports.append(a))
    assert reports[-1] == (20, 20, "20/20 chunks") and all(total == 20 for _, total, _ in reports)
