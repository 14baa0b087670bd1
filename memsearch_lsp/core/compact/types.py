"""What a compaction plan holds (data only): the summaries to write and the logs to move into the archive."""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class SummaryFile:
    """A summary to create, or to append `content` to (an earlier compaction of the same period)."""

    path: str  # workspace-relative POSIX path
    action: Literal["create", "append"]
    content: str  # the whole file for "create", the appended text for "append"
    sources: tuple[str, ...]  # the daily logs it summarises (their paths before archiving)
    base_sha256: str = ""  # for "append": the existing file's sha256 when planned

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": self.path,
            "action": self.action,
            "content": self.content,
            "sources": list(self.sources),
        }
        if self.base_sha256:
            data["base_sha256"] = self.base_sha256
        return data


@dataclass(frozen=True)
class ArchiveMove:
    """Move a log into the archive, to a name nothing holds (never into or over another file: what a writer adds to
    the log until it moves goes with it, whoever applies the move)."""

    src: str
    dst: str
    sha256: str = ""  # of the text the summary was made from: the log must still hold it when moved

    def to_dict(self) -> dict[str, Any]:
        return {"from": self.src, "to": self.dst}


@dataclass(frozen=True)
class Unchanged:
    """Logs left as they are: their summary would be KEEP_SHARE of them or more ("nothing to gain")."""

    period: str
    logs: tuple[str, ...]
    chars_before: int
    chars_after: int  # what their summary would have been (at least: its title and intro)
    bare: bool = False  # the logs hold no text beyond headings: nothing to summarise

    def to_dict(self) -> dict[str, Any]:
        return {
            "period": self.period,
            "logs": list(self.logs),
            "chars_before": self.chars_before,
            "chars_after": self.chars_after,
        }

    def why(self, counted: bool = False) -> str:
        """Why there is nothing to gain, the same wherever it is said: "a summary would be 112% of its 271
        characters" ("a summary of 2 daily logs would be ..." when `counted`), "empty log: nothing to summarise"."""
        one = len(self.logs) == 1
        if not self.chars_before:
            return f"{'empty log' if one else 'empty logs'}: nothing to summarise"
        if self.bare:
            return "no text beyond headings: nothing to summarise"
        of = f" of {plural(len(self.logs), 'daily log')}" if counted else ""
        share = 100 * self.chars_after / self.chars_before
        return f"a summary{of} would be {share:.0f}% of {'its' if one else 'their'} {self.chars_before} characters"

    def describe(self) -> str:
        return f"  keep    {', '.join(self.logs)}: nothing to gain ({self.why()})"


@dataclass(frozen=True)
class Promotion:
    """A lasting fact of a compacted log (a preference, a convention, a decision still in force) proposed for a
    section of MEMORY.md, with its source."""

    section: str
    text: str  # the bullet as added to MEMORY.md, its source link at the end
    source: str  # the log it comes from, as planned (before archiving)
    line: int  # its line in that log
    kind: str  # preference | decision

    def to_dict(self, path: str) -> dict[str, Any]:
        return {
            "path": path,
            "section": self.section,
            "text": self.text,
            "source": self.source,
            "line": self.line,
            "kind": self.kind,
        }


@dataclass(frozen=True)
class MemoryEdit:
    """The promoted facts as an edit of MEMORY.md: `inserts` (0-based line of the file as planned, text to
    put before it; the line count = the end) make `content`; "create" when the file does not exist."""

    path: str
    action: Literal["create", "insert"]
    content: str  # the whole file once edited
    inserts: tuple[tuple[int, str], ...]
    promotions: tuple[Promotion, ...]
    base_sha256: str = ""  # for "insert": the file's sha256 when planned


@dataclass(frozen=True)
class CompactionPlan:
    """What compaction would do: summaries to write and originals to move into the archive."""

    summaries: tuple[SummaryFile, ...] = ()
    archive: tuple[ArchiveMove, ...] = ()
    summarizer: str = "extractive"
    note: str = ""  # why the plan is empty, or other context for humans
    stats: Mapping[str, int] = field(default_factory=dict)
    left: tuple[str, ...] = ()  # logs left in place because they changed while being compacted
    today: str = ""  # the day the plan was made for (its summaries say so)
    unchanged: tuple[Unchanged, ...] = ()  # logs left as they are: nothing to gain
    memory_edit: MemoryEdit | None = None  # lasting facts promoted to MEMORY.md, applied with the rest
    skipped: tuple[tuple[str, str], ...] = ()  # (source, why): old logs that cannot be read, left in place

    @property
    def promotions(self) -> tuple[Promotion, ...]:
        return self.memory_edit.promotions if self.memory_edit else ()

    @property
    def chars_before(self) -> int:
        return int(self.stats.get("chars_before", 0))

    @property
    def chars_after(self) -> int:
        return int(self.stats.get("chars_after", 0))

    @property
    def empty(self) -> bool:
        return not self.summaries and not self.archive

    @property
    def written(self) -> list[str]:
        """The files applying the plan writes (the logs it moves, its summaries, MEMORY.md), sorted."""
        edited = [self.memory_edit.path] if self.memory_edit is not None else []
        return sorted({*(m.src for m in self.archive), *(s.path for s in self.summaries), *edited})

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "summaries": [s.to_dict() for s in self.summaries],
            "archive": [m.to_dict() for m in self.archive],
            "summarizer": self.summarizer,
            "chars_before": self.chars_before,
            "chars_after": self.chars_after,
            "plan_id": self.plan_id,
        }
        data["promoted"] = [p.to_dict(self.memory_edit.path) for p in self.promotions] if self.memory_edit else []
        data["nothing_to_gain"] = [u.to_dict() for u in self.unchanged]
        if self.left:
            data["left"] = list(self.left)
        if self.skipped:
            data["skipped"] = [{"source": source, "reason": why} for source, why in self.skipped]
        if self.note:
            data["note"] = self.note
        if self.stats:
            data["stats"] = dict(self.stats)
        return data

    @property
    def plan_id(self) -> str:
        """A digest of what the plan writes and moves: a reviewed plan is applied only if it is still the same."""
        digest = hashlib.sha256()
        for s in self.summaries:
            digest.update(f"{s.path}\0{s.action}\0{s.base_sha256}\0{s.content}\0".encode())
        for m in self.archive:
            digest.update(f"{m.src}\0{m.dst}\0{m.sha256}\0".encode())
        if self.memory_edit:
            e = self.memory_edit
            digest.update(f"{e.path}\0{e.action}\0{e.base_sha256}\0{e.content}\0".encode())
        return digest.hexdigest()[:16] if not self.empty else ""

    def headline(self, applied: bool | None = None) -> str:
        """One line: 'compacted 4 daily logs into 2 summaries (...): applied' once done, 'would compact ...:
        nothing changed (dry run)' for a plan only shown, 'compact ...' for a plan offered for review."""
        if self.empty:
            return (self.note or "nothing to compact") + (": nothing changed (dry run)" if applied is False else "")
        before, after = self.chars_before, self.chars_after
        share = f", {100 * after / before:.0f}%" if before else ""
        what = (
            f"{plural(len(self.archive), 'daily log')} into {plural(len(self.summaries), 'summary', 'summaries')} "
            f"({self.summarizer}; {before} -> {after} characters{share})"
        )
        if applied is None:
            return f"compact {what}"
        return f"compacted {what}: applied" if applied else f"would compact {what}: nothing changed (dry run)"

    def describe(self, applied: bool | None = None) -> str:
        """The headline, one line per summary written and per log moved, and the logs left in place."""
        left = f"\nleft {', '.join(self.left)}: changed while being compacted; compact again later" if self.left else ""
        lines = [self.headline(applied)]
        for s in self.summaries:
            lines.append(f"  {s.action:<7} {s.path}  <- {', '.join(posixpath.basename(x) for x in s.sources)}")
        for m in self.archive:
            lines.append(f"  move    {m.src} -> {m.dst}")
        for p in self.promotions:
            lines.append(f"  promote {self.memory_edit.path if self.memory_edit else ''} ## {p.section}: {p.text}")
        lines.extend(u.describe() for u in self.unchanged)
        lines.extend(f"  skipped {source}: {why}; left in place" for source, why in self.skipped)
        return "\n".join(lines) + left


def nothing_to_gain(unchanged: Sequence[Unchanged]) -> str:
    """The plan's note when every log is left as it is: "nothing to gain: a summary of 1 daily log would be 112% of
    its 271 characters; left as it is"."""
    logs = tuple(x for u in unchanged for x in u.logs)
    before, after = sum(u.chars_before for u in unchanged), sum(u.chars_after for u in unchanged)
    said = Unchanged("", logs, before, after, bare=all(u.bare for u in unchanged)).why(counted=True)
    return f"nothing to gain: {said}; left as {'it is' if len(logs) == 1 else 'they are'}"


def plural(n: int, one: str, many: str = "") -> str:
    """'1 daily log', '4 daily logs', '1 summary', '2 summaries'."""
    return f"{n} {one if n == 1 else (many or one + 's')}"
