"""The local index folder: held by one process (its lock), signed as ours, never followed through a link, moved
aside when it cannot be used, removed on reset; and the safe file operations every private file goes through."""

from __future__ import annotations

import contextlib
import errno
import glob
import logging
import os
import re
import shutil
import stat
import time
from pathlib import Path
from typing import NoReturn

from memsearch_lsp.core.files import NO_FOLLOW, UnsafeFolder, folder_fd, private_folder, write_file, writing

log = logging.getLogger(__name__)

MARKER = ".memsearch-lsp-index"  # written into every local index folder this program creates
LOCK = "memsearch.lock"  # held (flock) by the process that owns the index, engine open or not
ENGINE_LOCK = "LOCK"  # Milvus Lite's own, held while its engine is open
ASIDE = {"broken": 3, "previous": 1}  # copies moved aside kept, the newest: damaged (for a bug report), incompatible
SHOWN = "memsearch_shown"  # a log record's mark: a warning about the index an editor shows the user (once)
TOLD = {SHOWN: True}


class StoreError(RuntimeError):
    """The vector store cannot be opened or used; the message says which and why."""


class IndexBusy(StoreError):
    """Another process holds the local index folder."""


# -- the folder's lock --------------------------------------------------------------------------
def hold(folder: Path) -> int:
    """Take the index folder's lock (created when missing): its descriptor, kept until `let_go`; IndexBusy when
    another process holds it."""
    import fcntl

    with folder_fd(folder) as dir_fd:
        fd = os.open(LOCK, os.O_CREAT | os.O_RDWR | NO_FOLLOW, 0o600, dir_fd=dir_fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = _written_pid(fd)
        os.close(fd)
        who = f" (pid {holder})" if holder else ""
        raise IndexBusy(f"another process{who} holds the index at {folder}") from exc
    if not still_held(fd, folder):  # the folder was moved aside (reset) between opening its lock and taking it
        let_go(fd)
        raise IndexBusy(f"the index at {folder} was just deleted by another process")
    with contextlib.suppress(OSError):  # who holds it, for that message in the others
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _written_pid(fd: int) -> int:
    """The pid the holder of the lock `fd` wrote into it (0 when none yet)."""
    holder = b""
    with contextlib.suppress(OSError):
        holder = os.pread(fd, 16, 0).strip()
    return int(holder) if holder.isdigit() else 0


def let_go(fd: int) -> None:
    import fcntl

    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)
    with contextlib.suppress(OSError):
        os.close(fd)


def still_held(fd: int, folder: Path) -> bool:
    """The lock `fd` is still the one of the index folder `folder` (not deleted, nor made anew, under its holder)."""
    try:
        now, held = os.lstat(folder / LOCK), os.fstat(fd)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)


def locked_by_other(folder: Path) -> bool:
    """True when another process holds the lock of the index folder `folder`."""
    return lock_holder(folder) is not None


def lock_holder(folder: Path) -> int | None:
    """The pid of the process that holds the lock of the index folder `folder`, as it wrote it there (0 when it
    wrote none yet); None when no process holds it."""
    import fcntl

    try:
        with folder_fd(folder) as dir_fd:
            fd = os.open(LOCK, os.O_RDONLY | NO_FOLLOW, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return _written_pid(fd)
    finally:
        os.close(fd)  # (closing our description releases a lock it took)
    return None


def claim(folder: Path) -> tuple[int, bool]:
    """Check the local index folder and take its lock: (the lock's descriptor, True when the folder was missing or
    empty: a new index, ours to sign). StoreError when it is no folder or holds files that are not an index,
    IndexBusy when another process holds it."""
    if os.path.lexists(folder) and not folder.is_dir():
        if not ours(folder):  # (a file at the default place, inside our own `.memsearch`, is ours to move aside)
            raise StoreError(f"cannot open the index at {folder}: it is not a folder (left as it is)")
        move_aside(folder, "it is not a folder")
    fresh = not folder.exists() or all(f.name in (ENGINE_LOCK, LOCK, MARKER) for f in folder.iterdir())
    if not fresh and not (ours(folder) or (folder / "collections").is_dir()):
        raise StoreError(
            f"cannot open the index at {folder}: the folder holds files that are not a memsearch-lsp "
            f"index (no {MARKER} in it), so it is left as it is: set milvus.uri to an empty or new folder"
        )
    with writing(folder):  # (a read-only index folder: named, not its lock file)
        try:
            folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError) as exc:  # (a file where one of its folders goes)
            blocker = next((p for p in reversed(folder.parents) if os.path.lexists(p) and not p.is_dir()), exc.filename)
            raise StoreError(f"cannot make the index folder {folder}: {blocker} is a file (move or remove it)") from exc
        try:
            private_folder(folder)  # a real folder of this user, owner-only (never a link)
        except UnsafeFolder as exc:
            raise StoreError(f"cannot open the index: {exc}") from exc
        return hold(folder), fresh


# -- signed, moved aside, removed ---------------------------------------------------------------
def signed(folder: Path) -> bool:
    """`folder` is a real folder (not a link) holding this program's MARKER as a regular file."""
    try:
        return stat.S_ISDIR(folder.lstat().st_mode) and stat.S_ISREG((folder / MARKER).lstat().st_mode)
    except OSError:
        return False


def ours(folder: Path) -> bool:
    """A folder memsearch-lsp created, which it may move aside: signed with MARKER, or the default
    `.memsearch/milvus.db` inside a real `.memsearch` folder (indexes built before the marker existed live
    there; one whose schema is ours is signed when opened)."""
    if signed(folder):
        return True
    try:
        parent = folder.parent.lstat()
        return (
            folder.name == "milvus.db"
            and folder.parent.name == ".memsearch"
            and stat.S_ISDIR(parent.st_mode)
            and parent.st_uid == os.geteuid()
            and not folder.is_symlink()
        )
    except OSError:
        return False


def mark(folder: Path) -> None:
    """Sign a local index folder as ours: only a signed folder is ever moved aside or deleted by reset."""
    if not signed(folder):
        with folder_fd(folder) as dir_fd:
            write_file(dir_fd, MARKER, b"memsearch-lsp index: safe to delete; rebuilt from the Markdown\n")


RESET_WAIT_S = 30.0  # how long reset waits for another process that holds the index (a CLI's command ends soon)


def remove_index(uri: str) -> None:
    """Delete the local index folder at `uri` (reset), and the copies of it moved aside (ASIDE, which hold what was
    indexed too): only real folders signed with MARKER; any other folder or file at the index's place
    is left as it is with a StoreError. Nothing there: nothing to do.

    The folder is renamed aside while its lock is held (waiting up to RESET_WAIT_S for another process that holds
    it: IndexBusy after that, nothing deleted), then deleted: another process never opens a half-deleted index, and
    one that comes meanwhile starts a new one. A copy that cannot be deleted is named in a StoreError (the next
    command rebuilds the index all the same)."""
    folder = Path(uri)
    for aside in _copies(folder):
        if signed(aside):
            _delete(aside)
    if not os.path.lexists(folder):
        return
    if not signed(folder):
        raise StoreError(
            f"reset: {folder} is not an index memsearch-lsp created (no {MARKER} in it, or a link), "
            "so it is left as it is: delete it yourself if it is"
        )
    deadline = time.monotonic() + RESET_WAIT_S
    with writing(folder):
        while True:
            try:
                held = hold(folder)
                break
            except IndexBusy:
                if time.monotonic() > deadline or not os.path.lexists(folder):
                    raise
                time.sleep(0.1)
        try:
            aside = folder.with_name(f"{folder.name}.broken-reset-{os.getpid()}-{time.monotonic_ns()}")
            os.rename(folder, aside)  # (a rename moves a link itself, never what it points to)
        finally:
            let_go(held)
        _delete(aside)


def _copies(folder: Path, *kinds: str) -> list[Path]:
    """Copies of `folder` moved aside (of `kinds`, else all), by their stamp: never "milvus.db.previous-b"."""
    found = [folder.parent.glob(f"{glob.escape(folder.name)}.{kind}-*") for kind in kinds or ASIDE]
    stamped = re.compile(rf"{re.escape(folder.name)}\.\w+-(?:\d{{8}}-\d{{6}}(?:\.\d{{9}}|-\d+)?|reset-\d+-\d+)")
    return [p for paths in found for p in paths if stamped.fullmatch(p.name)] if folder.parent.is_dir() else []


def _delete(folder: Path, tries: int = 10) -> None:
    """Delete a folder moved aside; one that another process still writes a last file in as it lets go (the engine of
    an index just closed) is "not empty" for a moment: tried again, `tries` times in 2 s."""
    for attempt in range(tries):
        try:
            shutil.rmtree(folder)  # (never follows a link inside)
            return
        except FileNotFoundError:  # (another reset deletes it)
            return
        except OSError as exc:
            if exc.errno == errno.ENOTEMPTY and attempt < tries - 1:
                time.sleep(0.2)
                continue
            _undeletable(folder, exc)


def _undeletable(folder: Path, exc: OSError) -> NoReturn:
    raise StoreError(
        f"reset: the index was moved aside to {folder} but cannot be deleted ({exc.strerror or exc}); "
        "the next command rebuilds the index: delete that folder yourself"
    ) from exc


def move_aside(folder: Path, why: str, kind: str = "broken") -> Path | None:
    """Keep a damaged (`broken`) or incompatible (`previous`: another dimension or layout) local index beside it with
    the newest of its kind (ASIDE): where it went (None when it was gone already: the caller says it); only a folder
    memsearch-lsp created is moved, another is left with a StoreError."""
    if folder.exists() and not ours(folder):
        raise StoreError(
            f"the index at {folder} {why}, and it is not a folder memsearch-lsp created "
            f"(no {MARKER} in it), so it is left as it is: move or delete it yourself, "
            "or set milvus.uri to another path"
        )
    if not os.path.lexists(folder):  # (said by the caller, once it could make it again)
        return None
    if folder.is_dir() and not folder.is_symlink():
        with contextlib.suppress(OSError):
            mark(folder)  # (an index built before the marker existed too: `reset` removes the copy)
    for older in sorted(p for p in _copies(folder, kind) if signed(p) and "-reset-" not in p.name)[
        : 1 - ASIDE[kind] or None
    ]:
        with contextlib.suppress(StoreError):
            _delete(older)
    now = time.time_ns()  # (in the name: one of its own, and the copies sort by age)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now // 10**9)) + f".{now % 10**9:09d}"
    aside = folder.with_name(f"{folder.name}.{kind}-{stamp}")
    os.rename(folder, aside)  # a rename moves a link itself, never what it points to
    log.warning(
        "the index at %s was moved to %s because %s; rebuilding it from the Markdown",
        folder,
        aside.name,
        why,
        extra=TOLD,
    )
    return aside
