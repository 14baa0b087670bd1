"""Search filters: a time range (`since`, `until`) and source globs, decided per source file.

A chunk's date comes from its file: a daily log (`YYYY-MM-DD.md`) is that day; a summary
(`summary-2026-W06.md`, `summary-2026-02.md`, `summary-2026-02-09.md`) covers its period. Other files
are undated and never match a date filter. Because every rule looks at the source only, a filter is a
set of allowed sources, and the search legs take their candidates from those sources alone.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import posixpath
import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from memsearch_lsp.config.globs import check_glob, glob_match
from memsearch_lsp.core.chunks import log_date

_RELATIVE = re.compile(r"([0-9]+) *([dwmy])")  # ASCII digits only: "٣d" is no date
_UNIT_DAYS = {"d": 1, "w": 7, "m": 30, "y": 365}
_SUMMARY = re.compile(r"^summary-(\d{4})-(?:W(\d{2})|(\d{2})(?:-(\d{2}))?)(?:\.\d{1,3})?\.md$")
MAX_GLOBS = 64  # source patterns of one search
FILTER_KEYS = ("since", "until", "source")  # search() keywords that filter rather than tune the ranking
# A filter that leaves at most this many chunks has narrowed the answer already: the relevance floor
# (search.min_score) does not apply, so a broad question ("what did we decide last week", since 7d) gets the
# notes in range that match best instead of nothing.
FEW_CHUNKS = 50
MAX_QUERY_CHARS = 4000  # a longer query is cut here (the model reads ~1,000 characters; BM25's cost grows with it)
DATE_FORMS = "YYYY-MM-DD, today, yesterday, or N days/weeks/months/years ago as 7d, 2w, 3m, 1y"


class FilterError(ValueError):
    """A date or source pattern that cannot be read; the message names it and the accepted forms."""


def parse_date(text: str, today: dt.date) -> dt.date:
    """'2026-02-09', 'today', 'yesterday', or a relative '7d' / '2w' / '3m' / '1y' (days before `today`)."""
    value = text.strip().lower()
    if value == "today":
        return today
    if value == "yesterday":
        return today - dt.timedelta(days=1)
    match = _RELATIVE.fullmatch(value)
    if match:
        count, unit = match.groups()
        try:
            if len(count) > 9:  # more days than a timedelta holds (and than int() reads quickly)
                raise OverflowError(count)
            return today - dt.timedelta(days=int(count) * _UNIT_DAYS[unit])
        except OverflowError:
            raise FilterError(
                f"the date {text!r} is out of range: it would be before the year 1; give a shorter span"
            ) from None
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise FilterError(f"cannot read the date {text!r}: use {DATE_FORMS}") from None


def source_period(source: str) -> tuple[dt.date, dt.date] | None:
    """The days a file's chunks are about: a daily log's day, a summary's period; None when undated."""
    day = log_date(source)
    if day:
        try:
            date = dt.date.fromisoformat(day)
        except ValueError:
            return None
        return date, date
    match = _SUMMARY.match(posixpath.basename(source))
    if not match:
        return None
    year, week, month, mday = match.groups()
    try:
        if week:
            first = dt.date.fromisocalendar(int(year), int(week), 1)
            return first, first + dt.timedelta(days=6)
        if mday:
            date = dt.date(int(year), int(month), int(mday))
            return date, date
        first = dt.date(int(year), int(month), 1)
        following = dt.date(first.year + first.month // 12, first.month % 12 + 1, 1)
        return first, following - dt.timedelta(days=1)
    except ValueError:
        return None


def source_date(source: str) -> str | None:
    """The date a file's chunks carry in results: a daily log's day, a summary's first day (YYYY-MM-DD); None
    for undated files. A date filter keeps a summary whose period overlaps its range."""
    period = source_period(source)
    return period[0].isoformat() if period else None


def is_summary(source: str) -> bool:
    """A summary compaction writes: `summary-2026-W06.md`, `summary-2026-02.md`, `summary-2026-02-09.md`."""
    return bool(_SUMMARY.match(posixpath.basename(source)))


@dataclass(frozen=True)
class SearchFilter:
    """Which chunks a search may return: dated within [since, until] (inclusive; either open) and, when
    `sources` is given, from a file matching one of those globs (`memory/2026-02-*`, `**/MEMORY.md`)."""

    since: dt.date | None = None
    until: dt.date | None = None
    sources: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.since is not None or self.until is not None or bool(self.sources)

    @property
    def dated(self) -> bool:
        return self.since is not None or self.until is not None

    def allows(self, source: str) -> bool:
        if self.sources and not any(glob_match(_nfc(pattern), _nfc(source)) for pattern in self.sources):
            return False
        if not self.dated:
            return True
        period = source_period(source)
        if period is None:
            return False
        first, last = period
        return (self.since is None or last >= self.since) and (self.until is None or first <= self.until)

    def allowed(self, sources: Iterable[str]) -> set[str]:
        """The sources among `sources` whose chunks may be returned."""
        return {s for s in sources if self.allows(s)}

    @staticmethod
    def narrowed(chunks: int, asked: Mapping[str, Any]) -> bool:
        """True when the filter left so few chunks (FEW_CHUNKS) that the relevance floor would only empty the answer,
        and the search did not ask for a floor of its own (`asked`: its overrides; `--min-score` is kept)."""
        return chunks <= FEW_CHUNKS and "min_score" not in asked

    def to_dict(self) -> dict[str, Any]:
        return {
            "since": self.since.isoformat() if self.since else None,
            "until": self.until.isoformat() if self.until else None,
            "source": list(self.sources),
        }


def _nfc(name: str) -> str:
    """A file name or a glob in Unicode's composed form, to match only: macOS (HFS+) and files synced from it store
    `café.md` decomposed (an `e` and an accent) while a keyboard types it composed; each source keeps its own name."""
    return name if name.isascii() else unicodedata.normalize("NFC", name)


def caller_day(value: str | dt.date | None) -> dt.date | None:
    """The day a search counts from, as another process sends it (`today=`: the caller's clock, which may differ
    from the owner's); None when not sent. FilterError for a value that is no date."""
    if value is None or isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        raise FilterError(f"today={value!r} is not a date (YYYY-MM-DD)") from None


def make_filter(
    since: str | dt.date | None = None,
    until: str | dt.date | None = None,
    source: str | Sequence[str] | None = None,
    *,
    today: dt.date,
    root: Path | None = None,
) -> SearchFilter:
    """A SearchFilter from user input (`source`: one glob or several, a path under `root` too); FilterError for a
    bad date or an empty range."""

    def day(value: str | dt.date | None) -> dt.date | None:
        if value is None or value == "":
            return None
        if isinstance(value, dt.date):
            return value
        return parse_date(str(value), today)

    first, last = day(since), day(until)
    if first and last and first > last:
        raise FilterError(f"the range is empty: since {first.isoformat()} is after until {last.isoformat()}")
    globs = (source,) if isinstance(source, str) else tuple(source or ())
    if len(globs) > MAX_GLOBS:
        raise FilterError(f"at most {MAX_GLOBS} source patterns")
    return SearchFilter(first, last, tuple(check_source(g, root) for g in globs))


def check_source(glob: str, root: Path | None = None) -> str:
    """A source glob as a filter uses it (stripped, without a leading `./`; a path under `root` made relative to it);
    FilterError names a pattern that is empty, outside the workspace, could take unbounded time to match, or is no
    gitignore-style pattern at all (`a\\`, `!`, `[z-a]`)."""
    cleaned = glob.strip().removeprefix("./")
    if root is not None and (cleaned.startswith(("/", "~", "../")) or cleaned == ".."):
        cleaned = _inside(cleaned, root)
    if not cleaned:
        raise FilterError("a source pattern is empty: give a glob such as 'memory/2026-02-*' or '**/MEMORY.md'")
    try:
        check_glob(cleaned, "source pattern")  # (read as the search will: `a\\`, `!`, `[z-a]` are refused here)
    except ValueError as exc:
        raise FilterError(str(exc)) from None
    return cleaned


def _inside(glob: str, root: Path) -> str:
    """A path given for a source (`/home/me/project/memory/*.md`, `../notes/*.md`) as the glob under `root` it names;
    FilterError when it is outside. An anchored pattern whose first folder the file system lacks (`/memory/*.md`)
    stays as it is: gitignore's "from the workspace's top"."""
    written = Path(os.path.normpath(root / Path(glob).expanduser()))
    for path, base in ((written, root), (Path(os.path.realpath(written)), root.resolve())):  # (through a link too)
        if base == path or base in path.parents:  # anchored: that file, not one of its name in any folder
            return "/" + path.relative_to(base).as_posix() if base != path else "**"
    if glob.startswith("/") and not Path("/", *Path(glob).parts[1:2]).exists():
        return glob
    raise FilterError(f"the source {glob!r} is outside the workspace {root}: give a path or glob inside it")


# -- a day the query names ----------------------------------------------------------------------------
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
# a month by its name: any case in full, but "may", "march" and the short forms only with a capital ("step 2 may
# fail", "top 10 march madness", "sprint 12 dec" name no day)
_MONTH = (
    r"(?:(?i:january|february|april|june|july|august|september|october|november|december)"
    r"|(?-i:March|May|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec))"
)
_ORDINAL = r"(?:st|nd|rd|th)?"
_NAMED_DAY = re.compile(
    r"\b(?:(?P<iso>\d{4}-\d{2}-\d{2})(?=T\d|\b)"  # 2026-11-11, 2026-11-11T10:00
    rf"|(?<!\d-)(?P<day>\d{{1,2}}){_ORDINAL}(?: of)? (?P<month>{_MONTH})\b(?:,? (?P<year>\d{{4}})\b)?"  # 11 November
    rf"|(?P<month2>{_MONTH}) (?P<day2>\d{{1,2}}){_ORDINAL}\b(?!-\d)(?:,? (?P<year2>\d{{4}})\b)?"  # Nov 11th, 2026
    r"|(?P<relative>yesterday)\b"  # (not "today": "fix the login bug today" asks about no day's notes)
    r"|(?:last|this past) (?P<weekday>(?:mon|tues|wednes|thurs|fri|satur|sun)day)\b)",
    re.I,
)
_WEEKDAYS = ("mon", "tues", "wednes", "thurs", "fri", "satur", "sun")


def named_day(query: str, today: dt.date) -> dt.date | None:
    """The one day a query names: `2026-11-11`, "11 November", "Nov 11th, 2026", "yesterday", "last Tuesday"
    (the last one before today; not "on Tuesday": "deploys go out on Tuesday" names no day); a day and month
    without a year is the last such day up to today. None when it names none, several, or a day that does not exist."""
    days = set()
    for match in _NAMED_DAY.finditer(query[:MAX_QUERY_CHARS]):
        try:
            days.add(_day_of(match, today))
        except (ValueError, OverflowError):
            return None
    return days.pop() if len(days) == 1 else None


def _day_of(match: re.Match[str], today: dt.date) -> dt.date:
    if match["iso"]:
        return dt.date.fromisoformat(match["iso"])
    if match["relative"]:
        return today - dt.timedelta(days=1)
    if match["weekday"]:
        back = (today.weekday() - _WEEKDAYS.index(match["weekday"].lower()[:-3])) % 7 or 7
        return today - dt.timedelta(days=back)
    month = _MONTHS.index((match["month"] or match["month2"]).lower()[:3]) + 1
    day, year = int(match["day"] or match["day2"]), match["year"] or match["year2"]
    if year:
        return dt.date(int(year), month, day)
    for year in range(today.year, today.year - 9, -1):  # the last such day up to today (a 29 February: up to 8 back)
        with contextlib.suppress(ValueError):
            if (date := dt.date(year, month, day)) <= today:
                return date
    raise ValueError(f"no {day} of month {month}")


def sources_of_day(query: str, today: dt.date, sources: Collection[str]) -> frozenset[str] | None:
    """The dated files (daily logs, summaries) of the one day the query names, when there are any: a search gives
    their notes first (core/search/hybrid.py); None when the query names no day or no file is of that day."""
    day = named_day(query, today)
    if day is None:
        return None
    dated = frozenset(s for s in sources if on_day(s, day))
    return dated or None


def on_day(source: str, day: dt.date) -> bool:
    """Whether a file's notes are of `day`: a daily log of that day, a summary whose period holds it."""
    period = source_period(source)
    return period is not None and period[0] <= day <= period[1]


class _Found(Protocol):
    @property
    def id(self) -> str: ...


_Hit = TypeVar("_Hit", bound=_Found)


def day_first(day: list[_Hit], rest: list[_Hit], top_k: int) -> list[_Hit]:
    """The hits of the day a query names, then the others, `top_k` in all; the best other hit keeps a place when
    there are more than one (a day misremembered still shows the note the words point to)."""
    seen = {h.id for h in day}
    others = [h for h in rest if h.id not in seen]
    room = top_k - 1 if others and top_k > 1 else top_k
    return [*day[:room], *others][:top_k]
