"""The MCP server's tools as a client sees them, without starting a process: descriptions as written, an output
schema for each, argument errors in one sentence with a hint, and the docs that list the tools."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver.exceptions import ToolError

from memsearch_lsp.config import load_config
from memsearch_lsp.core.api import StatusData
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.onboard import init_workspace
from memsearch_lsp.core.process.door import Door
from memsearch_lsp.core.recall import RECENT_CHARS, session_notes
from memsearch_lsp.core.scopes import user_door
from memsearch_lsp.core.workspace import MemoryFiles
from memsearch_lsp.mcp_server import MemoryMCPServer, create_server
from tests.fakes import FakeEmbedder
from tests.helpers import PREFIX_TWINS, ROOT


@pytest.fixture
def server(tmp_path: Path) -> Any:
    init_workspace(tmp_path)
    config = load_config(tmp_path)
    door = Door(tmp_path, config=config, process="memsearch-lsp mcp")
    yield create_server(door, config)
    door.close()


async def test_every_tool_has_a_plain_description_and_an_output_schema(server: MemoryMCPServer) -> None:
    tools = await server.list_tools()
    assert {t.name for t in tools} == {
        "memory_search",
        "memory_expand",
        "memory_recent",
        "memory_remember",
        "memory_forget",
        "memory_status",
    }
    for tool in tools:
        description = tool.description or ""
        assert description and "\n" not in description and "  " not in description, (tool.name, description)
        schema = tool.output_schema or {}
        assert schema.get("properties"), f"{tool.name} has no output schema"
    status = next(t for t in tools if t.name == "memory_status").output_schema or {}
    assert set(status["properties"]) == set(StatusData.__annotations__)
    assert status["required"] == [k for k in StatusData.__annotations__ if k not in ("error", "served_by_pid")]


def test_the_status_schema_names_what_status_reports(tmp_path: Path) -> None:
    init_workspace(tmp_path)
    with Memory(tmp_path, embedder=FakeEmbedder()) as memory:
        assert set(memory.status()) == set(StatusData.__annotations__) - {"error", "served_by_pid"}


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("memory_search", {"query": "redis", "top_k": 0}, "top_k must be at least 1 (got 0)"),
        ("memory_search", {"query": ""}, "query must not be empty"),
        ("memory_search", {"top_k": "many"}, "query is required; top_k must be a whole number (got 'many')"),
        ("memory_recent", {"days": 400}, "days must be at most 366 (got 400)"),
        ("memory_remember", {"text": "x", "long_term": "perhaps"}, "long_term must be true or false"),
        ("memory_search", {"query": "redis", "since": "last tuesday"}, "cannot read the date 'last tuesday'"),
        ("memory_search", {"query": "redis", "source": "*a*a*a*a"}, "the source pattern '*a*a*a*a' has 4 `*`"),
        (
            "memory_search",
            {"query": "redis", "source": "memory/[z-a].md"},
            "the source pattern 'memory/[z-a].md' is no",
        ),
        # (audit Z4, 6) a name it does not take was dropped, and pydantic's lax reading took a value of another type
        ("memory_search", {"query": "kafka", "topk": 10}, "there is no argument topk (did you mean top_k?)"),
        ("memory_search", {"query": "kafka", "top_k": True}, "top_k must be a whole number (got True)"),
        ("memory_search", {"query": "kafka", "archived": "yes"}, "archived must be true or false (got 'yes')"),
        ("memory_search", {"query": "k", "source": ["a", 1]}, "source must be a list of text, text or null (got"),
        ("memory_recent", {"days": "3"}, "days must be a whole number (got '3')"),
        ("memory_remember", {"text": "x", "long_term": "true"}, "long_term must be true or false (got 'true')"),
        ("memory_forget", {"id": "abcd", "line": 2.5}, "line must be a whole number or null (got 2.5)"),
        ("memory_status", {"verbose": True}, "there is no argument verbose: it takes none"),
    ],
)
async def test_a_bad_argument_is_one_sentence_with_a_hint(
    server: MemoryMCPServer, tool: str, arguments: dict[str, Any], says: str
) -> None:
    message = await refused(server, tool, arguments)
    assert message.startswith(f"{tool}: {says}") and f"Hint: call {tool}(" in message
    assert "pydantic" not in message and "http" not in message


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [  # (audit RC) said as the SDK's "Error executing tool memory_expand: ..."; each says what to do itself
        ("memory_expand", {"id": "2f"}, "a prefix needs 4 characters: '2f' has 2"),
        ("memory_forget", {"id": "ffffffff"}, "no chunk with id 'ffffffff' (ids come from memory_search"),
        ("memory_remember", {"text": "<private>all of it</private>"}, "nothing to remember: the text is empty"),
        ("memory_remember", {"text": "x" * 70_000}, "the note is 70000 bytes; notes are limited to 64 KiB"),
    ],
)
async def test_a_bad_id_or_note_is_one_sentence_naming_the_tool(
    server: MemoryMCPServer, tool: str, arguments: dict[str, Any], says: str
) -> None:
    message = await refused(server, tool, arguments)
    assert message.startswith(f"{tool}: {says}") and "Hint: call" not in message


async def test_a_memory_md_mid_merge_is_said_without_a_hint_to_call_it_otherwise(
    server: MemoryMCPServer, tmp_path: Path
) -> None:
    """(review R24) a failed write is no bad argument: no "Hint: call memory_remember(...)" after it."""
    (tmp_path / "memory" / "MEMORY.md").write_text("# Memory\n\n<<<<<<< HEAD\n- a\n=======\n- b\n>>>>>>> x\n")
    with pytest.raises(ToolError) as caught:
        await server.call_tool("memory_remember", {"text": "Use Postgres 16", "long_term": True})
    assert str(caught.value).startswith("memory_remember: MEMORY.md cannot take the note (unresolved merge conflict")
    assert "Hint" not in str(caught.value)


async def test_a_value_of_another_type_writes_nothing_and_a_whole_number_may_be_written_3_0(
    server: MemoryMCPServer, tmp_path: Path
) -> None:
    """(audit Z4, 6) long_term "true" (a string) wrote the note to MEMORY.md; JSON's one number type stays one."""
    files = {p: p.read_text() for p in (tmp_path / "memory").iterdir()}
    with pytest.raises(ToolError, match="long_term must be true or false"):
        await server.call_tool("memory_remember", {"text": "lax typed fact", "long_term": "true"})
    assert {p: p.read_text() for p in (tmp_path / "memory").iterdir()} == files
    assert (await called(server, "memory_recent", days=3.0, chars=500))["notes"] is not None


async def test_every_tool_is_listed_wherever_the_tools_are_listed(server: MemoryMCPServer) -> None:
    names = {t.name for t in await server.list_tools()}
    for doc in ("README.md", "vscode-extension/README.md", "vscode-extension/walkthrough/mcp.md"):
        text = (ROOT / doc).read_text(encoding="utf-8")
        assert all(f"`{name}" in text for name in names), (doc, sorted(n for n in names if f"`{n}" not in text))


async def called(server: MemoryMCPServer, tool: str, **arguments: Any) -> Any:
    result = await server.call_tool(tool, arguments)
    assert not result.is_error, result.content  # type: ignore[union-attr]
    return result.structured_content  # type: ignore[union-attr]


async def test_in_a_project_without_memory_the_user_memory_is_in_reach(tmp_path: Path) -> None:
    """(audit B, 9) In a project without memory/, memory_search's default scope failed with "no memory here" and
    memory_expand / memory_forget refused the ids memory_search(scope="user") had returned; the CLI took them."""
    plain = tmp_path / "project"
    plain.mkdir()
    config = load_config(plain)
    door = Door(plain, config=config, process="memsearch-lsp mcp", embedder=FakeEmbedder())
    server = create_server(door, config)
    server.user = user_door("memsearch-lsp mcp", embedder=FakeEmbedder())
    try:
        note = await called(server, "memory_remember", text="I prefer commit messages in the imperative.", scope="user")
        hits = (await called(server, "memory_search", query="commit messages imperative"))["hits"]
        assert hits[0]["id"] == note["id"] and {h["scope"] for h in hits} == {"user"}
        chunk = await called(server, "memory_expand", id=note["id"])
        assert chunk["scope"] == "user" and "imperative" in chunk["content"]
        gone = await called(server, "memory_forget", id=note["id"])
        assert gone["scope"] == "user" and gone["removed"]
        assert (await called(server, "memory_search", query="commit messages imperative"))["hits"] == []
        with pytest.raises(ToolError, match="no memory here"):  # this workspace's own, asked for: there is none
            await server.call_tool("memory_search", {"query": "commit", "scope": "workspace"})
        with pytest.raises(ToolError, match="no chunk with id"):
            await server.call_tool("memory_expand", {"id": "0123456789abcdef"})
        assert list(plain.iterdir()) == []  # nothing written in the project
    finally:
        door.close()
        server.user.close()


async def test_recent_notes_are_bounded_as_the_cli_bounds_them(
    server: MemoryMCPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(audit B, 10) memory_recent had no size bound: 7 days of captured turns gave a 1.2 MB answer, far over what
    a client takes. It keeps at most `chars` characters of note text, by default the CLI's `recent` bound."""
    monkeypatch.setenv("MEMSEARCH_NOW", "2026-12-07T09:00")
    turn = "**Asked:** why is the build slow?\n\n**Outcome:** " + "the cache key changed on every run; " * 40
    for day in range(1, 8):
        log = "\n\n".join(f"## {hour:02}:00\n\n{turn}" for hour in range(8, 20))
        (tmp_path / "memory" / f"2026-12-0{day}.md").write_text(f"# 2026-12-0{day}\n\n{log}\n")
    tools = {t.name: t for t in await server.list_tools()}
    assert tools["memory_recent"].input_schema["properties"]["chars"]["default"] == RECENT_CHARS
    every = (await called(server, "memory_recent", days=7))["notes"]
    assert every[0]["date"] == "2026-12-07" and sum(len(n["content"]) for n in every) <= RECENT_CHARS
    small = (await called(server, "memory_recent", days=7, chars=3000))["notes"]
    assert small and sum(len(n["content"]) for n in small) <= 3000 and small == every[: len(small)]


async def test_a_log_that_cannot_be_read_is_skipped_by_recent_with_one_warning(
    server: MemoryMCPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """(audit K, 7) one daily log of mode 000 made `recent`, `recent --session` and memory_recent fail with a raw
    PermissionError, while index and compact skip it and say why. recent skips it too, with one warning naming it.
    (Root reads any file: the refusal is simulated.)"""
    monkeypatch.setenv("MEMSEARCH_NOW", "2026-12-06T09:00")
    for day in (5, 6):
        (tmp_path / "memory" / f"2026-12-0{day}.md").write_text(f"# 2026-12-0{day}\n\n## 08:00\n\nnote of day {day}\n")
    real = os.open

    def refused(path: Any, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith("2026-12-05.md"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refused)
    notes = (await called(server, "memory_recent", days=3))["notes"]
    assert [n["source"] for n in notes] == ["memory/2026-12-06.md"]
    caplog.clear()
    session = session_notes(MemoryFiles(tmp_path, config=load_config(tmp_path)), days=3)
    assert [n.source for n in session if n.kind == "daily"] == ["memory/2026-12-06.md"]
    said = [r.getMessage() for r in caplog.records if "2026-12-05.md" in r.getMessage()]
    assert len(said) == 1 and "cannot read" in said[0] and "skipped" in said[0], said


async def test_an_id_prefix_of_a_note_in_each_memory_is_refused_by_expand_and_forget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(audit I, 3) memory_forget with a prefix the workspace's note and the user memory's both start took out the
    workspace's: the prefix is ambiguous, said with both ids, and nothing is removed; the whole id names one."""
    now, ours, theirs, prefix = PREFIX_TWINS
    monkeypatch.setenv("MEMSEARCH_NOW", now)
    init_workspace(tmp_path)
    config = load_config(tmp_path)
    door = Door(tmp_path, config=config, process="memsearch-lsp mcp", embedder=FakeEmbedder())
    server = create_server(door, config)
    server.user = user_door("memsearch-lsp mcp", embedder=FakeEmbedder())
    try:
        mine = await called(server, "memory_remember", text=ours, heading="pref")
        user = await called(server, "memory_remember", text=theirs, heading="pref", scope="user")
        assert mine["id"][:4] == user["id"][:4] == prefix and mine["id"][:5] != user["id"][:5]
        for tool in ("memory_forget", "memory_expand"):
            with pytest.raises(ToolError, match=f"{mine['id']}.*{user['id']}.*give more of the id"):
                await server.call_tool(tool, {"id": prefix})
        assert (await called(server, "memory_expand", id=user["id"][:5]))["scope"] == "user"
        gone = await called(server, "memory_forget", id=user["id"])
        assert gone["scope"] == "user" and gone["removed"] and theirs in gone["content"]
        assert ours in (tmp_path / mine["source"]).read_text()
        gone = await called(server, "memory_forget", id=prefix)  # one note left that it starts
        assert gone["scope"] == "workspace" and ours in gone["content"]
    finally:
        door.close()
        server.user.close()


async def test_memory_search_reads_dates_by_memsearch_now_and_recent_names_a_bad_one(
    server: MemoryMCPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(audit S, 2 and 4) memory_search checked `since`/`until` against the real date, not MEMSEARCH_NOW ("the range is
    empty ... until <the real today>" where the CLI answered); memory_recent with a bad MEMSEARCH_NOW failed with no
    reason and a traceback in the log, where memory_remember names the setting."""
    monkeypatch.setenv("MEMSEARCH_NOW", "2030-03-01T10:00")
    (tmp_path / "memory" / "2030-02-27.md").write_text("# 2030-02-27\n\n## 09:00\n\nChose the wombat queue.\n")
    async with Client(server) as client:  # (in-process: memory_search reports progress to its client)
        result = await client.call_tool(
            "memory_search", {"query": "wombat queue", "since": "2030-02-25", "until": "today"}
        )
    assert not result.is_error, result.content
    assert [h["source"] for h in result.structured_content["hits"]] == ["memory/2030-02-27.md"]
    monkeypatch.setenv("MEMSEARCH_NOW", "someday")
    async with Client(server) as client:
        for tool, arguments in (("memory_recent", {}), ("memory_search", {"query": "wombat", "since": "2d"})):
            said = await client.call_tool(tool, arguments)
            text = said.content[0].text  # type: ignore[union-attr]
            assert said.is_error and f"{tool}: MEMSEARCH_NOW='someday' is not an ISO 8601 date and time" in text, text
            assert "Traceback" not in text and "ValueError" not in text


async def test_memory_remember_during_a_first_index_answers_within_the_bound_and_holds_up_no_other_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(audit Z4) memory_remember during a first index waited for the whole pass (no answer after 484 s), and every
    call sent after it waited behind it (one call at a time): memory_search and memory_status too."""
    import asyncio

    from tests.fakes import GatedEmbedder

    monkeypatch.setattr("memsearch_lsp.core.passes.PASS_WAIT_S", 3.0)
    init_workspace(tmp_path)
    (tmp_path / "memory" / "2026-02-10.md").write_text("# 2026-02-10\n\n## Redis\n\nThe cache TTL is ten minutes.\n")
    config, embedder = load_config(tmp_path), GatedEmbedder()
    door = Door(tmp_path, config=config, process="memsearch-lsp mcp", embedder=embedder)
    server = create_server(door, config)
    try:
        first = door.reconcile()  # the first index (a first memory_search starts it)
        assert await asyncio.to_thread(embedder.waiting.wait, 30)
        remember = asyncio.create_task(called(server, "memory_remember", text="Chose HashiCorp Vault for secrets."))
        await asyncio.sleep(0.5)  # (it waits for the pass now)
        status = await asyncio.wait_for(called(server, "memory_status"), 10)  # not behind the remember
        assert not remember.done() and status["files"] >= 0
        note = await asyncio.wait_for(remember, 15)
        assert note["indexing"] is True and "Vault" in (tmp_path / note["source"]).read_text()
        embedder.opened.set()
        await asyncio.to_thread(first.result, 60)
        assert door.memory.store.get(note["id"]) is not None  # indexed by that pass (a search starts another)
        found = await called(server, "memory_search", query="HashiCorp Vault secrets", scope="workspace")
        assert found["indexing"] is False and found["hits"][0]["id"] == note["id"]
    finally:
        embedder.opened.set()
        door.close()


async def refused(server: MemoryMCPServer, tool: str, arguments: dict[str, Any]) -> str:
    """The one-line message of the tool error `tool(arguments)` raises."""
    with pytest.raises(ToolError) as caught:
        await server.call_tool(tool, arguments)
    assert "\n" not in str(caught.value) and "Error executing tool" not in str(caught.value)
    return str(caught.value)
