"""Progress bars for long commands (index, a search that must index, compact, warm): tqdm on stderr, shown only
when both stdout and stderr are terminals and --json is off, so scripts and pipes get the answer alone."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

from memsearch_lsp.core.progress import Progress


def wanted(args: argparse.Namespace) -> bool:
    """A person watches: no --json, stdout and stderr are terminals."""
    if getattr(args, "json", False):
        return False
    return all(stream is not None and stream.isatty() for stream in (sys.stdout, sys.stderr))


def _fixed_size() -> dict[str, Any]:
    """{} when the terminal knows its size (the bar follows it), else COLUMNS x LINES or 80 x 24: a terminal that
    says it has no columns or lines (a bare pseudo-terminal) would get an empty bar."""
    try:
        size = os.get_terminal_size(sys.stderr.fileno())
        if size.columns > 0 and size.lines > 0:
            return {"dynamic_ncols": True}
    except (OSError, ValueError):
        pass
    columns, lines = (int(os.environ.get(name, "") or 0) for name in ("COLUMNS", "LINES"))
    return {"ncols": columns or 80, "nrows": lines or 24}


@contextlib.contextmanager
def bar(args: argparse.Namespace, what: str, unit: str = "chunk") -> Iterator[Progress | None]:
    """A `Progress` callback drawing one bar (done / total, rate, time left) from its first report on, closed
    on exit; None when nobody watches (the callers pass it on as is)."""
    if not wanted(args):
        yield None
        return
    shown: list[Any] = []

    def report(done: int, total: int, message: str) -> None:
        if not shown:
            from tqdm import tqdm  # only when a bar is drawn: --help and quiet runs never import it

            shown.append(
                tqdm(total=total, desc=what, unit=unit, file=sys.stderr, leave=False, delay=0.2, **_fixed_size())
            )
        progress = shown[0]
        if total != progress.total:
            progress.total = total
        progress.update(done - progress.n)
        progress.set_postfix_str(message if unit not in message else "", refresh=False)

    try:
        yield report
    finally:
        if shown:
            shown[0].close()
