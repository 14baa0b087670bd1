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
from memsearch_lsp.core.compact import apply as compact_apply
from memsearch_lsp.core.compact import plan as compact
from memsearch_lsp.core.compact.extractive import ExtractiveSummarizer, parse_log
from memsearch_lsp.core.compact.plan import CompactError, apply_plan, period_key, plan_compaction
from memsearch_lsp.core.compact.summarize import MIN_BUDGET, LogText
from tests.fakes import FakeEmbedder
from tests.helpers import BM25, EXAMPLES, FEB18, snapshot

FEB25 = dt.date(2026, 2, 25)

FACTS = [  # versions, numbers, names and decisions from the example daily logs
    "PostgreSQL 15",
    "Kafka over RabbitMQ",
    "max 100 connections",
    "p95 checkout latency under 300 ms",
    "2,000 requests per second",
    "ISO 4217",
    "33.33% off lost one cent",
    "Kafka runs on Amazon MSK with 3 brokers",
    "ERR_POOL_TIMEOUT",
    "raised the pool timeout to 2 s",
    "UUIDv7",
    "2,400 requests per second",
    "p95 latency was 280 ms",
    "cut CPU by 18%",
    "sampling is 10% in production",
    "OpenSearch 2.13",
    "TLS 1.3 only",
    "100 requests per minute per API key, burst 20",
    "checkout 1.4.0",
    "`guest-checkout`",
    "PostgreSQL 16 primary",
    "autovacuum_vacuum_scale_factor set to 0.05",
    "500 million rows",
    "Decision: keep the REST API and do not add GraphQL this year",
    "We agreed that saved cards require an account",
    "orders@atlas.example",
    "`scripts/seed.py --orders 5000`",
    "Dana",
    "Marco",
    "Priya",
]


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
    assert [(s.path, s.action) for s in plan.summaries] == [
        ("memory/summary-2026-W06.md", "create"),
        ("memory/summary-2026-W07.md", "create"),
    ]
    assert plan.summaries[1].sources == ("memory/2026-02-09.md", "memory/2026-02-10.md")
    data = plan.to_dict()
    assert json.loads(json.dumps(data)) == data and data["summarizer"] == "extractive"
    assert data["archive"][0] == {"from": "memory/2026-02-02.md", "to": "memory/archive/2026-02-02.md"}
    assert set(data["summaries"][0]) >= {"path", "action", "content", "sources"}
    assert "memory/summary-2026-W06.md" in plan.describe() and not plan.empty
    assert [m.src for m in plan_compaction(memory, older_than_days=14, today=FEB18).archive] == [
        "memory/2026-02-02.md",
        "memory/2026-02-03.md",
    ]
    nothing = plan_compaction(memory, older_than_days=30, today=FEB18)
    assert nothing.empty and "no daily logs older than 30 days" in nothing.describe()
    assert nothing.to_dict()["summaries"] == [] and nothing.to_dict()["archive"] == []


def test_a_file_where_the_archive_folder_goes_is_named_by_the_plan(workspace: Path, make_memory) -> None:
    """A dry run listed the moves of a plan that then failed with "compaction failed (File exists)" when
    memory/archive was a file: the plan names it, and nothing is written."""
    (workspace / "memory" / "archive").write_text("not a folder\n")
    memory = make_memory(workspace)
    before = snapshot(workspace)
    with pytest.raises(CompactError, match=r"memory/archive exists and is not a folder: .*move it away"):
        plan_compaction(memory, today=FEB18)
    assert snapshot(workspace) == before


def test_today_is_the_clock_remember_reads(workspace: Path, make_memory, monkeypatch: pytest.MonkeyPatch) -> None:
    """MEMSEARCH_NOW is "today" for compaction as for `remember` and `recent`: logs within the last 7 days of it
    stay, and the summary is stamped with it."""
    monkeypatch.setenv("MEMSEARCH_NOW", f"{FEB18.isoformat()}T10:00")
    plan = plan_compaction(make_memory(workspace))
    assert [m.src for m in plan.archive] == [f"memory/2026-02-{d:02d}.md" for d in (2, 3, 4, 5, 6, 9, 10)]
    assert f"(extractive, {FEB18.isoformat()})" in plan.summaries[0].content


def test_an_old_log_that_cannot_be_read_is_left_in_place_and_the_others_compacted(workspace: Path, make_memory) -> None:
    (workspace / "memory" / "2026-02-08.md").write_bytes(
        b"# 2026-02-08\n\n## a\nx\x00\xffy\n"
    )  # binary: NUL, not UTF-8
    memory = make_memory(workspace)
    plan = plan_compaction(memory, today=FEB18)
    assert plan.skipped == (("memory/2026-02-08.md", "binary file (contains NUL bytes)"),)
    assert "memory/2026-02-08.md" not in {m.src for m in plan.archive} and len(plan.archive) == 7
    assert plan.to_dict()["skipped"] == [
        {"source": "memory/2026-02-08.md", "reason": "binary file (contains NUL bytes)"}
    ]
    assert "skipped memory/2026-02-08.md: binary file" in plan.describe()
    with pytest.raises(CompactError, match="binary file"):  # a log named on purpose is not passed over
        plan_compaction(memory, files=["memory/2026-02-08.md"], today=FEB18)


def test_an_old_log_linked_from_outside_the_workspace_is_skipped_and_said(workspace: Path, make_memory) -> None:
    outside = workspace.parent / "outside-log.md"
    outside.write_text("# 2026-02-07\n\n- Decision: a secret plan kept elsewhere, 42 of them\n", encoding="utf-8")
    (workspace / "memory" / "2026-02-07.md").symlink_to(outside)
    plan = plan_compaction(make_memory(workspace), today=FEB18)
    ((source, why),) = plan.skipped
    assert source == "memory/2026-02-07.md" and "outside the workspace" in why, plan.skipped
    assert source not in {m.src for m in plan.archive} and len(plan.archive) == 7
    assert f"skipped memory/2026-02-07.md: {why}; left in place" in plan.describe()
    assert "secret plan" not in "".join(s.content for s in plan.summaries)


def test_an_empty_log_is_said_to_have_nothing_to_summarise_the_same_way_everywhere(tmp_path: Path, make_memory) -> None:
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "2026-02-06.md").write_text("", encoding="utf-8")
    plan = plan_compaction(make_memory(tmp_path), files=["memory/2026-02-06.md"], today=FEB18)
    assert plan.empty and plan.note == "nothing to gain: empty log: nothing to summarise; left as it is"
    assert plan.describe().endswith("keep    memory/2026-02-06.md: nothing to gain (empty log: nothing to summarise)")


def test_a_log_of_headings_that_say_facts_is_summarised(tmp_path: Path, make_memory) -> None:
    """A review found a log made only of headings left as "nothing to summarise" although two headings were a
    decision and a person's deadline (a 3 % summary before)."""
    (tmp_path / "memory").mkdir()
    heads = "".join(f"## Sync {n} with the team\n\n" for n in range(25))
    facts = "## Decision: use Postgres 16 for billing\n\n## Carol (product) wants the export by 2027-01-15\n"
    (tmp_path / "memory" / "2026-02-06.md").write_text(f"# 2026-02-06\n\n{heads}{facts}", encoding="utf-8")
    plan = plan_compaction(make_memory(tmp_path), files=["memory/2026-02-06.md"], today=FEB18)
    assert not plan.unchanged and len(plan.summaries) == 1, plan.describe()
    assert "Postgres 16" in plan.summaries[0].content and "2027-01-15" in plan.summaries[0].content


def test_group_by_month_and_day(workspace: Path, make_memory) -> None:
    month = plan_compaction(make_memory(workspace, compact={"group_by": "month"}), today=FEB25)
    assert [s.path for s in month.summaries] == ["memory/summary-2026-02.md"]
    day = plan_compaction(make_memory(workspace, compact={"group_by": "day"}), older_than_days=20, today=FEB25)
    # one day of these logs (350-480 characters): its summary may be most of it, and then it stays as it is
    periods = [s.path.removeprefix("memory/summary-") for s in day.summaries] + [
        f"{u.period}.md" for u in day.unchanged
    ]
    assert sorted(periods) == ["2026-02-02.md", "2026-02-03.md", "2026-02-04.md"] and day.unchanged
    assert all(u.chars_after >= 0.70 * u.chars_before for u in day.unchanged)
    assert "nothing to gain (a summary would be" in day.describe()
    assert period_key(dt.date(2027, 1, 1), "week") == "2026-W53"  # ISO weeks cross the new year


LOG_HEADING = re.compile(r"^## \[[\d-]+\]\(([^)#]+)(?:#L(\d+))?\)$")


def provenance(content: str) -> list[tuple[str, int, str]]:
    """(archived link, first line, text) of every kept line of a summary: the one link of its log's section
    (to where the log's text starts in the archived copy)."""
    out, link, first = [], "", 1
    for line in content.splitlines():
        heading = LOG_HEADING.match(line)
        if heading:
            link, first = heading.group(1), int(heading.group(2) or 1)
        elif line.startswith("- ") and link:
            out.append((link, first, line[2:]))
    return out


def test_extractive_summary_is_a_third_of_the_logs_keeps_facts_verbatim_with_provenance(
    workspace: Path, make_memory
) -> None:
    memory = make_memory(workspace)
    plan = plan_compaction(memory, today=FEB25)
    assert len(plan.archive) == 12 and "memory/MEMORY.md" not in {m.src for m in plan.archive}
    logs = sum(len((workspace / m.src).read_text()) for m in plan.archive)
    assert plan.chars_before == logs and plan.chars_after == sum(len(s.content) for s in plan.summaries)
    # links and intros included: 40 % of the logs, and a small group gets a minimum (W08: two logs)
    assert 0 < plan.chars_after <= 0.40 * plan.chars_before + MIN_BUDGET
    assert all(len(s.content) < 0.70 * sum(len((workspace / x).read_text()) for x in s.sources) for s in plan.summaries)
    data = plan.to_dict()
    assert (data["chars_before"], data["chars_after"]) == (plan.chars_before, plan.chars_after)
    assert f"{plan.chars_before} -> {plan.chars_after} characters" in plan.describe()
    summaries = "\n".join(s.content for s in plan.summaries)
    for fact in [
        "Decision: we chose Kafka over RabbitMQ",
        "100 requests per minute per API key, burst 20",
        "Root cause: the Redis connection pool was exhausted (max 100 connections)",
        "Decision: keep the REST API and do not add GraphQL this year",
        "Reasons: we need replay of order events for 7 days",  # a decision's reasons (issue 26)
    ]:  # labelled lines always stay
        assert fact in summaries, fact
    w06 = plan.summaries[0].content
    assert w06.startswith("# Summary 2026-W06\n")
    assert "### Incident: checkout 502s" in w06  # a section's heading, above the lines kept from it
    assert "# 2026-02-05" not in w06  # the date titles of the logs are not topics
    assert "## [2026-02-05](archive/2026-02-05.md)\n" in w06  # one link per log, to its archived original
    assert not re.search(r"\(L\d+\)|#L\d+", w06)  # no link per line: the budget goes to facts
    kept = provenance(summaries)
    assert len(kept) >= 8
    for link, _, text in kept:  # extractive: every kept line is (part of) a line of the log it links to
        original = " ".join((workspace / "memory" / Path(link).name).read_text().split())  # not moved yet
        assert all(piece.split(": ", 1)[-1] in original for piece in text.split(" … ")), (link, text)


def test_facts_are_kept_over_chatter(tmp_path: Path, make_memory) -> None:
    mem = tmp_path / "memory"
    mem.mkdir()
    chatter = [
        "Hey! How are you doing today?",
        "Wow, that sounds great!",
        "Haha, totally, me too.",
        "Thanks so much, that's so nice of you!",
        "Cool, glad to hear it!",
        "Oh really? Tell me more!",
    ]
    facts = [
        "Ana: We decided to move the launch to 14 March because the Berlin venue cancelled.",
        "Ben: I adopted a beagle named Pixel last Saturday; she is 2 years old.",
        "Ana: The budget is 12,500 EUR, approved by Carla on 3 March.",
    ]
    lines = [f"- **{'Ana' if n % 2 else 'Ben'}**: {c}" for n, c in enumerate(chatter * 6)]
    lines[4:4] = [f"- {f}" for f in facts]
    (mem / "2026-03-02.md").write_text("# 2026-03-02\n\n## Catch-up\n\n" + "\n".join(lines) + "\n")
    content = plan_compaction(make_memory(tmp_path), today=dt.date(2026, 3, 20)).summaries[0].content
    for fact in facts:
        assert fact.split(": ", 1)[1] in content, content
    assert not any(c in content for c in chatter), content
    assert "Ana: We decided" in content  # the speaker stays with the line, without its emphasis


def test_apply_archives_originals_byte_for_byte_and_index_matches(workspace: Path, make_memory) -> None:
    (workspace / "memory/2026-02-03.md").write_bytes(b"# 2026-02-03\r\n\r\n- CRLF line, cost 3 EUR\r\n")
    originals = {p.name: p.read_bytes() for p in (workspace / "memory").glob("2026-*.md")}
    memory = make_memory(workspace)
    memory.index()
    plan = plan_compaction(memory, today=FEB25)
    stats = apply_plan(memory, plan)
    assert stats.files_removed == 12 and stats.files_added == 3 + 12  # the summaries, and the archive stays indexed
    archive = workspace / "memory" / "archive"
    assert {p.name: p.read_bytes() for p in archive.iterdir()} == originals
    assert not list((workspace / "memory").glob("2026-*.md"))
    for s in plan.summaries:
        assert (workspace / s.path).read_text() == s.content
    indexed = set(memory.indexer.manifest())
    assert indexed == {
        "memory/MEMORY.md",
        "memory/summary-2026-W06.md",
        "memory/summary-2026-W07.md",
        "memory/summary-2026-W08.md",
    } | {f"memory/archive/{name}" for name in originals}
    assert not memory.index().changed  # a later reconcile agrees: the index matches the files
    days = [
        h for h in memory.headings() if h.source == "memory/summary-2026-W06.md" and h.markdown_heading.startswith("[")
    ]
    assert days and all(
        h.heading == h.markdown_heading[1:11] for h in days
    )  # a day's link is shown as its date (outlines, symbols)
    for query in [
        "Kafka over RabbitMQ",
        "PostgreSQL 15 legacy reporting",
        "OpenSearch 2.13 synonym",
        "ERR_POOL_TIMEOUT",
        "autovacuum_vacuum_scale_factor",
        "CRLF line cost 3 EUR",
    ]:
        hits = memory.search(query, top_k=3, **BM25)  # every fact is still found: in a summary or the archive
        assert any(query.split()[0] in h.snippet for h in hits), (query, hits)
        assert all(h.archived == h.source.startswith("memory/archive/") for h in hits)
    for link, _, text in provenance(plan.summaries[0].content):  # a kept line: its summary stands for its original
        found = [h.source for h in memory.search(text, top_k=20, **BM25)]
        assert "memory/summary-2026-W06.md" in found and f"memory/{link}" not in found, (text, found)
        both = [h.source for h in memory.search(text, top_k=20, archived=True, **BM25)]  # asked for: both, in order
        assert both.index("memory/summary-2026-W06.md") < both.index(f"memory/{link}"), (text, both)


def test_archived_hits_rank_below_live_memory_at_equal_relevance(tmp_path: Path, make_memory) -> None:
    (tmp_path / "memory/archive").mkdir(parents=True)
    section = "## Quarzite rollout\n\nThe quarzite rollout finished on 12 May with 40 nodes.\n"
    (tmp_path / "memory/archive/2026-01-05.md").write_text("# 2026-01-05\n\n" + section)
    (tmp_path / "memory/notes.md").write_text("# Notes\n\n" + section)
    memory = make_memory(tmp_path)
    memory.index()
    hits = memory.search("quarzite rollout 40 nodes", top_k=2)
    assert [(h.source, h.archived) for h in hits] == [
        ("memory/notes.md", False),
        ("memory/archive/2026-01-05.md", True),
    ]
    assert hits[0].to_dict()["archived"] is False and hits[1].to_dict()["archived"] is True
    assert hits[1].rank_score < hits[0].rank_score
    memory.close()
    off = make_memory(tmp_path, compact={"index_archive": False})  # the setting turns it off
    off.index()
    assert {h.source for h in off.search("quarzite rollout 40 nodes", top_k=3)} == {"memory/notes.md"}


def test_compacting_the_rest_of_a_week_appends_to_its_summary(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    apply_plan(memory, plan_compaction(memory, today=FEB18))
    w07 = workspace / "memory/summary-2026-W07.md"
    first = w07.read_text()
    plan = plan_compaction(memory, today=FEB25)
    assert [(s.path, s.action) for s in plan.summaries] == [
        ("memory/summary-2026-W07.md", "append"),
        ("memory/summary-2026-W08.md", "create"),
    ]
    apply_plan(memory, plan)
    text = w07.read_text()
    assert text.startswith(first) and text.count("# Summary 2026-W07") == 1
    assert text[len(first) :].startswith("\n---\n\nSummary of 2026-02-11 to 2026-02-13")
    assert "## [2026-02-12](archive/2026-02-12.md)\n" in text
    assert len(list((workspace / "memory/archive").iterdir())) == 12


def test_a_day_s_continuation_log_follows_its_first_part(workspace: Path, make_memory) -> None:
    """`remember` goes on in YYYY-MM-DD.2.md (then .10.md): after the day's first file, never before it (by name)."""
    memory = make_memory(workspace)
    for part in (2, 10):
        chatter = "Looked at the dashboards again for a while, then went for lunch and a walk by the river. " * 6
        note = f"# 2026-02-09\n\n## 1{part % 10}:00\n\nPart {part}: Kafka lag 40{part} ms.\n\n{chatter}\n"
        (workspace / f"memory/2026-02-09.{part}.md").write_text(note)
    days = ["memory/2026-02-09.md", "memory/2026-02-09.2.md", "memory/2026-02-09.10.md", "memory/2026-02-10.md"]
    assert [s for s in compact.old_logs(memory, today=FEB18) if "02-09" in s or "02-10" in s] == days
    plan = plan_compaction(memory, today=FEB18)
    (w07,) = [s for s in plan.summaries if s.path.endswith("W07.md")]
    assert list(w07.sources) == days and [m.src for m in plan.archive][-4:] == days
    sections = re.findall(r"^## \[2026-02-(\d\d)\]\(archive/2026-02-09\.?(\d*)\.md\)", w07.content, re.M)
    assert [part for day, part in sections if day == "09"] == ["", "2", "10"], w07.content


def test_today_s_log_is_refused_by_name_and_not_compactable(
    workspace: Path, make_memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Agents still append to today's log (the product's clock: MEMSEARCH_NOW): archiving it would split the day."""
    monkeypatch.setenv("MEMSEARCH_NOW", "2026-02-18T10:00")
    memory = make_memory(workspace)
    (workspace / "memory/2026-02-18.md").write_text(
        "# 2026-02-18\n\n## 09:00\n\nDecision: ship checkout 1.5 on Friday.\n"
    )
    with pytest.raises(CompactError, match=r"2026-02-18\.md: today's log, still written to"):
        plan_compaction(memory, files=["memory/2026-02-18.md"])
    assert not compact.compactable(memory, "memory/2026-02-18.md") and compact.compactable(
        memory, "memory/2026-02-17.md"
    )


def test_an_archive_folder_with_spaces_gets_working_links(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace, compact={"archive_dir": "memory/old logs"})
    plan = plan_compaction(
        memory, files=["memory/2026-02-02.md", "memory/2026-02-05.md", "memory/2026-02-06.md"], today=FEB18
    )
    assert plan.archive[0].dst == "memory/old logs/2026-02-02.md"
    assert "](old%20logs/2026-02-0" in plan.summaries[0].content
    assert plan_compaction(memory, files=[], today=FEB18).empty


@pytest.mark.parametrize(
    ("settings", "index"),
    [
        ({"compact": {"archive_dir": ".memsearch/milvus.db/archive"}}, ".memsearch"),
        ({"compact": {"archive_dir": ".memsearch"}}, ".memsearch"),
        ({"compact": {"archive_dir": "cache/idx/old"}, "milvus": {"uri": "cache/idx"}}, "cache/idx"),
    ],
)
def test_an_archive_folder_inside_the_index_is_refused_before_anything_moves(
    workspace: Path, make_memory, settings: dict[str, dict[str, str]], index: str
) -> None:
    """`reset` deletes the index folder and git ignores `.memsearch/`: originals archived there would be lost."""
    if "milvus" in settings:
        settings["milvus"]["uri"] = str(workspace / settings["milvus"]["uri"])
    memory = make_memory(workspace, **settings)
    before = snapshot(workspace / "memory")
    with pytest.raises(CompactError, match=f"inside the index folder {index}, which `reset` deletes"):
        plan_compaction(memory, files=["memory/2026-02-02.md", "memory/2026-02-05.md"], today=FEB18)
    assert snapshot(workspace / "memory") == before


def test_an_archive_folder_outside_the_memory_folders_is_refused_while_the_archive_is_indexed(
    workspace: Path, make_memory
) -> None:
    """(audit M2, 5) The archived originals stay searchable only inside a memory folder: one elsewhere ("archive",
    "") took them out of search without a word."""
    logs = ["memory/2026-02-02.md", "memory/2026-02-05.md"]
    before = snapshot(workspace / "memory")
    memory = make_memory(workspace, compact={"archive_dir": "archive"})
    with pytest.raises(CompactError, match="'archive' is outside the memory folders: the archived logs would leave"):
        plan_compaction(memory, files=logs, today=FEB18)
    assert snapshot(workspace / "memory") == before
    memory.close()
    kept_out = make_memory(workspace, compact={"archive_dir": "archive", "index_archive": False})
    assert [m.dst for m in plan_compaction(kept_out, files=logs, today=FEB18).archive] == [
        "archive/2026-02-02.md",
        "archive/2026-02-05.md",
    ]


def test_the_default_archive_is_inside_the_first_memory_folder(tmp_path: Path, make_memory) -> None:
    """(review N, 8) With `memory.paths = ["notes"]` and the default archive_dir (memory/archive, outside every memory
    folder) compaction was refused; before that, the originals left search. The default follows the memory folder."""
    (tmp_path / "notes").mkdir()
    for day in ("2026-02-02", "2026-02-03"):
        (tmp_path / "notes" / f"{day}.md").write_text(
            f"# {day}\n\n## 09:00\n\n{'We chose Postgres for the ledger. ' * 9}\n"
        )
    (tmp_path / ".memsearch.toml").write_text('[memory]\npaths = ["notes"]\n')
    memory = make_memory(tmp_path)
    plan = plan_compaction(memory, files=["notes/2026-02-02.md", "notes/2026-02-03.md"], today=FEB18)
    assert [m.dst for m in plan.archive] == ["notes/archive/2026-02-02.md", "notes/archive/2026-02-03.md"]
    assert memory.archive_dir == "notes/archive" and memory.config.compact.archive_dir == "memory/archive"
    memory.close()  # (read where used: settings given later, `memory.paths` back to memory/, take it along)
    (tmp_path / "memory").mkdir()
    assert make_memory(tmp_path, memory={"paths": ["memory"]}).archive_dir == "memory/archive"


def test_explicit_files(workspace: Path, make_memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = make_memory(workspace)
    plan = plan_compaction(
        memory, files=["memory/2026-02-17.md", str(workspace / "memory/2026-02-16.md")], today=FEB18
    )  # ages do not matter for files given by name
    assert [m.src for m in plan.archive] == ["memory/2026-02-16.md", "memory/2026-02-17.md"]
    assert [s.path for s in plan.summaries] == ["memory/summary-2026-W08.md"]
    monkeypatch.chdir(workspace / "memory")  # a name relative to the current folder works too
    alone = plan_compaction(memory, files=["2026-02-09.md"], today=FEB18)  # 368 characters: nothing to gain
    assert alone.empty and [u.logs for u in alone.unchanged] == [("memory/2026-02-09.md",)]
    outside = tmp_path / "elsewhere" / "2026-01-01.md"
    outside.parent.mkdir()
    outside.write_text("# 2026-01-01\n")
    for name, message in [
        ("memory/MEMORY.md", "not a daily log"),
        (str(outside), "outside the workspace"),
        ("memory/2026-01-09.md", "no such file"),
        ("memory/2026-13-45.md", "not a daily log"),  # no such day: no daily log by its name
    ]:
        with pytest.raises(CompactError, match=message):
            plan_compaction(memory, files=[name], today=FEB18)
    apply_plan(memory, plan_compaction(memory, files=["memory/2026-02-05.md", "memory/2026-02-06.md"], today=FEB18))
    with pytest.raises(CompactError, match="already archived"):
        plan_compaction(memory, files=["memory/archive/2026-02-05.md"], today=FEB18)
    assert issubclass(CompactError, ValueError)


LATE = (
    "# 2026-02-05\n\n## Late notes\n\n- Kafka consumer lag alert threshold set to 5000 messages by Priya.\n"
    "- Hi!\n- Decided to keep 3 partitions per topic until March; revisit at 10,000 orders per hour.\n"
    "- The MSK cluster costs 1,240 USD per month; Dana approved the budget on 4 February.\n"
    "- Schema registry runs on port 8081 behind the internal load balancer.\n"
    "- Marco wrote the runbook for broker restarts in docs/kafka-runbook.md.\n"
    "- Topic names follow <service>.<entity>.<event>, for example orders.order.created.\n"
    "- Consumer groups are named after the service that owns them.\n"
)


def test_a_log_recreated_at_an_archived_date_moves_to_the_day_s_next_free_name(workspace: Path, make_memory) -> None:
    """The archived copy is never written into (an editor's edit could only copy the log's text and delete it,
    losing what a writer added meanwhile): the recreated log moves whole to `2026-02-05.2.md`, linked from there."""
    memory = make_memory(workspace)
    apply_plan(memory, plan_compaction(memory, files=["memory/2026-02-05.md", "memory/2026-02-06.md"], today=FEB18))
    archived = workspace / "memory/archive/2026-02-05.md"
    old = archived.read_bytes()
    (workspace / "memory/2026-02-05.md").write_text(LATE)  # a writer recreated the log after it was archived
    plan = plan_compaction(memory, files=["memory/2026-02-05.md"], today=FEB18)
    assert [(m.src, m.dst) for m in plan.archive] == [("memory/2026-02-05.md", "memory/archive/2026-02-05.2.md")]
    assert plan.to_dict()["archive"] == [{"from": "memory/2026-02-05.md", "to": "memory/archive/2026-02-05.2.md"}]
    assert "move    memory/2026-02-05.md -> memory/archive/2026-02-05.2.md" in plan.describe()
    apply_plan(memory, plan)
    assert archived.read_bytes() == old and not (workspace / "memory/2026-02-05.md").exists()
    assert (workspace / "memory/archive/2026-02-05.2.md").read_text() == LATE
    summary = (workspace / "memory/summary-2026-W06.md").read_text()
    late = [(link, text) for link, _, text in provenance(summary) if link.endswith(".2.md")]
    assert late, summary  # the new lines are cited in their own archived copy
    for link, text in late:
        assert link == "archive/2026-02-05.2.md" and text.split(": ", 1)[-1] in LATE
    hits = memory.search("consumer lag alert 5000", top_k=3)
    assert any(h.source == "memory/archive/2026-02-05.2.md" for h in hits)


def test_two_folders_logs_of_one_day_are_archived_side_by_side(workspace: Path, make_memory) -> None:
    """(audit Z1, 2) memory/2026-02-05.md and memory/projects/2026-02-05.md both went to archive/2026-02-05.md: the
    clash stopped every compaction, now and on any later run. The second takes the day's next free name."""
    memory = make_memory(workspace)
    (workspace / "memory/projects").mkdir()
    (workspace / "memory/projects/2026-02-05.md").write_text(LATE)
    memory.index()
    plan = plan_compaction(memory, files=["memory/2026-02-05.md", "memory/projects/2026-02-05.md"], today=FEB18)
    assert sorted((m.src, m.dst) for m in plan.archive) == [
        ("memory/2026-02-05.md", "memory/archive/2026-02-05.md"),
        ("memory/projects/2026-02-05.md", "memory/archive/2026-02-05.2.md"),
    ]
    apply_plan(memory, plan)
    assert (workspace / "memory/archive/2026-02-05.2.md").read_text() == LATE


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


def test_full_disk_while_writing_the_second_summary_changes_nothing(
    workspace: Path, make_memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = make_memory(workspace)
    memory.index()
    manifest = {s: memory.indexer.ids(s) for s in memory.indexer.manifest()}
    before = snapshot(workspace)
    plan = plan_compaction(memory, today=FEB25)
    calls = _fail_on_call(2, compact_apply._write_temp, monkeypatch, compact_apply, "_write_temp")
    with pytest.raises(CompactError, match=r"No space left on device.*rolled back, memory unchanged"):
        apply_plan(memory, plan)
    assert len(calls) == 2
    assert snapshot(workspace) == before  # no summary, no temporary file, no archive folder, nothing moved
    assert not (workspace / "memory/archive").exists()
    assert {s: memory.indexer.ids(s) for s in memory.indexer.manifest()} == manifest


def test_full_disk_while_installing_after_the_moves_rolls_everything_back(
    workspace: Path, make_memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = make_memory(workspace)
    apply_plan(memory, plan_compaction(memory, today=FEB18))  # so the next plan appends to W07
    before = snapshot(workspace)
    plan = plan_compaction(memory, today=FEB25)
    assert [s.action for s in plan.summaries] == ["append", "create"]
    calls = _fail_on_call(2, compact_apply._install, monkeypatch, compact_apply, "_install")  # W07 in, W08 fails
    with pytest.raises(CompactError, match="rolled back"):
        apply_plan(memory, plan)
    monkeypatch.undo()
    assert len(calls) >= 2
    assert snapshot(workspace) == before  # the appended summary is restored, the originals are back
    apply_plan(memory, plan)  # and the same plan still applies afterwards
    assert len(list((workspace / "memory/archive").iterdir())) == 12


def _logs(*texts: tuple[str, str]) -> list[LogText]:
    return [LogText(f"memory/{d}.md", f"memory/archive/{d}.md", f"archive/{d}.md", d, t) for d, t in texts]


def test_near_duplicates_are_dropped_but_never_lose_a_number_or_name() -> None:
    logs = _logs(
        (
            "2026-03-02",
            "# 2026-03-02\n\n## Deploys\n\n- We deploy the API on Tuesdays.\n"
            "- p95 latency was 280 ms.\n- Use the blue-green script.\n\n```sh\nmake deploy\n```\n",
        ),
        (
            "2026-03-03",
            "# 2026-03-03\n\n## Deploys\n\n- we deploy the API on tuesdays\n"
            "- We deploy the API on Tuesdays, as usual.\n- p95 latency was 250 ms.\n"
            "- Use the blue-green script, said Ana.\n\n```sh\nmake deploy\n```\n",
        ),
    )

    class Synonyms(FakeEmbedder):  # the fake embedder, but chosen lines mean the same thing
        groups: ClassVar[list[set[str]]] = [
            {"We deploy the API on Tuesdays.", "We deploy the API on Tuesdays, as usual."},
            {"p95 latency was 280 ms.", "p95 latency was 250 ms."},
            {"Use the blue-green script.", "Use the blue-green script, said Ana."},
        ]

        def _one(self, text: str) -> list[float]:
            for group in self.groups:
                if text in group:
                    return super()._one(sorted(group)[0])
            return super()._one(text)

    content = ExtractiveSummarizer(Synonyms, 0.92).summarize("2026-W10", logs)  # no budget: keep what is left
    assert content.count("deploy the API on Tuesdays") == 1  # exact duplicate (case, punctuation)
    assert "as usual" not in content  # near duplicate by embedding
    assert "- We deploy the API on Tuesdays.\n" in content
    assert "280 ms" in content and "250 ms" in content  # similar, but a different number: both kept
    assert "said Ana" in content  # a new name: kept
    assert content.count("make deploy") == 1
    assert content.count("### Deploys") == 2 and "## [2026-03-03](archive/2026-03-03.md)\n" in content
    assert "as usual" in ExtractiveSummarizer(Synonyms, 1.5).summarize("2026-W10", logs)  # above 1: off


def test_parse_log_handles_markdown_structure() -> None:
    text = (
        "---\ntags: [x]\n---\n# 2026-03-02\n\nIntro paragraph with a\ncontinuation line.\n\n"
        "Setext topic\n------------\n\n1. first step\n   still the first step\n2. second\n"
        "  - nested under it\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<!-- a comment -->\n\n***\n\n"
        "## Sub # with hash ##\n\n```\n# not a heading\n```\n"
    )
    items = parse_log(
        LogText("memory/2026-03-02.md", "memory/archive/2026-03-02.md", "archive/2026-03-02.md", "2026-03-02", text)
    )
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
    monkeypatch.setattr("memsearch_lsp.core.workspace.create_embedder", lambda *a, **k: FakeEmbedder())


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
    assert 0 < data["chars_after"] < 0.70 * data["chars_before"] and data["chars_before"] == 4661
    code, out, _ = run_cli(["compact", "-w", str(workspace), "--dry-run", "--older-than", "0"], capsys)
    assert code == 0 and "(extractive; 4661 -> " in out.splitlines()[0]
    code, out, _ = run_cli(["compact", "-w", str(workspace), "--dry-run", "--older-than", "100000"], capsys)
    assert code == 0 and "nothing to compact" in out


def test_cli_applies_the_plan(workspace: Path, fake_model, capsys) -> None:
    code, out, _ = run_cli(["compact", "-w", str(workspace), "memory/2026-02-05.md", "memory/2026-02-06.md"], capsys)
    assert code == 0, out
    assert "create  memory/summary-2026-W06.md" in out and "move    memory/2026-02-05.md" in out
    assert (workspace / "memory/archive/2026-02-05.md").read_bytes() == (EXAMPLES / "2026-02-05.md").read_bytes()
    assert "Mitigation: raised the pool timeout to 2 s" in (workspace / "memory/summary-2026-W06.md").read_text()
    code, out, _ = run_cli(
        [
            "search",
            "-w",
            str(workspace),
            "--json",
            "-k",
            "10",
            "--vector-weight",
            "0",
            "Marco provision the MSK cluster",
        ],
        capsys,
    )
    hits = json.loads(out)["hits"]  # a fact the summary left out is found in the archive, marked so
    assert {"source": "memory/archive/2026-02-05.md", "archived": True} in [
        {"source": h["source"], "archived": h["archived"]} for h in hits
    ]


def test_cli_rejects_a_file_that_is_not_a_daily_log(workspace: Path, fake_model, capsys) -> None:
    before = snapshot(workspace)
    code, _, err = run_cli(["compact", "-w", str(workspace), "memory/MEMORY.md"], capsys)
    assert code == 1 and "not a daily log" in err and "Traceback" not in err
    assert snapshot(workspace) == before


@pytest.mark.model
def test_near_duplicates_with_the_real_model() -> None:
    from memsearch_lsp.config import DEFAULT_MODEL
    from memsearch_lsp.core.embedding import create_embedder

    logs = _logs(
        (
            "2026-03-02",
            "# 2026-03-02\n\n## Infra\n\n- Kafka runs on Amazon MSK with 3 brokers; retention "
            "is 7 days.\n- Marco to provision the MSK cluster this week.\n"
            "- p95 latency was 280 ms.\n",
        ),
        (
            "2026-03-03",
            "# 2026-03-03\n\n## Infra\n\n- Kafka runs on MSK with 3 brokers and 7 days "
            "retention.\n- Marco will provision the MSK cluster this week.\n"
            "- p95 latency was 250 ms.\n",
        ),
    )
    summarizer = ExtractiveSummarizer(lambda: create_embedder(DEFAULT_MODEL), 0.92)
    content = summarizer.summarize("2026-W10", logs)  # MiniLM: these pairs score 0.94-0.98 cosine
    assert "Kafka runs on MSK with 3 brokers and 7 days retention" not in content
    assert "Marco will provision" not in content
    assert "280 ms" in content and "250 ms" in content  # 0.96 alike, but the numbers differ


# -- beside writers ------------------------------------------------------------------------------
def test_a_log_written_to_after_planning_is_left_in_place_and_said_so(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    plan = plan_compaction(memory, today=FEB25)
    log = workspace / "memory/2026-02-10.md"
    with log.open("a") as handle:  # an agent appends while the user reviews the plan
        handle.write("- Appended after the plan: the walrus deploy moved to Friday.\n")
    done = compact.apply_checked(memory, plan)
    assert done.left == ("memory/2026-02-10.md",) and done.to_dict()["left"] == ["memory/2026-02-10.md"]
    assert "left memory/2026-02-10.md: changed while being compacted" in done.describe()
    assert "walrus" in log.read_text() and not (workspace / "memory/archive/2026-02-10.md").exists()
    assert len(done.archive) == 11 and "memory/2026-02-10.md" not in {m.src for m in done.archive}
    w07 = (workspace / "memory/summary-2026-W07.md").read_text()
    assert "2026-02-10" not in w07  # the summary made again without it: no line of it, no link to it
    for m in done.archive:  # every archived log is what its summary was made from
        assert (workspace / m.dst).read_bytes() == (EXAMPLES / Path(m.src).name).read_bytes()
    memory.index()
    assert memory.search("walrus deploy Friday", top_k=1, **BM25)[0].source == "memory/2026-02-10.md"


def test_a_line_appended_during_the_move_is_never_archived_unseen(
    workspace: Path, make_memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = make_memory(workspace)
    plan = plan_compaction(memory, today=FEB18)
    real_rename = os.rename
    target = workspace / "memory/2026-02-04.md"
    appended: list[str] = []

    def racing_rename(src: os.PathLike[str], dst: os.PathLike[str]) -> None:
        if Path(src) == target and not appended:  # a writer with the file open appends at the last moment
            appended.append("- Raced line: quokka failover drill at 03:00.\n")
            with target.open("a") as handle:
                handle.write(appended[0])
        real_rename(src, dst)

    monkeypatch.setattr(os, "rename", racing_rename)
    done = compact.apply_checked(memory, plan)
    monkeypatch.undo()
    assert appended and done.left == ("memory/2026-02-04.md",)
    assert target.read_text().endswith(appended[0])  # moved back: the line stays live, not only in the archive
    archived = workspace / "memory/archive"
    assert not (archived / "2026-02-04.md").exists()
    assert not any("quokka" in p.read_text() for p in archived.iterdir())
    assert {p.name for p in archived.iterdir()} == {Path(m.dst).name for m in done.archive}
    assert not [p for p in (workspace / "memory").rglob(".*") if p.is_file()]  # no temporary file left


def test_the_compaction_parser_reads_markdown_as_the_chunker_does() -> None:
    """One Markdown model: front matter, fences and setext headings mean the same to both."""
    from memsearch_lsp.core.chunks import chunk_markdown
    from memsearch_lsp.core.compact.summarize import LogText

    text = (
        "---\ntitle: a YAML block closed by dots is not front matter\n...\n"
        "# 2026-02-09\n\n## Deploys\n\n- shipped 1.4.0\n\n```\n# not a heading 7\n```\n\n"
        "Rollback plan\n-------------\n\n- keep 2 replicas warm\n"
    )
    log = LogText("memory/2026-02-09.md", "memory/archive/2026-02-09.md", "archive/2026-02-09.md", "2026-02-09", text)
    items = parse_log(log)
    headings = {c.heading for c in chunk_markdown(text, log.source) if c.level}
    assert headings == {"2026-02-09", "Deploys", "Rollback plan"}
    assert {i.topic for i in items} >= {"Deploys", "Rollback plan"}
    assert not any("not a heading" in i.topic for i in items)
    assert [i.text for i in items if i.kind == "block"] == ["```\n# not a heading 7\n```"]
    assert any("title: a YAML block" in i.text for i in items)  # not front matter for either
    assert {c.content.splitlines()[0] for c in chunk_markdown(text, log.source) if not c.level} == {"---"}
