"""The store's lookups for the indexer: stored vectors by embed_hash (the embedding cache) and stored BM25
weights by id (to take rows out of the document frequencies); the dense leg asked of Milvus itself."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any

from memsearch_lsp.core.store.schema import quote, sparse_dict

_BATCH = 500


def vectors_for(
    client: Any,
    lock: AbstractContextManager[Any],
    collections: tuple[str, str],
    embed_hashes: Sequence[str],
    model: str,
) -> dict[str, list[list[float]]]:
    """Stored window vectors (in order) by embed_hash, for the embedding cache; only complete sets."""
    found: dict[str, list[list[float]]] = {}
    unique = sorted(set(embed_hashes))
    for start in range(0, len(unique), _BATCH):
        part = unique[start : start + _BATCH]
        expr = f"model == {quote(model)} and embed_hash in [{', '.join(quote(h) for h in part)}]"
        with lock:
            rows = client.query(
                collections[0], filter=expr, output_fields=["embed_hash", "dense", "windows"], limit=16384
            )
        extra = {r["embed_hash"]: (r["id"], int(r["windows"] or 1)) for r in rows if int(r["windows"] or 1) > 1}
        tails: dict[str, dict[int, list[float]]] = {}
        if extra:
            ids = [f"{cid}:{n}" for cid, count in extra.values() for n in range(1, count)]
            with lock:
                got = client.get(collections[1], ids=ids, output_fields=["embed_hash", "dense"])
            for w in got:
                tails.setdefault(w["embed_hash"], {})[int(w["id"].rsplit(":", 1)[1])] = w["dense"]
        for row in rows:
            h = row["embed_hash"]
            vectors = [[float(x) for x in row["dense"]]]
            if h in extra:
                tail = tails.get(h, {})
                if len(tail) != extra[h][1] - 1:
                    continue  # incomplete: embed again
                vectors += [[float(x) for x in tail[n]] for n in sorted(tail)]
            found[h] = vectors
    return found


def sparse_of(
    client: Any, lock: AbstractContextManager[Any], collection: str, ids: Sequence[str]
) -> list[dict[int, float]]:
    """The stored BM25 weights of rows (to take them out of the document frequencies)."""
    out: list[dict[int, float]] = []
    for start in range(0, len(ids), _BATCH):
        with lock:
            rows = client.get(collection, ids=list(ids[start : start + _BATCH]), output_fields=["sparse"])
        out.extend(sparse_dict(r["sparse"]) for r in rows)
    return out


def dense(
    client: Any,
    lock: AbstractContextManager[Any],
    collections: tuple[str, str],
    vector: list[float],
    limit: int,
    expr: str,
) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """The dense leg through Milvus' own search (no mirror): the `limit` nearest chunks by their first window, and
    the 3 x `limit` nearest extra windows by their chunk id."""
    chunks, windows = collections
    with lock:
        found = client.search(chunks, [vector], anns_field="dense", limit=limit, filter=expr, output_fields=[])
        tails = client.search(
            windows, [vector], anns_field="dense", limit=3 * limit, filter=expr, output_fields=["chunk_id"]
        )
    return (
        [(str(hit["id"]), float(hit["distance"])) for hit in found[0]],
        [(str(hit.get("entity", {}).get("chunk_id", "")), float(hit["distance"])) for hit in tails[0]],
    )
