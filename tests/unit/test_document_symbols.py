"""The editor's outline (textDocument/documentSymbol) of a long log: its structure, in time linear in its headings."""

from __future__ import annotations

import pytest
from pygls.workspace import PositionCodec

from memsearch_lsp.core.chunks import Chunk, chunk_markdown
from memsearch_lsp.lsp.convert import document_symbols
from tests.helpers import script_section

SECTIONS = 200_000  # `##` notes under one day: 5 MB of log; the outline's time grew with the square of this


def day_log(sections: int) -> list[Chunk]:
    """The chunks of `# 2026-12-06` followed by `sections` notes of 4 lines; every 1000th note has a `###` part."""
    source, day = "memory/2026-12-06.md", "2026-12-06"
    chunks = [Chunk(source, day, (day,), 1, 1, 2, f"# {day}\n")]
    line = 3
    for n in range(sections):
        chunks.append(Chunk(source, f"note {n}", (day, f"note {n}"), 2, line, line + 3, f"## note {n}\n\nsaid {n}\n"))
        line += 4
        if n % 1000 == 0:
            path = (day, f"note {n}", "detail")
            chunks.append(Chunk(source, "detail", path, 3, line, line + 2, f"### detail\n\nmore on {n}"))
            line += 3
    return chunks


@pytest.mark.timeout(60)  # (a hang guard: a parent's list of children was copied for each child, 100 s here)
def test_the_outline_of_a_log_of_many_notes_nests_them_under_the_day() -> None:
    """(audit K, 4) documentSymbol took 13 s for 32,000 headings and blocked the server (a list copied per sibling);
    the outline is built in one pass. Time figures: bench, not here."""
    chunks = day_log(SECTIONS)
    roots = document_symbols(PositionCodec(), chunks)
    assert [r.name for r in roots] == ["2026-12-06"]
    day = roots[0]
    notes = list(day.children or [])
    assert len(notes) == SECTIONS and [n.name for n in notes[:2]] == ["note 0", "note 1"]
    assert notes[-1].name == f"note {SECTIONS - 1}" and day.range.end == notes[-1].range.end
    assert day.range.end.line == chunks[-1].end_line - 1  # (0-based, as LSP counts lines)
    with_parts = [n for n in notes if n.children]
    assert len(with_parts) == SECTIONS // 1000 and all(len(n.children or []) == 1 for n in with_parts)
    first = with_parts[0]
    assert (first.children or [])[0].name == "detail" and first.range.end == (first.children or [])[0].range.end
    assert [n.detail for n in (day, notes[1], (first.children or [])[0])] == ["h1", "h2", "h3"]


def test_the_pieces_of_a_long_section_merge_and_a_repeated_heading_stays_its_own() -> None:
    """(audit R, 1) a chunk with the heading path of the one before was taken as the next piece of a long section:
    the second `## Monday` vanished into the first. A piece is merged only when it does not open with a heading."""
    long_body = "\n\n".join(f"paragraph {n} about the release train and its rollback plan" for n in range(60))
    text = f"# Standup\n\n## Monday\n\n{long_body}\n\n## Monday\n\nsecond Monday\n\nMonday\n------\n\nthird, setext\n"
    chunks = chunk_markdown(text, "memory/standup.md")
    assert sum(c.heading == "Monday" for c in chunks) > 3  # the first Monday in pieces
    (standup,) = document_symbols(PositionCodec(), chunks)
    lines = text.split("\n")
    first_end = lines.index("## Monday", 3) - 2  # (its last paragraph; a blank line before the next heading)
    assert [(s.name, s.range.start.line, s.range.end.line) for s in standup.children or []] == [
        ("Monday", 2, first_end),
        ("Monday", first_end + 2, first_end + 4),
        ("Monday", first_end + 6, first_end + 9),
    ]


def test_a_piece_that_opens_inside_a_code_block_is_no_heading_of_its_own() -> None:
    """A long section cut into pieces inside its code block: a piece opening on a script's `# step 27` comment was
    taken as a repeated heading, and the outline showed `Setup script` three times."""
    text = script_section()
    chunks = chunk_markdown(text, "memory/MEMORY.md")
    pieces = [c for c in chunks if c.heading == "Setup script"]
    assert len(pieces) > 2 and any(c.content.startswith("# step") for c in pieces[1:])
    (notes,) = document_symbols(PositionCodec(), chunks)
    end = text.split("\n").index("```", 5)
    assert [(s.name, s.range.start.line, s.range.end.line) for s in notes.children or []] == [
        ("Setup script", 2, end),
        ("Other", end + 2, end + 4),
    ]
