"""Writing a file without leaving half a write behind (a new file removed, an append taken back, a whole file
replaced atomically), what ran out when the disk could not take a write, and the lock every writer of a memory file
holds, in every process."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from memsearch_lsp.core.files import NO_FOLLOW, folder_fd

NO_ROOM = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "your disk quota is used up",
    errno.EFBIG: "the file size limit is reached",
}
WRITES_LOCK = "writes.lock"  # in the private index folder: held (flock) while a memory file is written
WRITES_WAIT_S = 30.0  # a writer waits this long for the one writing (a compaction moving its logs), then gives up


class WritesBusy(TimeoutError):
    """Another writer held the memory's files longer than WRITES_WAIT_S; nothing was written."""


def no_room(exc: BaseException) -> str:
    """What ran out when a write failed for want of room (a full disk, a quota, a file size limit), "" for any other
    failure; another process's error is known by its text (`[Errno 28] ...`)."""
    if isinstance(exc, OSError):
        return NO_ROOM.get(exc.errno or 0, "")
    return next((said for code, said in NO_ROOM.items() if f"[Errno {code}]" in str(exc)), "")


def write_all(fd: int, data: bytes, created: Path | None = None) -> None:
    """Write `data` at the end of the file open at `fd` (O_APPEND, or a file it `created`); a write that fails leaves
    the file as it was: one it created is removed, an append cut short taken back (unless another wrote after it)."""
    start, done, view = os.fstat(fd).st_size, 0, memoryview(data)
    try:
        while done < len(data):
            done += os.write(fd, view[done:])
    except OSError:
        with contextlib.suppress(OSError):
            if created is not None:
                os.unlink(created)
            elif done and os.fstat(fd).st_size == start + done:
                os.ftruncate(fd, start)
        raise


def replace_file(path: Path, text: str) -> None:
    """`path` replaced atomically by `text` (lone surrogates written back as the bytes read_exact read), same mode."""
    mode = stat.S_IMODE(path.lstat().st_mode)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8", "surrogateescape"))
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def memory_writes(index_dir: Path, wait_s: float = WRITES_WAIT_S) -> Iterator[None]:
    """Held while a memory file is read and written back (remember, forget, a compaction's apply), by every process
    and thread of a workspace (`index_dir`: its private index folder): a writer waits for the one writing, so none
    installs a file read before another's change (a compaction's MEMORY.md over a fact just remembered). An flock of
    its own descriptor: threads wait for each other too, and a process that ends lets it go. WritesBusy after
    `wait_s`. Never taken twice by one thread (it would wait for itself)."""
    import fcntl

    with folder_fd(index_dir) as dir_fd:
        try:
            fd = os.open(WRITES_LOCK, os.O_CREAT | os.O_RDWR | NO_FOLLOW, 0o600, dir_fd=dir_fd)
        except OSError as exc:  # a link planted in the private folder: never followed, replaced by the lock file
            if exc.errno != errno.ELOOP:
                raise
            os.unlink(WRITES_LOCK, dir_fd=dir_fd)
            fd = os.open(WRITES_LOCK, os.O_CREAT | os.O_EXCL | os.O_RDWR | NO_FOLLOW, 0o600, dir_fd=dir_fd)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise WritesBusy(
                        f"another process kept writing the memory files for {wait_s:g} s; nothing was written: try "
                        "again"
                    ) from None
                time.sleep(0.01)
        yield
    finally:
        os.close(fd)  # (closing it lets the lock go)
