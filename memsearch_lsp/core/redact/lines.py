"""Secrets spread over lines that no rule of one span sees whole: a key or token hard-wrapped at a line's end (a
narrow terminal, a shell's `\\` continuation: `wrapped`), and a private key's tail (base64 lines pasted from the middle
of its body, then its END line: `key_tails`). Each is a span that takes the place of those found inside it
(`merged`), never of one reaching past it (a whole BEGIN ... END block)."""

from __future__ import annotations

import bisect
import re
import string
from collections.abc import Iterable, Iterator, Sequence

from memsearch_lsp.core.redact.rule import Redaction, Rule
from memsearch_lsp.core.redact.values import mixed

_END = re.compile(r"^[ \t>]*-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----", re.MULTILINE)
_BASE64_LINE = re.compile(r"[ \t>]*([A-Za-z0-9+/=]+)[ \t]*\r?")  # a line of a key's body (quoted in markdown too)
TAIL_CHARACTERS = 16  # a key's tail holds at least this much base64 (not a word on the line above an END line)


def key_tails(text: str) -> Iterator[Redaction]:
    """Each END line of a private key with the base64 lines right above it: from the first of them to the END line's
    end (a line is read once: the walk up from an END line stops at any line not base64, the END line above too)."""
    for end in _END.finditer(text):
        start, size, line_end = end.start(), 0, end.start() - 1
        while line_end > 0:
            line_start = text.rfind("\n", 0, line_end) + 1
            line = _BASE64_LINE.fullmatch(text, line_start, line_end)
            if line is None:
                break
            start, size, line_end = line.start(1), size + len(line[1]), line_start - 1
        if size >= TAIL_CHARACTERS and mixed(text[start : end.start()]):
            yield Redaction("private-key", start, end.end())


_TOKEN = "A-Za-z0-9_.+/=-"  # what a key, a token or a JWT is made of
_CHARACTERS = string.ascii_letters + string.digits + "_.+/=-"
_BREAK = re.compile(rf"(?<=[{_TOKEN}])\\?\r?\n(?=[{_TOKEN}])")  # a line's end between two of them
_RUN = re.compile(rf"[{_TOKEN}]+")
_LINE_END = re.compile(r"\\?\r?(?:\n|\Z)")
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+")
CONTINUED = 6  # the least of a line's first run that goes on with a token when words follow it on its line


def wrapped(text: str, rules: Sequence[Rule]) -> Iterator[Redaction]:
    """The secrets `rules` find across a line's end: where a line ends in a run of a token's characters with letters
    and digits, and the next begins with more that go on with it (`_continues`: not a word of prose), the two are
    read as one, and so on while a whole line goes on; a match that crosses such a line's end and takes the last
    line's run whole (but a mark after it) is one span. Every
    chain of lines is read once, all of them in one text (linear: a chain is cut at the first line that stops)."""
    pieces: list[tuple[int, int]] = []  # each chain's lines, in order: where each piece is in `text`
    joined: list[bool] = []  # whether a piece goes on from the one before it
    for brk in _BREAK.finditer(text):
        continuing = bool(pieces) and pieces[-1][1] == brk.start()
        line = text[text.rfind("\n", 0, brk.start()) + 1 : brk.start()]
        head = pieces[-1][0] if continuing else brk.start() - (len(line) - len(line.rstrip(_CHARACTERS)))
        run = _RUN.match(text, brk.end())  # (never None: the break's lookahead)
        goes_on = run is not None and _continues(run[0], bool(_LINE_END.match(text, run.end())))
        if run is not None and goes_on and (continuing or mixed(text[head : brk.start()])):
            if not continuing:
                pieces.append((head, brk.start()))
                joined.append(False)
            pieces.append(run.span())
            joined.append(True)
    parts: list[str] = []
    starts: list[int] = []
    size = 0  # the chains as one text, one a line; where each piece starts in it
    for (start, end), goes_on in zip(pieces, joined, strict=True):
        if parts and not goes_on:
            parts.append("\n")
            size += 1
        starts.append(size)
        parts.append(text[start:end])
        size += end - start
    read = "".join(parts)
    for rule in rules:
        for match in rule.pattern.finditer(read):
            start, end = rule.span(match)
            n = bisect.bisect_right(starts, start)  # the first piece after the one the match starts in
            crosses = n < len(starts) and starts[n] < end and joined[n] and "\n" not in read[start:end]
            if not crosses or (rule.keep is not None and rule.keep(match)):
                continue
            last = bisect.bisect_left(starts, end) - 1  # the piece it ends in: to its end, or a mark (`.`) after
            stop = pieces[last][0] + end - starts[last]
            if not any(c.isalnum() for c in text[stop : pieces[last][1]]):  # (not `README` of `README.md`)
                yield Redaction(rule.kind, pieces[n - 1][0] + start - starts[n - 1], stop)


def _continues(run: str, whole: bool) -> bool:
    """A line's first run of a token's characters goes on with a token that ended the line before: a whole line that
    is no word (`AAzz91`, not `Thanks`), or letters and digits, CONTINUED or more, before words on its line (not the
    `v2` of "v2 of the API")."""
    if whole:
        return any(c.isalnum() for c in run) and not _WORD.fullmatch(run.strip("._+/=-"))  # (`Done.` is a word)
    return len(run) >= CONTINUED and mixed(run)


def merged(found: list[Redaction], more: Iterable[Redaction]) -> list[Redaction]:
    """`found` (in order, none overlapping) with each span of `more` in the place of those it holds whole; one that
    overlaps a span reaching outside it, or one of `more` taken before it, is left out (one pass over both)."""
    out: list[Redaction] = []
    at = 0
    for span in sorted(more, key=lambda r: (r.start, -r.end)):
        while at < len(found) and found[at].end <= span.start:
            out.append(found[at])
            at += 1
        if out and out[-1].end > span.start:
            continue
        past = at
        while past < len(found) and found[past].start < span.end:
            past += 1
        if all(span.start <= r.start and r.end <= span.end for r in found[at:past]):
            out.append(span)
            at = past
    return out + found[at:]
