"""What an agent is given without asking: MEMORY.md, the latest summary and the last days' notes, read from the
memory files (confined to the workspace, no index needed) within a character budget."""

from __future__ import annotations

import datetime as dt
import heapq
import logging
import re
from dataclasses import asdict, dataclass, replace
from typing import cast

from typing_extensions import TypedDict

from memsearch_lsp.config import archive_folder
from memsearch_lsp.core.chunks import empty_section, log_date, log_order
from memsearch_lsp.core.files import MemoryFile, find_memory_files, read_memory_file
from memsearch_lsp.core.notes import LONG_TERM, open_fence
from memsearch_lsp.core.search.filters import source_date
from memsearch_lsp.core.search.headings import display_heading
from memsearch_lsp.core.workspace import MemoryFiles

log = logging.getLogger(__name__)


class NoteData(TypedDict):
    """A recent note as `recent --json` and MCP `memory_recent` send it."""

    id: str
    """chunk id, for expand"""
    source: str
    heading: str
    start_line: int
    end_line: int
    date: str | None
    """YYYY-MM-DD for daily logs, the period's first day for summaries, null for other files"""
    kind: str
    """daily, long-term or summary"""
    content: str


NoteData.__pydantic_config__ = {"use_attribute_docstrings": True}  # type: ignore[attr-defined]

SUMMARY = re.compile(r"(?:^|/)summary-[^/]+\.md$")
_OPENS_WITH_TIME = re.compile(
    r"(\d{1,2}):(\d{2})(?!\d)(?::\d{2})?(?:\s*([ap]m)\b)?", re.IGNORECASE
)  # 17:00 (2), 1:30 PM
_LATER = re.compile(r" \((\d{1,3})\)$")  # `remember`'s " (2)" after a heading the day's files had already
RECENT_CHARS = 20_000  # `recent` and MCP `memory_recent` by default: twice that (MCP sends it as data and as text)
# stays under a client's limit on a tool's answer (Claude Code's: 25,000 tokens)


@dataclass(frozen=True)
class Note:
    """One section of a memory file; `kind` is "long-term" (MEMORY.md), "summary" or "daily"."""

    id: str
    source: str
    heading: str
    start_line: int
    end_line: int
    date: str | None
    kind: str
    content: str

    def to_dict(self) -> NoteData:
        return cast(NoteData, dict(asdict(self), heading=display_heading(self.heading, self.content)))  # (as a hit's)


def kind_of(source: str) -> str:
    """ "long-term", "summary", "daily" or "" (another memory file) for a workspace-relative source."""
    if source.rsplit("/", 1)[-1] == LONG_TERM:
        return "long-term"
    if SUMMARY.search(source):
        return "summary"
    return "daily" if log_date(source) else ""


def _notes(memory: MemoryFiles, item: MemoryFile, kind: str) -> list[Note]:
    text, problem = read_memory_file(item)
    if problem and not text:  # (as the index pass skips it: said once, the other files' notes given)
        log.warning("%s: %s; skipped", problem.source, problem.reason)
        return []
    return [
        Note(c.id, c.source, c.heading, c.start_line, c.end_line, c.date or source_date(c.source), kind, c.content)
        for c in memory.outline(item.source, text)
        if not empty_section(c.content)  # a heading alone (a log's title, an empty section) says nothing, as in search
    ]


def _files(memory: MemoryFiles) -> list[MemoryFile]:
    archive = archive_folder(memory.config).strip("/") + "/"
    return [f for f in find_memory_files(memory.root, memory.config)[0] if not f.source.startswith(archive)]


def recent_notes(memory: MemoryFiles, days: int = 3, today: dt.date | None = None) -> list[Note]:
    """The notes of the daily logs of the last `days` days (today included), newest first: newest day first, and
    within a day the last note written first (a budget keeps the work a new session resumes, not the morning's;
    `_newest_first`)."""
    today = today or memory.clock().date()
    first = (today - dt.timedelta(days=max(days, 1) - 1)).isoformat()
    logs = [
        f for f in _files(memory) if kind_of(f.source) == "daily" and first <= log_date(f.source) <= today.isoformat()
    ]
    logs.sort(key=lambda f: log_order(f.source))
    by_day: dict[str, list[list[Note]]] = {}
    for f in logs:
        by_day.setdefault(log_date(f.source), []).append(_notes(memory, f, "daily"))
    return [n for day in sorted(by_day, reverse=True) for n in _newest_first(by_day[day])]


def _newest_first(files: list[list[Note]]) -> list[Note]:
    """One day's notes, from its log and the parts `remember` went on in (`2026-02-09.2.md`: while the log was full,
    open unsaved or mid-merge, and back after), newest first: by the time a note's heading opens with (`## 17:00`,
    `## 1:30 PM standup`, `## 17:00 (2)` after `## 17:00`); one without a time goes with the note before it in its
    file, or, first in its file, with the first one that has a time; at equal times, the later file and the later
    place first."""
    timed: list[list[tuple[str, Note]]] = []
    for notes in files:
        times = [_time_of(note.heading) for note in notes]
        first = next((t for t in times if t), "")
        for n, time in enumerate(times):  # (none: the time before it in its file; before any, the first one)
            times[n] = time or (times[n - 1] if n else first)
        timed.append(sorted(zip(times, notes), key=lambda pair: pair[0]))  # (a log written newest first too)
    merged = heapq.merge(*timed, key=lambda pair: pair[0])  # (stable: an earlier file first at equal times)
    return [note for _, note in merged][::-1]


def _time_of(heading: str) -> str:
    """ "HH:MM" (24 h) of the time a heading opens with, "" when it opens with none; `remember`'s number for a later
    note of the same minute (`## 09:05 (2)`, in any of the day's files) after it: "09:05 002"."""
    timed = _OPENS_WITH_TIME.match(heading.strip())
    if not timed:
        return ""
    hour, half = int(timed[1]), (timed[3] or "").lower()
    later = _LATER.search(heading.strip())
    return f"{hour % 12 + 12 if half == 'pm' else hour % 12 if half else hour:02d}:{timed[2]}" + (
        f" {int(later[1]):03d}" if later else ""
    )


def session_notes(memory: MemoryFiles, days: int = 3, today: dt.date | None = None) -> list[Note]:
    """MEMORY.md's sections, then the newest summary's, then the last days' notes (`recent_notes`)."""
    files = _files(memory)
    long_term = [n for f in files if kind_of(f.source) == "long-term" for n in _notes(memory, f, "long-term")]
    summaries = sorted((f for f in files if kind_of(f.source) == "summary"), key=lambda f: f.path.name, reverse=True)
    latest = _notes(memory, summaries[0], "summary") if summaries else []
    return long_term + latest + recent_notes(memory, days, today)


def within(notes: list[Note], budget: int) -> list[Note]:
    """The leading notes that fit in `budget` characters of content, in their order. A note that does not fit is cut
    (`cut_to`) when it is the first, else left out, and the budget it leaves goes on to the next; after a MEMORY.md
    or summary section left out or cut the next still gets its turn, but the first daily note that does not fit ends
    the list: the days' notes come newest first, so an older one is never given while a newer one is left out."""
    kept: list[Note] = []
    left = budget
    for note in notes:
        if len(note.content) <= left:
            kept.append(note)
            left -= len(note.content) + 2
            continue
        if not kept:  # (however small the budget: README, "a first note longer than N is cut")
            kept.append(replace(note, content=cut_to(note.content, left)))
            left -= len(kept[-1].content) + 2
        if note.kind == "daily":
            break
    return kept


def cut_to(text: str, limit: int) -> str:
    """`text` within `limit` characters, ending in `…`: cut at a line end (a code fence left open closed) when that
    keeps half of it at least; else (a paragraph on one long line) at a word, so the note's beginning is given."""
    head = text[: max(0, limit - 8)]  # (room for a fence's closing line and the ellipsis)
    cut = head.rsplit("\n", 1)[0] if "\n" in head else ""
    if len(cut) >= len(head) // 2:
        fence = open_fence(cut)
        return f"{cut}\n{fence + chr(10) if fence else ''}…"
    cut = head[: max(head.rfind(" "), len(head) // 2)].rstrip() + "…"
    fence = open_fence(cut)
    return f"{cut}\n{fence}" if fence else cut
