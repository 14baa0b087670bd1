"""A note an agent writes while another process holds the index and serves no one (`memsearch-lsp index` of a large
memory runs minutes) is written to the Markdown, the truth, and indexed by the next pass: it used to wait 30 s, fail
"another process holds the index", and, from the Stop hook, the turn was lost."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest

from tests.helpers import OWNER_SCRIPT, cli, mcp_client, owner_process

pytestmark = [pytest.mark.model, pytest.mark.slow]

# a process that holds `sys.argv[1]`'s index and serves it to no one (as a one-shot `memsearch-lsp index` does)
HOLDER = """
import sys
from memsearch_lsp.core.memory import Memory
memory = Memory(sys.argv[1])
memory.claim()
print("ready", flush=True)
sys.stdin.read()
memory.close()
"""
# an owner of another release: its ping says no protocol (tests/e2e/test_owner_protocol.py has one that answers more)
OLD_PROTOCOL_OWNER = """
import os, sys
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.process.owner import OwnerServer
from tests.fakes import FakeEmbedder

class Earlier(OwnerServer):
    def dispatch(self, op, params, progress):
        return {"pid": os.getpid(), "version": "0.1.0"}

memory = Memory(sys.argv[1], embedder=FakeEmbedder())
memory.index()
Earlier(memory, "an earlier release").start()
print("ready", flush=True)
sys.stdin.read()
"""
NOTE = "The staging gateway listens on port 8443 behind the blue load balancer."


def found_later(workspace: Path, note_id: str) -> None:
    """Once the holder let go, a search (which brings the index up to date first) finds the note by its id."""
    hits = json.loads(cli(workspace, "search", "which port does the staging gateway listen on", "--json").stdout)
    assert note_id in [h["id"] for h in hits["hits"]], hits


def test_remember_beside_a_process_holding_the_index_writes_the_note_and_says_it_is_indexed_later(
    workspace: Path,
) -> None:
    with owner_process(workspace, HOLDER):
        done = cli(workspace, "remember", NOTE, "--json", timeout=120)
        assert done.returncode == 0, done.stderr
        note = json.loads(done.stdout)
        assert note["indexing"] is True and NOTE in (workspace / note["source"]).read_text()
        assert "written but not indexed yet" in done.stderr  # (said, once, on stderr)
        shown = cli(workspace, "remember", NOTE, timeout=120)  # (the same note again: the one written)
        assert shown.returncode == 0 and "searchable once" in shown.stdout, shown
        assert (workspace / note["source"]).read_text().count(NOTE) == 1
    found_later(workspace, note["id"])


def test_mcp_remember_beside_a_process_holding_the_index_writes_the_note(workspace: Path) -> None:
    async def remember() -> dict[str, object]:
        async with mcp_client(workspace) as session:
            result = await session.call_tool("memory_remember", {"text": NOTE})
            assert not result.is_error and result.structured_content is not None, result.content
            return result.structured_content

    with owner_process(workspace, HOLDER):
        note = asyncio.run(remember())
        assert note["indexing"] is True and NOTE in (workspace / str(note["source"])).read_text()
    found_later(workspace, str(note["id"]))


@pytest.mark.parametrize("how", ["stopped", "of another release"])
def test_mcp_remember_beside_an_owner_that_serves_the_index_never_writes_around_it(workspace: Path, how: str) -> None:
    """(review R3, 1) Beside an owner that serves the index but is stopped (Ctrl-Z of the terminal running Neovim) or
    is of another release, `memory_remember` wrote the log itself: the editor behind that owner may hold the log
    unsaved (its next save drops the note), and only that owner can say so. The tool fails, saying why, and the
    Markdown is untouched; only a holder that serves no one is written beside."""
    script = OWNER_SCRIPT if how == "stopped" else OLD_PROTOCOL_OWNER

    async def remember() -> tuple[bool, str]:
        async with mcp_client(workspace) as session:
            result = await session.call_tool("memory_remember", {"text": NOTE})
            return result.is_error, str(result.content[0].text)  # type: ignore[union-attr]

    before = sorted((p.name, p.read_bytes()) for p in (workspace / "memory").iterdir() if p.is_file())
    with owner_process(workspace, script) as owner:
        if how == "stopped":
            os.kill(owner.pid, signal.SIGSTOP)
        failed, said = asyncio.run(remember())
    assert failed, said
    assert sorted((p.name, p.read_bytes()) for p in (workspace / "memory").iterdir() if p.is_file()) == before
