"""Where the language server's settings come from and what it says about them: the environment, the editor's
messages, the workspace file while the server runs (audit Y)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Session, make_workspace, start, stop


async def search(session: Session, query: str) -> list[dict[str, Any]]:
    return list(await session.client.protocol.send_request_async("memsearch/search", {"query": query}))


async def test_an_unknown_environment_variable_is_left_out_alone_and_each_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One unknown MEMSEARCH_* name dropped every environment setting (MEMSEARCH_SEARCH_TOP_K ignored) while the
    message said "the rest applies", and only the first unknown name was said."""
    monkeypatch.setenv("MEMSEARCH_SEARCH_TOP_K", "3")
    monkeypatch.setenv("MEMSEARCH_SEARCH_SNIPPET_CHARS", "20")
    monkeypatch.setenv("MEMSEARCH_SEARCH_SNIPPETCHARS", "20")
    monkeypatch.setenv("MEMSEARCH_SEARCH_TOPK", "3")
    session = await start(make_workspace(tmp_path))
    try:
        await session.wait_indexed()
        hits = await search(session, "Redis cache config")
        assert len(hits) == 3 and all(len(h["snippet"]) <= 21 for h in hits), hits
        said = " | ".join(m.message for m in session.client.messages)
        assert "MEMSEARCH_SEARCH_SNIPPETCHARS" in said and "MEMSEARCH_SEARCH_TOPK" in said, said
    finally:
        await stop(session)
