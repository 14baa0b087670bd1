"""Storage: one Store contract, two implementations, and the factory that picks one (the only place that does).

- `LocalStore` (core/store/local.py): a local folder; Milvus Lite (core/store/engine.py, its public API) is the
  durable store of record, written by a background writer; one in-memory read model (readmodel.py) answers every
  read, saved beside the index as plain checked data (saved.py).
- `ServerStore` (core/store/server.py): Milvus standalone / cluster or Zilliz Cloud by URI (plus token), through
  pymilvus' MilvusClient.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from memsearch_lsp.config.sections import is_local_uri
from memsearch_lsp.core.store.folder import IndexBusy, StoreError

if TYPE_CHECKING:
    from memsearch_lsp.core.store.readmodel import FileRecord
    from memsearch_lsp.core.store.schema import Row

__all__ = ["IndexBusy", "Store", "StoreError", "is_local_uri", "open_store"]


class Store(Protocol):
    """One memory root's chunks: rows with a dense vector and BM25 weights, and their extra window vectors."""

    uri: str
    is_local: bool
    epoch: int  # bumps whenever the index is (re)created empty: readers of the old rows read again
    writes: int  # bumps with every write made through this store object
    # a local index this store found unreadable (or not its own) and started afresh: (the name of the copy it was moved
    # to beside it, "" when it was gone; why); None while it holds what it opened
    moved_aside: tuple[str, str] | None = None
    # why the index cannot be written now (a local store's writer keeps what it could not write and tries again, or
    # keeps the read model while its folder cannot be made); None while writes go through
    failure: BaseException | None = None

    def open(self) -> None: ...
    def close(self) -> None: ...
    def drop(self) -> None: ...

    # writes: searchable when they return; `flush` makes them durable (a local store: soon, by its writer; with
    # `wait`, before it returns)
    def upsert(self, rows: Sequence[dict[str, Any]], windows: Sequence[dict[str, Any]] = ()) -> None: ...
    def delete(self, ids: Iterable[str]) -> None: ...
    def flush(self, wait: bool = False) -> None: ...
    def note_file(self, source: str, size: int, mtime_ns: int) -> None: ...

    # the search legs and what ranking reads of the candidates
    def dense_leg(
        self, vector: Sequence[float], limit: int, exclude_source: str = "", only: Collection[str] | None = None
    ) -> dict[str, float]: ...
    def sparse_leg(
        self, terms: Mapping[int, float], limit: int, exclude_source: str = "", only: Collection[str] | None = None
    ) -> dict[str, float]: ...
    def idf(self, term_ids: Iterable[int]) -> dict[int, float]: ...
    def coverage(self, ids: Sequence[str], terms: Mapping[int, float]) -> dict[str, float]: ...
    def sections(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]: ...

    # rows, and the indexer's lookups
    def rows(self, ids: Sequence[str]) -> list[Row]: ...
    def get(self, chunk_id: str) -> Row | None:
        return next(iter(self.rows([chunk_id])), None)

    def scan(self, fields: Sequence[str]) -> list[dict[str, Any]]: ...
    def files(self, model: str) -> dict[str, FileRecord]: ...
    def ids_of(self, source: str) -> set[str]: ...
    def vectors_for(self, embed_hashes: Sequence[str], model: str) -> dict[str, list[Any]]: ...
    def count(self) -> int: ...
    def damaged(self) -> int: ...  # stored vectors that are not of unit length (a local store's; a server's: 0)


def open_store(uri: str, collection: str, dim: int, token: str = "") -> Store:
    """The store for `uri`, opened: a local folder's LocalStore, else a ServerStore."""
    store: Store
    if is_local_uri(uri):
        from memsearch_lsp.core.store.local import shared_store

        return shared_store(uri, collection, dim)
    else:
        from memsearch_lsp.core.store.server import ServerStore

        store = ServerStore(uri, collection, dim, token)
    store.open()
    return store
