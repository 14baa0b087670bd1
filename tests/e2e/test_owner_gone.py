"""Writes asked of an index owner that dies while it answers, and a reset beside other processes: what a command
reports is what happened to the Markdown and the index."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import cli, make_workspace

# an owner (a real process serving the index) killed with SIGKILL the moment it indexes a note about okapis: after the
# note is written to the Markdown, before it answers the process that asked for it
DYING_OWNER = """
import os, signal, sys
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.process.owner import OwnerServer
from tests.fakes import FakeEmbedder

class DiesOnOkapis(FakeEmbedder):
    def embed(self, texts):
        if any("okapi" in text for text in texts):
            os.kill(os.getpid(), signal.SIGKILL)
        return super().embed(texts)

memory = Memory(sys.argv[1], embedder=DiesOnOkapis())
memory.index()
OwnerServer(memory, "a test owner").start()
print("ready", flush=True)
sys.stdin.read()
"""


def test_remember_whose_owner_is_killed_after_writing_reports_the_note_written_once(tmp_path: Path) -> None:
    """The owner died after writing the note, before answering: `remember` exited 1 with "OwnerGone" although the
    note was in the Markdown and searchable. Asked again (the same note the same day is the one written), it
    reports the note, written once."""
    ws = make_workspace(tmp_path, examples=False)
    owner = subprocess.Popen(
        [sys.executable, "-c", DYING_OWNER, str(ws)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == b"ready"
        said = cli(ws, "remember", "an okapi was seen at the zoo", "--json", timeout=120)
        assert owner.wait(timeout=60) == -9  # (it died, as planned: after the note was written)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
    assert said.returncode == 0, said.stdout + said.stderr
    note = json.loads(said.stdout)
    written = "".join(p.read_text() for p in (ws / "memory").glob("*.md"))
    assert written.count("an okapi was seen at the zoo") == 1
    found = json.loads(cli(ws, "expand", note["id"], "--json", check=True).stdout)
    assert "an okapi was seen at the zoo" in found["content"]
