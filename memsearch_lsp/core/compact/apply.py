"""Applying a compaction plan to the files: all or nothing, each log checked right before and after it moves."""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from memsearch_lsp.core.compact.summarize import CompactError
from memsearch_lsp.core.files import INDEX_DIR, not_writable, private_folder, read_text
from memsearch_lsp.core.filewrite import WritesBusy, memory_writes

if TYPE_CHECKING:
    from memsearch_lsp.core.api import MemoryApi
    from memsearch_lsp.core.compact.types import ArchiveMove, CompactionPlan

log = logging.getLogger(__name__)


class LogChanged(CompactError):
    """A log no longer holds the text its summary was made from (a writer appended to it)."""

    def __init__(self, source: str):
        super().__init__(f"{source} changed since the plan was made")
        self.source = source


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _install(source: Path, target: Path) -> None:
    """Put `source` in place of `target` atomically (the one seam tests use to simulate a full disk)."""
    os.replace(source, target)


def _write_temp(target: Path, data: bytes) -> Path:
    """Write `data` beside `target` under a hidden temporary name (fsynced); the caller renames it."""
    temp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        temp.unlink(missing_ok=True)
        raise
    os.close(fd)
    return temp


def _text_sha(path: Path) -> str:
    """The sha256 of a log's text as the planner read it (decoded the same way)."""
    text, _ = read_text(path)
    return sha256(text.encode("utf-8"))


def _check(memory: MemoryApi, plan: CompactionPlan) -> dict[str, bytes]:
    """Refuse a stale plan, or one that writes a file an editor holds unsaved (its next save would undo the
    compaction: a log back beside its archived copy), before touching anything; returns the current bytes of
    appended summaries."""
    if held := [source for source in plan.written if memory.is_unsaved(source)]:  # (the owner's buffers)
        one = len(held) == 1
        raise CompactError(
            f"{', '.join(held)} {'has' if one else 'have'} unsaved changes in an editor: save or close "
            f"{'it' if one else 'them'}, then compact again (nothing was compacted)"
        )
    current: dict[str, bytes] = {}
    for s in plan.summaries:
        target = memory.path_of(s.path)
        if s.action == "create" and target.exists():
            raise CompactError(f"{s.path} appeared since the plan was made; plan again")
        if s.action == "append":
            if not target.is_file():
                raise CompactError(f"{s.path} disappeared since the plan was made; plan again")
            current[s.path] = target.read_bytes()
            if s.base_sha256 and sha256(current[s.path]) != s.base_sha256:
                raise CompactError(f"{s.path} changed since the plan was made; plan again")
    edit = plan.memory_edit
    if edit is not None:
        target = memory.path_of(edit.path)
        if edit.action == "create" and target.exists():
            raise CompactError(f"{edit.path} appeared since the plan was made; plan again")
        if edit.action == "insert" and (not target.is_file() or sha256(target.read_bytes()) != edit.base_sha256):
            raise CompactError(f"{edit.path} changed since the plan was made; plan again")
    for m in plan.archive:
        if not memory.path_of(m.src).is_file():
            raise CompactError(f"{m.src} disappeared since the plan was made; plan again")
        _same(m, memory.path_of(m.src))
        dst = memory.path_of(m.dst)
        if os.path.lexists(dst):
            raise CompactError(f"{m.dst} appeared since the plan was made; plan again")
    return current


def _same(move: ArchiveMove, path: Path) -> None:
    """LogChanged unless `path` holds the text the summary was made from."""
    if not _holds(path, move.sha256):
        raise LogChanged(move.src)


def grown_archives(memory: MemoryApi, plan: CompactionPlan) -> list[str]:
    """The archived copies of `plan` (applied by an editor, which cannot check a log before it renames it) that hold
    other text than the summary read: a writer changed the log during the preview, and the rename took it along."""
    return [m.dst for m in plan.archive if (path := memory.path_of(m.dst)).is_file() and not _holds(path, m.sha256)]


def _holds(path: Path, digest: str) -> bool:
    """`path` holds the text whose sha256 is `digest` (any text, with no digest)."""
    return not digest or _text_sha(path) == digest


def changed_logs(memory: MemoryApi, plan: CompactionPlan, texts: Mapping[str, str] | None = None) -> list[str]:
    """The logs of `plan` that no longer hold the text its summaries were made from (or are gone); `texts`: the
    text of a log by source where it is not the file's (an editor's buffer)."""
    changed = []
    for m in plan.archive:
        path, text = memory.path_of(m.src), (texts or {}).get(m.src)
        if text is None and not path.is_file():
            changed.append(m.src)
            continue
        digest = sha256(text.encode("utf-8")) if text is not None else _text_sha(path)
        if m.sha256 and digest != m.sha256:
            changed.append(m.src)
    return changed


def stale_since(memory: MemoryApi, plan: CompactionPlan, texts: Mapping[str, str]) -> list[str]:
    """What `plan` would write over that changed since it was made, for an editor applying it as an edit (`texts`: the
    editor's open buffers by source): its logs, MEMORY.md (its buffer or file), the summaries it appends to (their
    files), and the archive names it moves logs to (that must still be free)."""

    def bytes_of(source: str) -> bytes | None:
        path = memory.path_of(source)
        return path.read_bytes() if path.is_file() else None

    stale = changed_logs(memory, plan, texts)
    edit = plan.memory_edit
    if edit is not None:
        text = texts.get(edit.path)
        data = text.encode("utf-8") if text is not None else bytes_of(edit.path)
        if (data is not None) != (edit.action == "insert") or (data is not None and sha256(data) != edit.base_sha256):
            stale.append(edit.path)
    written = [(s.path, s.base_sha256) for s in plan.summaries] + [(m.dst, "") for m in plan.archive]
    for path, base in written:  # (no base: a file the plan creates, that must not be there yet)
        data = bytes_of(path)
        if (data is None) != (not base) or (data is not None and sha256(data) != base):
            stale.append(path)
    return stale


def apply_exactly(memory: MemoryApi, plan: CompactionPlan) -> None:
    """Apply `plan` as it is (a plan the user reviewed), or refuse with nothing applied: CompactError naming the
    logs that changed since it was made (never a plan re-made without them)."""
    changed = changed_logs(memory, plan)
    if not changed:
        try:
            apply_files(memory, plan)
            return
        except LogChanged as exc:  # (a writer between the check and the move: rolled back)
            changed = [exc.source]
    raise CompactError(
        f"{', '.join(changed)} changed since the plan was reviewed; nothing compacted; review the new plan"
    )


Undo = Callable[[], None]


def _move(memory: MemoryApi, m: ArchiveMove, undo: list[Undo], made_dirs: list[Path]) -> None:
    """Move one log into the archive, checking its text right before and right after."""
    src, dst = memory.path_of(m.src), memory.path_of(m.dst)
    if not dst.parent.is_dir():
        made_dirs.extend(_mkdirs(dst.parent))
    _same(m, src)
    if os.path.lexists(dst):
        raise OSError(errno.EEXIST, f"{m.dst} already exists")
    os.rename(src, dst)
    undo.append(lambda: os.rename(dst, src))
    _same(m, dst)  # a writer that appended through an open handle between the check and the rename


def apply_files(memory: MemoryApi, plan: CompactionPlan) -> None:
    """Write the summaries, move the originals and add the promoted facts to MEMORY.md, all or nothing: on any
    failure, undo and raise.

    Each log is checked right before and right after it moves: one that no longer holds the text
    its summary was made from raises LogChanged, with everything rolled back. The files are checked and written
    holding the memory's writes lock (`filewrite.memory_writes`): a note that `remember` or `forget` writes in another
    process (the index's owner) comes before the check, and refuses the plan, or after the compaction, into its files.
    """
    try:
        with memory_writes(private_folder(memory.root / INDEX_DIR)):
            _apply_files(memory, plan)
    except WritesBusy as exc:
        raise CompactError(str(exc)) from None


def _apply_files(memory: MemoryApi, plan: CompactionPlan) -> None:
    current = _check(memory, plan)
    temps: dict[str, Path] = {}
    undo: list[Undo] = []
    made_dirs: list[Path] = []
    cleanup: list[Path] = []
    try:
        for s in plan.summaries:  # 1. every summary to a temporary file: a full disk fails here
            target = memory.path_of(s.path)
            if not target.parent.is_dir():
                made_dirs.extend(_mkdirs(target.parent))
            temps[s.path] = _write_temp(target, current.get(s.path, b"") + s.content.encode("utf-8"))
        edit = plan.memory_edit
        if edit is not None:  # the promoted facts: MEMORY.md as it will be
            target = memory.path_of(edit.path)
            if not target.parent.is_dir():
                made_dirs.extend(_mkdirs(target.parent))
            temps[edit.path] = _write_temp(target, edit.content.encode("utf-8"))
        for m in plan.archive:  # 2. the originals into the archive
            _move(memory, m, undo, made_dirs)
        installs = [(s.path, s.action == "append") for s in plan.summaries]  # 3. the summaries in place
        installs += [(edit.path, edit.action == "insert")] if edit is not None else []  # 4. MEMORY.md, with the rest
        for name, replaces in installs:
            _put(memory, name, temps[name], replaces, undo, cleanup)
            del temps[name]
    except BaseException as exc:
        problems = _rollback(undo, list(temps.values()), made_dirs)
        for path in (p for p in cleanup if p.name.endswith(".bak")):  # backups not restored
            path.unlink(missing_ok=True)
        if problems:
            log.error("compaction rollback incomplete: %s", "; ".join(problems))
        if isinstance(exc, LogChanged) and not problems:
            raise
        if isinstance(exc, (OSError, CompactError)):
            refused = not_writable(exc)  # (a read-only memory folder: named, not a temporary file)
            detail = str(refused or (exc.strerror if isinstance(exc, OSError) else None) or exc)
            undone = "rolled back, memory unchanged" if not problems else "ROLLBACK INCOMPLETE: " + "; ".join(problems)
            raise CompactError(f"compaction failed ({detail}); {undone}") from exc
        raise
    for path in cleanup:
        path.unlink(missing_ok=True)


def _put(memory: MemoryApi, path: str, temp: Path, replaces: bool, undo: list[Undo], cleanup: list[Path]) -> None:
    """Install a written temporary file at `path`: in place of the file there (`replaces`: its backup restores
    it on undo), or as a new file (removed on undo)."""
    target = memory.path_of(path)
    if replaces:
        backup = _backup(target)
        cleanup.append(backup)
        _install(temp, target)
        undo.append(lambda: _install(backup, target))
        return
    if target.exists():
        raise OSError(errno.EEXIST, f"{path} already exists")
    _install(temp, target)
    undo.append(target.unlink)


def _mkdirs(folder: Path) -> list[Path]:
    missing = []
    probe = folder
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    folder.mkdir(parents=True, exist_ok=True)
    return missing  # deepest first: the order to remove them in


def _backup(target: Path) -> Path:
    backup = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.bak")
    try:
        os.link(target, backup)
    except OSError:
        import shutil

        shutil.copy2(target, backup)
    return backup


def _rollback(undo: list[Undo], temps: list[Path], made_dirs: list[Path]) -> list[str]:
    problems: list[str] = []
    for step in reversed(undo):
        try:
            step()
        except OSError as exc:
            problems.append(str(exc))
    for temp in temps:
        try:
            temp.unlink(missing_ok=True)
        except OSError as exc:
            problems.append(f"remove {temp}: {exc}")
    for folder in made_dirs:
        try:
            folder.rmdir()
        except OSError:
            pass
    return problems
