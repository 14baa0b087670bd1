"""What the learned fusion and the relevance floor cost a search (`python -m bench.fusion_cost DEST`).

DEST: an indexed workspace (e.g. `python -m bench.hashed 10000 DEST`). The bench queries are asked with
the default settings (learned fusion, min_score), the learned fusion without the floor and the previous
default (`minmax`, no floor), alternated query by query in one process so that load on the machine
falls on all three alike; p50 and p95 of each, and the ratio to the previous default.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

SETTINGS: dict[str, dict[str, Any]] = {
    "default (learned + min_score)": {},
    "learned, no floor": {"min_score": 0.0},
    "previous default (minmax, no floor)": {"ranker": "minmax", "min_score": 0.0},
}


def main(dest: Path, rounds: int = 3) -> None:
    from bench.common import emit, percentile, table
    from bench.search import queries
    from memsearch_lsp.core.memory import Memory

    times: dict[str, list[float]] = {name: [] for name in SETTINGS}
    with Memory(dest) as memory:
        memory.search("warm up the model and the mirror", top_k=3)
        for _ in range(rounds):
            for query in queries():
                for name, overrides in SETTINGS.items():
                    start = time.perf_counter()
                    memory.search(query, top_k=3, **overrides)
                    times[name].append(1000 * (time.perf_counter() - start))
    base = percentile(times["previous default (minmax, no floor)"], 50)
    rows = [
        emit(
            "fusion-cost",
            {
                "setting": name,
                "n": len(t),
                "p50_ms": percentile(t, 50),
                "p95_ms": percentile(t, 95),
                "p50_vs_previous": percentile(t, 50) / base,
            },
        )
        for name, t in times.items()
    ]
    table(rows, ["setting", "n", "p50_ms", "p95_ms", "p50_vs_previous"], f"search cost by fusion ({dest.name})")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
