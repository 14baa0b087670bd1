"""Ranking: fusion of the two legs (pure), query stop words, dense windows end to end on Milvus Lite."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from memsearch_lsp.core.chunks import WINDOW_CHARS, chunk_markdown, windows
from memsearch_lsp.core.embedding.base import query_vector
from memsearch_lsp.core.search.bm25 import DfTable, query_terms, tokens
from memsearch_lsp.core.search.rank import (
    BM25_GAIN,
    DENSE_GAIN,
    SECTION_SHARE,
    confidence,
    fuse,
    minmax,
    ranks,
    share_sections,
)
from tests.fakes import FakeEmbedder
from tests.helpers import LONG, long_workspace


def test_minmax_rescales_each_leg_over_its_candidates() -> None:
    assert minmax({"a": 3.0, "b": 2.0, "c": 1.0}) == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert minmax({"a": 0.7, "b": 0.7}) == {"a": 1.0, "b": 1.0}
    assert minmax({}) == {}
    assert ranks({"x": 0.1, "y": 0.9, "z": 0.5}) == {"y": 1, "z": 2, "x": 3}


def test_minmax_keeps_the_bm25_margin_the_weighted_ranker_squashes() -> None:
    # Dense prefers "a" a little; BM25 is sure about "c".
    dense = {"a": 0.60, "b": 0.58, "c": 0.50}
    sparse = {"c": 24.0, "a": 3.0, "b": 2.5}
    fused = fuse(dense, sparse, "minmax", 0.3, 0.7)
    assert [k for k, _ in fused] == ["c", "a", "b"]
    # dense 0 (worst of its candidates) + BM25 1, each weight grown by its leg's confidence, then
    # rescaled to sum to 1
    dense_weight = 0.3 * (1 + DENSE_GAIN * confidence(dense))
    sparse_weight = 0.7 * (1 + BM25_GAIN * confidence(sparse))
    assert fused[0][1] == pytest.approx(sparse_weight / (dense_weight + sparse_weight))
    # Milvus' weighted ranker at the seed's 0.7 / 0.3: atan squashes 24 and 3 to nearly the same.
    seed = fuse(dense, sparse, "weighted", 0.7, 0.3)
    assert seed[0][0] == "a"


def test_weighted_is_exactly_milvus_weighted_ranker() -> None:
    dense = {"a": 0.8, "b": 0.2}
    sparse = {"b": 5.0, "c": 1.0}
    got = dict(fuse(dense, sparse, "weighted", 0.7, 0.3))
    assert got["a"] == pytest.approx(0.7 * (1 + 0.8) / 2)  # missing from BM25: that leg adds 0
    assert got["b"] == pytest.approx(0.7 * (1 + 0.2) / 2 + 0.3 * (0.5 + math.atan(5.0) / math.pi))
    assert got["c"] == pytest.approx(0.3 * (0.5 + math.atan(1.0) / math.pi))


def test_rrf_sums_reciprocal_ranks() -> None:
    got = dict(fuse({"a": 0.9, "b": 0.5}, {"b": 7.0, "c": 1.0}, "rrf", rrf_k=60))
    assert got["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert got["a"] == pytest.approx(1 / 61) and got["c"] == pytest.approx(1 / 62)


def test_a_candidate_missing_from_a_leg_scores_zero_there_and_ties_are_deterministic() -> None:
    # Legs with no positive score have no confidence: 0.5 each, the better BM25 wins the tie.
    fused = fuse({"a": 0.0, "b": -0.8}, {"b": 0.0, "a": -1.0}, "minmax", 0.5, 0.5)
    assert [k for k, _ in fused] == ["b", "a"]
    assert [s for _, s in fused] == [0.5, 0.5]
    only_dense = fuse({"x": 0.4, "y": 0.6}, {}, "minmax", 1.0, 0.0)
    assert only_dense == [("y", 1.0), ("x", 0.0)]
    assert fuse({}, {}, "minmax") == []
    with pytest.raises(ValueError, match="unknown ranker"):
        fuse({"a": 1.0}, {}, "magic")


def test_confidence_is_the_relative_gap_below_the_best_score() -> None:
    assert confidence({"a": 0.8, "b": 0.6, "c": 0.5, "d": 0.5, "e": 0.5, "f": 0.4, "g": 0.1}) == \
        pytest.approx((0.8 - 0.4) / 0.8)  # five places below the best
    assert confidence({"a": 0.5, "b": 0.25}) == pytest.approx(0.5)  # fewer: the last
    assert confidence({"a": 0.6, "b": 0.6, "c": 0.6}) == 0.0
    assert confidence({"a": 0.4}) == 0.0 and confidence({}) == 0.0
    assert confidence({"a": -0.1, "b": -0.5}) == 0.0
    assert confidence({"a": 0.5, "b": -0.9}) == 1.0  # capped


def test_a_sure_dense_leg_outweighs_bm25_and_a_flat_one_does_not() -> None:
    sparse = {"a": 10.0, "b": 6.0, "c": 2.0}  # BM25 prefers "a" (shared words), "b" second
    others = {"c": 0.38, "d": 0.36, "e": 0.34, "f": 0.32, "g": 0.30}
    sure = {"b": 0.8, "a": 0.4, **others}  # the meaning picks "b" clearly (a paraphrase)
    assert [k for k, _ in fuse(sure, sparse, "minmax", 0.3, 0.7)][:2] == ["b", "a"]
    flat = {"b": 0.50, "a": 0.49, "c": 0.485, "d": 0.48, "e": 0.475, "f": 0.47, "g": 0.46}
    assert confidence(flat) < 0.1
    assert [k for k, _ in fuse(flat, sparse, "minmax", 0.3, 0.7)][:2] == ["a", "b"]
    # Without the boost, the sure leg would lose too: 0.3 x 1 + 0.7 x 0.5 < 0.3 x 0.2 + 0.7 x 1.
    assert 0.3 + 0.7 * 0.5 < 0.3 * 0.2 + 0.7
    # Scores stay within 0..(sum of the weights).
    assert all(0.0 <= s <= 1.0 for _, s in fuse(sure, sparse, "minmax", 0.3, 0.7))
    assert fuse({"x": 0.4, "y": 0.6}, {}, "minmax", 1.0, 0.0) == [("y", 1.0), ("x", 0.0)]


def test_pieces_of_a_split_section_share_its_best_score_and_whole_sections_keep_theirs() -> None:
    ranked = [("a1", 0.9), ("x", 0.6), ("y", 0.5), ("a2", 0.4), ("z", 0.45)]
    section = {"a1": ("memory/d.md", "D > Long"), "a2": ("memory/d.md", "D > Long"),
               "x": ("memory/d.md", "D > Other"), "y": ("memory/e.md", "E"), "z": ("memory/f.md", "F")}
    got = dict(share_sections(ranked, section))
    assert got["a1"] == pytest.approx(0.9) and got["x"] == 0.6 and got["y"] == 0.5  # best pieces keep theirs
    assert got["a2"] == pytest.approx((0.4 + SECTION_SHARE * 0.9) / (1 + SECTION_SHARE))
    assert [k for k, _ in share_sections(ranked, section)] == ["a1", "x", "a2", "y", "z"]
    # Another section of the same file is not a piece of this one; a candidate without a section is its own.
    assert share_sections([("p", 0.2), ("q", 0.1)], {}) == [("p", 0.2), ("q", 0.1)]
    # Ties keep the fused order.
    assert [k for k, _ in share_sections([("b", 0.5), ("a", 0.5)], {"a": 1, "b": 2})] == ["b", "a"]


def test_search_shares_a_split_sections_best_score_with_its_pieces_only_with_minmax(
        tmp_path: Path, make_memory) -> None:
    mem = tmp_path / "memory"
    mem.mkdir()
    body = "\n".join(f"- note {i}: the garden shed needs a new roof before the winter storms" for i in range(30))
    (mem / "2026-01-05.md").write_text("# 2026-01-05\n\n## Shed\n\n" + body + "\n- the roofer quoted 900 euros\n")
    (mem / "2026-01-06.md").write_text("# 2026-01-06\n\n## Bikes\n\nfixed the bike chain and oiled the gears\n")
    memory = make_memory(tmp_path)
    memory.index()
    store, query = memory.store, "roofer quoted euros garden"
    pieces = [c.id for c in chunk_markdown((mem / "2026-01-05.md").read_text(), "memory/2026-01-05.md",
                                           model=memory.embedder.model_name) if c.heading_path[-1:] == ("Shed",)]
    assert len(pieces) > 1
    assert set(store.sections(pieces).values()) == {("memory/2026-01-05.md", "2026-01-05 > Shed")}
    dense = store.dense_leg(query_vector(memory.embedder, query), 30)
    plain = fuse(dense, store.sparse_leg(memory.df.query_vector(query), 30), "minmax", 0.3, 0.7)
    expected = share_sections(plain, store.sections([k for k, _ in plain]))
    hits = memory.search(query, top_k=10, ranker="minmax", vector_weight=0.3, bm25_weight=0.7)
    assert [(h.id, h.score) for h in hits] == [(k, pytest.approx(v, abs=1e-6)) for k, v in expected[:len(hits)]]
    best = max(dict(plain)[p] for p in pieces)
    lifted = [p for p in pieces if dict(plain)[p] < best]
    assert lifted and all(dict(expected)[p] > dict(plain)[p] for p in lifted)
    # The seed's weighted ranker is left exactly as Milvus' formula: no sharing.
    seed = memory.search(query, top_k=10, ranker="weighted", vector_weight=0.7, bm25_weight=0.3)
    assert [h.score for h in seed] == sorted((h.score for h in seed), reverse=True)
    weighted = dict(fuse(dense, store.sparse_leg(memory.df.query_vector(query), 30), "weighted", 0.7, 0.3))
    assert all(h.score == pytest.approx(weighted[h.id], abs=1e-6) for h in seed)


def test_query_stop_words_are_dropped_unless_nothing_else_is_left() -> None:
    assert query_terms("What did Nate say about his dog?") == tokens("Nate say dog")
    assert query_terms("who are you") == tokens("who are you")
    table = DfTable(None)
    assert len(table.query_vector("When did Caroline go to the LGBTQ support group?")) == 5


def test_windows_cover_the_text_and_respect_the_size() -> None:
    assert windows("short text") == ["short text"]
    text = "\n".join(f"- **Speaker {i}**: " + "word " * (i % 40) for i in range(60))
    pieces = windows(text)
    assert len(pieces) > 1 and all(len(p) <= WINDOW_CHARS for p in pieces)
    assert "\n".join(pieces).split() == text.split()
    long_line = "alpha " * 300
    assert all(len(p) <= WINDOW_CHARS for p in windows(long_line))
    assert " ".join(windows(long_line)).split() == long_line.split()
    chunk = chunk_markdown("# T\n\n" + text + "\n", "memory/a.md")[0]
    assert chunk.windows == windows(chunk.content)




def test_dense_leg_scores_a_chunk_by_its_best_window_and_returns_the_whole_chunk(
        tmp_path: Path, make_memory, embedder: FakeEmbedder) -> None:
    ws = long_workspace(tmp_path)
    memory = make_memory(ws)
    memory.index()
    chunk = chunk_markdown(LONG, "memory/2026-01-05.md", model=embedder.model_name)[-1]
    assert len(chunk.windows) > 2  # the fact sits in a window the first one does not see
    query = "kangaroo paddock fence ranger"
    q = embedder.embed([query])[0]
    cosines = [sum(a * b for a, b in zip(q, v)) for v in embedder.embed(chunk.windows)]
    assert max(cosines) == cosines[-1] > cosines[0]
    leg = memory.store.dense_leg(q, 10)
    assert leg[chunk.id] == pytest.approx(cosines[-1], abs=1e-5)
    hit = next(h for h in memory.search(query, top_k=5, vector_weight=1.0, bm25_weight=0.0) if h.id == chunk.id)
    assert (hit.source, hit.start_line, hit.end_line) == (chunk.source, chunk.start_line, chunk.end_line)
    # The seed setting stays selectable: Milvus' weighted formula over the same two legs.
    seed = memory.search(query, top_k=5, ranker="weighted", vector_weight=0.7, bm25_weight=0.3)
    bm25 = memory.store.sparse_leg(memory.df.query_vector(query), 30)[chunk.id]
    expected = 0.7 * (1 + leg[chunk.id]) / 2 + 0.3 * (0.5 + math.atan(bm25) / math.pi)
    assert next(h.score for h in seed if h.id == chunk.id) == pytest.approx(expected, abs=1e-5)
    assert [h.score for h in seed] == sorted((h.score for h in seed), reverse=True)


def test_window_vectors_are_reused_when_a_chunk_moves_and_deleted_with_it(tmp_path: Path, make_memory,
                                                                          embedder: FakeEmbedder) -> None:
    ws = long_workspace(tmp_path)
    memory = make_memory(ws)
    memory.index()
    store = memory.store
    count = len(chunk_markdown(LONG, "x.md")[-1].windows) - 1

    def window_rows() -> int:
        return len(store.client.query(store.windows_collection, filter="", output_fields=["chunk_id"], limit=100))

    assert window_rows() == count
    (ws / "memory" / "2026-01-05.md").rename(ws / "memory" / "2026-02-05.md")
    before = embedder.embedded
    stats = memory.index()
    assert (stats.chunks_embedded, embedder.embedded - before) == (0, 0)
    assert window_rows() == count  # the old file's windows went with its rows
    (ws / "memory" / "2026-02-05.md").unlink()
    memory.index()
    assert window_rows() == 0
    assert memory.search("kangaroo paddock fence", top_k=3, vector_weight=1.0, bm25_weight=0.0)[0].source \
        != "memory/2026-02-05.md"
