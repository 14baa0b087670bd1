"""The store's clients: `LiteClient`, the calls `MilvusStore` makes on a pymilvus `MilvusClient` answered by the
Milvus Lite engine of a local folder in this process (core/store/lite.py holds the folder and opens the engine), and
`connect`, which gives that or a pymilvus client (its only import) for a server URI."""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from memsearch_lsp.core.store.lite import EngineDrift, drift, open_folder, schema_types, table
from memsearch_lsp.core.store.schema import quote


class _Schema:
    """`MilvusClient.create_schema()`'s builder, producing Milvus Lite's own schema."""

    def __init__(self, enable_dynamic_field: bool = False):
        self.fields: list[Any] = []
        self.enable_dynamic_field = enable_dynamic_field

    def add_field(
        self, name: str, dtype: Any, is_primary: bool = False, max_length: int | None = None, dim: int | None = None
    ) -> None:
        field = schema_types().FieldSchema
        self.fields.append(field(name=name, dtype=dtype, is_primary=is_primary, max_length=max_length, dim=dim))

    def build(self) -> Any:
        return schema_types().CollectionSchema(fields=self.fields, enable_dynamic_field=self.enable_dynamic_field)


class _Indexes:
    """`MilvusClient.prepare_index_params()`'s list of index definitions."""

    def __init__(self) -> None:
        self.specs: list[tuple[str, dict[str, Any]]] = []

    def add_index(
        self, field_name: str, index_type: str, metric_type: str, params: dict[str, Any] | None = None
    ) -> None:
        self.specs.append(
            (field_name, {"index_type": index_type, "metric_type": metric_type, "params": dict(params or {})})
        )


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
        return schema_types().DataType

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
        return {
            "collection_name": name,
            "functions": list(schema.functions),
            "fields": [{"name": f.name, "params": {"dim": f.dim} if f.dim else {}} for f in schema.fields],
        }

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
        return {"field_name": spec["field_name"], "index_type": spec["index_type"], "metric_type": spec["metric_type"]}

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

    def query(
        self, name: str, filter: str = "", output_fields: Sequence[str] | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        col = self.table(name)
        fields = list(output_fields or [])
        if "count(*)" in fields:
            return [{"count(*)": len(col.query(filter)) if filter else int(col.num_entities)}]
        return list(col.query(filter or None, output_fields=fields or None, limit=limit))

    def query_iterator(
        self, name: str, batch_size: int = 1000, filter: str = "", output_fields: Sequence[str] | None = None
    ) -> _Pages:
        return _Pages(self.table(name), batch_size, filter, list(output_fields or []))

    def search(
        self,
        name: str,
        data: Sequence[Any],
        anns_field: str,
        limit: int,
        filter: str = "",
        output_fields: Sequence[str] | None = None,
    ) -> list[list[dict[str, Any]]]:
        col = self.table(name)
        return list(
            col.search(
                query_vectors=list(data),
                top_k=limit,
                anns_field=anns_field,
                metric_type=col.resolve_search_metric(anns_field, None),
                expr=filter or None,
                output_fields=list(output_fields or []),
            )
        )


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
        page = list(
            self.col.query(
                " and ".join(parts) or None, output_fields=[*self.fields, pk], limit=self.batch_size, order_by_pk=True
            )
        )
        if len(page) < self.batch_size:
            self.done = True
        if page:
            self.last = str(page[-1][pk])
        return page

    def close(self) -> None:
        self.done = True


def pymilvus_types() -> Any:
    from pymilvus import DataType

    return DataType


def connect(uri: str, token: str) -> Any:
    """For a local folder, its Milvus Lite engine in this process (core/store/lite.py: no socket, no pymilvus);
    else a pymilvus MilvusClient to the server at `uri`."""
    if "://" not in uri and not uri.startswith("unix:"):
        return LiteClient(uri)
    # gRPC's C core logs INFO lines (e.g. a closed Unix-socket transport) straight to stderr; the CLI
    # promises one line per error, so keep it quiet unless the user asked for its logs.
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    from pymilvus import MilvusClient

    # pymilvus configures its loggers when imported; we report errors ourselves, once.
    for name in ("pymilvus", "pymilvus.milvus_client"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    return MilvusClient(uri=uri, token=token or "")
