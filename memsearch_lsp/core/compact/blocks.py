"""What a code block or a table of a log says: its gist in one line (never a block cut in the middle), its score."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memsearch_lsp.core.compact.facts import FACT_SCORE, classify

GIST_LINES = 2  # lines of a long code block quoted in its gist
_FENCE_OPEN = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+-]*)")
_SETTING_LINE = re.compile(r"^\s*[\w.-]+\s*(?:=|:)\s*\S")
_ERROR_LINE = re.compile(r"\b\w*(?:Error|Exception|FAILED|Fatal|panic)\b")
_PROMPT = re.compile(r"^\s*(?:\$|>|PS>|›)\s")
_LOG_LINE = re.compile(r"^\s*(?:\S*\d{2}:\d{2}\S*\s+)?(?:\S+\s+)?(?:INFO|DEBUG|WARN(?:ING)?|TRACE)\b")
_FRAME = re.compile(r"^\s*(?:File \"|at [\w$.]+\(|Traceback \(|\.\.\.)")  # a stack frame: never the gist
_RULER = re.compile(r":?-{2,}:?")


def table_rows(block: str) -> list[str]:
    """A table's rows as clauses, one per row: the first named by the header ("service: orders, p99: 120 ms"), the
    others by their values alone, in the same order ("payments, 880 ms")."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in block.split("\n")]
    rows = [r for r in rows if not all(_RULER.fullmatch(c) or not c for c in r)]
    head, body = (rows[0], rows[1:]) if len(rows) > 1 else ([], rows)
    named = [", ".join(f"{h}: {c}" if h else c for h, c in zip([*head, *[""] * len(r)], r) if c) for r in body[:1]]
    return named + [", ".join(c for c in r if c) for r in body[1:]]


def block_gist(block: str) -> str:
    """What a long code block or table says, in one line: never a block cut in the middle.

    A table: its rows as clauses, the first named by the header ("service: orders, p99: 120 ms; payments, 880
    ms"), each one the summary may keep (with the first) or drop. Code: its kind and size and the lines that
    carry most (settings, errors, names, numbers), quoted whole; never a prompt, a log line or a stack frame.
    """
    lines = block.split("\n")
    if lines and lines[0].lstrip().startswith("|"):
        return "; ".join(table_rows(block))
    opening = _FENCE_OPEN.match(lines[0]) if lines else None
    lang = opening.group(2) if opening else ""
    inner = lines[1:-1] if opening and len(lines) > 1 else lines
    scored = []
    for n, line in enumerate(inner):
        text = line.strip()
        if not text or len(text) > 160 or _PROMPT.match(line) or _LOG_LINE.match(line) or _FRAME.match(line):
            continue
        value = (
            classify(text, first=False).score
            + 3.0 * bool(_SETTING_LINE.match(line))
            + 3.0 * bool(_ERROR_LINE.search(text))
        )
        scored.append((value, n, text))
    best = sorted(sorted(scored, reverse=True)[:GIST_LINES], key=lambda x: x[1])
    kind = "traceback" if any(_ERROR_LINE.search(t) for _, _, t in best) else "code"
    quoted = "; ".join(f"`{t.replace('`', chr(39))}`" for _, _, t in best)
    return f"{kind} ({lang + ', ' if lang else ''}{len(inner)} lines){': ' + quoted if quoted else ''}"


def block_score(text: str) -> tuple[float, bool]:
    """(score, factual) of a block or its gist: its best line and a little for each other line with a fact;
    a shell session or a program's log output is command noise."""
    lines = [x for x in text.split("\n") if x.strip() and not _FENCE_OPEN.match(x)]
    session = any(_PROMPT.match(x) or _LOG_LINE.match(x) for x in lines)
    facts = [
        classify(x.strip(), first=False)
        for x in lines
        if not _PROMPT.match(x) and not _LOG_LINE.match(x) and not _FRAME.match(x)
    ]
    settings = sum(bool(_SETTING_LINE.match(x)) for x in lines)
    scores = sorted((f.score for f in facts), reverse=True)
    score = (scores[0] if scores else 0.0) + sum(1.0 for s in scores[1:] if s >= FACT_SCORE) + 1.5 * min(settings, 4)
    return score, not session and (any(f.factual for f in facts) or settings > 0)


def glued(parts: Sequence[str]) -> str:
    """The parts joined with never more than one blank line where two meet (a short block after a heading)."""
    text = ""
    for part in parts:
        text += part.lstrip("\n") if text.endswith("\n\n") else part
    return text
