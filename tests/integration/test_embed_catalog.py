"""fastembed's catalog by name (embedding.provider = "fastembed"): loaded from a cache this test seeds as a download
leaves it (the hub's layout, under the user's cache), a clear error when the model is not there and cannot be
downloaded, and never chosen by a workspace file. No network: the seeded model is the bundled MiniLM's weights
under the catalog model's file names."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from memsearch_lsp.config import ConfigError, EmbeddingConfig, load_config
from memsearch_lsp.core.embedding import EmbeddingError, create_embedder
from memsearch_lsp.core.embedding.catalog import CatalogEmbedder
from memsearch_lsp.core.embedding.onnx import BUNDLED_DIR, bundled_model_dir
from memsearch_lsp.core.memory import Memory

pytestmark = pytest.mark.model

NAME = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"
REPO = "models--Qdrant--paraphrase-multilingual-MiniLM-L12-v2-onnx-Q"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def seed(cache: Path) -> Path:
    """`cache` (XDG_CACHE_HOME) holding the catalog model as fastembed's download leaves it."""
    onnx = bundled_model_dir() / "model.onnx"
    folder = cache / "memsearch-lsp" / "fastembed" / REPO
    snapshot = folder / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(COMMIT)
    for item in BUNDLED_DIR.iterdir():
        if item.suffix == ".json":
            shutil.copyfile(item, snapshot / item.name)
    shutil.copyfile(onnx.resolve(), snapshot / "model_optimized.onnx")
    return snapshot


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def settings(model: str = "paraphrase-multilingual-MiniLM-L12-v2") -> EmbeddingConfig:
    return EmbeddingConfig(provider="fastembed", model=model)


def test_a_catalog_model_loads_from_the_users_cache_by_name(cache: Path) -> None:
    seed(cache)
    embedder = create_embedder(settings())
    assert isinstance(embedder, CatalogEmbedder)
    assert (embedder.model_name, embedder.provider, embedder.dim) == (f"fastembed:{NAME}", "fastembed", 384)
    assert create_embedder(settings(NAME.upper())).model_name == embedder.model_name  # the full name, any case
    (vector,) = embedder.embed(["Redis caches sessions for one hour"])
    query = embedder.embed_query("Redis caches sessions for one hour")
    assert len(vector) == 384 and math.isclose(math.hypot(*vector), 1.0, rel_tol=1e-4)
    bundled = create_embedder(EmbeddingConfig()).embed(["Redis caches sessions for one hour"])[0]
    assert sum(a * b for a, b in zip(vector, bundled)) > 0.99  # the seeded weights, run by fastembed
    assert sum(a * b for a, b in zip(vector, query)) > 0.99
    calibration = embedder.calibration()  # probed once, then kept in the user's cache
    assert calibration.related > calibration.unrelated
    assert f"fastembed:{NAME}" in (cache / "memsearch-lsp" / "calibration.json").read_text()


def test_a_memory_indexes_and_searches_with_a_catalog_model(cache: Path, workspace: Path) -> None:
    seed(cache)
    with Memory(workspace, embedding={"provider": "fastembed", "model": "paraphrase-multilingual-MiniLM-L12-v2"}) as m:
        stats = m.index()
        assert stats.chunks_embedded == stats.chunks_total > 30
        assert m.status()["model"] == f"fastembed:{NAME}"
        assert m.status()["reads"].endswith("each window read up to the model's own token limit (longer text is cut)")
        assert m.search("Redis cache TTL")[0].heading == "Redis Caching"


def test_a_model_not_in_the_cache_offline_is_one_clear_error(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    embedder = create_embedder(settings("multilingual-e5-large"))  # known to the catalog: nothing loaded yet
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["hello"])
    message = str(info.value)
    assert "intfloat/multilingual-e5-large is not in" in message and str(cache) in message
    assert "HF_HUB_OFFLINE" in message and "downloaded once" in message and "\n" not in message


def test_a_name_outside_the_catalog_is_refused_before_anything_loads(cache: Path) -> None:
    with pytest.raises(ConfigError, match=r"not in fastembed's catalog; close: .*paraphrase-multilingual"):
        create_embedder(settings("paraphrase-multilingual-nope"))


def test_a_workspace_file_cannot_make_the_server_download_a_model(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".memsearch.toml").write_text('[embedding]\nprovider = "fastembed"\nmodel = "multilingual-e5-large"\n')
    config = load_config(ws, env={})
    assert config.embedding.provider == "bundled"
