"""A persistent embedding cache for the benchmark's own index builds (never for timed throughput runs).

Building the 100k-chunk index embeds 100k texts (about an hour on 2 busy cores); when a change in the
store's schema makes the server move an index aside, the rebuild should cost Milvus inserts only. The cache
is a SQLite file in the work folder keyed by sha256(model + text); `fresh` counts texts the model ran on.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


class CachedEmbedder:
    def __init__(self, inner: Any, path: Path):
        self.inner = inner
        self.model_name = inner.model_name
        self.path = path
        self.fresh = 0
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS v (h TEXT PRIMARY KEY, b BLOB)")

    @property
    def dim(self) -> int:
        return self.inner.dim

    def __getattr__(self, name: str) -> Any:  # the inner embedder's extras (embed_query, provider, ...)
        return getattr(self.inner, name)

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.model_name}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        keys = [self._key(t) for t in texts]
        found: dict[str, list[float]] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                part = keys[start : start + 500]
                marks = ",".join("?" * len(part))
                for h, blob in self._db.execute(f"SELECT h, b FROM v WHERE h IN ({marks})", part):
                    found[h] = np.frombuffer(blob, dtype=np.float32).tolist()
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            vectors = self.inner.embed([texts[i] for i in missing])
            self.fresh += len(missing)
            with self._lock:
                self._db.executemany(
                    "INSERT OR REPLACE INTO v VALUES (?, ?)",
                    [(keys[i], np.asarray(v, dtype=np.float32).tobytes()) for i, v in zip(missing, vectors)],
                )
                self._db.commit()
            for i, v in zip(missing, vectors):
                found[keys[i]] = list(v)
        return [found[k] for k in keys]

    def close(self) -> None:
        with self._lock:
            self._db.close()
