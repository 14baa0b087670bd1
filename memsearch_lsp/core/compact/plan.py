"""Compaction: choose old daily logs, summarise them by period, plan the files (data); apply it (compact_apply)."""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import quote

from memsearch_lsp.config import CompactConfig, ConfigError, archive_clash, archive_folder
from memsearch_lsp.core import clock
from memsearch_lsp.core.chunks import CONFLICTED, log_date, log_order, merge_conflict, normalize_newlines, outline
from memsearch_lsp.core.compact.apply import LogChanged, apply_exactly, apply_files, sha256
from memsearch_lsp.core.compact.summarize import (
    KEEP_SHARE,
    LOG_FLOOR,
    MIN_BUDGET,
    TARGET_RATIO,
    CompactError,
    LogText,
    OpenAISummarizer,
    Summarizer,
    SummarizerError,
)
from memsearch_lsp.core.compact.types import ArchiveMove, CompactionPlan, SummaryFile, Unchanged, nothing_to_gain
from memsearch_lsp.core.embedding import Embedder
from memsearch_lsp.core.files import INDEX_DIR, PathError, find_memory_files, glob_match, read_text, relative_source
from memsearch_lsp.core.index import IndexStats, Progress
from memsearch_lsp.core.redact import safe_text

if TYPE_CHECKING:
    from memsearch_lsp.core.api import MemoryApi

__all__ = [
    "ArchiveMove",
    "CompactError",
    "CompactionPlan",
    "LogChanged",
    "SummarizerError",
    "SummaryFile",
    "apply_checked",
    "apply_files",
    "apply_plan",
    "compactable",
    "old_logs",
    "plan_compaction",
]

log = logging.getLogger(__name__)


def create_summarizer(config: CompactConfig, root: Path, embedder: Callable[[], Embedder]) -> Summarizer:
    """The configured summariser; `embedder` is called only when one is needed."""
    from memsearch_lsp.core.compact.extractive import ExtractiveSummarizer, restore_labelled  # (its rules: 0.2 s)

    if config.summarizer == "openai":
        return OpenAISummarizer(config, root, restore=restore_labelled)
    if config.summarizer == "extractive":
        return ExtractiveSummarizer(embedder, config.similarity_threshold)
    raise ConfigError(f"compact.summarizer: expected 'extractive' or 'openai', got {config.summarizer!r}")


# -- planning -----------------------------------------------------------------------------------
def period_key(date: dt.date, group_by: str) -> str:
    """'2026-W06' (ISO week), '2026-02' (month) or '2026-02-09' (day)."""
    if group_by == "month":
        return f"{date.year:04d}-{date.month:02d}"
    if group_by == "day":
        return date.isoformat()
    year, week, _ = date.isocalendar()
    return f"{year:04d}-W{week:02d}"


def _in_archive(memory: MemoryApi, source: str) -> bool:
    return glob_match(archive_folder(memory.config), source)


def compactable(memory: MemoryApi, source: str) -> bool:
    """A daily log that may be compacted: named YYYY-MM-DD.md, a memory file, not archived, not today's (agents
    still append to it)."""
    day = log_date(source)
    return (
        bool(day)
        and day != clock.now().date().isoformat()
        and memory.is_memory(source)
        and not _in_archive(memory, source)
    )


def _explicit(memory: MemoryApi, files: Sequence[str], today: dt.date) -> list[str]:
    """Workspace sources of the files named by the user; CompactError for anything not a daily log."""
    sources: list[str] = []
    for name in files:
        given = Path(name).expanduser()
        # A relative name means the workspace's file, else (if only that exists) the one under the cwd.
        use_cwd = not given.is_absolute() and not (memory.root / given).exists() and given.exists()
        candidate = given.resolve() if use_cwd else given
        try:
            source = memory.source_of(candidate)
        except PathError as exc:
            raise CompactError(f"{name}: outside the workspace {memory.root}") from exc
        if not log_date(source):
            raise CompactError(f"{name}: not a daily log (only files named YYYY-MM-DD.md are compacted)")
        if _in_archive(memory, source):
            raise CompactError(f"{name}: already archived in {archive_folder(memory.config)}")
        if log_date(source) == today.isoformat():
            raise CompactError(f"{name}: today's log, still written to (agents append to it); compact it tomorrow")
        if not memory.is_memory(source):
            raise CompactError(f"{name}: not a memory file (outside compact's memory.paths, or excluded)")
        if not memory.path_of(source).is_file():
            raise CompactError(f"{name}: no such file")
        try:
            dt.date.fromisoformat(log_date(source))
        except ValueError as exc:
            raise CompactError(f"{name}: {log_date(source)} is not a valid date") from exc
        if source not in sources:
            sources.append(source)
    return sources


def cutoff_date(memory: MemoryApi, older_than_days: int | None = None, today: dt.date | None = None) -> dt.date:
    """Logs dated before this day are old enough to compact."""
    days = memory.config.compact.older_than_days if older_than_days is None else older_than_days
    if days < 0:
        raise CompactError(f"--older-than must not be negative, got {days}")
    return (today or clock.now().date()) - dt.timedelta(days=days)


def old_logs(memory: MemoryApi, older_than_days: int | None = None, today: dt.date | None = None) -> list[str]:
    """The daily logs (sources) older than `older_than_days`, oldest first; archived ones excluded."""
    return _old_logs(memory, cutoff_date(memory, older_than_days, today))


def _old_logs(memory: MemoryApi, cutoff: dt.date, refused: list[tuple[str, str]] | None = None) -> list[str]:
    """`old_logs`; the old logs the memory's files refuse (a link out of the workspace) go to `refused`, with why."""
    found, skipped = find_memory_files(memory.root, memory.config)
    out = []
    for source, why in [*((f.source, "") for f in found), *((s.source, s.reason) for s in skipped)]:
        day = log_date(source)
        if not day or _in_archive(memory, source):
            continue
        try:
            old = dt.date.fromisoformat(day) < cutoff
        except ValueError:
            log.warning("%s: not a valid date, not compacted", source)
            continue
        if old and why and refused is not None:
            refused.append((source, why))
        elif old and not why:
            out.append(source)
    return sorted(out, key=log_order)


def plan_compaction(
    memory: MemoryApi,
    older_than_days: int | None = None,
    files: Sequence[str] | None = None,
    today: dt.date | None = None,
    *,
    texts: Mapping[str, str] | None = None,
    progress: Progress | None = None,
) -> CompactionPlan:
    """Plan the compaction of `files`, or of the daily logs older than `older_than_days`; nothing is written.
    `texts` overrides the disk content of some sources (unsaved editor buffers); `progress(done, total, message)`
    reports each summarised group."""
    config = memory.config.compact
    today = today or clock.now().date()  # (MEMSEARCH_NOW, as remember and recent read it)
    days = config.older_than_days if older_than_days is None else older_than_days
    cutoff = cutoff_date(memory, days, today)
    skipped: list[tuple[str, str]] = []  # an old log refused or that cannot be read stays where it is, said
    sources = _explicit(memory, files, today) if files is not None else _old_logs(memory, cutoff, skipped)
    if files is None:  # (the others are compacted)
        sources, unreadable = _readable(memory, sources, texts)
        skipped = sorted(skipped + unreadable, key=lambda x: log_order(x[0]))
    if not sources:
        note = (
            "nothing to compact: no daily logs given"
            if files is not None
            else f"nothing to compact: no {'readable ' if skipped else ''}daily logs older than {days} days (before "
            f"{cutoff.isoformat()})"
        )
        return CompactionPlan(summarizer=config.summarizer, note=note, skipped=tuple(skipped))

    moves = _archive_targets(memory, sources)
    groups = _by_period(sources, config.group_by)
    summarizer = create_summarizer(config, memory.root, lambda: memory.embedder)
    planned: list[tuple[str, str, list[LogText], list[ArchiveMove]]] = []  # (period, summary path, logs, moves)
    for key, members in groups.items():
        folder = posixpath.dirname(members[0])
        moved: list[ArchiveMove] = []
        logs = _group_logs(memory, members, moves, folder, texts, moved)
        planned.append((key, posixpath.join(folder, f"summary-{key}.md"), logs, moved))
    sizes = [sum(len(x.text) for x in logs) for _, _, logs, _ in planned]
    frames = [
        len(_summary_file(memory, path, key, logs, "", summarizer.name, today).content) + 1
        for key, path, logs, _ in planned
    ]  # the body follows the intro after a blank line
    summaries: list[SummaryFile] = []
    archive: list[ArchiveMove] = []
    unchanged: list[Unchanged] = []
    chars_before = chars_after = allowed = spent = 0
    targets = body_budgets(sizes, frames, [len(logs) for _, _, logs, _ in planned])
    for done, ((key, path, logs, moved), size, frame, target) in enumerate(zip(planned, sizes, frames, targets)):
        if progress:
            progress(done, len(groups), f"summarising {key} ({len(logs)} logs)")
        bare = all(_only_headings(x.text) for x in logs)
        if bare or frame >= KEEP_SHARE * size:  # not even the smallest summary would gain: no summariser is asked
            unchanged.append(Unchanged(key, tuple(x.source for x in logs), size, frame, bare=bare))
            continue
        allowed += target  # what an earlier summary left unused goes to the next
        budget = max(allowed - spent, group_floor(len(logs)))
        # (the logs were read safe; a model's answer may still write a tag or a secret of its own)
        body = safe_text(summarizer.summarize(key, logs, _noter(progress, done, len(groups)), budget=budget))
        summary = _summary_file(memory, path, key, logs, body, summarizer.name, today)
        if len(summary.content) >= KEEP_SHARE * size:  # never bigger, and never for little gain
            allowed -= target
            unchanged.append(Unchanged(key, tuple(x.source for x in logs), size, len(summary.content)))
            continue
        summaries.append(summary)
        archive.extend(moved)
        spent += len(summary.content) - frame
        chars_before += size
        chars_after += len(summary.content)
    if progress:
        progress(len(groups), len(groups), f"{len(groups)} summaries planned")
    from memsearch_lsp.core.compact.promote import promote  # (as late: it reads the rules too)

    kept = {m.src for m in archive}
    logs_kept = [x for _, _, logs, _ in planned for x in logs if x.source in kept]
    return CompactionPlan(
        tuple(summaries),
        tuple(archive),
        summarizer.name,
        note=nothing_to_gain(unchanged) if unchanged and not summaries else "",
        today=today.isoformat(),
        stats={"logs": len(kept), "chars_before": chars_before, "chars_after": chars_after},
        unchanged=tuple(unchanged),
        memory_edit=promote(memory, logs_kept, texts) if config.promote and logs_kept else None,
        skipped=tuple(skipped),
    )


def _readable(
    memory: MemoryApi, sources: Sequence[str], texts: Mapping[str, str] | None
) -> tuple[list[str], list[tuple[str, str]]]:
    """(the logs to compact, (source, why) of the others: binary, too large, no regular file, mid-merge)."""
    readable, skipped = [], []
    for source in sources:
        try:
            text, problem = (texts[source], "") if texts and source in texts else read_text(memory.path_of(source))
        except OSError as exc:
            text, problem = "", exc.strerror or str(exc)
        problem = problem if problem and not text else CONFLICTED if merge_conflict(text) else ""
        if problem:
            log.warning("%s: %s; left in place, not compacted", source, problem)
            skipped.append((source, problem))
        else:
            readable.append(source)
    return readable, skipped


def _only_headings(text: str) -> bool:
    """A log with no text beyond its headings (and front matter), none of which says a fact ("## Decision: X" does)."""
    from memsearch_lsp.core.compact.facts import classify  # (not at start-up: its rules take 0.2 s to compile)

    lines = normalize_newlines(text).split("\n")
    headings, _, body_start = outline(lines)
    rows = {row for h in headings for row in range(h.row, h.end_row + 1)}
    body = any(line.strip() for n, line in enumerate(lines) if n >= body_start and n not in rows)
    return not body and not any(h.level > 1 and classify(h.title).factual for h in headings)  # (not its date)


def _archive_targets(memory: MemoryApi, sources: Sequence[str]) -> dict[str, str]:
    """Where each log goes in the archive folder (inside the workspace; one log per name, a file or nothing there)."""
    config, named = memory.config.compact, archive_folder(memory.config)
    try:
        archive_dir = relative_source(memory.root, Path(named))
    except PathError as exc:
        raise CompactError(f"compact.archive_dir {named!r} is outside the workspace") from exc
    for index in _index_folders(memory):
        if archive_dir == index or archive_dir.startswith(index.rstrip("/") + "/"):
            raise CompactError(
                f"compact.archive_dir {named!r} is inside the index folder {index}, which `reset` "
                "deletes and git ignores: the originals would be lost with it; archive outside it (the default is "
                "memory/archive)"
            )
    folders = [posixpath.normpath(p) for p in memory.config.memory.paths]
    clash = archive_clash(archive_dir, folders) or (
        ""
        if not config.index_archive or any(f == "." or archive_dir.startswith(f + "/") for f in folders)
        else "is outside the memory folders: the archived logs would leave search; name a folder inside one, or "
        "set compact.index_archive = false"
    )
    if clash:
        raise CompactError(f"compact.archive_dir {named!r} {clash}")
    for folder in (archive_dir, *map(str, PurePosixPath(archive_dir).parents)):  # (a file there: no move can be made)
        if folder != "." and memory.path_of(folder).exists() and not memory.path_of(folder).is_dir():
            raise CompactError(f"{folder} exists and is not a folder: the originals cannot be archived; move it away")
    moves: dict[str, str] = {}
    for source in sorted(sources, key=log_order):
        moves[source] = _free_name(memory, archive_dir, source, set(moves.values()))
    return moves


def _free_name(memory: MemoryApi, archive_dir: str, source: str, taken: set[str]) -> str:
    """The log's name in the archive folder, else the day's next part nothing holds (`2026-02-05.2.md`, `.3.md`):
    a log recreated at an archived date, or two folders' logs of one day, never go into or over another file."""
    name, part = posixpath.basename(source), 1
    while True:
        dst = posixpath.join(archive_dir, name)
        if dst not in taken and not os.path.lexists(memory.path_of(dst)):
            return dst
        part += 1
        name = f"{log_date(source)}.{part}.md"


def _index_folders(memory: MemoryApi) -> list[str]:
    """The workspace folders that hold the index and its state (`.memsearch/`, and a local index folder set inside
    the workspace by milvus.uri): caches, never a place for the Markdown."""
    from memsearch_lsp.core.store import is_local_uri

    folders, uri = [INDEX_DIR], memory.config.milvus.uri  # (none: the default, .memsearch/milvus.db)
    if uri and is_local_uri(uri):
        with contextlib.suppress(PathError):
            folders.append(relative_source(memory.root, Path(uri).expanduser()))
    return folders


def _by_period(sources: Sequence[str], group_by: str) -> dict[str, list[str]]:
    """The logs by period (`period_key`), oldest first."""
    groups: dict[str, list[str]] = {}
    for source in sorted(sources, key=log_order):
        groups.setdefault(period_key(dt.date.fromisoformat(log_date(source)), group_by), []).append(source)
    return groups


def _group_logs(
    memory: MemoryApi,
    members: Sequence[str],
    moves: Mapping[str, str],
    folder: str,
    texts: Mapping[str, str] | None,
    archive: list[ArchiveMove],
) -> list[LogText]:
    """A period's logs as the summariser reads them (an open buffer's text first), each one's archive move
    appended to `archive`. What a summariser (an endpoint too), a promotion to MEMORY.md or a line put back word for
    word reads is the log without its `<private>` spans and with its secrets redacted, each line where it was."""
    logs = []
    for source in members:
        text = texts.get(source) if texts else None
        if text is None:
            text, problem = read_text(memory.path_of(source))
            if problem and not text:
                raise CompactError(f"{source}: {problem}")
        if merge_conflict(text):  # (a log named, or one that a merge reached since it was planned)
            raise CompactError(f"{source}: {CONFLICTED}")
        move = _archive_move(memory, source, moves[source], text)
        archive.append(move)
        link = quote(posixpath.relpath(moves[source], folder or "."), safe="/")  # a Markdown link target
        logs.append(LogText(source, moves[source], link, log_date(source), safe_text(text, lines=True)))
    return logs


def body_budgets(sizes: Sequence[int], frames: Sequence[int], logs: Sequence[int]) -> list[int]:
    """Characters of summary body per group: TARGET_RATIO of the logs less the frames, shared in proportion
    to the logs' sizes; but a small group gets a minimum, not a ratio (`group_floor`)."""
    total = max(int(TARGET_RATIO * sum(sizes)) - sum(frames), 0)
    weight = sum(sizes) or 1
    return [max(total * size // weight, group_floor(n)) for size, n in zip(sizes, logs)]


def group_floor(logs: int) -> int:
    """The least summary body a group gets: MIN_BUDGET, and a section heading and a line more for each further log.
    A small group's summary may then be most of its logs: it is left as it is (KEEP_SHARE)."""
    return MIN_BUDGET + LOG_FLOOR * max(logs - 1, 0)


def _archive_move(memory: MemoryApi, source: str, dst: str, text: str) -> ArchiveMove:
    return ArchiveMove(source, dst, sha256(text.encode("utf-8")))


def _noter(progress: Progress | None, done: int, total: int) -> Callable[[str], None] | None:
    if progress is None:
        return None
    report = progress
    return lambda message: report(done, total, message)


def _summary_file(
    memory: MemoryApi, path: str, key: str, logs: Sequence[LogText], body: str, how: str, today: dt.date
) -> SummaryFile:
    first, last = logs[0].date, logs[-1].date
    span = first if first == last else f"{first} to {last}"
    intro = f"Summary of {span} ({how}, {today.isoformat()}).\n"  # (its span: core/search/archive.py reads it)
    section = f"{intro}\n{body.strip()}\n" if body.strip() else intro
    target = memory.path_of(path)
    if target.exists():
        data = target.read_bytes()
        existing = data.decode("utf-8", "replace")
        lead = "" if not existing or existing.endswith("\n\n") else ("\n" if existing.endswith("\n") else "\n\n")
        return SummaryFile(path, "append", f"{lead}---\n\n{section}", tuple(x.source for x in logs), sha256(data))
    return SummaryFile(path, "create", f"# Summary {key}\n\n{section}", tuple(x.source for x in logs))


# -- applying -----------------------------------------------------------------------------------
MAX_REPLANS = 5


def apply_checked(memory: MemoryApi, plan: CompactionPlan, exact: bool = False) -> CompactionPlan:
    """Apply `plan` to the files; a log that changed meanwhile is left in place and the rest re-planned, or
    (`exact`: a plan the user reviewed) the plan is refused, nothing applied (CompactError naming the logs).

    Returns the plan that was applied (its `left` names the logs left out).
    """
    if exact:
        apply_exactly(memory, plan)
        return plan
    left: list[str] = list(plan.left)
    today = dt.date.fromisoformat(plan.today) if plan.today else None
    for _ in range(MAX_REPLANS):
        if plan.empty:
            break
        try:
            apply_files(memory, plan)
            break
        except LogChanged as exc:
            log.warning("%s changed while being compacted; left in place", exc.source)
            left.append(exc.source)
            rest = [m.src for m in plan.archive if m.src not in left]
            plan = (
                plan_compaction(memory, files=rest, today=today)
                if rest
                else CompactionPlan(summarizer=plan.summarizer, note="nothing compacted")
            )
    else:
        raise CompactError(f"logs kept changing while being compacted ({', '.join(left)}); try again later")
    return replace(plan, left=tuple(left))


def apply_plan(memory: MemoryApi, plan: CompactionPlan) -> IndexStats:
    """Apply `plan` to the files (all or nothing, see apply_checked), then bring the index up to date."""
    apply_checked(memory, plan)
    return memory.index()
