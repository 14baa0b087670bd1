"""Experiment: CPU time per search, layer by layer, on a built workspace (`python -m bench.layers ROOT`).

Query embedding, BM25 query terms, the two legs through Milvus Lite's own search (called in process by
core/store/lite.py's client; until 2026-12 this went through gRPC over a private socket) and through the
in-process mirror (core/store/mirror.py), `Memory.search` either way, and the legs on the engine itself.
CPU time (all threads of the process), median of 40 queries; prints one JSON object.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def main(root: Path) -> dict[str, Any]:
    from bench.search import queries
    from memsearch_lsp.core.embedding.onnx import query_vector
    from memsearch_lsp.core.memory import Memory
    from memsearch_lsp.core.store import lite

    memory = Memory(root)
    qs = queries()[:40]
    store, s = memory.store, memory.config.search
    start = time.process_time()
    store.mirror()
    mirror_load_ms = 1000 * (time.process_time() - start)
    memory.search(qs[0])
    vectors = {q: query_vector(memory.embedder, q) for q in qs}
    terms = {q: memory.df.query_vector(q) for q in qs}

    def cpu_ms(fn: Callable[[str], object]) -> float:
        times = []
        for q in qs:
            start = time.process_time()
            fn(q)
            times.append(time.process_time() - start)
        return round(1000 * statistics.median(times), 2)

    def legs(fast: bool) -> dict[str, float]:
        store.in_process = fast
        via = "mirror" if fast else "Milvus Lite search"
        return {
            f"Memory.search, {via}": cpu_ms(lambda q: memory.search(q)),
            f"dense leg, {via}": cpu_ms(lambda q: store.dense_leg(vectors[q], s.candidates)),
            f"bm25 leg, {via}": cpu_ms(lambda q: store.sparse_leg(terms[q], s.candidates)),
        }

    engine = lite.engine(memory.uri, store.collection)
    out: dict[str, Any] = {
        "query embedding": cpu_ms(lambda q: query_vector(memory.embedder, q)),
        "bm25 terms": cpu_ms(lambda q: memory.df.query_vector(q)),
        **legs(False),
        **legs(True),
        "engine dense": cpu_ms(
            lambda q: engine.search([vectors[q]], top_k=s.candidates, anns_field="dense", output_fields=[])
        ),
        "engine sparse": cpu_ms(
            lambda q: engine.search([terms[q]], top_k=s.candidates, anns_field="sparse", output_fields=[])
        ),
        "mirror load ms": round(mirror_load_ms, 1),
        "segments": len(engine._segments_snapshot()),
    }
    memory.close()
    return out


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
