"""Experiment: CPU time per search, layer by layer, on a built workspace (`python -m bench.layers ROOT`).

Query embedding, BM25 query terms, `MilvusStore.search` through gRPC (hybrid, dense only, BM25 only) and
the same legs called on the in-process Milvus Lite engine directly (no gRPC): the difference is the hop.
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
    from memsearch_lsp.core import lite
    from memsearch_lsp.core.memory import Memory
    from memsearch_lsp.core.store import SCALARS

    memory = Memory(root)
    qs = queries()[:40]
    memory.search(qs[0])
    store, s = memory.store, memory.config.search
    vectors = {q: memory.embedder.embed([q])[0] for q in qs}
    terms = {q: memory.df.query_vector(q) for q in qs}

    def cpu_ms(fn: Callable[[str], object]) -> float:
        times = []
        for q in qs:
            start = time.process_time()
            fn(q)
            times.append(time.process_time() - start)
        return round(1000 * statistics.median(times), 2)

    engine = lite._served[str(Path(memory.uri).resolve())][1].get_collection(store.collection)
    out = {
        "Memory.search": cpu_ms(lambda q: memory.search(q)),
        "query embedding": cpu_ms(lambda q: memory.embedder.embed([q])),
        "bm25 terms": cpu_ms(lambda q: memory.df.query_vector(q)),
        "store hybrid (gRPC)": cpu_ms(lambda q: store.search(vectors[q], terms[q], s.top_k, s.candidates,
                                                             s.vector_weight, s.bm25_weight)),
        "store dense (gRPC)": cpu_ms(lambda q: store.search(vectors[q], {}, s.top_k, s.candidates, 1.0, 0.0)),
        "store bm25 (gRPC)": cpu_ms(lambda q: store.search(None, terms[q], s.top_k, s.candidates, 0.0, 1.0)),
        "engine dense": cpu_ms(lambda q: engine.search([vectors[q]], top_k=s.candidates, anns_field="dense",
                                                       output_fields=list(SCALARS))),
        "engine sparse": cpu_ms(lambda q: engine.search([terms[q]], top_k=s.candidates, anns_field="sparse",
                                                        output_fields=list(SCALARS))),
        "segments": len(engine._segments_snapshot()),
    }
    memory.close()
    return out


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
