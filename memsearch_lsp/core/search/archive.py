"""A summary outranks its archive: an archived original whose summary holds the same match gives way to it."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from urllib.parse import quote

from memsearch_lsp.core.search.filters import is_summary
from memsearch_lsp.core.store import Store
from memsearch_lsp.core.store.schema import Row

# the intro of the summary's head (core/compact/plan.py): the days of the logs it replaced
_SPAN = re.compile(r"\bSummary of (\d{4}-\d{2}-\d{2})(?: to (\d{4}-\d{2}-\d{2}))? \(")
SAME_MATCH = 0.999  # the summary covers at least this share of what the archived chunk covers of the query


def links_to(row: Row, archived: str) -> bool:
    """`row` (a summary's section) links to the archived file `archived` (its provenance link, in its text or in
    the heading above it)."""
    target = quote(posixpath.relpath(archived, posixpath.dirname(row.source) or "."), safe="/")
    return any(f"]({target}" in text for text in (row.content, row.heading_path))


def speaks_for(row: Row, archived: Row) -> bool:
    """`row`, a summary's chunk, stands for the archived chunk: its section links to the archived log, or it is the
    summary's head (its title, the intro `Summary of <first> to <last>` and the People line), which stands for
    every log of its span."""
    if links_to(row, archived.source):
        return True
    span = _SPAN.search(row.content) if row.level <= 1 else None
    return span is not None and bool(archived.date) and span[1] <= archived.date <= (span[2] or span[1])


def summaries_first(
    store: Store,
    rows: Sequence[Row],
    scores: Mapping[str, float],
    ranked: Sequence[tuple[str, float]],
    terms: Mapping[int, float],
    is_archived: Sequence[bool],
    keep_archived: bool,
    relevant: Mapping[str, float],
) -> tuple[list[Row], dict[str, float], dict[str, float]]:
    """`rows` (the best candidates, with `scores` and their `relevant`: rank.relevance) where each archived row whose
    summary holds the same match (a live chunk of the candidates that links to it and covers as much of the query)
    gives its score and its relevance to that summary, so the summary comes first with the better of the two, and
    leaves the hits unless `keep_archived`.

    `ranked` is every candidate of the search, best first (a summary may rank below the cut); `terms` the
    query's terms (for coverage); `is_archived[i]` says whether rows[i] is in the archive folder.
    """
    archived = [r for r, a in zip(rows, is_archived) if a]
    if not archived:
        return list(rows), dict(scores), dict(relevant)
    shown = {r.id for r in rows}
    others = [k for k, _ in ranked if k not in shown]
    sections = store.sections(others) if others else {}
    wanted = [k for k in others if is_summary(sections.get(k, ("", ""))[0])]
    live = [r for r, a in zip(rows, is_archived) if not a and is_summary(r.source)] + store.rows(wanted)
    if not live:
        return list(rows), dict(scores), dict(relevant)
    score, relevance = dict(scores) | {k: s for k, s in ranked if k in set(wanted)}, dict(relevant)
    coverage = store.coverage([r.id for r in [*archived, *live]], terms) if terms else {}
    out, behind = list(rows), set[str]()  # (behind: archived copies listed after their summary, at equal score)
    for original in archived:
        summaries = [r for r in live if speaks_for(r, original)]
        theirs = coverage.get(original.id, 0.0)
        same = [r for r in summaries if theirs > 0 and coverage.get(r.id, 0.0) >= SAME_MATCH * theirs]
        # or one that keeps the archived chunk's fact word for word, though the archived copy matched more of the
        # query (its heading said "Rate limiting"): one fact is one hit, the summary's
        told = same or [r for r in summaries if coverage.get(r.id, 0.0) >= theirs / 2 and keeps_a_line(r, original)]
        if not told:
            continue  # the summary dropped what matched here: the archived hit stays (demoted by its weight)
        best = max(told, key=lambda r: score.get(r.id, 0.0))
        score[best.id] = max(score.get(best.id, 0.0), score[original.id])
        relevance[best.id] = max(relevance.get(best.id, 0.0), relevance.get(original.id, 0.0))
        if best.id not in {r.id for r in out}:
            out.append(best)
        if not keep_archived:
            out.remove(original)
        behind.add(original.id)
    out.sort(key=lambda r: (-score[r.id], r.id in behind))
    return out, score, relevance


def keeps_a_line(summary: Row, original: Row) -> bool:
    """`summary` (a section) holds a sentence of `original` word for word (40 characters or more: a fact, not a
    phrase), as the extractive summariser keeps them; line breaks and bullets aside."""
    text = " ".join(original.content.split())
    for line in summary.content.splitlines():
        said = " ".join(line.strip().lstrip("-*> ").split())
        if any(len(part) >= 40 and part in text for part in re.split(r"(?<=[.!?;])\s+", said)):
            return True
    return False
