"""Smoke tests for bench/: the corpus generator is deterministic and exact, the metrics are right."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.common import percentile
from bench.compaction import SETS, Fact, ceiling, holds, load_facts, paragraphs
from bench.corpus import count_chunks, generate, load_needles
from bench.labelled import Truth, summary, workspaces
from bench.quality import QUERIES, answered, score
from bench.short_queries import keywords


def test_corpus_is_deterministic_and_exact(tmp_path: Path) -> None:
    one = generate(tmp_path / "a", 300, seed=3)
    two = generate(tmp_path / "b", 300, seed=3)
    other = generate(tmp_path / "c", 300, seed=4)
    assert one.digest == two.digest != other.digest
    assert one.chunks == 300 == count_chunks(tmp_path / "a")
    assert (tmp_path / "a" / "memory" / "MEMORY.md").is_file()


def test_needles_are_planted(tmp_path: Path) -> None:
    generate(tmp_path, 1000, seed=7)
    for needle in load_needles():
        text = (tmp_path / "memory" / f"{needle['date']}.md").read_text(encoding="utf-8")
        assert f"## {needle['heading']}\n" in text


def test_labelled_sets_are_well_formed() -> None:
    total = 0
    for name in ("examples", "generated"):
        queries = json.loads((QUERIES / f"{name}.json").read_text(encoding="utf-8"))["queries"]
        total += len(queries)
        for q in queries:
            assert q["query"].strip() and q["kind"] in {"exact", "paraphrase", "date"}
            assert q["answers"] and all(a["source"].startswith("memory/") and a["heading"] for a in q["answers"])
    assert total >= 40


def hit(source: str, heading: str) -> SimpleNamespace:
    return SimpleNamespace(source=source, heading=heading)


def test_metrics() -> None:
    answers = [{"source": "memory/a.md", "heading": "X"}, {"source": "memory/b.md", "heading": "*"}]
    hits = [hit("memory/c.md", "X"), hit("memory/a.md", "X"), hit("memory/c.md", "Y"), hit("memory/b.md", "Z")]
    got = score(hits, answers)
    assert got == {"r@1": 0.0, "r@3": 0.5, "r@5": 1.0, "r@10": 1.0, "hit@5": 1.0, "rr": 0.5}
    assert score([], answers) == {"r@1": 0.0, "r@3": 0.0, "r@5": 0.0, "r@10": 0.0, "hit@5": 0.0, "rr": 0.0}
    assert answered(hit("memory/b.md", "anything"), answers[1])
    assert not answered(hit("memory/a.md", "x"), answers[0])  # headings match exactly


def test_labelled_workspace_scoring(tmp_path: Path) -> None:
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "a.md").write_text("# A\n\nfirst\nsecond\n\n## B\nthird\n")
    truth = {
        "lines": {"memory/a.md": {"3": "D1", "4": "D2", "7": "D3"}},
        "qa": [{"q": "x", "evidence": ["D1", "D3"], "cat": 2}, {"q": "unlabelled", "evidence": ["D9"]}],
    }
    (tmp_path / "truth.json").write_text(json.dumps(truth))
    assert workspaces(tmp_path) == [tmp_path]
    t = Truth(tmp_path, tmp_path / "truth.json")
    assert [q["q"] for q in t.questions] == ["x"]  # a question without a known evidence line is left out
    got = t.score(t.questions[0], [("memory/a.md", 6, 7), ("memory/b.md", 1, 9), ("memory/a.md", 1, 4)])
    assert (got["r@1"], got["r@3"], got["hit@5"], got["cat"]) == (0.5, 1.0, 1.0, 2)
    assert got["chars@5"] == len("## B\nthird") + 0 + len("# A\n\nfirst\nsecond")
    row = summary([got])
    assert row["r@5 cat2"] == 1.0 and row["queries"] == 1


def test_percentile() -> None:
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([1.0, 2.0], 50) == pytest.approx(1.5)
    assert percentile(list(range(101)), 95) == pytest.approx(95.0)


def test_notes_style_sets_are_scored_at_file_level(tmp_path: Path) -> None:
    from bench.labelled import load_truth, score_spans

    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "git-a.md").write_text("# A\n\nx\n")
    (tmp_path / "questions.json").write_text(
        json.dumps({"qa": [{"q": "how", "files": ["git-a.md"]}, {"q": "none", "files": []}]})
    )
    assert workspaces(tmp_path) == [tmp_path]
    truth = load_truth(tmp_path, tmp_path)
    assert [q["q"] for q in truth.questions] == ["how"]
    spans = [("memory/b.md", 1, 3), ("memory/git-a.md", 1, 3)]
    assert score_spans(truth.label(truth.questions[0]), spans) == {
        "hit@1": 0.0,
        "hit@3": 1.0,
        "hit@5": 1.0,
        "mrr@5": 0.5,
    }
    assert score_spans({"files": ["git-a.md"]}, [("memory/b.md", 1, 1)] * 5 + [("memory/git-a.md", 1, 1)])["mrr@5"] == 0


def _record(dense: dict[str, float], sparse: dict[str, float], good: str, cov: dict[str, float]) -> dict:
    cands = {
        k: {
            "source": f"memory/{k}.md",
            "start": 1,
            "end": 2,
            "section": [f"memory/{k}.md", k],
            "cov": cov.get(k, 0.0),
            "chars": 100,
        }
        for k in {**dense, **sparse}
    }
    return {
        "ws": "w",
        "q": "q",
        "dense": dense,
        "sparse": sparse,
        "cands": cands,
        "idf": [1.0],
        "n_terms": 1,
        "truth": {"files": [f"{good}.md"]},
    }


def test_fusion_replay_is_the_product_ranking_and_the_fast_path_agrees() -> None:
    from bench.fusion import Compiled, evaluate, product_ranker, set_score
    from memsearch_lsp.core.search.rank import LEARNED

    flat = {"a": 0.50, "b": 0.49, "c": 0.485, "d": 0.48, "e": 0.475, "f": 0.47}
    sure = {"b": 0.60, "a": 0.45, "c": 0.44, "d": 0.43, "e": 0.42, "f": 0.40}
    sparse = {"a": 10.0, "b": 6.0, "c": 2.0, "d": 1.9, "e": 1.8, "f": 1.7}
    records = [_record(sure, sparse, "b", {}), _record(flat, sparse, "a", {"a": 0.5})]
    learned = evaluate(records, product_ranker(min_score=0.0))
    assert learned["mrr@5"] == 1.0  # the sure leg wins each question
    assert evaluate(records, product_ranker(ranker="minmax", min_score=0.0))["mrr@5"] == 0.75
    assert set_score([Compiled(r) for r in records], LEARNED)[0] == learned["mrr@5"]


def test_smallfiles_raw_run_embeds_exactly_what_the_indexer_embeds(workspace: Path) -> None:
    """bench smallfiles compares the indexer with raw onnxruntime on `embedded_texts`: the same texts."""
    from collections import Counter

    from bench.smallfiles import Recording, embedded_texts
    from memsearch_lsp.core.memory import Memory
    from tests.fakes import FakeEmbedder

    (workspace / "memory" / "copy.md").write_text((workspace / "memory" / "MEMORY.md").read_text())
    recording = Recording(FakeEmbedder())
    memory = Memory(workspace, embedder=recording)
    try:
        stats = memory.index()
    finally:
        memory.close()
    texts, chunks = embedded_texts(workspace / "memory", recording.model_name)
    assert chunks == stats.chunks_total and Counter(recording.texts) == Counter(texts)
    assert stats.chunks_total > stats.chunks_embedded  # the copy's chunks were embedded once, with the original's


def test_server_idle_embeds_by_sha256_in_the_server_and_its_children(tmp_path: Path) -> None:
    """bench.server_idle: any Python process started with its environment (the server, the child a large pass
    runs in) has the hashed embedder; one round on a small corpus gives every figure."""
    import os
    import subprocess
    import sys

    from bench import server_idle

    probe = "from memsearch_lsp.core.embedding import onnx; print(onnx.FastEmbedEmbedder.embed.__qualname__)"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, **server_idle.hashed_env()},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == "patch_embedder.<locals>.embed"
    generate(tmp_path, 100, seed=3)
    figures = server_idle.one(tmp_path)
    assert set(figures) == {
        *("ready_s", "idle_rss_mib", "searched_rss_mib", "edited_rss_mib", "peak_rss_mib", "settle_s", "settled")
    }
    assert figures["settled"]  # every reading taken with no child process left
    assert 0 < figures["idle_rss_mib"] <= figures["peak_rss_mib"] and figures["ready_s"] > 0


@pytest.mark.model
def test_the_cold_start_floor_runs_as_the_benchmark_runs_it() -> None:
    from bench.coldstart import FLOOR

    done = subprocess.run([sys.executable, "-c", FLOOR], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr  # what a cold search is measured against must still run


def test_the_import_probe_runs_and_creating_the_server_imports_nothing_heavy() -> None:
    from bench.coldstart import import_probe

    probe = import_probe()  # (`bench all --quick` stopped here when create_server moved to lsp/setup.py)
    assert probe["heavy"] == [] and probe["import_s"] > 0


@pytest.mark.parametrize("folder", SETS, ids=lambda p: p.name)
def test_every_labelled_compaction_fact_is_on_one_line_of_its_log(folder: Path) -> None:
    """A fact no summary could keep (its tokens in no one paragraph or item of its log) would lower every
    summariser's figure."""
    facts = load_facts(folder)
    assert facts and len({f.id for f in facts}) == len(facts)
    for fact in facts:
        log = folder / "memory" / f"{fact.log}.md"
        assert holds(paragraphs(log.read_text(encoding="utf-8")), fact), (folder.name, fact.id)


def test_the_ceiling_is_what_whole_sentences_can_hold_at_the_target_size(tmp_path: Path) -> None:
    """Two facts in short sentences fit in 0.40 of the log; a third alone in a long sentence does not."""
    (tmp_path / "memory").mkdir()
    filler = " ".join(["We talked through the plan for the next weeks at some length and went over it again."] * 6)
    short = "Redis is pinned to 7.2.4. Ana (design) owns the icons."
    long = "After a long back and forth about how the cache should behave at night, we settled on a TTL of 900 s."
    (tmp_path / "memory" / "2026-03-02.md").write_text(f"# 2026-03-02\n\n{short} {filler}\n\n{long}\n")
    before = len((tmp_path / "memory" / "2026-03-02.md").read_text())
    facts = [
        Fact("redis", "version", "2026-03-02", ("Redis", "7.2.4")),
        Fact("ana", "name", "2026-03-02", ("Ana", "design")),
    ]
    assert ceiling(tmp_path, facts, before, "# Summary 2026-W10\n\n") == 1.0
    ttl = Fact("ttl", "number", "2026-03-02", ("TTL", "900 s"))
    assert ceiling(tmp_path, [*facts, ttl], before, "# Summary 2026-W10\n\n") == 1.0
    # a log of 400 characters: 160 hold the two short sentences and their heading, not the long one too
    assert ceiling(tmp_path, [*facts, ttl], 400, "# Summary 2026-W10\n\n") == pytest.approx(2 / 3)
    assert ceiling(tmp_path, [*facts, ttl], 230, "# Summary 2026-W10\n\n") == pytest.approx(1 / 3)


def test_a_short_query_is_its_longest_content_words() -> None:
    assert keywords("Por que o ambiente de desenvolvimento não rodava no notebook?", 2) == "desenvolvimento ambiente"
    assert keywords("What did we decide about the cache?", 1) == "decide"
    assert keywords("断网的情况下能显示几天", 1) == "断网的情况下能显示几天"  # CJK: asked whole
