"""The bundled model run directly on onnxruntime and tokenizers: what fastembed's pooled, normalised text
embedding does for all-MiniLM-L6-v2 (its tokenizer set-up, the ONNX inputs, mean pooling over the attention
mask in float64, L2), without importing fastembed, whose package imports huggingface_hub, httpx and its
image models (~0.4 s of a cold CLI search). `tests/integration/test_embedder.py` checks the vectors against
fastembed's."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any


def load_tokenizer(folder: Path) -> Any:
    """tokenizer.json with fastembed's settings (fastembed.common.preprocessor_utils.load_tokenizer): cut at
    the stricter of model_max_length / max_length, the special tokens map registered, padded to the longest
    text of a batch with the configured pad token."""
    from tokenizers import AddedToken, Tokenizer

    config_path = folder / "config.json"
    config: dict[str, Any] = json.loads(config_path.read_text()) if config_path.exists() else {}
    tokenizer_config: dict[str, Any] = json.loads((folder / "tokenizer_config.json").read_text())
    limits = [
        v
        for v in (tokenizer_config.get("model_max_length"), tokenizer_config.get("max_length"))
        if isinstance(v, int) and not isinstance(v, bool) and v > 0
    ]
    if not limits:
        raise ValueError(f"no model_max_length in {folder / 'tokenizer_config.json'}")
    special_path = folder / "special_tokens_map.json"
    special: dict[str, Any] = json.loads(special_path.read_text()) if special_path.exists() else {}

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    truncation = tokenizer.truncation or {}
    tokenizer.enable_truncation(
        max_length=min(limits),
        direction=tokenizer_config.get("truncation_side") or truncation.get("direction", "right"),
    )
    for value in special.values():
        for token in value if isinstance(value, list) else [value]:
            if isinstance(token, str):
                tokenizer.add_special_tokens([token])
            elif isinstance(token, dict):
                tokenizer.add_special_tokens([AddedToken(**token)])
    padding = tokenizer.padding or {}
    pad_token = padding.get("pad_token") or tokenizer_config.get("pad_token")
    pad_id = padding.get("pad_id", config.get("pad_token_id"))
    if pad_id is None and pad_token is not None:
        pad_id = tokenizer.token_to_id(pad_token)
    if pad_token is None or pad_id is None:
        raise ValueError(f"no pad token in {folder}")
    tokenizer.enable_padding(
        direction=tokenizer_config.get("padding_side") or padding.get("direction", "right"),
        pad_id=pad_id,
        pad_type_id=padding.get("pad_type_id", 0),
        pad_token=pad_token,
        pad_to_multiple_of=padding.get("pad_to_multiple_of"),
        length=None,
    )
    return tokenizer


class _Parts:
    """The tokenizer and the ONNX session, where fastembed keeps them (`model.model.tokenizer`,
    `model.model.model`), so the embedder's tokenizer and arena helpers serve both."""

    def __init__(self, tokenizer: Any, session: Any):
        self.tokenizer = tokenizer
        self.model = session


class PooledModel:
    """A mean-pooled, L2-normalised sentence-transformers ONNX model (model.onnx beside its tokenizer files)."""

    def __init__(self, folder: Path, threads: int | None = None, model_file: str = "model.onnx"):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads is not None:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = threads
        session = ort.InferenceSession(
            str(folder / model_file), providers=["CPUExecutionProvider"], sess_options=options
        )
        self.model = _Parts(load_tokenizer(folder), session)
        self._inputs = {node.name for node in session.get_inputs()}

    def embed(self, texts: Sequence[str], batch_size: int = 256) -> Iterator[Any]:
        """One float32 unit vector per text, in order (as fastembed's TextEmbedding.embed)."""
        for start in range(0, len(texts), batch_size):
            yield from self._batch(list(texts[start : start + batch_size]))

    def _batch(self, texts: list[str]) -> Any:
        import numpy as np

        encoded = self.model.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        output = self.model.model.run(None, feed)[0]
        summed = np.sum(output, axis=1, where=mask[:, :, np.newaxis].astype(bool), dtype=np.float64)
        pooled = summed / np.maximum(np.sum(mask, axis=1, keepdims=True), 1e-9)
        norm = np.maximum(np.linalg.norm(pooled, ord=2, axis=1, keepdims=True), 1e-12)
        return (pooled / norm).astype(output.dtype, copy=False)
