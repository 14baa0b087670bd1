"""Full-index throughput (chunks/s) of `Memory.index()` beside the physical limit (raw onnxruntime).

Each repetition is a pair, run back to back so that load from other processes hits both alike:
  raw   RawEmbedder.embed(all embedded texts)                      (bench/raw.py: no fastembed, no Milvus)
  ours  Memory(fresh copy of the corpus).index() with a warm model  (parse + embed + Milvus upsert + flush)
The ratio is ours/raw per pair; we report the median pair. Then a breakdown of ours (chunking, fastembed
alone, the rest = store) and the knobs: length-sorted batching, batch size and threads, on raw and fastembed.
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

SIZES_FULL = (1000, 10000)


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


def run_ours(corpus: Path, embedder: Any, scratch: Path, n: int) -> dict[str, float]:
    from memsearch_lsp.core.memory import Memory

    ws = scratch / f"ours-{n}"
    shutil.copytree(corpus / "memory", ws / "memory")
    memory = Memory(ws, embedder=embedder)
    try:
        start = time.perf_counter()
        memory.store  # noqa: B018 - open Milvus Lite (timed apart: it is start-up, not throughput)
        opened = time.perf_counter()
        cpu = time.process_time()
        stats = memory.index()
        done = time.perf_counter()
        return {"chunks": stats.chunks_total, "embedded": stats.chunks_embedded, "open_s": opened - start,
                "index_s": done - opened, "cpu_s": time.process_time() - cpu}
    finally:
        memory.close()
        shutil.rmtree(ws, ignore_errors=True)


def run_raw(raw: Any, texts: list[str]) -> dict[str, float]:
    start, cpu = time.perf_counter(), time.process_time()
    raw.embed(texts)
    return {"seconds": time.perf_counter() - start, "cpu_s": time.process_time() - cpu}


def knobs(texts: list[str], reps: int) -> list[dict[str, Any]]:
    """Raw and fastembed under each setting: sorted vs file order, batch size, threads."""
    import memsearch_lsp.core.embed as embed_mod
    from bench.raw import RawEmbedder
    from memsearch_lsp.core.embed import FastEmbedEmbedder

    rows = []
    settings = [("sorted", 32, 0), ("file order", 32, 0), ("sorted", 8, 0), ("sorted", 16, 0),
                ("sorted", 64, 0), ("sorted", 32, 1), ("sorted", 32, 2), ("sorted", 32, 4)]
    raws: dict[int, Any] = {}
    fasts: dict[int, Any] = {}
    original = embed_mod.by_length
    for order, batch, threads in settings:
        raw = raws.setdefault(threads, RawEmbedder(threads=threads))
        raw.batch_size, raw.sort = batch, order == "sorted"
        fast = fasts.setdefault(threads, FastEmbedEmbedder(threads=threads))
        fast.batch_size = batch
        fast.embed(["warm"])
        raw_s, fast_s = [], []
        old_max = embed_mod.MAX_BATCH
        embed_mod.MAX_BATCH = max(old_max, batch)  # let the knob reach past the default cap
        if order != "sorted":
            embed_mod.by_length = lambda t, b: [list(range(i, min(i + b, len(t)))) for i in range(0, len(t), b)]
        try:
            for _ in range(reps):
                raw_s.append(run_raw(raw, texts)["seconds"])
                start = time.perf_counter()
                fast.embed(texts)
                fast_s.append(time.perf_counter() - start)
        finally:
            embed_mod.by_length = original
            embed_mod.MAX_BATCH = old_max
        row = {"order": order, "batch": batch, "threads": threads or "auto",
               "raw_cps": len(texts) / statistics.median(raw_s),
               "fastembed_cps": len(texts) / statistics.median(fast_s),
               "texts": len(texts), "reps": reps, "load": os.getloadavg()[0]}
        row["fastembed/raw"] = row["fastembed_cps"] / row["raw_cps"]
        rows.append(emit("throughput_knobs", row))
    return rows


def main(args: Any) -> None:
    from bench.raw import RawEmbedder
    from memsearch_lsp.core.chunks import chunk_markdown
    from memsearch_lsp.core.embed import FastEmbedEmbedder

    reps = args.reps or 5
    sizes = [args.chunks] if args.chunks else ([1000] if args.quick else list(SIZES_FULL))
    embedder = FastEmbedEmbedder()
    embedder.embed(["warm up"])
    raw = RawEmbedder()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-throughput-") as tmp:
        scratch = Path(tmp)
        for size in sizes:
            corpus = ensure(size)
            if args.quick:  # a few hundred chunks keep --quick short; the full run indexes all of them
                corpus = subset(corpus, 200, scratch)
            texts, chunks = corpus_texts(corpus)
            raw.embed(texts[:64])
            log(f"throughput: {chunks} chunks, {len(texts)} unique texts, {reps} pairs")
            pairs = []
            for n in range(reps):
                r = run_raw(raw, texts)
                o = run_ours(corpus, embedder, scratch, n)
                pairs.append((r, o))
                log(f"  pair {n + 1}: raw {len(texts) / r['seconds']:.1f}/s ours {o['chunks'] / o['index_s']:.1f}/s")
            raw_cps = [len(texts) / r["seconds"] for r, _ in pairs]
            ours_cps = [o["chunks"] / o["index_s"] for _, o in pairs]
            ratios = [oc / rc for oc, rc in zip(ours_cps, raw_cps)]
            cpu_ratios = [(r["cpu_s"] / len(texts)) / (o["cpu_s"] / o["chunks"]) for r, o in pairs]
            # Breakdown of ours on the same texts: chunking, fastembed alone; the rest is the store.
            start = time.perf_counter()
            for path in sorted((corpus / "memory").glob("*.md")):
                chunk_markdown(path.read_text(encoding="utf-8"), f"memory/{path.name}")
            chunk_s = time.perf_counter() - start
            fast_s = []
            for _ in range(max(1, reps // 2)):
                start = time.perf_counter()
                embedder.embed(texts)
                fast_s.append(time.perf_counter() - start)
            index_s = statistics.median(o["index_s"] for _, o in pairs)
            row = {"chunks": chunks, "embedded": pairs[0][1]["embedded"], "reps": reps,
                   "raw_cps": statistics.median(raw_cps), "ours_cps": statistics.median(ours_cps),
                   "ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
                   "cpu_ratio": statistics.median(cpu_ratios),
                   "fastembed_cps": len(texts) / statistics.median(fast_s),
                   "index_s": index_s, "chunking_s": chunk_s, "fastembed_s": statistics.median(fast_s),
                   "store_open_s": statistics.median(o["open_s"] for _, o in pairs),
                   "load": os.getloadavg()[0], "quick": bool(args.quick)}
            row["store_and_rest_s"] = index_s - chunk_s - row["fastembed_s"]
            rows.append(emit("throughput", row))
            if not args.quick and not args.chunks and size == sizes[0]:
                kn = knobs(texts[:min(len(texts), 400)], 3)
                table(kn, ["order", "batch", "threads", "raw_cps", "fastembed_cps", "fastembed/raw"],
                      "embedding knobs (texts/s, 400 texts, median of 3)")
    table(rows, ["chunks", "raw_cps", "ours_cps", "ratio", "ratio_min", "ratio_max", "cpu_ratio", "fastembed_cps",
                 "index_s", "chunking_s", "fastembed_s", "store_and_rest_s", "store_open_s"],
          "full-index throughput vs raw onnxruntime (median of pairs)")
