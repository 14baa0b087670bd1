"""Embedding providers: the model-folder reader, the registry, unknown names, trust rules, and the
`onnx` provider on a small model folder built here from the bundled files (marker `model`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memsearch_lsp.config import DEFAULT_MODEL, ConfigError, EmbeddingConfig, load_config
from memsearch_lsp.core.embedding import EmbeddingError, create_embedder, query_vector
from memsearch_lsp.core.embedding.model_folder import read_model_folder
from memsearch_lsp.core.embedding.onnx import BUNDLED_DIR, FastEmbedEmbedder, bundled_model_dir
from memsearch_lsp.core.memory import Memory

LONG = ("Redis holds the session cache with a five minute TTL and Postgres keeps the orders; " * 12).strip()


def make_folder(path: Path, pooling: str = "mean", max_seq_length: int | None = 256, onnx: Path | None = None) -> Path:
    """A sentence-transformers style ONNX folder: the bundled tokenizer files, a model.onnx (a link to
    the bundled weights, or an empty placeholder), modules.json and a pooling config."""
    path.mkdir(parents=True)
    for item in BUNDLED_DIR.iterdir():
        if item.is_file():
            shutil.copyfile(item, path / item.name)
    if onnx is None:
        (path / "model.onnx").write_bytes(b"placeholder")
    else:
        os.symlink(onnx, path / "model.onnx")
    (path / "modules.json").write_text(
        json.dumps(
            [
                {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
            ]
        )
    )
    (path / "1_Pooling").mkdir()
    (path / "1_Pooling" / "config.json").write_text(
        json.dumps(
            {
                "word_embedding_dimension": 384,
                "pooling_mode_cls_token": pooling == "cls",
                "pooling_mode_mean_tokens": pooling == "mean",
                "pooling_mode_max_tokens": False,
            }
        )
    )
    if max_seq_length:
        (path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_seq_length}))
    return path


# -- the folder reader (no model) -------------------------------------------------------------------
def test_folder_pooling_and_max_length_come_from_its_config(tmp_path: Path) -> None:
    mean = read_model_folder(make_folder(tmp_path / "mean", "mean", 128))
    assert (mean.pooling, mean.max_tokens, mean.dim, mean.model_file) == ("mean", 128, 384, "model.onnx")
    cls = read_model_folder(make_folder(tmp_path / "cls", "cls", None))
    assert (cls.pooling, cls.max_tokens) == ("cls", 256)  # tokenizer_config.json model_max_length
    assert read_model_folder(tmp_path / "cls", max_tokens=4096).max_tokens == 512  # position table caps it
    assert read_model_folder(tmp_path / "cls", max_tokens=64).max_tokens == 64
    assert mean.identity.startswith("onnx:mean@") and mean.identity != cls.identity
    assert read_model_folder("mean", root=tmp_path) == mean


def test_a_changed_folder_gets_a_new_identity(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "m")
    before = read_model_folder(folder).identity
    (folder / "model.onnx").write_bytes(b"other weights")
    assert read_model_folder(folder).identity != before


@pytest.mark.parametrize(
    ("remove", "needle"),
    [
        ("model.onnx", "has no model.onnx"),
        ("tokenizer.json", "has no tokenizer.json"),
        ("tokenizer_config.json", "has no tokenizer_config.json"),
    ],
)
def test_an_incomplete_folder_names_what_is_missing(tmp_path: Path, remove: str, needle: str) -> None:
    folder = make_folder(tmp_path / "m")
    (folder / remove).unlink()
    with pytest.raises(ConfigError, match=needle):
        create_embedder(EmbeddingConfig(provider="onnx", model=str(folder)))


def test_unsupported_pooling_and_missing_folder_are_config_errors(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "m")
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_max_tokens": True}))
    with pytest.raises(ConfigError, match="pooling_mode_max_tokens"):
        read_model_folder(folder)
    with pytest.raises(ConfigError, match="is not a folder"):
        create_embedder(EmbeddingConfig(provider="onnx", model=str(tmp_path / "nowhere")))


def test_a_broken_model_file_is_one_error_naming_the_folder(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    folder = make_folder(tmp_path / "broken")  # model.onnx is a placeholder, not a model
    embedder = create_embedder(EmbeddingConfig(provider="onnx", model=str(folder)))
    with pytest.raises(EmbeddingError, match=rf"cannot load the embedding model {folder}.*ONNX export"):
        embedder.embed(["x"])
    assert "ERROR" not in capfd.readouterr().err  # one error, raised; nothing from fastembed on stderr


def test_registry_and_unknown_model_names() -> None:
    bundled = create_embedder(EmbeddingConfig())
    assert isinstance(bundled, FastEmbedEmbedder)
    assert (bundled.model_name, bundled.provider, bundled.max_tokens, bundled.dim) == (
        DEFAULT_MODEL,
        "bundled",
        256,
        384,
    )
    with pytest.raises(ConfigError, match="provider 'bundled' runs only") as info:
        create_embedder(EmbeddingConfig(model="BAAI/bge-small-en-v1.5"))
    message = str(info.value)
    assert "embedding.provider = 'fastembed'" in message and "'onnx'" in message and "\n" not in message
    assert "pip install 'memsearch-lsp[multilingual]'" in message
    with pytest.raises(ConfigError, match=r"embedding\.provider"):
        load_config(Path("/nonexistent"), env={"MEMSEARCH_EMBEDDING_PROVIDER": "cohere"})


def test_unknown_model_is_one_clear_line_without_third_party_noise(workspace: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "MEMSEARCH_EMBEDDING_MODEL": "BAAI/bge-small-en-v1.5",
        "XDG_CACHE_HOME": str(tmp_path / "c"),
        "XDG_RUNTIME_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "-m", "memsearch_lsp", "index", "-w", str(workspace)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "BAAI/bge-small-en-v1.5" in lines[0] and "'onnx'" in lines[0] and "ERROR" not in lines[0]


# -- trust: a workspace file cannot point embeddings elsewhere ---------------------------------------
def test_workspace_file_cannot_send_embeddings_elsewhere(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ws = tmp_path / "ws"
    inside = make_folder(ws / "models" / "mine")
    outside = make_folder(tmp_path / "elsewhere")
    (ws / ".memsearch.toml").write_text(
        f'[embedding]\nprovider = "openai"\nbase_url = "http://attacker.example/v1"\napi_key_env = "AWS_SECRET"\n'
        f'model = "{outside}"\nbatch_size = 8\n'
    )
    config = load_config(ws, env={})
    defaults = EmbeddingConfig()
    e = config.embedding
    assert (e.provider, e.base_url, e.api_key_env, e.model) == (
        defaults.provider,
        defaults.base_url,
        defaults.api_key_env,
        defaults.model,
    )
    assert config.embedding.batch_size == 8  # harmless keys still apply
    warned = [r.getMessage() for r in caplog.records if "ignoring" in r.getMessage()]
    assert len(warned) == 1  # one warning names every ignored key
    for key in ("embedding.base_url", "embedding.api_key_env", "embedding.provider", "embedding.model"):
        assert key in warned[0]
    (ws / ".memsearch.toml").write_text('[embedding]\nprovider = "onnx"\nmodel = "models/mine"\n')
    config = load_config(ws, env={})
    assert (config.embedding.provider, config.embedding.model) == ("onnx", "models/mine")
    assert create_embedder(config.embedding, root=ws).model_name == read_model_folder(inside).identity
    user = load_config(
        ws,
        env={
            "MEMSEARCH_EMBEDDING_PROVIDER": "openai",
            "MEMSEARCH_EMBEDDING_BASE_URL": "http://h/v1",
            "MEMSEARCH_EMBEDDING_MODEL": str(outside),
        },
    ).embedding
    assert (user.provider, user.base_url, user.model) == ("openai", "http://h/v1", str(outside))


# -- the real model behind a folder ------------------------------------------------------------------
def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))


@pytest.mark.model
def test_onnx_folder_pooling_and_truncation_follow_its_config(tmp_path: Path) -> None:
    weights = bundled_model_dir() / "model.onnx"

    def onnx(name: str, **kw: Any) -> Any:
        folder = make_folder(tmp_path / name, onnx=weights, **kw)
        return create_embedder(EmbeddingConfig(provider="onnx", model=str(folder)))

    same, cls, short = onnx("mean"), onnx("cls", pooling="cls"), onnx("short", max_seq_length=16)
    bundled = FastEmbedEmbedder()
    texts = ["How long do cached entries live in Redis?", LONG, LONG + " Kafka topics are compacted weekly."]
    b, m, c, s = (e.embed(texts) for e in (bundled, same, cls, short))
    assert same.model_name.startswith("onnx:mean@") and same.dim == 384 and same.max_tokens == 256
    assert all(cosine(x, y) > 0.999 for x, y in zip(b, m))  # mean pooling: the bundled model exactly
    assert all(abs(cosine(v, v) - 1) < 1e-3 for v in c) and cosine(b[0], c[0]) < 0.99  # CLS differs
    assert cosine(s[1], s[2]) > 0.9999 and cosine(b[1], s[1]) < 0.99  # 16 tokens: the tails are cut off


@pytest.mark.model
def test_switching_bundled_and_folder_re_embeds_once_each_way(workspace: Path) -> None:
    folder = make_folder(workspace / "models" / "minilm", max_seq_length=128, onnx=bundled_model_dir() / "model.onnx")
    with Memory(workspace) as memory:
        first = memory.index()
        total = first.chunks_total
        assert first.chunks_embedded == total > 20
        memory.reconfigure(memory.config.merged({"embedding": {"provider": "onnx", "model": "models/minilm"}}))
        assert memory.index().chunks_embedded == total
        assert memory.index().chunks_embedded == 0
        status = memory.status()
        assert status["provider"] == "onnx" and status["model"] == read_model_folder(folder).identity
        assert status["reads"].endswith("; each window cut at 128 tokens")
        assert memory.search("Redis cache config")[0].heading == "Redis Caching"
        memory.reconfigure(memory.config.merged({"embedding": {"provider": "bundled", "model": DEFAULT_MODEL}}))
        assert memory.index().chunks_embedded == total  # nothing stale reused
        assert {r["model"] for r in memory.store.scan(["model"])} == {DEFAULT_MODEL}


@pytest.mark.model
def test_prefixes_reach_the_local_model() -> None:
    plain = FastEmbedEmbedder()
    e5 = create_embedder(EmbeddingConfig(document_prefix="passage: ", query_prefix="query: "))
    assert e5.model_name.startswith(DEFAULT_MODEL + "+")
    text = "Redis holds the session cache"
    assert cosine(e5.embed([text])[0], plain.embed(["passage: " + text])[0]) > 0.9999
    assert cosine(query_vector(e5, text), plain.embed(["query: " + text])[0]) > 0.9999
    assert cosine(query_vector(e5, text), e5.embed([text])[0]) < 0.9999


def test_a_thread_count_beyond_the_cpus_is_the_cpus(tmp_path: Path) -> None:
    """`embedding.threads = 2000` (a cloned repository's settings) made the model's threads wait on each other:
    indexing 40 small notes did not finish in two minutes. More threads than CPUs is the CPUs."""
    embedder = create_embedder(EmbeddingConfig(threads=2000))
    assert isinstance(embedder, FastEmbedEmbedder) and embedder.threads == (os.cpu_count() or 1)
    assert len(query_vector(embedder, "kafka")) == 384
    assert create_embedder(EmbeddingConfig(threads=1)).threads == 1  # type: ignore[attr-defined]
