"""Milvus Lite, the local store's durable store of record, through its public Python API (`milvus_lite.MilvusLite`),
in the engine's own process (core/store/writer.py): opened to write, and to read every row when the read model must
be rebuilt. Its collections carry no search index: every search is the read model's. A release of milvus-lite that
moved what this module calls stops with EngineDrift (naming the package, its version and the supported range); an
engine that raises on damaged files is told apart from a bug (`corrupt`)."""

from __future__ import annotations

import functools
import gc
import logging
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from memsearch_lsp.core.filewrite import no_room
from memsearch_lsp.core.memory_use import (
    arrow_system_pool,
    arrow_without_pandas,
    few_heap_arenas,
    release_unused_memory,
    steady_mmap_threshold,
)
from memsearch_lsp.core.store.folder import StoreError
from memsearch_lsp.core.store.schema import CHUNK_FIELDS, FIELDS, WINDOW_FIELDS

log = logging.getLogger(__name__)

PACKAGE = "milvus-lite"
SUPPORTED = ">=3.2,<3.3"  # the releases this module was tested with (pyproject pins the same range)
PAGE = 1024  # rows per read when the read model is rebuilt from the engine


class EngineDrift(RuntimeError):
    """The installed Milvus Lite does not behave as this module expects: the index on disk is fine and is left as
    it is; the fix is a supported milvus-lite."""

    @classmethod
    def of(cls, exc: BaseException) -> EngineDrift:
        if isinstance(exc, EngineDrift):
            return exc
        return cls(
            f"{PACKAGE} {engine_version()} is installed, but memsearch-lsp supports {PACKAGE}{SUPPORTED} "
            f"(the engine failed with {type(exc).__name__}: {exc}); the index is left as it is: install a "
            f"supported version with `pip install '{PACKAGE}{SUPPORTED}'`"
        )


class Incompatible(RuntimeError):
    """The folder holds collections of another schema (another version) or dimension (a model switch): no damage."""


def engine_version() -> str:
    """The installed milvus-lite distribution's version ("unknown" when its metadata is missing)."""
    from importlib import metadata

    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return "unknown"


def supported(version: str) -> bool:
    return version.split(".")[:2] == ["3", "2"]  # SUPPORTED


@functools.cache
def check_engine() -> None:
    """Once per process: a warning when the installed Milvus Lite is outside SUPPORTED."""
    version = engine_version()
    if not supported(version):
        log.warning("%s %s is installed; memsearch-lsp is tested with %s%s", PACKAGE, version, PACKAGE, SUPPORTED)


def drift(exc: BaseException) -> bool:
    """An error that says the engine's code changed (a renamed attribute, another signature, a moved module)."""
    return isinstance(exc, EngineDrift | AttributeError | TypeError | ImportError | NameError)


def explained(uri: str, exc: Exception) -> Exception:
    """A writer's failure (of the index at `uri`) as the user should read it: drift names the engine's version; damaged
    files and our own errors pass; anything else is a bug to report, never taken for damage."""
    if drift(exc) or isinstance(exc, StoreError):
        return EngineDrift.of(exc) if drift(exc) else exc
    said = str(exc) if type(exc) is RuntimeError else f"{type(exc).__name__}: {exc}"  # (the engine's process said)
    if cause := no_room(exc):  # (no bug: free some space)
        return StoreError(f"writing the index at {uri} failed: {cause} ({said}); it is left as it is")
    return StoreError(f"writing the index at {uri} failed ({said}); it is left as it is: please report this")


def corrupt(exc: BaseException) -> bool:
    """An error that recognisably comes from damaged files: Milvus Lite's own corruption errors, a manifest or WAL
    that is not JSON, Arrow or Parquet data that does not parse, truncated files, a file of its folder missing or
    in the way (a collection's folder without its schema)."""
    import json
    import sys

    import milvus_lite as ml

    arrow = sys.modules.get("pyarrow.lib")
    kinds = (ml.ManifestCorruptedError, ml.WALCorruptedError, ml.SchemaValidationError, json.JSONDecodeError, EOFError)
    missing = (FileNotFoundError, FileExistsError, NotADirectoryError, IsADirectoryError)
    return not drift(exc) and isinstance(
        exc, (*kinds, *missing, UnicodeDecodeError, *([arrow.ArrowInvalid] if arrow else []))
    )


def _locked(folder: str, wait_s: float = 15.0) -> Any:
    """MilvusLite(folder); while its own lock is still held by the engine's process of the folder's previous owner
    (which leaves as soon as that owner has gone: the folder's lock is ours now), it waits."""
    from milvus_lite import DataDirLockedError, MilvusLite

    deadline = time.monotonic() + wait_s
    while True:
        try:
            return MilvusLite(folder)
        except DataDirLockedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


class Engine:
    """The chunk and window collections of one local index folder, opened in this process."""

    def __init__(self, folder: str | Path, collections: tuple[str, str], dim: int):
        self.folder, self.collections, self.dim = str(folder), collections, dim
        self._db: Any = None

    @property
    def opened(self) -> bool:
        return self._db is not None

    def open(self) -> bool:
        """Open the folder's engine and its collections (created when missing: True). Incompatible when they are of
        another schema or dimension; the engine's errors otherwise pass (see `corrupt`, `drift`)."""
        if self._db is not None:
            return False
        check_engine()
        arrow_system_pool()
        arrow_without_pandas()
        few_heap_arenas()
        steady_mmap_threshold()
        logging.getLogger("milvus_lite").setLevel(logging.CRITICAL)  # we report errors ourselves, once
        try:
            self._db = _locked(self.folder)
            created = False
            for name, fields in zip(self.collections, (CHUNK_FIELDS, WINDOW_FIELDS), strict=True):
                created |= self._ensure(name, fields, 64 if name == self.collections[0] else 96)
            return created
        except BaseException:
            self.close()
            raise

    def _ensure(self, name: str, fields: Sequence[tuple[str, str, int]], key_length: int) -> bool:
        from milvus_lite import CollectionSchema, DataType, FieldSchema

        db = self._db
        if not db.has_collection(name):
            columns = [("id", "VARCHAR", key_length), *fields]
            built = [FieldSchema(n, DataType[k], max_length=length or None) for n, k, length in columns]
            built[0].is_primary = True
            built.append(FieldSchema("dense", DataType.FLOAT_VECTOR, dim=self.dim))
            db.create_collection(name, CollectionSchema(fields=built))
            return True
        col = db.get_collection(name)
        names = {f.name for f in col.schema.fields}
        dense = next((f.dim for f in col.schema.fields if f.name == "dense"), None)
        expected = FIELDS if name == self.collections[0] else {"id", "dense", *(f for f, _, _ in fields)}
        if names != expected or col.schema.functions:
            raise Incompatible("it was built by another version of memsearch-lsp")
        if dense != self.dim:
            raise Incompatible(f"it was built for {dense}-d vectors and the model now gives {self.dim}-d")
        while col.has_index():  # search indexes of earlier versions: every search is the read model's now
            col.release()
            col.drop_index()
        return False

    def _table(self, name: str) -> Any:
        return self._db.get_collection(name)

    # -- writes --------------------------------------------------------------------------------
    def write(
        self,
        upserts: Sequence[dict[str, Any]],
        windows: Sequence[dict[str, Any]],
        deletes: Sequence[str],
        window_deletes: Sequence[str],
    ) -> None:
        """Upsert chunk and window rows (vectors as lists), then delete rows by id (in that order), as the indexer
        wrote them."""
        chunks, extra = (self._table(n) for n in self.collections)
        for table, rows in ((chunks, upserts), (extra, windows)):
            for start in range(0, len(rows), 500):
                table.upsert(list(rows[start : start + 500]))
        for table, ids in ((chunks, deletes), (extra, window_deletes)):
            if ids:
                table.delete(list(ids))

    def drop(self) -> None:
        """Recreate both collections empty."""
        for name in self.collections:
            if self._db.has_collection(name):
                self._db.drop_collection(name)
        self._db.close()
        self._db = None
        self.open()

    # -- reads (a rebuild of the read model) ---------------------------------------------------
    def rows(self, windows: bool = False) -> Iterator[dict[str, Any]]:
        """Every row of the chunk (or window) collection, a page at a time by primary key."""
        table = self._table(self.collections[1 if windows else 0])
        ids = [r["id"] for r in table.query(None, output_fields=["id"])]
        for start in range(0, len(ids), PAGE):
            yield from table.get(ids[start : start + PAGE])
            release_unused_memory()

    def rebuild(self, identity: dict[str, Any]) -> None:
        """Read every row into a read model and save it beside the index (core/store/saved.py)."""
        from memsearch_lsp.core.store import saved
        from memsearch_lsp.core.store.readmodel import ReadModel

        model = ReadModel(self.dim)
        for row in self.rows():
            model.put_chunk(row)
        for row in self.rows(windows=True):
            model.put_window(row["id"], row["chunk_id"], row["source"], row["dense"])
        saved.save(model, self.folder, identity)

    def close(self) -> None:
        """Close the engine and hand its memory back: its objects refer to one another, so they are collected now,
        and the C heap and Arrow's pool are trimmed (~120 MB at 10k chunks otherwise stays with the process)."""
        db, self._db = self._db, None
        if db is not None:
            db.close()
            del db
            gc.collect()
            release_unused_memory()


def engine_files(folder: str | Path) -> bool:
    """The folder holds an engine's collections (written at least once)."""
    return os.path.isdir(os.path.join(str(folder), "collections"))
