"""The clock for "today" and "now": local time, or the fixed moment in MEMSEARCH_NOW (tests, replays)."""

from __future__ import annotations

import datetime as dt
import os

ENV = "MEMSEARCH_NOW"


def now() -> dt.datetime:
    """The local time, or `MEMSEARCH_NOW` (ISO 8601, e.g. 2026-12-03T09:30) when it is set."""
    value = os.environ.get(ENV, "").strip()
    if not value:
        return dt.datetime.now()
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError as exc:
        raise ValueError(f"{ENV}={value!r} is not an ISO 8601 date and time (e.g. 2026-12-03T09:30)") from exc
