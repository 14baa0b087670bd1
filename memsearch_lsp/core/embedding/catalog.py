"""CatalogEmbedder: a model of fastembed's own catalog by name (`embedding.provider = "fastembed"`), downloaded once
into the user's cache when the user's settings name it, then read from there offline.

Nothing here runs unless those settings say so: the default (the bundled model) never downloads. The first load
looks in `<cache>/memsearch-lsp/fastembed` only; a model not there is downloaded with the hub's progress bars on
stderr (the editor's output panel, the CLI's terminal), and a failure (no connection, `HF_HUB_OFFLINE` set)
is an EmbeddingError that says where the model was looked for and what to do.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Sequence
from typing import Any

from memsearch_lsp.config import ConfigError, EmbeddingConfig
from memsearch_lsp.core.embedding.base import Calibration, EmbeddingError, variant
from memsearch_lsp.core.embedding.calibration import measure
from memsearch_lsp.core.embedding.model_folder import cache_root
from memsearch_lsp.core.embedding.onnx import MAX_BATCH, FastEmbedEmbedder, _quiet_fastembed, _truncate

log = logging.getLogger(__name__)

# The prefixes a catalog model was trained with (document, query), used unless embedding.*_prefix says otherwise
# (every e5 model: "passage: ", "query: ").
PREFIXES = {"google/embeddinggemma-300m": ("title: none | text: ", "task: search result | query: ")}


def catalog() -> list[dict[str, Any]]:
    """fastembed's text embedding models (name, dim, size_in_GB, sources, ...)."""
    _quiet_fastembed()
    from fastembed import TextEmbedding

    return [dict(m) for m in TextEmbedding.list_supported_models()]


def find(name: str) -> dict[str, Any]:
    """The catalog entry named `name` (its full name or the part after the '/', any case); ConfigError else."""
    models = catalog()
    wanted = name.strip().lower()
    for entry in models:
        full = str(entry["model"]).lower()
        if wanted in (full, full.rsplit("/", 1)[-1]):
            return entry
    near = sorted(str(m["model"]) for m in models if wanted.rsplit("/", 1)[-1][:6] in str(m["model"]).lower())
    raise ConfigError(
        f"embedding.model {name!r} is not in fastembed's catalog"
        + (f"; close: {', '.join(near[:5])}" if near else "")
        + " (embedding.provider = 'fastembed' takes a catalog name, e.g. paraphrase-multilingual-MiniLM-L12-v2)"
    )


class CatalogEmbedder(FastEmbedEmbedder):
    """A catalog model run by fastembed (its own pooling and normalisation), shared like the others."""

    provider = "fastembed"

    def __init__(self, settings: EmbeddingConfig):
        entry = find(settings.model)
        self.name = str(entry["model"])
        self.size_gb = float(entry.get("size_in_GB") or 0.0)
        e5 = ("passage: ", "query: ") if "e5-" in self.name.lower() else ("", "")
        document_prefix, query_prefix = PREFIXES.get(self.name, e5)
        self.document_prefix = settings.document_prefix or document_prefix
        self.query_prefix = settings.query_prefix or query_prefix
        self.folder = None
        self.languages = ()
        self.max_tokens = settings.max_tokens  # 0: the model's own limit
        self.model_name = (
            f"fastembed:{self.name}"
            + (f"@{self.max_tokens}" if self.max_tokens else "")
            + variant(EmbeddingConfig(document_prefix=self.document_prefix))
        )
        self.batch_size = max(1, min(settings.batch_size, MAX_BATCH))
        self.threads = settings.threads or None
        self._model: Any = None
        self.dim = int(entry.get("dim") or 0)

    @property
    def cache(self) -> str:
        return str(cache_root() / "fastembed")

    def _source(self) -> str:
        return f"fastembed:{self.name}"

    def _load_new(self) -> Any:
        _quiet_fastembed()
        from fastembed import TextEmbedding

        try:
            model = TextEmbedding(self.name, cache_dir=self.cache, threads=self.threads, local_files_only=True)
        except Exception as exc:
            log.debug("%s is not in %s yet (%s)", self.name, self.cache, exc)
            model = self._download(TextEmbedding)
        _truncate(model, self.max_tokens)
        return model

    def _download(self, text_embedding: Any) -> Any:
        where = f"{self.name} is not in {self.cache}"
        if os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "TRUE", "YES", "ON"}:
            raise EmbeddingError(
                f"{where} and HF_HUB_OFFLINE is set, so it cannot be downloaded: unset it once with a connection "
                "(the model is downloaded once, then read offline), or choose another embedding.provider"
            )
        log.warning("downloading %s (about %.2f GB) into %s, once", self.name, self.size_gb, self.cache)
        try:
            return text_embedding(self.name, cache_dir=self.cache, threads=self.threads)
        except Exception as exc:
            raise EmbeddingError(
                f"{where} and downloading it failed ({type(exc).__name__}: {exc}); check the connection (the model "
                "is downloaded once, then read offline), or choose another embedding.provider"
            ) from exc

    def _run(self, texts: Sequence[str], done: Callable[[int], None] | None = None) -> list[list[float]]:
        """fastembed's vectors, L2-normalised (some catalog models, e.g. paraphrase-multilingual, are not)."""
        out = []
        for vector in super()._run(texts, done):
            norm = math.hypot(*vector) or 1.0
            out.append([x / norm for x in vector])
        return out

    def calibration(self) -> Calibration:
        return measure(self.model_name, self.embed, self.embed_query)
