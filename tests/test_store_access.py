"""Who can reach the index: the local store has no TCP listener and its socket admits only its owner;
the same indexer and search work against Milvus Lite run as a separate server reached by URI."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memsearch_lsp.core import lite
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.store import MilvusStore

_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp


def own_socket_inodes() -> set[str]:
    inodes = set()
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
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


def test_the_local_store_listens_on_no_tcp_port(workspace: Path, make_memory: Callable[..., Memory]) -> None:
    before = listening_tcp_ports()
    memory = make_memory(workspace)
    memory.index()
    assert memory.search("deploy"), "the store answers"
    assert listening_tcp_ports() == before
    sock = lite.served()[str(Path(memory.uri).resolve())]
    info = sock.lstat()
    assert stat.S_ISSOCK(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o600
    assert stat.S_IMODE(sock.parent.lstat().st_mode) == 0o700
    memory.close()
    assert not sock.exists(), "closing removes the socket"


_PROBE = """
import socket, sys
reached = []
for spec in sys.argv[1:]:
    kind, _, where = spec.partition("=")
    family = socket.AF_UNIX if kind == "unix" else socket.AF_INET
    address = where if kind == "unix" else ("127.0.0.1", int(where))
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        try:
            s.connect(address)
            reached.append(spec)
        except OSError as exc:
            print(spec, type(exc).__name__, file=sys.stderr)
print(" ".join(reached))
"""


def _as_nobody() -> list[str] | None:
    if os.geteuid() != 0:
        return None
    for tool in (["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"],
                 ["runuser", "-u", "nobody", "--"]):
        if shutil.which(tool[0]) and subprocess.run([*tool, "true"], capture_output=True).returncode == 0:
            return tool
    return None


def test_another_user_cannot_reach_the_index(workspace: Path, make_memory: Callable[..., Memory]) -> None:
    prefix = _as_nobody()
    if prefix is None:
        pytest.skip("needs root and setpriv/runuser to act as the user nobody")
    before = set(listening_tcp_ports())
    memory = make_memory(workspace)
    memory.index()
    sockets = list(lite.served().values())
    # every way into this process's index: its Unix socket and any TCP port it listens on
    targets = [f"unix={s}" for s in sockets] + [f"tcp={p}" for p in set(listening_tcp_ports()) - before]
    assert targets
    python = os.path.realpath(sys.executable)
    probe = subprocess.run([*prefix, python, "-I", "-c", _PROBE, *targets], capture_output=True, text=True,
                           cwd="/", timeout=60)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == "", f"nobody reached {probe.stdout.strip()}"
    assert "PermissionError" in probe.stderr  # refused for lack of rights, not because nothing was there
    # the owner still gets in
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as own:
        own.connect(str(sockets[0]))


def test_a_folder_others_can_enter_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    with pytest.raises(lite.UnsafeFolder):
        lite.private_folder(shared)
    # the socket then goes to a private runtime folder, never beside the index
    where = lite.socket_path(shared / "milvus.db")
    assert where.parent != shared and stat.S_IMODE(where.parent.lstat().st_mode) == 0o700


def test_a_long_workspace_path_gets_a_short_private_socket(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["a-rather-long-folder-name"] * 6)
    deep.mkdir(parents=True, mode=0o700)
    store = MilvusStore(str(deep / "milvus.db"), "memsearch", 8)
    store.open()
    try:
        sock = lite.served()[str(deep / "milvus.db")]
        assert len(str(sock)) <= lite.MAX_SOCKET_PATH and sock.is_socket()
        assert store.count() == 0
    finally:
        store.close()


def test_an_index_built_with_the_cosine_metric_is_reindexed_in_place(
        workspace: Path, make_memory: Callable[..., Memory]) -> None:
    from pymilvus import MilvusClient

    memory = make_memory(workspace)
    memory.index()
    store = memory.store
    client = store.client
    client.release_collection(store.collection)
    client.drop_index(store.collection, "dense")
    old = client.prepare_index_params()
    old.add_index(field_name="dense", index_type="FLAT", metric_type="COSINE")
    client.create_index(store.collection, old)
    rows = store.count()
    memory.close()

    again = make_memory(workspace)
    assert again.store.count() == rows, "nothing was moved aside or rebuilt"
    assert isinstance(again.store.client, MilvusClient)
    assert again.store.client.describe_index(again.store.collection, "dense")["metric_type"] == "IP"
    assert again.index().chunks_embedded == 0
    assert again.search("deploy")


# -- the same code against a separate Milvus server reached by URI --------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def milvus_server(tmp_path: Path) -> Iterator[str]:
    """`milvus-lite server` in its own process on a free loopback port, stopped after the test."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "milvus_lite", "server", "--data-dir",
                             str(tmp_path / "server-data"), "--host", "127.0.0.1", "--port", str(port)],
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


def test_index_and_search_against_a_separate_milvus_server(
        workspace: Path, make_memory: Callable[..., Memory], milvus_server: str) -> None:
    memory = make_memory(workspace, milvus_uri=milvus_server)
    stats = memory.index()
    assert stats.chunks_total > 0 and stats.chunks_embedded == stats.chunks_total
    assert not (workspace / ".memsearch" / "milvus.db").exists(), "nothing stored locally"
    assert not lite.served().get(str(workspace / ".memsearch" / "milvus.db"))
    hits = memory.search("deploy")
    assert hits and hits[0].source.startswith("memory/")
    assert not memory.store.in_process and memory.store._mirror is None, "a server is searched through pymilvus"
    assert memory.expand(hits[0].id) is not None
    assert memory.store.client.describe_index(memory.store.collection, "dense")["metric_type"] == "COSINE"
    assert memory.index().chunks_embedded == 0, "the second pass reuses the server's rows"
    memory.close()

    again = make_memory(workspace, milvus_uri=milvus_server)
    assert [h.id for h in again.search("deploy")] == [h.id for h in hits]
