"""A deterministic fake embedder: hashed bag of words, L2-normalised (fast, no model)."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence


class FakeEmbedder:
    def __init__(self, dim: int = 64, model_name: str = "fake-embedder"):
        self.dim = dim
        self.model_name = model_name
        self.calls: list[int] = []  # texts per embed() call
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        self.texts.extend(texts)
        return [self._one(t) for t in texts]

    def _one(self, text: str) -> list[float]:
        vec = [0.0] * self.dim
        for word in re.findall(r"\w+", text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
            vec[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        if norm == 1.0 and not any(vec):
            vec[0] = 1.0
        return [v / norm for v in vec]

    @property
    def embedded(self) -> int:
        return sum(self.calls)
