"""A note an agent writes while another process holds the index and serves no one (`memsearch-lsp index` of a large
memory runs minutes) is written to the Markdown, the truth, and indexed by the next pass: it used to wait 30 s, fail
"another process holds the index", and, from the Stop hook, the turn was lost."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.helpers import cli, mcp_client, owner_process

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
