"""After a `git checkout` (files changed with no editor to say so), an id that search gave answers from the files as
they are now: `expand` and `forget` bring the index up to date first, as `search` does (audit G, 4). They answered
from the index as it was: the old note's text, at lines that now hold another note."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from tests.helpers import cli, mcp_client

pytestmark = [pytest.mark.model, pytest.mark.slow]

OTHER_BRANCH = "# 2026-02-06\n\n## Release train\n\n- The mobile release train leaves every second Tuesday.\n"


def checked_out(workspace: Path) -> str:
    """The id search gives for the 502 incident, then its log as another branch has it (the incident is not there)."""
    hits = json.loads(cli(workspace, "search", "checkout 502 incident", "--json", check=True).stdout)["hits"]
    incident = next(h for h in hits if h["heading"] == "Incident: checkout 502s")
    (workspace / "memory" / "2026-02-06.md").write_text(OTHER_BRANCH)
    return str(incident["id"])


@pytest.mark.parametrize("owner", [False, True], ids=["alone", "beside a warm owner"])
def test_expand_and_forget_of_an_id_gone_with_a_checkout_say_no_chunk(workspace: Path, owner: bool) -> None:
    if owner:
        warm = cli(workspace, "warm", "--detach", "--idle", "30", "--json", check=True)
        pid = json.loads(warm.stdout)["pid"]
        cli(workspace, "index", check=True)  # (its first index done: a checkout during it is that pass's to see)
    try:
        gone = checked_out(workspace)
        shown = cli(workspace, "expand", gone)
        assert shown.returncode == 1 and f"no chunk with id {gone!r}" in shown.stderr, shown
        forgot = cli(workspace, "forget", gone, "--yes")
        assert forgot.returncode == 1 and "no chunk" in forgot.stderr, forgot
        assert (workspace / "memory" / "2026-02-06.md").read_text() == OTHER_BRANCH  # (nothing removed)
        now = json.loads(cli(workspace, "search", "mobile release train", "--json", check=True).stdout)["hits"][0]
        chunk = json.loads(cli(workspace, "expand", now["id"], "--json", check=True).stdout)
        assert "second Tuesday" in chunk["content"]
    finally:
        if owner:
            os.kill(pid, 15)


def test_mcp_expand_of_an_id_gone_with_a_checkout_says_no_chunk(workspace: Path) -> None:
    async def expand() -> tuple[bool, str]:
        async with mcp_client(workspace) as session:
            indexing = True
            while indexing:  # (the first index done: a checkout during it is that pass's to see, or the next one's)
                found = await session.call_tool("memory_search", {"query": "checkout 502 incident", "top_k": 5})
                assert found.structured_content is not None
                hits, indexing = found.structured_content["hits"], found.structured_content["indexing"]
            incident = next(h["id"] for h in hits if h["heading"] == "Incident: checkout 502s")
            (workspace / "memory" / "2026-02-06.md").write_text(OTHER_BRANCH)  # (the checkout, under the server)
            result = await session.call_tool("memory_expand", {"id": incident})
            return result.is_error, str(result.content[0].text)  # type: ignore[union-attr]

    failed, said = asyncio.run(expand())
    assert failed and "no chunk with id" in said, said
