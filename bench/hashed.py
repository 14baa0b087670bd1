"""A large index for search latency only (`python -m bench.hashed CHUNKS DEST`, then
`python -m bench.search --worker DEST 1`): the bench corpus of CHUNKS chunks copied to DEST and indexed
with sha256-seeded unit vectors stored under the bundled model's name, so the real model answers the
queries against it. The FLAT and BM25 scans cost the same whatever the values; quality is not measured.
A real-model build of 100k chunks takes about an hour on 2 cores, this one about 20 minutes."""

from __future__ import annotations

import hashlib
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


class HashEmbedder:
    """Unit vectors seeded by each text's sha256, named like the bundled model."""

    def __init__(self) -> None:
        from memsearch_lsp.core.embedding.onnx import FastEmbedEmbedder

        real = FastEmbedEmbedder()
        self.model_name, self.dim = real.model_name, real.dim

    provider, max_tokens, languages = "hashed", 0, ()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return hashed_vectors(texts, self.dim)

    def embed_query(self, query: str) -> list[float]:
        return hashed_vectors([query], self.dim)[0]

    def warm(self) -> None:
        pass

    def calibration(self) -> Any:
        from memsearch_lsp.core.embedding import REFERENCE

        return REFERENCE


def patch_embedder() -> None:
    """Make the bundled model's embedder answer documents with hashed vectors, the model itself loaded by the first
    batch all the same (so a process holds what it would: the model's session) and still embedding queries."""
    from memsearch_lsp.core.embedding import onnx

    real = onnx.FastEmbedEmbedder.embed

    def embed(self: Any, texts: Sequence[str]) -> list[list[float]]:
        if not getattr(self, "bench_loaded", False):
            real(self, list(texts[:1]))
            self.bench_loaded = True
        return hashed_vectors(texts, self.dim)

    def embed_reporting(self: Any, texts: Sequence[str], done: Callable[[int], None]) -> list[list[float]]:
        vectors = embed(self, texts)  # (the indexer's path when it reports progress: the server's, the CLI's)
        done(len(vectors))
        return vectors

    onnx.FastEmbedEmbedder.embed = embed  # type: ignore[method-assign]
    onnx.FastEmbedEmbedder.embed_reporting = embed_reporting  # type: ignore[method-assign]


def hashed_vectors(texts: Sequence[str], dim: int) -> list[list[float]]:
    """One unit vector per text, seeded by its sha256."""
    import numpy as np

    out = []
    for text in texts:
        seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
        vector = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
        out.append((vector / np.linalg.norm(vector)).tolist())
    return out


def main(chunks: int, dest: Path) -> None:
    from bench.corpus import ensure
    from memsearch_lsp.core.memory import Memory

    if not (dest / "memory").is_dir():
        shutil.copytree(ensure(chunks) / "memory", dest / "memory")
    start = time.perf_counter()
    memory = Memory(dest, embedder=HashEmbedder())
    stats = memory.index()
    memory.close()
    print(f"{stats.chunks_total} chunks in {time.perf_counter() - start:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main(int(sys.argv[1]), Path(sys.argv[2]))
