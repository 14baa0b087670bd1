"""One owner per index: the owning process serves it on a Unix socket; other processes are its clients.

A local index folder is held by one process at a time (core/store/folder.py). That process answers the
IndexApi operations (core/process/protocol.py) on a socket with owner-only permissions named in
`.memsearch/server.json`; the CLI, hooks and other editor windows call it through `RemoteMemory`. A client trusts a
record and a socket only when they, and the folder holding them, belong to its own user with private modes, and
when the process answering is of its user (peer credentials); anything else is refused with one message naming the
path. A record or socket left by a killed process is detected and removed: its socket is not there, or nobody
answers and its pid does not hold the index's lock (this process's own path for it; never one a record names).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import socket
import socketserver
import stat
import threading
import time
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from memsearch_lsp.config import Config, load_config
from memsearch_lsp.core import wire
from memsearch_lsp.core.api import IndexApi, MemoryApi, Remembered
from memsearch_lsp.core.files import folder_fd, write_file
from memsearch_lsp.core.index import Progress
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.process import protocol
from memsearch_lsp.core.process.protocol import OPERATIONS, OtherProtocol, OwnerBusy, OwnerGone, asked_of_owner
from memsearch_lsp.core.process.record import (
    RECORD,
    UntrustedOwner,
    holds_index,
    other_protocol,
    private,
    read_record,
    record_path,
    record_pid,
    remove_stale,
    socket_path_for,
)
from memsearch_lsp.core.process.record import (
    pid_alive as pid_alive,  # (its callers import it from here)
)
from memsearch_lsp.core.search.filters import FILTER_KEYS
from memsearch_lsp.core.search.hybrid import Expanded, Hit
from memsearch_lsp.core.store import is_local_uri
from memsearch_lsp.core.store.folder import LOCK
from memsearch_lsp.core.workspace import (
    MemoryFiles,
    index_digests,
    index_settings_changed,
    index_settings_differ,
    index_uri,
    with_index_settings,
)
from memsearch_lsp.version import __version__

log = logging.getLogger(__name__)

CALL_TIMEOUT_S = 600.0
PING_TIMEOUT_S = 2.0
KEEP_S = 0.5  # how often an owner checks that its index folder, record and socket are still there


def connect(sock_path: str, timeout: float) -> socket.socket:
    """A connection to the owner's socket, its peer checked to be this user (UntrustedOwner otherwise)."""
    path = Path(sock_path)
    private(path, stat.S_ISSOCK)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(timeout)
        conn.connect(sock_path)
        if not wire.same_user(conn):
            raise UntrustedOwner(f"refusing {sock_path}: the process answering there is not of uid {os.geteuid()}")
    except BaseException:
        conn.close()
        raise
    return conn


def call(
    sock_path: str, op: str, params: dict[str, Any], progress: Progress | None = None, timeout: float = CALL_TIMEOUT_S
) -> Any:
    """Ask the owner at `sock_path` to run `op`; its result (progress notifications go to `progress`)."""

    def notified(p: Any) -> None:
        if progress is not None:
            progress(int(p.get("done", 0)), int(p.get("total", 0)), str(p.get("message", "")))

    with connect(sock_path, timeout) as conn, conn.makefile("rb") as reader:
        try:
            return wire.call(conn, reader, op, params, notified, kinds=protocol.KINDS)
        except wire.Gone as exc:
            raise OwnerGone(f"the index owner closed the connection ({exc})") from exc


def find_owner(root: Path, index: str | None = None) -> str | None:
    """The socket of a live owner of `root`'s index (at `index`, the caller's own path for it: by default its
    settings'); stale records and sockets are removed. UntrustedOwner for a record or socket that is not this
    user's; an owner that holds the index but does not answer raises OwnerGone (busy or stuck: the caller does not
    wait for it longer than one ping), one that refuses or drops the call is closing: None; one of another protocol
    (another release's, or a build's before this lock: `older_owner`) raises OtherProtocol and is asked nothing
    more. A record is stale when its socket is not there, or its pid does not hold the index: it is removed (said
    once) and the caller goes on alone (a live owner whose socket was deleted publishes both again: `_keep`)."""
    record = read_record(root)
    if record is None:
        return None
    pid, sock = record_pid(record), str(socket_path_for(root))
    index = index if index is not None else index_uri(root, load_config(root))
    try:
        if str(record["socket"]) != sock:  # only ever talk to (or remove) the socket this program names
            raise UntrustedOwner(f"{record_path(root)} names a socket other than {sock}")
        about = call(sock, "ping", {}, timeout=PING_TIMEOUT_S)
    except (OSError, OwnerGone, ValueError, RuntimeError) as exc:
        if isinstance(exc, FileNotFoundError):  # (a record no owner wrote: committed, copied; or a socket deleted)
            log.warning("removing the index owner record %s of pid %s: its socket is not there", record_path(root), pid)
        elif not holds_index(pid, index):
            if isinstance(exc, OwnerGone) and (other := other_protocol(pid, index)):  # (answered, in no JSON-RPC)
                raise other from exc
            log.info("removing a stale index owner record (pid %s does not hold the index): %s", pid, exc)
        else:
            if isinstance(exc, UntrustedOwner):
                raise
            if isinstance(exc, ConnectionError):  # refused or reset: it is closing (the caller waits for its lock)
                return None
            raise OwnerGone(f"the process that owns the index of {root} (pid {pid}) does not answer ({exc})") from exc
        remove_stale(root)
        return None
    if protocol.speaks(about):
        return sock
    if other := other_protocol(pid, index, about):
        raise other
    log.info("removing a stale index owner record (pid %s does not hold the index, nor answers as its owner)", pid)
    remove_stale(root)
    return None


# -- the owner side ----------------------------------------------------------------------------
class _Handler(socketserver.StreamRequestHandler):
    server: _UnixServer

    def handle(self) -> None:
        if not wire.same_user(self.connection):
            return  # another user's process: no answer at all
        with contextlib.suppress(OSError, ValueError):
            message = wire.receive(self.rfile)
            if message is not None:
                wire.answer(
                    self.connection,
                    message,
                    lambda op, params: self.server.owner.dispatch(op, params, self.progress),
                    protocol.code_of,
                )

    def progress(self, done: int, total: int, message: str) -> None:
        with contextlib.suppress(OSError):
            wire.send(self.connection, method=protocol.PROGRESS, params=dict(done=done, total=total, message=message))


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    request_queue_size = 128
    owner: OwnerServer


class OwnerServer:
    """Serves one local Memory to other processes until `close()`; `process` says what this process is
    (e.g. "memsearch-lsp serve for Neovim"), for messages in its clients; `idle_s`, when it leaves after that long
    without a call (`memsearch-lsp warm`), is in its record too."""

    def __init__(self, memory: Memory, process: str = "", idle_s: float | None = None):
        self.memory, self.process, self.socket = memory, process, socket_path_for(memory.root)
        self.idle_s = idle_s
        self._server: _UnixServer | None = None
        self._bound = 0  # the inode of the socket this owner listens on
        self._closed = threading.Event()
        self._publishing = threading.Lock()  # (the keeper's publish and close, one at a time)
        self.last_call = time.monotonic()  # when a client last asked something (an idle owner may leave)

    def start(self) -> None:
        self._publish()
        threading.Thread(target=self._keep, name="memsearch-owner-keeper", daemon=True).start()

    def _publish(self) -> None:
        """Listen on the socket (owner-only) and write the record naming it: at start, and again once they were
        deleted (the socket listened on before is closed: a path unlinked reaches it no more)."""
        _ = self.memory.index_dir  # a real private folder of this user, never a link (files.UnsafeFolder)
        remove_stale(self.memory.root, owner=True)
        self.socket = socket_path_for(self.memory.root)
        old = os.umask(0o077)
        try:
            server = _UnixServer(str(self.socket), _Handler)
        finally:
            os.umask(old)
        os.chmod(self.socket, 0o600)
        server.owner = self
        previous, self._server, self._bound = self._server, server, os.lstat(self.socket).st_ino
        threading.Thread(target=server.serve_forever, name="memsearch-owner", daemon=True).start()
        if previous is not None:
            previous.shutdown()
            previous.server_close()
        record = dict(self.dispatch("ping", {}, lambda *_: None), socket=str(self.socket), index=self.memory.uri)
        with folder_fd(self.memory.index_dir) as fd:
            write_file(fd, RECORD, json.dumps(record).encode())

    def _published(self) -> bool:
        try:
            return os.lstat(self.socket).st_ino == self._bound and os.path.lexists(record_path(self.memory.root))
        except OSError:
            return False

    def _keep(self) -> None:
        """Every KEEP_S: an index folder, record or socket deleted under this owner (`rm -rf .memsearch`, `git clean
        -xfd`) is made again (the index's lock first), so the CLI, hooks and other windows still find their owner,
        never a lock nobody answers for; said once when it fails."""
        from memsearch_lsp.core.store.local import LocalStore

        said, lock = "", Path(self.memory.uri) / LOCK
        while not self._closed.wait(KEEP_S):
            if self._published() and (os.path.lexists(lock) or not is_local_uri(self.memory.uri)):
                continue  # (the usual case: three stat calls)
            try:
                store = self.memory.store
                if isinstance(store, LocalStore) and not store.keep_folder():
                    continue  # another process holds the index there now: this one announces nothing
                with self._publishing:
                    if self._closed.is_set() or self._published():
                        continue
                    self._publish()
                log.info("%s: its index owner record and socket were deleted; written again", self.memory.root)
            except Exception as exc:  # (tried again at the next check)
                if str(exc) != said:
                    log.warning("%s: cannot serve the index to other processes again: %s", self.memory.root, exc)
                said = str(exc)

    def close(self) -> None:
        with self._publishing:
            self._closed.set()
            if self._server is None:
                return
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with contextlib.suppress(UntrustedOwner):
            record = read_record(self.memory.root)
            if record and record.get("pid") == os.getpid():
                remove_stale(self.memory.root)

    def dispatch(self, op: str, params: dict[str, Any], progress: Progress) -> Any:
        """Run one IndexApi operation of the memory (its arguments structured by their types, its result
        unstructured); `ping` says who answers."""
        self.last_call = time.monotonic()
        if op == "ping":
            about = {"pid": os.getpid(), "version": __version__, "protocol": protocol.PROTOCOL, "process": self.process}
            if params.get("settings"):  # (a follower that compares its index settings with these)
                about["index"] = index_digests(self.memory.config)
            return about if self.idle_s is None else dict(about, idle_s=self.idle_s)
        if op not in OPERATIONS:
            raise RuntimeError(f"unknown operation {op!r}")  # a caller's bug, not bad input
        result = getattr(self.memory, op)(**protocol.call_arguments(op, params, progress))
        return protocol.CONVERTER.unstructure(result)


# -- the client side ---------------------------------------------------------------------------
class RemoteMemory(MemoryFiles):
    """A memory whose index another process owns: every IndexApi operation is asked of the owner over its socket
    (core/process/protocol.py); files and settings are read locally (`MemoryFiles`)."""

    def __init__(self, workspace: str | Path, socket_path: str, *, config: Config | None = None, **settings: Any):
        super().__init__(workspace, config=config, **settings)
        self.socket_path = socket_path
        self.search_overrides: dict[str, Any] = {}  # search settings changed here: sent with each search

    def ask(
        self, op: str, params: dict[str, Any], progress: Progress | None = None, wait_s: float | None = None
    ) -> Any:
        """`op` asked of the owner; OwnerGone when it is gone or does not answer a ping within PING_TIMEOUT_S (a
        stopped owner held a long-lived client, the MCP server, for CALL_TIMEOUT_S: 10 minutes); with `wait_s`,
        OwnerBusy when, having answered the ping, it says nothing (no answer, no progress) for that long."""
        for attempt in range(5):
            pinged = False
            try:
                if op != "ping":
                    about = call(self.socket_path, "ping", {}, timeout=PING_TIMEOUT_S)
                    if not protocol.speaks(about):  # (never asked `op`: its arguments may mean another thing there)
                        raise OtherProtocol(record_pid(about if isinstance(about, dict) else {}))
                pinged = wait_s is not None
                return call(self.socket_path, op, params, progress, wait_s or CALL_TIMEOUT_S)
            except (ConnectionRefusedError, BlockingIOError) as exc:  # a full backlog: try again
                if attempt == 4:
                    raise OwnerGone(f"the process that owns the index of {self.root} does not answer ({exc})") from exc
                time.sleep(0.05 * 2**attempt)
            except (ConnectionError, FileNotFoundError, TimeoutError) as exc:
                if pinged and isinstance(exc, TimeoutError):
                    raise OwnerBusy(f"the index owner did not answer {op} within {wait_s:g} s") from exc
                raise OwnerGone(f"the process that owns the index of {self.root} is gone ({exc})") from exc
        raise AssertionError("unreachable")

    @property
    def remote(self) -> bool:
        return True

    def reconfigure(self, config: Config) -> bool:
        """Take this process's new settings without touching the owner's index: search settings travel with each
        search; watch, lsp and compaction settings apply here; the index's own stay as the owner serves them."""
        new, old = config.search, self.config.search
        changed = {f.name: getattr(new, f.name) for f in fields(old) if getattr(new, f.name) != getattr(old, f.name)}
        self.search_overrides.update(changed)
        self.config = with_index_settings(config, self.config)
        return False

    index = asked_of_owner(IndexApi.index)
    index_text = asked_of_owner(IndexApi.index_text)
    index_file = asked_of_owner(IndexApi.index_file)
    remove = asked_of_owner(IndexApi.remove)
    reset = asked_of_owner(IndexApi.reset)
    _expand = asked_of_owner(IndexApi.expand)
    related = asked_of_owner(IndexApi.related)
    headings = asked_of_owner(IndexApi.headings)
    has_overlay = asked_of_owner(IndexApi.has_overlay)
    is_unsaved = asked_of_owner(IndexApi.is_unsaved)  # an editor's buffer the owner holds, not on disk
    is_indexed = asked_of_owner(IndexApi.is_indexed)
    drop_overlay = asked_of_owner(IndexApi.drop_overlay)
    forget = asked_of_owner(IndexApi.forget)  # issue 38: the owner takes the note out of its file
    _search = asked_of_owner(IndexApi.search)
    _remember = asked_of_owner(IndexApi.remember)
    _status = asked_of_owner(IndexApi.status)

    def search(self, query: str, top_k: int | None = None, *, scope: str | None = None, **overrides: Any) -> list[Hit]:
        """(With the search settings changed in this process.)"""
        if (hits := self.beyond(query, top_k, scope, overrides)) is not None:
            return hits
        mine = dict(self.search_overrides)
        if any(key in overrides for key in FILTER_KEYS):  # a floor set here is none asked: a narrow filter drops it
            mine.pop("min_score", None)
        settings = {**mine, **overrides}
        settings.setdefault("today", self.clock().date().isoformat())  # (this process's day: its clock may be set)
        wanted = settings.pop("top_k", None)
        return self.mine(self._search(query, top_k if top_k is not None else wanted, **settings))

    def remember(
        self, text: str, heading: str | None = None, *, now: dt.datetime | None = None, long_term: bool = False
    ) -> Remembered:
        """(At this process's time: its clock may be set.)"""
        note = self._remember(text, heading, now=now or self.clock(), long_term=long_term)
        return note if self.scope == "workspace" else replace(note, scope=self.scope)

    def expand(self, chunk_id: str) -> Expanded | None:
        found = self._expand(chunk_id)
        return found if found is None or self.scope == "workspace" else replace(found, scope=self.scope)

    def status(self) -> dict[str, Any]:
        return dict(self._status(), served_by_pid=self.ask("ping", {})["pid"])

    def owner_process(self) -> str:
        """What owns the index, for messages: e.g. "memsearch-lsp serve for Neovim (pid 4242)"."""
        return self.refused_settings(self.config)[0]

    def refused_settings(self, config: Config) -> tuple[str, list[str]]:
        """What owns the index (`owner_process`) and the index settings of `config` that differ from the owner's, which
        stay in force (`section.key`; from an owner of a build before it says them: those changed here)."""
        info = self.ask("ping", {"settings": True})
        theirs = info.get("index")
        changed = (
            index_settings_changed(self.config, config) if theirs is None else index_settings_differ(theirs, config)
        )
        return f"{info.get('process') or 'another process'} (pid {info['pid']})", changed

    def search_here(self, config: Config) -> None:
        """Every search setting of `config` travels with this process's searches from now on, not only those changed
        here (a window that follows another's index searches with its own), search.language excepted (the index's)."""
        here = {f.name: getattr(config.search, f.name) for f in fields(config.search) if f.name != "language"}
        self.search_overrides.update(here)

    def close(self) -> None:
        return None


# mypy proves both memories implement the interface (tests/integration/test_owner_api.py: the socket serves IndexApi).
_local: type[MemoryApi] = Memory
_remote: type[MemoryApi] = RemoteMemory
