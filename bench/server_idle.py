"""The server's resident memory when idle: after a full index of a fresh workspace, and after a restart on it.

`python -m bench.server_idle [--chunks N] [--rounds R]` (default 10000 chunks, 3 rounds). Each round copies the
bench corpus into a new workspace with no index, starts `memsearch-lsp serve` on it, waits for the start-up
reconcile's `memsearch/indexed` (the full index), leaves the server alone for IDLE_S and reads its RSS, asks one
`workspace/symbol` query (the model answers it) and reads it again, then appends a note to a log as an agent would
(`workspace/didChangeWatchedFiles`: the server writes it into the index itself) and reads it once more; then the
same on a restart over that index.

The server runs with the bundled model loaded and answering queries, but the documents' vectors are sha256-seeded
(`bench/hashed_site`, which reaches the child process a server indexes a large pass in as well; as `bench.hashed`: a
real-model index of 10k chunks takes ~10 minutes on 2 cores; what the processes hold is the same: the model's
session, the store, the mirror). `peak_rss_mib`: the largest of the server's own peak and the sum of the server's
and its children's RSS sampled every 0.1 s during the index. Issue 31's goal: <= 300 MiB at 10k after the fresh
index too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

IDLE_S = 5.0


def hashed_env() -> dict[str, str]:
    """The environment in which a server and the child processes it starts embed documents by sha256."""
    from bench.common import ROOT

    return {"PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "bench" / "hashed_site")]), "BENCH_HASHED": "1"}


def one(root: Path) -> dict[str, float]:
    from bench.lsp_client import LspClient

    with LspClient(cwd=root, env=hashed_env()) as client:
        sampled: list[float] = []
        indexed = threading.Event()

        def sample() -> None:  # the server and the child it may index in: their RSS together, every 0.1 s
            while not indexed.wait(0.1):
                sampled.append(client.rss_mib())

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        client.initialize(root)
        ready, _ = client.wait_notification("memsearch/indexed", timeout=3600)
        indexed.set()
        sampler.join()
        time.sleep(IDLE_S)
        idle = client.rss_mib()
        client.request("workspace/symbol", {"query": "deploy the database"})
        time.sleep(IDLE_S)
        searched = client.rss_mib()
        log = sorted((root / "memory").rglob("*.md"))[0]  # an agent appends a note: written by the server itself
        with log.open("a", encoding="utf-8") as handle:
            handle.write(f"\n## Bench note {time.time_ns()}\n\nThe staging database deploy moved to Friday.\n")
        mark = client.mark()
        client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": log.as_uri(), "type": 2}]})
        client.wait_notification("memsearch/indexed", after=mark, timeout=600)
        time.sleep(IDLE_S)
        return {
            "ready_s": ready - client.t_spawn,
            "idle_rss_mib": idle,
            "searched_rss_mib": searched,
            "edited_rss_mib": client.rss_mib(),
            "peak_rss_mib": max([client.peak_rss_mib(), *sampled]),
        }


def main(argv: Sequence[str] | None = None) -> None:
    from bench.common import emit, log, table
    from bench.corpus import ensure

    parser = argparse.ArgumentParser(prog="python -m bench.server_idle")
    parser.add_argument("--chunks", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=3)
    args, _ = parser.parse_known_args(argv)
    corpus = ensure(args.chunks) / "memory"
    results: dict[str, list[dict[str, float]]] = {"after a fresh index": [], "after a restart": []}
    for n in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="bench-idle-") as tmp:
            root = Path(tmp)
            shutil.copytree(corpus, root / "memory")
            log(f"server_idle: round {n + 1}, fresh index of {args.chunks} chunks")
            results["after a fresh index"].append(one(root))
            results["after a restart"].append(one(root))
    rows = []
    for case, runs in results.items():
        row: dict[str, Any] = {"case": case, "chunks": args.chunks, "rounds": len(runs)}
        for key in ("idle_rss_mib", "searched_rss_mib", "edited_rss_mib", "peak_rss_mib", "ready_s"):
            values = [r[key] for r in runs]
            row[key] = (
                f"{min(values):.0f} / {statistics.median(values):.0f} / {max(values):.0f}"
                if key != "ready_s"
                else f"{min(values):.1f} / {statistics.median(values):.1f} / {max(values):.1f}"
            )
        rows.append(emit("server_idle", row))
    table(
        rows,
        ["case", "chunks", "rounds", "idle_rss_mib", "searched_rss_mib", "edited_rss_mib", "peak_rss_mib", "ready_s"],
        "server RSS (MiB) idle, min / median / max",
    )


if __name__ == "__main__":
    main()
