"""Progress on long work: the `Progress` callback every long operation takes, and ChunkProgress (the indexer's)."""

from __future__ import annotations

import time
from collections.abc import Callable

Progress = Callable[[int, int, str], None]  # (done, total, a message): chunks for an index pass
REPORT_S = 0.2  # progress reports come at most this often (and after each group written, and at the end)


class ChunkProgress:
    """Progress in chunks: those found in the store count at once, those embedded as their texts are; at most one
    report every REPORT_S seconds (the bar or `$/progress` moves steadily, the protocol is not flooded)."""

    def __init__(self, progress: Progress | None, total: int):
        self.progress, self.total, self.done = progress, total, 0.0
        self._last = time.monotonic()

    def __bool__(self) -> bool:
        return self.progress is not None and self.total > 0

    def add(self, chunks: float) -> None:
        self.done += chunks
        self._say()

    def texts(self, chunks: int, texts: int) -> Callable[[int], None]:
        """A callback for one embed call: `texts` texts done = `chunks` chunks done."""
        start = self.done

        def done(n: int) -> None:
            self.done = start + chunks * min(n, texts) / texts
            self._say()

        return done

    def _say(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.progress is not None and (force or now - self._last >= REPORT_S):
            self._last = now
            done = min(self.total, int(self.done))
            self.progress(done, self.total, f"{done}/{self.total} chunks")

    def start(self) -> None:
        if self:
            self._say(force=True)

    def written(self) -> None:
        """A group is written: said at once (a report after it means its rows are in the index)."""
        if self:
            self._say(force=True)

    def finish(self) -> None:
        if self:
            self.done = self.total
            self._say(force=True)
