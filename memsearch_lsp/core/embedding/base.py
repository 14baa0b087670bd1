"""What every embedder shares (the bundled, an ONNX folder, an endpoint): the protocol, errors, the query form."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from memsearch_lsp.config import EmbeddingConfig

CHARS_PER_TOKEN = 3  # a conservative guess for cutting text sent to an endpoint


class EmbeddingError(RuntimeError):
    """The embedding model cannot be loaded or run; the message says what to do."""


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into L2-normalised vectors of a fixed dimension."""

    model_name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def query_vector(embedder: Embedder, query: str) -> list[float]:
    """A search query's vector: the embedder's query form (`embed_query`: a prefix, a query model) when
    it has one, else the plain embedding."""
    embed_query = getattr(embedder, "embed_query", None)
    return list(embed_query(query)) if embed_query is not None else embedder.embed([query])[0]


def variant(settings: EmbeddingConfig) -> str:
    """The part of a stored model name that says how chunks are embedded beyond the model itself."""
    if not settings.document_prefix:
        return ""
    return "+" + hashlib.sha256(settings.document_prefix.encode()).hexdigest()[:8]
