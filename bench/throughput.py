"""Full-index throughput (chunks/s) of `Memory.index()` beside the physical limit (raw onnxruntime).

Each repetition is a round, run back to back so that load from other processes hits all alike:
  raw   RawEmbedder.embed(every embedded text): token-sorted batches of 32 (bench/raw.py: no fastembed, no Milvus)
  ours  Memory(fresh copy of the corpus).index() with a warm model  (parse + embed + Milvus upsert + flush)
  ours, one group   the same with index.GROUP_CHUNKS unlimited (one embed call sorts every text; 1k only)
  ours, batch 16 (, one group)   the same with embedding.batch_size 16, against raw at batch 16 (1k only)
The ratio is ours/raw per round; we report the median round, and the same ratio in CPU seconds per chunk
(less sensitive to other processes). Then a breakdown of ours (chunking, fastembed alone, the rest = BM25
weights + Milvus) and the knobs: batch order, batch size and threads, on raw and on fastembed.
With another embedding provider (--provider/--model/--base-url ..., or MEMSEARCH_EMBEDDING_*): Memory.index()
and the embedder alone, chunks/s, without the raw comparison (which exists for the bundled model only).
Memory: a full index of the corpus alone in a fresh process (`--rss-worker`): peak RSS and RSS idle after it.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import emit, log, table
from bench.corpus import ensure

SIZES_FULL = (1000,)  # --chunks 10000 adds the 10k figure: about 10 minutes a round on 2 cores


def corpus_texts(root: Path) -> tuple[list[str], int]:
    """(unique embedded texts in file order, number of chunks), as the indexer would see them."""
    from memsearch_lsp.core.chunks import chunk_markdown

    seen: dict[str, None] = {}
    chunks = 0
    for path in sorted((root / "memory").glob("*.md")):
        for chunk in chunk_markdown(path.read_text(encoding="utf-8"), f"memory/{path.name}"):
            seen.setdefault(chunk.embed_text, None)
            chunks += 1
    return list(seen), chunks


def subset(root: Path, chunks: int, base: Path) -> Path:
    """A workspace with the newest files of `root` holding about `chunks` chunks (for --quick)."""
    from memsearch_lsp.core.chunks import chunk_markdown

    target = base / f"subset-{chunks}"
    (target / "memory").mkdir(parents=True)
    total = 0
    for path in sorted((root / "memory").glob("*.md"), reverse=True):
        text = path.read_text(encoding="utf-8")
        total += len(chunk_markdown(text, f"memory/{path.name}"))
        (target / "memory" / path.name).write_text(text, encoding="utf-8")
        if total >= chunks:
            break
    return target


def run_ours(corpus: Path, embedder: Any, scratch: Path, n: int, group: int = 0) -> dict[str, float]:
    """Memory.index() on a fresh copy; `group` overrides index.GROUP_CHUNKS (chunks embedded per call)."""
    import memsearch_lsp.core.index as index_mod
    from memsearch_lsp.core.memory import Memory

    ws = scratch / f"ours-{n}-{group}"
    shutil.copytree(corpus / "memory", ws / "memory")
    memory = Memory(ws, embedder=embedder)
    default = index_mod.GROUP_CHUNKS
    try:
        start = time.perf_counter()
        memory.store  # noqa: B018 - open Milvus Lite (timed apart: it is start-up, not throughput)
        opened = time.perf_counter()
        cpu = time.process_time()
        index_mod.GROUP_CHUNKS = group or default
        stats = memory.index()
        done = time.perf_counter()
        return {
            "chunks": stats.chunks_total,
            "embedded": stats.chunks_embedded,
            "open_s": opened - start,
            "index_s": done - opened,
            "cpu_s": time.process_time() - cpu,
        }
    finally:
        index_mod.GROUP_CHUNKS = default
        memory.close()
        memory.close()
        shutil.rmtree(ws, ignore_errors=True)


def rss_worker(corpus: Path) -> dict[str, float]:
    """Runs in its own process (`python -m bench.throughput --rss-worker CORPUS`): a full index of a fresh
    copy with the shipped settings and the bundled model; peak RSS, and RSS idle after indexing."""
    from bench.common import rss_mib
    from memsearch_lsp.core.memory import Memory

    with tempfile.TemporaryDirectory(prefix="bench-rss-") as tmp:
        ws = Path(tmp)
        shutil.copytree(corpus / "memory", ws / "memory")
        memory = Memory(ws)
        stats = memory.index()
        time.sleep(1.0)
        idle = rss_mib()[0]
        memory.close()
        return {"chunks": stats.chunks_total, "peak_rss_mib": rss_mib()[1], "idle_rss_mib": idle}


def index_rss(corpus: Path) -> dict[str, float]:
    import json
    import subprocess
    import sys

    from bench.common import ROOT

    out = subprocess.run(
        [sys.executable, "-m", "bench.throughput", "--rss-worker", str(corpus)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def run_raw(raw: Any, texts: list[str]) -> dict[str, float]:
    start, cpu = time.perf_counter(), time.process_time()
    raw.embed(texts)
    return {"seconds": time.perf_counter() - start, "cpu_s": time.process_time() - cpu}


def knobs(texts: list[str], reps: int) -> list[dict[str, Any]]:
    """Raw and fastembed under each setting: batch order (token count, characters, file order), batch
    size and intra-op threads ("auto" = onnxruntime's default, one per physical core)."""
    import memsearch_lsp.core.embedding.onnx as embed_mod
    from bench.raw import RawEmbedder
    from memsearch_lsp.core.embedding.onnx import FastEmbedEmbedder

    rows = []
    settings = [
        ("tokens", 32, 0),
        ("chars", 32, 0),
        ("file order", 32, 0),
        ("tokens", 8, 0),
        ("tokens", 16, 0),
        ("tokens", 64, 0),
        ("tokens", 32, 1),
        ("tokens", 32, 2),
        ("tokens", 32, 4),
    ]
    raws: dict[int, Any] = {}
    fasts: dict[int, Any] = {}
    original = embed_mod.by_length
    orders = {
        "tokens": original,
        "chars": lambda t, b, lengths=None: original(t, b),
        "file order": lambda t, b, lengths=None: [list(range(i, min(i + b, len(t)))) for i in range(0, len(t), b)],
    }
    timings: dict[tuple[str, int, int], tuple[list[float], list[float]]] = {k: ([], []) for k in settings}
    for _ in range(reps):  # settings interleaved, so a burst of load from elsewhere hits all of them alike
        for order, batch, threads in settings:
            raw = raws.setdefault(threads, RawEmbedder(threads=threads))
            raw.batch_size, raw.sort = batch, {"tokens": "tokens", "chars": "chars"}.get(order, "none")
            fast = fasts.setdefault(threads, FastEmbedEmbedder(threads=threads))
            fast.batch_size = batch
            fast.embed(["warm"])
            old_max = embed_mod.MAX_BATCH
            embed_mod.MAX_BATCH = max(old_max, batch)  # let the knob reach past the default cap
            embed_mod.by_length = orders[order]
            try:
                timings[(order, batch, threads)][0].append(run_raw(raw, texts)["seconds"])
                start = time.perf_counter()
                fast.embed(texts)
                timings[(order, batch, threads)][1].append(time.perf_counter() - start)
            finally:
                embed_mod.by_length = original
                embed_mod.MAX_BATCH = old_max
    for (order, batch, threads), (raw_s, fast_s) in timings.items():
        row = {
            "order": order,
            "batch": batch,
            "threads": threads or "auto",
            "raw_cps": len(texts) / statistics.median(raw_s),
            "fastembed_cps": len(texts) / statistics.median(fast_s),
            "texts": len(texts),
            "reps": reps,
            "load": os.getloadavg()[0],
        }
        row["fastembed/raw"] = row["fastembed_cps"] / row["raw_cps"]
        rows.append(emit("throughput_knobs", row))
    return rows


def knobs_table(texts: list[str], reps: int) -> None:
    sample = texts[:: max(1, len(texts) // 256)][:256]  # spread over the corpus: all lengths
    kn = knobs(sample, reps)
    table(
        kn,
        ["order", "batch", "threads", "raw_cps", "fastembed_cps", "fastembed/raw"],
        f"embedding knobs (texts/s, {len(sample)} texts, median of {reps}, settings interleaved)",
    )


def knobs_main(args: Any) -> None:
    """`python -m bench knobs`: only the knob table (on the 1k corpus)."""
    texts, _ = corpus_texts(ensure(1000, args.seed))
    knobs_table(texts, args.reps or 5)


def provider_main(args: Any, embedder: Any, sizes: list[int], reps: int) -> None:
    """Another provider (an onnx folder, an endpoint): Memory.index() and the embedder alone, no raw limit."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-throughput-") as tmp:
        scratch = Path(tmp)
        for size in sizes:
            corpus = ensure(size, args.seed)
            if args.quick:
                corpus = subset(corpus, 100, scratch)
            texts, chunks = corpus_texts(corpus)
            embedder.embed(texts[:8])  # warm: load the model or open the connection
            runs, embeds = [], []
            for n in range(reps):
                runs.append(run_ours(corpus, embedder, scratch, n))
                start = time.perf_counter()
                embedder.embed(texts)
                embeds.append(time.perf_counter() - start)
                log(
                    f"  round {n + 1}: index {runs[-1]['chunks'] / runs[-1]['index_s']:.1f}/s, "
                    f"embed {len(texts) / embeds[-1]:.1f}/s"
                )
            rows.append(
                emit(
                    "throughput",
                    {
                        "chunks": chunks,
                        "variant": f"{getattr(embedder, 'provider', '?')} {embedder.model_name}",
                        "embedded": runs[0]["embedded"],
                        "reps": reps,
                        "ours_cps": statistics.median(r["chunks"] / r["index_s"] for r in runs),
                        "embed_cps": statistics.median(len(texts) / s for s in embeds),
                        "index_s": statistics.median(r["index_s"] for r in runs),
                        "load": os.getloadavg()[0],
                        "quick": bool(args.quick),
                    },
                )
            )
    table(
        rows,
        ["chunks", "variant", "ours_cps", "embed_cps", "index_s"],
        "full-index throughput with the chosen embedding provider (median of rounds)",
    )


def main(args: Any) -> None:
    from bench.common import bench_embedder, embedding_settings
    from bench.raw import RawEmbedder
    from memsearch_lsp.core.chunks import chunk_markdown
    from memsearch_lsp.core.embedding.onnx import FastEmbedEmbedder

    reps = args.reps or 5
    sizes = [args.chunks] if args.chunks else ([1000] if args.quick else list(SIZES_FULL))
    settings = embedding_settings(args)
    if settings.provider != "bundled" or settings.model != FastEmbedEmbedder().model_name:
        provider_main(args, bench_embedder(args), sizes, reps)
        return
    embedders = {32: FastEmbedEmbedder(batch_size=32), 16: FastEmbedEmbedder(batch_size=16)}
    for e in embedders.values():
        e.embed(["warm up"])
    embedder = embedders[32]
    raws = {32: RawEmbedder(batch_size=32), 16: RawEmbedder(batch_size=16)}
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-throughput-") as tmp:
        scratch = Path(tmp)
        for size in sizes:
            corpus = ensure(size, args.seed)
            if args.quick:  # a hundred chunks keep --quick short; the full run indexes all of them
                corpus = subset(corpus, 100, scratch)
            texts, chunks = corpus_texts(corpus)
            for raw in raws.values():
                raw.embed(texts[:64])
            # name -> (embedder batch size, index.GROUP_CHUNKS override; 0 = as shipped)
            variants = {"ours": (32, 0)}
            if not args.quick and size <= 1000:
                variants.update(
                    {
                        "ours, one group": (32, 1 << 30),
                        "ours, batch 16": (16, 0),
                        "ours, batch 16, one group": (16, 1 << 30),
                    }
                )
            log(f"throughput: {chunks} chunks, {len(texts)} unique texts, {reps} rounds of raw + {list(variants)}")
            rounds = []
            for n in range(reps):
                batches = sorted({b for b, _ in variants.values()}, reverse=True)
                r = {b: run_raw(raws[b], texts) for b in batches}
                got = {name: run_ours(corpus, embedders[b], scratch, n, group) for name, (b, group) in variants.items()}
                rounds.append((r, got))
                done = [f"raw b{b} {len(texts) / x['seconds']:.1f}/s" for b, x in r.items()]
                done += [f"{name} {o['chunks'] / o['index_s']:.1f}/s" for name, o in got.items()]
                log(f"  round {n + 1}: " + ", ".join(done))
            for name, (batch, _) in variants.items():
                ours = [got[name] for _, got in rounds]
                ours_cps = [o["chunks"] / o["index_s"] for o in ours]
                # The limit is raw at the same batch size; "vs best raw" compares with the fastest raw setting.
                raw_same = [len(texts) / r[batch]["seconds"] for r, _ in rounds]
                raw_best = [max(len(texts) / x["seconds"] for x in r.values()) for r, _ in rounds]
                ratios = [oc / rc for oc, rc in zip(ours_cps, raw_same)]
                cpu_ratios = [
                    (r[batch]["cpu_s"] / len(texts)) / (o["cpu_s"] / o["chunks"]) for (r, _), o in zip(rounds, ours)
                ]
                row = {
                    "chunks": chunks,
                    "variant": name,
                    "embedded": ours[0]["embedded"],
                    "reps": reps,
                    "raw_cps": statistics.median(raw_same),
                    "ours_cps": statistics.median(ours_cps),
                    "ratio": statistics.median(ratios),
                    "ratio_min": min(ratios),
                    "ratio_max": max(ratios),
                    "cpu_ratio": statistics.median(cpu_ratios),
                    "vs_best_raw": statistics.median(oc / rb for oc, rb in zip(ours_cps, raw_best)),
                    "best_raw_cps": statistics.median(raw_best),
                    "index_s": statistics.median(o["index_s"] for o in ours),
                    "store_open_s": statistics.median(o["open_s"] for o in ours),
                    "load": os.getloadavg()[0],
                    "quick": bool(args.quick),
                }
                if name == "ours":  # its memory: a full index alone in a fresh process
                    row.update({k: v for k, v in index_rss(corpus).items() if k != "chunks"})
                if name == "ours":  # where ours spends its time, on the same texts
                    start = time.perf_counter()
                    for path in sorted((corpus / "memory").glob("*.md")):
                        chunk_markdown(path.read_text(encoding="utf-8"), f"memory/{path.name}")
                    row["chunking_s"] = time.perf_counter() - start
                    start = time.perf_counter()
                    embedder.embed(texts)
                    row["fastembed_s"] = time.perf_counter() - start
                    row["fastembed_cps"] = len(texts) / row["fastembed_s"]
                    row["store_and_rest_s"] = row["index_s"] - row["chunking_s"] - row["fastembed_s"]
                rows.append(emit("throughput", row))
            if not args.quick and size == 1000:
                knobs_table(texts, reps)
    table(
        rows,
        [
            "chunks",
            "variant",
            "raw_cps",
            "ours_cps",
            "ratio",
            "ratio_min",
            "ratio_max",
            "cpu_ratio",
            "vs_best_raw",
            "index_s",
            "chunking_s",
            "fastembed_s",
            "store_and_rest_s",
            "store_open_s",
            "peak_rss_mib",
            "idle_rss_mib",
        ],
        "full-index throughput vs raw onnxruntime (median of rounds)",
    )


if __name__ == "__main__":
    import json
    import sys

    if len(sys.argv) >= 3 and sys.argv[1] == "--rss-worker":
        print(json.dumps(rss_worker(Path(sys.argv[2]))))
