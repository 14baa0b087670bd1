"""The owner record and its socket: where they are, whether this user may trust them, and whether the process a
record names holds the index (core/process/owner.py serves and calls; this module says whom).

A client trusts a record and a socket only when they, and the folder holding them, belong to its own user with
private modes; a record or socket left by a killed process is removed: its socket is not there, or nobody answers
and its pid does not hold the index's lock (this process's own path for it; never one a record names). An owner
of a build before that lock (which held only Milvus Lite's own) is told apart from a stale record (`other_protocol`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from memsearch_lsp.core.files import folder_fd, read_file, remove_file
from memsearch_lsp.core.memory import INDEX_DIR
from memsearch_lsp.core.process.protocol import OtherProtocol
from memsearch_lsp.core.store import is_local_uri
from memsearch_lsp.core.store.folder import ENGINE_LOCK, lock_holder

log = logging.getLogger(__name__)

RECORD = "server.json"
MAX_SOCKET_PATH = 100


class UntrustedOwner(PermissionError):
    """An owner record, socket or folder that is not this user's own, private: never used."""


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
    private(folder, stat.S_ISDIR)
    return folder / (hashlib.sha256(str(root).encode()).hexdigest()[:16] + ".sock")


def private(path: Path, kind: Any) -> None:
    """`path` is of `kind` (stat.S_ISDIR, ...), no link, this user's, and no one else may read or write it."""
    info = path.lstat()
    if not kind(info.st_mode) or info.st_uid != os.geteuid() or stat.S_IMODE(info.st_mode) & 0o077:
        what = {stat.S_ISDIR: "folder (mode 0700)", stat.S_ISSOCK: "socket (mode 0600)"}.get(kind, "file (mode 0600)")
        raise UntrustedOwner(
            f"refusing {path}: it must be a {what} of uid {os.geteuid()} that no one else may use (found uid "
            f"{info.st_uid}, mode {stat.S_IMODE(info.st_mode):o}); remove it and try again"
        )


def pid_alive(pid: int) -> bool:
    if pid <= 0:  # (0 and -1 name process groups, not a process)
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_record(root: Path) -> dict[str, Any] | None:
    """The owner record of `root`, when there is one this user may trust (UntrustedOwner for one it may not); one of
    this user's in its private folder that no owner wrote (no JSON naming a socket, or open to others) is removed."""
    path = record_path(root)
    if not os.path.lexists(path):
        return None
    private(path.parent, stat.S_ISDIR)
    try:
        private(path, stat.S_ISREG)
        with folder_fd(path.parent) as fd:
            data = json.loads(read_file(fd, RECORD, 1 << 16))
    except (UntrustedOwner, ValueError) as exc:  # (another user's, or a folder, is refused: never removed)
        info = path.lstat()
        if isinstance(exc, UntrustedOwner) and (info.st_uid != os.geteuid() or stat.S_ISDIR(info.st_mode)):
            raise
        data = None
    except OSError:
        return None
    if isinstance(data, dict) and "socket" in data:
        return data
    log.warning("removing the index owner record %s: no index owner wrote it", path)
    remove_stale(root)
    return None


def remove_stale(root: Path, owner: bool = False) -> None:
    """Remove this program's record and socket for `root` (the socket only when it is one; for the owner, which holds
    the index, anything there but a folder: a file committed as `server.sock` would keep every owner from listening)."""
    with contextlib.suppress(OSError):
        path = socket_path_for(root)
        if stat.S_ISSOCK(mode := path.lstat().st_mode) or (owner and not stat.S_ISDIR(mode)):
            path.unlink()
    with contextlib.suppress(OSError), folder_fd(root / INDEX_DIR) as fd:
        remove_file(fd, RECORD)


def holds_index(pid: int, index: str) -> bool:
    """Process `pid` runs and holds the index at `index`: this process's own path for it (its settings), never the
    one a record names. A local folder's lock is held, by `pid` as the holder wrote it there, or by a holder that
    wrote no pid of a live process (a reused pid, or pid 1, holds no lock; a stopped owner still does); an index on
    a server has no lock: `pid` runs."""
    if not pid_alive(pid):
        return False
    if not is_local_uri(index):
        return True
    holder = lock_holder(Path(index))  # (a pid the holder did not write yet, or one of a holder gone: not known)
    return holder is not None and (holder == pid or not pid_alive(holder))


def record_pid(record: dict[str, Any]) -> int:
    """The pid a record names (0 for none, or for one that is no number)."""
    try:
        return int(record.get("pid", 0) or 0)
    except (TypeError, ValueError):
        return 0


def older_owner(pid: int, index: str) -> bool:
    """Process `pid` runs and the local index at `index` is held by a build before this program's index lock: no
    process holds that lock, and one holds Milvus Lite's own (such an owner answers in no protocol of this build)."""
    import fcntl

    if not pid_alive(pid) or not is_local_uri(index) or lock_holder(Path(index)) is not None:
        return False
    try:
        with folder_fd(Path(index)) as dir_fd:
            fd = os.open(ENGINE_LOCK, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # (closing our description releases a lock it took)
    return False


def other_protocol(pid: int, index: str, about: Any = None) -> OtherProtocol | None:
    """The record's `pid`, whose socket answered `about` (None: in no JSON-RPC), not in this build's protocol: an
    owner of another release, which runs and holds the index (one that names a protocol of its own: runs), else
    None (a stale record). What answers in no JSON-RPC is an owner only as a build before this program's index
    lock (`older_owner`)."""
    if about is None:
        return OtherProtocol(pid, older=True) if older_owner(pid, index) else None
    numbered = isinstance(about, dict) and "protocol" in about and pid_alive(pid)
    return OtherProtocol(pid) if numbered or holds_index(pid, index) or older_owner(pid, index) else None
