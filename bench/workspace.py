"""Generated workspaces with a built index, cached under the work folder and shared by the benchmarks.

`built(chunks)` returns a workspace whose `memory/` holds the generated corpus and whose `.memsearch/`
holds its index, brought up to date by `Memory.index()` (a no-op when the cached index is current; a
rebuild when the store's format changed, with vectors from bench/vector_cache.py so only new texts run
through the model). The first real build is recorded (at 100k chunks it is the 100k build figure).
`clone(root, dest)` copies a built workspace so a benchmark can change it freely.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.common import dir_size_mib, emit, log, work_dir
from bench.corpus import ensure

STAMP = "index.json"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def index_size_mib(root: Path) -> float:
    """The index on disk: `.memsearch/` without indexes moved aside as broken."""
    folder = root / ".memsearch"
    if not folder.is_dir():
        return 0.0
    return sum(
        dir_size_mib(p) if p.is_dir() else p.stat().st_size / 2**20
        for p in folder.iterdir()
        if ".broken-" not in p.name
    )


def built(chunks: int, seed: int = 7, embedder: Any = None) -> tuple[Path, dict[str, Any]]:
    """(workspace, build record); the index is reconciled on every call, rebuilt only when needed."""
    from bench.vector_cache import CachedEmbedder
    from memsearch_lsp.core.embedding.onnx import FastEmbedEmbedder
    from memsearch_lsp.core.memory import Memory

    root = ensure(chunks, seed)
    corpus = json.loads((root / "corpus.json").read_text())
    stamp = root / STAMP
    with _locked(root / ".lock"):
        record = json.loads(stamp.read_text()) if stamp.is_file() else {}
        if record.get("digest") != corpus["digest"]:
            record = {}
        inner = embedder or FastEmbedEmbedder()
        cached = CachedEmbedder(inner, work_dir() / "vectors.sqlite")
        memory = Memory(root, embedder=cached)
        try:
            memory.store  # noqa: B018 - open (an incompatible index is moved aside here)
            start, cpu = time.perf_counter(), time.process_time()
            stats = memory.index()
            seconds = time.perf_counter() - start
            cpu_s = time.process_time() - cpu
        finally:
            memory.close()
            cached.close()
        for aside in (root / ".memsearch").glob("*.broken-*"):
            shutil.rmtree(aside, ignore_errors=True)
        if record and not stats.chunks_embedded and stats.chunks_total == corpus["chunks"]:
            return root, record
        log(f"built the index of {chunks} chunks: {stats}; {cached.fresh} texts ran through the model")
        record = {
            "chunks": stats.chunks_total,
            "files": stats.files_total,
            "embedded": stats.chunks_embedded,
            "model_embedded": cached.fresh,
            "index_s": round(seconds, 2),
            "cpu_s": round(cpu_s, 2),
            "chunks_per_s": round(stats.chunks_total / seconds, 2) if cached.fresh == stats.chunks_embedded else None,
            "disk_mib": round(index_size_mib(root), 2),
            "corpus_mib": round(corpus["bytes"] / 2**20, 2),
            "digest": corpus["digest"],
            "load": os.getloadavg()[0],
        }
        stamp.write_text(json.dumps(record))
        emit("build", record)
        return root, record


def clone(root: Path, dest: Path) -> Path:
    """A private copy of a built workspace (Markdown and index); the original must not be open."""
    shutil.copytree(root / "memory", dest / "memory")
    shutil.copytree(root / ".memsearch", dest / ".memsearch", ignore=shutil.ignore_patterns("*.broken-*", "*.sock"))
    return dest
