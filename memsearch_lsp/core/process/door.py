"""One door into the process model: own a workspace's index (and serve it to the others) or follow its owner.

The language server, the MCP server, `memsearch-lsp warm` and the CLI all come in here: `open_memory` gives the
owner's client (`RemoteMemory`) when another process owns the index, else a `Memory` that owns it; a `Door`, for a
process that lives on, also serves the index it owns (`OwnerServer`, so editors and the CLI started later become
its clients) and opens again when the owner it followed goes away (following the new owner, or owning it).
"""

from __future__ import annotations

import logging
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, wait
from pathlib import Path
from typing import Any, TypeVar

from memsearch_lsp.config import Config, load_config
from memsearch_lsp.core import launch
from memsearch_lsp.core.api import MemoryApi
from memsearch_lsp.core.embedding.base import EmbeddingError
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.process import protocol
from memsearch_lsp.core.process.owner import (
    PING_TIMEOUT_S,
    OwnerGone,
    OwnerServer,
    RemoteMemory,
    UntrustedOwner,
    find_owner,
)
from memsearch_lsp.core.progress import Progress
from memsearch_lsp.core.store import IndexBusy

log = logging.getLogger(__name__)
T = TypeVar("T")
WARM_PROCESS = "memsearch-lsp warm"
# a search waits this long for an index pass (a process's first: a large memory, a slow embedding endpoint), then
# answers from the part indexed so far: the language server's requests and the MCP server's memory_search
READY_WAIT_S = 10.0
BUSY_OWNER_S = 5.0  # at most how long an open asks an owner that holds the index but does not answer (2 s a ping)
STOP_WAIT_S = 30.0  # how long closing waits for the index pass it stopped (it stops at its next progress report)


class PassStopped(Exception):
    """The index pass in the background was stopped: the process is leaving (`Door.close`)."""


class HeldAlone(IndexBusy):
    """Another process holds the index and serves it to no one (a one-shot `memsearch-lsp index`): a note may go to
    the Markdown alone. Never an owner that serves it (stopped, busy, of another release: its editor may hold the log
    unsaved, and only it can say so)."""


WRITE_WAIT_S = 10.0  # how long a note waits for a process holding the index before it writes the Markdown alone


def open_memory(
    workspace: str | Path,
    *,
    wait_s: float = 30.0,
    config: Config | None = None,
    files_alone: bool = False,
    **settings: Any,
) -> MemoryApi:
    """The index owner's RemoteMemory when one runs, else a local Memory that owns the index.

    A local open waits (up to `wait_s`) while another short-lived process holds the folder (then IndexBusy; with
    `files_alone`, for a writer, the local Memory unopened: it writes the Markdown, the truth, and the holder's pass
    or the next one indexes it, as a note written by hand; `memsearch-lsp index` of a large memory runs minutes,
    and an agent's note waited, failed busy and was lost); an owner that runs but
    does not answer is asked again for at most BUSY_OWNER_S (one starting on a loaded machine answers late), then
    IndexBusy. A record or socket that is not this user's own is refused with one warning naming it, and the memory
    is opened here. `~` is expanded; a folder that is no memory workspace
    raises NoMemoryHere and nothing is created there (`memsearch-lsp init` starts one).
    """
    from memsearch_lsp.core.onboard import NoMemoryHere, require_memory_workspace

    root = Path(workspace).expanduser()
    if not root.is_dir():  # (not there yet, as "~/my-agent" before `memsearch-lsp init`)
        raise NoMemoryHere(root)
    root = root.resolve()
    require_memory_workspace(root, config)
    started = time.monotonic()
    deadline = started + wait_s
    memory = Memory(root, config=config, **settings)  # (opens nothing yet) its index: where an owner holds the lock
    while True:
        try:
            sock = find_owner(root, memory.uri)
        except UntrustedOwner as exc:
            log.warning("%s; opening the index here", exc)
            sock = None
        except OwnerGone as exc:
            if time.monotonic() - started + PING_TIMEOUT_S > min(wait_s, BUSY_OWNER_S):  # (no ping would end in time)
                raise IndexBusy(str(exc)) from exc
            time.sleep(0.2)
            continue
        if sock is not None:
            log.info("%s: following the process that owns the index (%s)", root.name, sock)
            return RemoteMemory(root, sock, config=config, **settings)
        try:
            memory.claim()
            log.info("%s: opened the index at %s (%d chunks)", root.name, memory.uri, memory.store.count())
            return memory
        except IndexBusy as exc:
            memory.close()
            if time.monotonic() > deadline and files_alone:
                log.info("%s; writing the Markdown alone, for the next index pass", exc)
                return Memory(root, config=config, **settings)  # (unopened: it opens the index once it is free)
            if time.monotonic() > deadline:
                raise HeldAlone(str(exc)) from exc
            time.sleep(0.2)
            memory = Memory(root, config=config, **settings)


class Door:
    """A long-lived process's memory of one workspace: `memory` (opened on first use), served to other processes
    while this one owns it; `call(fn)` runs `fn(memory)` and, when the owner it followed went away, opens again
    and runs it once more."""

    def __init__(
        self,
        root: str | Path,
        *,
        config: Config | None = None,
        process: str = "memsearch-lsp",
        idle_s: float | None = None,
        **settings: Any,
    ):
        self.root = Path(root).expanduser().resolve()
        self.config, self.process, self.settings = config, process, settings
        self.idle_s = idle_s  # (an owner that leaves after that long without a call says so in its record)
        self.owner: OwnerServer | None = None
        self._memory: MemoryApi | None = None
        self._lock = threading.RLock()
        self._pass: Future[None] | None = None  # the index pass in the background (`reconcile`)
        self._passing = threading.Lock()
        self._thread: threading.Thread | None = None  # the pass's thread (closing stops it and waits for it)
        self._stop = threading.Event()
        self.progress: tuple[int, int, str] | None = None  # its latest report: chunks done, of total, said

    @property
    def memory(self) -> MemoryApi:
        with self._lock:
            if self._memory is None:
                self._memory = self._open()
            return self._memory

    @property
    def current(self) -> MemoryApi | None:
        """The memory when it is open (None before the first use or after close)."""
        return self._memory

    def _open(self, gone: MemoryApi | None = None, **opening: Any) -> MemoryApi:
        config = gone.config if gone is not None else self.config
        memory = open_memory(self.root, config=config, **opening, **self.settings)
        if isinstance(gone, RemoteMemory) and isinstance(memory, RemoteMemory):
            memory.search_overrides = dict(gone.search_overrides)  # this process's search settings
        if not memory.remote:
            owner = OwnerServer(memory, self.process, self.idle_s)  # type: ignore[arg-type]  # (a local Memory: remote is False)
            try:
                owner.start()
                self.owner = owner
            except OSError as exc:
                log.warning("cannot serve %s to other processes: %s", self.root, exc)
        log.info(
            "%s: %s", self.root.name, "following the index owner" if memory.remote else "this process owns the index"
        )
        return memory

    def reconfigure(self, config: Config) -> bool:
        """New settings: the open memory's (True when the index must be rebuilt); a memory that could not open with
        the old ones (a model folder that is not there) opens with these at its next use (True: index it then)."""
        with self._lock:
            if self._memory is None:
                self.config = config
                return True
            return self._memory.reconfigure(config)

    def take_over(self, gone: MemoryApi) -> MemoryApi:
        """The owner that `gone` followed went away: open again (unless another call already did)."""
        with self._lock:
            if self._memory is gone or self._memory is None:
                self._memory = self._open(gone)
            return self._memory

    def call(self, fn: Callable[[MemoryApi], T]) -> T:
        memory = self.memory
        try:
            return fn(memory)
        except OwnerGone:
            log.info("%s: the index owner went away; opening it again", self.root)
            return fn(self.take_over(memory))

    def write(self, fn: Callable[[MemoryApi], T]) -> T:
        """`call(fn)` for a note: while another process holds the index past WRITE_WAIT_S and serves no one
        (`memsearch-lsp index` of a large memory), `fn` writes the Markdown alone, as the CLI's `remember` does."""
        alone = None
        with self._lock:
            if self._memory is None:
                try:
                    self._memory = self._open(wait_s=WRITE_WAIT_S)
                except HeldAlone as exc:
                    log.info("%s; writing the Markdown alone, for the next index pass", exc)
                    alone = Memory(self.root, config=self.config, **self.settings)  # (opened again at the next call)
        if alone is None:
            return self.call(fn)
        with alone:
            return fn(alone)

    def reconcile(self) -> Future[None]:
        """Bring the index up to date on a thread of its own (`index_what_it_can`; searches meanwhile read the part
        indexed so far): the pass running already, else a new one. Its result is its error, if it failed."""
        with self._passing:
            if self._pass is None or self._pass.done():
                self._pass, self.progress = Future(), None
                if self._stop.is_set():  # (closed: no new pass)
                    self._pass.set_exception(PassStopped(f"{self.root.name}: closed"))
                    return self._pass
                self._thread = threading.Thread(
                    target=self._reconcile, args=(self._pass,), name="memsearch-index", daemon=True
                )
                self._thread.start()
            return self._pass

    def _reconcile(self, done: Future[None]) -> None:
        def heard(chunks: int, total: int, message: str) -> None:
            self.progress = (chunks, total, message)

        try:
            self.call(lambda memory: index_what_it_can(memory, self.stoppable(heard), "searching"))
        except BaseException as exc:  # (the caller that waits for it hears it; one that does not, the log)
            log.debug("%s: the index pass failed: %s", self.root, exc)
            done.set_exception(exc)
        else:
            done.set_result(None)

    def reconciled(self, wait_s: float = READY_WAIT_S, heard: Progress | None = None) -> bool:
        """`reconcile()` and wait for it at most `wait_s` (`heard` hears its progress meanwhile, each second): False
        when it still runs (the caller answers from the part indexed so far, and says so); a failed pass's error is
        raised here."""
        running, deadline, said = self.reconcile(), time.monotonic() + wait_s, None
        while wait([running], max(0.0, min(1.0, deadline - time.monotonic()))).not_done:
            if time.monotonic() >= deadline:
                log.warning(
                    "%s: still indexing after %gs; answering from the part indexed so far", self.root.name, wait_s
                )
                return False
            if heard is not None and self.progress is not None and self.progress != said:
                said = self.progress
                heard(*said)
        running.result()
        return True

    @property
    def last_call(self) -> float:
        return self.owner.last_call if self.owner is not None else time.monotonic()

    def stoppable(self, progress: Progress | None = None) -> Progress:
        """`progress` for an index pass that `halt` (or `stop`) ends: PassStopped at its next report, heard between
        embedder batches; the groups it wrote are kept, and the next pass reads the files it did not finish."""

        def heard(chunks: int, total: int, message: str) -> None:
            if self._stop.is_set():
                raise PassStopped(f"{self.root.name}: the index pass was stopped at {chunks}/{total} chunks")
            if progress is not None:
                progress(chunks, total, message)

        return heard

    def halt(self) -> None:
        """No index pass goes on (a `stoppable` one stops at its next report) or starts after this; not waited for."""
        with self._passing:
            self._stop.set()

    @property
    def halted(self) -> bool:
        return self._stop.is_set()

    def stop(self, wait_s: float = STOP_WAIT_S) -> bool:
        """Stop the index pass in the background, if one runs, and wait for it `wait_s` at most; no pass starts
        after this. False when it still runs (its thread must not outlive the memory it writes, nor the process's
        teardown, where a native thread still running aborts the interpreter)."""
        self.halt()
        thread = self._thread  # (none starts once halted)
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(wait_s)
        if thread.is_alive():
            log.warning("%s: the index pass did not stop within %gs", self.root.name, wait_s)
            return False
        return True

    def close(self) -> None:
        """Stop the index pass (`stop`), then close the memory; one whose pass still runs stays open (in use)."""
        stopped = self.stop()
        with self._lock:
            if self.owner is not None:
                self.owner.close()
                self.owner = None
            if self._memory is not None and stopped:
                self._memory.close()
                self._memory = None

    @property
    def passing(self) -> bool:
        """Whether the index pass's thread still runs."""
        return self._thread is not None and self._thread.is_alive()


def once_more(memory: MemoryApi, reopen: Callable[[], MemoryApi | None], fn: Callable[[MemoryApi], T]) -> T:
    """`fn(memory)`; when the owner that `memory` followed went away while it answered (killed, or an editor closing
    just then), `fn` once more on the memory opened again (the next owner's, or this process's own). Only for an
    operation that is safe to ask twice: `remember` of a note already written that day answers with that note, so
    a write reported as failed wrote nothing and one that was written reports success."""
    try:
        return fn(memory)
    except OwnerGone as exc:
        log.info("%s; asking again", exc)
        again = reopen()
        assert again is not None  # (it opened the first time)
        with again:
            return fn(again)


def index_what_it_can(memory: MemoryApi, progress: Progress | None, then: str, wait_s: float | None = None) -> None:
    """Bring the index up to date; an embeddings endpoint that does not answer leaves the new text for later, said
    once, and the caller goes on `then` ("searching", "serving") with what is indexed (queries by BM25 meanwhile).
    With `wait_s`, an owner in another process that is silent that long (it waits for an index pass of its own: a
    first index) is left to it, said once, and the caller goes on with the part indexed so far."""
    try:
        if wait_s is not None and isinstance(memory, RemoteMemory):
            quiet: Progress = lambda *_: None  # noqa: E731 (a pass run for this call reports: never left)
            params, heard = protocol.request("index", (), {"progress": progress or quiet})
            try:
                memory.ask("index", params, heard, wait_s)
            except protocol.OwnerBusy:
                log.warning("%s: still indexing after %gs; %s the part indexed so far", memory.root.name, wait_s, then)
        else:
            memory.index(progress=progress)
    except EmbeddingError as exc:
        log.warning("%s; %s what is indexed already", exc, then)


def serve_until_idle(
    workspace: str | Path, idle_s: float | None = None, *, poll_s: float = 1.0, progress: Progress | None = None
) -> bool:
    """Own the workspace's index and serve it to other processes (hooks, scripts, the CLI) until no call came for
    `idle_s` seconds (None: the `warm.idle_s` setting) or SIGTERM / SIGHUP; False at once when another process
    already owns it. The index is reconciled first (`progress` hears it), so the first caller finds it warm; its
    record and socket are removed on the way out."""
    root = Path(workspace).expanduser().resolve()
    config = load_config(root)
    idle = config.warm.idle_s if idle_s is None else idle_s
    door = Door(root, config=config, process=WARM_PROCESS, idle_s=idle)
    # the signal that ended it: a plain flag, never a lock; the handler runs in the thread it stops, which may hold
    # an Event's lock (`stop.set()` there waited for it forever, and `warm` never ended)
    stop: list[int] = []
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {n: signal.signal(n, lambda number, _: stop.append(number)) for n in (signal.SIGTERM, signal.SIGHUP)}
    try:
        if door.memory.remote:
            return False
        index_what_it_can(door.memory, progress, "serving")
        if door.owner is not None:
            door.owner.last_call = time.monotonic()
        while time.monotonic() - door.last_call < idle and not stop:
            time.sleep(poll_s)
        log.info("%s: %s; closing the index", door.root, "stopped" if stop else f"no call for {idle:.0f} s")
        return True
    finally:
        door.close()
        for number, action in previous.items():
            signal.signal(number, action)


def spawn(arguments: list[str]) -> subprocess.Popen[bytes]:
    """Start `memsearch-lsp ARGUMENTS` in the background (its own session, no terminal), isolated from the workspace
    (core/launch.py: `python -E` without the working folder, from `/`, a minimal environment)."""
    return subprocess.Popen(
        launch.python("memsearch_lsp", *arguments),
        cwd=launch.ROOT_FOLDER,
        env=launch.environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
