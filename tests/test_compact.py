"""Compaction with the extractive summariser: planning, applying atomically, the index after, the CLI."""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import pytest

from memsearch_lsp import cli
from memsearch_lsp.core import compact
from memsearch_lsp.core.compact import CompactError, apply_plan, period_key, plan_compaction
from memsearch_lsp.core.compact_extractive import parse_log
from memsearch_lsp.core.summarize import LogText
from tests.conftest import EXAMPLES
from tests.fakes import FakeEmbedder

FEB18 = dt.date(2026, 2, 18)  # the example logs run from 2026-02-02 to 2026-02-17
FEB25 = dt.date(2026, 2, 25)
BM25 = {"vector_weight": 0.0, "bm25_weight": 1.0}  # the fake dense vectors are noise

FACTS = [  # versions, numbers, names and decisions from the example daily logs
    "PostgreSQL 15", "Kafka over RabbitMQ", "max 100 connections", "p95 checkout latency under 300 ms",
    "2,000 requests per second", "ISO 4217", "33.33% off lost one cent", "Kafka runs on Amazon MSK with 3 brokers",
    "ERR_POOL_TIMEOUT", "raised the pool timeout to 2 s", "UUIDv7", "2,400 requests per second",
    "p95 latency was 280 ms", "cut CPU by 18%", "sampling is 10% in production", "OpenSearch 2.13",
    "TLS 1.3 only", "100 requests per minute per API key, burst 20", "checkout 1.4.0", "`guest-checkout`",
    "PostgreSQL 16 primary", "autovacuum_vacuum_scale_factor set to 0.05", "500 million rows",
    "Decision: keep the REST API and do not add GraphQL this year", "We agreed that saved cards require an account",
    "orders@atlas.example", "`scripts/seed.py --orders 5000`", "Dana", "Marco", "Priya",
]


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root except the index, by relative path."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".memsearch" not in p.relative_to(root).parts}


def fact_lines(text: str) -> list[str]:
    """Bullets of a log that name a number, a version or a decision."""
    out = []
    for line in text.splitlines():
        m = re.match(r"^\s*[-*]\s+(.*)$", line)
        if m and (re.search(r"\d", m.group(1)) or re.search(r"decision|decided|agreed|chose", m.group(1), re.I)):
            out.append(m.group(1))
    return out


def test_plan_chooses_logs_older_than_n_days_grouped_by_iso_week(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    before = snapshot(workspace)
    plan = plan_compaction(memory, today=FEB18)
    assert snapshot(workspace) == before  # planning writes nothing
    assert [m.src for m in plan.archive] == [f"memory/2026-02-{d:02d}.md" for d in (2, 3, 4, 5, 6, 9, 10)]
    assert all(m.dst == m.src.replace("memory/", "memory/archive/") for m in plan.archive)
    assert [(s.path, s.action) for s in plan.summaries] == [("memory/summary-2026-W06.md", "create"),
                                                            ("memory/summary-2026-W07.md", "create")]
    assert plan.summaries[1].sources == ("memory/2026-02-09.md", "memory/2026-02-10.md")
    data = plan.to_dict()
    assert json.loads(json.dumps(data)) == data and data["summarizer"] == "extractive"
    assert data["archive"][0] == {"from": "memory/2026-02-02.md", "to": "memory/archive/2026-02-02.md"}
    assert set(data["summaries"][0]) >= {"path", "action", "content", "sources"}
    assert "memory/summary-2026-W06.md" in plan.describe() and not plan.empty
    assert [m.src for m in plan_compaction(memory, older_than_days=14, today=FEB18).archive] == \
        ["memory/2026-02-02.md", "memory/2026-02-03.md"]
    nothing = plan_compaction(memory, older_than_days=30, today=FEB18)
    assert nothing.empty and "no daily logs older than 30 days" in nothing.describe()
    assert nothing.to_dict()["summaries"] == [] and nothing.to_dict()["archive"] == []


def test_group_by_month_and_day(workspace: Path, make_memory) -> None:
    month = plan_compaction(make_memory(workspace, compact={"group_by": "month"}), today=FEB25)
    assert [s.path for s in month.summaries] == ["memory/summary-2026-02.md"]
    day = plan_compaction(make_memory(workspace, compact={"group_by": "day"}), older_than_days=20, today=FEB25)
    assert [s.path for s in day.summaries] == ["memory/summary-2026-02-02.md", "memory/summary-2026-02-03.md",
                                               "memory/summary-2026-02-04.md"]
    assert period_key(dt.date(2027, 1, 1), "week") == "2026-W53"  # ISO weeks cross the new year


def test_extractive_summary_keeps_every_fact_verbatim_with_provenance(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    plan = plan_compaction(memory, today=FEB25)
    assert len(plan.archive) == 12 and "memory/MEMORY.md" not in {m.src for m in plan.archive}
    summaries = "\n".join(s.content for s in plan.summaries)
    for fact in FACTS:
        assert fact in summaries, fact
    for log in sorted((workspace / "memory").glob("2026-*.md")):
        for line in fact_lines(log.read_text()):
            assert line in summaries, (log.name, line)
    w06 = plan.summaries[0].content
    assert w06.startswith("# Summary 2026-W06\n")
    assert "## Decision: Kafka over RabbitMQ for the event bus" in w06  # headings become topics
    assert "# 2026-02-05" not in w06  # the date titles of the logs are not topics
    # provenance: dated links to the line of the archived original, relative to the summary
    assert "[2026-02-05#L3](archive/2026-02-05.md#L3)" in w06
    for date, line in re.findall(r"\[(2026-02-\d\d)#L(\d+)\]\(archive/", summaries):
        original = (workspace / "memory" / f"{date}.md").read_text().splitlines()
        assert original[int(line) - 1].startswith("## ")
    assert "[2026-02-02](archive/2026-02-02.md)" in w06  # the sources, linked


def test_apply_archives_originals_byte_for_byte_and_index_matches(workspace: Path, make_memory) -> None:
    (workspace / "memory/2026-02-03.md").write_bytes(b"# 2026-02-03\r\n\r\n- CRLF line, cost 3 EUR\r\n")
    originals = {p.name: p.read_bytes() for p in (workspace / "memory").glob("2026-*.md")}
    memory = make_memory(workspace)
    memory.index()
    plan = plan_compaction(memory, today=FEB25)
    stats = apply_plan(memory, plan)
    assert stats.files_removed == 12 and stats.files_added == 3
    archive = workspace / "memory" / "archive"
    assert {p.name: p.read_bytes() for p in archive.iterdir()} == originals
    assert not list((workspace / "memory").glob("2026-*.md"))
    for s in plan.summaries:
        assert (workspace / s.path).read_text() == s.content
    assert "- CRLF line, cost 3 EUR" in (workspace / "memory/summary-2026-W06.md").read_text()
    indexed = set(memory.indexer.manifest())
    assert indexed == {"memory/MEMORY.md", "memory/summary-2026-W06.md", "memory/summary-2026-W07.md",
                       "memory/summary-2026-W08.md"}
    assert not memory.index().changed  # a later reconcile agrees: the index matches the files
    for query, where in [("Kafka over RabbitMQ", "W06"), ("PostgreSQL 15 legacy reporting", "W06"),
                         ("OpenSearch 2.13 synonym", "W07"), ("ERR_POOL_TIMEOUT", "W06"),
                         ("autovacuum_vacuum_scale_factor", "W08")]:
        hits = memory.search(query, top_k=5, **BM25)
        assert hits[0].source == f"memory/summary-2026-{where}.md", (query, hits)
        assert not any("archive" in h.source for h in hits)
    hit = memory.search("max 100 connections Redis pool exhausted", top_k=10, **BM25)
    assert "memory/summary-2026-W06.md" in {h.source for h in hit}


def test_compacting_the_rest_of_a_week_appends_to_its_summary(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    apply_plan(memory, plan_compaction(memory, today=FEB18))
    w07 = workspace / "memory/summary-2026-W07.md"
    first = w07.read_text()
    assert "Grafana Tempo" in first and "OpenSearch 2.13" not in first
    plan = plan_compaction(memory, today=FEB25)
    assert [(s.path, s.action) for s in plan.summaries] == [("memory/summary-2026-W07.md", "append"),
                                                            ("memory/summary-2026-W08.md", "create")]
    apply_plan(memory, plan)
    text = w07.read_text()
    assert text.startswith(first) and text.count("# Summary 2026-W07") == 1
    assert "OpenSearch 2.13" in text and "Grafana Tempo" in text
    assert len(list((workspace / "memory/archive").iterdir())) == 12
    assert memory.search("OpenSearch 2.13", top_k=1, **BM25)[0].source == "memory/summary-2026-W07.md"


def test_an_archive_folder_with_spaces_gets_working_links(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace, compact={"archive_dir": "memory/old logs"})
    plan = plan_compaction(memory, files=["memory/2026-02-05.md"], today=FEB18)
    assert plan.archive[0].dst == "memory/old logs/2026-02-05.md"
    assert "[2026-02-05#L3](old%20logs/2026-02-05.md#L3)" in plan.summaries[0].content
    assert plan_compaction(memory, files=[], today=FEB18).empty


def test_archived_logs_can_be_indexed_when_configured(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace, compact={"index_archive": True})
    apply_plan(memory, plan_compaction(memory, today=FEB25))
    sources = set(memory.indexer.manifest())
    assert "memory/archive/2026-02-05.md" in sources and "memory/summary-2026-W06.md" in sources
    assert plan_compaction(memory, older_than_days=0, today=FEB25).empty  # archived logs are never compacted again


def test_explicit_files(workspace: Path, make_memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = make_memory(workspace)
    plan = plan_compaction(memory, files=["memory/2026-02-17.md", str(workspace / "memory/2026-02-16.md")],
                           today=FEB18)  # ages do not matter for files given by name
    assert [m.src for m in plan.archive] == ["memory/2026-02-17.md", "memory/2026-02-16.md"]
    assert [s.path for s in plan.summaries] == ["memory/summary-2026-W08.md"]
    monkeypatch.chdir(workspace / "memory")  # a name relative to the current folder works too
    assert [m.src for m in plan_compaction(memory, files=["2026-02-09.md"], today=FEB18).archive] == \
        ["memory/2026-02-09.md"]
    outside = tmp_path / "elsewhere" / "2026-01-01.md"
    outside.parent.mkdir()
    outside.write_text("# 2026-01-01\n")
    for name, message in [("memory/MEMORY.md", "not a daily log"), (str(outside), "outside the workspace"),
                          ("memory/2026-01-09.md", "no such file"), ("memory/2026-13-45.md", "no such file")]:
        with pytest.raises(CompactError, match=message):
            plan_compaction(memory, files=[name], today=FEB18)
    apply_plan(memory, plan_compaction(memory, files=["memory/2026-02-05.md"], today=FEB18))
    with pytest.raises(CompactError, match="already archived"):
        plan_compaction(memory, files=["memory/archive/2026-02-05.md"], today=FEB18)
    assert issubclass(CompactError, ValueError)


def test_archive_collision_is_refused_before_anything_moves(workspace: Path, make_memory) -> None:
    (workspace / "memory/archive").mkdir()
    (workspace / "memory/archive/2026-02-04.md").write_text("an older archive\n")
    memory = make_memory(workspace)
    before = snapshot(workspace)
    with pytest.raises(CompactError, match="already exists"):
        plan_compaction(memory, today=FEB18)
    assert snapshot(workspace) == before


def test_a_stale_plan_is_refused(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    plan = plan_compaction(memory, today=FEB18)
    (workspace / "memory/summary-2026-W06.md").write_text("# someone else\n")
    before = snapshot(workspace)
    with pytest.raises(CompactError, match="plan again"):
        apply_plan(memory, plan)
    assert snapshot(workspace) == before


def _fail_on_call(n: int, real, monkeypatch: pytest.MonkeyPatch, target: object, name: str) -> list[int]:
    calls: list[int] = []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == n:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(*args, **kwargs)

    monkeypatch.setattr(target, name, failing)
    return calls


def test_full_disk_while_writing_the_second_summary_changes_nothing(workspace: Path, make_memory,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    memory = make_memory(workspace)
    memory.index()
    manifest = {s: set(v.ids) for s, v in memory.indexer.manifest().items()}
    before = snapshot(workspace)
    plan = plan_compaction(memory, today=FEB25)
    calls = _fail_on_call(2, compact._write_temp, monkeypatch, compact, "_write_temp")
    with pytest.raises(CompactError, match=r"No space left on device.*rolled back, memory unchanged"):
        apply_plan(memory, plan)
    assert len(calls) == 2
    assert snapshot(workspace) == before  # no summary, no temporary file, no archive folder, nothing moved
    assert not (workspace / "memory/archive").exists()
    assert {s: set(v.ids) for s, v in memory.indexer.manifest().items()} == manifest


def test_full_disk_while_installing_after_the_moves_rolls_everything_back(workspace: Path, make_memory,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    memory = make_memory(workspace)
    apply_plan(memory, plan_compaction(memory, today=FEB18))  # so the next plan appends to W07
    before = snapshot(workspace)
    plan = plan_compaction(memory, today=FEB25)
    assert [s.action for s in plan.summaries] == ["append", "create"]
    calls = _fail_on_call(2, os.replace, monkeypatch, os, "replace")  # W07 is installed, W08 fails
    with pytest.raises(CompactError, match="rolled back"):
        apply_plan(memory, plan)
    monkeypatch.undo()
    assert len(calls) >= 2
    assert snapshot(workspace) == before  # the appended summary is restored, the originals are back
    apply_plan(memory, plan)  # and the same plan still applies afterwards
    assert len(list((workspace / "memory/archive").iterdir())) == 12


def test_near_duplicates_are_dropped_but_never_lose_a_number_or_name(tmp_path: Path, make_memory) -> None:
    mem = tmp_path / "memory"
    mem.mkdir()
    (mem / "2026-03-02.md").write_text(
        "# 2026-03-02\n\n## Deploys\n\n- We deploy the API on Tuesdays.\n- p95 latency was 280 ms.\n"
        "- Use the blue-green script.\n\n```sh\nmake deploy\n```\n")
    (mem / "2026-03-03.md").write_text(
        "# 2026-03-03\n\n## Deploys\n\n- we deploy the API on tuesdays\n- We deploy the API on Tuesdays, as usual.\n"
        "- p95 latency was 250 ms.\n- Use the blue-green script, said Ana.\n\n```sh\nmake deploy\n```\n")

    class Synonyms(FakeEmbedder):  # the fake embedder, but chosen lines mean the same thing
        groups: ClassVar[list[set[str]]] = [
                  {"We deploy the API on Tuesdays.", "We deploy the API on Tuesdays, as usual."},
                  {"p95 latency was 280 ms.", "p95 latency was 250 ms."},
                  {"Use the blue-green script.", "Use the blue-green script, said Ana."}]

        def _one(self, text: str) -> list[float]:
            for group in self.groups:
                if text in group:
                    return super()._one(sorted(group)[0])
            return super()._one(text)

    memory = make_memory(tmp_path, emb=Synonyms())
    content = plan_compaction(memory, today=dt.date(2026, 3, 20)).summaries[0].content
    assert content.count("deploy the API on Tuesdays") == 1  # exact duplicate (case, punctuation)
    assert "as usual" not in content  # near duplicate by embedding
    assert "- We deploy the API on Tuesdays. (also [2026-03-03#L5](archive/2026-03-03.md#L5), " \
           "[2026-03-03#L6](archive/2026-03-03.md#L6))" in content
    assert "280 ms" in content and "250 ms" in content  # similar, but a different number: both kept
    assert "said Ana" in content  # a new name: kept
    assert content.count("make deploy") == 1
    assert content.count("## Deploys") == 1 and "From [2026-03-03#L3](archive/2026-03-03.md#L3):" in content
    strict = make_memory(tmp_path, emb=Synonyms(), compact={"similarity_threshold": 1.5})  # above 1: off
    assert "as usual" in plan_compaction(strict, today=dt.date(2026, 3, 20)).summaries[0].content


def test_parse_log_handles_markdown_structure() -> None:
    text = ("---\ntags: [x]\n---\n# 2026-03-02\n\nIntro paragraph with a\ncontinuation line.\n\n"
            "Setext topic\n------------\n\n1. first step\n   still the first step\n2. second\n"
            "  - nested under it\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<!-- a comment -->\n\n***\n\n"
            "## Sub # with hash ##\n\n```\n# not a heading\n```\n")
    items = parse_log(LogText("memory/2026-03-02.md", "memory/archive/2026-03-02.md", "archive/2026-03-02.md",
                              "2026-03-02", text))
    got = [(i.topic, i.kind, i.text, i.depth, i.line) for i in items]
    assert got == [
        ("Notes", "para", "Intro paragraph with a continuation line.", 0, 6),
        ("Setext topic", "bullet", "first step still the first step", 0, 12),
        ("Setext topic", "bullet", "second", 0, 14),
        ("Setext topic", "bullet", "nested under it", 1, 15),
        ("Setext topic", "block", "| a | b |\n|---|---|\n| 1 | 2 |", 0, 17),
        ("Sub # with hash", "block", "```\n# not a heading\n```", 0, 27),
    ]


# -- CLI ---------------------------------------------------------------------------------------
@pytest.fixture
def fake_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memsearch_lsp.core.memory.create_embedder", lambda *a, **k: FakeEmbedder())


def run_cli(args: Sequence[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_dry_run_prints_the_plan_and_changes_nothing(workspace: Path, fake_model, capsys) -> None:
    before = snapshot(workspace)
    code, out, _ = run_cli(["compact", "-w", str(workspace), "--dry-run", "--json"], capsys)
    assert code == 0 and snapshot(workspace) == before
    data = json.loads(out)
    assert data["applied"] is False and len(data["archive"]) == 12  # the examples are months old
    code, out, _ = run_cli(["compact", "-w", str(workspace), "--dry-run", "--older-than", "100000"], capsys)
    assert code == 0 and "nothing to compact" in out


def test_cli_applies_the_plan(workspace: Path, fake_model, capsys) -> None:
    code, out, _ = run_cli(["compact", "-w", str(workspace), "memory/2026-02-05.md", "memory/2026-02-06.md"], capsys)
    assert code == 0, out
    assert "create  memory/summary-2026-W06.md" in out and "move    memory/2026-02-05.md" in out
    assert (workspace / "memory/archive/2026-02-05.md").read_bytes() == (EXAMPLES / "2026-02-05.md").read_bytes()
    assert "Kafka over RabbitMQ" in (workspace / "memory/summary-2026-W06.md").read_text()
    code, out, _ = run_cli(["search", "-w", str(workspace), "--json", "--vector-weight", "0", "Kafka over RabbitMQ"],
                           capsys)
    assert json.loads(out)[0]["source"] == "memory/summary-2026-W06.md"


def test_cli_rejects_a_file_that_is_not_a_daily_log(workspace: Path, fake_model, capsys) -> None:
    before = snapshot(workspace)
    code, _, err = run_cli(["compact", "-w", str(workspace), "memory/MEMORY.md"], capsys)
    assert code == 1 and "not a daily log" in err and "Traceback" not in err
    assert snapshot(workspace) == before


@pytest.mark.model
def test_near_duplicates_with_the_real_model(tmp_path: Path) -> None:
    from memsearch_lsp.core.memory import Memory

    mem = tmp_path / "memory"
    mem.mkdir()
    (mem / "2026-03-02.md").write_text(
        "# 2026-03-02\n\n## Infra\n\n- Kafka runs on Amazon MSK with 3 brokers; retention is 7 days.\n"
        "- Marco to provision the MSK cluster this week.\n- p95 latency was 280 ms.\n")
    (mem / "2026-03-03.md").write_text(
        "# 2026-03-03\n\n## Infra\n\n- Kafka runs on MSK with 3 brokers and 7 days retention.\n"
        "- Marco will provision the MSK cluster this week.\n- p95 latency was 250 ms.\n")
    with Memory(tmp_path) as memory:  # MiniLM: these pairs score 0.94-0.98 cosine
        content = plan_compaction(memory, today=dt.date(2026, 3, 20)).summaries[0].content
    assert "Kafka runs on MSK with 3 brokers and 7 days retention" not in content
    assert "Marco will provision" not in content
    assert "280 ms" in content and "250 ms" in content  # 0.96 alike, but the numbers differ
    assert content.count("(also [2026-03-03#L") == 2
