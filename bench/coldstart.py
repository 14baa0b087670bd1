"""Cold start over LSP stdio: process start -> `initialize` answer, and -> the first search answer.

Three cases, each the median of `reps` fresh server processes on a copy of examples/memory:
  initialize      spawn -> InitializeResult (goal < 1 s: heavy imports are lazy)
  search, indexed spawn -> initialize -> initialized -> first `memsearch/search` answer with hits (asked at
                  once, then every 50 ms), index already on disk; empty_first counts runs whose first answer was []
  search, fresh   the same on a workspace that has never been indexed (embeds every chunk first)
Also: the import time of the server module and which heavy modules it pulls in (should be none).

And the CLI, process start to exit (`cli_rounds`; alone: `python -m bench.coldstart cli [CHUNKS ...]`, default 1000):
`memsearch-lsp --help`, `status` and `search QUERY` in fresh processes on an index already built by `bench.hashed`
(the bench corpus, sha256-seeded vectors: the real model answers the query; reading the index costs the same),
three rounds, min/median/max. One untimed run of each first, with bytecode caches written (as `pip install`
leaves them; this environment may set PYTHONDONTWRITEBYTECODE) and the files in the page cache.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, emit, log, table
from bench.lsp_client import LspClient

HEAVY = [
    "numpy",
    "onnxruntime",
    "fastembed",
    "pymilvus",
    "milvus_lite",
    "tokenizers",
    "tree_sitter",
    "grpc",
    "openai",
    "tree_sitter_markdown",
    "memsearch_lsp.core.compact.rules",  # (compaction's rules: 0.2 s of regexes, compiled at its first plan)
]
PROBE = """
import sys, time
HEAVY = %r
t = time.perf_counter()
import memsearch_lsp.lsp.setup as s
s.create_server()
took = time.perf_counter() - t
import json
print(json.dumps({"import_s": took, "heavy": [m for m in HEAVY if m in sys.modules]}))
"""


def import_probe() -> dict[str, Any]:
    code = PROBE.replace("%r", repr(HEAVY))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def one(ws: Path, search: bool) -> dict[str, float]:
    with LspClient(cwd=ws) as client:
        init_s, _ = client.initialize(ws)
        out = {"initialize_s": init_s}
        if search:
            # Ask at once, then again every 50 ms until an answer has hits: the first *useful* answer.
            mark = client.mark()
            empty = 0
            while True:
                when, hits = client.wait_answer(
                    client.send_request("memsearch/search", {"query": "redis ttl", "topK": 3}), timeout=300
                )
                if hits or empty > 2000:
                    break
                empty += 1
                time.sleep(0.05)
            out["search_s"] = when - client.t_spawn
            out["empty_answers"] = empty
            try:
                seen, _ = client.wait_notification("memsearch/indexed", after=mark, timeout=60)
                out["indexed_s"] = seen - client.t_spawn
            except Exception:
                pass
        return out


QUERY = "redis ttl for the cart service"
CLI_CASES = {"--help": ["--help"], "status": ["status"], "search": ["search", QUERY]}
# The floor a cold search is measured against (issue 37): a bare process that loads the same model and embeds the query.
FLOOR = (
    "from memsearch_lsp.config import Config\n"
    "from memsearch_lsp.core.embedding import create_embedder\n"
    f"create_embedder(Config().embedding).embed([{QUERY!r}])\n"
)


def _cli() -> list[str]:
    """The installed `memsearch-lsp` script beside this interpreter (what a user runs), else `python -m`."""
    script = Path(sys.executable).with_name("memsearch-lsp")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "memsearch_lsp"]


def hashed_index(chunks: int) -> Path:
    """The bench corpus of `chunks` chunks, indexed once by bench.hashed under the work folder."""
    from bench.common import work_dir

    dest = work_dir() / f"coldstart-cli-{chunks}"
    if not (dest / ".memsearch").is_dir():
        log(f"coldstart cli: indexing {chunks} chunks with bench.hashed")
        subprocess.run([sys.executable, "-m", "bench.hashed", str(chunks), str(dest)], cwd=ROOT, check=True)
    return dest


def cli_rounds(chunks: int, rounds: int = 3) -> list[dict[str, Any]]:
    """Each CLI case timed from process start to exit, `rounds` times, on a `chunks`-chunk index."""
    import os

    workspace = hashed_index(chunks)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["HF_HUB_OFFLINE"] = "1"
    commands = {case: [*_cli(), *argv] for case, argv in CLI_CASES.items()}
    commands["floor (model + one query)"] = [sys.executable, "-c", FLOOR]
    times: dict[str, list[float]] = {case: [] for case in commands}
    for n in range(rounds + 1):  # round 0 is the untimed warm-up; the cases interleaved in every round
        for case, argv in commands.items():
            start = time.perf_counter()
            subprocess.run(argv, cwd=workspace, env=env, check=True, stdout=subprocess.DEVNULL)
            if n:
                times[case].append(time.perf_counter() - start)
    floor = statistics.median(times["floor (model + one query)"])
    rows = []
    for case, values in times.items():
        rows.append(
            emit(
                "coldstart",
                {
                    "case": f"cli {case}",
                    "chunks": chunks,
                    "median_s": statistics.median(values),
                    "min_s": min(values),
                    "max_s": max(values),
                    "x_floor": round(statistics.median(values) / floor, 2),
                    "reps": len(values),
                },
            )
        )
    return rows


def cli_main(sizes: list[int]) -> list[dict[str, Any]]:
    rows = [row for chunks in sizes for row in cli_rounds(chunks)]
    table(
        rows,
        ["case", "chunks", "median_s", "min_s", "max_s", "x_floor", "reps"],
        "CLI cold start (seconds, process start to exit)",
    )
    return rows


def main(args: Any) -> None:
    cli_main([args.chunks] if args.chunks else [1000])
    reps = args.reps or 5
    rows = []
    probe = import_probe()
    rows.append(
        emit(
            "coldstart",
            {
                "case": "import server module",
                "median_s": probe["import_s"],
                "reps": 1,
                "heavy_modules": ",".join(probe["heavy"]) or "none",
            },
        )
    )
    with tempfile.TemporaryDirectory(prefix="bench-coldstart-") as tmp:
        base = Path(tmp) / "indexed"
        shutil.copytree(ROOT / "examples" / "memory", base / "memory")
        log("coldstart: indexing the example memory once")
        one(base, search=True)  # builds .memsearch for the "indexed" case
        cases: dict[str, list[dict[str, float]]] = {"initialize": [], "search, indexed": [], "search, fresh": []}
        for n in range(reps):
            cases["initialize"].append(one(base, search=False))
            cases["search, indexed"].append(one(base, search=True))
            fresh = Path(tmp) / f"fresh-{n}"
            shutil.copytree(ROOT / "examples" / "memory", fresh / "memory")
            cases["search, fresh"].append(one(fresh, search=True))
            log(
                f"  run {n + 1}: init {cases['initialize'][-1]['initialize_s']:.2f}s, "
                f"search(indexed) {cases['search, indexed'][-1]['search_s']:.2f}s, "
                f"search(fresh) {cases['search, fresh'][-1]['search_s']:.2f}s"
            )
    for case, runs in cases.items():
        key = "initialize_s" if case == "initialize" else "search_s"
        values = [r[key] for r in runs]
        row = {
            "case": case,
            "median_s": statistics.median(values),
            "min_s": min(values),
            "max_s": max(values),
            "reps": len(values),
            "initialize_s": statistics.median(r["initialize_s"] for r in runs),
        }
        if case != "initialize":
            row["empty_first"] = sum(1 for r in runs if r["empty_answers"])
            seen = [r["indexed_s"] for r in runs if "indexed_s" in r]
            if seen:
                row["first_indexed_s"] = statistics.median(seen)
        rows.append(emit("coldstart", row))
    table(
        rows,
        [
            "case",
            "median_s",
            "min_s",
            "max_s",
            "initialize_s",
            "first_indexed_s",
            "empty_first",
            "reps",
            "heavy_modules",
        ],
        "cold start (seconds from process start, median)",
    )


if __name__ == "__main__":
    if sys.argv[1:2] != ["cli"]:
        raise SystemExit("usage: python -m bench.coldstart cli [CHUNKS ...] (all of it: python -m bench coldstart)")
    cli_main([int(n) for n in sys.argv[2:]] or [1000])
