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
import functools
import inspect
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from memsearch_lsp.core.store.memory_use import arrow_without_pandas
from memsearch_lsp.core.store.memory_use import release_unused_memory as release_unused_memory
from memsearch_lsp.core.store.memory_use import steady_mmap_threshold as steady_mmap_threshold
from memsearch_lsp.core.store.schema import quote
from memsearch_lsp.core.store.schema import sparse_arrays as sparse_arrays

log = logging.getLogger(__name__)

#: The Milvus Lite releases this module was written and tested against (pyproject pins the same range). It
#: calls private parts of the engine (each marked "Milvus Lite internals" below); a release that moves one
#: must stop with EngineDrift, never be taken for a corrupt index.
PACKAGE = "milvus-lite"
SUPPORTED = ">=3.2,<3.3"
_SUPPORTED_MINOR = (3, 2)

_lock = threading.Lock()
_opened: dict[str, Any] = {}  # data folder -> MilvusLite
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
        return cls(f"{PACKAGE} {engine_version()} is installed, but memsearch-lsp supports {PACKAGE}{SUPPORTED} "
                   f"(the engine failed with {type(exc).__name__}: {exc}); the index is left as it is: install a "
                   f"supported version with `pip install '{PACKAGE}{SUPPORTED}'`")


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
        log.warning("%s %s is installed; memsearch-lsp is tested with %s%s (pip install '%s%s')", PACKAGE,
                    version, PACKAGE, SUPPORTED, PACKAGE, SUPPORTED)


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
    kinds: tuple[type[BaseException], ...] = (ManifestCorruptedError, WALCorruptedError, SchemaValidationError,
                                              json.JSONDecodeError, UnicodeDecodeError, EOFError)
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


def open_folder(data_dir: str | Path) -> Any:
    """The Milvus Lite engine of `data_dir`, opened (taking its lock) on first use; a folder already
    opened by this process is shared."""
    folder = os.path.abspath(data_dir)
    with _lock:
        if folder not in _opened:
            arrow_without_pandas()
            _columnar_flush()
            from milvus_lite.db import MilvusLite

            logging.getLogger("milvus_lite").setLevel(logging.CRITICAL)  # we report errors ourselves, once
            _opened[folder] = MilvusLite(folder)  # raises DataDirLockedError when another process holds it
            log.debug("Milvus Lite opened %s in process", folder)
        return _opened[folder]


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
        log.warning("%s %s: the column-wise memtable flush is off (%s: %s); Milvus Lite's own builder is used, "
                    "with a higher memory peak while indexing (supported: %s%s)", PACKAGE, engine_version(),
                    type(exc).__name__, exc, PACKAGE, SUPPORTED)


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


def release(data_dir: str | Path) -> None:
    """Close the engine of `data_dir`, releasing the folder's lock."""
    with _lock:
        db = _opened.pop(os.path.abspath(data_dir), None)
    if db is not None:
        db.close()


def opened() -> list[str]:
    """The data folders this process has open (for status and tests)."""
    with _lock:
        return list(_opened)


def engine(data_dir: str | Path, collection: str) -> Any:
    """The in-process Milvus Lite collection of a folder this process has open."""
    with _lock:
        db = _opened.get(os.path.abspath(data_dir))
    if db is None:
        raise RuntimeError(f"{data_dir} is not open in this process")
    return table(db, collection)


def table(db: Any, collection: str) -> Any:
    """`db`'s one Collection object for `collection`. Unlocked, two threads asking first could each build
    one; the engine would keep the later, unloaded one while the other was loaded, and searches then fail
    with "released"."""
    with _tables:
        return db.get_collection(collection)


class _Schema:
    """`MilvusClient.create_schema()`'s builder, producing Milvus Lite's own schema."""

    def __init__(self, enable_dynamic_field: bool = False):
        self.fields: list[Any] = []
        self.enable_dynamic_field = enable_dynamic_field

    def add_field(self, name: str, dtype: Any, is_primary: bool = False, max_length: int | None = None,
                  dim: int | None = None) -> None:
        from milvus_lite.schema.types import FieldSchema

        self.fields.append(FieldSchema(name=name, dtype=dtype, is_primary=is_primary, max_length=max_length,
                                       dim=dim))

    def build(self) -> Any:
        from milvus_lite.schema.types import CollectionSchema

        return CollectionSchema(fields=self.fields, enable_dynamic_field=self.enable_dynamic_field)


class _Indexes:
    """`MilvusClient.prepare_index_params()`'s list of index definitions."""

    def __init__(self) -> None:
        self.specs: list[tuple[str, dict[str, Any]]] = []

    def add_index(self, field_name: str, index_type: str, metric_type: str, params: dict[str, Any] | None = None
                  ) -> None:
        self.specs.append((field_name, {"index_type": index_type, "metric_type": metric_type,
                                        "params": dict(params or {})}))


C = TypeVar("C", bound=type)


def _engine_calls(cls: C) -> C:
    """Every public method of `cls` turns an error that means drift (lite.drift: AttributeError, TypeError,
    ImportError from a moved internal) into EngineDrift, naming milvus-lite, its version and SUPPORTED."""
    for name, value in list(vars(cls).items()):
        if name.startswith("__") or not inspect.isfunction(value):
            continue

        def guarded(*args: Any, _call: Any = value, **kwargs: Any) -> Any:
            try:
                return _call(*args, **kwargs)
            except Exception as exc:
                if drift(exc):
                    raise EngineDrift.of(exc) from exc
                raise

        functools.update_wrapper(guarded, value)
        setattr(cls, name, guarded)
    return cls


@_engine_calls
class LiteClient:
    """The calls `MilvusStore` makes on a pymilvus `MilvusClient`, with the same names, arguments and
    results, answered by the Milvus Lite engine of a local folder in this process (as Milvus Lite's gRPC
    servicer would answer them)."""

    def __init__(self, data_dir: str | Path):
        self.db = open_folder(data_dir)

    @property
    def DataType(self) -> Any:  # pymilvus's name: the store builds either schema alike
        from milvus_lite.schema.types import DataType

        return DataType

    def table(self, name: str) -> Any:
        """The engine's collection `name`, read directly (this client's engine, never one opened later)."""
        return table(self.db, name)

    def generation(self, name: str) -> int | None:
        """Where the engine's write sequence of `name` stands: every write advances it, and an opening restores
        it from the manifest and the WAL, so it tells whether the collection changed since it was read (Milvus
        Lite internals: `Collection._next_seq`; None where a release moved it: nothing saved is then trusted)."""
        value = getattr(self.table(name), "_next_seq", None)
        return value if isinstance(value, int) else None

    # -- collections and indexes -------------------------------------------------------------
    def has_collection(self, name: str) -> bool:
        return bool(self.db.has_collection(name))

    def describe_collection(self, name: str) -> dict[str, Any]:
        schema = self.table(name).schema
        return {"collection_name": name, "functions": list(schema.functions),
                "fields": [{"name": f.name, "params": {"dim": f.dim} if f.dim else {}} for f in schema.fields]}

    def create_schema(self, auto_id: bool = False, enable_dynamic_field: bool = False) -> _Schema:
        return _Schema(enable_dynamic_field)

    def prepare_index_params(self) -> _Indexes:
        return _Indexes()

    def create_collection(self, name: str, schema: _Schema, index_params: _Indexes | None = None) -> None:
        self.db.create_collection(name, schema.build())
        if index_params is not None:
            self.create_index(name, index_params)
            self.load_collection(name)

    def drop_collection(self, name: str) -> None:
        self.db.drop_collection(name)

    def create_index(self, name: str, index_params: _Indexes) -> None:
        col = self.table(name)
        for field, spec in index_params.specs:
            col.create_index(field, spec)

    def describe_index(self, name: str, index_name: str) -> dict[str, Any]:
        spec = self.table(name).get_index_info(index_name)  # public since 3.0 (was `_index_specs` here)
        if spec is None:
            raise LookupError(f"no index on field {index_name!r} of collection {name!r}")
        return {"field_name": spec["field_name"], "index_type": spec["index_type"],
                "metric_type": spec["metric_type"]}

    def drop_index(self, name: str, index_name: str) -> None:
        self.table(name).drop_index(index_name)

    def load_collection(self, name: str) -> None:
        self.table(name).load()

    def release_collection(self, name: str) -> None:
        self.table(name).release()

    def flush(self, name: str) -> None:
        self.table(name).flush()

    def close(self) -> None:
        """The engine stays open until `release` (the store's close calls both)."""

    # -- rows --------------------------------------------------------------------------------
    def upsert(self, name: str, data: Sequence[dict[str, Any]]) -> None:
        self.table(name).upsert(list(data))

    def delete(self, name: str, ids: Sequence[str] | None = None, filter: str = "") -> None:
        col = self.table(name)
        if ids is None:  # Collection.delete takes keys only: the keys the filter matches, as the servicer does
            ids = [row[col.pk_field] for row in col.query(filter, output_fields=[col.pk_field])]
        if ids:
            col.delete(list(ids))

    def get(self, name: str, ids: Sequence[str], output_fields: Sequence[str] | None = None) -> list[dict[str, Any]]:
        return list(self.table(name).get(list(ids), output_fields=list(output_fields or []) or None))

    def query(self, name: str, filter: str = "", output_fields: Sequence[str] | None = None,
              limit: int | None = None) -> list[dict[str, Any]]:
        col = self.table(name)
        fields = list(output_fields or [])
        if "count(*)" in fields:
            return [{"count(*)": len(col.query(filter)) if filter else int(col.num_entities)}]
        return list(col.query(filter or None, output_fields=fields or None, limit=limit))

    def query_iterator(self, name: str, batch_size: int = 1000, filter: str = "",
                       output_fields: Sequence[str] | None = None) -> _Pages:
        return _Pages(self.table(name), batch_size, filter, list(output_fields or []))

    def search(self, name: str, data: Sequence[Any], anns_field: str, limit: int, filter: str = "",
               output_fields: Sequence[str] | None = None) -> list[list[dict[str, Any]]]:
        col = self.table(name)
        return list(col.search(query_vectors=list(data), top_k=limit, anns_field=anns_field,
                               metric_type=col.resolve_search_metric(anns_field, None), expr=filter or None,
                               output_fields=list(output_fields or [])))


@_engine_calls
class _Pages:
    """`query_iterator`'s pages, in primary-key order with a key cursor (as pymilvus pages a server). Our own
    pager rather than the servicer's iterator: milvus-io/milvus-lite#366 (its query iterator returned
    duplicated rows and dropped rows, fixed in 3.2.1); `order_by_pk` is Collection.query's own argument."""

    def __init__(self, col: Any, batch_size: int, expr: str, fields: list[str]):
        self.col, self.batch_size, self.expr, self.fields = col, batch_size, expr, fields
        self.last: str | None = None
        self.done = False

    def next(self) -> list[dict[str, Any]]:
        if self.done:
            return []
        pk = self.col.pk_field
        parts = [f"({self.expr})"] if self.expr else []
        if self.last is not None:
            parts.append(f"{pk} > {quote(self.last)}")
        page = list(self.col.query(" and ".join(parts) or None, output_fields=[*self.fields, pk],
                                   limit=self.batch_size, order_by_pk=True))
        if len(page) < self.batch_size:
            self.done = True
        if page:
            self.last = str(page[-1][pk])
        return page

    def close(self) -> None:
        self.done = True


@atexit.register
def _release_all() -> None:
    for folder in opened():
        try:
            release(folder)
        except Exception as exc:  # pragma: no cover - best effort at exit
            log.debug("closing %s at exit: %s", folder, exc)
