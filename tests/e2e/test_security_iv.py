"""Security IV: the processes this program starts never run the workspace's code, an owner that is not this user is
never trusted, a stuck owner never holds a command, and bad input (a lone surrogate, a date 5000 years back, a glob
that backtracks, a MEMORY.md that cannot take a note) gets a clear answer in bounded time."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from memsearch_lsp.core import wire
from memsearch_lsp.core.process.owner import record_path, socket_path_for
from tests.helpers import cli, wait_until

SCRIPT = Path(sys.executable).parent / "memsearch-lsp"  # the console script, as a user (or a hook) runs it


def planted(workspace: Path) -> Path:
    """Modules in the workspace that shadow the standard library's and ours: importing one leaves a mark."""
    mark = workspace.parent / "imported-workspace-code"
    for name in ("json.py", "numpy.py", "memsearch_lsp.py", "sitecustomize.py"):
        (workspace / name).write_text(f"open({str(mark)!r}, 'a').write({name!r} + '\\n')\nraise SystemExit(3)\n")
    return mark


def test_the_processes_it_starts_never_import_the_workspaces_code(workspace: Path) -> None:
    mark = planted(workspace)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    done = subprocess.run([str(SCRIPT), "index"], cwd=workspace, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr  # the engine's own process started and wrote the index
    warm = subprocess.run(
        [str(SCRIPT), "warm", "--detach", "--idle", "2"], cwd=workspace, env=env, capture_output=True, timeout=60
    )
    assert warm.returncode == 0, warm.stderr
    wait_until(lambda: record_path(workspace).exists(), "the warm owner serves the index", timeout=120)
    wait_until(lambda: not record_path(workspace).exists(), "the warm owner leaves when idle", timeout=120)
    assert not mark.exists(), mark.read_text()


def test_a_process_it_starts_finds_the_package_installed_for_the_user(tmp_path: Path) -> None:
    """The processes it starts ran `python -I`, which leaves out the user's site-packages: with the package installed
    by `pip install --user`, the engine's process failed ("No module named memsearch_lsp.core.store.writer") and every
    write with it. A Python outside any virtual environment, the package only on its user site (a .pth there)."""
    system = shutil.which("python3", path="/usr/bin:/usr/local/bin")
    if system is None or subprocess.run([system, "-c", "import site; assert site.ENABLE_USER_SITE"]).returncode:
        pytest.skip("no Python outside a virtual environment with a user site here")
    home = tmp_path / "home"
    user_site = subprocess.run(
        [system, "-c", "import site; print(site.getusersitepackages())"],
        env={"HOME": str(home), "PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(user_site).mkdir(parents=True)
    package_root = Path(__file__).resolve().parents[2]
    deps = next(p for p in sys.path if p.endswith("site-packages") and Path(p, "pygls").is_dir())
    (Path(user_site) / "memsearch.pth").write_text(f"{package_root}\n{deps}\n")
    starts = textwrap.dedent("""
        import subprocess
        from memsearch_lsp.core.launch import environment, python
        done = subprocess.run(python("memsearch_lsp", "--version"), env=environment(), cwd="/", capture_output=True)
        print(done.returncode, done.stdout.decode().strip(), done.stderr.decode().strip()[-200:])
    """)
    env = {"HOME": str(home), "PATH": os.environ["PATH"]}
    said = subprocess.run([system, "-c", starts], env=env, cwd="/", capture_output=True, text=True, timeout=120)
    assert said.stdout.startswith("0 memsearch-lsp "), said.stdout + said.stderr


def _as_nobody() -> list[str] | None:
    if os.geteuid() != 0:
        return None
    tool = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    ok = shutil.which(tool[0]) and subprocess.run([*tool, "true"], capture_output=True).returncode == 0
    return tool if ok else None


def test_an_index_folder_another_user_made_is_never_trusted(workspace: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give a folder to another user")
    folder = workspace / ".memsearch"
    folder.mkdir(mode=0o700)
    record_path(workspace).write_text(json.dumps({"pid": os.getpid(), "socket": str(socket_path_for(workspace))}))
    os.chown(record_path(workspace), 65534, 65534)
    os.chown(folder, 65534, 65534)
    result = cli(workspace, "search", "Redis cache config", timeout=60)
    assert result.returncode == 1 and ".memsearch" in result.stderr and "65534" in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2, result.stderr
    assert os.listdir(folder) == ["server.json"], "nothing written into a folder another user controls"


def test_a_record_of_another_user_in_a_folder_of_ours_is_refused_and_the_client_goes_on_alone(
    workspace: Path,
) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    (workspace / ".memsearch").mkdir(mode=0o700)
    record = record_path(workspace)
    record.write_text(json.dumps({"pid": 1, "socket": str(socket_path_for(workspace))}))
    record.chmod(0o600)
    os.chown(record, 65534, 65534)
    result = cli(workspace, "search", "Redis cache config", "--json", timeout=120)
    assert result.returncode == 0, result.stderr
    assert "server.json" in result.stderr and "refusing" in result.stderr  # said once, naming the path
    hits = json.loads(result.stdout)
    assert (hits["hits"] if isinstance(hits, dict) else hits)[0]["heading"] == "Redis Caching"


def test_the_peer_of_a_unix_socket_is_known_by_its_user(tmp_path: Path) -> None:
    """The check both ends make: the owner answers no other user, a client trusts no other user's owner."""
    left, right = socket.socketpair(socket.AF_UNIX)
    with left, right:
        assert wire.peer_uid(left) == os.geteuid() and wire.same_user(left)
    nobody = _as_nobody()
    if nobody is None:
        pytest.skip("needs root and setpriv to connect as the user nobody")
    folder = Path(tempfile.mkdtemp(dir="/tmp"))  # a folder the user nobody can reach
    folder.chmod(0o777)
    path = folder / "s.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.settimeout(30)
        server.bind(str(path))
        path.chmod(0o777)
        server.listen()
        client = subprocess.Popen(
            [*nobody, sys.executable, "-I", "-c", f"import socket,time; s=socket.socket(socket.AF_UNIX); "
             f"s.connect({str(path)!r}); time.sleep(5)"],
        )  # fmt: skip
        try:
            conn, _ = server.accept()
            with conn:
                assert wire.peer_uid(conn) == 65534 and not wire.same_user(conn)
        finally:
            client.kill()
            shutil.rmtree(folder, ignore_errors=True)


STUCK_OWNER = textwrap.dedent(
    """
    import fcntl, json, os, socket, sys, time
    ws = sys.argv[1]
    index = os.path.join(ws, ".memsearch", "milvus.db")
    lock = os.open(os.path.join(index, "memsearch.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    path = sys.argv[2]
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    os.chmod(path, 0o600)
    server.listen(64)
    record = os.path.join(ws, ".memsearch", "server.json")
    with open(record, "w") as handle:
        json.dump({"pid": os.getpid(), "socket": path, "index": index}, handle)
    os.chmod(record, 0o600)
    print("ready", flush=True)
    conns = []
    while True:  # accepts, never answers
        conns.append(server.accept()[0])
    """
)


def test_a_stuck_owner_never_holds_a_command_for_long(workspace: Path) -> None:
    assert cli(workspace, "index").returncode == 0
    stuck = subprocess.Popen(
        [sys.executable, "-c", STUCK_OWNER, str(workspace), str(socket_path_for(workspace.resolve()))],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert stuck.stdout is not None and stuck.stdout.readline().strip() == "ready"
        started = time.monotonic()
        result = cli(workspace, "search", "Redis cache config", timeout=120)
        took = time.monotonic() - started
        assert result.returncode == 1 and "does not answer" in result.stderr, result.stderr
        assert f"pid {stuck.pid}" in result.stderr and took < 15, took
    finally:
        stuck.kill()
        stuck.wait()


def test_bad_filters_get_a_clear_answer_in_bounded_time(workspace: Path) -> None:
    started = time.monotonic()
    long_ago = cli(workspace, "search", "Redis", "--since", "5000y")
    assert long_ago.returncode == 1 and "before the year 1" in long_ago.stderr and "Traceback" not in long_ago.stderr
    backtracking = cli(workspace, "search", "Redis", "--source", "*a*a*a*a*a*a*a*a*a*a*a*b", "--json")
    assert backtracking.returncode == 1
    error = json.loads(backtracking.stdout)["error"]
    assert "at most 2" in error["message"] and error["hint"]
    assert time.monotonic() - started < 60
    (workspace / "memory" / ("a" * 200 + ".md")).write_text("# A\n\nalpha\n")
    fine = cli(workspace, "search", "alpha", "--source", "**/a*a.md", "--json")
    assert fine.returncode == 0, fine.stderr


def test_a_huge_query_is_cut_and_answered_saying_so(workspace: Path) -> None:
    """A 3 MB query (a prompt with a pasted log) took 21 s and 880 MB; its first 4,000 characters are searched."""
    words = " ".join(f"w{n}" for n in range(400_000))
    result = cli(workspace, "search", "-", "--json", stdin=f"Redis cache config {words}")
    assert result.returncode == 0, result.stderr
    assert "characters long: its first" in result.stderr and "are searched" in result.stderr
    hits = json.loads(result.stdout)["hits"]
    assert hits and "Redis" in hits[0]["snippet"]


@pytest.mark.parametrize("broken", ["folder", "binary", "huge"])
def test_a_memory_md_that_cannot_take_a_note_says_so_and_writes_nothing(workspace: Path, broken: str) -> None:
    target = workspace / "memory" / "MEMORY.md"
    target.unlink()
    if broken == "folder":
        target.mkdir()
    elif broken == "binary":
        target.write_bytes(b"\x00\x01 not text")
    else:
        target.write_text("x" * (1024 * 1024 + 10))
    before = {p.name for p in (workspace / "memory").iterdir()}
    result = cli(workspace, "remember", "--long-term", "We prefer tabs")
    assert result.returncode == 1 and "MEMORY.md" in result.stderr
    assert "_NextFile" not in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert {p.name for p in (workspace / "memory").iterdir()} == before
