"""Experiment: the dense leg with metric IP instead of COSINE (our vectors are already L2-normalised).

Milvus Lite 3 is pure Python; for a FLAT index with COSINE it re-normalises every stored vector on every
query (milvus_lite/search/distance.py: cosine_distance), which is O(rows x dim) allocations per search:
about 8 ms at 10k rows and 110 ms at 100k on this machine, against 0.3 / 6 ms for the inner product.
For unit vectors IP ranks and scores exactly like COSINE, but WeightedRanker normalises the two metrics
differently ((1+cos)/2 vs 0.5+atan(ip)/pi), so fused rankings change: this measures both effects.

For each size: the cached built workspace is copied without its index and indexed twice (vectors from the
bench vector cache, so only Milvus inserts run), once as the store creates it and once with the dense
index's metric rewritten to IP (pymilvus IndexParams.add_index patched while creating it); then
Memory.search is timed on both, alternating query by query (defaults, and the recommended 0.3/0.7 with
10 candidates), and the labelled generated set is scored on both.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import emit, log, percentile, table, work_dir
from bench.quality import SETTINGS, evaluate, load, mean

CHOSEN = ["dense", "bm25", "hybrid 0.7/0.3 c10", "hybrid 0.5/0.5 c10", "hybrid 0.3/0.7 c10", "rrf c10"]


def open_index(root: Path, metric: str, scratch: Path, cached: Any) -> Any:
    """A Memory on a copy of `root`'s Markdown whose dense index uses `metric`, indexed from the cache."""
    from pymilvus.milvus_client.index import IndexParams

    from memsearch_lsp.core.memory import Memory

    ws = scratch / f"{root.name}-{metric}"
    shutil.copytree(root / "memory", ws / "memory")
    original = IndexParams.add_index

    def add_index(self: Any, field_name: str, index_type: str = "", index_name: str = "", **kwargs: Any) -> Any:
        if field_name == "dense" and kwargs.get("metric_type") == "COSINE":
            kwargs["metric_type"] = metric
        return original(self, field_name, index_type, index_name, **kwargs)

    IndexParams.add_index = add_index  # type: ignore[method-assign]
    try:
        memory = Memory(ws, embedder=cached)
        start = time.perf_counter()
        stats = memory.index()
    finally:
        IndexParams.add_index = original  # type: ignore[method-assign]
    log(
        f"metric {metric}: indexed {stats.chunks_total} chunks in {time.perf_counter() - start:.1f}s "
        f"({cached.fresh} through the model)"
    )
    memory._embedder = cached.inner  # searches embed their query with the model, like the product
    return memory


def measure(root: Path, metrics: list[str], scratch: Path) -> list[dict[str, Any]]:
    from bench.search import queries
    from bench.vector_cache import CachedEmbedder
    from memsearch_lsp.core.embedding.onnx import FastEmbedEmbedder

    cached = CachedEmbedder(FastEmbedEmbedder(), work_dir() / "vectors.sqlite")
    memories = {m: open_index(root, m, scratch, cached) for m in metrics}
    rows = []
    try:
        qs = queries()
        for memory in memories.values():
            for q in qs[:5]:
                memory.search(q)
        # Alternate the indexes query by query, so load from elsewhere hits both alike.
        times: dict[str, list[float]] = {m: [] for m in metrics}
        recommended: dict[str, list[float]] = {m: [] for m in metrics}  # 0.3/0.7, 10 candidates per leg
        for _ in range(2):
            for q in qs:
                for metric, memory in memories.items():
                    t0 = time.perf_counter()
                    memory.search(q)
                    times[metric].append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    memory.search(q, vector_weight=0.3, bm25_weight=0.7, candidates=10)
                    recommended[metric].append(time.perf_counter() - t0)
        labelled = load("generated")
        for metric, memory in memories.items():
            for name in CHOSEN:
                per_query = evaluate(memory, labelled, SETTINGS[name])
                rows.append(
                    emit(
                        "metric",
                        {
                            "chunks": memory.store.count(),
                            "metric": metric,
                            "setting": name,
                            "mrr": mean(per_query, "rr"),
                            "r@1": mean(per_query, "r@1"),
                            "r@5": mean(per_query, "r@5"),
                            "search_p50_ms": 1000 * percentile(times[metric], 50),
                            "search_p95_ms": 1000 * percentile(times[metric], 95),
                            "recommended_p50_ms": 1000 * percentile(recommended[metric], 50),
                        },
                    )
                )
    finally:
        for memory in memories.values():
            memory.close()
            memory.close()
            shutil.rmtree(memory.root, ignore_errors=True)
        cached.close()
    return rows


def main(args: Any) -> None:
    from bench.workspace import built

    sizes = [args.chunks] if args.chunks else ([1000] if args.quick else [10000, 100000])
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-metric-") as tmp:
        for size in sizes:
            root, _ = built(size, args.seed)
            rows += measure(root, os.environ.get("BENCH_METRICS", "COSINE,IP").split(","), Path(tmp))
    table(
        rows,
        ["chunks", "metric", "setting", "mrr", "r@1", "r@5", "search_p50_ms", "search_p95_ms", "recommended_p50_ms"],
        "dense metric COSINE vs IP: generated set quality and Memory.search latency (default settings)",
    )
    (work_dir().parent / "metric.json").write_text(json.dumps(rows, indent=1))
