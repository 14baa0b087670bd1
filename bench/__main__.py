"""`python -m bench <name> [--quick]`: corpus, coldstart, throughput, incremental, search, quality, compaction, all;
experiments: metric (dense COSINE vs IP), knobs (embedding settings alone), fusion (learned fusion: replay,
fit, cross-validation on labelled sets); analyzer (BM25 analysis replay per language); short_queries (the
labelled questions asked as keywords); loop (the agent loop through the Claude Code hooks, bench/loop.py);
smallfiles (a memory folder of many small notes indexed vs raw onnxruntime, per-file cost as it grows)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

NAMES = ["corpus", "coldstart", "throughput", "incremental", "search", "quality", "compaction"]
EXTRA = [
    "metric",
    "knobs",
    "fusion",
    "analyzer",
    "short_queries",
    "loop",
    "smallfiles",
]  # experiments and long replays, not part of `all`


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("name", choices=[*NAMES, *EXTRA, "all"])
    parser.add_argument("--quick", action="store_true", help="small sizes and few runs (under 5 minutes for all)")
    parser.add_argument("--chunks", type=int, default=0, help="only this corpus size")
    parser.add_argument("--reps", type=int, default=0, help="repetitions (default per benchmark)")
    parser.add_argument("--seed", type=int, default=7, help="corpus seed")
    parser.add_argument(
        "--set",
        action="append",
        metavar="DIR",
        help="quality, analyzer, short_queries: a folder of labelled workspaces (memory/ + truth.json); "
        "compaction: a folder of logs (memory/ + facts.json); smallfiles: a workspace or memory "
        "folder (default ../shared/eval/til-dev); repeatable",
    )
    parser.add_argument("--no-lsp", action="store_true", help="quality: skip the workspace/symbol pass")
    parser.add_argument(
        "--conversations",
        type=int,
        default=0,
        metavar="N",
        help="loop: replay only the first N labelled workspaces (default: all; 1 with --quick)",
    )
    parser.add_argument(
        "--fit",
        action="store_true",
        help="fusion: fit the learned fusion on the --set sets and write its weights to core/search/rank.py",
    )
    parser.add_argument("--cv", action="store_true", help="fusion: cross-validate the fit (leave one group out)")
    parser.add_argument(
        "--with-model",
        action="append",
        metavar="MODEL",
        help="fusion: also dump the sets with this embedding.model (e.g. multilingual-e5-small); repeatable",
    )
    parser.add_argument(
        "--calibrate", action="store_true", help="fusion: print each model's cosines on the calibration probe"
    )
    parser.add_argument(
        "--setting",
        action="append",
        metavar="NAME",
        help="quality: only this ranking setting (bench/quality.py SETTINGS); repeatable",
    )
    embedding = parser.add_argument_group(
        "embedding provider (quality, throughput; default: MEMSEARCH_EMBEDDING_* or the bundled model)"
    )
    embedding.add_argument("--provider", choices=["bundled", "onnx", "openai"], help="embedding.provider")
    embedding.add_argument("--model", help="embedding.model: an onnx folder or the endpoint's model name")
    embedding.add_argument("--base-url", help="embedding.base_url of an OpenAI-compatible endpoint")
    embedding.add_argument("--api-key-env", help="embedding.api_key_env: the variable holding the key")
    embedding.add_argument("--dimensions", type=int, help="embedding.dimensions")
    embedding.add_argument("--max-tokens", type=int, help="embedding.max_tokens")
    embedding.add_argument("--batch-size", type=int, help="embedding.batch_size")
    embedding.add_argument("--document-prefix", help="embedding.document_prefix (e5: 'passage: ')")
    embedding.add_argument("--query-prefix", help="embedding.query_prefix (e5: 'query: ')")
    embedding.add_argument("--query-model", help="embedding.query_model (openai: a model name for queries)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    root = str(Path(__file__).resolve().parent.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    names = NAMES if args.name == "all" else [args.name]
    started = time.perf_counter()
    for name in names:
        begin = time.perf_counter()
        print(f"\n## bench {name}{' --quick' if args.quick else ''}", flush=True)
        importlib.import_module(f"bench.{name}").main(args)
        print(f"# {name}: {time.perf_counter() - begin:.1f}s", flush=True)
    print(f"# total: {time.perf_counter() - started:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
