"""Who can reach the index: the local store opens no socket and its folder admits only its owner;
the same indexer and search work against Milvus Lite run as a separate server reached by URI."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.store.folder import locked_by_other
from tests.helpers import ROOT, milvus_lite_server

_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp


def own_socket_inodes() -> set[str]:
    inodes = set()
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def listening_tcp_ports() -> list[int]:
    """TCP ports this process listens on (IPv4 and IPv6), from /proc/net/tcp* and our own fds."""
    mine = own_socket_inodes()
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if parts[3] == _LISTEN and parts[9] in mine:
                ports.append(int(parts[1].rsplit(":", 1)[1], 16))
    return ports


def listening_unix_sockets() -> list[str]:
    """Unix sockets this process listens on (flag __SO_ACCEPTCON in /proc/net/unix), by path."""
    mine = own_socket_inodes()
    paths = []
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        parts = line.split()
        if int(parts[3], 16) & 0x10000 and parts[6] in mine:
            paths.append(parts[7] if len(parts) > 7 else "")
    return paths


def test_the_local_store_opens_no_socket(workspace: Path, make_memory: Callable[..., Memory]) -> None:
    before_tcp, before_unix = listening_tcp_ports(), listening_unix_sockets()
    memory = make_memory(workspace)
    memory.index()
    assert memory.search("deploy"), "the store answers"
    memory.store.sync()  # the engine opened and written (in this process)
    assert listening_tcp_ports() == before_tcp
    assert listening_unix_sockets() == before_unix, "the engine is called in process, not through a socket"
    memory.close()
    probe = subprocess.run([sys.executable, "-c", _HELD, memory.uri], capture_output=True, text=True, timeout=60)
    assert probe.stdout.strip() == "False", "closing lets the folder go"


_HELD = """
import sys
from pathlib import Path
from memsearch_lsp.core.store.folder import locked_by_other
print(locked_by_other(Path(sys.argv[1])))
"""


_LOCAL_ONLY = """
import sys
from memsearch_lsp.core.memory import Memory
from tests.helpers import milvus_lite_server
from tests.fakes import FakeEmbedder
memory = Memory(sys.argv[1], embedder=FakeEmbedder())
memory.index()
assert memory.search("deploy")
memory.close()
print(" ".join(m for m in ("pymilvus", "grpc", "pandas") if m in sys.modules))
import pyarrow
assert pyarrow.table({"a": [1, 2]}).to_pandas()["a"].sum() == 3, "pandas stays usable when asked for"
"""


def test_a_local_index_needs_neither_pymilvus_nor_grpc_nor_pandas(workspace: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _LOCAL_ONLY, str(workspace)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"imported {done.stdout.strip()}"


_PROBE = """
import os, sys
for path in sys.argv[1:]:
    try:
        os.listdir(path)
        print(path)
    except PermissionError as exc:
        print(type(exc).__name__, path, file=sys.stderr)
"""


def _as_nobody() -> list[str] | None:
    if os.geteuid() != 0:
        return None
    for tool in (["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"], ["runuser", "-u", "nobody", "--"]):
        if shutil.which(tool[0]) and subprocess.run([*tool, "true"], capture_output=True).returncode == 0:
            return tool
    return None


def test_another_user_cannot_read_the_index(workspace: Path, make_memory: Callable[..., Memory]) -> None:
    prefix = _as_nobody()
    if prefix is None:
        pytest.skip("needs root and setpriv/runuser to act as the user nobody")
    os.chmod(workspace.parent, 0o755)  # others may enter the workspace, as in a shared home
    os.chmod(workspace, 0o755)
    memory = make_memory(workspace)
    memory.index()
    index = Path(memory.uri)
    python = os.path.realpath(sys.executable)
    probe = subprocess.run(
        [*prefix, python, "-I", "-c", _PROBE, str(index), str(index / "collections")],
        capture_output=True,
        text=True,
        cwd="/",
        timeout=60,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == "", f"nobody listed {probe.stdout.strip()}"
    assert probe.stderr.count("PermissionError") == 2  # refused for lack of rights, not for lack of files
    assert stat.S_IMODE(index.parent.lstat().st_mode) == 0o700


def test_an_index_of_an_earlier_version_is_read_without_embedding_anything(
    workspace: Path, make_memory: Callable[..., Memory]
) -> None:
    """Earlier versions gave the collections search indexes (FLAT / IP, sparse inverted): the rows are read as they
    are (the indexes dropped, every search being the read model's), nothing moved aside or embedded again."""
    from milvus_lite import MilvusLite

    memory = make_memory(workspace)
    memory.index()
    rows, hits = memory.status()["chunks"], [h.id for h in memory.search("deploy")]
    memory.close()
    shutil.rmtree(Path(memory.uri) / "read-model")
    db = MilvusLite(memory.uri)
    for name in (memory.collection, memory.collection + "_windows"):
        db.get_collection(name).create_index("dense", {"index_type": "FLAT", "metric_type": "IP", "params": {}})
    db.close()

    again = make_memory(workspace)
    assert again.status()["chunks"] == rows and [h.id for h in again.search("deploy")] == hits
    assert again.index().chunks_embedded == 0
    assert not [p for p in (workspace / ".memsearch").iterdir() if ".broken-" in p.name]


# -- the same code against a separate Milvus server reached by URI --------------------------------------
@pytest.fixture
def milvus_server(tmp_path: Path) -> Iterator[str]:
    """`milvus-lite server` in its own process on a free loopback port, stopped after the test."""
    with milvus_lite_server(tmp_path / "server-data") as uri:
        yield uri


def test_index_and_search_against_a_separate_milvus_server(
    workspace: Path, make_memory: Callable[..., Memory], milvus_server: str
) -> None:
    memory = make_memory(workspace, milvus_uri=milvus_server)
    stats = memory.index()
    assert stats.chunks_total > 0 and stats.chunks_embedded == stats.chunks_total
    assert not (workspace / ".memsearch" / "milvus.db").exists(), "nothing stored locally"
    assert not locked_by_other(workspace / ".memsearch" / "milvus.db")
    hits = memory.search("deploy")
    assert hits and hits[0].source.startswith("memory/")
    assert not memory.store.is_local, "a server is searched through pymilvus"
    assert memory.expand(hits[0].id) is not None
    client = memory.store.client  # type: ignore[attr-defined]
    assert client.describe_index(memory.store.collection, "dense")["metric_type"] == "COSINE"
    assert memory.index().chunks_embedded == 0, "the second pass reuses the server's rows"
    memory.close()

    again = make_memory(workspace, milvus_uri=milvus_server)
    assert [h.id for h in again.search("deploy")] == [h.id for h in hits]
