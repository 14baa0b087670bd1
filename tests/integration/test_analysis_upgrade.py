"""An index whose BM25 weights another analysis made (an index of a version before issue 36, another
search.language) is upgraded by the next pass (a server start runs one): every row's sparse vector rewritten from its
text, nothing embedded again (the vectors come from the store by embed_hash). Real Milvus Lite in tmp_path, the fake
embedder."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from memsearch_lsp.core.chunks import CHUNKING
from memsearch_lsp.core.search import analyzer as analysis
from memsearch_lsp.core.search.bm25 import doc_vector, query_ids
from tests.fakes import FakeEmbedder

NOTES = {
    "memory/2026-03-02.md": "# 2026-03-02\n\n## Clínicas\n\nAs clínicas de Lisboa já recebem lembretes por WhatsApp.\n",
    "memory/2026-03-03.md": "# 2026-03-03\n\n## 预约\n\n我们把预约系统的短信提醒换成了WhatsApp。\n",
    "memory/MEMORY.md": "# Memory\n\n## Redis\n\nCaching sessions in Redis with a TTL of one hour.\n",
}


class BeforeIssue36(analysis.Analyzer):
    """The analysis of an index written before issue 36 (lower-cased words, English stems)."""

    def tokens(self, text: str) -> list[str]:
        return [analysis.stem(w, "en") for w in re.findall(r"\w+", text.lower()) if len(w) < 64]


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    for source, text in NOTES.items():
        (ws / source).parent.mkdir(parents=True, exist_ok=True)
        (ws / source).write_text(text, encoding="utf-8")
    return ws


def search_bm25(memory, query: str) -> list[str]:
    return [h.source for h in memory.search(query, vector_weight=0.0, min_score=0.0, top_k=3)]


def old_index(notes: Path, make_memory, monkeypatch) -> None:
    """Index `notes` as a version before issue 36 did: its weights, and no record of their analysis."""
    monkeypatch.setattr("memsearch_lsp.core.index.Analyzer", BeforeIssue36)
    old = make_memory(notes)
    old.index()
    assert "memory/2026-03-03.md" not in search_bm25(old, "提醒")  # a Chinese line was one word: never met
    old.close()
    monkeypatch.undo()
    for record in (notes / ".memsearch").glob("analysis-*.txt"):
        record.unlink()


def test_an_index_of_the_old_analysis_is_upgraded_by_the_next_pass_without_embedding(
    notes: Path, tmp_path: Path, make_memory, embedder: FakeEmbedder, monkeypatch
) -> None:
    old_index(notes, make_memory, monkeypatch)
    embedded = embedder.embedded
    memory = make_memory(notes)
    stats = memory.index()
    assert embedder.embedded == embedded and stats.chunks_embedded == 0 and stats.chunks_reused == stats.chunks_total
    assert search_bm25(memory, "提醒")[0] == "memory/2026-03-03.md"
    assert search_bm25(memory, "clinicas lembretes")[0] == "memory/2026-03-02.md"
    record = next((notes / ".memsearch").glob("analysis-*.txt"))
    assert record.read_text().strip() == f"{analysis.Analyzer().name} chunks-{CHUNKING}" == memory.indexer.written_by
    # the store ranks as a clean build of the same notes does (same weights, same statistics)
    clean_ws = tmp_path / "clean"
    shutil.copytree(notes / "memory", clean_ws / "memory")
    clean = make_memory(clean_ws, FakeEmbedder())
    clean.index()
    for query in ("提醒", "clinicas lembretes", "Redis caching TTL"):
        terms = query_ids(query)
        assert memory.store.idf(terms) == pytest.approx(clean.store.idf(terms))
        got = memory.store.sparse_leg(memory.store.idf(terms), 10)
        want = clean.store.sparse_leg(clean.store.idf(terms), 10)
        assert sorted(got.values()) == pytest.approx(sorted(want.values()), rel=1e-5)
    memory.close()

    again = make_memory(notes)  # upgraded once: the next pass has nothing to do
    assert again.index().files_modified == 0 and not again.indexer.analysis_stale()


def test_an_upgrade_cut_short_is_done_again_by_the_next_pass(
    notes: Path, make_memory, embedder: FakeEmbedder, monkeypatch
) -> None:
    old_index(notes, make_memory, monkeypatch)
    from memsearch_lsp.core.index import Indexer

    def crash(self: Indexer) -> None:
        raise KeyboardInterrupt  # the process dies after writing the rows, before recording their analysis

    monkeypatch.setattr(Indexer, "_analysis_done", crash)
    crashed = make_memory(notes)
    with pytest.raises(KeyboardInterrupt):
        crashed.index()
    crashed.close()
    monkeypatch.undo()
    memory = make_memory(notes)
    assert memory.indexer.analysis_stale()
    assert memory.index().chunks_embedded == 0 and not memory.indexer.analysis_stale()


def test_changing_search_language_rewrites_the_weights(notes: Path, make_memory, embedder: FakeEmbedder) -> None:
    memory = make_memory(notes)
    memory.index()
    embedded = embedder.embedded
    memory.close()
    portuguese = make_memory(notes, search={"language": "pt"})
    assert portuguese.indexer.analysis_stale()
    stats = portuguese.index()
    assert stats.chunks_embedded == 0 and embedder.embedded == embedded and stats.files_modified == len(NOTES)
    pt = analysis.Analyzer("pt")
    text = NOTES["memory/MEMORY.md"].split("\n\n", 1)[1]  # "## Redis\n\nCaching ..." as Portuguese
    assert doc_vector(text, pt) != doc_vector(text)  # the setting changes these weights
    assert search_bm25(portuguese, "caching")[0] == "memory/MEMORY.md"
    assert (next((notes / ".memsearch").glob("analysis-*.txt"))).read_text().strip() == f"{pt.name} chunks-{CHUNKING}"


def test_an_index_begun_by_one_note_records_its_analysis(tmp_path: Path, make_memory) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    memory = make_memory(ws)
    memory.remember("We chose Postgres 16 for the billing service.")  # the index's first rows: no pass ran
    assert not memory.indexer.analysis_stale()
    assert next((ws / ".memsearch").glob("analysis-*.txt")).read_text().strip() == memory.indexer.written_by
    assert memory.index().files_modified == 0  # so the next pass rewrites nothing


def one_note_index(tmp_path: Path, make_memory, section: str) -> tuple[Any, Path]:
    """A workspace whose one log holds `section`, indexed: its memory and the record of its analysis."""
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-03-01.md").write_text(f"# 2026-03-01\n\n{section}")
    memory = make_memory(ws)
    memory.index()
    return memory, next((ws / ".memsearch").glob("analysis-*.txt"))


def test_an_index_of_an_older_chunking_is_rewritten_once(tmp_path: Path, make_memory) -> None:
    """The record names the chunking too: rows chunked another way (a heading once alone in its chunk) are
    rewritten by the next pass, their vectors reused where the text is the same."""
    memory, record = one_note_index(tmp_path, make_memory, "## Note\n\nPostgres 16 for billing.\n")
    record.write_text(analysis.Analyzer().name + "\n")  # as written before the chunking had a version
    assert memory.indexer.analysis_stale()
    stats = memory.index()
    assert stats.files_modified == 1 and stats.chunks_embedded == 0
    assert record.read_text().strip() == memory.indexer.written_by and not memory.indexer.analysis_stale()


@pytest.mark.parametrize("damage", [b"\xff\xfe garbage", b"", "link"])
def test_a_damaged_analysis_record_is_rewritten_never_an_error(tmp_path: Path, make_memory, damage) -> None:
    """The record is a cache too: bytes that are no text, an empty file or a link (never followed) mean "unknown",
    so the next pass rewrites the weights (nothing embedded) and records the analysis again; search never fails."""
    memory, record = one_note_index(tmp_path, make_memory, "## Broker\n\nWe chose Kafka over RabbitMQ.\n")
    record.unlink()
    outside = tmp_path / "outside.txt"
    outside.write_text(memory.indexer.written_by + "\n")
    if damage == "link":
        record.symlink_to(outside)
    else:
        record.write_bytes(damage)
    assert memory.indexer.analysis_stale()
    assert [h.source for h in memory.search("Kafka", min_score=0.0)] == ["memory/2026-03-01.md"]
    assert memory.index().chunks_embedded == 0
    assert not record.is_symlink() and record.read_text().strip() == memory.indexer.written_by
    assert outside.read_text().strip() == memory.indexer.written_by  # (untouched)


def test_an_index_of_chunking_2_is_rechunked_without_the_byte_order_mark(tmp_path: Path, make_memory) -> None:
    """(audit R, 7) chunking 2 kept a file's byte order mark when the file also held a byte that is not UTF-8: its
    first heading was '\\ufeff# Café notes' in every row below it. Chunking 3 leaves it out, and an index that
    chunking 2 wrote is rewritten by the next pass (its files unchanged, so read only for this)."""
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "bom.md").write_bytes(b"\xef\xbb\xbf# Caf\xe9 notes\n\ntoucans\n\n## Second\n\nmore toucans\n")
    memory = make_memory(ws)
    memory.index()
    record = next((ws / ".memsearch").glob("analysis-*.txt"))
    record.write_text(f"{analysis.Analyzer().name} chunks-2\n")  # as chunking 2 wrote it
    assert memory.indexer.analysis_stale()
    stats = memory.index()
    assert stats.files_modified == 1 and stats.chunks_embedded == 0 and not memory.indexer.analysis_stale()
    rows = memory.store.rows([h.id for h in memory.headings()])
    assert [(r.heading, r.heading_path, r.content.split("\n")[0]) for r in rows] == [
        ("Caf\ufffd notes", "Caf\ufffd notes", "# Caf\ufffd notes"),
        ("Second", "Caf\ufffd notes > Second", "## Second"),
    ]
