"""A second editor window that follows another's index with settings of its own (audit RB, issue 13 #6): its search
settings reach its searches; index settings the owner serves otherwise are refused with one warning, from the
start, and none when they match."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.helpers import FAST, Session, make_workspace, server_pid, start, stop

pytestmark = pytest.mark.slow

QUERY = {"query": "Kafka RabbitMQ event bus", "topK": 5}


async def search(session: Session) -> list[dict[str, Any]]:
    return list(await session.client.protocol.send_request_async("memsearch/search", QUERY))


def warnings(session: Session) -> list[str]:
    return [m.message for m in session.client.messages if m.type == types.MessageType.Warning]


@pytest.mark.model
async def test_a_client_window_started_with_other_index_settings_is_told_once_and_its_search_settings_apply(
    tmp_path: Path,
) -> None:
    ws = make_workspace(tmp_path)
    owner = await start(ws)
    windows = [owner]
    try:
        await owner.wait_indexed()
        same = await start(ws, "neovim@v0.11.0")  # the owner's settings: nothing to say
        windows.append(same)
        await same.wait_indexed()
        own = {**FAST, "memory": {"exclude": ["memory/2026-02-0*"]}, "search": {"vectorWeight": 0.0, "bm25Weight": 1.0}}
        other = await start(ws, "neovim@v0.11.0", settings=own)  # (start-up options and workspace/configuration)
        windows.append(other)
        await other.wait_indexed()
        said = warnings(other)
        assert len(said) == 1, said
        assert "memory.exclude cannot change in this window" in said[0] and "vectorWeight" not in said[0], said
        assert f"memsearch-lsp serve for an editor (pid {server_pid(owner)})" in said[0], said
        assert not warnings(same), warnings(same)
        served = await search(owner)
        assert await search(same) == served
        hits = await search(other)  # the owner's index (its files), this window's weights
        assert "memory/2026-02-05.md" in [h["source"] for h in hits]
        assert [h["score"] for h in hits] != [h["score"] for h in served], hits
        await search(other)
        assert len(warnings(other)) == 1
    finally:
        for window in reversed(windows):
            await stop(window)
