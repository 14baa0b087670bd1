"""Issue 26: summaries keep the facts (labelled lines, numbers, names, causes, preferences), are never empty,
never cut a block, and the CLI says whether anything happened."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from bench.compaction import SETS, Fact, holds, load_facts, paragraphs, run_set, score
from memsearch_lsp import cli
from memsearch_lsp.core.compact.extractive import choose, parse_log, restore_labelled
from memsearch_lsp.core.compact.facts import always_kept, classify
from memsearch_lsp.core.compact.plan import body_budgets, group_floor, plan_compaction
from memsearch_lsp.core.compact.summarize import LOG_FLOOR, MIN_BUDGET, TARGET_RATIO
from memsearch_lsp.core.compact.types import plural
from tests.fakes import FakeEmbedder
from tests.helpers import NOISE, log_text, snapshot

DEC4 = dt.date(2026, 12, 4)

# The logs of the report (at 6d001cc): W47 kept 2 lines of these, W48 only its header.
W47 = {
    "2026-11-16": """# 2026-11-16

## 09:10

Let me look at the slow report queries first. Running EXPLAIN on the monthly report.
- work_mem raised from 4MB to 32MB: the monthly report no longer spills to disk.
- The report's p99 went from 2.4 s to 380 ms.
Still looking at the other reports.
""",
    "2026-11-17": """# 2026-11-17

## 10:02

OK, picking up the consumer again.
- Decision: the orders consumer retries 5 times with exponential backoff because the payment API rate-limits bursts.
- Tried a fixed 10 s delay first; no effect on the 429s, reverted.
Status: tests green.
""",
    "2026-11-18": """# 2026-11-18

## Incident: checkout timeouts

- Root cause: the connection pool was exhausted when max_connections was still 100.
- Fix: max_connections 100 -> 300 and pgbouncer in transaction mode.
Hmm, let me re-run the load test. Yes, it holds now.
""",
    "2026-11-19": """# 2026-11-19

## 16:40

Thanks! Have a nice evening.
- Mara prefers squash merges and wants every migration reviewed by Oskar before it runs.
Status: tests green.
""",
}
W48 = {
    "2026-11-23": """# 2026-11-23

## Release 4.2.0

Watching the dashboards. Looks fine so far.
- Released billing-api 4.2.0 at 11:00 with the new invoice numbering.
- Rollback plan: `helm rollback billing-api 17` and restore the invoice sequence from the 10:45 snapshot.
Status: all green.
"""
}


def write_logs(ws: Path, logs: dict[str, str]) -> None:
    (ws / "memory").mkdir(parents=True, exist_ok=True)
    for day, text in logs.items():
        (ws / "memory" / f"{day}.md").write_text(text, encoding="utf-8")


def compacted(ws: Path, make_memory, files: Sequence[str] | None = None) -> dict[str, str]:
    plan = plan_compaction(make_memory(ws), files=files, today=DEC4)
    return {s.path: s.content for s in plan.summaries}


def body(content: str) -> str:
    """A summary without its title and intro line."""
    return "\n".join(line for line in content.splitlines()[3:])


def test_the_logs_of_the_report_keep_their_facts(tmp_path: Path, make_memory) -> None:
    """Issue 26's report: W47 kept 2 lines of these logs, W48 only its header. They are small (951 and 393
    characters): a summary that keeps their facts would be most of them, so now they stay as they are and
    the plan says so; given room for them (250 characters a log), the summariser keeps the facts, not the noise."""
    write_logs(tmp_path, W47 | W48)
    plan = plan_compaction(make_memory(tmp_path), today=DEC4)
    assert plan.empty and [u.period for u in plan.unchanged] == ["2026-W47", "2026-W48"]
    assert all(u.chars_after >= 0.70 * u.chars_before for u in plan.unchanged)
    w47 = choose(parse_log_all(W47), budget=MIN_BUDGET * len(W47))
    w48 = choose(parse_log_all(W48), budget=MIN_BUDGET * len(W48))
    for fact in [
        "work_mem raised from 4MB to 32MB",
        "2.4 s to 380 ms",
        "Decision: the orders consumer retries 5 times with exponential backoff because the payment API "
        "rate-limits bursts",
        "Root cause: the connection pool was exhausted",
        "Fix: max_connections 100 -> 300",
        "Mara prefers squash merges and wants every migration reviewed by Oskar",
    ]:
        assert fact in w47, (fact, w47)
    for fact in [
        "Released billing-api 4.2.0 at 11:00",
        "Rollback plan: `helm rollback billing-api 17` and restore the invoice sequence",
    ]:
        assert fact in w48, (fact, w48)
    everything = w47 + w48
    for noise in [
        "Let me look",
        "Still looking",
        "Status: tests green",
        "Thanks!",
        "Tried a fixed 10 s delay",
        "Watching the dashboards",
        "Hmm",
    ]:
        assert noise not in everything, (noise, everything)
    assert "## 09:10" not in everything and "## 16:40" not in everything  # a time is not a topic


def parse_log_all(logs: dict[str, str]) -> list:
    return [item for day, text in logs.items() for item in parse_log(log_text(day, text))]


def test_one_small_log_is_never_an_empty_summary_nor_a_bigger_one(tmp_path: Path, make_memory) -> None:
    """'Compact this log' on one log went 392 -> 68 characters, an empty body without its decision (issue 26);
    then a 254-character log became a 284-character summary (issue 39): now it is left as it is."""
    write_logs(
        tmp_path,
        {
            "2026-11-20": """# 2026-11-20

## API shape

Morning! Let me read the portal requirements.
- Decision: no GraphQL; the portal uses the REST API with its OpenAPI schema.
- The portal needs six endpoints; Lena owns the contract.
OK, that's it for today. Tests pass, nothing else.
"""
        },
    )
    plan = plan_compaction(make_memory(tmp_path), files=["memory/2026-11-20.md"], today=DEC4)
    assert plan.empty and not plan.archive and plan.unchanged[0].chars_after >= 0.70 * plan.unchanged[0].chars_before
    assert plan.note.startswith("nothing to gain: a summary of 1 daily log would be") and "left as it is" in plan.note
    log = log_text("2026-11-20", (tmp_path / "memory/2026-11-20.md").read_text())
    content = choose(parse_log(log), budget=MIN_BUDGET)  # what it would have been: never empty
    assert "- Decision: no GraphQL; the portal uses the REST API with its OpenAPI schema." in content
    assert "Lena (owns the contract)" in content  # on the People line


def test_three_tiny_logs_are_left_as_they_are(tmp_path: Path, make_memory) -> None:
    """Three logs of 348 characters became 478 characters of summary: never bigger, never for little gain."""
    write_logs(
        tmp_path,
        {
            "2026-11-23": "# 2026-11-23\n\n- Redis maxmemory set to 2gb.\n",
            "2026-11-24": "# 2026-11-24\n\n- Kafka retention is 3 days.\n",
            "2026-11-25": "# 2026-11-25\n\n- Deploys freeze from 2026-12-20.\n",
        },
    )
    plan = plan_compaction(make_memory(tmp_path), today=DEC4)
    assert plan.empty and [u.logs for u in plan.unchanged] == [tuple(f"memory/2026-11-2{d}.md" for d in (3, 4, 5))]
    assert "nothing to gain" in plan.describe() and (tmp_path / "memory/2026-11-23.md").is_file()


def test_a_log_of_bare_headings_or_small_talk_still_gets_a_line() -> None:
    headings = log_text("2026-11-12", "# 2026-11-12\n\n## Queue\n\n### Switched the jobs queue to SQS\n\n## 14:00\n")
    assert "- Switched the jobs queue to SQS\n" in choose(parse_log(headings), budget=300)  # its title says it
    talk = log_text("2026-11-13", "# 2026-11-13\n\n## 09:00\n\nHi! Thanks a lot, see you tomorrow.\n")
    kept = choose(parse_log(talk), budget=300).split("\n\n", 1)[1]  # nothing better: still not empty
    assert kept.startswith("- ") and kept[2:].strip() in "Hi! Thanks a lot, see you tomorrow."


def test_budgets_share_the_ratio_and_give_small_logs_a_minimum() -> None:
    sizes, frames, logs = [10_000, 6_000, 600], [90, 90, 90], [5, 3, 2]
    budgets = body_budgets(sizes, frames, logs)
    assert budgets[2] == group_floor(2) == MIN_BUDGET + LOG_FLOOR  # two small logs: the minimum, not 40 % of 600
    assert budgets[:2] == [int(TARGET_RATIO * 16_600 - 270) * n // 16_600 for n in sizes[:2]]
    assert budgets[0] + budgets[1] <= TARGET_RATIO * sum(sizes) - sum(frames)


def test_labelled_lines_are_kept_even_over_the_budget() -> None:
    log = log_text(
        "2026-11-10",
        "# 2026-11-10\n\n## Notes\n\n- Decision: we ship on Thursdays only.\n"
        "- Root cause: the cron ran twice because of DST.\n- TODO: rotate the S3 keys.\n"
        "- p95 went from 900 ms to 120 ms after the index.\n",
    )
    text = choose(parse_log(log), budget=10)
    for line in [
        "Decision: we ship on Thursdays only.",
        "Root cause: the cron ran twice because of DST.",
        "TODO: rotate the S3 keys.",
    ]:
        assert line in text
    assert "p95" not in text  # over the budget: only what is always kept
    assert always_kept("Rollback plan", "") and always_kept("", "TODO write the docs")
    assert not always_kept("Ines", "Ines: hello") and not always_kept("Status", "Status: green")


def test_blocks_are_kept_whole_or_by_their_gist_never_cut() -> None:
    table = "| service | p99 | owner |\n|---|---|---|\n" + "".join(
        f"| svc-{n} | {100 + n} ms | Team {n} |\n" for n in range(12)
    )
    trace = (
        "```\nTraceback (most recent call last):\n"
        + "".join(f'  File "/app/mod{n}.py", line {n}, in f{n}\n' for n in range(8))
        + "psycopg.OperationalError: connection refused on port 6432\n```\n"
    )
    short = "```ini\nworkers = 8\ntimeout = 30\n```\n"
    log = log_text("2026-11-11", f"# 2026-11-11\n\n## Latency\n\n{table}\n## Crash\n\n{trace}\n## Config\n\n{short}")
    text = choose(parse_log(log), budget=2000)
    assert text.count("```") % 2 == 0  # every fence is closed
    assert short.strip() in text  # a short block: whole
    assert not re.search(r"^\|", text, re.M)  # a long table: its rows as sentences, never a part of the table
    assert "service: svc-0, p99: 100 ms, owner: Team 0" in text
    assert "`psycopg.OperationalError: connection refused on port 6432`" in text  # a trace: by its error
    assert 'File "/app/mod3.py"' not in text
    assert "\n\n\n" not in text  # one blank line between a heading and a block, and after the block


def test_a_short_block_under_its_heading_has_one_blank_line_around_it() -> None:
    body = "## Config we settled on\n\n```toml\nsize = 32\n```\n\n## Next\n\n- Decision: use Postgres 16 for billing\n"
    text = choose(parse_log(log_text("2026-11-12", f"# 2026-11-12\n\n{body}")), budget=2000)
    assert "- Decision: use Postgres 16 for billing\n\n### Config we settled on\n\n```toml\nsize = 32\n```\n" in text
    assert "\n\n\n" not in text


def test_fact_classes_are_found_by_content() -> None:
    assert {"setting", "number"} <= classify("max_connections 100 -> 300 for the launch").kinds
    assert {"decision", "reason"} <= classify("We switched to httpx because requests has no async").kinds
    assert "preference" in classify("Mara prefers squash merges").kinds
    assert "version" in classify("Upgraded to Django 5.1.2 today").kinds
    assert "date" in classify("The freeze starts on 2026-12-20").kinds
    assert "cause" in classify("It turned out the pool was exhausted").kinds
    assert "role" in classify("Oskar owns the billing service").kinds
    for noise in [
        "Let me check the logs again.",
        "Still waiting for CI.",
        "Thanks, have a nice weekend!",
        "Tried a bigger heap; no effect, reverted.",
    ]:
        facts = classify(noise)
        assert facts.noise and facts.score < 3, (noise, facts)


def test_a_model_summary_gets_back_the_labelled_lines_it_dropped() -> None:
    log = log_text(
        "2026-11-17",
        "# 2026-11-17\n\n## Consumer\n\n- **Decision**: retries 5 times with backoff.\n"
        "- Root cause: the API rate-limits bursts.\n- Some chatter.\n",
    )
    answer = "## Consumer\n\n- Root cause: the API rate-limits bursts ([2026-11-17#L6](archive/2026-11-17.md#L6))\n"
    whole = restore_labelled(answer, [log])
    assert whole.startswith(answer.rstrip())
    assert (
        "## Kept word for word\n\n### [2026-11-17](archive/2026-11-17.md)\n\n"
        "- Decision: retries 5 times with backoff.\n" in whole
    )
    assert whole.count("Root cause") == 1 and "chatter" not in whole
    assert restore_labelled(whole, [log]) == whole  # nothing lacking: unchanged


# -- the CLI says what happened ------------------------------------------------------------------
@pytest.fixture
def fake_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memsearch_lsp.core.workspace.create_embedder", lambda *a, **k: FakeEmbedder())


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert cli.main(args) == 0
    return capsys.readouterr().out


def test_cli_applied_and_dry_run_are_said_differently(tmp_path: Path, fake_model, capsys) -> None:
    write_logs(tmp_path, {day: text + NOISE for day, text in W47.items()} | W48)  # W48: one log, no noise
    (tmp_path / "memory" / "MEMORY.md").write_text("# Memory\n")
    ws = ["-w", str(tmp_path)]
    before = snapshot(tmp_path)
    dry = run(["compact", *ws, "--dry-run"], capsys)
    assert snapshot(tmp_path) == before
    assert re.match(
        r"would compact 4 daily logs into 1 summary \(extractive; \d+ -> \d+ characters, \d+%\): "
        r"nothing changed \(dry run\)\n",
        dry,
    ), dry
    assert "  keep    memory/2026-11-23.md: nothing to gain (a summary would be" in dry  # W48 stays as it is
    small = run(["compact", *ws, "--dry-run", "memory/2026-11-23.md"], capsys)
    assert re.match(
        r"nothing to gain: a summary of 1 daily log would be \d+% of its 271 characters; left as it is: "
        r"nothing changed \(dry run\)\n  keep    memory/2026-11-23.md: nothing to gain",
        small,
    ), small
    data = json.loads(run(["compact", *ws, "--dry-run", "--json"], capsys))
    assert data["applied"] is False
    one = run(["compact", *ws, "memory/2026-11-16.md"], capsys)
    assert re.match(r"compacted 1 daily log into 1 summary \(extractive; .*\): applied\n", one), one
    assert (tmp_path / "memory/archive/2026-11-16.md").is_file()
    data = json.loads(run(["compact", *ws, "--json", "memory/2026-11-17.md", "memory/2026-11-18.md"], capsys))
    assert data["applied"] is True and len(data["archive"]) == 2 and data["nothing_to_gain"] == []
    left = json.loads(run(["compact", *ws, "--json", "memory/2026-11-23.md"], capsys))
    assert left["applied"] is False and left["summaries"] == [] and left["archive"] == []
    (kept,) = left["nothing_to_gain"]
    assert (
        kept
        == {
            "period": "2026-W48",
            "logs": ["memory/2026-11-23.md"],
            "chars_before": 271,
            "chars_after": kept["chars_after"],
        }
        and kept["chars_after"] >= 0.70 * 271
    )
    assert (tmp_path / "memory/2026-11-23.md").read_text() == W48["2026-11-23"]  # left as it is
    nothing = run(["compact", *ws, "--dry-run", "--older-than", "100000"], capsys)
    assert nothing.startswith("nothing to compact") and nothing.rstrip().endswith(": nothing changed (dry run)")
    assert plural(1, "daily log") == "1 daily log" and plural(2, "summary", "summaries") == "2 summaries"


# -- the benchmark ---------------------------------------------------------------------------------
def test_bench_scores_a_fact_only_when_one_line_holds_all_its_tokens() -> None:
    fact = Fact("x", "setting", "2026-11-12", ("max_connections", "300"))
    assert holds("- max_connections 100 -> 300 (L9)", fact)
    assert not holds("- max_connections raised\n- to 300", fact)  # split across lines: not kept
    got = score([fact], "- MAX_CONNECTIONS is 300", 1000, 380)
    assert got["kept"] == 1 and got["ratio"] == 0.38 and got["lost"] == []


def test_bench_set_meets_the_target_and_every_fact_is_in_its_log() -> None:
    for folder in SETS:
        for fact in load_facts(folder):  # the labels are right: each fact is in its log (a paragraph of it)
            assert holds(paragraphs((folder / "memory" / f"{fact.log}.md").read_text(encoding="utf-8")), fact), fact
    row = run_set(SETS[0], embedder=FakeEmbedder())  # the development set, near-duplicates by the fake model
    assert row["kept_share"] >= 0.90 and row["ratio"] <= 0.40, {k: row[k] for k in ("kept", "ratio", "lost")}
    assert row["empty_summaries"] == []


def test_no_day_goes_missing_though_the_labelled_lines_fill_the_budget() -> None:
    """A user's week: the labelled lines of five days took the whole budget, and the sixth day, of plain facts
    (moment.js to date-fns, 68 KB less), got no section, though a summary has a section per log."""
    logs = {
        "2026-11-05": "# 2026-11-05\n\n## Incident\n\nRoot cause: the JWT signing key was rotated in Vault but the "
        "auth service cached the old JWKS for 1 hour. Fix: JWKS cache TTL lowered to 5 minutes.\n",
        "2026-11-07": "# 2026-11-07\n\n## 11:00\n\nFrontend: switched the date picker from moment.js to date-fns; "
        "bundle size dropped by 68 KB gzipped.\n",
    }
    text = chosen(logs, budget=120)
    assert "Root cause: the JWT signing key" in text  # (kept over the budget, as always)
    assert "2026-11-07" in text and "68 KB" in text, text


def test_every_open_checklist_item_is_kept_whatever_its_section_is_called() -> None:
    """A review found open boxes dropped under `## To do`, `## Open items` or `## Tasks` (kept only under headings
    such as `## Todo`): what is still to do is kept, as a TODO is."""
    for heading in ("To do", "Open items", "Tasks", "Release checklist v2.3.0"):
        log = f"# 2026-02-05\n\n## {heading}\n- [x] tag v2.3.0\n- [ ] rotate the prod DB password\n- [ ] email legal\n"
        text = chosen(
            {"2026-02-05": log + "\n## Notes\n\n" + "Some talk about the offsite, nothing decided. " * 9}, 120
        )
        assert "- [ ] rotate the prod DB password" in text and "- [ ] email legal" in text, (heading, text)
        assert "tag v2.3.0" not in text and "offsite" not in text, text
    assert always_kept("", "[ ] announce in #eng") and not always_kept("", "[x] announce in #eng")


def chosen(logs: dict[str, str], budget: int) -> str:
    """The extractive summary of the daily logs {day: text} in `budget` characters."""
    return choose([item for day, text in logs.items() for item in parse_log(log_text(day, text))], budget=budget)
