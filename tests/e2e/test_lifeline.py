"""The server never outlives its editor: it exits when the client process named in `initialize` dies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import pytest

from memsearch_lsp.lsp import lifeline


def _send(stdin: IO[bytes], message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stdin.flush()


def _read(stdout: IO[bytes]) -> dict[str, Any]:
    header = b""
    while not header.endswith(b"\r\n\r\n"):
        byte = stdout.read(1)
        assert byte, "the server closed stdout"
        header += byte
    size = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
    message: dict[str, Any] = json.loads(stdout.read(size))
    return message


def test_orphaned_sees_a_dead_client_or_a_new_parent() -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert not lifeline.orphaned(os.getppid(), None) and not lifeline.orphaned(os.getppid(), os.getpid())
    assert lifeline.orphaned(os.getppid(), dead.pid)
    if os.name != "nt":
        assert lifeline.orphaned(os.getppid() + 1, None)


def _indexed_server(workspace: Path, client_pid: int, stderr: int) -> subprocess.Popen[bytes]:
    """`memsearch-lsp serve` on `workspace` (one fact in MEMORY.md), initialised for `client_pid`, its first
    index done."""
    (workspace / "memory").mkdir()
    (workspace / "memory/MEMORY.md").write_text("# Memory\n\n## Fact\n\nThe quokka index owner test.\n")
    server = subprocess.Popen(
        [sys.executable, "-m", "memsearch_lsp", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        cwd=workspace,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        params = {"processId": client_pid, "rootUri": workspace.as_uri(), "capabilities": {}}
        _send(server.stdin, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        while _read(server.stdout).get("id") != 1:
            pass
        _send(server.stdin, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
        while _read(server.stdout).get("method") != "memsearch/indexed":
            pass
    except BaseException:
        server.kill()
        raise
    return server


@pytest.mark.timeout(180)
@pytest.mark.skipif(os.name == "nt", reason="POSIX process handling")
def test_the_server_exits_when_its_client_process_dies_and_releases_the_index(tmp_path: Path) -> None:
    editor = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # stands for the editor
    server = _indexed_server(tmp_path, editor.pid, subprocess.DEVNULL)
    try:
        editor.kill()
        editor.wait()
        assert server.wait(timeout=60) == 0  # stdin is still open: only the lifeline can end it
    finally:
        editor.kill()
        server.kill()
    status = subprocess.run(
        [sys.executable, "-m", "memsearch_lsp", "status", "-w", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert status.returncode == 0, status.stderr  # no IndexBusy: the index was released
    assert json.loads(status.stdout)["files"] == 1


@pytest.mark.timeout(180)
@pytest.mark.skipif(os.name == "nt", reason="POSIX signals")
def test_sigterm_ends_the_server_as_its_editor_would_and_lets_the_index_go(tmp_path: Path) -> None:
    """Editors stop a server with SIGTERM (Neovim's client:stop(true), VS Code after its shutdown timeout): it left
    `.memsearch/server.json` and its socket behind (audit V); it closes as when stdin ends."""
    import signal

    server = _indexed_server(tmp_path, os.getpid(), subprocess.PIPE)
    assert server.stderr is not None
    try:
        assert (tmp_path / ".memsearch/server.json").is_file()
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0
    finally:
        server.kill()
    left = sorted(p.name for p in (tmp_path / ".memsearch").iterdir() if p.name.startswith("server."))
    assert left == [], left
    assert b"Traceback" not in server.stderr.read()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["stdin closed", "SIGTERM", "SIGINT"])
def test_a_server_stopped_before_initialize_ends_quietly(tmp_path: Path, how: str) -> None:
    """(audit Z4, 4) Stopped before `initialize` (the editor gave up on it), closing read the open documents of a
    workspace that did not exist yet: a traceback of its closing thread on stderr. Ctrl-C (SIGINT) in the terminal
    that ran `serve` left it hanging, its stdio loop waiting on the thread reading stdin."""
    import signal

    server = subprocess.Popen(
        [sys.executable, "-m", "memsearch_lsp", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    assert server.stdin is not None and server.stdout is not None and server.stderr is not None
    try:
        _send(server.stdin, {"jsonrpc": "2.0", "id": 1, "method": "workspace/symbol", "params": {"query": ""}})
        assert _read(server.stdout)["error"]["code"] == -32002  # (serving: the request is early)
        if how.startswith("SIG"):
            server.send_signal(getattr(signal, how))
        else:
            server.stdin.close()
        assert server.wait(timeout=60) == 0
    finally:
        server.kill()
    said = server.stderr.read().decode()
    assert "Traceback" not in said and "not available" not in said, said
