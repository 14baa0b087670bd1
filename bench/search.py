"""Search latency at 1k / 10k / 100k chunks: in-process `Memory.search` and LSP `workspace/symbol`.

For each size, on the cached built workspace (bench/workspace.py):
  in-process  a fresh `python -m bench.search --worker ROOT` opens the index, warms up, then times every
              labelled query (80, several passes) with the default settings: total, and its two parts
              (query embedding; the rest = BM25 query terms + the two legs + rows + snippets); its peak
              RSS and its RSS after the searches (`searched_rss_mib`); the time to open the index
  LSP         a fresh server on the same workspace; after its start-up `memsearch/indexed`, the same queries
              as `workspace/symbol` requests (symbol_limit = 20 hits); the server's peak RSS (VmHWM), its
              RSS idle after the start-up reconcile (`idle_rss_mib`) and idle after the searches
Plus the index size on disk. Latencies are p50 / p95 over all timed queries.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import BENCH, ROOT, emit, log, percentile, rss_mib, table

WARMUP = 5
IDLE_S = 2.0  # seconds the server is left alone before its idle RSS is read


def queries() -> list[str]:
    out = []
    for name in ("examples", "generated"):
        out += [q["query"] for q in json.loads((BENCH / "queries" / f"{name}.json").read_text())["queries"]]
    return out


def worker(root: Path, passes: int) -> dict[str, Any]:
    """Runs in its own process: open, warm up, time every query; prints one JSON object."""
    from memsearch_lsp.core.memory import Memory

    t0 = time.perf_counter()
    memory = Memory(root)
    memory.embedder.embed(["warm up the model"])
    t_model = time.perf_counter()
    memory.store  # noqa: B018
    t_open = time.perf_counter()
    memory.search("open the BM25 statistics")
    t_first = time.perf_counter()
    t_mirror = time.perf_counter()  # (the read model is loaded with the store: nothing more to load)
    qs = queries()
    for q in qs[:WARMUP]:
        memory.search(q)
    total, embed = [], []
    for _ in range(passes):
        for q in qs:
            start = time.perf_counter()
            memory.search(q)
            total.append(time.perf_counter() - start)
            start = time.perf_counter()
            memory.embedder.embed([q])
            embed.append(time.perf_counter() - start)
    top20 = []
    for q in qs:
        start = time.perf_counter()
        memory.search(q, top_k=memory.config.search.symbol_limit)
        top20.append(time.perf_counter() - start)
    searched_rss = rss_mib()[0]
    memory.close()
    rest = sorted(t - e for t, e in zip(total, embed))
    return {
        "model_load_s": t_model - t0,
        "open_s": t_open - t_model,
        "first_search_s": t_first - t_open,
        "mirror_s": t_mirror - t_first,
        "n": len(total),
        "p50_ms": 1000 * percentile(total, 50),
        "p95_ms": 1000 * percentile(total, 95),
        "embed_p50_ms": 1000 * percentile(embed, 50),
        "rest_p50_ms": 1000 * percentile(rest, 50),
        "top20_p50_ms": 1000 * percentile(top20, 50),
        "peak_rss_mib": rss_mib()[1],
        "searched_rss_mib": searched_rss,
    }


def in_process(root: Path, passes: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.search", "--worker", str(root), str(passes)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if out.returncode:
        raise RuntimeError(f"search worker failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def over_lsp(root: Path, passes: int) -> dict[str, Any]:
    from bench.lsp_client import LspClient

    qs = queries()
    with LspClient(cwd=root) as client:
        client.initialize(root)
        start_ready, stats = client.wait_notification("memsearch/indexed", timeout=3600)
        ready_s = start_ready - client.t_spawn
        time.sleep(IDLE_S)
        idle_rss = client.rss_mib()  # the server idle after its start-up reconcile (no search yet)
        for q in qs[:WARMUP]:
            client.request("workspace/symbol", {"query": q})
        times, counts = [], []
        for _ in range(passes):
            for q in qs:
                start = time.perf_counter()
                result = client.request("workspace/symbol", {"query": q})
                times.append(time.perf_counter() - start)
                counts.append(len(result or []))
        start = time.perf_counter()
        everything = client.request("workspace/symbol", {"query": ""})
        all_headings_ms = 1000 * (time.perf_counter() - start)
        time.sleep(IDLE_S)
        return {
            "ready_s": ready_s,
            "idle_rss_mib": idle_rss,
            "searched_rss_mib": client.rss_mib(),
            "n": len(times),
            "p50_ms": 1000 * percentile(times, 50),
            "p95_ms": 1000 * percentile(times, 95),
            "symbols": statistics.median(counts),
            "all_headings_ms": all_headings_ms,
            "all_headings": len(everything or []),
            "peak_rss_mib": client.peak_rss_mib(),
            "startup_embedded": stats.get("embedded"),
        }


def main(args: Any) -> None:
    from bench.workspace import built, index_size_mib

    sizes = [args.chunks] if args.chunks else ([1000] if args.quick else [1000, 10000, 100000])
    passes = args.reps or (1 if args.quick else 3)
    rows = []
    for size in sizes:
        root, build = built(size, args.seed)
        disk = index_size_mib(root)
        log(f"search: {size} chunks, in-process")
        ip = in_process(root, passes)
        rows.append(
            emit(
                "search",
                {
                    "chunks": size,
                    "via": "Memory.search",
                    "p50_ms": ip["p50_ms"],
                    "p95_ms": ip["p95_ms"],
                    "n": ip["n"],
                    "embed_p50_ms": ip["embed_p50_ms"],
                    "rest_p50_ms": ip["rest_p50_ms"],
                    "top20_p50_ms": ip["top20_p50_ms"],
                    "open_s": ip["open_s"],
                    "first_search_s": ip["first_search_s"],
                    "mirror_s": ip["mirror_s"],
                    "model_load_s": ip["model_load_s"],
                    "peak_rss_mib": ip["peak_rss_mib"],
                    "searched_rss_mib": ip["searched_rss_mib"],
                    "disk_mib": disk,
                    "corpus_mib": build.get("corpus_mib"),
                    "build_cps": build.get("chunks_per_s"),
                },
            )
        )
        log(f"search: {size} chunks, over LSP")
        lsp = over_lsp(root, passes)
        rows.append(
            emit(
                "search",
                {
                    "chunks": size,
                    "via": "workspace/symbol",
                    "p50_ms": lsp["p50_ms"],
                    "p95_ms": lsp["p95_ms"],
                    "n": lsp["n"],
                    "symbols": lsp["symbols"],
                    "ready_s": lsp["ready_s"],
                    "all_headings_ms": lsp["all_headings_ms"],
                    "peak_rss_mib": lsp["peak_rss_mib"],
                    "idle_rss_mib": lsp["idle_rss_mib"],
                    "searched_rss_mib": lsp["searched_rss_mib"],
                    "disk_mib": disk,
                    "startup_embedded": lsp["startup_embedded"],
                },
            )
        )
    table(
        rows,
        [
            "chunks",
            "via",
            "p50_ms",
            "p95_ms",
            "n",
            "embed_p50_ms",
            "rest_p50_ms",
            "open_s",
            "ready_s",
            "peak_rss_mib",
            "idle_rss_mib",
            "searched_rss_mib",
            "disk_mib",
        ],
        "search latency (ms) and footprint",
    )


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--worker":
        print(json.dumps(worker(Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 1)))
