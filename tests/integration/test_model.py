"""The real bundled model (int8 all-MiniLM-L6-v2 on onnxruntime, as fastembed runs it), fully offline."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memsearch_lsp.core.embedding.onnx import FastEmbedEmbedder, by_length
from tests.helpers import make_workspace

pytestmark = pytest.mark.model


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))


def test_vectors_are_normalised_and_related_text_scores_higher() -> None:
    embedder = FastEmbedEmbedder()
    query, related, unrelated = embedder.embed(
        [
            "How long do cached entries live in Redis?",
            "We use Redis for L1 cache with 5min TTL.",
            "Priya wants guest checkout without an account by the end of March.",
        ]
    )
    assert embedder.dim == len(query) == 384
    assert abs(cosine(query, query) - 1) < 1e-3
    assert cosine(query, related) > cosine(query, unrelated) + 0.2


FASTEMBED_PARITY = """
import sys
import numpy as np
from memsearch_lsp.core.embedding.onnx import FastEmbedEmbedder, bundled_model_dir, _truncate
texts = ["redis ttl", "We chose Kafka [SEP] for the [PAD] event bus", "x " * 400, "", "Ünïcödé 日本語 🎉",
         "short", "a much longer text about replicas " * 30] * 2  # 14 texts: batched by length, padded
ours = {}
for limit in (256, 64):
    embedder = FastEmbedEmbedder(max_tokens=limit, batch_size=4)
    ours[limit] = np.array(embedder.embed(texts) + [embedder.embed_query("redis ttl")])
assert "fastembed" not in sys.modules, "the bundled model loads without fastembed"
from fastembed import TextEmbedding
for limit, vectors in ours.items():
    reference = TextEmbedding("sentence-transformers/all-MiniLM-L6-v2", specific_model_path=str(bundled_model_dir()),
                              local_files_only=True)
    _truncate(reference, limit)
    expected = np.array(list(reference.embed(texts + ["redis ttl"], batch_size=3)))
    assert vectors.shape == expected.shape == (15, 384)
    assert np.abs(vectors - expected).max() < 1e-5, (limit, np.abs(vectors - expected).max())
print("same")
"""


def test_the_bundled_model_gives_fastembeds_vectors_without_importing_fastembed() -> None:
    """fastembed's import alone (huggingface_hub, httpx, its image models) was ~0.4 s of a cold CLI search; the
    bundled model now runs on onnxruntime directly and must embed exactly as fastembed did (the stored vectors
    came from it): same tokenizer settings, token limit, padding, mean pooling and normalisation."""
    result = subprocess.run([sys.executable, "-c", FASTEMBED_PARITY], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "same", result.stderr[-2000:]


def test_embedders_with_the_same_model_share_one_loaded_copy() -> None:
    """A server with several workspace folders (one Memory each) holds the model once, not once per folder."""
    import gc
    import weakref

    first, second = FastEmbedEmbedder(batch_size=4), FastEmbedEmbedder(batch_size=16, query_prefix="q: ")
    shorter = FastEmbedEmbedder(max_tokens=128)
    first.embed(["one"]), second.embed(["two"]), shorter.embed(["three"])
    assert first._model is second._model, "same model, length and threads: one copy"
    assert shorter._model is not first._model, "another token limit is another tokenizer setting"
    assert second.embed_query("redis") != first.embed_query("redis"), "each keeps its own prefixes"
    gone = weakref.ref(shorter._model)
    del shorter
    gc.collect()
    assert gone() is None, "a copy nobody uses is freed"


def test_batching_by_length_keeps_the_input_order() -> None:
    embedder = FastEmbedEmbedder(batch_size=2)
    texts = ["a much longer sentence about PostgreSQL replicas and failover", "short", "kafka topics", "x y"]
    together = embedder.embed(texts)
    for text, vector in zip(texts, together):
        alone = embedder.embed([text])[0]
        assert cosine(alone, vector) > 0.999
    assert by_length(texts, 2) == [[3, 1], [2, 0]]


def test_nothing_is_fetched_from_any_host(tmp_path: Path) -> None:
    """A fresh cache, outbound sockets that raise, and still: index and search with the real model."""
    ws = make_workspace(tmp_path)
    script = textwrap.dedent(f"""
        import socket, sys
        real_connect = socket.socket.connect
        def guarded(self, address):
            host = address[0] if isinstance(address, tuple) else address
            if isinstance(host, str) and (host.startswith("127.") or host in ("localhost", "::1")
                                          or self.family == socket.AF_UNIX):
                return real_connect(self, address)
            raise OSError(f"network access attempted: {{address}}")
        socket.socket.connect = guarded
        socket.socket.connect_ex = lambda self, address: guarded(self, address)
        try:
            socket.create_connection(("93.184.216.34", 80), timeout=1)
            sys.exit("the guard is not armed")
        except OSError:
            pass
        from memsearch_lsp import Memory
        with Memory({str(ws)!r}) as memory:
            stats = memory.index()
            hits = memory.search("Redis cache config")
        assert stats.chunks_embedded > 30, stats
        assert hits[0].heading == "Redis Caching", hits
        print("offline ok")
    """)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "HF_HOME": str(tmp_path / "hf"),
        "NO_PROXY": "*",
    }
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "offline ok" in result.stdout
    assert (tmp_path / "cache" / "memsearch-lsp" / "models").is_dir()


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_large_batches_do_not_keep_their_memory_after_embedding() -> None:
    """ONNX Runtime's arena grows to the largest batch (~150 MB for 32 x 256 tokens) and keeps it;
    embed() gives it back after a multi-batch call, so an idle server stays lean."""
    embedder = FastEmbedEmbedder(batch_size=32)
    embedder.embed(["load the model"])
    loaded = _rss_mib()
    # one full batch of 32 x 256 tokens grows the arena to its largest; a 33rd text makes it a multi-batch call
    long_texts = [" ".join(f"word{i}x{j}" for j in range(300)) for i in range(33)]
    vectors = embedder.embed(long_texts)
    assert len(vectors) == 33 and len(vectors[0]) == 384
    assert _rss_mib() - loaded < 140  # the arena alone kept ~150 MB; allocator noise on a busy box is ~100
    # and the model still answers the same after the release
    assert embedder.embed(["load the model"])[0] == pytest.approx(embedder.embed(["load the model"])[0])


def test_one_batch_of_long_texts_gives_its_memory_back_too() -> None:
    """An editor's pass embeds one batch (<= 32 chunks): it kept ~330 MB of arena for 16 x 256 tokens (audit V:
    a server at 374-533 MiB after ordinary edits); any run that grew the arena gives it back."""
    embedder = FastEmbedEmbedder(batch_size=32)
    embedder.embed(["load the model"])
    loaded = _rss_mib()
    vectors = embedder.embed([" ".join(f"note{i}y{j}" for j in range(300)) for i in range(16)])
    assert len(vectors) == 16 and len(vectors[0]) == 384
    assert _rss_mib() - loaded < 140  # kept: ~330 MB
