"""The local index folder: signed as ours (MARKER), held by another process, moved aside, removed on reset."""

from __future__ import annotations

import logging
import os
import shutil
import stat
import time
from pathlib import Path

from memsearch_lsp.core.files import UnsafeFolder, private_folder
from memsearch_lsp.core.store.lite import FolderHeld, check_engine, hold, release

log = logging.getLogger(__name__)

MARKER = ".memsearch-lsp-index"  # written into every local index folder this program creates


class StoreError(RuntimeError):
    """The vector store cannot be opened or used; the message says which and why."""


class IndexBusy(StoreError):
    """Another process holds the local index folder."""


def locked_by_other(folder: Path) -> bool:
    """True when another open file description holds Milvus Lite's advisory lock on `folder`."""
    lock = folder / "LOCK"
    if not lock.exists():
        return False
    import fcntl

    with lock.open("rb") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def claim(folder: Path) -> bool:
    """Check the local index folder and take its lock (Milvus Lite's own, before its engine opens): StoreError
    when it is no folder or holds files that are not an index, IndexBusy when another process holds it. True
    when the folder was missing or empty (a new index, ours to sign)."""
    if folder.exists() and not folder.is_dir():
        raise StoreError(f"cannot open the index at {folder}: it is not a folder (left as it is)")
    fresh = not folder.exists() or all(f.name in ("LOCK", MARKER) for f in folder.iterdir())  # never written
    if not fresh and not (ours(folder) or (folder / "collections").is_dir()):
        raise StoreError(
            f"cannot open the index at {folder}: the folder holds files that are not a memsearch-lsp "
            f"index (no {MARKER}), so it is left as it is: set milvus.uri to an empty or new folder"
        )
    folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        private_folder(folder)  # a real folder of this user, owner-only (never a link)
    except UnsafeFolder as exc:
        raise StoreError(f"cannot open the index: {exc}") from exc
    check_engine()
    try:
        hold(folder)
    except FolderHeld as exc:
        raise IndexBusy(str(exc)) from exc
    return fresh


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


def remove_index(uri: str) -> None:
    """Delete the local index folder at `uri` (reset): only a real folder signed with MARKER; any other
    folder or file there is left as it is with a StoreError. Nothing there: nothing to do."""
    folder = Path(uri)
    if not os.path.lexists(folder):
        return
    if not signed(folder):
        raise StoreError(
            f"reset: {folder} is not an index memsearch-lsp created (no {MARKER} in it, or a link), "
            "so it is left as it is: delete it yourself if it is"
        )
    release(uri)
    shutil.rmtree(folder)


def mark(folder: Path) -> None:
    """Sign a local index folder as ours: only a signed folder is ever moved aside or deleted by reset."""
    if not signed(folder):
        fd = os.open(folder / MARKER, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write("memsearch-lsp index: safe to delete; rebuilt from the Markdown\n")


def move_aside(folder: Path, why: str) -> None:
    """Keep a broken or incompatible local index (let go by its engine) beside it, for inspection; only
    a folder memsearch-lsp created is moved, any other is left as it is with a StoreError."""
    if folder.exists() and not ours(folder):
        raise StoreError(
            f"the index at {folder} {why}, and it is not a folder memsearch-lsp created "
            f"(no {MARKER} in it), so it is left as it is: move or delete it yourself, "
            "or set milvus.uri to another path"
        )
    aside = folder.with_name(f"{folder.name}.broken-{time.strftime('%Y%m%d-%H%M%S')}")
    if folder.exists():
        shutil.move(str(folder), str(aside))
    log.warning("the index at %s was moved to %s because %s; rebuilding it from the Markdown", folder, aside.name, why)
