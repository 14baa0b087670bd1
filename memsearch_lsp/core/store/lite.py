"""A local Milvus Lite folder opened in this process: no listener of any kind, no other user.

Milvus Lite 3 is a Python engine; pymilvus can only reach it through a gRPC server, which for a `.db`
URI it would start on a loopback TCP port that every local user can connect to. The local store
instead opens the engine here and calls it directly through `LiteClient`, the part of pymilvus's
`MilvusClient` interface the store uses, answered as Milvus Lite's own gRPC servicer answers it. So a
local index has no socket at all, and a process that uses one imports neither pymilvus nor gRPC
(about 60 MB and 0.6-1.3 s per process); a Milvus server reached by URI still goes through pymilvus.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memsearch_lsp.core.store.memory_use import arrow_system_pool, arrow_without_pandas, few_heap_arenas
from memsearch_lsp.core.store.memory_use import release_unused_memory as release_unused_memory
from memsearch_lsp.core.store.memory_use import steady_mmap_threshold as steady_mmap_threshold
from memsearch_lsp.core.store.schema import sparse_arrays as sparse_arrays

log = logging.getLogger(__name__)

#: The Milvus Lite releases this module was written and tested against (pyproject pins the same range). It
#: calls private parts of the engine (each marked "Milvus Lite internals" below); a release that moves one
#: must stop with EngineDrift, never be taken for a corrupt index.
PACKAGE = "milvus-lite"
SUPPORTED = ">=3.2,<3.3"
_SUPPORTED_MINOR = (3, 2)

_lock = threading.Lock()
_held: dict[str, _Held] = {}  # data folder -> its lock and engine
# MilvusLite.get_collection caches without a lock: two first calls make two objects (no upstream issue found in
# milvus-io/milvus-lite, December 2026; its gRPC servicer serialises calls, so only in-process use meets it).
_tables = threading.Lock()


class EngineDrift(RuntimeError):
    """The installed Milvus Lite does not behave as this module expects (an attribute, signature or module
    it uses moved): the index on disk is fine and is left as it is; the fix is a supported milvus-lite."""

    @classmethod
    def of(cls, exc: BaseException) -> EngineDrift:
        if isinstance(exc, EngineDrift):
            return exc
        return cls(
            f"{PACKAGE} {engine_version()} is installed, but memsearch-lsp supports {PACKAGE}{SUPPORTED} "
            f"(the engine failed with {type(exc).__name__}: {exc}); the index is left as it is: install a "
            f"supported version with `pip install '{PACKAGE}{SUPPORTED}'`"
        )


def engine_version() -> str:
    """The installed milvus-lite distribution's version ("unknown" when its metadata is missing)."""
    from importlib import metadata

    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return "unknown"


def supported(version: str) -> bool:
    """True for a release in SUPPORTED (3.2.x)."""
    parts = version.split(".")
    try:
        return (int(parts[0]), int(parts[1])) == _SUPPORTED_MINOR
    except (IndexError, ValueError):
        return False


@functools.cache
def check_engine() -> None:
    """Once per process: a warning when the installed Milvus Lite is outside SUPPORTED (it may still work;
    a call that then fails on a moved internal raises EngineDrift)."""
    version = engine_version()
    if not supported(version):
        log.warning(
            "%s %s is installed; memsearch-lsp is tested with %s%s (pip install '%s%s')",
            PACKAGE,
            version,
            PACKAGE,
            SUPPORTED,
            PACKAGE,
            SUPPORTED,
        )


def drift(exc: BaseException) -> bool:
    """An error that says the engine's code changed (a renamed attribute, another signature, a moved module),
    not that the data is bad."""
    return isinstance(exc, EngineDrift | AttributeError | TypeError | ImportError | NameError)


def corrupt(exc: BaseException) -> bool:
    """An error that recognisably comes from damaged files: Milvus Lite's own corruption errors, a manifest
    or WAL that is not JSON, Arrow or Parquet data that does not parse, truncated files."""
    import json

    if drift(exc):
        return False
    try:
        from milvus_lite.exceptions import ManifestCorruptedError, SchemaValidationError, WALCorruptedError
    except ImportError:  # pragma: no cover - the engine's own errors moved: drift, reported elsewhere
        return False
    kinds: tuple[type[BaseException], ...] = (
        ManifestCorruptedError,
        WALCorruptedError,
        SchemaValidationError,
        json.JSONDecodeError,
        UnicodeDecodeError,
        EOFError,
    )
    if isinstance(exc, kinds + _arrow_errors()):
        return True
    return isinstance(exc, ValueError) and _raised_in(exc, "numpy")  # an index file np.load cannot read


def _raised_in(exc: BaseException, package: str) -> bool:
    """The innermost frame of `exc`'s traceback is in `package`'s code."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and f"{os.sep}{package}{os.sep}" in tb.tb_frame.f_code.co_filename


def _arrow_errors() -> tuple[type[BaseException], ...]:
    import sys

    lib = sys.modules.get("pyarrow.lib")
    return (lib.ArrowInvalid,) if lib is not None else ()  # not ArrowIOError: it is OSError itself


class FolderHeld(RuntimeError):
    """Another process holds the folder's lock (its engine, or a memsearch-lsp process that holds it)."""


@dataclass
class _Held:
    """A local folder this process holds: the lock on its `LOCK` file, and its engine once opened."""

    fd: int
    db: Any = None
    lent: bool = False  # lent to a child process of ours (`lend`): no engine opens here meanwhile
    adopted: bool = False  # the descriptor came from our parent (`adopt`): closed, never unlocked, by us


def hold(data_dir: str | Path) -> None:
    """Take the lock of `data_dir` (Milvus Lite's own advisory `flock` on `LOCK`, so a Milvus Lite opened
    by any other process is kept out, and this process is kept out while another holds it: FolderHeld)
    without opening its engine; holding it already is fine. The engine opens later, on first need
    (`open_folder`), under this same lock: a search answered from the saved mirror never loads it."""
    import fcntl

    folder = os.path.abspath(data_dir)
    with _lock:
        if folder in _held:
            return
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd = os.open(os.path.join(folder, "LOCK"), os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            raise FolderHeld(f"another process holds the index at {folder}") from exc
        _held[folder] = _Held(fd)


def open_folder(data_dir: str | Path) -> Any:
    """The Milvus Lite engine of `data_dir`, opened on first use under the lock this process holds (taken
    first when it is not held yet); a folder already opened by this process is shared."""
    folder = os.path.abspath(data_dir)
    hold(folder)
    with _lock:
        held = _held[folder]
        if held.lent:
            raise FolderHeld(f"the index at {folder} is lent to a child process")
        if held.db is None:
            arrow_system_pool()
            arrow_without_pandas()
            few_heap_arenas()
            _columnar_flush()
            logging.getLogger("milvus_lite").setLevel(logging.CRITICAL)  # we report errors ourselves, once
            held.db = _engine_class()(folder)
            log.debug("Milvus Lite opened %s in process", folder)
        return held.db


@functools.cache
def _engine_class() -> type:
    """MilvusLite, taking no lock of its own: the folder's lock is held by this module (`hold`) from before the
    engine opens until after it closes, so the engine can open lazily and the saved search state can be
    checked between its close and the lock's release without another process writing meanwhile.

    Milvus Lite internals: `MilvusLite._acquire_lock` (called by `__init__`) stores its descriptor in `_lock_fd`,
    and `_release_lock` does nothing while that is None (tests/integration/test_lite_contract.py)."""
    from milvus_lite.db import MilvusLite

    if not callable(getattr(MilvusLite, "_acquire_lock", None)):
        raise EngineDrift(
            f"{PACKAGE} {engine_version()}: MilvusLite._acquire_lock is gone; memsearch-lsp supports "
            f"{PACKAGE}{SUPPORTED} (pip install '{PACKAGE}{SUPPORTED}')"
        )

    class HeldLite(MilvusLite):
        def _acquire_lock(self) -> None:
            self._lock_fd = None  # held by memsearch-lsp: nothing of the engine's own to take or release

    return HeldLite


def _columnar_flush() -> None:
    """Make Milvus Lite's memtable flush build its table column-wise in Arrow. Milvus Lite 3.2 builds it cell
    by cell through Python objects (a dense vector becomes a list of Python floats), so flushing 10k rows
    of 384-d vectors held ~4M transient objects, ~150 MB: the peak of a full index. The same rows are taken
    from the same batches, in the same order, into the same schema; anything unexpected (another layout of
    the memtable) falls back to Milvus Lite's own builder, logged once.

    Milvus Lite internals: `MemTable._build_data_table`, `._insert_batches`, `._data_schema`. No upstream
    issue found (milvus-io/milvus-lite issues searched for the memtable flush's memory, December 2026); an
    optimisation only, so a release without them keeps its own builder (logged once), never an error."""
    try:
        from milvus_lite.storage.memtable import MemTable
    except ImportError as exc:
        _fallback_once(exc)
        return

    own = MemTable.__dict__.get("_build_data_table")
    if own is None:
        _fallback_once(AttributeError("MemTable._build_data_table is gone"))
        return
    if getattr(own, "columnar", False):
        return

    def build(self: Any, rows: list[tuple[int, int]]) -> Any:
        try:
            return columnar_table(self._insert_batches, rows, self._data_schema)
        except Exception as exc:  # an engine version this was not written for: its own way
            _fallback_once(exc)
            return own(self, rows)

    build.columnar = True  # type: ignore[attr-defined]
    build.original = own  # type: ignore[attr-defined]
    MemTable._build_data_table = build


def _fallback_once(exc: BaseException) -> None:
    """Say once per process that the column-wise flush is off (the index still works, with a higher peak)."""
    _fallback_logged.append(f"{type(exc).__name__}: {exc}")
    if len(_fallback_logged) == 1:
        log.warning(
            "%s %s: the column-wise memtable flush is off (%s: %s); Milvus Lite's own builder is used, "
            "with a higher memory peak while indexing (supported: %s%s)",
            PACKAGE,
            engine_version(),
            type(exc).__name__,
            exc,
            PACKAGE,
            SUPPORTED,
        )


_fallback_logged: list[str] = []


def columnar_table(batches: Sequence[Any], rows: Sequence[tuple[int, int]], schema: Any) -> Any:
    """The rows `(batch index, row index)` of `batches` as one Arrow table of `schema`, in that order."""
    import pyarrow as pa

    offsets = [0]
    for batch in batches:
        offsets.append(offsets[-1] + batch.num_rows)
    take = pa.array([offsets[b] + r for b, r in rows], type=pa.int64())
    whole = pa.Table.from_batches([batch.select(schema.names) for batch in batches])
    return whole.take(take).cast(schema)


def lend(data_dir: str | Path) -> int:
    """Lend the held folder to a child process: the descriptor whose lock it inherits (`subprocess.Popen(
    pass_fds=...)`, then `adopt` there), so that no other process can take the folder between the two. Until
    `take_back`, no engine opens here and `release` only closes the engine, keeping the lock."""
    with _lock:
        held = _held[os.path.abspath(data_dir)]
        held.lent = True
        return held.fd


def take_back(data_dir: str | Path) -> None:
    """The child a folder was lent to is done (or gone): the engine may open here again."""
    with _lock:
        held = _held.get(os.path.abspath(data_dir))
        if held is not None:
            held.lent = False


def adopt(data_dir: str | Path, fd: int) -> None:
    """In a child process: hold `data_dir` through `fd`, the descriptor our parent lent (`lend`), whose lock it
    keeps; releasing it closes the descriptor without unlocking the parent's lock."""
    with _lock:
        _held[os.path.abspath(data_dir)] = _Held(fd, adopted=True)


def release(data_dir: str | Path, before_unlock: Callable[[], None] | None = None) -> None:
    """Close the engine of `data_dir` (if it was opened), call `before_unlock` while the lock is still held
    (the folder is then quiet: no engine of this process or any other writes to it), then release the lock."""
    folder = os.path.abspath(data_dir)
    with _lock:
        held = _held.get(folder)
        if held is not None and not held.lent:
            del _held[folder]
    if held is None:
        return
    if held.lent:  # to a child process: the lock stays
        _close(held, before_unlock)
        return
    try:
        _close(held, before_unlock)
    finally:
        if held.adopted:
            with contextlib.suppress(OSError):
                os.close(held.fd)
        else:
            _unlock(held.fd)


def close_engine(data_dir: str | Path, then: Callable[[], None] | None = None) -> None:
    """Close the engine of `data_dir` and call `then` (the folder quiet), keeping the folder held: its memory
    (every loaded segment) goes, and the engine opens again on the next `open_folder`."""
    with _lock:
        held = _held.get(os.path.abspath(data_dir))
    if held is not None:
        _close(held, then)


def _close(held: _Held, then: Callable[[], None] | None) -> None:
    db, held.db = held.db, None
    if db is not None:
        db.close()
    if then is not None:
        then()


def _unlock(fd: int) -> None:
    import fcntl

    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)
    with contextlib.suppress(OSError):
        os.close(fd)


def opened() -> list[str]:
    """The data folders this process holds (for status and tests), their engines opened or not."""
    with _lock:
        return list(_held)


def engine_open(data_dir: str | Path) -> bool:
    """True when this process has opened the engine of `data_dir` (not only taken its lock)."""
    with _lock:
        held = _held.get(os.path.abspath(data_dir))
    return held is not None and held.db is not None


def engine(data_dir: str | Path, collection: str) -> Any:
    """The in-process Milvus Lite collection of a folder this process has open."""
    with _lock:
        held = _held.get(os.path.abspath(data_dir))
    if held is None or held.db is None:
        raise RuntimeError(f"{data_dir} is not open in this process")
    return table(held.db, collection)


def schema_types() -> Any:
    """Milvus Lite's schema module (FieldSchema, CollectionSchema, DataType), for LiteClient's schema builder."""
    from milvus_lite.schema import types

    return types


def table(db: Any, collection: str) -> Any:
    """`db`'s one Collection object for `collection`. Unlocked, two threads asking first could each build
    one; the engine would keep the later, unloaded one while the other was loaded, and searches then fail
    with "released"."""
    with _tables:
        return db.get_collection(collection)


@atexit.register
def _release_all() -> None:
    for folder in opened():
        try:
            release(folder)
        except Exception as exc:  # pragma: no cover - best effort at exit
            log.debug("closing %s at exit: %s", folder, exc)
