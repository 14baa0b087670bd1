"""What every embedder shares (the bundled, e5, an ONNX folder, fastembed's catalog, an endpoint): errors, the
score calibration, the stored name's variant."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from memsearch_lsp.config import EmbeddingConfig

CHARS_PER_TOKEN = 3  # a conservative guess for cutting text sent to an endpoint


class EmbeddingError(RuntimeError):
    """The embedding model cannot be loaded or run; the message says what to do."""


@dataclass(frozen=True)
class Calibration:
    """Where a model's cosines lie between a query and a passage: `unrelated` (the mean over pairs about different
    things) and `related` (the mean over a question and the passage that answers it), measured on the same probe
    (core/embedding/calibration.py). Models differ widely: all-MiniLM-L6-v2 puts unrelated text near 0.03, e5
    near 0.7, with every cosine between 0.7 and 0.9. `__call__` maps a cosine onto the bundled model's scale
    (REFERENCE: the identity for it), so the fusion's confidence and the relevance floor (core/search/rank.py),
    fitted there, hold for any model."""

    unrelated: float
    related: float

    def __call__(self, cosine: float) -> float:
        scale = (REFERENCE.related - REFERENCE.unrelated) / (self.related - self.unrelated)
        return REFERENCE.unrelated + (cosine - self.unrelated) * scale

    @property
    def usable(self) -> bool:
        """A probe that separated related from unrelated text clearly (else the identity is used)."""
        return self.related - self.unrelated >= 0.05


# all-MiniLM-L6-v2 (the bundled model) on the probe: `python -m bench fusion --calibrate` prints it, and
# tests/integration/test_model.py checks the bundled model still measures this
REFERENCE = Calibration(unrelated=0.1065, related=0.6121)


def variant(settings: EmbeddingConfig) -> str:
    """The part of a stored model name that says how chunks are embedded beyond the model itself."""
    if not settings.document_prefix:
        return ""
    return "+" + hashlib.sha256(settings.document_prefix.encode()).hexdigest()[:8]
