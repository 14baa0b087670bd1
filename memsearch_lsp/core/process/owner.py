"""One owner per index: the owning process serves a local socket; other processes become its clients.

Milvus Lite lets one process open an index folder (an advisory flock). The language server owns
the index while it runs and answers `OwnerServer` requests on a Unix socket (owner-only
permissions) named in `.memsearch/server.json`; the CLI and a second editor window call it through
`RemoteMemory`, the other implementation of `core.api.MemoryApi` (not a subclass of `Memory`). A
socket or record left by a killed process is detected (nobody answers, the pid is gone) and removed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import logging
import os
import socket
import socketserver
import stat
import tempfile
import threading
import time
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from memsearch_lsp.config import Config
from memsearch_lsp.core.api import MemoryApi, Remembered
from memsearch_lsp.core.chunks import Chunk
from memsearch_lsp.core.index import IndexStats, Progress
from memsearch_lsp.core.memory import INDEX_DIR, Memory
from memsearch_lsp.core.notes import clean_note
from memsearch_lsp.core.process import bulk
from memsearch_lsp.core.search.hybrid import Expanded, Hit
from memsearch_lsp.core.store.milvus import IndexBusy, locked_by_other
from memsearch_lsp.core.workspace import MemoryFiles, with_index_settings
from memsearch_lsp.version import __version__

log = logging.getLogger(__name__)

RECORD = "server.json"
MAX_SOCKET_PATH = 100
CALL_TIMEOUT_S = 600.0


class OwnerGone(RuntimeError):
    """The process that owns the index stopped answering."""


class UnsafeSocketFolder(PermissionError):
    """The private folder for owner sockets belongs to someone else or others may write to it."""


def record_path(root: Path) -> Path:
    return root / INDEX_DIR / RECORD


def socket_path_for(root: Path) -> Path:
    """`.memsearch/server.sock`, or a short private path when that one is too long for AF_UNIX."""
    preferred = root / INDEX_DIR / "server.sock"
    if len(str(preferred)) <= MAX_SOCKET_PATH:
        return preferred
    folder = Path(tempfile.gettempdir()) / f"memsearch-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) != 0o700:
        raise UnsafeSocketFolder(
            f"refusing the socket folder {folder}: it must be a folder owned by uid "
            f"{os.getuid()} with mode 0700 (found uid {info.st_uid}, mode "
            f"{stat.S_IMODE(info.st_mode):o}); remove it and try again"
        )
    return folder / (hashlib.sha256(str(root).encode()).hexdigest()[:16] + ".sock")


def _remove_stale_socket(root: Path) -> None:
    """Remove this program's socket for `root` when it is a socket: never a path read from a file."""
    try:
        path = socket_path_for(root)
        if stat.S_ISSOCK(path.lstat().st_mode):
            path.unlink()
    except OSError:
        pass


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_record(root: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(record_path(root).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and "socket" in data else None


def _call(sock_path: str, op: str, args: dict[str, Any], timeout: float = CALL_TIMEOUT_S) -> Any:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        conn.connect(sock_path)
        conn.sendall(json.dumps({"op": op, "args": args}).encode() + b"\n")
        with conn.makefile("rb") as reader:
            line = reader.readline()
    if not line:
        raise OwnerGone("the index owner closed the connection")
    reply = json.loads(line)
    if not reply.get("ok"):
        if reply.get("user_error"):
            raise ValueError(reply.get("error", "bad input"))
        raise RuntimeError(reply.get("error", "the index owner failed"))
    return reply.get("result")


def _owner_alive(root: Path, record: dict[str, Any]) -> bool:
    """The recorded owner still runs and still holds the index (a reused pid holds no lock)."""
    pid = int(record.get("pid", 0) or 0)
    if not pid or not pid_alive(pid):
        return False
    uri = Path(str(record.get("index", root / INDEX_DIR / "milvus.db")))
    return locked_by_other(uri) if uri.is_dir() else True


def find_owner(root: Path) -> str | None:
    """The socket of a live owner of `root`'s index; stale records and sockets are removed.

    An owner that is alive but does not answer in time (busy, or its backlog full) keeps its
    files: the caller waits for it instead of opening the index behind its back.
    """
    record = read_record(root)
    if record is None:
        return None
    sock = str(socket_path_for(root))
    if str(record["socket"]) != sock:  # only ever talk to (or remove) the socket this program names
        log.warning("ignoring %s: it names a socket other than %s", record_path(root), sock)
        return None
    for attempt in range(3):
        try:
            _call(sock, "ping", {}, timeout=5)
            return sock
        except (OSError, OwnerGone, ValueError) as exc:
            if _owner_alive(root, record):
                time.sleep(0.1 * (attempt + 1))
                continue
            log.info("removing a stale index owner record (pid %s): %s", record.get("pid"), exc)
            _remove_stale_socket(root)
            with contextlib.suppress(OSError):
                record_path(root).unlink()
            return None
    return None


# -- the owner side ----------------------------------------------------------------------------
def _stats(stats: IndexStats) -> dict[str, Any]:
    return asdict(stats)


class _Handler(socketserver.StreamRequestHandler):
    server: _UnixServer

    def handle(self) -> None:
        try:
            request = json.loads(self.rfile.readline() or b"{}")
            result = self.server.owner.dispatch(str(request.get("op", "")), dict(request.get("args") or {}))
            reply = {"ok": True, "result": result}
        except ValueError as exc:  # bad input (a note, a path outside, a filter): the caller raises ValueError
            reply = {"ok": False, "error": str(exc), "user_error": True}
        except Exception as exc:  # every failure goes back to the caller, none kills the owner
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        with contextlib.suppress(OSError):
            self.wfile.write(json.dumps(reply).encode() + b"\n")


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    request_queue_size = 128
    owner: OwnerServer


class OwnerServer:
    """Serves one local Memory to other processes until `close()`; `process` says what this process is
    (e.g. "memsearch-lsp serve for Neovim"), for messages in its clients."""

    def __init__(self, memory: Memory, process: str = ""):
        self.memory = memory
        self.process = process
        self.socket = socket_path_for(memory.root)
        self._server: _UnixServer | None = None
        self._thread: threading.Thread | None = None
        self.last_call = time.monotonic()  # when a client last asked something (an idle owner may leave)

    def start(self) -> None:
        if self.socket.parent == self.memory.root / INDEX_DIR:
            _ = self.memory.index_dir  # a real private folder of this user, never a link (files.UnsafeFolder)
        else:
            self.socket.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_socket(self.memory.root)
        old = os.umask(0o077)
        try:
            server = _UnixServer(str(self.socket), _Handler)
        finally:
            os.umask(old)
        os.chmod(self.socket, 0o600)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="memsearch-owner", daemon=True)
        self._thread.start()
        record = record_path(self.memory.root)
        tmp = record.with_suffix(".tmp")
        tmp.write_text(
            json.dumps(
                {
                    "pid": os.getpid(),
                    "socket": str(self.socket),
                    "version": __version__,
                    "index": self.memory.uri,
                    "process": self.process,
                }
            )
        )
        os.chmod(tmp, 0o600)
        os.replace(tmp, record)

    def close(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._server = None
        record = read_record(self.memory.root)
        if record and record.get("pid") == os.getpid():
            with contextlib.suppress(OSError):
                record_path(self.memory.root).unlink()
        _remove_stale_socket(self.memory.root)

    def dispatch(self, op: str, args: dict[str, Any]) -> Any:
        m = self.memory
        self.last_call = time.monotonic()
        if op == "ping":
            return {"pid": os.getpid(), "version": __version__, "process": self.process}
        if op == "index":  # a large pass in a child process (bulk.py), as the owner's own
            return _stats(bulk.index(m, force=bool(args.get("force"))))
        if op in ("index_text", "index_file", "remove"):
            return _stats(getattr(m, op)(**args))
        if op == "search":
            return [asdict(h) for h in m.search(args.pop("query"), args.pop("top_k", None), **args)]
        if op == "expand":
            chunk = m.expand(args["chunk_id"])
            return asdict(chunk) if chunk else None
        if op == "related":
            like = Expanded(
                id="",
                source=args["source"],
                heading=args["heading"],
                heading_path="",
                start_line=0,
                end_line=0,
                content=args["content"],
            )
            return [asdict(h) for h in m.related(like, int(args.get("top_k", 3)))]
        if op == "headings":
            return [asdict(h) for h in m.headings(**args)]
        if op == "remember":  # the owner appends and indexes, at the caller's time
            when = dt.datetime.fromisoformat(args["now"]) if args.get("now") else None
            return asdict(
                m.remember(args["text"], args.get("heading"), now=when, long_term=bool(args.get("long_term")))
            )
        if op in ("status", "reset", "has_overlay", "is_indexed", "drop_overlay"):
            return getattr(m, op)(**args)
        raise RuntimeError(f"unknown operation {op!r}")  # a caller's bug, not bad input


# -- the client side ---------------------------------------------------------------------------
class RemoteMemory(MemoryFiles):
    """A memory whose index another process owns: every index operation (`IndexApi`) goes over the
    owner's socket; files and settings are read locally (`MemoryFiles`)."""

    def __init__(self, workspace: str | Path, socket_path: str, *, config: Config | None = None, **settings: Any):
        super().__init__(workspace, config=config, **settings)
        self.socket_path = socket_path
        self.search_overrides: dict[str, Any] = {}  # search settings changed here: sent with each search

    def _call(self, op: str, **args: Any) -> Any:
        for attempt in range(5):
            try:
                return _call(self.socket_path, op, args)
            except (ConnectionRefusedError, BlockingIOError) as exc:  # a full backlog: try again
                if attempt == 4:
                    raise OwnerGone(f"the process that owns the index of {self.root} does not answer ({exc})") from exc
                time.sleep(0.05 * 2**attempt)
            except (ConnectionError, FileNotFoundError, TimeoutError) as exc:
                raise OwnerGone(f"the process that owns the index of {self.root} is gone ({exc})") from exc
        raise AssertionError("unreachable")

    @property
    def remote(self) -> bool:
        return True

    def reconfigure(self, config: Config) -> bool:
        """Take this process's new settings without touching the owner's index: search settings travel
        with each search (the owner applies them per request); watch, lsp and compaction planning apply
        here; the index's own (core.memory.INDEX_SETTINGS, see `index_settings_changed`) stay as the
        owner serves them. False: there is nothing to re-index here."""
        old = self.config.search
        self.search_overrides.update(
            {
                f.name: getattr(config.search, f.name)
                for f in fields(old)
                if getattr(config.search, f.name) != getattr(old, f.name)
            }
        )
        self.config = with_index_settings(config, self.config)
        return False

    def index(self, force: bool = False, progress: Progress | None = None) -> IndexStats:
        return IndexStats.from_dict(self._call("index", force=force))

    def index_text(self, source: str, text: str, overlay: bool = True) -> IndexStats:
        return IndexStats.from_dict(self._call("index_text", source=source, text=text, overlay=overlay))

    def index_file(self, source: str) -> IndexStats:
        return IndexStats.from_dict(self._call("index_file", source=source))

    def remove(self, source: str) -> IndexStats:
        return IndexStats.from_dict(self._call("remove", source=source))

    def reset(self) -> None:
        self._call("reset")

    def search(self, query: str, top_k: int | None = None, **overrides: Any) -> list[Hit]:
        settings = {
            **self.search_overrides,
            **{k: v.isoformat() if isinstance(v, dt.date) else v for k, v in overrides.items()},
        }
        if top_k is not None:
            settings["top_k"] = top_k
        return [Hit(**h) for h in self._call("search", query=query, **settings)]

    def expand(self, chunk_id: str) -> Expanded | None:
        data = self._call("expand", chunk_id=chunk_id)
        return Expanded(**data) if data else None

    def related(self, chunk: Expanded | Chunk, top_k: int = 3) -> list[Hit]:
        return [
            Hit(**h)
            for h in self._call(
                "related", source=chunk.source, heading=chunk.heading, content=chunk.content, top_k=top_k
            )
        ]

    def headings(self, limit: int = 5000) -> list[Hit]:
        return [Hit(**h) for h in self._call("headings", limit=limit)]

    def remember(
        self, text: str, heading: str | None = None, *, now: dt.datetime | None = None, long_term: bool = False
    ) -> Remembered:
        data = self._call(
            "remember",
            text=clean_note(text),
            heading=heading,
            now=(now or self.clock()).isoformat(),
            long_term=long_term,
        )
        chunks = tuple(Chunk(**dict(c, heading_path=tuple(c["heading_path"]))) for c in data["chunks"])
        return Remembered(data["source"], chunks, IndexStats.from_dict(data["stats"]))

    def owner_process(self) -> str:
        """What owns the index, for messages: e.g. "memsearch-lsp serve for Neovim (pid 4242)"."""
        info = self._call("ping")
        return f"{info.get('process') or 'another process'} (pid {info['pid']})"

    def status(self) -> dict[str, Any]:
        data: dict[str, Any] = self._call("status")
        data["served_by_pid"] = self._call("ping")["pid"]
        return data

    def has_overlay(self, source: str) -> bool:
        return bool(self._call("has_overlay", source=source))

    def is_indexed(self, source: str) -> bool:
        return bool(self._call("is_indexed", source=source))

    def drop_overlay(self, source: str) -> None:
        self._call("drop_overlay", source=source)

    def close(self) -> None:
        return None


def open_memory(
    workspace: str | Path, *, wait_s: float = 30.0, config: Config | None = None, **settings: Any
) -> MemoryApi:
    """The index owner's RemoteMemory when one runs, else a local Memory that owns the index.

    A local open waits (up to `wait_s`) while another short-lived process holds the folder. `~` is
    expanded; a folder that is no memory workspace raises the CLI's NoMemoryHere and nothing is created
    there (`memsearch-lsp init` starts one).
    """
    from memsearch_lsp.core.onboard import require_memory_workspace

    root = Path(workspace).expanduser()
    if not root.is_dir():
        raise FileNotFoundError(f"workspace {root} is not a folder")
    root = root.resolve()
    require_memory_workspace(root, config)
    deadline = time.monotonic() + wait_s
    while True:
        sock = find_owner(root)
        if sock is not None:
            return RemoteMemory(root, sock, config=config, **settings)
        memory = Memory(root, config=config, **settings)
        try:
            memory.claim()
            return memory
        except IndexBusy:
            memory.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


# mypy proves both memories implement the interface (tests/integration/test_owner_api.py: the socket serves IndexApi).
_local: type[MemoryApi] = Memory
_remote: type[MemoryApi] = RemoteMemory
