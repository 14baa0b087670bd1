"""ServerStore: a Milvus standalone / cluster or Zilliz Cloud collection by URI (plus token), through pymilvus'
MilvusClient: the same Store contract as the local store, every read and both search legs asked of the server.

The BM25 document frequencies (global statistics: core/search/bm25.py) are counted from the stored weights when the
store opens and kept as rows are written and deleted.

The server may release the collections while the store is open (an administrator's release_collection, a restart
that does not load them again): a call that fails while they are not loaded loads them and is asked once more.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any

from memsearch_lsp.core.store import Store
from memsearch_lsp.core.store.folder import StoreError
from memsearch_lsp.core.store.readmodel import FileRecord, file_records
from memsearch_lsp.core.store.schema import (
    CHUNK_FIELDS,
    FIELDS,
    OUR_CHUNK_FIELDS,
    OUR_WINDOW_FIELDS,
    SCALARS,
    WINDOW_FIELDS,
    WINDOW_SUFFIX,
    Row,
    best_windows,
    idf,
    quote,
    sparse_dict,
    stored,
    where,
)

log = logging.getLogger(__name__)

_BATCH = 500


class ServerStore(Store):
    """One collection (and its windows collection) on a Milvus server."""

    is_local = False

    def __init__(self, uri: str, collection: str, dim: int, token: str = ""):
        self.uri, self.collection, self.dim, self.token = uri, collection, dim, token
        self.windows = collection + WINDOW_SUFFIX
        self.epoch = 0
        self.writes = 0
        self._client: Any = None
        self.df: Counter[int] = Counter()

    @property
    def client(self) -> Any:
        if self._client is None:
            self.open()
        return self._client

    def _connect(self) -> None:
        try:
            os.environ.setdefault("GRPC_VERBOSITY", "NONE")  # gRPC's C core logs INFO lines straight to stderr
            from pymilvus import MilvusClient  # (pymilvus' one import in the package)

            for name in ("pymilvus", "pymilvus.milvus_client"):  # configured when imported; we report errors ourselves
                logging.getLogger(name).setLevel(logging.CRITICAL)
            self._client = MilvusClient(uri=self.uri, token=self.token or "")
        except Exception as exc:
            self._client = None
            raise StoreError(f"cannot open the index at {self.uri}: {exc}") from exc

    def open(self) -> None:
        if self._client is not None:
            return
        self._connect()
        try:
            self._ensure()
        except Exception as exc:
            self.close()  # (a client is never used unchecked)
            if isinstance(exc, StoreError):
                raise
            raise StoreError(f"cannot open the index at {self.uri}: {exc}") from exc
        self.df = Counter(t for r in self._all(["sparse"]) for t in sparse_dict(r["sparse"]))

    def _ensure(self) -> None:
        client = self._client
        info = self._ours(self.collection, OUR_CHUNK_FIELDS)
        self._ours(self.windows, OUR_WINDOW_FIELDS)
        if info is not None:
            names = {f.get("name") for f in info.get("fields", [])}
            dims = [int(f.get("params", {}).get("dim", 0)) for f in info.get("fields", []) if f.get("name") == "dense"]
            if names == FIELDS and dims == [self.dim] and client.has_collection(self.windows):
                self._load()
                return
            log.warning(
                "collection %s was built by another version or for another dimension: rebuilding it", self.collection
            )
        self._create()

    def _load(self) -> None:
        for name in (self.collection, self.windows):
            self._client.load_collection(name)

    def _ask(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """The client's `method` called; when it fails while a collection is not loaded, once more after loading
        them (any other failure, or one loading cannot mend, is raised as it came)."""
        try:
            return getattr(self.client, method)(*args, **kwargs)
        except Exception:
            if not self._reloaded():
                raise
        return getattr(self.client, method)(*args, **kwargs)

    def _reloaded(self) -> bool:
        """The collections loaded again when the server had released one; False when none was released or they
        cannot be asked about or loaded (gone, the server down)."""
        try:
            states = [self._client.get_load_state(name).get("state") for name in (self.collection, self.windows)]
            if all(getattr(state, "name", str(state)) == "Loaded" for state in states):
                return False
            log.warning("the server had released collection %s: loading it again", self.collection)
            self._load()
        except Exception:
            return False
        return True

    def _ours(self, name: str, ours: frozenset[str]) -> dict[str, Any] | None:
        """The description of collection `name`, None when there is none; StoreError when it is not this program's
        (its fields are not ours): a collection of another application on the same server is never dropped."""
        client = self._client
        if not client.has_collection(name):
            return None
        info: dict[str, Any] = client.describe_collection(name)
        fields = info.get("fields", [])
        primary = [f.get("name") for f in fields if f.get("is_primary")]
        if primary == ["id"] and ours <= {f.get("name") for f in fields}:
            return info
        raise StoreError(
            f"collection {name} on {self.uri} was not made by memsearch-lsp (its fields are not an index's): it is "
            "left as it is; choose another collection name with milvus.collection in your user config file, "
            "MEMSEARCH_MILVUS_COLLECTION or your editor's user settings"
        )

    def _create(self) -> None:
        """The two collections, new and empty; an existing one is dropped first only when it is ours."""
        from pymilvus import DataType

        client = self._client
        self._ours(self.collection, OUR_CHUNK_FIELDS)
        self._ours(self.windows, OUR_WINDOW_FIELDS)
        for name in (self.collection, self.windows):
            if client.has_collection(name):
                client.drop_collection(name)
        for name, fields, key in ((self.collection, CHUNK_FIELDS, 64), (self.windows, WINDOW_FIELDS, 96)):
            schema = client.create_schema(auto_id=False)
            schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=key)
            for field, kind, length in fields:
                schema.add_field(field, getattr(DataType, kind), **({"max_length": length} if length else {}))
            schema.add_field("dense", DataType.FLOAT_VECTOR, dim=self.dim)
            index = client.prepare_index_params()
            index.add_index(field_name="dense", index_type="AUTOINDEX", metric_type="COSINE")
            if name == self.collection:
                index.add_index(field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
            client.create_collection(name, schema=schema, index_params=index)
            client.load_collection(name)
        self.epoch += 1
        self.df = Counter()

    def exists(self) -> bool:
        """Both collections of the index are on the server: asked without making or loading anything (doctor's
        question); StoreError when the server cannot be asked."""
        connected = self._client is not None
        if not connected:
            self._connect()
        try:
            return all(self._client.has_collection(name) for name in (self.collection, self.windows))
        except Exception as exc:
            raise StoreError(f"cannot open the index at {self.uri}: {exc}") from exc
        finally:
            if not connected:
                self.close()

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def drop(self) -> None:
        """Empty the index (reset): its collections are made anew; another application's are refused (StoreError)."""
        if self._client is None:
            self._connect()
        try:
            self._create()
        except StoreError:
            self.close()
            raise

    # -- writes --------------------------------------------------------------------------------
    def upsert(self, rows: Sequence[dict[str, Any]], windows: Sequence[dict[str, Any]] = ()) -> None:
        self.writes += 1
        for start in range(0, len(rows), _BATCH):
            batch = [dict(stored(r), dense=_list(r["dense"])) for r in rows[start : start + _BATCH]]
            self._count([r["sparse"] for r in self._get([r["id"] for r in batch], ["sparse"])], -1)
            self._ask("upsert", self.collection, batch)
            self._count([r["sparse"] for r in batch], 1)
        for start in range(0, len(windows), _BATCH):
            self._ask(
                "upsert", self.windows, [dict(w, dense=_list(w["dense"])) for w in windows[start : start + _BATCH]]
            )

    def delete(self, ids: Iterable[str]) -> None:
        self.writes += 1
        ids = list(ids)
        for start in range(0, len(ids), _BATCH):
            part = ids[start : start + _BATCH]
            self._count([r["sparse"] for r in self._get(part, ["sparse"])], -1)
            self._ask("delete", self.collection, ids=part)
            self._ask("delete", self.windows, filter=f"chunk_id in [{', '.join(quote(i) for i in part)}]")

    def _count(self, vectors: Iterable[Any], sign: int) -> None:
        for vector in vectors:
            for term in sparse_dict(vector):
                self.df[term] += sign

    def flush(self, wait: bool = False) -> None:
        self._ask("flush", self.collection)

    def note_file(self, source: str, size: int, mtime_ns: int) -> None:
        """(Files are read again at every pass: a server store keeps no record of their sizes and times.)"""

    # -- reads ---------------------------------------------------------------------------------
    def _get(self, ids: Sequence[str], fields: list[str], collection: str = "") -> list[dict[str, Any]]:
        return list(self._ask("get", collection or self.collection, ids=list(ids), output_fields=fields)) if ids else []

    def _all(self, fields: Sequence[str], expr: str = "") -> Iterator[dict[str, Any]]:
        iterator = self._ask(
            "query_iterator", self.collection, batch_size=4096, filter=expr, output_fields=list(fields)
        )
        try:
            while page := iterator.next():
                yield from page
        finally:
            iterator.close()

    def dense_leg(
        self, vector: Sequence[float], limit: int, exclude_source: str = "", only: Collection[str] | None = None
    ) -> dict[str, float]:
        """The `limit` chunks closest to `vector`, each scored by its best window."""
        if only is not None and not only:
            return {}
        expr = where(exclude_source, only)
        vector = _list(vector)
        found = self._ask("search", self.collection, [vector], anns_field="dense", limit=limit, filter=expr)
        tails = self._ask(
            "search",
            self.windows,
            [vector],
            anns_field="dense",
            limit=3 * limit,
            filter=expr,
            output_fields=["chunk_id"],
        )
        windows = ((str(h["entity"]["chunk_id"]), float(h["distance"])) for h in tails[0] if h.get("entity"))
        return best_windows(((str(h["id"]), float(h["distance"])) for h in found[0]), windows, limit)

    def sparse_leg(
        self, terms: Mapping[int, float], limit: int, exclude_source: str = "", only: Collection[str] | None = None
    ) -> dict[str, float]:
        if not terms or (only is not None and not only):
            return {}
        hits = self._ask(
            "search",
            self.collection,
            [dict(terms)],
            anns_field="sparse",
            limit=limit,
            filter=where(exclude_source, only),
            output_fields=[],
        )
        return {str(h["id"]): float(h["distance"]) for h in hits[0]}

    def idf(self, term_ids: Iterable[int]) -> dict[int, float]:
        n = max(self.count(), 1)
        return {t: idf(n, self.df.get(t, 0)) for t in set(term_ids)}

    def coverage(self, ids: Sequence[str], terms: Mapping[int, float]) -> dict[str, float]:
        total = sum(terms.values())
        if not ids or total <= 0:
            return dict.fromkeys(ids, 0.0)
        found = {str(r["id"]): sparse_dict(r.get("sparse")) for r in self._get(ids, ["sparse"])}
        return {k: sum(w for t, w in terms.items() if t in found.get(k, {})) / total for k in ids}

    def sections(self, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        return {
            str(r["id"]): (str(r["source"]), str(r["heading_path"])) for r in self._get(ids, ["source", "heading_path"])
        }

    def rows(self, ids: Sequence[str]) -> list[Row]:
        by_id = {r["id"]: r for r in self._get(ids, list(SCALARS))}
        return [Row.from_entity(i, by_id[i]) for i in ids if i in by_id]

    def scan(self, fields: Sequence[str]) -> list[dict[str, Any]]:
        return list(self._all(fields))

    def files(self, model: str) -> dict[str, FileRecord]:
        rows = self._all(["source", "file_hash", "model"])
        return file_records(((r["source"], r["file_hash"], r["model"]) for r in rows), model)

    def ids_of(self, source: str) -> set[str]:
        return {str(r["id"]) for r in self._all(["id"], f"source == {quote(source)}")}

    def vectors_for(self, embed_hashes: Sequence[str], model: str) -> dict[str, list[Any]]:
        """Stored vectors (the chunk's, then its windows' in order) by embed_hash; only complete sets."""
        found: dict[str, list[Any]] = {}
        unique = sorted(set(embed_hashes))
        for start in range(0, len(unique), _BATCH):
            part = ", ".join(quote(h) for h in unique[start : start + _BATCH])
            rows = self._ask(
                "query",
                self.collection,
                filter=f"model == {quote(model)} and embed_hash in [{part}]",
                output_fields=["embed_hash", "dense", "windows"],
                limit=16384,
            )
            for row in rows:
                count = int(row["windows"] or 1)
                tails = self._get([f"{row['id']}:{n}" for n in range(1, count)], ["dense"], self.windows)
                if len(tails) == count - 1:
                    order = sorted(tails, key=lambda w: int(str(w["id"]).rsplit(":", 1)[1]))
                    found[row["embed_hash"]] = [list(row["dense"]), *(list(w["dense"]) for w in order)]
        return found

    def damaged(self) -> int:
        """(Not counted: a server's vectors are searched there, and reading every one to check it costs a full scan.)"""
        return 0

    def count(self) -> int:
        rows = self._ask("query", self.collection, filter="", output_fields=["count(*)"])
        return int(rows[0]["count(*)"]) if rows else 0


def _list(vector: Any) -> list[float]:
    return [float(x) for x in vector]
