"""The engine's own process: Milvus Lite opened, written and read in a child of the process that owns the index.

Importing the engine costs a process ~100 MB that it never gives back (pyarrow, its pools, the engine's modules),
and opening it loads every segment; a long-lived owner (the language server, the MCP server, `warm`) would carry
that from its first write on. So the local store (core/store/local.py) asks this process instead, over the one wire
of our processes (core/wire.py: JSON-RPC lines on its stdin and stdout; its own stdout goes to stderr). It runs
isolated from the workspace (core/launch.py), holds Milvus Lite's own lock while the owner holds the folder's, and
ends when asked, or when its owner goes (its stdin closes). `EngineProcess` is the owner's side, with the calls of
core/store/engine.py's `Engine`; errors come back as what they are (drift, another layout, damaged files).
"""

from __future__ import annotations

import base64
import contextlib
import inspect
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np

from memsearch_lsp.core import launch, wire
from memsearch_lsp.core.store.engine import Engine, EngineDrift, Incompatible, corrupt, drift
from memsearch_lsp.core.store.folder import StoreError

P = ParamSpec("P")
R = TypeVar("R")
ROWS = ("upserts", "windows")  # the arguments that carry rows (packed for the wire)


class Damaged(StoreError):
    """The engine's files cannot be read (damaged or cut short): the index is moved aside and rebuilt."""


class EngineGone(StoreError):
    """The engine's process ended before it answered."""


KINDS: dict[int, type[Exception]] = {-32001: EngineDrift, -32002: Incompatible, -32003: Damaged}


def _packed(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Rows for the wire: their scalar fields, their dense vectors as one base64 float32 block, and their sparse ones
    (when they have them: (terms, weights) arrays) as blocks of terms and weights with each row's count."""
    out: dict[str, Any] = {"rows": [{k: v for k, v in r.items() if k not in ("dense", "sparse")} for r in rows]}
    out["dense"] = _b64(np.asarray([r["dense"] for r in rows], dtype="<f4"))
    if rows and "sparse" in rows[0]:
        terms, weights = zip(*(r["sparse"] for r in rows), strict=True)
        out.update(counts=[len(t) for t in terms], terms=_b64(np.concatenate(terms).astype("<u4")))
        out["weights"] = _b64(np.concatenate(weights).astype("<f4"))
    return out


def _b64(array: np.ndarray) -> str:
    return base64.b64encode(array.tobytes()).decode()


def _unpacked(packed: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows `_packed` sent, with their vectors as lists and their sparse ones as {term: weight}."""
    rows: list[dict[str, Any]] = packed["rows"]

    def block(name: str, dtype: str) -> list[Any]:
        values: list[Any] = np.frombuffer(base64.b64decode(packed[name]), dtype=dtype).tolist()
        return values

    dense: Any = np.frombuffer(base64.b64decode(packed["dense"]), dtype="<f4").reshape(len(rows), -1) if rows else []
    for row, vector in zip(rows, dense, strict=True):
        row["dense"] = vector.tolist()
    if "counts" in packed:
        terms, weights, at = block("terms", "<u4"), block("weights", "<f4"), 0
        for row, n in zip(rows, packed["counts"], strict=True):
            row["sparse"], at = dict(zip(terms[at : at + n], weights[at : at + n], strict=True)), at + n
    return rows


def command() -> list[str]:
    """How the engine's process is started (a test starts one whose engine it changed)."""
    return launch.python(__name__)


def _asked(method: Callable[Concatenate[Engine, P], R]) -> Callable[Concatenate[EngineProcess, P], R]:
    """The `Engine` method `method` as the owner calls it: asked of the engine's process by name, with its arguments
    by name (rows packed)."""
    names = list(inspect.signature(method).parameters)[1:]

    def call(self: EngineProcess, *args: P.args, **kwargs: P.kwargs) -> R:
        params: dict[str, Any] = {**dict(zip(names, args, strict=False)), **kwargs}
        result: R = self.call(method.__name__, **{k: _packed(v) if k in ROWS else v for k, v in params.items()})
        return result

    return call


class EngineProcess:
    """The owner's side: the calls of `Engine`, each answered by the engine's process (started on `open`)."""

    def __init__(self, folder: str | Path, collections: tuple[str, str], dim: int):
        self.folder, self.collections, self.dim = str(folder), collections, dim
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def opened(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def call(self, method: str, **params: Any) -> Any:
        process = self._process
        assert process is not None
        try:
            return wire.call(process.stdin, process.stdout, method, params, kinds=KINDS)
        except (OSError, ValueError) as exc:  # (Gone is an OSError)
            self.close()
            raise EngineGone(f"the index's engine process ended before it answered {method!r} ({exc})") from exc

    def open(self) -> bool:
        """Start the engine's process and open the collections there (created when missing: True)."""
        if self.opened:
            return False
        self._process = subprocess.Popen(
            command(), cwd=launch.ROOT_FOLDER, env=launch.environment(), stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        try:
            return bool(self.call("open", folder=self.folder, collections=list(self.collections), dim=self.dim))
        except BaseException:
            self.close()
            raise

    write = _asked(Engine.write)
    drop = _asked(Engine.drop)
    rebuild = _asked(Engine.rebuild)

    def close(self, wait: bool = True) -> None:
        """Ask the engine's process to close (it folds its log into segments first); with `wait`, wait until it has."""
        process = self._process
        if process is None:
            return
        if process.stdin is not None and not process.stdin.closed:
            with contextlib.suppress(OSError, ValueError):  # (it also ends when its stdin closes)
                wire.send(process.stdin, id=1, method="close", params={})
                process.stdin.close()
        if not wait:
            return
        self._process = None
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


# -- the engine's process ------------------------------------------------------------------------
def main() -> None:
    """Answer the owner on stdin / stdout until it says close or goes away."""
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what the engine or a library prints goes to stderr, never into the replies
    sys.stdout = sys.stderr
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="memsearch-lsp engine: %(message)s")
    engines: list[Engine] = []

    def handle(method: str, params: dict[str, Any]) -> Any:
        try:
            if method == "open":
                first, second = params["collections"]
                engines[:] = [Engine(params["folder"], (first, second), int(params["dim"]))]
                return engines[0].open()
            if not engines or method not in ("write", "drop", "rebuild"):
                raise RuntimeError(f"{method!r} is no call of an opened engine")
            return getattr(engines[0], method)(**{k: _unpacked(v) if k in ROWS else v for k, v in params.items()})
        except Exception as exc:
            if drift(exc):  # said as drift, naming the engine's version
                raise EngineDrift.of(exc) from exc
            raise

    def code(exc: Exception) -> int:
        kind = Damaged if corrupt(exc) else type(exc)
        return next((c for c, k in KINDS.items() if issubclass(kind, k)), wire.INTERNAL_ERROR)

    try:
        while (message := wire.receive(sys.stdin.buffer)) is not None and message.get("method") != "close":
            wire.answer(replies, message, handle, code)
    except BrokenPipeError:  # the owner is gone (killed): nobody to answer, nothing to say in its editor's output
        pass
    finally:
        for engine in engines:
            engine.close()
        with contextlib.suppress(OSError):  # (what was left unsent has nowhere to go)
            replies.close()


if __name__ == "__main__":
    main()
