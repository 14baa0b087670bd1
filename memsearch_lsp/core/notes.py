"""What `remember` writes: a note made safe for the log (control characters out, fences closed, size capped),
a heading of its own, the text appended to a daily log or inserted into a section of MEMORY.md, and the
file operations that write it (regular files only, never through a link).

Each addition is checked with the chunker before anything is written: a note that would not start a chunk
of its own is never appended (`core.memory.Memory.remember` then takes the day's next log file).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from memsearch_lsp.core.chunks import (
    CONFLICTED,
    chunk_markdown,
    merge_conflict,
    normalize_newlines,
    open_block,
    outline,
    quote_conflict,
    valid_unicode,
)
from memsearch_lsp.core.files import MAX_FILE_BYTES, not_all_indexed, read_text, writing
from memsearch_lsp.core.filewrite import no_room, replace_file, write_all
from memsearch_lsp.core.onboard import daily_log_text
from memsearch_lsp.core.redact import find_secrets, redact, safe_text, secret_values, without_private

log = logging.getLogger(__name__)

MAX_NOTE_BYTES = 64 * 1024  # a longer note is refused whole (exit 1), nothing written
MAX_HEADING_CHARS = 200
# C0 and C1 control characters other than tab and newline, DEL, and lone surrogates: none belongs in a note
# (a NUL makes the whole log read as binary).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
BULLET = re.compile(r"^\s{0,3}[-*+]\s")
# the Markdown marks a heading made from a text leaves out (the Claude Code hook's `topic`): `*`, backticks, brackets,
# and underscores at a word's edge
_MARKS = re.compile(r"[`*\[\]]|(?<!\w)_+|_+(?!\w)")


EMPTY_NOTE = "nothing to remember: the text is empty (or all of it private)"


class NoteError(ValueError):
    """A note that cannot be remembered as given (empty, too long); nothing was written."""


def clean_text(text: str) -> str:
    """`text` with newlines normalised and control characters other than tab and newline removed."""
    return _CONTROL.sub("", normalize_newlines(valid_unicode(text)))


def check_note(text: str, max_bytes: int = MAX_NOTE_BYTES) -> str:
    """`text` cleaned and stripped; NoteError when it is empty or too long to be a note (what `clean_note` refuses
    before it looks for secrets: a command checks a note with it before it opens a memory)."""
    body = clean_text(text).strip()
    if not body:
        raise NoteError(EMPTY_NOTE)
    _fits(body, max_bytes)
    return body


def clean_note(text: str, max_bytes: int = MAX_NOTE_BYTES) -> str:
    """The note to append: cleaned, its `<private>` spans removed and its secrets redacted (core/redact.py),
    stripped, a code fence or HTML block it leaves open closed (`-->`, `</pre>`, ...: what follows it in its file
    stays outside it), its own headings made bold lines, the markers of a merge conflict it quotes indented; NoteError
    when empty or too long."""
    body = safe_text(check_note(text, max_bytes)).strip()  # (a note too long is refused before secrets are looked for)
    _fits(body, max_bytes)
    closing = open_block(_in_log(body))
    body = one_section(quote_conflict(f"{body}\n{closing}" if closing else body)).strip()
    if not body:
        raise NoteError(EMPTY_NOTE)
    return body


def _in_log(body: str) -> list[str]:
    """The lines of `body` as the note sits in its log: after its heading (so a leading `---` is no front matter)."""
    return ["## note", "", *body.split("\n")]


def _fits(body: str, max_bytes: int) -> None:
    size = len(body.encode("utf-8"))
    if size > max_bytes:
        raise NoteError(
            f"the note is {size} bytes; notes are limited to {max_bytes // 1024} KiB "
            "(put long material in a file of its own and remember a pointer to it)"
        )


def one_section(body: str) -> str:
    """`body` with each of its own headings (ATX or setext, any level) made a bold line of its own paragraph, so the
    note is one section under the heading `remember` gives it, and one chunk while it fits: the id `remember` answers
    holds the whole note, a search hit on its text names the note's heading, and `forget` takes the note out whole."""
    lines = _in_log(body)  # (read where it will be: `key: value` over `---` is a heading there, no front matter)
    for head in reversed(outline(lines)[0][1:]):
        before = [""] if head.row > 0 and lines[head.row - 1].strip() else []
        after = [""] if head.end_row + 1 < len(lines) and lines[head.end_row + 1].strip() else []
        bold = [f"**{head.title}**"] if head.title else []
        lines[head.row : head.end_row + 1] = [*before, *bold, *after]  # (a blank line around: never a setext text)
    return "\n".join(lines[2:])


def clean_heading(heading: str | None, note: str = "") -> str:
    """A heading on one line: control characters and white space runs collapsed, `#` runs at the ends dropped, at
    most MAX_HEADING_CHARS characters; secrets redacted with its `note`'s (a password the note names, here too, and
    as a heading says it without Markdown's marks: `Wq7*Rt5...`, `[Kx9]Lm2...` as `Wq7Rt5...`, `Kx9Lm2...`)."""
    line = " ".join(clean_text(heading or "").split())
    if not line or not note:
        return safe_text(line).strip("# ").strip()[:MAX_HEADING_CHARS].rstrip() if line else ""
    said = f"{line}\n{note}"  # (the heading too: a secret it alone says, found with the note's words around it)
    known = secret_values(said, find_secrets(said))
    known.update({plain: kind for value, kind in known.items() if len(plain := _MARKS.sub("", value)) >= 6})
    return redact(without_private(line), known).strip("# ").strip()[:MAX_HEADING_CHARS].rstrip()


def open_fence(text: str) -> str:
    """The closing line for a code fence that `text` leaves open (CommonMark rules), else ''."""
    fence = ""
    for line in text.split("\n"):
        if not fence:
            opened = _FENCE_OPEN.match(line)
            if opened and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
                fence = opened.group(1)
        else:
            stripped = line.strip()
            if (
                line[:4].strip()
                and stripped
                and set(stripped) == {fence[0]}
                and len(stripped) >= len(fence)
                and len(line) - len(line.lstrip(" ")) <= 3
            ):
                fence = ""
    return fence


def unique_heading(heading: str, taken: set[str]) -> str:
    """`heading`, or `heading (2)`, `(3)`, ... when a heading of that name is already in the log."""
    if heading not in taken:
        return heading
    n = 2
    while f"{heading} ({n})" in taken:
        n += 1
    return f"{heading} ({n})"


@dataclass(frozen=True)
class Addition:
    """A file's new text (LF lines); `appended` is what to append when the change only appends, else `lines` go in
    before its line `at` (0-based), every other byte of the file kept. The note's heading and lines (1-based)."""

    text: str
    appended: str | None
    heading: str
    first: int
    last: int
    at: int = 0
    lines: tuple[str, ...] = ()


def _end(before: str) -> str:
    """The line end the new text ends with: none when `before` has a last line without one (the file's own way)."""
    return "" if before and not before.endswith("\n") else "\n"


def _closing(lines: list[str]) -> list[str]:
    closing = open_block(lines)  # (a code fence or HTML block a person left open: the note stays out of it)
    return [closing] if closing else []


def append_note(before: str, body: str, heading: str, source: str, taken: set[str] | None = None) -> Addition | None:
    """`before` with `## heading` and `body` appended (a fence or HTML block left open is closed first, the heading made
    unique in the file and among `taken`); None when the note would not start a chunk of its own."""
    title = unique_heading(heading, {c.heading for c in chunk_markdown(before, source)} | (taken or set()))
    lines = before.split("\n")
    if lines[-1] == "":
        lines.pop()
    new = [*_closing(lines), *([""] if lines else []), f"## {title}", "", *body.split("\n")]
    while lines and new[0] == "" and lines[-1].strip() == "":  # one blank line before the heading
        new.pop(0)
    joined = "\n".join(new) + _end(before)
    appended = ("" if before.endswith("\n") or not before else "\n") + joined
    first = len(lines) + new.index(f"## {title}") + 1
    return _checked(before + appended, appended, title, first, len(lines) + len(new), source, _kept(lines))


def insert_in_section(before: str, body: str, section: str, source: str) -> Addition | None:
    """`before` with `body` added at the end of its first section titled `section` (any level, case
    ignored), or under a new `## section` at the end; every line already there stays as it was. A one-line
    note joins a bullet list as a bullet. None when the result would not chunk as meant."""
    lines = before.split("\n")
    if lines[-1] == "":
        lines.pop()
    headings = outline(lines)[0] if lines else []
    found = [h for h in headings if h.title.casefold() == section.casefold()]
    if not found:
        return append_note(before, body, section, source)
    head = found[0]
    stop = next((h.row for h in headings if h.row > head.row and h.level <= head.level), len(lines))
    end = stop
    while end > head.end_row + 1 and not lines[end - 1].strip():
        end -= 1
    closing = _closing(lines[head.row : end])
    bullet = "\n" not in body and not closing and end > head.end_row + 1 and BULLET.match(lines[end - 1])
    note = (body if body.lstrip().startswith(("-", "*", "+")) else f"- {body}") if bullet else body
    new = [*closing, *([] if bullet else [""]), *note.split("\n")]
    if stop < len(lines) and end == stop:  # no blank line before the next heading: keep one
        new.append("")
    text = "\n".join(lines[:end] + new + lines[end:]) + _end(before)
    first = end + len(closing) + (0 if bullet else 1) + 1
    last = first + note.count("\n")
    appended = text[len(before) :] if text.startswith(before) else None
    kept = _kept(lines[:end]) + _kept(lines[end:], end + len(new))
    added = _checked(text, appended, head.title, first, last, source, kept, section_row=head.row + 1)
    return added and replace(added, at=end, lines=tuple(new))


def _kept(lines: list[str], moved: int = 0) -> list[tuple[int, str]]:
    """(line, title) of each heading of `lines` once they are `moved` down by that many lines."""
    return [(h.row + 1 + moved, h.title) for h in (outline(lines)[0] if lines else [])]


def _checked(
    text: str,
    appended: str | None,
    heading: str,
    first: int,
    last: int,
    source: str,
    kept: list[tuple[int, str]],
    section_row: int = 0,
) -> Addition | None:
    """The addition when the chunker sees the file as meant: the note's heading and every heading `kept` (the ones
    there before, where they are now) each start a chunk, and nothing is left open to take in what comes next."""
    starts = {(c.start_line, c.heading) for c in chunk_markdown(text, source)}
    if (section_row or first, heading) not in starts or not starts.issuperset(kept):
        return None
    return None if open_block(text.removesuffix("\n").split("\n")) else Addition(text, appended, heading, first, last)


# -- the files ---------------------------------------------------------------------------------------
def read_note_file(path: Path, name: str) -> tuple[str, str] | None:
    """(text, problem) of a log a note may go to; None when it does not exist yet; NoteError at once when it
    is there but not a regular file (a FIFO, a device, a link): it is never opened for reading or writing."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise NoteError(f"{path.parent.name} is not a folder; move it away and remember again") from None
    if not stat.S_ISREG(info.st_mode):
        raise NoteError(f"{name} is not a regular file (a link, FIFO or device); move it away and remember again")
    try:
        return read_text(path)
    except PermissionError as exc:  # (a daily log's note goes to the day's next file; MEMORY.md's is refused)
        return "", f"it cannot be read ({exc.strerror})"


def line_end(text: str) -> str:
    """The line end of `text`'s last line that has one (CRLF, CR or LF), LF when none has: the note's lines get it."""
    found = re.search(r"(\r\n|\r|\n)[^\r\n]*\Z", text)
    return found.group(1) if found else "\n"


def write_note_file(path: Path, before: str | None, addition: Addition) -> None:
    """Write `addition` to `path` (`before`: its text as read): create it, append to it, or (a section insertion)
    replace it atomically with a file of the same mode that has every byte it had (a byte order mark, invalid UTF-8)
    and the new lines, each with the file's own line end. Never follows a link; nothing is written when `path` is not
    regular, or is left when a write fails."""
    flags = os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if before is None:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644)
        data = addition.text
    elif addition.appended is not None:
        fd = os.open(path, flags | os.O_APPEND)
        data = addition.appended.replace("\n", line_end(before))  # (a file of CRLF or CR lines gets those)
    else:
        exact = read_exact(path, path.name)
        rows = LINE.findall(exact)
        if as_indexed(exact) != normalize_newlines(before) or not 0 < addition.at < len(rows):
            raise NoteError(f"{path.name} changed meanwhile; nothing was written: try again")
        end = line_end(rows[addition.at - 1])
        replace_file(
            path, "".join([*rows[: addition.at], *(line + end for line in addition.lines), *rows[addition.at :]])
        )
        return
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NoteError(f"{path.name} is not a regular file")
        write_all(fd, data.encode("utf-8"), path if before is None else None)
    finally:
        os.close(fd)


LONG_TERM = "MEMORY.md"
LONG_TERM_TEXT = "# Long-term memory\n\n"
MAX_DAY_FILES = 99  # YYYY-MM-DD.md, then YYYY-MM-DD.2.md ... when a log is full or unreadable


class _NextFile(Exception):
    """This log cannot take the note cleanly; the day's next file can."""


def _free(source: str) -> bool:
    return False


def append_to_day(
    folder: Path,
    day: dt.date,
    body: str,
    title: str,
    source_of: Callable[[Path], str],
    busy: Callable[[str], bool] = _free,
) -> tuple[str, Addition]:
    """Append the note to the day's log in `folder` (under `title`, unique among the day's files: `recent` orders a
    minute's notes by it), or to the day's next file when a log cannot take it cleanly or is `busy` (an editor holds
    unsaved changes to it); its source and where it went."""
    names = [f"{day.isoformat()}.md", *(f"{day.isoformat()}.{n}.md" for n in range(2, MAX_DAY_FILES + 1))]
    taken = {heading for name in names[1:] if os.path.lexists(folder / name) for heading in _headings(folder / name)}
    for n, name in enumerate(names, 1):
        header = daily_log_text(day.isoformat() if n == 1 else f"{day.isoformat()} ({n})")
        try:
            return write_note(
                folder / name, source_of, header, lambda before, src: append_note(before, body, title, src, taken), busy
            )
        except _NextFile as why:
            log.info("%s: %s; the note goes to the day's next file", name, why)
            taken.update(_headings(folder / name))  # (the log itself is read once when it takes the note)
    raise NoteError(f"{day.isoformat()} already has {MAX_DAY_FILES} full log files")


def _headings(path: Path) -> set[str]:
    """The headings of the note file at `path` (none when it cannot be read)."""
    with contextlib.suppress(NoteError, OSError):
        if found := read_note_file(path, path.name):
            return {c.heading for c in chunk_markdown(normalize_newlines(found[0]), path.name)}
    return set()


def add_long_term(
    folder: Path, body: str, title: str, source_of: Callable[[Path], str], busy: Callable[[str], bool] = _free
) -> tuple[str, Addition]:
    """Add a lasting fact to MEMORY.md in `folder`, at the end of the section `title`; NoteError (nothing written)
    when the file cannot take it: it is not a regular file, cannot be read, is `busy` or would grow too large."""
    try:
        path = folder / LONG_TERM
        return write_note(
            path, source_of, LONG_TERM_TEXT, lambda before, src: insert_in_section(before, body, title, src), busy
        )
    except _NextFile as why:
        raise NoteError(f"{LONG_TERM} cannot take the note ({why}); nothing was written") from None


def write_note(
    path: Path,
    source_of: Callable[[Path], str],
    header: str,
    add: Callable[[str, str], Addition | None],
    busy: Callable[[str], bool] = _free,
) -> tuple[str, Addition]:
    """Add to the note file at `path` (`header` starts a new one) what `add(text before, source)` makes; _NextFile
    when it cannot take it cleanly: an editor holds unsaved changes to it (`busy`: its save would drop the note),
    it cannot be read, or it has bytes that are not UTF-8 and the note goes inside it (only an append keeps them).
    `source_of` raises PathError for a path outside the workspace."""
    source = source_of(path)  # PathError before anything is written outside the workspace
    if busy(source):
        raise _NextFile("an editor holds unsaved changes to it")
    found = read_note_file(path, source)
    raw = header if found is None else found[0]
    before = normalize_newlines(raw)  # (lines as the chunker counts them; the file's own line ends are written back)
    if found is not None and found[1] and not found[0]:
        raise _NextFile(found[1])
    if merge_conflict(before):  # (`git checkout --theirs` of it would drop the note)
        raise _NextFile(CONFLICTED)
    addition = add(before, source)
    if addition is None:
        raise _NextFile("the note would not start a section of its own there")
    if found is not None and found[1] and addition.appended is None:
        raise _NextFile(found[1])
    if found is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        source_of(path)  # the folder may be a link to outside
    elif why := not_all_indexed(addition.text, source):
        raise _NextFile(why)
    try:
        with writing(path.parent):  # (a read-only memory folder: named, with what to do)
            write_note_file(path, None if found is None else raw, addition)
    except OSError as exc:  # (the file is as it was: see files.write_all)
        if not (cause := no_room(exc)):
            raise
        raise NoteError(f"cannot write {path}: {cause} ({exc.strerror}); nothing was written") from exc
    return source, addition


LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # a line with its own ending, as normalize_newlines counts


def read_exact(path: Path, name: str) -> str:
    """The note file's text with every byte kept (invalid UTF-8 as lone surrogates, CR and CRLF as they are), for a
    rewrite that changes only the lines it adds or removes; '' when it is gone. NoteError when it is no regular file."""
    if read_note_file(path, name) is None:
        return ""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        return handle.read(MAX_FILE_BYTES + 1).decode("utf-8", "surrogateescape")


def as_indexed(exact: str) -> str:
    """`exact` (read_exact) as the index reads it: invalid UTF-8 replaced, no byte order mark, newlines plain LF."""
    text = exact.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return normalize_newlines(text)


# -- a note already there, a note taken out ----------------------------------------------------------
def sections(lines: list[str]) -> list[tuple[int, int, int, int]]:
    """(heading row, its last row, section stop row (exclusive), level) of each heading in `lines`: a section
    runs to the next heading of its level or above."""
    headings = outline(lines)[0] if lines else []
    out = []
    for n, h in enumerate(headings):
        stop = next((o.row for o in headings[n + 1 :] if o.level <= h.level), len(lines))
        out.append((h.row, h.end_row, stop, h.level))
    return out


def same_note(text: str, body: str, long_term: bool = False) -> tuple[int, int] | None:
    """The lines (1-based, inclusive) of a note of `text` that already says `body`: a `##` note whose whole
    body it is, or (`long_term`) a line of a section that reads `body` or `- body`; None when there is none."""
    lines = normalize_newlines(text).split("\n")
    wanted = body.strip()
    for row, end_row, stop, level in sections(lines):
        section = lines[end_row + 1 : stop]
        if level >= 2 and "\n".join(section).strip() == wanted:
            return row + 1, row + len("\n".join(lines[row:stop]).rstrip().split("\n"))
        if long_term and "\n" not in wanted:
            for n, line in enumerate(section):
                if line.strip() in (wanted, f"- {wanted}", f"* {wanted}"):
                    return end_row + 2 + n, end_row + 2 + n
    return None
