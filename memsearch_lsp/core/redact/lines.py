"""Secrets spread over lines that no rule of one span sees whole: a private key's tail (base64 lines pasted from the
middle of its body, then its END line), found from each END line back. Each is a span that takes the place of those
found inside it (`merged`), never of one reaching past it (a whole BEGIN ... END block)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from memsearch_lsp.core.redact.rule import Redaction
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
