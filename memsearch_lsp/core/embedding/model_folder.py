"""ModelFolder: what a local ONNX embedding model folder holds (files, pooling, max length, identity); pure."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memsearch_lsp.config import ConfigError

MODEL_FILES = ("model.onnx", "onnx/model.onnx")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")
POOLINGS = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls", "pooling_mode_lasttoken": "last_token"}
_SAMPLE = 1 << 20  # bytes of the ONNX file's head and tail that go into the fingerprint
_MAX_SANE = 1 << 20  # a limit above this is transformers' "unknown" (1e30) or a typo


@dataclass(frozen=True)
class ModelFolder:
    """A sentence-transformers style ONNX export: model.onnx, tokenizer files, optional pooling config."""

    path: Path
    model_file: str  # relative to path: model.onnx or onnx/model.onnx
    pooling: str  # mean | cls | last_token
    max_tokens: int  # tokens read per text (longer texts are cut)
    dim: int  # hidden size from config.json; 0 = known once the model runs
    fingerprint: str  # of the weights, tokenizer, pooling and max length: a change re-embeds

    @property
    def identity(self) -> str:
        """The model name stored with every vector (chunk ids and the embedding cache depend on it)."""
        return f"onnx:{self.path.name}@{self.fingerprint}"


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"embedding.model: cannot read {path}: {exc}") from exc
    return data if isinstance(data, dict) else {}


def _limit(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= _MAX_SANE else 0


def read_pooling(folder: Path) -> str:
    """Pooling from the sentence-transformers module config (modules.json -> <n>_Pooling/config.json);
    mean pooling when the folder does not say."""
    pooling_dirs = []
    modules = folder / "modules.json"
    if modules.is_file():
        try:
            entries = json.loads(modules.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise ConfigError(f"embedding.model: cannot read {modules}: {exc}") from exc
        pooling_dirs = [
            folder / str(m.get("path", ""))
            for m in entries
            if isinstance(m, dict) and str(m.get("type", "")).endswith("Pooling")
        ]
    pooling_dirs += sorted(folder.glob("*_Pooling"))
    for directory in pooling_dirs:
        if (directory / "config.json").is_file():
            config = _json(directory / "config.json")
            chosen = [name for key, name in POOLINGS.items() if config.get(key)]
            if len(chosen) == 1:
                return chosen[0]
            modes = sorted(k for k, v in config.items() if k.startswith("pooling_mode") and v)
            raise ConfigError(
                f"embedding.model: {directory / 'config.json'} asks for pooling {modes}; supported: "
                f"exactly one of {sorted(POOLINGS)}"
            )
    return "mean"


def read_max_tokens(folder: Path) -> int:
    """sentence_bert_config.json `max_seq_length`, else the tokenizer's `model_max_length`/`max_length`."""
    sbert = folder / "sentence_bert_config.json"
    if sbert.is_file() and _limit(_json(sbert).get("max_seq_length")):
        return int(_json(sbert)["max_seq_length"])
    tokenizer = _json(folder / "tokenizer_config.json")
    limits = [n for n in (_limit(tokenizer.get("model_max_length")), _limit(tokenizer.get("max_length"))) if n]
    if limits:
        return min(limits)
    config = folder / "config.json"
    positions = _limit(_json(config).get("max_position_embeddings")) if config.is_file() else 0
    return positions or 512


def _fingerprint(folder: Path, model_file: str, pooling: str, max_tokens: int) -> str:
    digest = hashlib.sha256(f"{pooling}:{max_tokens}".encode())
    onnx = folder / model_file
    size = onnx.stat().st_size
    digest.update(str(size).encode())
    with onnx.open("rb") as handle:
        digest.update(handle.read(_SAMPLE))
        if size > 2 * _SAMPLE:
            handle.seek(size - _SAMPLE)
            digest.update(handle.read(_SAMPLE))
    for name in TOKENIZER_FILES:
        digest.update((folder / name).read_bytes())
    return digest.hexdigest()[:12]


def read_model_folder(path: str | Path, max_tokens: int = 0, root: Path | None = None) -> ModelFolder:
    """Describe a model folder (relative paths start at `root`); ConfigError says what is missing."""
    folder = Path(path).expanduser()
    if not folder.is_absolute() and root is not None:
        folder = root / folder
    folder = folder.resolve()
    if not folder.is_dir():
        raise ConfigError(
            f"embedding.model: {path!r} is not a folder (provider 'onnx' wants a folder with "
            f"model.onnx, tokenizer.json and tokenizer_config.json)"
        )
    model_file = next((name for name in MODEL_FILES if (folder / name).is_file()), "")
    missing = [name for name in TOKENIZER_FILES if not (folder / name).is_file()]
    if not model_file or missing:
        missing = ([] if model_file else ["model.onnx"]) + missing
        raise ConfigError(
            f"embedding.model: {folder} has no {', '.join(missing)} (a model folder needs "
            f"model.onnx or onnx/model.onnx, tokenizer.json and tokenizer_config.json)"
        )
    pooling = read_pooling(folder)
    own = read_max_tokens(folder)
    config = _json(folder / "config.json") if (folder / "config.json").is_file() else {}
    positions = _limit(config.get("max_position_embeddings"))
    limit = max_tokens or own
    if positions and limit > positions:
        limit = positions
    dense = (folder / "modules.json").is_file() and "Dense" in (folder / "modules.json").read_text(encoding="utf-8")
    dim = 0 if dense else _limit(config.get("hidden_size"))  # a Dense layer changes the size: probe it
    return ModelFolder(folder, model_file, pooling, limit, dim, _fingerprint(folder, model_file, pooling, limit))
