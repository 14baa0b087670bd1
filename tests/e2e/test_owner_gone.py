"""Writes asked of an index owner that dies while it answers, and a reset beside other processes: what a command
reports is what happened to the Markdown and the index."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from memsearch_lsp.core.store import IndexBusy
from memsearch_lsp.core.store.folder import hold, let_go, lock_holder
from tests.helpers import cli, make_workspace, owner_process

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


def test_reset_keeps_the_lock_until_the_index_is_gone(tmp_path: Path) -> None:
    """`reset --yes` let go of the index's lock before deleting the folder: a process that took it just then wrote
    into the folder being deleted, and reset failed with a raw "OSError: [Errno 39] Directory not empty", leaving
    the index half-deleted. Reset keeps other processes out until the index is gone; the next command rebuilds it."""
    ws = make_workspace(tmp_path)
    cli(ws, "index", check=True)
    folder = ws / ".memsearch" / "milvus.db"
    reset = subprocess.Popen(
        [sys.executable, "-m", "memsearch_lsp", "reset", "--yes", "--workspace", str(ws)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def another_process() -> None:  # (a thread of this process: flock locks between processes as between these)
        while reset.poll() is None and lock_holder(folder) != reset.pid:
            pass
        while reset.poll() is None:
            try:
                held = hold(folder)
            except (IndexBusy, OSError):
                continue
            try:  # what an opened index writes at once
                (folder / "opened-by-another-process").write_text("x")
                time.sleep(0.3)
            finally:
                let_go(held)
            return

    contender = threading.Thread(target=another_process)
    contender.start()
    out, err = reset.communicate(timeout=120)
    contender.join(timeout=60)
    assert reset.returncode == 0 and "Errno" not in out + err, out + err
    assert not folder.exists() or not (folder / "collections").exists()  # gone, or started anew: never half-deleted
    found = json.loads(cli(ws, "search", "redis", "--json", "--min-score", "0", check=True).stdout)
    assert found and not list(ws.joinpath(".memsearch").glob("milvus.db.broken-*"))


def test_index_whose_owner_is_killed_while_it_indexes_is_asked_again_and_done(tmp_path: Path) -> None:
    """`index` through an owner killed in the middle failed with `OwnerGone: the index owner closed the connection`
    (exit 1), although bringing the index up to date is safe to ask again, as search and status are."""
    ws = make_workspace(tmp_path, examples=False)
    with owner_process(ws, DYING_OWNER) as owner:
        (ws / "memory" / "2026-03-02.md").write_text("# 2026-03-02\n\n## Zoo\n\nan okapi sleeps standing up\n")
        done = cli(ws, "index", "--json", timeout=120)
        assert owner.wait(timeout=60) == -9  # (it died, as planned: while it indexed the note)
    assert done.returncode == 0 and "OwnerGone" not in done.stderr, done.stdout + done.stderr
    found = json.loads(cli(ws, "search", "okapi sleeps", "--json", "--min-score", "0", check=True).stdout)
    assert found["hits"][0]["source"] == "memory/2026-03-02.md"
