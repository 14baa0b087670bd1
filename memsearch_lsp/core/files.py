"""Find memory files under a workspace, read them safely, keep every path inside the root; private folders and
the files in them, never reached through a link."""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import stat
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

from memsearch_lsp.config import CONFIG_FILE, Config, ConfigError, archive_folder
from memsearch_lsp.config.globs import glob_match
from memsearch_lsp.core.chunks import MAX_CHARS, MAX_FILE_CHUNKS, chunk_markdown, normalize_newlines

MAX_FILE_BYTES = 1024 * 1024  # a bigger file is skipped: one 9 MB line cost ~1 GB to chunk and embed
MAX_SOURCE_BYTES = 2048  # the store keeps a source path in a VARCHAR of this many bytes
SUFFIXES = (".md", ".markdown")
DELETED = "deleted (or not on this branch): the notes indexed from it leave the index"
INDEX_DIR = ".memsearch"  # a workspace's index and its state: a cache, rebuilt from the Markdown


def not_all_indexed(text: str, source: str) -> str:
    """Why the indexer would leave out part of `text` as the whole of the file `source` ("" when it indexes all of
    it): what a note file may hold before a note goes to the day's next file, so that every note written is found."""
    if len(text.encode("utf-8")) > MAX_FILE_BYTES:
        return f"it would grow past {MAX_FILE_BYTES // (1024 * 1024)} MiB"
    if len(chunk_markdown(text, source, max_chars=MAX_CHARS)) > MAX_FILE_CHUNKS:
        return f"it would have more than {MAX_FILE_CHUNKS} sections, the most indexed of one file"
    return ""


@dataclass(frozen=True)
class MemoryFile:
    source: str  # POSIX path relative to the workspace root
    path: Path  # absolute
    size: int = 0  # as the walk found it (0: unknown)
    mtime_ns: int = 0  # its change stamp (`changed_ns`), not the bare mtime


def changed_ns(info: os.stat_result) -> int:
    """A file's change stamp, compared with the one recorded when its text was read: the later of its mtime and ctime.
    A write that keeps the size and puts the mtime back (`cp -p`, `rsync -a`, `touch -r`, a restore) still moves
    the ctime, which no program can set, so the file is read again (its text's hash then decides what is embedded).
    A record written before this rule holds the bare mtime: a file whose ctime is later is read once more, no harm."""
    return max(info.st_mtime_ns, info.st_ctime_ns)


@dataclass(frozen=True)
class Skipped:
    source: str
    reason: str


class PathError(ValueError):
    """A path or URI points outside the workspace."""


class UnsafeFolder(PathError, PermissionError):
    """A folder this program keeps private data in is a link, not a folder, or belongs to another user
    (a PathError for the CLI's one-line message, an OSError for callers that handle file errors)."""


class NotWritable(OSError):
    """A folder a command must write to is read-only or not this user's to write: the message names it and what to
    do (an OSError still, for callers that handle file errors); nothing was changed there."""

    def __init__(self, folder: Path, cause: OSError) -> None:
        read_only = cause.errno == errno.EROFS
        self.folder = folder
        self.problem = f"{folder} is {'on a read-only file system' if read_only else 'not writable by you'}"
        self.fix = "mount it read-write, or fix its permissions" if read_only else "fix its permissions (or owner)"
        super().__init__(cause.errno, f"{self.problem}: {self.fix}, then run again")

    def __str__(self) -> str:
        return str(self.strerror)


def not_writable(exc: BaseException, folder: Path | None = None) -> NotWritable | None:
    """`exc` as NotWritable when it is a write refused (a read-only file system, no permission) in `folder` (default:
    the folder of the file it names); None for any other error."""
    if isinstance(exc, NotWritable):
        return exc
    if not isinstance(exc, OSError) or exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
        return None
    if folder is None and exc.filename is not None and os.path.isabs(name := os.fsdecode(exc.filename)):
        folder = Path(name).parent
    return NotWritable(folder, exc) if folder is not None else None


@contextlib.contextmanager
def writing(folder: Path) -> Iterator[None]:
    """Within it, a write refused under `folder` (a read-only file system, no permission) raises NotWritable naming
    `folder`, not the file (a temporary file, a lock) the system names."""
    try:
        yield
    except OSError as exc:
        refused = not_writable(exc, folder)
        if refused is None or refused is exc:
            raise
        raise refused from exc


def private_folder(path: Path) -> Path:
    """`path` as a private folder: created with mode 0700, or, when it exists, a real folder (lstat: never a
    link) owned by this user, tightened to 0700 with its files 0600 when others could read it. Anything
    else raises UnsafeFolder and nothing is written. The parent must exist."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        kind = "a file" if stat.S_ISREG(info.st_mode) else "a FIFO, socket or device"
        kind = f"a link to {os.readlink(path)}" if stat.S_ISLNK(info.st_mode) else kind
        raise UnsafeFolder(
            f"refusing {path}: it is {kind}, and it must be a real folder (not a link or a file: it holds the index "
            "and its statistics); it is left as it is, in case it is yours: move or remove it, then run again"
        )
    if info.st_uid != os.geteuid():
        raise UnsafeFolder(
            f"refusing {path}: it belongs to uid {info.st_uid}, not to you (uid {os.geteuid()}); "
            "remove it and run again"
        )
    if stat.S_IMODE(info.st_mode) & 0o077:
        tighten(path)
    return path


def tighten(folder: Path) -> None:
    """Make `folder` and everything under it owner-only (folders 0700, files 0600); links are not followed."""
    os.chmod(folder, 0o700, follow_symlinks=False)
    for parent, dirs, names in os.walk(folder):
        for name in dirs + names:
            path = os.path.join(parent, name)
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode) or info.st_uid != os.geteuid():
                continue
            os.chmod(path, 0o700 if stat.S_ISDIR(info.st_mode) else stat.S_IMODE(info.st_mode) & 0o700 or 0o600)


def excludes(config: Config) -> tuple[str, ...]:
    extra = () if config.compact.index_archive else (archive_folder(config),)
    return tuple(config.memory.exclude) + extra


def inside(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except (ValueError, OSError, RuntimeError):
        return False


def printable(name: str) -> str:
    """A file name as text that can be printed or sent as JSON (undecodable bytes become U+FFFD)."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def relative_source(root: Path, path: Path) -> str:
    """The workspace-relative POSIX source of `path`; PathError when it lies outside the root."""
    root = root.resolve()
    candidate = path if path.is_absolute() else root / path
    source = _lexical_source(root, candidate, path)
    if not inside(root, candidate):
        raise PathError(f"{path} resolves outside the workspace {root}")
    return source


def _lexical_source(root: Path, candidate: Path | str, named: Path | str) -> str:
    """The source of `candidate` (absolute; `root` resolved) by its name alone, links not followed."""
    path, top = os.path.normpath(candidate), str(root)
    prefix = top if top.endswith(os.sep) else top + os.sep
    if path == top:
        source = "."
    elif path.startswith(prefix):
        source = path[len(prefix) :].replace(os.sep, "/")
    else:
        raise PathError(f"{named} is outside the workspace {root}")
    try:
        size = len(source.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise PathError(f"{printable(source)}: the file name is not valid UTF-8; rename it") from exc
    if size > MAX_SOURCE_BYTES:
        raise PathError(f"{source[:60]}…: the path is longer than {MAX_SOURCE_BYTES} bytes")
    return source


def memory_folders(root: Path, config: Config) -> tuple[list[Path], list[Skipped]]:
    """The configured memory paths that may be walked: inside the workspace, never `/` or the home folder."""
    root = root.resolve()
    refused = {Path("/"), Path.home().resolve()}
    bases: list[Path] = []
    skipped: list[Skipped] = []
    for entry in config.memory.paths:
        base = root / os.path.expanduser(entry)  # (`~/notes` is the home folder's, not a folder named `~`)
        target = base.resolve()
        if target in refused:
            skipped.append(Skipped(entry, f"refusing to search {target} (the filesystem root or the home folder)"))
        elif not inside(root, base):
            skipped.append(Skipped(entry, f"memory path {target} is outside the workspace {root}"))
        else:
            bases.append(base)
    return bases, skipped


def is_memory_source(config: Config, source: str) -> bool:
    if not source.endswith(SUFFIXES):
        return False
    in_paths = any(
        source == p.strip("/") or source.startswith(p.strip("/") + "/") or p in (".", "") for p in config.memory.paths
    )
    return in_paths and not any(glob_match(p, source) for p in excludes(config))


def check_memory_paths(root: Path, config: Config, indexed: Collection[str] = ()) -> None:
    """ConfigError when none of `memory.paths` is in the workspace. Given the sources the index holds: only when they
    came from elsewhere (the setting changed to a path that is not there: a typo, `memroy`), as "every file is gone"
    would empty the index; when they came from the missing path (deleted, or not on this branch), the index follows
    the disk (`find_memory_files` says so once)."""
    paths = config.memory.paths
    if not paths or any((root / path).exists() for path in paths):
        return
    where = f"{CONFIG_FILE}, your user file, MEMSEARCH_MEMORY_PATHS or editor settings: `doctor` says which"
    if indexed and any(is_memory_source(config, source) for source in indexed):
        return
    if indexed:
        raise ConfigError(
            f"memory.paths: none of {', '.join(paths)} is in {root}, and the index holds notes from elsewhere (a "
            f"typo?); fix it where it is set ({where}) or create the folder (the index is left as it is)"
        )
    raise ConfigError(
        f"memory.paths: none of {', '.join(paths)} is in {root} (a typo, or a folder deleted or not on this branch); "
        f"fix the setting where it is set ({where}) or create the folder"
    )


def find_memory_files(
    root: Path, config: Config, indexed: Collection[str] = ()
) -> tuple[list[MemoryFile], list[Skipped]]:
    """Every Markdown file under the configured paths; symlinked folders are not followed. With `indexed` (the sources
    the index holds), none of the paths there is a ConfigError when those came from elsewhere (`check_memory_paths`).

    A folder's real path is checked once, and a plain file in a folder inside the workspace is inside too,
    so only links pay for resolving their path: a reconcile of thousands of notes walks them in a few
    system calls each, not a few dozen."""
    root = root.resolve()
    found: dict[str, MemoryFile] = {}
    bases, skipped = memory_folders(root, config)
    for base in bases:
        where = printable(os.path.relpath(base, root))
        if base.is_file() and not base.name.endswith(SUFFIXES):
            skipped.append(Skipped(where, "not a folder (memory.paths names folders and Markdown files)"))
            continue
        if base.is_file():
            candidates = [(str(base), False)]
        elif base.is_dir():
            candidates = []
            for folder, _, names in os.walk(base, onerror=lambda exc: skipped.append(_unlisted(root, exc))):
                here = inside(root, Path(folder))
                candidates += [(os.path.join(folder, name), here) for name in names if name.endswith(SUFFIXES)]
        else:  # (a path named that is not there: said, as its files, indexed before, leave the index)
            gone = any(source == where or source.startswith(f"{where}/") for source in indexed)
            skipped.append(Skipped(where, DELETED if gone else "not found (memory.paths names it)"))
            continue
        for name, folder_inside in candidates:  # (paths as strings: a Path per file costs more than its lstat)
            try:
                info: os.stat_result | None = os.lstat(name)
            except OSError:
                info = None
            plain = info is not None and not stat.S_ISLNK(info.st_mode)
            path = Path(name)
            try:
                source = _lexical_source(root, name, name) if plain and folder_inside else relative_source(root, path)
            except PathError as exc:
                shown = printable(Path(os.path.relpath(name, root)).as_posix())
                head, said, why = str(exc).partition(": ")  # ("memory/b\ufffd.md: the name is not valid UTF-8")
                skipped.append(Skipped(shown, why if said and shown.startswith(head.removesuffix("…")) else str(exc)))
                continue
            if not is_memory_source(config, source):
                continue
            if not (stat.S_ISREG(info.st_mode) if plain and info is not None else path.is_file()):
                skipped.append(
                    Skipped(source, f"not a regular file ({_kind(info) if plain else 'a broken or looping link?'})")
                )
                continue
            size, mtime = (info.st_size, changed_ns(info)) if plain and info is not None else (0, 0)
            found[source] = MemoryFile(source, path, size, mtime)
    if indexed and not found:
        check_memory_paths(root, config, indexed)
    return [found[s] for s in sorted(found)], skipped


def _kind(info: os.stat_result | None) -> str:
    """What a file that is not a regular file (nor a link) is, as a skip note says it."""
    mode = info.st_mode if info is not None else 0
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))
    return next((said for test, said in kinds if test(mode)), "a device or special file")


def _unlisted(root: Path, exc: OSError) -> Skipped:
    """A folder whose files cannot be listed: said, never taken for an empty folder without a word."""
    folder = printable(os.path.relpath(exc.filename or root, root))
    return Skipped(folder, f"its files cannot be listed ({exc.strerror or exc})")


def unsaved(path: Path, buffer: str) -> bool:
    """An editor's `buffer` of `path` holds changes that are not on disk (its next save would undo a write made
    there); a buffer only open, or just saved, is the file's own text."""
    disk = read_text(path)[0] if path.is_file() else None
    return disk is None or normalize_newlines(buffer) != normalize_newlines(disk)


BINARY_PROBE = 8192  # the bytes of a file that say whether it is binary
_CONTROLS = bytes(b for b in range(1, 32) if b not in b"\t\n\v\f\r\x1b")  # C0 controls but NUL that text never needs


def binary(head: bytes) -> bool:
    """Whether a file that begins with `head` is binary: a NUL in it with bytes that are not UTF-8 (a PNG, a zip,
    UTF-16 after its byte order mark), with another control byte (SOH, STX, ...: not tab, line ends, form feed, ESC),
    or with NULs a quarter of it or more (UTF-16 or UTF-32 text without one, zeros). A stray NUL in text is text: kept
    as the character U+0000, read as U+FFFD by the Markdown parser (CommonMark), written back as the byte it was."""
    if b"\x00" not in head:
        return False
    if head.count(0) * 4 >= len(head) or len(head.translate(None, _CONTROLS)) < len(head):
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)  # (a character cut at the end is no error)
    except UnicodeDecodeError:
        return True
    return False


def read_text(path: Path) -> tuple[str, str]:
    """(text, problem): invalid UTF-8 is replaced; binary (`binary`) and oversized files give '' and a reason.

    Only a regular file is read: a FIFO, device or socket gives '' and a reason without blocking.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "", "not a regular file"
        if info.st_size > MAX_FILE_BYTES:
            return "", f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB ({info.st_size} bytes)"
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        return "", f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB"
    if binary(data[:BINARY_PROBE]):
        return "", "binary file (contains NUL bytes)"
    try:
        return data.decode("utf-8-sig"), ""
    except UnicodeDecodeError as exc:
        text = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "replace")  # (no byte order mark, as utf-8-sig)
        return text, f"invalid UTF-8 at byte {exc.start}, decoded with replacement"


def read_memory_file(item: MemoryFile) -> tuple[str, Skipped | None]:
    """A memory file's text (`read_text`) and what was wrong with it: text '' for one that cannot be read (no right
    to read it, binary, too large), the text for one decoded with replacement; None when nothing was."""
    try:
        text, problem = read_text(item.path)
    except OSError as exc:
        return "", Skipped(item.source, f"cannot read: {exc}")
    return text, Skipped(item.source, problem) if problem else None


NO_FOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


# -- files inside a private folder: never through a link, at any level ------------------------
@contextlib.contextmanager
def folder_fd(path: str | Path, create: bool = False) -> Iterator[int]:
    """A descriptor of the folder `path` whose last part (and, with `create`, each part made) is no link: files are
    then opened relative to it (`dir_fd`), so a link put in its place later is never followed."""
    path = Path(path)
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | NO_FOLLOW)
    except OSError as exc:
        raise UnsafeFolder(f"refusing {path}: it must be a real folder, not a link ({exc.strerror})") from exc
    try:
        yield fd
    finally:
        os.close(fd)


def read_file(folder: int, name: str, limit: int = 1 << 34) -> bytes:
    """The bytes of the regular file `name` in the folder `folder` (a descriptor), never through a link."""
    fd = os.open(name, os.O_RDONLY | NO_FOLLOW, dir_fd=folder)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(f"{name} is not a regular file")
        return handle.read(limit)


def write_file(folder: int, name: str, data: bytes | memoryview) -> None:
    """Write `name` in `folder` (a descriptor) through a new temporary file (O_EXCL, never a link) renamed into
    place: a reader sees the old file or the new one, and nothing outside the folder is ever written."""
    temporary = f".{name}.{os.getpid()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary, dir_fd=folder)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_FOLLOW, 0o600, dir_fd=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=folder)
        raise


def remove_file(folder: int, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=folder)


def links_in(folder: Path, skip: str = "") -> list[str]:
    """Links (or things owned by another user) anywhere under `folder` but in its subfolder `skip`: a folder that holds
    one is not used."""
    found = []
    for parent, dirs, names in os.walk(folder):
        if parent == str(folder):
            dirs[:] = [d for d in dirs if d != skip]
        for name in dirs + names:
            info = os.lstat(os.path.join(parent, name))
            if stat.S_ISLNK(info.st_mode) or info.st_uid != os.geteuid():
                found.append(os.path.relpath(os.path.join(parent, name), folder))
    return found
