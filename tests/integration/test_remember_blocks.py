"""remember() keeps a note one section and out of what follows it: a note that leaves an HTML block open (a comment,
`<pre>`, `<?php`, ...) is closed before anything comes after it, a note that starts like front matter stays whole, and
an addition that would turn a later heading into text is refused, nothing written (issue 25)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from memsearch_lsp.core.chunks import chunk_markdown
from memsearch_lsp.core.notes import append_note, clean_note, insert_in_section

NINE = dt.datetime(2026, 12, 3, 9, 5)
LOG = "memory/2026-12-03.md"
MEMORY = "# Long-term memory\n\n## Notes\n\n- keep me\n\n## People\n\n- Alice owns billing\n\n## Decisions\n\n- Kafka\n"
SECTIONS = ["Long-term memory", "Notes", "People", "Decisions"]

OPEN_BLOCKS = [  # CommonMark HTML blocks 1-5: each ends only at its own end marker
    ("<!--\nTODO: check the retry policy", "-->"),
    ("<pre>\nunclosed", "</pre>"),
    ("<script>\nvar x = 1", "</script>"),
    ("<style>\nbody {}", "</style>"),
    ("<?php\necho 1;", "?>"),
    ("<![CDATA[\ndata", "]]>"),
    ("<!DOCTYPE\nhtml", ">"),
    ("   <!-- indented\nx", "-->"),
    ("text first\n<!--\nmid-note", "-->"),
]


@pytest.mark.parametrize(("note", "closing"), OPEN_BLOCKS)
def test_a_note_that_leaves_an_html_block_open_is_closed_with_its_end_marker(note: str, closing: str) -> None:
    body = clean_note(note)
    assert body == f"{note.strip()}\n{closing}"
    text = insert_in_section(MEMORY, body, "People", "memory/MEMORY.md")
    assert text is not None and [c.heading for c in chunk_markdown(text.text, "memory/MEMORY.md")] == SECTIONS


@pytest.mark.parametrize(("note", "closing"), OPEN_BLOCKS[:3])
def test_a_long_term_note_with_an_open_comment_leaves_the_later_sections_as_they_were(
    workspace: Path, make_memory, note: str, closing: str
) -> None:
    memory_md = workspace / "memory" / "MEMORY.md"
    memory_md.write_text(MEMORY)
    memory = make_memory(workspace)
    memory.remember(note, heading="Notes", long_term=True, now=NINE)
    text = memory_md.read_text()
    assert f"\n{note}\n{closing}\n\n## People\n\n- Alice owns billing\n\n## Decisions\n\n- Kafka\n" in text
    assert memory.search("Alice owns billing", top_k=1)[0].heading == "People"
    fact = memory.remember("retries use exponential backoff", heading="Notes", long_term=True, now=NINE)
    assert fact.chunks[0].heading == "Notes"  # (not the section that came last)
    later = memory.remember("Bob is on call", heading="Oncall", long_term=True, now=NINE)
    assert later.chunks[0].heading == "Oncall"
    first = memory.remember(note, heading="first", now=NINE)
    second = memory.remember("the next note of the day", now=NINE)
    assert first.source == second.source == LOG  # (not the day's next file)
    assert [c.heading for c in chunk_markdown((workspace / LOG).read_text(), LOG)][-2:] == ["first", "09:05"]


def test_an_addition_that_would_hide_a_later_heading_is_refused(workspace: Path) -> None:
    # what clean_note closes; given as it is, the chunker would read the rest of the file as the comment's
    assert insert_in_section(MEMORY, "<!--\nunclosed", "Notes", "memory/MEMORY.md") is None
    assert insert_in_section(MEMORY, "<pre>\nunclosed", "People", "memory/MEMORY.md") is None
    assert append_note("# 2026-12-03\n", "<!--\nunclosed", "09:05", LOG) is None  # the next note would be in it
    assert insert_in_section(MEMORY, "closed\n<!-- -->", "Notes", "memory/MEMORY.md") is not None


def test_a_log_left_with_an_open_comment_by_hand_is_closed_before_the_note(workspace: Path, make_memory) -> None:
    log = workspace / LOG
    log.write_text("# 2026-12-03\n\n## 08:00\n\n<!--\nhidden\n")
    memory = make_memory(workspace)
    note = memory.remember("after the comment", now=NINE)
    assert log.read_text() == "# 2026-12-03\n\n## 08:00\n\n<!--\nhidden\n-->\n\n## 09:05\n\nafter the comment\n"
    assert note.source == LOG and note.chunks[0].heading == "09:05"


FRONT_MATTER = "---\nstatus: decided\nowner: ana\n---\nWe chose Kafka for the event bus."


def test_a_note_that_starts_like_front_matter_stays_one_section(workspace: Path, make_memory) -> None:
    body = clean_note(FRONT_MATTER)
    assert [c.heading for c in chunk_markdown(f"## ADR 7\n\n{body}\n", LOG)] == ["ADR 7"]  # as it sits in the log
    log = workspace / LOG
    log.write_text("# 2026-12-03\n\n## 09:00\n\nHuman note.\n")
    before = log.read_bytes()
    memory = make_memory(workspace)
    note = memory.remember(FRONT_MATTER, heading="ADR 7", now=NINE)
    assert [c.heading for c in note.chunks] == ["ADR 7"]
    content = memory.expand(note.to_dict()["id"]).content
    assert "status: decided" in content and content.endswith("We chose Kafka for the event bus.")
    assert memory.search("Kafka event bus", top_k=1)[0].heading == "ADR 7"
    memory.forget(note.to_dict()["id"])
    assert log.read_bytes() == before  # the whole note goes, nothing of it left behind
