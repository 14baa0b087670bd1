"""Many small files (issue 31, part 4): a full `Memory.index()` of a memory folder beside raw onnxruntime
on the same texts, and the per-file cost as the index grows.

`python -m bench smallfiles --set DIR [--reps N] [--quick]`: DIR is a workspace (its `memory/` is used) or a
memory folder; default `../shared/eval/til-dev` when it exists. Nothing is written to DIR: each run indexes a
copy in a temporary workspace.

Full index, in interleaved rounds (default 3), back to back so that load from elsewhere hits both alike:
  raw   bench/raw.py's RawEmbedder on exactly the texts the indexer embeds (every window of every chunk with
        a new embed hash, as `Indexer._write_group` asks for them); checked against the texts the indexer
        really asked for in the first round
  ours  Memory(fresh copy).index() with the bundled model loaded and warm, a fresh index, no vector cache;
        Milvus Lite opened before the clock starts (start-up, timed apart), everything else inside it
Reported: min / median / max of both, of ours/raw per round, and of the same ratio in CPU seconds of this
process (less sensitive to other processes on a shared box than wall time).

Growth (the work besides the model, which only ever embeds the new files' texts): with bench.hashed's
HashEmbedder in one workspace filled in steps, at N files already indexed:
  rescan      index() with nothing changed (walking, reading and hashing every file: the one pass over all
              files a reconcile must make), ms
  index()     index() after 50 new files were written, ms per new file, and the same less the rescan
  index_file  index_file() of 50 more new files, one call each (an editor's save, a watcher's event), ms per
              file (wall and CPU time of this process); each call writes the file's rows, flushes and saves
              the BM25 statistics
median over the rounds at each N.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import ROOT, emit, log, table

DEFAULT_SET = ROOT.parent / "shared" / "eval" / "til-dev"
STEP = 50  # new files per growth measurement (per path)


def memory_folder(folder: Path) -> Path:
    """The memory folder of a workspace (`DIR/memory`), or DIR itself when it holds the Markdown."""
    return folder / "memory" if (folder / "memory").is_dir() else folder


def embedded_texts(memory: Path, model: str) -> tuple[list[str], int]:
    """(the texts a full index embeds, in the order it asks for them, number of chunks): each window of each
    chunk whose embed hash was not seen before, files in path order (core/index.py)."""
    from memsearch_lsp.core.chunks import MAX_CHARS, chunk_markdown
    from memsearch_lsp.core.files import read_text

    seen: dict[str, list[str]] = {}
    chunks = 0
    for path in sorted(memory.rglob("*.md")):
        text, _ = read_text(path)
        for chunk in chunk_markdown(
            text, f"memory/{path.relative_to(memory).as_posix()}", model=model, max_chars=MAX_CHARS
        ):
            seen.setdefault(chunk.embed_hash, chunk.windows)
            chunks += 1
    return [w for ws in seen.values() for w in ws], chunks


class Recording:
    """An embedder that records every text it is asked to embed (and otherwise is the one it wraps)."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.texts: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return list(self.inner.embed(texts))


def run_ours(memory: Path, embedder: Any, scratch: Path, n: int) -> dict[str, float]:
    from memsearch_lsp.core.memory import Memory

    ws = scratch / f"ours-{n}"
    shutil.copytree(memory, ws / "memory")
    mem = Memory(ws, embedder=embedder)
    try:
        start = time.perf_counter()
        mem.store  # noqa: B018 - open Milvus Lite (start-up, not indexing)
        opened = time.perf_counter()
        cpu = time.process_time()
        stats = mem.index()
        return {
            "files": stats.files_total,
            "chunks": stats.chunks_total,
            "embedded": stats.chunks_embedded,
            "open_s": opened - start,
            "index_s": time.perf_counter() - opened,
            "cpu_s": time.process_time() - cpu,
        }
    finally:
        mem.close()
        mem.close()
        shutil.rmtree(ws, ignore_errors=True)


def run_raw(raw: Any, texts: list[str]) -> dict[str, float]:
    start, cpu = time.perf_counter(), time.process_time()
    raw.embed(texts)
    return {"seconds": time.perf_counter() - start, "cpu_s": time.process_time() - cpu}


def spread(values: Sequence[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def full_index(memory: Path, reps: int) -> dict[str, Any]:
    from bench.raw import RawEmbedder
    from memsearch_lsp.core.embedding.onnx import FastEmbedEmbedder

    embedder = FastEmbedEmbedder()
    embedder.embed(["warm up"])
    texts, chunks = embedded_texts(memory, embedder.model_name)
    raw = RawEmbedder()
    raw.embed(texts[:64])
    files = sum(1 for _ in memory.rglob("*.md"))
    log(f"smallfiles: {files} files, {chunks} chunks, {len(texts)} texts to embed, {reps} rounds of raw + ours")
    rounds = []
    with tempfile.TemporaryDirectory(prefix="bench-smallfiles-") as tmp:
        for n in range(reps):
            r = run_raw(raw, texts)
            recorder = Recording(embedder) if n == 0 else embedder
            o = run_ours(memory, recorder, Path(tmp), n)
            if isinstance(recorder, Recording) and Counter(recorder.texts) != Counter(texts):
                raise SystemExit("the indexer embedded other texts than the raw run: fix embedded_texts()")
            rounds.append((r, o))
            log(
                f"  round {n + 1}: raw {r['seconds']:.1f}s, ours {o['index_s']:.1f}s "
                f"({o['index_s'] / r['seconds']:.3f}); CPU raw {r['cpu_s']:.1f}s, ours {o['cpu_s']:.1f}s "
                f"({o['cpu_s'] / r['cpu_s']:.3f}); load {os.getloadavg()[0]:.2f}"
            )
    raw_s = [r["seconds"] for r, _ in rounds]
    ours_s = [o["index_s"] for _, o in rounds]
    ratio = [o["index_s"] / r["seconds"] for r, o in rounds]
    cpu_ratio = [o["cpu_s"] / r["cpu_s"] for r, o in rounds]
    return {
        "files": files,
        "chunks": chunks,
        "texts": len(texts),
        "reps": reps,
        **{f"raw_s_{k}": v for k, v in spread(raw_s).items()},
        **{f"ours_s_{k}": v for k, v in spread(ours_s).items()},
        **{f"ratio_{k}": v for k, v in spread(ratio).items()},
        **{f"cpu_ratio_{k}": v for k, v in spread(cpu_ratio).items()},
        "raw_cpu_s": statistics.median(r["cpu_s"] for r, _ in rounds),
        "ours_cpu_s": statistics.median(o["cpu_s"] for _, o in rounds),
        "store_open_s": statistics.median(o["open_s"] for _, o in rounds),
        "load": os.getloadavg(),
    }


def growth_round(sources: list[Path], points: Sequence[int], scratch: Path) -> dict[int, dict[str, float]]:
    """One pass over `points` in one workspace (the HashEmbedder: no model time)."""
    from bench.hashed import HashEmbedder
    from memsearch_lsp.core.memory import Memory

    ws = scratch / "growth"
    shutil.rmtree(ws, ignore_errors=True)
    (ws / "memory").mkdir(parents=True)
    mem = Memory(ws, embedder=HashEmbedder())
    out: dict[int, dict[str, float]] = {}
    done = 0

    def add(count: int) -> list[Path]:
        nonlocal done
        part = sources[done : done + count]
        for path in part:
            shutil.copyfile(path, ws / "memory" / path.name)
        done += len(part)
        return part

    try:
        for point in points:
            add(point - done)
            mem.index()
            start = time.perf_counter()
            mem.index()
            rescan = time.perf_counter() - start
            added = add(STEP)
            start = time.perf_counter()
            mem.index()
            reconcile = time.perf_counter() - start
            single = add(STEP)
            start, cpu = time.perf_counter(), time.process_time()
            for path in single:
                mem.index_file(f"memory/{path.name}")
            one_by_one, one_by_one_cpu = time.perf_counter() - start, time.process_time() - cpu
            out[point] = {
                "rescan_ms": 1000 * rescan,
                "index_ms_per_new_file": 1000 * reconcile / len(added),
                "beyond_rescan_ms_per_new_file": 1000 * (reconcile - rescan) / len(added),
                "index_file_ms_per_file": 1000 * one_by_one / len(single),
                "index_file_cpu_ms_per_file": 1000 * one_by_one_cpu / len(single),
            }
    finally:
        mem.close()
        mem.close()
        shutil.rmtree(ws, ignore_errors=True)
    return out


def growth(memory: Path, reps: int) -> list[dict[str, Any]]:
    sources = sorted(memory.glob("*.md"))
    last = len(sources) - 2 * STEP
    if last < 0:
        raise SystemExit(f"{memory}: the growth check needs at least {2 * STEP} files at its top level")
    points = sorted({0, *(round(last * k / 4) for k in range(1, 5))})
    per_round = []
    with tempfile.TemporaryDirectory(prefix="bench-smallfiles-growth-") as tmp:
        for n in range(reps):
            per_round.append(growth_round(sources, points, Path(tmp)))
            log(
                f"  growth round {n + 1}: "
                + ", ".join(
                    f"N={p}: {r['index_ms_per_new_file']:.1f}/{r['index_file_ms_per_file']:.1f} ms"
                    for p, r in per_round[-1].items()
                )
            )
    rows = []
    for point in points:
        row: dict[str, Any] = {"indexed_files": point, "reps": reps}
        for key in per_round[0][point]:
            row[key] = statistics.median(r[point][key] for r in per_round)
        rows.append(emit("smallfiles_growth", {"set": memory.parent.name, **row}))
    return rows


def main(args: Any) -> None:
    folders = [Path(d).expanduser().resolve() for d in args.set or []] or [DEFAULT_SET]
    reps = args.reps or 3
    uptime = os.getloadavg()
    for folder in folders:
        memory = memory_folder(folder)
        if not memory.is_dir():
            raise SystemExit(f"{memory}: no such memory folder (pass --set DIR)")
        rows = (
            []
            if args.quick
            else [emit("smallfiles", {"set": folder.name, "load_before": uptime, **full_index(memory, reps)})]
        )
        if rows:
            table(
                rows,
                [
                    "set",
                    "files",
                    "chunks",
                    "texts",
                    "reps",
                    "raw_s_min",
                    "raw_s_median",
                    "raw_s_max",
                    "ours_s_min",
                    "ours_s_median",
                    "ours_s_max",
                    "ratio_min",
                    "ratio_median",
                    "ratio_max",
                    "cpu_ratio_min",
                    "cpu_ratio_median",
                    "cpu_ratio_max",
                    "raw_cpu_s",
                    "ours_cpu_s",
                    "store_open_s",
                ],
                f"many small files: full Memory.index() vs raw onnxruntime on the same texts ({folder.name})",
            )
        table(
            growth(memory, reps),
            [
                "indexed_files",
                "rescan_ms",
                "index_ms_per_new_file",
                "beyond_rescan_ms_per_new_file",
                "index_file_ms_per_file",
                "index_file_cpu_ms_per_file",
                "reps",
            ],
            f"per-file cost as the index grows ({folder.name}, HashEmbedder: no model time, {STEP} new "
            "files per path, median of rounds)",
        )
