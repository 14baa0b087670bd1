"""Writing a file without leaving half a write behind (a new file removed, an append taken back, a whole file
replaced atomically), and what ran out when the disk could not take a write."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path

NO_ROOM = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "your disk quota is used up",
    errno.EFBIG: "the file size limit is reached",
}


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
