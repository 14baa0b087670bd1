"""Chunker: heading chunks with real tree-sitter, and its properties under hypothesis."""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from memsearch_lsp.core.chunks import (
    MAX_CHARS,
    body_of,
    chunk_id,
    chunk_markdown,
    empty_section,
    heading_rows,
    log_date,
    merge_conflict,
    normalize_newlines,
)

DOC = """---
title: notes
---
Intro before any heading.

# Title
body line
```python
# not a heading
x = 1
```
Setext Heading
==============
text under setext

## Sub ##
more
"""


def test_headings_preamble_fences_setext_and_front_matter() -> None:
    chunks = chunk_markdown(DOC, "memory/2026-02-09.md", model="m")
    assert [(c.heading, c.level, c.start_line, c.end_line) for c in chunks] == [
        ("", 0, 4, 4),
        ("Title", 1, 6, 11),
        ("Setext Heading", 1, 12, 14),
        ("Sub", 2, 16, 17),
    ]
    assert chunks[3].heading_path == ("Setext Heading", "Sub")
    assert "# not a heading" in chunks[1].content
    assert all("title: notes" not in c.content for c in chunks)
    assert chunks[1].content == "\n".join(DOC.split("\n")[5:11])
    assert {c.date for c in chunks} == {"2026-02-09"}


def test_id_depends_on_place_text_and_model() -> None:
    a = chunk_markdown("# A\ntext\n", "m.md", model="one")[0]
    assert a.id == chunk_id("m.md", 1, 2, a.content_hash, "one") and len(a.id) == 16
    assert chunk_markdown("# A\ntext\n", "m.md", model="two")[0].id != a.id
    assert chunk_markdown("\n# A\ntext\n", "m.md", model="one")[0].id != a.id
    assert chunk_markdown("\n# A\ntext\n", "m.md", model="one")[0].embed_hash == a.embed_hash


def test_long_section_splits_at_blank_lines_and_keeps_fences_whole() -> None:
    paragraphs = [f"para {i} " + "word " * 60 for i in range(12)]
    fence = "```\n" + "\n".join(f"code line {i}" for i in range(20)) + "\n```"
    text = "# Big\n\n" + "\n\n".join([*paragraphs[:6], fence, *paragraphs[6:]]) + "\n"
    chunks = chunk_markdown(text, "big.md")
    assert len(chunks) >= 3
    assert all(len(c.content) <= MAX_CHARS for c in chunks)
    assert all(c.heading == "Big" and c.heading_path == ("Big",) for c in chunks)
    assert sum(fence in c.content for c in chunks) == 1  # the fence is never cut
    assert all(c.embed_text.startswith("Big\n") for c in chunks)


def test_crlf_and_missing_final_newline() -> None:
    chunks = chunk_markdown("# A\r\none\r\n# B\rtwo", "x.md")
    assert [(c.heading, c.start_line, c.end_line, c.content) for c in chunks] == [
        ("A", 1, 2, "# A\none"),
        ("B", 3, 4, "# B\ntwo"),
    ]


def test_log_date() -> None:
    assert log_date("memory/2026-02-09.md") == "2026-02-09"
    assert log_date("memory/MEMORY.md") == ""


# -- properties ------------------------------------------------------------------------------
line = st.one_of(
    st.from_regex(r"#{1,6} [A-Za-z0-9 ]{1,20}", fullmatch=True),
    st.from_regex(r"[A-Za-z0-9 ,.]{1,60}", fullmatch=True),
    st.just(""),
    st.just("```"),
    st.just("# inside maybe"),
    st.just("---"),
    st.just("==="),
    st.just("- item"),
    st.just("> quote"),
    st.text(max_size=30).map(lambda s: s.replace("\r", "")),
)
docs = st.lists(line, max_size=60).map(lambda ls: "\n".join(ls) + "\n")


def _front_matter_rows(lines: list[str]) -> int:
    if lines and lines[0] == "---" and "---" in lines[1:]:
        return lines[1:].index("---") + 2
    return 0


def _fence_rows(lines: list[str]) -> set[int]:
    """Rows inside fences; fences start only after the front matter (which is not Markdown)."""
    inside, rows = False, set()
    front = _front_matter_rows(lines)
    for i, text in enumerate(lines):
        if i < front:
            continue
        if text.startswith("```"):
            rows.add(i)
            inside = not inside
        elif inside:
            rows.add(i)
    return rows


@given(docs)
def test_chunks_never_overlap_and_cover_every_nonblank_line(text: str) -> None:
    chunks = chunk_markdown(text, "p.md")
    lines = normalize_newlines(text).split("\n")
    covered: list[int] = []
    for c in chunks:
        assert 1 <= c.start_line <= c.end_line <= len(lines)
        assert c.content == "\n".join(lines[c.start_line - 1 : c.end_line])
        covered.extend(range(c.start_line, c.end_line + 1))
    assert len(covered) == len(set(covered)), "chunks overlap"
    assert covered == sorted(covered)
    front = _front_matter_rows(lines)
    missing = [i + 1 for i, t in enumerate(lines) if t.strip() and (i + 1) not in set(covered)]
    assert all(n <= front for n in missing), f"uncovered lines {missing}"


@given(docs)
@example(text="---\n# 0\n```\n# 0\n---\n```\n# inside maybe\n")  # found in CI: a fence after front matter
@example(text="# 0\nx\x00\n# 1\n")  # found with 4,000 examples: U+0000 hid the next heading
def test_every_top_level_atx_heading_starts_a_chunk_and_fenced_hashes_never_do(text: str) -> None:
    chunks = chunk_markdown(text, "p.md")
    lines = normalize_newlines(text).split("\n")
    starts = {c.start_line for c in chunks}
    fenced = _fence_rows(lines)
    for c in chunks:
        if c.level > 0 and c.start_line == min(x.start_line for x in chunks if x.heading_path == c.heading_path):
            assert (c.start_line - 1) not in fenced, f"a line inside a fence started chunk {c.start_line}"
    for i, t in enumerate(lines):
        if (
            re.fullmatch(r"#{1,6} [A-Za-z0-9 ]*[A-Za-z0-9][A-Za-z0-9 ]*", t)
            and i not in fenced
            and i >= _front_matter_rows(lines)
        ):
            assert (i + 1) in starts, f"heading on line {i + 1} does not start a chunk"


def test_nul_is_read_as_replacement_character_and_hides_no_heading() -> None:
    chunks = chunk_markdown("# 0\nx\x00\n# 1\n", "n.md")
    assert [(c.heading, c.start_line, c.end_line) for c in chunks] == [("0", 1, 2), ("1", 3, 3)]
    assert chunks[0].content == "# 0\nx\x00"  # the text itself is kept as written


def test_setext_heading_starts_a_chunk() -> None:
    chunks = chunk_markdown("intro\n\nTitle\n-----\nbody\n", "s.md")
    assert [(c.heading, c.start_line) for c in chunks] == [("", 1), ("Title", 3)]


@given(st.text(max_size=400))
@example(text="# 0\nx\x00\n# 1\n")
def test_random_text_never_raises(text: str) -> None:
    for c in chunk_markdown(text, "r.md"):
        assert c.start_line <= c.end_line


def test_a_heading_whose_body_is_one_block_over_the_limit_goes_with_it() -> None:
    """Never a chunk of the heading alone: search drops such a chunk as empty, and forty of them took every
    candidate's place (a one-word query found nothing at -k 3, 20 hits at -k 50)."""
    body = "We chose Redis for the cache. " + "Detail about eviction policy and memory limits. " * 60
    chunks = chunk_markdown(f"# 2026-12-06\n\n## Cache decision\n\n{body}\n\n## Short\n\nok\n", "m.md")
    assert [(c.heading, c.start_line, c.end_line) for c in chunks] == [
        ("2026-12-06", 1, 1),
        ("Cache decision", 3, 5),
        ("Short", 7, 9),
    ]
    assert chunks[1].content.startswith("## Cache decision\n\nWe chose Redis")


def test_a_list_item_or_quote_over_a_rule_is_text_and_a_setext_heading_is_not() -> None:
    """(audit R, 2) any second line of `---` was taken for a setext underline: a list item or a quote before a
    thematic break (common in logs) was dropped as a heading, the chunk "empty". Tree-sitter says which it is."""
    item = "- Call the vet about the quetzal vaccination on Friday\n---"
    assert [c.level for c in chunk_markdown(item + "\n\n# Other\n\ntext\n", "memory/a.md")] == [0, 1]
    assert body_of(item) == "- Call the vet about the quetzal vaccination on Friday ---" and not empty_section(item)
    assert body_of("> a quote\n---") == "> a quote ---" and body_of("1. step\n===\nmore") == "1. step === more"
    assert heading_rows("Title\n---\nbody") == 2 and body_of("Title\n---\nbody") == "body"
    assert heading_rows("A title\non two lines\n===\n\nbody") == 3
    assert empty_section("## Atx") and not empty_section("text\n\n---")
    assert heading_rows("```\n# in a fence\n```") == 0 and heading_rows("- a\n- b\n\nTitle\n---") == 0


def test_a_setext_heading_alone_is_its_text_never_an_empty_section() -> None:
    """(audit G, 2) a note over a `---` rule, or over the `=======` of a merge conflict, is a setext heading to
    CommonMark: alone, it was "a heading alone" and search, `recent` and the session's context dropped it."""
    assert body_of("A title\non two lines\n===") == "A title on two lines" and body_of("Title\n---\nbody") == "body"
    assert not empty_section("Chose Postgres for the billing ledger.\n---") and not empty_section("Setext\n======")
    assert empty_section("## 10:00") and empty_section("# 2026-11-06\n")


def test_a_merge_conflict_is_its_three_markers_in_order() -> None:
    assert merge_conflict("x\n<<<<<<< HEAD\na\n=======\nb\n>>>>>>> alice\n")
    assert merge_conflict("<<<<<<< HEAD\r\na\r\n||||||| base\r\no\r\n=======\r\n>>>>>>> 1a2b3c (theirs)")  # diff3, CRLF
    assert not merge_conflict("Title\n=======\n") and not merge_conflict("<<<<<<< a\n>>>>>>> b\n")
    assert not merge_conflict("=======\n<<<<<<< a\n>>>>>>> b") and not merge_conflict("<<<<<<<a\n=======\n>>>>>>>b")


def test_a_byte_order_mark_is_no_text_of_the_first_line() -> None:
    """(audit R, 7) a buffer or a file decoded with replacement may start with U+FEFF: the first heading was
    '\\ufeff# Title' (no heading at all to tree-sitter); the lines keep their numbers."""
    chunks = chunk_markdown("\ufeff# BOM Title\r\n\r\nbody\r\n## Child\r\nmore\r\n", "memory/a.md")
    assert [(c.heading, c.heading_path, c.start_line, c.end_line, c.content[:2]) for c in chunks] == [
        ("BOM Title", ("BOM Title",), 1, 3, "# "),
        ("Child", ("BOM Title", "Child"), 4, 5, "##"),
    ]
    assert normalize_newlines("\ufeffa\rb") == "a\nb" and normalize_newlines("a\ufeff") == "a\ufeff"
