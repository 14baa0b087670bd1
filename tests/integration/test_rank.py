"""Ranking: fusion of the two legs (pure), query stop words, dense windows end to end on Milvus Lite."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from memsearch_lsp.config import SearchConfig
from memsearch_lsp.core.chunks import MAX_WINDOWS, WINDOW_CHARS, chunk_markdown, windows
from memsearch_lsp.core.embedding import REFERENCE, Calibration, query_vector
from memsearch_lsp.core.search.bm25 import query_ids, query_terms, tokens
from memsearch_lsp.core.search.hybrid import empty_section, snippet
from memsearch_lsp.core.search.rank import (
    BM25_GAIN,
    DENSE_GAIN,
    LEARNED,
    MIN_WEIGHT,
    SECTION_SHARE,
    UNKNOWN,
    Languages,
    calibrated,
    confidence,
    fuse,
    learned,
    minmax,
    rank,
    ranks,
    relevance,
    share_sections,
)
from memsearch_lsp.core.search.screen import columns
from memsearch_lsp.core.store.schema import sparse_dict
from tests.fakes import FakeEmbedder
from tests.helpers import BM25, LONG, engine_rows, long_workspace, query_idf


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
    assert confidence({"a": 0.8, "b": 0.6, "c": 0.5, "d": 0.5, "e": 0.5, "f": 0.4, "g": 0.1}) == pytest.approx(
        (0.8 - 0.4) / 0.8
    )  # five places below the best
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
    section = {
        "a1": ("memory/d.md", "D > Long"),
        "a2": ("memory/d.md", "D > Long"),
        "x": ("memory/d.md", "D > Other"),
        "y": ("memory/e.md", "E"),
        "z": ("memory/f.md", "F"),
    }
    got = dict(share_sections(ranked, section))
    assert got["a1"] == pytest.approx(0.9) and got["x"] == 0.6 and got["y"] == 0.5  # best pieces keep theirs
    assert got["a2"] == pytest.approx((0.4 + SECTION_SHARE * 0.9) / (1 + SECTION_SHARE))
    assert [k for k, _ in share_sections(ranked, section)] == ["a1", "x", "a2", "y", "z"]
    # Another section of the same file is not a piece of this one; a candidate without a section is its own.
    assert share_sections([("p", 0.2), ("q", 0.1)], {}) == [("p", 0.2), ("q", 0.1)]
    # Ties keep the fused order.
    assert [k for k, _ in share_sections([("b", 0.5), ("a", 0.5)], {"a": 1, "b": 2})] == ["b", "a"]


def test_search_shares_a_split_sections_best_score_with_its_pieces_only_with_minmax(
    tmp_path: Path, make_memory
) -> None:
    mem = tmp_path / "memory"
    mem.mkdir()
    body = "\n".join(f"- note {i}: the garden shed needs a new roof before the winter storms" for i in range(30))
    (mem / "2026-01-05.md").write_text("# 2026-01-05\n\n## Shed\n\n" + body + "\n- the roofer quoted 900 euros\n")
    (mem / "2026-01-06.md").write_text("# 2026-01-06\n\n## Bikes\n\nfixed the bike chain and oiled the gears\n")
    memory = make_memory(tmp_path)
    memory.index()
    store, query = memory.store, "roofer quoted euros garden"
    pieces = [
        c.id
        for c in chunk_markdown(
            (mem / "2026-01-05.md").read_text(), "memory/2026-01-05.md", model=memory.embedder.model_name
        )
        if c.heading_path[-1:] == ("Shed",)
    ]
    assert len(pieces) > 1
    assert set(store.sections(pieces).values()) == {("memory/2026-01-05.md", "2026-01-05 > Shed")}
    dense = store.dense_leg(query_vector(memory.embedder, query), 30)
    plain = fuse(dense, store.sparse_leg(query_idf(memory, query), 30), "minmax", 0.3, 0.7)
    expected = share_sections(plain, store.sections([k for k, _ in plain]))
    expected = [(k, v) for k, v in expected if not empty_section(store.rows([k])[0].content)]  # a title says nothing
    hits = memory.search(query, top_k=10, ranker="minmax", vector_weight=0.3, bm25_weight=0.7)
    assert [(h.id, h.rank_score) for h in hits] == [(k, pytest.approx(v, abs=1e-6)) for k, v in expected[: len(hits)]]
    best = max(dict(plain)[p] for p in pieces)
    lifted = [p for p in pieces if dict(plain)[p] < best]
    assert lifted and all(dict(expected)[p] > dict(plain)[p] for p in lifted)
    # The seed's weighted ranker is left exactly as Milvus' formula: no sharing.
    seed = memory.search(query, top_k=10, ranker="weighted", vector_weight=0.7, bm25_weight=0.3)
    assert [h.rank_score for h in seed] == sorted((h.rank_score for h in seed), reverse=True)
    weighted = dict(fuse(dense, store.sparse_leg(query_idf(memory, query), 30), "weighted", 0.7, 0.3))
    assert all(h.rank_score == pytest.approx(weighted[h.id], abs=1e-6) for h in seed)


def test_query_stop_words_are_dropped_unless_nothing_else_is_left() -> None:
    assert query_terms("What did Nate say about his dog?") == tokens("Nate say dog")
    assert query_terms("who are you") == tokens("who are you")
    assert len(set(query_ids("When did Caroline go to the LGBTQ support group?"))) == 5


def test_a_snippet_shows_where_the_body_holds_most_of_the_query_s_content_words() -> None:
    """It began at the first query word found anywhere: "in" inside "Naming" put the window before the answer."""
    body = "Naming: we kept the old names. " + "Other things were said. " * 8
    content = f"## 10:00\n\n{body}The privacy toggle per member ships in v2 at $0.12 extra per verification. The end."
    shown = snippet(content, "is the privacy toggle in the app", width=120)
    assert shown.startswith("…The privacy toggle per member") and len(shown) <= 120  # from its sentence's start
    assert "$0.12 extra per verification" in snippet(content, "what does a verification cost extra", width=120)
    assert snippet(content, "deploy", width=120).startswith("Naming")  # nothing matched: the beginning
    assert snippet("## 部署\n\n" + "很多别的事情。" * 40 + "周五不部署。", "部署", width=60).endswith("…周五不部署。")


def test_a_snippet_finds_a_chinese_question_and_a_query_typed_without_accents_by_their_terms() -> None:
    """It matched the query's literal words: a Chinese question is one unspaced word, "clinica" is not "clínica"
    (audit Z2, 4); the analyzer reads both as the search did when it found the note."""
    zh = "今天我们讨论了系统的性能问题和下一步的计划。大家认为需要更多的测试。" * 40
    note = "## 长会议记录\n\n" + zh[:900] + "关键结论：支付网关的超时时间改为四十五秒。" + zh[900:]
    for query in ("支付网关的超时时间是多少？", "支付网关 超时"):
        shown = snippet(note, query)
        assert "支付网关的超时时间改为四十五秒" in shown and columns(shown) <= 200, (query, shown)
    filler = "A equipe revisou o planejamento do trimestre e os riscos do projeto. " * 10
    fact = "A clínica São Lucas pediu a migração das integrações do laboratório para outubro. "
    note = "## Reunião longa\n\n" + filler + fact + filler
    for query in ("clínica integrações", "clinica integracoes", "CLINICA INTEGRACOES"):
        assert snippet(note, query).startswith("…A clínica São Lucas pediu a migração das integrações"), query


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


def test_a_huge_one_line_chunk_is_embedded_in_at_most_max_windows_and_still_found_by_its_last_word(
    tmp_path: Path, make_memory, embedder: FakeEmbedder
) -> None:
    """A pasted minified file or data: URI (one line, never split into chunks) costs MAX_WINDOWS windows, not one per
    500 characters (~1,600 for 812 KB: minutes of embedding); BM25 still reads the whole line."""
    ws = long_workspace(tmp_path)
    line = " ".join(f"tok{n % 997}x{n}" for n in range(40_000)) + " zanzibarquokka"
    (ws / "memory" / "2026-01-09.md").write_text(f"# 2026-01-09\n\n## Paste\n\n{line}\n", encoding="utf-8")
    memory = make_memory(ws)
    memory.index()
    assert len(windows(line)) > 2 * MAX_WINDOWS
    assert sum(1 for text in embedder.texts if "tok" in text or "Paste" in text) == MAX_WINDOWS
    hits = memory.search("zanzibarquokka", top_k=3)
    assert hits and hits[0].source == "memory/2026-01-09.md"


def test_dense_leg_scores_a_chunk_by_its_best_window_and_returns_the_whole_chunk(
    tmp_path: Path, make_memory, embedder: FakeEmbedder
) -> None:
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
    bm25 = memory.store.sparse_leg(query_idf(memory, query), 30)[chunk.id]
    expected = 0.7 * (1 + leg[chunk.id]) / 2 + 0.3 * (0.5 + math.atan(bm25) / math.pi)
    assert next(h.rank_score for h in seed if h.id == chunk.id) == pytest.approx(expected, abs=1e-5)
    assert [h.rank_score for h in seed] == sorted((h.rank_score for h in seed), reverse=True)


def test_window_vectors_are_reused_when_a_chunk_moves_and_deleted_with_it(
    tmp_path: Path, make_memory, embedder: FakeEmbedder
) -> None:
    ws = long_workspace(tmp_path)
    memory = make_memory(ws)
    memory.index()
    store = memory.store
    count = len(chunk_markdown(LONG, "x.md")[-1].windows) - 1

    def window_rows() -> int:
        return len(store.model.windows.slot)

    assert window_rows() == count
    (ws / "memory" / "2026-01-05.md").rename(ws / "memory" / "2026-02-05.md")
    before = embedder.embedded
    stats = memory.index()
    assert (stats.chunks_embedded, embedder.embedded - before) == (0, 0)
    assert window_rows() == count  # the old file's windows went with its rows
    (ws / "memory" / "2026-02-05.md").unlink()
    memory.index()
    assert window_rows() == 0
    assert engine_rows(memory, windows=True) == []  # and so did Milvus Lite's rows
    assert (
        memory.search("kangaroo paddock fence", top_k=3, vector_weight=1.0, bm25_weight=0.0)[0].source
        != "memory/2026-02-05.md"
    )


# -- the learned fusion (the default) and the relevance floor --------------------------------------
SPARSE = {"a": 10.0, "b": 6.0, "c": 2.0, "d": 1.9, "e": 1.8, "f": 1.7}  # BM25 prefers "a", then "b"
PARAPHRASE = {"b": 0.60, "a": 0.45, "c": 0.44, "d": 0.43, "e": 0.42, "f": 0.40}  # the meaning picks "b"
FLAT = {"b": 0.50, "a": 0.49, "c": 0.485, "d": 0.48, "e": 0.475, "f": 0.47}


def test_learned_fusion_is_the_default_and_trusts_the_leg_that_is_sure() -> None:
    assert SearchConfig().ranker == "learned" and SearchConfig().min_score > 0
    # A paraphrase: dense picks "b" clearly (confidence 0.33), BM25 is sure of "a" (0.83): dense wins,
    # where the previous default (minmax 0.3/0.7) kept BM25's first.
    assert [k for k, _ in fuse(PARAPHRASE, SPARSE, "learned")][:2] == ["b", "a"]
    assert [k for k, _ in fuse(PARAPHRASE, SPARSE, "minmax", 0.3, 0.7)][:2] == ["a", "b"]
    # A flat dense leg (every chunk of a chat looks alike) leaves the order to BM25.
    assert [k for k, _ in fuse(FLAT, SPARSE, "learned")][:2] == ["a", "b"]
    # The formula of the docstring, with the shipped weights.
    t_dense, g_bm25, t_bm25, c_cov, k_cover = LEARNED
    cover = {"a": 0.5, "b": 1.0}
    got = learned(PARAPHRASE, SPARSE, cover)
    wd = max(MIN_WEIGHT, confidence(PARAPHRASE) - t_dense)
    # BM25's weight shrinks when its best candidate ("a") holds little of the query: 0.5 of k_cover here
    wb = max(MIN_WEIGHT, g_bm25 * (confidence(SPARSE) - t_bm25)) * min(1.0, 0.5 / k_cover)
    d, s = minmax(PARAPHRASE), minmax(SPARSE)
    for key in "abcdef":
        assert got[key] == pytest.approx(wd * d[key] + (wb + c_cov * cover.get(key, 0.0)) * s[key])


def test_a_model_that_cannot_read_the_query_leaves_the_order_to_bm25() -> None:
    sure = {"b": 0.9, "a": 0.3, "c": 0.2, "d": 0.1, "e": 0.05, "f": 0.0}  # a dense leg that would win
    assert next(k for k, _ in fuse(sure, SPARSE, "learned")) == "b"
    portuguese = Languages("pt", model=("en",))
    assert [k for k, _ in fuse(sure, SPARSE, "learned", languages=portuguese)][: len(SPARSE)] == list(SPARSE)


def test_a_model_that_cannot_read_a_candidate_gives_it_no_cosine() -> None:
    """An English model asked in English about a memory in Portuguese: its cosines with the Portuguese notes are
    noise, so those notes rank by BM25 alone; an English note keeps its cosine."""
    dense = {"pt1": 0.9, "en1": 0.5, "pt2": 0.45, "en2": 0.2, "pt3": 0.1, "en3": 0.05}
    sparse = {"pt2": 9.0, "pt1": 1.0, "en1": 0.5}
    of = {"pt1": "pt", "pt2": "pt", "pt3": "pt", "en1": "en", "en2": "en", "en3": "en"}
    blind = [k for k, _ in fuse(dense, sparse, "learned", coverage={}, languages=Languages("en", of, ("en",)))]
    assert fuse(dense, sparse, "learned", coverage={})[0][0] == "pt1"  # its noise cosine would lead
    assert blind.index("pt2") < blind.index("pt1") and blind.index("en1") < blind.index("pt1")
    scores = learned(dense, sparse, {}, languages=Languages("en", of, ("en",)))
    assert scores["pt3"] == 0.0 and scores["en3"] == 0.0  # no cosine left, no BM25; "en3": its leg's lowest
    # A model that reads Portuguese keeps them all: its sure best note is first.
    assert fuse(dense, sparse, "learned", coverage={}, languages=Languages("en", of, ("en", "pt")))[0][0] == "pt1"
    # Nothing readable at all: BM25's order, the dense leg's other candidates after it.
    only_pt = {"pt1": 0.9, "pt3": 0.1}
    assert [k for k, _ in fuse(only_pt, sparse, "learned", languages=Languages("en", of, ("en",)))] == [
        "pt2",
        "pt1",
        "en1",
        "pt3",
    ]


def test_the_dense_leg_decides_when_its_best_note_is_in_another_language() -> None:
    """A question in Spanish about a note written in Portuguese: BM25 matches words, so it can only find the
    Spanish notes that share some; when a multilingual model's best note is in another language than the
    question, the dense order stands."""
    dense = {"pt": 0.62, "es1": 0.58, "es2": 0.50, "es3": 0.45, "pt2": 0.40, "es4": 0.30}
    sparse = {"es1": 8.0, "es2": 2.0, "es3": 1.0}
    coverage = {"es1": 0.5, "es2": 0.2, "es3": 0.1}
    of = {"pt": "pt", "pt2": "pt", "es1": "es", "es2": "es", "es3": "es", "es4": "es"}
    same = fuse(dense, sparse, "learned", coverage=coverage, languages=Languages("es", {**of, "pt": "es"}))
    assert same[0][0] == "es1"  # all in Spanish: BM25's sure first match leads the fusion, as before
    across = fuse(dense, sparse, "learned", coverage=coverage, languages=Languages("es", of))
    assert [k for k, _ in across] == list(dense)
    # Not known (search.language set, or nothing detected), or a few keywords that say nothing of their
    # language ("sure" False): no rule applies.
    assert fuse(dense, sparse, "learned", coverage=coverage)[0][0] == "es1"
    assert fuse(dense, sparse, "learned", coverage=coverage, languages=Languages("es", of, sure=False))[0][0] == "es1"


def test_a_models_cosines_are_read_on_the_bundled_models_scale() -> None:
    """e5 puts unrelated text near 0.75 and related text near 0.87; calibrated, its leg weighs and floors as the
    bundled model's would for the same ranking."""
    e5 = Calibration(unrelated=0.749, related=0.8738)
    assert e5(0.749) == pytest.approx(REFERENCE.unrelated) and e5(0.8738) == pytest.approx(REFERENCE.related)
    assert REFERENCE(0.42) == pytest.approx(0.42)  # the bundled model's own scale
    raw = {"a": 0.88, "b": 0.84, "c": 0.83, "d": 0.82, "e": 0.81, "f": 0.80}  # e5: close together
    scaled = calibrated(raw, e5)
    assert confidence(scaled) > 3 * confidence(raw)  # no longer "flat" because every cosine is high
    assert relevance(raw, {}, e5) == pytest.approx({k: 2 * v / 3 for k, v in scaled.items()})
    unrelated = {"a": 0.79, "b": 0.78}  # an unrelated query's best chunks under e5
    assert max(relevance(unrelated, {}, e5).values()) < SearchConfig().min_score < max(relevance(raw, {}, e5).values())


def test_learned_fusion_lifts_a_bm25_candidate_that_covers_more_of_the_query() -> None:
    dense = {"x": 0.50, "y": 0.49, "z": 0.48}
    sparse = {"x": 5.0, "y": 4.9, "z": 1.0}  # nearly tied in BM25; "y" has every query term, "x" one
    plain = [k for k, _ in fuse(dense, sparse, "learned", coverage={})]
    covered = [k for k, _ in fuse(dense, sparse, "learned", coverage={"x": 0.2, "y": 1.0, "z": 0.2})]
    assert plain[0] == "x" and covered[0] == "y"


def test_learned_fusion_with_one_leg_ranks_by_that_leg() -> None:
    assert [k for k, _ in fuse(PARAPHRASE, {}, "learned")] == list(PARAPHRASE)
    assert [k for k, _ in fuse({}, SPARSE, "learned")] == list(SPARSE)
    assert fuse({}, {}, "learned") == []


def test_relevance_is_absolute_and_the_floor_drops_what_matches_nothing() -> None:
    # (2 x cosine + coverage) / 3; a BM25-only candidate gets the dense leg's lowest cosine.
    got = relevance({"a": 0.6, "b": 0.2}, {"a": 1.0, "b": 0.0, "c": 0.9})
    assert got == pytest.approx({"a": (1.2 + 1.0) / 3, "b": 0.4 / 3, "c": (0.4 + 0.9) / 3})
    assert relevance({}, {"a": 0.5}) == {"a": 0.5}  # no dense leg: coverage alone
    # The same candidates rescaled per query look alike; relevance tells the unrelated query apart.
    related = {"a": 0.62, "b": 0.40, "c": 0.35}
    unrelated = {"a": 0.22, "b": 0.14, "c": 0.10}
    assert minmax(related)["a"] == minmax(unrelated)["a"] == 1.0
    settings = SearchConfig(min_score=0.3)
    sections = lambda keys: {}  # noqa: E731
    kept = rank(related, {"a": 3.0, "b": 1.0}, {"a": 0.7, "b": 0.3, "c": 0.0}, sections, settings)
    assert [k for k, _ in kept] == ["a", "b"]  # "c": (0.70 + 0) / 3 < 0.3
    assert rank(unrelated, {}, {"a": 0.0, "b": 0.0, "c": 0.0}, sections, settings) == []
    off = rank(unrelated, {}, {"a": 0.0, "b": 0.0, "c": 0.0}, sections, SearchConfig(min_score=0.0))
    assert [k for k, _ in off] == ["a", "b", "c"]


def test_relevance_of_a_text_the_model_cannot_read_rests_on_its_terms() -> None:
    """The bundled English model's cosine of an English question with a Portuguese note is noise (0.05 here): it
    counts as UNKNOWN, between the unrelated and related levels, so a note that shares terms with the question
    is not dropped by the floor for the model's blindness, and one sharing none still is."""
    dense = {"pt": 0.05, "en": 0.05}
    coverage = {"pt": 0.2, "en": 0.2}
    of = {"pt": "pt", "en": "en"}
    english = Languages("en", of, ("en",))
    got = relevance(dense, coverage, REFERENCE, english)
    assert got["pt"] == pytest.approx((2 * UNKNOWN + 0.2) / 3) and got["en"] == pytest.approx((0.1 + 0.2) / 3)
    assert REFERENCE.unrelated < UNKNOWN < REFERENCE.related
    sections = lambda keys: {}  # noqa: E731
    kept = rank(dense, {"pt": 2.0, "en": 2.0}, coverage, sections, SearchConfig(), REFERENCE, english)
    assert [k for k, _ in kept] == ["pt"]  # the English note is read, and unrelated
    # A question the model cannot read at all: every candidate rests on its terms.
    german = relevance(dense, {"pt": 0.0, "en": 0.2}, REFERENCE, Languages("de", of, ("en",)))
    assert german == pytest.approx({"pt": 2 * UNKNOWN / 3, "en": (2 * UNKNOWN + 0.2) / 3})
    assert german["pt"] < SearchConfig().min_score < german["en"]


def test_search_returns_nothing_for_a_query_that_matches_nothing(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace, search={"min_score": SearchConfig().min_score})
    memory.index()
    assert memory.search("xyzzy plugh", top_k=5) == []
    assert memory.search("flibber wonk grizzle snorp", top_k=5) == []
    hits = memory.search("Redis cache TTL", top_k=5)
    assert hits and hits[0].heading == "Redis Caching"
    # The floor is a setting: off, the same query returns its (irrelevant) best candidates.
    assert memory.search("xyzzy plugh", top_k=5, min_score=0.0)


def test_coverage_is_the_share_of_the_query_idf_mass_a_chunk_holds(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    memory.index()
    store, terms = memory.store, query_idf(memory, "Redis cache xyzzy")
    ids = list(store.sparse_leg(terms, 30))
    assert ids
    got = store.coverage(ids, terms)
    total = sum(terms.values())
    stored = {r["id"]: sparse_dict(r["sparse"]) for r in engine_rows(memory) if r["id"] in ids}
    for key in ids:
        want = sum(w for t, w in terms.items() if t in stored[key]) / total
        assert got[key] == pytest.approx(want, abs=1e-9)
    assert max(got.values()) < 1.0  # nothing holds "xyzzy"
    assert store.coverage(ids, {}) == {k: 0.0 for k in ids}


def test_related_memories_are_the_nearest_ones_whatever_the_floor(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace, search={"min_score": 1.0})  # a floor nothing reaches
    memory.index()
    assert memory.search("Redis cache TTL", top_k=3) == []
    chunk = memory.expand(memory.search("Redis cache TTL", top_k=1, min_score=0.0)[0].id)
    assert chunk is not None
    related = memory.related(chunk, top_k=3)
    assert related and all(h.source != chunk.source for h in related)


def test_a_hits_relevance_does_not_depend_on_the_fusion_weights(workspace: Path, make_memory) -> None:
    """`score` is what `--min-score` compares, so it must not move with a ranking flag: a dense leg weighted 0 (BM25
    ranks alone) still tells the relevance its cosines, as the ranker does not either (0.381 became 0.274 with
    `--vector-weight 0`)."""
    memory = make_memory(workspace)
    memory.index()
    query = "which cache did we pick for sessions"

    def scores(**overrides: object) -> dict[str, float]:
        return {h.id: h.score for h in memory.search(query, top_k=10, **overrides)}

    fused = scores()
    assert fused
    for overrides in ({"vector_weight": 0.0}, {"bm25_weight": 0.0}, {"ranker": "rrf"}, {"ranker": "minmax"}):
        other = scores(**overrides)
        shared = set(fused) & set(other)
        assert shared, overrides
        assert {k: other[k] for k in shared} == pytest.approx({k: fused[k] for k in shared}), overrides
    # and so the floor keeps the same hits whichever leg ranks
    floor = sorted(fused.values())[len(fused) // 2]
    kept = {h.id for h in memory.search(query, top_k=10, min_score=floor, vector_weight=0.0)}
    assert kept and all(fused.get(k, floor) >= floor for k in kept)


def test_a_list_item_or_quote_over_a_thematic_break_is_found(tmp_path: Path, make_memory) -> None:
    """(audit R, 2) `- item` then `---` (a rule after a note, common in logs) was read as a setext heading: the chunk
    held "no text" and search never returned it, even with no relevance floor."""
    mem = tmp_path / "memory"
    mem.mkdir()
    (mem / "prelist.md").write_text(
        "- Call the vet about the quetzal vaccination on Friday\n---\n\n# Other\n\nunrelated text\n"
    )
    (mem / "quote.md").write_text("> the axolotl tank needs a new filter\n---\n")
    memory = make_memory(tmp_path)
    memory.index()
    found = memory.search("quetzal vaccination vet", top_k=3, **BM25)
    assert [(h.source, h.start_line, h.end_line) for h in found][:1] == [("memory/prelist.md", 1, 2)]
    assert "quetzal vaccination" in found[0].snippet
    assert [h.source for h in memory.search("axolotl tank filter", top_k=3, **BM25)][:1] == ["memory/quote.md"]


@pytest.mark.parametrize(
    ("query", "note", "other"),
    [
        ("on-call", "Wen runs the on-call rotation.", "The billing service is called ledger."),
        ("check-in", "The daily check-in is at 9.", "Check the logs in the morning."),
        ("follow-up", "Send the follow-up to Ana.", "Follow the release steps; the build is up."),
        ("log-in", "The log-in page needs SSO.", "Log the errors in Sentry."),
        ("e-mail", "E-mail the invoice to Kofi.", "The mail room closes at 5."),
    ],
)
def test_a_hyphenated_query_meets_the_note_that_writes_it_so(
    tmp_path: Path, make_memory, query: str, note: str, other: str
) -> None:
    """A hyphenated word is indexed in its joined form too ("on-call" as "oncall"); the query's joined form is a term
    as well, so the note that says "on-call" outranks one that says "called" (the query's "on" is a stop word: it
    was searched as "call" alone), and a query typed "oncall" still meets it."""
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "2026-03-03.md").write_text(f"# 2026-03-03\n\n## 10:15 Team\n{other}\n", encoding="utf-8")
    (tmp_path / "memory" / "2026-03-04.md").write_text(f"# 2026-03-04\n\n## 10:15 Team\n{note}\n", encoding="utf-8")
    memory = make_memory(tmp_path, search={"vector_weight": 0.0})
    memory.index()
    for typed in (query, query.replace("-", "")):
        hits = memory.search(typed, top_k=2)
        assert hits and hits[0].source == "memory/2026-03-04.md", (typed, [h.source for h in hits])
