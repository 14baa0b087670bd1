"""Every heading of an index, as the empty `workspace/symbol` query lists them: the newest daily logs first, one
entry a section (its pieces, when long, merged), at most HEADINGS_LIMIT."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from memsearch_lsp.core.chunks import log_order, opens_section
from memsearch_lsp.core.files import glob_match
from memsearch_lsp.core.search.headings import HEADINGS_LIMIT, TIME_HEADING, display_heading
from memsearch_lsp.core.search.hybrid import Hit

if TYPE_CHECKING:
    from memsearch_lsp.core.store import Store


def every_heading(store: Store, archive_dir: str = "", limit: int = HEADINGS_LIMIT) -> list[Hit]:
    """The heading chunks of `store`: those of dated files (daily logs, summaries) by date, the newest first, then
    the others by file; in a file, by line. A long section cut into pieces is one entry spanning them all."""
    rows = [
        r
        for r in store.scan(["source", "heading", "heading_path", "start_line", "end_line", "level", "date"])
        if int(r["level"]) > 0
    ]
    rows.sort(key=lambda r: (log_order(r["source"]), int(r["start_line"])))
    rows.sort(key=lambda r: r["date"] or "", reverse=True)  # (stable: a day's files and lines stay in order)
    sections = _sections(store, rows)
    timed = {r.id: r for r in store.rows([h["id"] for h in sections[:limit] if TIME_HEADING.match(h["heading"])])}
    return [
        Hit(
            id=r["id"],
            source=r["source"],
            heading=display_heading(r["heading"], timed[r["id"]].content if r["id"] in timed else ""),
            start_line=int(r["start_line"]),
            end_line=int(r["end_line"]),
            rank_score=0.0,
            snippet="",
            date=r["date"] or None,
            archived=bool(archive_dir) and glob_match(archive_dir, r["source"]),
            markdown_heading=r["heading"],
        )
        for r in sections[:limit]
    ]


def _sections(store: Store, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows` (in file and line order) with the next pieces of a long section merged into its first: a row of the
    same file, heading and path as the one before that does not open with a heading (`## Monday` twice is two)."""
    key = ("source", "heading", "heading_path", "level")
    maybe = [b["id"] for a, b in itertools.pairwise(rows) if all(a[k] == b[k] for k in key)]
    pieces = {r.id for r in store.rows(maybe) if not opens_section(r.content, r.heading, r.level)}
    out: list[dict[str, Any]] = []
    for row in rows:
        if row["id"] in pieces and out:
            out[-1] = {**out[-1], "end_line": max(int(out[-1]["end_line"]), int(row["end_line"]))}
        else:
            out.append(row)
    return out
