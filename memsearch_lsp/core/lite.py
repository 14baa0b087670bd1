"""A local Milvus Lite folder served on an owner-only Unix socket: no TCP listener, no other user.

Milvus Lite 3 is reached by pymilvus over gRPC; for a `.db` URI pymilvus would start it on a loopback
TCP port that every local user can connect to. Instead the engine is started here, in this process,
and bound to a Unix socket in a folder only the current user can enter (the index's own folder when it
is owner-only and short enough, else a private runtime folder); pymilvus connects to `unix:PATH`, so the
client code is the same as for a Milvus server reached by `http://HOST:PORT`.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import logging
import os
import stat
import tempfile
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MAX_SOCKET_PATH = 100  # AF_UNIX allows 107 bytes; grpc wants a little room
WORKERS = 4
_GRPC_OPTIONS = [
    ("grpc.max_receive_message_length", 256 * 1024 * 1024),
    ("grpc.max_send_message_length", 256 * 1024 * 1024),
    # pymilvus pings idle channels every 10 s; a server that refuses them answers GOAWAY and the
    # client reconnects, so accept its keepalive.
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_ping_interval_without_data_ms", 5000),
]

_lock = threading.Lock()
_served: dict[str, tuple[Any, Any, Path]] = {}  # data folder -> (grpc server, MilvusLite, socket)


class UnsafeFolder(RuntimeError):
    """A folder that should hold a private socket is not the current user's alone."""


def private_folder(folder: Path, create_parents: bool = False) -> Path:
    """`folder` created 0700 if missing; refused unless it is a real folder owned by us and 0700."""
    if create_parents:
        folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise UnsafeFolder(f"{folder} must be a folder owned by this user with mode 0700")
    return folder


def socket_path(data_dir: Path) -> Path:
    """Where the Unix socket of `data_dir` goes: beside it when its parent is owner-only and the path is
    short enough for AF_UNIX, else in a private runtime folder under a name derived from its path."""
    beside = data_dir.parent / f"{data_dir.name}.sock"
    if len(str(beside)) <= MAX_SOCKET_PATH:
        with contextlib.suppress(UnsafeFolder):
            private_folder(data_dir.parent)
            return beside
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    folder = private_folder(Path(base) / f"memsearch-lsp-sockets-{os.getuid()}")
    return folder / (hashlib.sha256(str(data_dir).encode("utf-8", "surrogateescape")).hexdigest()[:20] + ".sock")


def serve(data_dir: str | Path) -> str:
    """Open the Milvus Lite folder `data_dir` (taking its lock) and serve it on a private Unix socket;
    returns the `unix:` URI for pymilvus. A folder already served by this process is reused."""
    folder = Path(os.path.abspath(data_dir))
    with _lock:
        if str(folder) in _served:
            return f"unix:{_served[str(folder)][2]}"
        os.environ.setdefault("GRPC_VERBOSITY", "NONE")  # no C-core INFO lines on stderr
        import grpc
        from milvus_lite.adapter.grpc.servicer import MilvusServicer
        from milvus_lite.db import MilvusLite
        from pymilvus.grpc_gen import milvus_pb2_grpc

        sock = socket_path(folder)
        db = MilvusLite(str(folder))  # raises DataDirLockedError when another process holds it
        try:
            _remove_stale(sock)  # we hold the folder's lock: no live server can own this socket
            server = grpc.server(_executor(), options=_GRPC_OPTIONS)
            milvus_pb2_grpc.add_MilvusServiceServicer_to_server(MilvusServicer(db), server)
            if not server.add_insecure_port(f"unix:{sock}"):
                raise OSError(f"cannot bind the index socket {sock}")
            os.chmod(sock, 0o600)
            server.start()
        except BaseException:
            db.close()
            raise
        _served[str(folder)] = (server, db, sock)
        log.debug("Milvus Lite for %s serves on unix:%s", folder, sock)
        return f"unix:{sock}"


def _executor() -> Any:
    from concurrent import futures

    return futures.ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="milvus-lite")


def _remove_stale(sock: Path) -> None:
    try:
        info = sock.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(info.st_mode) or info.st_uid != os.getuid():
        raise UnsafeFolder(f"{sock} exists and is not a socket of this user; remove it")
    sock.unlink()


def release(data_dir: str | Path) -> None:
    """Stop serving `data_dir`, close its engine (releasing the folder's lock) and remove the socket."""
    with _lock:
        entry = _served.pop(os.path.abspath(data_dir), None)
    if entry is None:
        return
    server, db, sock = entry
    try:
        server.stop(grace=None).wait(5)
    finally:
        try:
            db.close()
        finally:
            if sock.is_socket():
                sock.unlink(missing_ok=True)


def release_unused_memory() -> None:
    """Hand freed memory back to the OS after a bulk write: Milvus Lite's Arrow pool (mimalloc) and the C
    heap keep what a large write used (~130 MB after indexing 10k chunks) although nothing holds it."""
    import sys

    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        with contextlib.suppress(Exception):
            arrow.default_memory_pool().release_unused()
    if sys.platform.startswith("linux"):
        import ctypes
        import ctypes.util

        with contextlib.suppress(Exception):
            ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0)


def engine(data_dir: str | Path, collection: str) -> Any:
    """The in-process Milvus Lite collection of a folder this process serves: the local store reads
    search results and its mirror through it without the gRPC hop (a few ms per call); writes still go
    through pymilvus, as they would to a server."""
    with _lock:
        entry = _served.get(os.path.abspath(data_dir))
    if entry is None:
        raise RuntimeError(f"{data_dir} is not served by this process")
    return entry[1].get_collection(collection)


def sparse_arrays(value: Any) -> tuple[Any, Any]:
    """A sparse vector as Milvus Lite stores it (packed little-endian uint32 index, float32 weight pairs)
    or as a dict, as (indices int64, weights float32) arrays."""
    import numpy as np

    if isinstance(value, bytes | bytearray | memoryview):
        pairs = np.frombuffer(value, dtype=np.dtype([("i", "<u4"), ("w", "<f4")]))
        return pairs["i"].astype(np.int64), pairs["w"].astype(np.float32)
    items = dict(value or {})
    return (np.fromiter(items.keys(), dtype=np.int64, count=len(items)),
            np.fromiter(items.values(), dtype=np.float32, count=len(items)))


def served() -> dict[str, Path]:
    """Data folder -> socket of every folder this process serves (for status and tests)."""
    with _lock:
        return {folder: entry[2] for folder, entry in _served.items()}


@atexit.register
def _release_all() -> None:
    for folder in list(served()):
        try:
            release(folder)
        except Exception as exc:  # pragma: no cover - best effort at exit
            log.debug("closing %s at exit: %s", folder, exc)
