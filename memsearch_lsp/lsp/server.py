"""MemsearchServer: the server's state (roots, writer thread, settings) and its error policy.

It imports no feature: `lsp/setup.py` wires features and lifecycle handlers to it (one composition root).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote

from lsprotocol import types
from pygls.uris import to_fs_path

from memsearch_lsp.config import Config, editor_key, load_config, merge_layer
from memsearch_lsp.core.api import MemoryApi
from memsearch_lsp.core.files import PathError, read_text
from memsearch_lsp.core.index import IndexStats
from memsearch_lsp.core.onboard import NO_MEMORY, find_workspace, is_memory_workspace, memory_markers
from memsearch_lsp.core.process.door import Door, PassStopped
from memsearch_lsp.core.process.owner import OwnerGone, RemoteMemory
from memsearch_lsp.lsp.protocol import MemsearchProtocol, ReportingServer
from memsearch_lsp.trust import hide_credentials
from memsearch_lsp.version import __version__

log = logging.getLogger("memsearch_lsp")
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
SETTLE_S = 15.0  # a request waits this long for `initialized` to open the folders (settings: 5 s at most)
_LIFECYCLE = frozenset({types.INITIALIZE, types.INITIALIZED, types.SHUTDOWN, types.EXIT})

INDEXED = "memsearch/indexed"


@dataclass
class Root:
    """One workspace folder: its own memory (through the process model's door), index and watcher."""

    path: Path
    door: Door  # owns the index (and serves it to the CLI and other windows) or follows its owner
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    poller: asyncio.Task[None] | None = None
    registration: str = ""
    watching: asyncio.Lock = field(default_factory=asyncio.Lock)  # one registration asked at a time (features/watch)
    watched: frozenset[Path] = frozenset()  # the memory folders there when the client was asked to watch them
    behind: dict[str, Any] = field(default_factory=dict)  # changes the owner did not take yet (features/forward.py)

    @property
    def memory(self) -> MemoryApi:
        return self.door.memory

    @property
    def config(self) -> Config:
        """The open memory's settings, else those it opens with (a memory a bad model setting keeps shut)."""
        config = self.door.current.config if self.door.current is not None else self.door.config
        assert config is not None  # (a Root's door is made with its settings)
        return config


class MemsearchServer(ReportingServer):
    def __init__(self) -> None:
        super().__init__(
            "memsearch-lsp",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=MemsearchProtocol,
        )
        self.roots: dict[Path, Root] = {}
        self.overrides: dict[str, Any] = {}  # editor settings in force
        self.scoped: dict[Path, dict[str, Any]] = {}  # a workspace folder's own (features/settings.py load_settings)
        self.init_options: dict[str, Any] = {}
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memsearch-writer")
        self.generations: dict[tuple[Path, str], int] = {}
        self.initialized = False
        self.passes = 0
        self._shown: set[str] = set()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.client_pid: int | None = None  # initialize's processId: the server exits when it is gone
        self.client_name = ""  # initialize's clientInfo.name, to name this process to other windows
        self.shut_down = False
        self.folders_changing = asyncio.Lock()  # roots open and close one change at a time (sync.start_roots)
        self.started = asyncio.Event()  # `initialized` has opened the workspace folders (or given up)
        self.user: Any = None  # the user memory (core/scopes.py) as features/symbols.py opens it
        self.bare: dict[Path, Config] = {}  # the workspace folders with no memory (yet), with their settings
        self.bare_watch = ""  # the client's watcher of what would make them memories (features/watch.py)
        self.open_new: Callable[[], Awaitable[None]] | None = None  # opens new memory folders (lsp/setup.py)

    # -- requests before the folders are open ---------------------------------------------------
    def feature(self, feature_name: str, options: Any | None = None) -> Callable[[F], F]:
        """pygls' decorator; a handler of anything but the lifecycle first waits for the folders (`settled`)."""
        register = super().feature(feature_name, options)
        return register if feature_name in _LIFECYCLE else lambda handler: register(self._settled_first(handler))

    def command(self, command_name: str) -> Callable[[F], F]:
        register = super().command(command_name)
        return lambda handler: register(self._settled_first(handler))

    def _settled_first(self, handler: F) -> F:
        if not asyncio.iscoroutinefunction(handler):
            raise TypeError(f"{handler.__name__}: a feature handler must be async (it waits for the folders)")

        @functools.wraps(handler)
        async def settled_first(ls: MemsearchServer, *args: Any, **kwargs: Any) -> Any:
            await ls.settled()
            await ls.open_woken()
            return await handler(ls, *args, **kwargs)

        return settled_first  # type: ignore[return-value]

    async def settled(self) -> None:
        """Wait (at most SETTLE_S) until `initialized` has opened the workspace folders: a request or an edit sent
        right after it is answered from their indexes, not from none ("no memories match", "no workspace")."""
        if self.started.is_set():
            return
        try:
            await asyncio.wait_for(self.started.wait(), SETTLE_S)
        except asyncio.TimeoutError:  # (not TimeoutError itself before Python 3.11)
            log.warning("the workspace folders are not open after %gs; answering without them", SETTLE_S)

    async def open_woken(self) -> None:
        """Open the workspace folders that became memories since the server started (`memsearch-lsp init` run in
        one): whatever comes next (the watcher's event, an opened file, a command) finds them open."""
        if self.open_new is not None and any(is_memory_workspace(p, c) for p, c in self.bare.items() if p.is_dir()):
            await self.open_new()

    # -- roots and paths -------------------------------------------------------------------
    def locate(self, uri: str) -> tuple[Root, str] | None:
        """The root holding `uri` and its workspace-relative source; None outside every root."""
        path = to_fs_path(uri) if uri.startswith("file:") else None
        if not path:
            return None
        for root in sorted(self.roots.values(), key=lambda r: len(str(r.path)), reverse=True):
            try:
                return root, root.memory.source_of(path)
            except PathError:
                continue
        return None

    def root_holding(self, where: str) -> Root | None:
        """The root a folder or file belongs to (`where`: a path or a file: URI, the root's own or one inside it),
        the innermost; None when it is in none."""
        path = to_fs_path(where) if where.startswith("file:") else where
        if not path:
            return None
        place = Path(path).resolve()
        held = [r for r in self.roots.values() if place == r.path or r.path in place.parents]
        return max(held, key=lambda r: len(r.path.parts), default=None)

    def open_text(self, uri: str) -> str | None:
        """The text of an open buffer (what the client sent); None when `uri` is not open."""
        document = self.workspace.text_documents.get(unquote(uri))
        return document.source if document is not None else None

    async def document_text(self, uri: str) -> str | None:
        """An open buffer's text, else a regular file inside a root, read off the event loop.

        A URI can never make the server read a file outside the workspace roots, nor block on one.
        """
        text = self.open_text(uri)
        if text is not None:
            return text
        found = self.locate(uri)
        if found is None:
            return None
        root, source = found
        try:
            text, _ = await asyncio.to_thread(read_text, root.memory.path_of(source))
        except (OSError, ValueError):
            return None
        return text

    def locate_memory(self, uri: str) -> tuple[Root, str] | None:
        found = self.locate(uri)
        return found if found and found[0].memory.is_memory(found[1]) else None

    # -- work ------------------------------------------------------------------------------
    async def write(
        self, root: Root, op: str | Callable[[MemoryApi], IndexStats], *args: Any, **kwargs: Any
    ) -> IndexStats:
        """Run one index pass on the writer thread, then announce it with memsearch/indexed.

        `op` names a Memory method (called with `args`/`kwargs`) or takes the memory; either way, when
        the index owner went away meanwhile, the very same operation runs again on whichever memory
        this window holds after taking over. A root whose folder was removed (`close_root`) writes nothing more,
        and is announced no more.
        """
        loop = asyncio.get_running_loop()
        started = time.perf_counter()

        def run() -> IndexStats:
            if root.door.halted:  # (queued before its close, or after it: the index is not opened again)
                raise PassStopped(f"{root.path.name}: the folder was closed")
            memory = root.memory
            return getattr(memory, op)(*args, **kwargs) if isinstance(op, str) else op(memory)

        try:
            stats: IndexStats = await loop.run_in_executor(self.writer, run)
        except OwnerGone:
            await self.take_over(root, root.memory)
            stats = await loop.run_in_executor(self.writer, run)
        self.passes += 1
        if self.roots.get(root.path) is not root:  # (removed while it ran)
            return stats
        self.protocol.notify(
            INDEXED,
            {
                "root": str(root.path),
                "files": stats.files_total,
                "chunks": stats.chunks_total,
                "embedded": stats.chunks_embedded,
                "reused": stats.chunks_reused,
                "ms": round((time.perf_counter() - started) * 1000, 1),
            },
        )
        if stats.changed and (op != "index" or root.memory.remote):  # (a full pass here: the indexer says it)
            log.info("%s: %s", root.path.name, str(stats).split("\n")[0])
        return stats

    async def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return await asyncio.to_thread(fn, *args, **kwargs)
        except OwnerGone:
            root = next((r for r in self.roots.values() if r.door.current is getattr(fn, "__self__", None)), None)
            if root is None:
                raise
            await self.take_over(root, root.memory)
            return await asyncio.to_thread(getattr(root.memory, fn.__name__), *args, **kwargs)

    async def take_over(self, root: Root, gone: MemoryApi) -> None:
        """The process that owned this index went away: own it now (or follow whoever did)."""
        memory = await asyncio.to_thread(root.door.take_over, gone)
        log.info(
            "%s: the index owner went away; %s",
            root.path.name,
            "following the new owner" if memory.remote else "this window owns the index now",
        )
        if memory.remote:
            return await self.follow(root, self.settings_of(root.path))
        # the unsaved buffers of the owner that went away went with it: this window's own are the truth for their
        # files, the disk for the rest (a pass re-reads each file whose indexed text was a buffer's)
        for uri, document in list(self.workspace.text_documents.items()):
            found = self.locate_memory(uri)
            if found and found[0] is root:
                await self.in_writer(memory.index_text, found[1], document.source)
        self.background(self.reconcile(root, title="Re-indexing memory"), f"re-indexing {root.path.name}")

    async def follow(self, root: Root, config: Config) -> None:
        """A root whose index another process owns, with this window's settings `config`: its search settings go
        with its searches; the index's (what is indexed, how, where) stay the owner's: those that differ are said
        once, naming the owner (the window's own settings are not the owner's: the owner's are asked)."""
        memory = root.door.current
        if not isinstance(memory, RemoteMemory):
            return
        memory.search_here(config)
        try:
            owner, refused = await asyncio.to_thread(memory.refused_settings, config)
        except (OwnerGone, OSError, RuntimeError):  # (gone: the next call takes the index over)
            return
        if refused:
            self.warn(
                f"{root.path.name}: {', '.join(editor_key(k) for k in refused)} cannot change in this window: "
                f"the index is owned by {owner}, whose settings for them stay in force (search, watch and "
                f"compaction settings do apply here). Change them there, or close it and reload this window.",
                show=config.lsp.show_notifications,
            )

    async def in_writer(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.writer, lambda: fn(*args))

    def background(self, coro: Awaitable[Any], what: str) -> asyncio.Task[Any]:
        """Run `coro` as a task whose failure is logged and shown to the user once."""

        async def guarded() -> Any:
            try:
                return await coro
            except asyncio.CancelledError:
                raise
            except PassStopped as exc:  # its folder was closed: nothing went wrong
                log.info("%s: %s", what, exc)
                return None
            except Exception as exc:
                self.report(f"{what} failed: {exc}", exc)
                return None

        return asyncio.ensure_future(guarded())

    def report(self, message: str, exc: BaseException | None = None) -> None:
        """Log an error and show it to the user once for each distinct failure, and once for its cause (`exc`: opening
        an index and indexing it fail with the same cause, said once)."""
        log.error(message, exc_info=exc if log.isEnabledFor(logging.DEBUG) else None)
        if exc is None or f"(cause) {exc}" not in self._shown:
            self._show_once(message, types.MessageType.Error, message)
        if exc is not None and message in self._shown:
            self._shown.add(f"(cause) {exc}")

    def warn(self, message: str, show: bool | None = None) -> None:
        """Log a warning and show it to the user (window/showMessage), once; `show`: the showNotifications of the
        settings it is about (those sent with it), else of those in force."""
        if message not in self._shown:
            log.warning(message)
        self._show_once(message, types.MessageType.Warning, message, show)

    def _show_once(self, key: str, kind: types.MessageType, message: str, show: bool | None = None) -> None:
        """A message held back (showNotifications false) is not counted as shown: it shows once they are on."""
        if key not in self._shown and (self.config_show_notifications() if show is None else show):
            self._shown.add(key)
            self.window_show_message(
                types.ShowMessageParams(type=kind, message=f"memsearch: {hide_credentials(message)}")
            )

    @property
    def process_name(self) -> str:
        return f"memsearch-lsp serve for {self.client_name or 'an editor'}"

    def config_show_notifications(self) -> bool:
        """Every root's showNotifications; before any root is open, the editor's own."""
        if self.roots:
            return all(r.config.lsp.show_notifications for r in self.roots.values())
        return merge_layer(Config(), self.overrides, "editor settings", []).lsp.show_notifications

    # -- start-up --------------------------------------------------------------------------
    async def reconcile(self, root: Root, force: bool = False, title: str = "Indexing memory") -> IndexStats:
        token = await self.progress_begin(title, root.path.name)
        loop = asyncio.get_running_loop()

        def progress(done: int, total: int, message: str) -> None:
            if token is not None:
                pct = int(100 * done / total) if total else 100
                value = types.WorkDoneProgressReport(message=message, percentage=pct)
                loop.call_soon_threadsafe(self.work_done_progress.report, token, value)

        try:
            stats = await self.write(root, "index", force=force, progress=root.door.stoppable(progress))
        finally:
            if token is not None:
                self.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))
            root.ready.set()
        return stats

    async def progress_begin(self, title: str, message: str | None = None) -> str | None:
        """Start server-initiated work-done progress; None when the client cannot show it."""
        window = self.client_capabilities.window
        if not (window and window.work_done_progress):
            return None
        token = f"memsearch-{uuid.uuid4().hex[:8]}"
        try:
            await self.work_done_progress.create_async(token)
        except Exception as exc:
            log.debug("progress not created: %s", exc)
            return None
        self.work_done_progress.begin(
            token, types.WorkDoneProgressBegin(title=title, message=message, percentage=0, cancellable=False)
        )
        return token

    def settings_of(self, path: Path) -> Config:
        """The settings for a folder: a bad key (in the editor's settings or a file) is left out, every other applies,
        and each bad one is said once, with its source (the editor's settings are every folder's: said once). The
        editor's are the folder's own (or a folder's inside it, with no memory of its own: it serves this one) when the
        client answered for it."""
        errors: list[str] = []
        own = [f for f in self.scoped if f == path or (path in f.parents and find_workspace(f) == path)]
        config = load_config(
            path, self.scoped[own[0]] if own else self.overrides, errors=errors, origin="editor settings"
        )
        for error in errors:
            self.warn(f"{error}; left out (the rest applies)", show=config.lsp.show_notifications)
        return config

    async def open_roots(self, root_path: bool = True) -> None:
        """One Root per memory workspace folder: own its index, or become a client of the process that does.
        Without workspace folders, the initialize `rootUri` (`root_path`: not once the client removed its folders).

        Folders without memory (see core.onboard.is_memory_workspace) get no Root and no `.memsearch/`."""
        folders = list(self.workspace.folders.values())
        paths = [Path(to_fs_path(f.uri) or "") for f in folders]
        if not paths and root_path and self.workspace.root_path:
            paths = [Path(self.workspace.root_path)]
        self.bare = {}
        for path in paths:
            path = path.resolve()
            if path in self.roots or not path.is_dir():
                continue
            config = self.settings_of(path)
            if not is_memory_workspace(path, config):  # a folder inside a workspace serves that workspace
                found = find_workspace(path)
                if found is None:  # nothing is indexed or written there (until it is a memory: `open_woken`)
                    log.info("%s: %s; not indexed (no %s)", path.name, NO_MEMORY, " or ".join(memory_markers(config)))
                    self.bare[path] = config
                    continue
                log.info("%s is inside the memory workspace %s: serving that", path, found)
                path = found
                if path in self.roots:
                    continue
                config = self.settings_of(path)
            root = Root(path, Door(path, config=config, process=self.process_name))
            try:
                memory = await asyncio.to_thread(getattr, root.door, "memory")
                if memory.remote:
                    log.info("%s: another memsearch-lsp owns this index; using it", path.name)
                    await self.follow(root, config)
            except Exception as exc:  # opened again at the next use
                self.report(f"opening the index of {path.name}: {exc}", exc)
            self.roots[path] = root

    def close_root(self, root: Root) -> None:
        """Stop the root's index pass now (it would hold the index, and its owner record, to its end), then close
        its memory once the writer has let it go."""
        if root.poller:
            root.poller.cancel()
        root.door.halt()
        self.writer.submit(root.door.close)

    def shutdown_roots(self) -> None:
        """Close every root; an editor that quits closes its buffers first (no didClose comes): the files they
        held are read from disk again, so no unsaved text stays in an index another window owns."""
        for uri in list(self.workspace.text_documents) if self.initialized else []:  # (no workspace before it)
            if found := self.locate_memory(uri):
                self.writer.submit(_closing, *found)
        for root in self.roots.values():
            self.close_root(root)

    def close_all(self) -> None:
        """Release every index and wait for the writer (the end of the process)."""
        self.shutdown_roots()
        if self.user is not None:
            self.writer.submit(self.user.close)
        self.writer.shutdown(wait=True)


def _closing(root: Root, source: str) -> None:
    """`source`'s buffer is gone with the editor: its file is the truth again (nothing to do when the owner is gone
    too: its unsaved buffers went with it)."""
    if root.door.current is None:  # closed already (`exit` after `shutdown`)
        return
    try:
        root.memory.index_file(source)
    except Exception as exc:  # quitting: said, never raised
        log.debug("%s: not read again from disk while quitting: %s", source, exc)
