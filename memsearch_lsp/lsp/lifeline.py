"""The server never outlives its editor: it exits when stdin closes, on `exit`, or when its parent dies."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Callable

from memsearch_lsp.core.process.owner import pid_alive

log = logging.getLogger("memsearch_lsp")

CHECK_S = 1.0  # how often the parent is looked at
CLOSE_S = 5.0  # how long closing the index may take before the process exits anyway


def orphaned(parent: int, client: int | None) -> bool:
    """The process that started us is gone (we were re-parented), or the client named in initialize is."""
    if os.name != "nt" and os.getppid() != parent:
        return True
    return client is not None and client > 0 and not pid_alive(client)


def watch_parent(client_pid: Callable[[], int | None], close: Callable[[], None]) -> threading.Thread:
    """A daemon thread that ends the process (after `close`, bounded) when the editor is gone."""
    parent = os.getppid()
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(CHECK_S):
            if orphaned(parent, client_pid()):
                log.info("the editor is gone; exiting")
                finish(close, 0)

    thread = threading.Thread(target=loop, name="memsearch-lifeline", daemon=True)
    thread.start()
    return thread


def finish(close: Callable[[], None], code: int) -> None:
    """Close the index (at most CLOSE_S), flush the logs and end the process, whatever threads still run.

    Threads of the store or a long index pass must not keep a server alive once its client is gone:
    it would hold the index (the CLI would get IndexBusy) with nobody to talk to.
    """
    closer = threading.Thread(target=close, name="memsearch-close", daemon=True)
    closer.start()
    closer.join(CLOSE_S)
    if closer.is_alive():
        log.warning("closing the index took over %.0f s; exiting anyway", CLOSE_S)
    logging.shutdown()
    sys.stderr.flush()
    os._exit(code)
