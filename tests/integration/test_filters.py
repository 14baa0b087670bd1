"""Search filters: --since/--until (ISO or relative dates) and --source globs, applied to both legs'
candidates (never to the top k afterwards), on real Milvus Lite, through the mirror and through Milvus."""

from __future__ import annotations

import datetime as dt
import logging
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest

from memsearch_lsp.core.chunks import log_date
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.search.filters import FilterError, make_filter, named_day, parse_date, source_period
from memsearch_lsp.core.search.hybrid import bounded

TODAY = dt.date(2026, 3, 10)


def test_dates_iso_relative_and_bad() -> None:
    assert parse_date("2026-02-09", TODAY) == dt.date(2026, 2, 9)
    assert parse_date("7d", TODAY) == dt.date(2026, 3, 3)
    assert parse_date("2w", TODAY) == dt.date(2026, 2, 24)
    assert parse_date("today", TODAY) == TODAY
    assert parse_date("yesterday", TODAY) == dt.date(2026, 3, 9)
    for bad in ("last week", "2026-13-01", "7x", ""):
        with pytest.raises(FilterError, match="YYYY-MM-DD"):
            parse_date(bad, TODAY)
    with pytest.raises(FilterError, match="empty"):
        make_filter(since="2026-03-01", until="2026-02-01", today=TODAY)


def test_a_chunks_date_is_its_logs_day_or_its_summarys_period() -> None:
    assert source_period("memory/2026-02-09.md") == (dt.date(2026, 2, 9),) * 2
    assert source_period("memory/2026-02-09.2.md") == (dt.date(2026, 2, 9),) * 2
    assert source_period("memory/summary-2026-W06.md") == (dt.date(2026, 2, 2), dt.date(2026, 2, 8))
    assert source_period("memory/summary-2026-02.md") == (dt.date(2026, 2, 1), dt.date(2026, 2, 28))
    assert source_period("memory/summary-2026-12.md") == (dt.date(2026, 12, 1), dt.date(2026, 12, 31))
    assert source_period("memory/summary-2026-02-09.md") == (dt.date(2026, 2, 9),) * 2
    assert source_period("memory/MEMORY.md") is None
    assert source_period("memory/notes-2026-02-09.md") is None
    assert source_period("memory/2026-02-29.md") is None and log_date("memory/2026-02-29.md") == ""  # no such day
    week = make_filter(since="2026-02-07", until="2026-02-07", today=TODAY)
    assert week.allows("memory/summary-2026-W06.md")  # the period overlaps the range
    assert not week.allows("memory/summary-2026-W07.md")
    assert not week.allows("memory/MEMORY.md")  # undated: out whenever a date filter is given
    assert make_filter(source=["**/MEMORY.md"], today=TODAY).allows("memory/MEMORY.md")


def _workspace(tmp_path: Path) -> Path:
    """Many loud chunks that are not wanted and a few quiet ones that are: a top k filtered afterwards
    would keep none of the quiet ones."""
    ws = tmp_path / "ws"
    mem = ws / "memory"
    mem.mkdir(parents=True)
    loud = "".join(f"## Kafka note {n}\n\nkafka kafka kafka broker retention kafka {n}\n\n" for n in range(12))
    (mem / "MEMORY.md").write_text("# Memory\n\n" + loud, encoding="utf-8")
    (mem / "2026-03-09.md").write_text("# 2026-03-09\n\n" + loud, encoding="utf-8")
    (mem / "2026-02-02.md").write_text(
        "# 2026-02-02\n\n## Old broker\n\nwe compared a kafka broker once\n", encoding="utf-8"
    )
    (mem / "2026-02-20.md").write_text(
        "# 2026-02-20\n\n## Broker pick\n\nthe kafka broker choice was made\n", encoding="utf-8"
    )
    (mem / "summary-2026-W08.md").write_text(
        "# Summary 2026-W08\n\n## Week\n\nkafka broker settled this week\n", encoding="utf-8"
    )
    return ws


def test_filters_restrict_both_legs_candidates(tmp_path: Path, make_memory: Callable[..., Memory]) -> None:
    memory = make_memory(_workspace(tmp_path), search={"candidates": 3})
    memory.clock = lambda: dt.datetime(2026, 3, 10, 12, 0)
    memory.index()
    everything = memory.search("kafka broker", top_k=3)
    assert {h.source for h in everything} <= {"memory/MEMORY.md", "memory/2026-03-09.md"}

    february = memory.search("kafka broker", top_k=3, since="2026-02-15", until="2026-02-28")
    assert {h.source for h in february} == {"memory/2026-02-20.md", "memory/summary-2026-W08.md"}
    # a summary carries its period's first day, as the filter dates it (2026-W08: 16 to 22 February)
    assert {h.source: h.date for h in february} == {
        "memory/2026-02-20.md": "2026-02-20",
        "memory/summary-2026-W08.md": "2026-02-16",
    }

    relative = memory.search("kafka broker", top_k=5, until="14d")  # on or before 2026-02-24
    assert {h.source for h in relative} == {
        "memory/2026-02-02.md",
        "memory/2026-02-20.md",
        "memory/summary-2026-W08.md",
    }
    for vector_weight in (0.0, 1.0):  # each leg alone honours the filter
        one_leg = memory.search(
            "kafka broker",
            top_k=3,
            since="2026-02-01",
            until="2026-02-10",
            vector_weight=vector_weight,
            bm25_weight=1 - vector_weight,
        )
        assert {h.source for h in one_leg} == {"memory/2026-02-02.md"}

    globbed = memory.search("kafka broker", top_k=3, source=["memory/2026-02-*", "**/summary-*"])
    assert {h.source for h in globbed} == {"memory/2026-02-02.md", "memory/2026-02-20.md", "memory/summary-2026-W08.md"}
    assert memory.search("kafka broker", top_k=3, source="nothing/**") == []
    assert memory.search("kafka broker", top_k=3, since="2027-01-01") == []
    with pytest.raises(FilterError):
        memory.search("kafka", since="last tuesday")


def test_a_source_glob_meets_a_file_name_stored_decomposed_and_the_other_way_round(
    tmp_path: Path, make_memory: Callable[..., Memory]
) -> None:
    """macOS (HFS+) and files synced from it store `orçamento-café.md` decomposed (NFD): a --source typed as a
    keyboard writes it (NFC) never matched, though search printed the same-looking name (audit Z2, 6). The names stay
    as stored."""
    (tmp_path / "memory").mkdir()
    stored = unicodedata.normalize("NFD", "memory/orçamento-café.md")
    composed = "memory/ação-diária.md"
    (tmp_path / stored).write_text("# Orçamento café\n\nO orçamento do café da equipe subiu.\n", encoding="utf-8")
    (tmp_path / composed).write_text("# Ação diária\n\nO orçamento da ação diária caiu.\n", encoding="utf-8")
    memory = make_memory(tmp_path)
    memory.index()
    assert {h.source for h in memory.search("orçamento", top_k=5)} == {stored, composed}
    for glob in ("memory/orçamento-café.md", "memory/orçamento*", "**/*café.md", stored, "memory/orç*"):
        assert [h.source for h in memory.search("orçamento", top_k=5, source=glob)] == [stored], glob
    for glob in (unicodedata.normalize("NFD", "memory/ação*"), unicodedata.normalize("NFD", composed)):
        assert [h.source for h in memory.search("orçamento", top_k=5, source=glob)] == [composed], glob


def test_the_one_day_a_query_names_is_read_in_the_forms_people_write_it() -> None:
    today = dt.date(2026, 12, 6)  # a Sunday
    named = {
        "what happened on 2026-11-11": dt.date(2026, 11, 11),
        "what happened on 11 November": dt.date(2026, 11, 11),
        "the 3rd of March outage": dt.date(2026, 3, 3),
        "Nov 11th, 2025 incident": dt.date(2025, 11, 11),
        "what did we ship on December 20": dt.date(2025, 12, 20),  # no year: the last one up to today
        "what happened yesterday": dt.date(2026, 12, 5),
        "what did we decide last Tuesday about the cache": dt.date(2026, 12, 1),
        "this past Sunday's notes": dt.date(2026, 11, 29),  # a weekday: the last one before today
    }
    for query, day in named.items():
        assert named_day(query, today) == day, query
    assert named_day("the 2026-11-11T10:00 deploy", today) == dt.date(2026, 11, 11)
    for query in (
        "deploys go out on Tuesday",
        "what did we do in May",
        "2026-02-30",
        "3 of 5 replicas",
        "yesterday or 2026-01-02",  # two days
        "30 Feb",
        "v2.3.0",
        "why step 2 may fail",  # a modal verb, a word, a short form in lower case, a range: no day
        "top 10 march madness",
        "sprint 12 dec",
        "November 11-12",
        "11-12 November",
        "fix the login timeout bug today",  # "today" asks about no day's notes
    ):
        assert named_day(query, today) is None, query


def test_a_29_february_without_a_year_is_the_last_one_up_to_today() -> None:
    """(audit S, 3) "February 29th" in a year without one named no day at all: the notes of the last one never came
    first. It is the last 29 February up to today, 8 years back at most (1900 and 2100 have none)."""
    assert named_day("otter standup on February 29th", dt.date(2026, 12, 7)) == dt.date(2024, 2, 29)
    assert named_day("29 Feb notes", dt.date(2028, 2, 10)) == dt.date(2024, 2, 29)
    assert named_day("29 Feb notes", dt.date(2028, 3, 1)) == dt.date(2028, 2, 29)
    assert named_day("29 Feb notes", dt.date(2103, 3, 1)) == dt.date(2096, 2, 29)
    assert named_day("30 Feb", dt.date(2028, 3, 1)) is None


def test_a_search_that_names_a_day_gives_that_days_notes_first(tmp_path: Path, make_memory) -> None:
    """ "What happened on 11 November" shares no word with the notes of that day: they come first all the same,
    then the best other note; a day without a log changes nothing, nor does an explicit date filter."""
    memory_dir = tmp_path / "memory"
    memory_dir.mkdir()
    (memory_dir / "MEMORY.md").write_text("# Memory\n\n## Cache\n\nThe cache TTL is 24 hours.\n", encoding="utf-8")
    for day, text in (
        ("2026-11-10", "Raised the webhook backoff cap to 8000 ms."),
        ("2026-11-11", "Incident INC-77: checkout 502s for 11 minutes; a ConfigMap had UPSTREAM_TIMEOUT=3."),
        ("2026-11-12", "The cache TTL goes from 24 to 72 hours for idempotency keys."),
    ):
        (memory_dir / f"{day}.md").write_text(f"# {day}\n\n## 10:00\n\n{text}\n", encoding="utf-8")
    memory = make_memory(tmp_path)
    memory.clock = lambda: dt.datetime(2026, 11, 13, 9, 0)
    memory.index()
    for query in ("what happened on 11 November", "what happened on 2026-11-11", "what happened last Wednesday"):
        asked = len(memory.embedder.texts)
        hits = memory.search(query, 3)
        assert hits and hits[0].source == "memory/2026-11-11.md", (query, hits)
        assert memory.embedder.texts[asked:] == [query], "the day's search and the rest's embed the query once"
    cache = memory.search("cache TTL yesterday", 3)  # the day's note first, and the best other one kept
    assert [h.source for h in cache[:2]] == ["memory/2026-11-12.md", "memory/MEMORY.md"], cache
    plain = [h.source for h in memory.search("cache TTL", 3)]
    assert [h.source for h in memory.search("cache TTL on 1 November", 3)] == plain  # no log of that day: as before
    filtered = memory.search("what happened on 11 November", 3, since="2026-11-12")  # a filter given: it decides
    assert {h.source for h in filtered} == {"memory/2026-11-12.md"}, filtered


def test_a_long_query_is_said_to_be_cut_once_however_often_it_is_asked(caplog: pytest.LogCaptureFixture) -> None:
    """The CLI asks a second time for what the floor hid: one warning, not two."""
    query = "wombat " * 2000
    with caplog.at_level(logging.WARNING, logger="memsearch_lsp"):
        assert bounded(query) == bounded(query) and len(bounded(query)) < len(query)
    assert [r.getMessage() for r in caplog.records].count(
        f"the query is {len(query):,} characters long: its first {len(bounded(query)):,} are searched"
    ) == 1
