"""Where the language server's settings come from and what it says about them: the environment, the editor's
messages, the workspace file while the server runs (audit Y)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.helpers import Session, make_workspace, start, stop, until, uri, watches


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


def push(session: Session, settings: dict[str, Any]) -> None:
    """didChangeConfiguration with the whole settings (and the same answer to workspace/configuration)."""
    session.client._configuration["memsearch"] = settings
    session.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"memsearch": settings})
    )


async def test_show_notifications_follows_the_settings_sent_with_it(tmp_path: Path) -> None:
    """`showNotifications: false` sent with a bad setting still popped it up (the settings in force before were
    read); once true again, the warning held back was never shown (it had been marked as shown)."""
    session = await start(make_workspace(tmp_path), settings={"showNotifications": False, "search": {"topK": "x"}})
    try:
        await session.wait_indexed()
        await search(session, "Redis cache config")
        assert not [m.message for m in session.client.messages], "a popup while showNotifications is false"
        assert any("search.topK" in m.message for m in session.client.log_messages)  # (in the log all the same)
        push(session, {"showNotifications": True, "search": {"topK": "x"}})
        await until(
            lambda: [m for m in session.client.messages if "search.topK" in m.message],
            "the warning shown once notifications are on",
            timeout=10,
        )
    finally:
        await stop(session)


async def test_each_distinct_failure_is_shown_and_status_answers_while_a_setting_keeps_the_index_shut(
    tmp_path: Path,
) -> None:
    """A second, different re-index failure was only logged (messages were told apart by what failed, "re-indexing
    ws failed", not by why); while a bad embedding.model was set, memsearch.status failed (-32602) instead of
    saying what is wrong."""
    session = await start(make_workspace(tmp_path))
    try:
        await session.wait_indexed()
        push(session, {"embedding": {"model": "no-such-model"}})

        def said(text: str) -> list[str]:
            return [m.message for m in session.client.messages if text in m.message]

        await until(lambda: said("no-such-model"), "the bad model said", timeout=20)
        status = await session.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="memsearch.status")
        )
        (root,) = status["roots"]
        assert root["root"] == str(session.workspace) and "no-such-model" in root["error"], root
        push(session, {"memory": {"paths": ["memroy"]}})
        await until(lambda: said("none of memroy"), "the second, different failure shown", timeout=20)
    finally:
        await stop(session)


async def test_an_edited_workspace_file_applies_when_the_editor_says_it_changed(tmp_path: Path) -> None:
    """Editing `.memsearch.toml` while the server ran had no effect until the editor sent didChangeConfiguration:
    the watcher did not cover it, and a change or a save of it was not read as new settings."""
    ws = make_workspace(tmp_path)
    session = await start(ws)
    try:
        await session.wait_indexed()
        assert any(watches(r, ws / ".memsearch.toml") for r in session.registrations), "the file is not watched"
        assert len(await search(session, "Redis cache config")) > 1
        (ws / ".memsearch.toml").write_text("[search]\ntop_k = 1\n")
        session.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=uri(ws / ".memsearch.toml"), type=types.FileChangeType.Changed)]
            )
        )

        async def one() -> bool:
            return len(await search(session, "Redis cache config")) == 1

        await until(one, "the edited file's top_k to apply", timeout=10, every=0.2)
        (ws / ".memsearch.toml").write_text("[search]\ntop_k = 2\n")
        session.client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri(ws / ".memsearch.toml")))
        )

        async def two() -> bool:
            return len(await search(session, "Redis cache config")) == 2

        await until(two, "the saved file's top_k to apply", timeout=10, every=0.2)
    finally:
        await stop(session)
