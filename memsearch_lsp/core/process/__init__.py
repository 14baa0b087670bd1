"""Processes: one owner per index, its socket and its client, long-lived memories."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Any


def end_on_signals(leave: Callable[[], None], name: str) -> None:
    """SIGTERM, SIGHUP or SIGINT (a client stopping its server: Neovim's `client:stop(true)`, VS Code after its
    shutdown timeout; a closed terminal; Ctrl-C, which left the stdio loop waiting on its thread reading stdin)
    runs `leave` (let the index and its owner record go, then exit) in a thread named `name`: the interrupted
    thread may hold a lock that closing takes. Main thread only (Python's signals)."""

    def ended(*_: Any) -> None:
        threading.Thread(target=leave, name=name, daemon=True).start()

    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(number, ended)
