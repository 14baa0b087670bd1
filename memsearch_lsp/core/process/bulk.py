"""A large index pass in a child process: a long-lived owner of the index keeps only what answering needs.

Writing a local index loads the Milvus Lite engine with pyarrow and faiss (~70 MB that no process can unload)
and leaves the heap a bulk write grew; searching needs neither (the saved mirror answers). So the language
server hands a full pass that would write at least BULK_CHARS of text (a new workspace, a model change, a
forced re-index) to `python -m memsearch_lsp.core.process.bulk`: it lends the index (`Memory.released`: saved,
its engine closed, its lock passed on with the descriptor that holds it, so no other process can take the folder
in between; everything else that reaches for the index waits), the child holds the folder through it,
indexes with the very same settings (sent on its stdin, never read from the workspace again) and saves the
mirror, and the server takes the index back from that saved state, then indexes here what changed meanwhile
(and unsaved editor buffers); it loads its own model then, for the searches that follow. A child that
fails, or cannot start, costs nothing but time: the pass runs here.

The child's stdout carries JSON lines only (its own stdout goes to stderr: a server's stdout is its
protocol); its stdin stays open while the parent lives, and the child exits when it closes.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from memsearch_lsp.config import CONVERTER, Config
from memsearch_lsp.core.api import MemoryApi
from memsearch_lsp.core.index import HandOver, IndexStats, Progress
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.store.lite import adopt
from memsearch_lsp.core.store.milvus import IndexBusy

log = logging.getLogger(__name__)

CHILD = [sys.executable, "-m", "memsearch_lsp.core.process.bulk"]  # the child process
BULK_CHARS = 256 * 1024  # text to write from which a pass runs in a child (~500 chunks: tens of seconds to embed)
CLAIM_WAIT_S = 10.0  # how long the child waits for the folder (the parent has just let it go)


class ChildFailed(RuntimeError):
    """The child process did not index (it could not start, failed, or was killed)."""


def index(memory: MemoryApi, force: bool = False, progress: Progress | None = None, at: int = BULK_CHARS) -> IndexStats:
    """A full pass over `memory`; one that would write at least `at` characters of text runs in a child process
    when this process owns a local index with the embedder its settings name (else, and `at` <= 0, here)."""
    if not isinstance(memory, Memory) or memory.embedder_given or memory.config.milvus.uri or at <= 0:
        return memory.index(force=force, progress=progress)
    try:
        return memory.index(force=force, progress=progress, hand_over=at)
    except HandOver as work:
        log.info("%s: %s; indexing them in a child process", memory.root.name, work)
    started = time.perf_counter()
    try:
        with memory.released() as lock_fd:
            done = run_child(memory.root, memory.config, force, progress, lock_fd)
    except ChildFailed as exc:
        log.warning(
            "%s: the index pass in a child process failed (%s); indexing in this process", memory.root.name, exc
        )
        return memory.index(force=force, progress=progress)
    _warm(memory.embedder)  # after the child (not beside it: two models at once), before the searches that follow
    meanwhile = memory.index()  # files changed while the child ran, unsaved buffers: few, here
    return replace(
        meanwhile,
        seconds=time.perf_counter() - started,
        **{
            k: getattr(done, k) + getattr(meanwhile, k)
            for k in ("files_added", "files_modified", "files_removed", "chunks_embedded", "chunks_reused")
        },
    )


def _warm(embedder: Any) -> None:
    """Load a local model here now: a search right after the pass does not wait for it (a remote one has no load)."""
    warm = getattr(embedder, "warm", None)
    if warm is not None:
        try:
            warm()
        except Exception as exc:  # the first search says it, once
            log.debug("loading the model: %s", exc)


def run_child(
    root: Path, config: Config, force: bool, progress: Progress | None, lock_fd: int | None = None
) -> IndexStats:
    """Index `root` with `config` in a child process: its stats. `lock_fd`: the index folder's lock, lent to it
    (Memory.released), else the folder must be free for it to take."""
    order = json.dumps({"root": str(root), "config": CONVERTER.unstructure(config), "force": force, "lock_fd": lock_fd})
    try:
        child = subprocess.Popen(
            CHILD,
            cwd=root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            pass_fds=() if lock_fd is None else (lock_fd,),
        )
    except OSError as exc:
        raise ChildFailed(f"cannot start {CHILD[0]}: {exc}") from exc
    assert child.stdin is not None and child.stdout is not None
    answer: dict[str, Any] = {}
    with child:
        try:
            child.stdin.write(order + "\n")
            child.stdin.flush()  # kept open: its end tells the child this process is gone
            for line in child.stdout:
                message = json.loads(line)
                if "progress" in message and progress is not None:
                    progress(*message["progress"])
                answer.update({k: v for k, v in message.items() if k != "progress"})
        except (OSError, ValueError, TypeError) as exc:
            child.kill()
            raise ChildFailed(f"{type(exc).__name__}: {exc}") from exc
        finally:
            child.stdin.close()
        code = child.wait()
    if code != 0 or not isinstance(answer.get("stats"), dict):
        raise ChildFailed(answer.get("error") or f"exit status {code}")
    return IndexStats.from_dict(answer["stats"])


# -- the child -----------------------------------------------------------------------------------
def main() -> int:
    report = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)  # anything else printed goes to stderr
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="memsearch-lsp index: %(message)s")
    order = json.loads(sys.stdin.readline())
    finished = threading.Event()
    threading.Thread(target=_exit_with_parent, args=(sys.stdin, finished), name="memsearch-parent", daemon=True).start()

    def progress(done: int, total: int, message: str) -> None:
        report.write(json.dumps({"progress": [done, total, message]}) + "\n")

    try:
        memory = Memory(order["root"], config=CONVERTER.structure(order["config"], Config))
        try:
            if isinstance(order.get("lock_fd"), int):
                adopt(memory.uri, order["lock_fd"])  # held through our parent's lock: never free between us
            _claim(memory)
            stats = memory.index(force=bool(order.get("force")), progress=progress)
        finally:
            memory.close()  # the mirror saved, the folder stamped and let go: the parent opens it from there
    except Exception as exc:
        log.debug("the index pass failed", exc_info=True)
        finished.set()
        report.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
        return 1
    finished.set()
    report.write(json.dumps({"stats": stats.to_dict()}) + "\n")
    return 0


def _claim(memory: Memory) -> None:
    deadline = time.monotonic() + CLAIM_WAIT_S
    while True:
        try:
            memory.claim()
            return
        except IndexBusy:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _exit_with_parent(stdin: IO[str], finished: threading.Event) -> None:
    """The parent closed our stdin (it is gone, or it read our answer): a pass still running ends now (a write cut
    short is safe: the index is checked at its next opening)."""
    stdin.read()
    if not finished.is_set():
        os._exit(3)


if __name__ == "__main__":
    sys.exit(main())
