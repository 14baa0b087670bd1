"""A user memory whose owner is stuck (stopped: it holds the index and answers nothing), on a real Milvus Lite with the
fake embedder: what the workspace's own memory answers still comes, from the CLI and from the MCP server, and a
long-lived process asks the user memory again only after a while."""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from memsearch_lsp import cli
from memsearch_lsp.config import load_config
from memsearch_lsp.core import scopes
from memsearch_lsp.core.onboard import init_workspace
from memsearch_lsp.core.process.door import Door
from memsearch_lsp.core.scopes import open_user_memory, user_door, user_root
from memsearch_lsp.mcp_server import create_server
from tests.fakes import FakeEmbedder
from tests.helpers import USER_OWNER, owner_process

NOW = "2026-12-07T10:00:00"
OURS = "We chose Hetzner for the CI runners."


def said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "user memory did not answer" in r.getMessage()]


@pytest.fixture
def user_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMSEARCH_NOW", NOW)
    monkeypatch.setattr("memsearch_lsp.core.workspace.create_embedder", lambda *a, **k: FakeEmbedder())
    mine = open_user_memory(create=True, embedder=FakeEmbedder())
    assert mine is not None
    with mine:
        mine.remember("I prefer dark mode in every editor.")


def test_an_id_prefix_of_the_workspace_is_expanded_and_forgotten_when_the_user_memory_is_stuck(
    tmp_path: Path, user_memory: None, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """(review D, 3) `expand` / `forget` of an id prefix of a workspace chunk failed ("the process that owns the index
    of .../memsearch-lsp does not answer") once the prefix was also looked for in the user memory: the workspace's
    chunk is the answer, with a warning that the user memory could not be looked at. An id only the user memory
    could hold still says why it could not."""
    init_workspace(tmp_path)
    ws = ["-w", str(tmp_path), "--json"]

    def run(*args: str) -> tuple[int, dict[str, Any]]:
        code = cli.main([*args, *ws])
        return code, json.loads(capsys.readouterr().out)

    note = run("remember", OURS)[1]
    with owner_process(user_root(), USER_OWNER) as owner:
        os.kill(owner.pid, signal.SIGSTOP)
        with caplog.at_level(logging.WARNING):
            code, chunk = run("expand", note["id"][:6])
        assert (code, chunk["scope"], chunk["id"]) == (0, "workspace", note["id"]), chunk
        assert len(said(caplog)) == 1 and "taken as this workspace's chunk" in said(caplog)[0]
        code, gone = run("forget", note["id"][:6], "--yes")
        assert (code, gone["scope"], gone["removed"]) == (0, "workspace", True), gone
        assert OURS not in (tmp_path / note["source"]).read_text()
        code, failed = run("expand", "0123456789")  # the workspace has none: only the user memory could
        assert code == 1 and "does not answer" in failed["error"]["message"], failed


async def test_mcp_takes_the_workspaces_chunk_and_waits_for_a_stuck_user_memory_once_a_while(
    tmp_path: Path, user_memory: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """(review D, 3) memory_expand / memory_forget of an id prefix of a workspace chunk failed with a stuck user
    memory; and every memory_search waited for it again (what did not answer was remembered per call): a user memory
    that did not answer is not asked again for a while (one warning), then is."""
    monkeypatch.setattr(scopes, "QUIET_S", 4.0, raising=False)  # (how long it is left alone)
    init_workspace(tmp_path)
    config = load_config(tmp_path)
    door = Door(tmp_path, config=config, process="memsearch-lsp mcp", embedder=FakeEmbedder())
    server = create_server(door, config)
    try:
        note = (await server.call_tool("memory_remember", {"text": OURS})).structured_content  # type: ignore[union-attr]
        door.reconciled()  # (indexed: memory_search reports no progress, which needs a client's request)
        with owner_process(user_root(), USER_OWNER) as owner:
            server.user = user_door("memsearch-lsp mcp", embedder=FakeEmbedder())
            os.kill(owner.pid, signal.SIGSTOP)
            with caplog.at_level(logging.WARNING):
                chunk = (await server.call_tool("memory_expand", {"id": note["id"][:6]})).structured_content  # type: ignore[union-attr]
                assert chunk["id"] == note["id"] and chunk["scope"] == "workspace"
                started = time.monotonic()
                for _ in range(2):
                    hits = (await server.call_tool("memory_search", {"query": "Hetzner CI"})).structured_content  # type: ignore[union-attr]
                    assert [h["scope"] for h in hits["hits"]] == ["workspace"]
                assert time.monotonic() - started < 3  # not waited for again
                assert len(said(caplog)) == 1, said(caplog)
                time.sleep(4)  # then asked again (and said again)
                await server.call_tool("memory_search", {"query": "Hetzner CI"})
                assert len(said(caplog)) == 2, said(caplog)
                gone = (await server.call_tool("memory_forget", {"id": note["id"][:6]})).structured_content  # type: ignore[union-attr]
            assert gone["scope"] == "workspace" and gone["removed"]
            os.kill(owner.pid, signal.SIGCONT)
    finally:
        door.close()
        if server.user is not None:
            server.user.close()
