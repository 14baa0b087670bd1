"""Changes a window sends to its index (an edit, a save, a close, a file written on disk): when the process that owns
the index does not answer (stopped, or slower than its ping), each is kept and sent again once it answers, never lost.

A change that still fails when the owner is gone for good is not kept: the window owns the index then
(`MemsearchServer.take_over`), and its own pass reads the disk.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from memsearch_lsp.core.store import IndexBusy

if TYPE_CHECKING:
    from memsearch_lsp.lsp.server import MemsearchServer, Root

log = logging.getLogger(__name__)
RETRY_S = 1.0  # how long a window waits between two tries to send what it kept

Send = Callable[[], Awaitable[Any]]


async def forwarded(ls: MemsearchServer, root: Root, source: str, send: Send) -> None:
    """`send()` the change of `source` ("" for a pass over every file); while the owner does not answer (IndexBusy)
    it is kept, the last one of each source, and sent again when the owner answers (said once, then once when sent).
    `send` reads what it sends when it runs (the buffer, the disk), so a kept change is never stale."""
    try:
        await send()
    except IndexBusy as exc:
        if not root.behind:
            log.warning("%s: %s; the changes made meanwhile are kept and sent when it answers", root.path.name, exc)
            ls.background(_catch_up(ls, root), f"sending the changes kept for {root.path.name}")
        root.behind[source] = send
        return
    root.behind.pop(source, None)  # (sent now: an older one kept for it would undo it)


async def _catch_up(ls: MemsearchServer, root: Root) -> None:
    """Send what `root` kept, every RETRY_S, until the owner takes all of it (or this window owns the index)."""
    sent = 0
    while root.behind and ls.roots.get(root.path) is root:  # (a folder removed meanwhile: nothing to send)
        await asyncio.sleep(RETRY_S)
        for source, send in list(root.behind.items()):
            try:
                await send()
            except IndexBusy:
                break  # still not answering: the rest waits for the next try
            except Exception as exc:  # (as when sent the first time: said, and not tried again)
                ls.report(f"indexing {source or root.path.name} failed: {exc}", exc)
            if root.behind.get(source) is send:
                del root.behind[source]
                sent += 1
    log.info("%s: the index owner answers again; %d kept changes sent", root.path.name, sent)
