"""An owner record no owner wrote (a `.memsearch/server.json` committed in a repository, naming pid 1 and the socket
its clone will have) stops no command, `reset` included, and never turns the Claude Code hooks off: only this
program's own index lock says whether a process holds the index, never what a record says (audit H, finding 2)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memsearch_lsp.core.process.owner import pid_alive, socket_path_for
from tests.helpers import ROOT, cli, wait_until

HOOK = ROOT / "integrations" / "claude-code" / "scripts" / "memsearch_hook.py"
SAID = "removing the index owner record"


def plant(workspace: Path, pid: int, *, as_git_makes_it: bool = False) -> Path:
    """The record a repository commits: pid `pid`, the socket this program names for the clone, a file as the index;
    modes as git makes them (0755 / 0644), or as the first command in the clone left them (0700 / 0600)."""
    folder = workspace / ".memsearch"
    folder.mkdir(exist_ok=True)
    folder.chmod(0o755 if as_git_makes_it else 0o700)
    record = folder / "server.json"
    sock = socket_path_for(workspace.resolve())
    record.write_text(json.dumps({"pid": pid, "socket": str(sock), "index": "/etc/hostname"}))
    record.chmod(0o644 if as_git_makes_it else 0o600)
    return record


@pytest.fixture(autouse=True)
def no_warm_owner_left(tmp_path: Path) -> Iterator[None]:
    yield
    for record in tmp_path.rglob(".memsearch/server.json"):
        with contextlib.suppress(OSError, ValueError, KeyError):
            pid = int(json.loads(record.read_text())["pid"])
            if pid > 1 and pid != os.getpid():
                os.kill(pid, signal.SIGTERM)


@pytest.mark.parametrize("as_git_makes_it", [False, True], ids=["private", "as-git-makes-it"])
def test_a_planted_record_naming_pid_1_stops_no_command_and_is_removed_saying_so_once(
    workspace: Path, as_git_makes_it: bool
) -> None:
    record = plant(workspace, 1, as_git_makes_it=as_git_makes_it)
    said = ""
    for args in (
        ("index",),
        ("search", "Redis cache config"),
        ("remember", "The planted record is gone."),
        ("status",),
        ("reset", "--yes"),
        ("search", "Redis cache config"),
    ):
        result = cli(workspace, *args, timeout=120)
        assert result.returncode == 0, (args, result.stderr)
        assert "IndexBusy" not in result.stderr and "does not answer" not in result.stderr
        said += result.stderr
    assert "Redis" in result.stdout  # (the index rebuilt after reset)
    assert not record.exists()
    assert said.count(SAID) == 1 and "server.json" in said, said


@pytest.mark.parametrize("pid", [None, 1, 2**22 + 12345], ids=["not-json", "pid-1", "dead-pid"])
def test_a_record_open_to_others_in_a_folder_of_ours_is_removed_saying_so_once(
    workspace: Path, pid: int | None
) -> None:
    """A record written by `echo >` or git (mode 0644) in the private `.memsearch/` of ours was refused by every
    command, naming it again each time, and never removed: no owner writes one (an owner's is private)."""
    assert cli(workspace, "index").returncode == 0
    record = workspace / ".memsearch" / "server.json"
    sock = socket_path_for(workspace.resolve())
    record.write_text("{garbage\n" if pid is None else json.dumps({"pid": pid, "socket": str(sock)}))
    record.chmod(0o644)
    said = ""
    for _ in range(3):
        result = cli(workspace, "search", "Redis cache config", timeout=120)
        assert result.returncode == 0 and "Redis" in result.stdout, result.stderr
        said += result.stderr
    assert not record.exists()
    assert "refusing" not in said and said.count(SAID) == 1 and "server.json" in said, said


def test_doctor_calls_a_planted_record_stale_never_pid_1_an_owner_to_stop(workspace: Path) -> None:
    assert cli(workspace, "index").returncode == 0
    plant(workspace, 1)
    result = cli(workspace, "doctor", timeout=120)
    assert "stale owner record" in result.stdout and "stop process 1" not in result.stdout, result.stdout


def test_a_record_whose_pid_holds_no_lock_is_stale_though_its_socket_listens(workspace: Path) -> None:
    """A live pid (this test's) that holds no index lock, a socket that takes connections and never answers: not an
    owner (a stopped owner, which holds the lock, is: tests/e2e/test_security_iv.py)."""
    assert cli(workspace, "index").returncode == 0
    record = plant(workspace, os.getpid())
    path = str(socket_path_for(workspace.resolve()))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as silent:
        silent.bind(path)
        os.chmod(path, 0o600)
        silent.listen(8)
        started = time.monotonic()
        result = cli(workspace, "search", "Redis cache config", timeout=120)
    assert result.returncode == 0 and "Redis" in result.stdout, result.stderr
    assert time.monotonic() - started < 30 and not record.exists() and not os.path.lexists(path)


def hook(name: str, event: dict[str, str], **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSEARCH_", "CLAUDE_"))}
    environ.update({"MEMSEARCH_HOOK_CLI": f"{sys.executable} -m memsearch_lsp", **env})
    return subprocess.run(
        [sys.executable, str(HOOK), name],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        timeout=120,
        env=environ,
    )


def test_a_planted_record_never_turns_the_hooks_recall_nor_their_warm_owner_off(workspace: Path) -> None:
    record = plant(workspace, 1)
    event = {"session_id": "s-1", "cwd": str(workspace), "prompt": "What TTL do we use for the Redis cache?"}
    result = hook("user-prompt-submit", event, MEMSEARCH_HOOK_WARM_IDLE="60", MEMSEARCH_HOOK_TIMEOUT="60")
    assert result.returncode == 0 and "skipped" not in result.stderr, result.stderr
    assert "Redis Caching" in json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]

    def warm_owner() -> int:  # the one this prompt started, not a process a record names
        with contextlib.suppress(OSError, ValueError, KeyError):
            pid = int(json.loads(record.read_text())["pid"])
            return pid if pid > 1 and pid_alive(pid) else 0
        return 0

    wait_until(warm_owner, "a warm owner the prompt's hook started", timeout=60)


def test_a_file_committed_as_the_socket_keeps_no_owner_from_serving(workspace: Path) -> None:
    """A regular file at `.memsearch/server.sock` (no socket: never removed by a client) was in the way of every owner's
    listening socket: the owner, which holds the index, removes it and serves."""
    planted = socket_path_for(workspace.resolve())
    planted.parent.mkdir(mode=0o700, exist_ok=True)
    planted.write_text("not a socket\n")
    cli(workspace, "warm", "--detach", "--idle", "30", check=True)
    record = json.loads((workspace / ".memsearch" / "server.json").read_text())
    assert record["socket"] == str(planted) and planted.is_socket()
    found = cli(workspace, "search", "Redis cache config", "--json", check=True)
    assert json.loads(found.stdout)["hits"]
