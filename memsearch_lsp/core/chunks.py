"""Chunk and chunk_markdown(): split Markdown into heading chunks with tree-sitter-markdown (pure)."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

MAX_CHARS = 1500
MAX_FILE_CHUNKS = 5000  # chunks indexed of one file (a 1 MiB log of 200-character sections has 5,000)
CHUNKING = "3"  # bump when the chunks of a text change: an index of another chunking is rewritten (core/index.py)
# The dense leg embeds a chunk in windows of about this many characters and scores the chunk by its
# best window: the model reads 256 tokens (~1000 characters), and a shorter window keeps one topic of a
# long chunk from being averaged away by the rest (bench/README.md: dense recall@5 0.53 -> 0.62).
WINDOW_CHARS = 500
# A chunk is embedded in at most this many windows (~64 KB, about what the store keeps of its text): a pasted
# minified file or a data: URI on one line (a line is never split into chunks) would otherwise cost minutes of
# embedding for vectors of text that no snippet shows; BM25 still reads the whole chunk.
MAX_WINDOWS = 128
# A daily log: YYYY-MM-DD.md, or the day's next file (YYYY-MM-DD.2.md ...) when `remember` found one full.
DATE_RE = re.compile(r"(?:^|/)(\d{4}-\d{2}-\d{2})(?:\.(\d{1,3}))?\.md$")
# 16 hex characters not inside a longer ASCII word (more hex, an identifier): after Chinese text (`详见<id>。`) too,
# whose letters `\b` counts as a word's
CHUNK_ID_RE = re.compile(r"(?<![0-9A-Za-z_])[0-9a-f]{16}(?![0-9A-Za-z_])")
ATX_OPENING = re.compile(r"^\s{0,3}#{1,6}(\s+|$)")  # the one heading pattern: an ATX opening sequence
_UNDERLINE = re.compile(r"^\s{0,3}(=+|-+)\s*$")  # a setext underline, or a thematic break: tree-sitter tells
_CONFLICT_START = re.compile(r"^<{7}(?: |$)")  # the lines git writes around a merge conflict
_CONFLICT_END = re.compile(r"^>{7}(?: |$)")
CONFLICT_MARK = re.compile(r"^(?:<{7}|\|{7}|={7}|>{7})(?: |$)")  # any of them (diff3's `||||||| base` too)


def valid_unicode(text: str) -> str:
    """`text` with every lone surrogate (JSON's "\\ud800", a file name's undecodable byte) replaced by "?": such a
    string cannot be encoded, embedded, written or sent back."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def chunk_id(source: str, start_line: int, end_line: int, content_hash: str, model: str) -> str:
    return sha256(f"{source}:{start_line}:{end_line}:{content_hash}:{model}")[:16]


def log_date(source: str) -> str:
    """'memory/2026-02-09.md' -> '2026-02-09'; '' for files that are not daily logs (`2026-02-29.md` neither: no
    such day, so no date in results, and left out by a date filter, as undated files are)."""
    match = DATE_RE.search(source)
    return match.group(1) if match and _real_day(match.group(1)) else ""


@lru_cache(maxsize=4096)
def _real_day(day: str) -> bool:
    try:
        dt.date.fromisoformat(day)
    except ValueError:
        return False
    return True


def log_order(source: str) -> tuple[str, int, str]:
    """Where a daily log goes among the others: by date, then part ('2026-02-09.md', '2026-02-09.2.md', then
    '2026-02-09.10.md': never by name, which puts '.2.md' first)."""
    match = DATE_RE.search(source)
    return (match.group(1), int(match.group(2) or 1), source) if match else ("", 0, source)


@dataclass(frozen=True)
class Chunk:
    source: str
    heading: str
    heading_path: tuple[str, ...]
    level: int
    start_line: int
    end_line: int
    content: str
    content_hash: str = field(default="")
    model: str = ""
    id: str = field(default="")

    def __post_init__(self) -> None:
        if not self.content_hash:
            object.__setattr__(self, "content_hash", sha256(self.content))
        if not self.id:
            object.__setattr__(
                self, "id", chunk_id(self.source, self.start_line, self.end_line, self.content_hash, self.model)
            )

    @property
    def date(self) -> str:
        return log_date(self.source)

    @property
    def embed_text(self) -> str:
        """What the embedder sees: the heading path, then the content."""
        path = " > ".join(self.heading_path)
        return f"{path}\n{self.content}" if path else self.content

    @property
    def embed_hash(self) -> str:
        return sha256(self.embed_text)

    @property
    def windows(self) -> list[str]:
        """What the dense leg embeds: the content in windows of about WINDOW_CHARS (one when short), at most
        MAX_WINDOWS."""
        return windows(self.content)[:MAX_WINDOWS]


def windows(text: str, max_chars: int = WINDOW_CHARS) -> list[str]:
    """`text` in pieces of at most `max_chars`, cut at line ends (a longer line at spaces), never empty."""
    lines: list[str] = []
    for line in text.split("\n"):
        while len(line) > max_chars:
            cut = line.rfind(" ", max_chars // 2, max_chars + 1)
            cut = cut if cut > 0 else max_chars
            lines.append(line[:cut])
            line = line[cut:].lstrip()
        lines.append(line)
    pieces: list[str] = []
    current = ""
    for line in lines:
        if current and len(current) + 1 + len(line) > max_chars:
            pieces.append(current)
            current = line
        else:
            current = f"{current}\n{line}" if current else line
    if current.strip() or not pieces:
        pieces.append(current)
    return [p for p in pieces if p.strip()] or [text]


@lru_cache(maxsize=1)
def _parser() -> Parser:
    import tree_sitter_markdown
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_markdown.language()))


def normalize_newlines(text: str) -> str:
    """LSP and tree-sitter agree on lines only once CRLF and CR are plain LF; a leading byte order mark (kept by a
    file's replacement decoding, sent in some editors' buffers) is no text of its first line."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def split_lines(text: str) -> list[str]:
    """`text`'s lines as LSP counts them (CRLF, CR and LF each end one): the chunker's rule, for every range sent to
    an editor."""
    return normalize_newlines(text).split("\n")


@dataclass(frozen=True)
class Heading:
    row: int  # 0-based first line
    end_row: int  # 0-based last line of the heading itself (setext headings span two or more)
    level: int
    title: str


def _heading_title(node: Node, lines: list[str]) -> str:
    if node.type == "setext_heading":
        text = " ".join(lines[r].strip() for r in range(node.start_point[0], node.end_point[0] - 1))
    else:
        text = ATX_OPENING.sub("", lines[node.start_point[0]])
        text = re.sub(r"(^|\s+)#+\s*$", "", text)
    return text.strip()


def _level(node: Node) -> int:
    for child in node.children:
        if child.type.startswith("atx_h") and child.type.endswith("_marker"):
            return int(child.type[5])
        if child.type == "setext_h1_underline":
            return 1
        if child.type == "setext_h2_underline":
            return 2
    return 1


def outline(lines: list[str]) -> tuple[list[Heading], list[tuple[int, int]], int]:
    """The one Markdown model (chunker and compaction alike): top-level headings, fenced code ranges
    (0-based rows, inclusive) and the first row after the front matter."""
    # CommonMark: U+0000 is replaced by U+FFFD before parsing (tree-sitter otherwise reads on past it
    # and merges the next heading into the paragraph). One character for one: rows and columns hold.
    source = ("\n".join(lines) + "\n").replace("\x00", "\ufffd")
    tree = _parser().parse(source.encode("utf-8", "surrogatepass"))
    headings: list[Heading] = []
    fences: list[tuple[int, int]] = []
    body_start = 0
    stack: list[Any] = list(reversed(tree.root_node.children))
    while stack:
        node = stack.pop()
        kind = node.type
        if kind in ("minus_metadata", "plus_metadata") and node.start_point[0] == 0:
            body_start = node.end_point[0]
        elif kind in ("atx_heading", "setext_heading"):
            end = node.end_point[0] - (1 if node.end_point[1] == 0 else 0)
            headings.append(
                Heading(node.start_point[0], max(end, node.start_point[0]), _level(node), _heading_title(node, lines))
            )
        elif kind == "fenced_code_block":
            end = node.end_point[0] - (1 if node.end_point[1] == 0 else 0)
            fences.append((node.start_point[0], max(end, node.start_point[0])))
        elif kind == "section":
            stack.extend(reversed(node.children))
    headings.sort(key=lambda h: h.row)
    return headings, fences, body_start


# CommonMark HTML blocks that end only at their end marker (types 1-5), and that marker (`{}`: the tag): every line
# after one left open is its text, a heading included.
_HTML_ENDS = (
    (re.compile(r"<(pre|script|style|textarea)(?=[\s>]|$)", re.IGNORECASE), "</{}>"),
    (re.compile(r"<!--"), "-->"),
    (re.compile(r"<\?"), "?>"),
    (re.compile(r"<!\[CDATA\["), "]]>"),
    (re.compile(r"<![A-Za-z]"), ">"),
)


def open_block(lines: list[str]) -> str:
    """The line that closes the code fence or HTML block (a comment, `<pre>`, `<?php`, ...) that `lines` leave open at
    their end, so that it would take in every line after them (a heading too); '' when none is open."""
    probe = [*lines, "", "# end"]
    node = _parser().parse(("\n".join(probe) + "\n").encode("utf-8", "surrogatepass")).root_node
    while node.type in ("document", "section") and node.children:
        node = node.children[-1]
    first = lines[node.start_point[0]].lstrip(" ") if node.start_point[0] < len(lines) else ""
    if node.type == "fenced_code_block":
        return first[: len(first) - len(first.lstrip(first[:1]))]
    if node.type == "html_block":
        for start, end in _HTML_ENDS:
            if found := start.match(first):
                return end.format(found.group(1).lower()) if found.groups() else end
    return ""


def _split(rows: range, lines: list[str], fences: list[tuple[int, int]], max_chars: int) -> list[range]:
    """Split rows into pieces of at most max_chars: at blank lines, then at line ends; fences stay whole."""

    def size(r: range) -> int:
        return sum(len(lines[i]) + 1 for i in r)

    if size(rows) <= max_chars:
        return [rows]
    in_fence = {i for a, b in fences for i in range(a, b + 1) if i in rows}
    # Blocks: runs of lines separated by blank lines outside fences.
    blocks: list[range] = []
    start = rows.start
    for i in rows:
        if not lines[i].strip() and i not in in_fence:
            if i > start:
                blocks.append(range(start, i + 1))  # keep the blank line with its block
            else:
                blocks.append(range(i, i + 1))
            start = i + 1
    if start < rows.stop:
        blocks.append(range(start, rows.stop))
    # Blocks over the limit split at line ends.
    units: list[range] = []
    for block in blocks:
        if size(block) <= max_chars:
            units.append(block)
        else:
            units.extend(range(i, i + 1) for i in block)
    pieces: list[range] = []
    current: range | None = None
    for unit in units:
        if current is not None and size(range(current.start, unit.stop)) <= max_chars:
            current = range(current.start, unit.stop)
        else:
            if current is not None:
                pieces.append(current)
            current = unit
    if current is not None:
        pieces.append(current)
    return pieces


def _trim(rows: range, lines: list[str]) -> range | None:
    start, stop = rows.start, rows.stop
    while start < stop and not lines[start].strip():
        start += 1
    while stop > start and not lines[stop - 1].strip():
        stop -= 1
    return range(start, stop) if stop > start else None


def chunk_markdown(text: str, source: str, model: str = "", max_chars: int = MAX_CHARS) -> list[Chunk]:
    """Heading chunks of one Markdown document; lines are 1-based and inclusive."""
    lines = normalize_newlines(text).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        return []
    headings, fences, body_start = outline(lines)
    sections: list[tuple[range, Heading | None]] = []
    first = headings[0].row if headings else len(lines)
    sections.append((range(body_start, first), None))
    for n, h in enumerate(headings):
        stop = headings[n + 1].row if n + 1 < len(headings) else len(lines)
        sections.append((range(h.row, stop), h))

    chunks: list[Chunk] = []
    path: list[tuple[int, str]] = []  # (level, title) of the open headings
    for rows, heading in sections:
        if heading is not None:
            path = [(lvl, t) for lvl, t in path if lvl < heading.level] + [(heading.level, heading.title)]
        trimmed = _trim(rows, lines)
        if trimmed is None:
            continue
        titles = tuple(t for _, t in path)
        pieces = _split(trimmed, lines, fences, max_chars)
        alone = _trim(pieces[0], lines) if heading is not None and len(pieces) > 1 else None
        if heading is not None and alone is not None and alone.stop <= heading.end_row + 1:
            # the heading alone (its body one block over the limit): it goes with that block, never a chunk of its
            # own that search drops as empty, and that takes a candidate's place until none is left
            pieces = [range(pieces[0].start, pieces[1].stop), *pieces[2:]]
        for piece in pieces:
            piece_rows = _trim(piece, lines)
            if piece_rows is None:
                continue
            content = "\n".join(lines[piece_rows.start : piece_rows.stop])
            chunks.append(
                Chunk(
                    source=source,
                    heading=heading.title if heading else "",
                    heading_path=titles,
                    level=heading.level if heading else 0,
                    start_line=piece_rows.start + 1,
                    end_line=piece_rows.stop,
                    content=content,
                    model=model,
                )
            )
    return chunks


def heading_rows(content: str) -> int:
    """How many of a chunk's first lines are a heading: 1 for an ATX one, its text and underline for a setext one (as
    tree-sitter reads it: `- item` or `> quote` over `---` is a list or quote and a thematic break), 0 for a chunk
    that opens with none (a preamble, the next piece of a long section)."""
    lines = content.split("\n")
    if ATX_OPENING.match(lines[0]):
        return 1
    block = lines[: next((n for n, line in enumerate(lines) if not line.strip()), len(lines))]  # its first paragraph
    if not any(_UNDERLINE.match(line) for line in block[1:]):
        return 0
    headings = outline(block)[0]
    return headings[0].end_row + 1 if headings and headings[0].row == 0 else 0


def opens_section(content: str, heading: str, level: int) -> bool:
    """Whether a chunk opens its section (`## Monday` twice is two sections) rather than going on with a long one: its
    first lines are a heading of its own title and level. A next piece may open inside a code block with a line that
    reads as another heading (a script's `# step 2` comment, `text` over `===`): it is no heading of the section."""
    rows = heading_rows(content)
    found = outline(content.split("\n")[:rows])[0] if rows else []
    return bool(found) and found[0].title == heading and found[0].level == level


def body_of(content: str) -> str:
    """A chunk's text without its heading line(s), on one line; a setext heading with nothing under it, its text: a
    line a person wrote over a `---` rule, or over a merge conflict's `=======`, is read as one (CommonMark), but it is
    a note, never "a heading alone"."""
    lines = content.split("\n")
    rows = heading_rows(content)
    body = " ".join(" ".join(lines[rows:]).split())
    return body if body or rows < 2 else " ".join(" ".join(lines[: rows - 1]).split())  # (rows - 1: its underline)


def empty_section(content: str) -> bool:
    """A chunk that is an ATX heading alone (a daily log's `# 2026-12-05` title, a template's empty section): it says
    nothing, so search never returns it (workspace symbols and outlines still list it)."""
    return not body_of(content) and bool(content.strip())


CONFLICTED = "unresolved merge conflict: resolve it first"  # why a file mid-merge is not compacted nor written


def merge_conflict(text: str) -> bool:
    """Whether `text` holds an unresolved merge conflict as git writes one: a `<<<<<<< ours` line, later `=======`,
    later `>>>>>>> theirs` (diff3's `||||||| base` between the first two), in code blocks too (git writes them where
    the lines are); a lone `=======` is a setext underline."""
    step = 0  # the markers seen of the conflict being read: 0 none, 1 its start, 2 its separator too
    for line in normalize_newlines(text).split("\n"):
        if _CONFLICT_START.match(line):
            step = 1
        elif step == 1 and line == "=======":
            step = 2
        elif step == 2 and _CONFLICT_END.match(line):
            return True
    return False


def quote_conflict(text: str) -> str:
    """`text` (a note) with the marker lines of a merge conflict it quotes indented by a space (Markdown shows them
    the same; a code block one space in): a note is never taken for its file's own conflict."""
    return (
        "\n".join(f" {line}" if CONFLICT_MARK.match(line) else line for line in text.split("\n"))
        if merge_conflict(text)
        else text
    )
