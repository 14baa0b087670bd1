"""The types of the command line's arguments: each reads one argument and says, as argparse does, what is wrong."""

from __future__ import annotations

import argparse
import errno
import math
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

MAX_DAYS = 365_000  # 1000 years: a count of days further back would leave the calendar (before the year 1)


def _shown(text: str) -> str:
    """A value as a message quotes it: a very long one cut short."""
    return repr(text) if len(text) <= 80 else repr(text[:60]) + f"... ({len(text)} characters)"


def whole(low: int, high: int, unit: str = "") -> Callable[[str], int]:
    """An argparse type: a whole number (ASCII digits) from `low` to `high`; `unit` names what it counts."""
    what = f"a whole number{f' of {unit}' if unit else ''}, at least {low} and at most {high}"

    def number(text: str) -> int:
        digits = text.strip()
        value = int(digits) if re.fullmatch(r"[+-]?[0-9]{1,18}", digits) else None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be {what}; got {_shown(text)}")
        return value

    return number


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds, more than 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds more than 0; got {_shown(text)}")
    return value


def line_span(text: str) -> tuple[int, int]:
    """An argparse type: a line `N` or lines `N-M` (1-based, N <= M)."""
    first, _, last = text.strip().partition("-")
    line = whole(1, 10**9, "lines")
    start = line(first)
    end = line(last) if last else start
    if end < start:
        raise argparse.ArgumentTypeError(f"must be N or N-M with N <= M; got {_shown(text)}")
    return start, end


def share(text: str) -> float:
    """An argparse type: a number from 0 to 1 (a weight, a relevance)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 1:  # (nan too)
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 1; got {_shown(text)}")
    return value


def folder(text: str) -> str:
    """An argparse type: a path that is a folder or not there yet (init makes it), kept as given; a file, a
    name too long or a path that cannot be looked at is refused."""
    try:
        if not stat.S_ISDIR(os.stat(Path(text).expanduser()).st_mode):
            raise argparse.ArgumentTypeError(f"{_shown(text)} is not a folder")
    except FileNotFoundError:
        return text
    except (OSError, RuntimeError) as exc:  # RuntimeError: `~name` of no known user
        known = {errno.ENAMETOOLONG: "the name is too long", errno.ENOTDIR: "not a folder (a part of it is a file)"}
        why = known.get(getattr(exc, "errno", None) or 0) or getattr(exc, "strerror", None) or str(exc)
        raise argparse.ArgumentTypeError(f"{_shown(text)}: {why}") from None
    return text


def _read_by(text: str, read: Callable[[str], object]) -> str:
    """`text` when `read` takes it; its ValueError (FilterError is one) as argparse's error."""
    try:
        read(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def date_filter(text: str) -> str:
    """An argparse type for --since / --until: a date the search's filter reads (core/search/filters.py), said here
    before anything opens (a process that owns the index would answer it without the hint)."""
    from memsearch_lsp.core import clock
    from memsearch_lsp.core.search.filters import parse_date

    if not text.strip():
        raise argparse.ArgumentTypeError("needs a date or a relative age like 7d (YYYY-MM-DD, today, yesterday, 2w)")
    return _read_by(text, lambda value: parse_date(value, clock.now().date()))


def source_glob(text: str) -> str:
    """An argparse type for --source: a glob the search can use (core/search/filters.py says why not)."""
    from memsearch_lsp.core.search.filters import check_source

    return _read_by(text, check_source)


def tcp_address(text: str) -> str:
    """An argparse type for serve --tcp: HOST:PORT with a port from 1 to 65535 (lsp/setup.py reads it)."""
    from memsearch_lsp.lsp.setup import listen_address

    return _read_by(text, listen_address)
