"""Taking a note out of its file (`forget`): which lines are the note, and the file written back byte for byte but
for them (invalid UTF-8, CR and CRLF line ends as they were)."""

from __future__ import annotations

from pathlib import Path

from memsearch_lsp.core.chunks import CONFLICT_MARK, CONFLICTED, merge_conflict, normalize_newlines, outline
from memsearch_lsp.core.files import writing
from memsearch_lsp.core.filewrite import replace_file
from memsearch_lsp.core.notes import BULLET, LINE, NoteError, read_exact, sections


def notes_of(lines: list[str]) -> list[tuple[int, int]]:
    """The notes a section's body holds, as (first, last) rows of `lines` (0-based, inclusive): its paragraphs,
    top-level list items (with their indented lines) and headings; a fenced block belongs to the note it follows."""
    headings, fences, _ = outline(lines)
    heads = {row: h.row for h in headings for row in range(h.row, h.end_row + 1)}  # row -> its heading's first
    fenced = {row for start, end in fences for row in range(start, end + 1)}
    out: list[list[int]] = []
    inside = False  # the last note goes on with the next line
    item = -1  # the indentation of the last note's bullet (-1: no list item): a line indented more goes on
    for row, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        bullet = row not in fenced and row not in heads and bool(BULLET.match(line))
        goes_on = bool(out) and (
            (row in fenced and row - 1 in fenced)
            or (row in heads and heads[row] != row)
            or (row not in heads and not (bullet and indent <= item) and (inside or (item >= 0 and indent > item)))
        )
        if not line.strip() and row not in fenced:
            inside = False
        elif goes_on and not (bullet and (item < 0 or indent <= item)):
            out[-1][1] = row  # (a nested item, an indented line: part of the item above)
            inside = row not in heads
        else:
            out.append([row, row])
            inside, item = row not in heads, indent if bullet else -1
    return [(first, last) for first, last in out]


def note_at(
    lines: list[str],
    first: int,
    last: int,
    wanted: tuple[int, int] | None,
    curated: bool,
    where: str,
    made: bool = False,
) -> tuple[int, int]:
    """The lines (1-based, inclusive) `forget` takes out of the section at `first`..`last` of `lines`: the notes
    (paragraphs, list items) at the lines `wanted` (a line, or `remember`'s start and end lines: the whole section
    when they hold its heading, or `made`, and all of its notes; a heading outside them stays, as `init` or the user
    wrote it), else the whole section, but for a `curated` one (MEMORY.md) only its note: its heading goes with
    it only when `remember` `made` it for that note; NoteError when `wanted` is in no note of it, or when the
    section is `curated` and holds several notes."""
    notes = [(first + a, first + b) for a, b in notes_of(lines[first - 1 : last])[1:]]  # (the heading comes first)
    title = lines[first - 1].strip()
    if wanted is not None:
        start, end = wanted
        picked = [note for note in notes if note[0] <= end and start <= note[1]]
        if not first <= start <= end <= last or not picked:
            shown = start if start == end else f"{start}-{end}"
            raise NoteError(
                f"line {shown} is in none of the notes of the section {title!r} of {where} (lines {first}-{last})"
            )
        whole = (start == first or made) and len(picked) == len(notes)
        return (first, last) if whole else (picked[0][0], picked[-1][1])
    if curated and len(notes) > 1:  # (long-term facts share a section: taking it out would take all of them)
        raise NoteError(
            f"the section {title!r} of {where} holds {len(notes)} notes (lines {first}-{last}); forget takes out one: "
            "give its lines, as `remember` reported them (the CLI's --line START-END, MCP's line and end_line)"
        )
    return notes[0] if curated and notes and not made else (first, last)  # (a heading a person wrote stays)


def section_of(text: str, line: int, where: str = "the file") -> tuple[int, int]:
    """The 1-based lines of the note that holds `line`: its outermost section below the file's title (heading to
    the line before the next heading of its level or above, blank lines after it included: its `###` parts, written
    by hand or by an older `remember`, go with it); NoteError with the reason when that is no
    note: text before the first heading, or a file's `#` title, or a note with a line of a merge conflict in `where`."""
    lines = normalize_newlines(text).split("\n")
    found = [s for s in sections(lines) if s[0] <= line - 1 < s[2]]
    if not found:
        raise NoteError("it is the text before the file's first heading, not a note: edit the file to change it")
    notes = [s for s in found if s[3] >= 2]  # a note is its `##` section: a `###` part of it goes with it
    row, _, stop, level = min(notes, key=lambda s: (s[3], s[0])) if notes else max(found, key=lambda s: s[0])
    if merge_conflict(text) and any(CONFLICT_MARK.match(said) for said in lines[row:stop]):
        raise NoteError(f"{where}: the note is part of an {CONFLICTED}")  # (it would take git's markers)
    if level < 2:
        raise NoteError(
            f"it is the file's title ({lines[row].strip()!r}), not a note: forget its notes one by one, "
            "or delete the file"
        )
    return row + 1, stop


def without_section(exact: str, first: int, last: int) -> str:
    """`exact` (read_exact) without lines `first`..`last` (1-based, inclusive) and one blank line beside them (the one
    `remember` put there); every other line keeps its bytes and its own line ending, and the file ends as it did."""
    lines = LINE.findall(exact)
    kept, at = lines[: first - 1] + lines[last:], first - 1  # (`at`: where the note was)
    blank_before = at > 0 and not kept[at - 1].strip()
    if blank_before and at < len(kept) and not kept[at].strip():
        del kept[at]  # one blank line where the note was, not two
    elif blank_before and at == len(kept) and kept[at - 1] in ("\n", "\r\n", "\r") and (at < 2 or kept[at - 2].strip()):
        del kept[at - 1]  # the one empty line `remember` puts before a note it appends
    if kept and last >= len(lines) and not lines[-1].endswith(("\n", "\r")):
        kept[-1] = kept[-1].rstrip("\r\n")  # the file ends as it did: without a line end
    return "".join(kept)


def rewrite_note_file(path: Path, name: str, before: str, after: str) -> None:
    """Replace the note file at `path` by `after` when it still holds `before` (both read_exact text: every byte
    written back as it was read; a regular file, never a link); NoteError when it changed meanwhile."""
    if read_exact(path, name) != before or not before:
        raise NoteError(f"{name} changed meanwhile; nothing was removed: try again")
    with writing(path.parent):  # (a read-only memory folder: named, not the temporary file)
        replace_file(path, after)
