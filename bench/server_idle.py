"""The server's resident memory when idle: after a full index of a fresh workspace, and after a restart on it.

`python -m bench.server_idle [--chunks N] [--rounds R]` (default 10000 chunks, 3 rounds). Each round copies the
bench corpus into a new workspace with no index, starts `memsearch-lsp serve` on it, waits for the start-up
reconcile's `memsearch/indexed` (the full index), lets the server settle and reads its RSS, asks one
`workspace/symbol` query (the model answers it) and reads it again once settled, then appends a note to a log as an
agent would (`workspace/didChangeWatchedFiles`: the server writes it into the index itself) and reads it once more
once settled; then the same on a restart over that index.

Settled: the server has no child process left (the engine's process folds what it took into segments after
ENGINE_IDLE_S without writes, core/store/local.py, then exits; a large pass's child has ended) and two samples
SETTLE_POLL_S apart are within SETTLE_MIB; a reading that has not settled after SETTLE_MAX_S is the last sample, and
its row says `"settled": false`. `settle_s`: the seconds from the fresh index's `memsearch/indexed` to its idle
reading (the fold after the index). A fixed wait read the engine mid-fold on a busy box (~540 MiB at 10k where the
settled server holds ~260).

The server runs with the bundled model loaded and answering queries, but the documents' vectors are sha256-seeded
(`bench/hashed_site`, which reaches the child process a server indexes a large pass in as well; as `bench.hashed`: a
real-model index of 10k chunks takes ~10 minutes on 2 cores; what the processes hold is the same: the model's
session, the store, the mirror). `peak_rss_mib`: the largest of the server's own peak and the sum of the server's
and its children's RSS sampled every 0.1 s over the whole run (the index, the engine's fold after it, the query, the
note and its fold). Issue 31's goal: <= 300 MiB at 10k after the fresh index too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

SETTLE_POLL_S = 0.5  # how often a reading samples the server until it settles
SETTLE_MIB = 4.0  # two consecutive samples this close, with no child process left: settled
SETTLE_MAX_S = 60.0  # a reading that has not settled by then takes the last sample and says so


def hashed_env() -> dict[str, str]:
    """The environment in which a server and the child processes it starts embed documents by sha256."""
    from bench.common import ROOT

    return {"PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "bench" / "hashed_site")]), "BENCH_HASHED": "1"}


def settle(
    sample: Callable[[], tuple[int, float]], poll_s: float = SETTLE_POLL_S, max_s: float = SETTLE_MAX_S
) -> tuple[float, float, bool]:
    """Call `sample()` (the server's child processes, its and their RSS together) every poll_s until no child is left
    in two consecutive samples within SETTLE_MIB of each other, or max_s has passed: (RSS, seconds, settled)."""
    start = time.perf_counter()
    last: float | None = None
    while True:
        time.sleep(poll_s)
        children, rss = sample()
        waited = time.perf_counter() - start
        if children == 0 and last is not None and abs(rss - last) <= SETTLE_MIB:
            return rss, waited, True
        if waited >= max_s:
            return rss, waited, False
        last = rss if children == 0 else None


def one(root: Path) -> dict[str, float]:
    from bench.lsp_client import LspClient, _tree

    with LspClient(cwd=root, env=hashed_env()) as client:
        sampled: list[float] = []
        done = threading.Event()

        def sample() -> None:  # the server and the children it may index and write in: their RSS together
            while not done.wait(0.1):
                sampled.append(client.rss_mib())

        def now() -> tuple[int, float]:
            return len(_tree(client.proc.pid)) - 1, client.rss_mib()

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            client.initialize(root)
            ready, _ = client.wait_notification("memsearch/indexed", timeout=3600)
            idle, settle_s, idle_settled = settle(now)
            client.request("workspace/symbol", {"query": "deploy the database"})
            searched, _, searched_settled = settle(now)
            log = sorted((root / "memory").rglob("*.md"))[0]  # an agent appends a note: written by the server itself
            with log.open("a", encoding="utf-8") as handle:
                handle.write(f"\n## Bench note {time.time_ns()}\n\nThe staging database deploy moved to Friday.\n")
            mark = client.mark()
            client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": log.as_uri(), "type": 2}]})
            client.wait_notification("memsearch/indexed", after=mark, timeout=600)
            edited, _, edited_settled = settle(now)
        finally:
            done.set()
            sampler.join()
        return {
            "ready_s": ready - client.t_spawn,
            "idle_rss_mib": idle,
            "searched_rss_mib": searched,
            "edited_rss_mib": edited,
            "peak_rss_mib": max([client.peak_rss_mib(), *sampled]),
            "settle_s": settle_s,
            "settled": float(idle_settled and searched_settled and edited_settled),
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
        for key in ("idle_rss_mib", "searched_rss_mib", "edited_rss_mib", "peak_rss_mib", "ready_s", "settle_s"):
            values = [r[key] for r in runs]
            row[key] = (
                f"{min(values):.0f} / {statistics.median(values):.0f} / {max(values):.0f}"
                if key.endswith("_mib")
                else f"{min(values):.1f} / {statistics.median(values):.1f} / {max(values):.1f}"
            )
        row["settled"] = all(r["settled"] for r in runs)  # false: a reading took its last sample after SETTLE_MAX_S
        rows.append(emit("server_idle", row))
    table(
        rows,
        [
            "case",
            "chunks",
            "rounds",
            "idle_rss_mib",
            "searched_rss_mib",
            "edited_rss_mib",
            "peak_rss_mib",
            "ready_s",
            "settle_s",
            "settled",
        ],
        "server RSS (MiB) idle, min / median / max",
    )


if __name__ == "__main__":
    main()
