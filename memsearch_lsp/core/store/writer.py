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
import logging
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memsearch_lsp.core import launch, wire
from memsearch_lsp.core.store.engine import Engine, EngineDrift, Incompatible, corrupt, drift
from memsearch_lsp.core.store.folder import StoreError

log = logging.getLogger(__name__)

DRIFT, OTHER_LAYOUT, DAMAGED = -32001, -32002, -32003


class Damaged(StoreError):
    """The engine's files cannot be read (damaged or cut short): the index is moved aside and rebuilt."""


KINDS: dict[int, type[Exception]] = {DRIFT: EngineDrift, OTHER_LAYOUT: Incompatible, DAMAGED: Damaged}


class EngineGone(StoreError):
    """The engine's process ended before it answered."""


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
    if not rows:
        return rows

    def block(name: str, dtype: str) -> list[Any]:
        values: list[Any] = np.frombuffer(base64.b64decode(packed[name]), dtype=dtype).tolist()
        return values

    dense = np.frombuffer(base64.b64decode(packed["dense"]), dtype="<f4").reshape(len(rows), -1).tolist()
    for row, vector in zip(rows, dense, strict=True):
        row["dense"] = vector
    if "counts" in packed:
        terms, weights, at = block("terms", "<u4"), block("weights", "<f4"), 0
        for row, n in zip(rows, packed["counts"], strict=True):
            row["sparse"], at = dict(zip(terms[at : at + n], weights[at : at + n], strict=True)), at + n
    return rows


def command() -> list[str]:
    """How the engine's process is started (a test starts one whose engine it changed)."""
    return launch.python(__name__)


class EngineProcess:
    """The owner's side: the calls of `Engine`, each answered by the engine's process (started on `open`)."""

    def __init__(self, folder: str | Path, collections: tuple[str, str], dim: int):
        self.folder, self.collections, self.dim = str(folder), collections, dim
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def opened(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _call(self, method: str, **params: Any) -> Any:
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
            return bool(self._call("open", folder=self.folder, collections=list(self.collections), dim=self.dim))
        except BaseException:
            self.close()
            raise

    def write(
        self,
        upserts: Sequence[dict[str, Any]],
        windows: Sequence[dict[str, Any]],
        deletes: Sequence[str],
        window_deletes: Sequence[str],
    ) -> None:
        self._call(
            "write",
            upserts=_packed(upserts),
            windows=_packed(windows),
            deletes=list(deletes),
            window_deletes=list(window_deletes),
        )

    def drop(self) -> None:
        self._call("drop")

    def rebuild(self, identity: dict[str, Any]) -> None:
        """Read every row of the engine into a read model and save it beside the index (core/store/saved.py)."""
        self._call("rebuild", identity=identity)

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
def _rebuild(engine: Engine, identity: dict[str, Any]) -> None:
    from memsearch_lsp.core.store import saved
    from memsearch_lsp.core.store.readmodel import ReadModel

    model = ReadModel(engine.dim)
    for row in engine.rows():
        model.put_chunk(row)
    for row in engine.rows(windows=True):
        model.put_window(row["id"], row["chunk_id"], row["source"], row["dense"])
    saved.save(model, engine.folder, identity)


class _Child:
    """The engine's process: its engine, and what each method does with it."""

    def __init__(self) -> None:
        self.engine: Engine | None = None

    def handle(self, method: str, params: dict[str, Any]) -> Any:
        try:
            if method == "open":
                first, second = params["collections"]
                self.engine = Engine(params["folder"], (first, second), int(params["dim"]))
                return self.engine.open()
            if self.engine is None:
                raise RuntimeError(f"{method} before open")
            return _handle(self.engine, method, params)
        except Exception as exc:
            if drift(exc):  # said as drift, naming the engine's version
                raise EngineDrift.of(exc) from exc
            raise


def _handle(engine: Engine, method: str, params: dict[str, Any]) -> Any:
    if method == "write":
        engine.write(
            _unpacked(params["upserts"]),
            _unpacked(params["windows"]),
            params["deletes"],
            params["window_deletes"],
        )
    elif method == "drop":
        engine.drop()
    elif method == "rebuild":
        _rebuild(engine, params["identity"])
    elif method != "close":
        raise RuntimeError(f"unknown method {method!r}")
    return None


def _code(exc: Exception) -> int | None:
    if isinstance(exc, Incompatible):
        return OTHER_LAYOUT
    if drift(exc):
        return DRIFT
    return DAMAGED if corrupt(exc) else wire.INTERNAL_ERROR


def main() -> None:
    """Answer the owner on stdin / stdout until it says close or goes away."""
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what the engine or a library prints goes to stderr, never into the replies
    sys.stdout = sys.stderr
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="memsearch-lsp engine: %(message)s")
    child = _Child()
    try:
        while (message := wire.receive(sys.stdin.buffer)) is not None and message.get("method") != "close":
            wire.answer(replies, message, child.handle, _code)
    finally:
        if child.engine is not None:
            child.engine.close()


if __name__ == "__main__":
    main()
