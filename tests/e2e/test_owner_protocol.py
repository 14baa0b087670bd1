"""An index owner of another release (an editor's server left running across `pip install -U`) is asked nothing:
every command says one line naming its pid and what to do, and fails cleanly (exit 1); doctor says it as a problem.
An owner of a build before this program's index lock (it held Milvus Lite's own) is told apart from a stale record:
its record is kept, and no command waits on the engine's lock to say "please report this" (audit V, 1 and 2)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from memsearch_lsp.core.process import protocol
from memsearch_lsp.core.process.owner import call, record_path, socket_path_for
from tests.helpers import cli, owner_process

# an owner of an earlier release: its ping says no protocol, and it lacks (or reads otherwise) what this one asks
OLD_OWNER = """
import os, sys
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.process.owner import OwnerServer
from tests.fakes import FakeEmbedder

class Earlier(OwnerServer):
    def dispatch(self, op, params, progress):
        if op == "ping":
            return {"pid": os.getpid(), "version": "0.1.0", "process": self.process}
        raise RuntimeError(f"unknown operation {op!r}")

memory = Memory(sys.argv[1], embedder=FakeEmbedder())
memory.index()
Earlier(memory, "an earlier release").start()
print("ready", flush=True)
sys.stdin.read()
"""

# an owner of a build before the index lock: Milvus Lite's own lock held, a socket that answers in no JSON-RPC
PRE_LOCK_OWNER = """
import json, os, socketserver, sys
from pathlib import Path
from milvus_lite import MilvusLite
from memsearch_lsp.core.process.owner import record_path, socket_path_for

root = Path(sys.argv[1]).resolve()
engine = MilvusLite(str(root / ".memsearch" / "milvus.db"))

class Old(socketserver.StreamRequestHandler):
    def handle(self):
        self.rfile.readline()
        self.wfile.write(b'{"ok": false, "error": "unknown operation None"}\\n')

sock = socket_path_for(root)
server = socketserver.ThreadingUnixStreamServer(str(sock), Old)
os.chmod(sock, 0o600)
record_path(root).write_text(json.dumps({"pid": os.getpid(), "socket": str(sock), "version": "0.1.0"}))
os.chmod(record_path(root), 0o600)
import threading
threading.Thread(target=server.serve_forever, daemon=True).start()
print("ready", flush=True)
sys.stdin.read()
"""


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Error" not in lines[0] and "report" not in lines[0] and "Traceback" not in stderr, stderr
    return lines[0]


def test_an_owner_of_another_protocol_is_asked_nothing_and_named_in_one_line(workspace: Path) -> None:
    with owner_process(workspace, OLD_OWNER) as owner:
        for args in (("search", "Redis cache config"), ("compact",), ("remember", "a note"), ("status",)):
            result = cli(workspace, *args, timeout=120)
            assert result.returncode == 1, (args, result.stdout, result.stderr)
            line = one_line(result.stderr)
            assert f"served by pid {owner.pid}, a memsearch-lsp of another version" in line, line
            assert f"`kill {owner.pid}`" in line, line
        doctor = cli(workspace, "doctor", timeout=120)
        assert "another version" in doctor.stdout and "no problems found" not in doctor.stdout, doctor.stdout
        assert record_path(workspace.resolve()).exists()


def test_an_owner_before_the_index_lock_keeps_its_record_and_is_named_in_one_line(workspace: Path) -> None:
    assert cli(workspace, "index", timeout=120).returncode == 0
    with owner_process(workspace, PRE_LOCK_OWNER) as owner:
        result = cli(workspace, "search", "Redis cache config", timeout=120)
        assert result.returncode == 1, (result.stdout, result.stderr)
        line = one_line(result.stderr)
        assert "an older memsearch-lsp" in line and f"pid {owner.pid}" in line and f"`kill {owner.pid}`" in line
        assert record_path(workspace.resolve()).exists() and socket_path_for(workspace.resolve()).exists()
        doctor = cli(workspace, "doctor", timeout=120)
        assert "an older memsearch-lsp" in doctor.stdout and "reset" not in doctor.stdout, doctor.stdout
    assert cli(workspace, "search", "Redis cache config", timeout=120).returncode == 0  # (once it is gone)


def test_the_ping_answer_and_the_record_carry_the_protocol(workspace: Path) -> None:
    with owner_process(workspace) as owner:
        record = json.loads(record_path(workspace.resolve()).read_text())
        assert record["protocol"] == protocol.PROTOCOL and record["pid"] == owner.pid != os.getpid()
        about = call(str(socket_path_for(workspace.resolve())), "ping", {})
        assert about["protocol"] == protocol.PROTOCOL


def test_warm_and_a_json_error_beside_an_owner_of_another_protocol_name_it(workspace: Path) -> None:
    """(review R3, 3-4) `warm --detach` (the SessionStart hook's) started a warm owner that ended at once and named that
    child's pid; a JSON error's hint was the generic "run the command with -v"."""
    with owner_process(workspace, OLD_OWNER) as owner:
        warm = cli(workspace, "warm", "--detach", timeout=120)
        assert warm.returncode == 1 and f"served by pid {owner.pid}" in one_line(warm.stderr), warm.stderr
        failed = cli(workspace, "expand", "0123456789abcdef", "--json", timeout=120)
        error = json.loads(failed.stdout)["error"]
        assert error["hint"] == f"restart it (close and reopen the editor, or `kill {owner.pid}`)", error
