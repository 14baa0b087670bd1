"""Processes: one owner per index, its socket and its client, long-lived memories."""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
from collections.abc import Callable
from typing import Any

ENDING = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def end_on_signals(leave: Callable[[], None], name: str) -> None:
    """SIGTERM, SIGHUP or SIGINT (a client stopping its server: Neovim's `client:stop(true)`, VS Code after its
    shutdown timeout; a closed terminal; Ctrl-C, which left the stdio loop waiting on its thread reading stdin)
    runs `leave` (let the index and its owner record go, then exit) in a thread named `name`: the interrupted
    thread may hold a lock that closing takes. Main thread only (Python's signals).

    The kernel may hand the signal to any thread, and Python runs a handler in the main thread only, when it next
    runs Python code: a server whose main thread waits in its event loop for a message that never comes (stopped
    before `initialize`) never ran it and did not stop. So the signal also wakes a thread started here, through
    Python's wakeup fd, written by whichever thread the signal lands on; the handler itself only writes there too
    (in case a library sets its own wakeup fd later)."""
    wake, woken = socket.socketpair()
    wake.setblocking(False)
    numbers = {int(number) for number in ENDING}

    def wait() -> None:
        with woken:
            while (got := woken.recv(1)) and got[0] not in numbers:
                pass  # another signal Python handles (its wakeup fd says every one)
        leave()

    def ended(number: int, _frame: Any) -> None:
        with contextlib.suppress(OSError):
            wake.send(bytes([number]))

    threading.Thread(target=wait, name=name, daemon=True).start()
    signal.set_wakeup_fd(wake.fileno(), warn_on_full_buffer=False)
    for number in ENDING:
        signal.signal(number, ended)
