"""End-to-end: the real server over stdio (pytest-lsp), with Neovim and VS Code client capabilities.

One server per client profile serves the module (`shared_lsp`); each test adds its own copy of the example
memory as a workspace folder (a fresh index and watcher) and removes it at the end, so no test sees another's
files or index."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.helpers import (
    TODAY,
    Session,
    added_folder,
    capabilities,
    cli,
    hover_text,
    make_workspace,
    open_session,
    send_raw,
    snapshot,
    start_shared,
    until,
    uri,
    workspace_folder,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
SETTINGS = {"watch": {"debounceMs": 300, "pollIntervalMs": 1000}}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(shared_lsp: LanguageClient) -> Session:
    return await start_shared(shared_lsp, SETTINGS)


@pytest_asyncio.fixture(loop_scope="module")
async def session(server: Session, tmp_path: Path) -> AsyncIterator[Session]:
    async with added_folder(server, make_workspace(tmp_path)) as session:
        yield session


async def test_unsaved_edit_is_searchable_and_gone_after_close(session: Session) -> None:
    path = session.workspace / "memory/2026-02-17.md"
    original = path.read_text()
    doc = session.open(path)
    await session.wait_indexed(2)  # the opened buffer's pass
    n = len(session.indexed)
    added = "\n## Kafka decision\n\nPartition the orders topic by customer id, 12 partitions.\n"
    end = len(original.split("\n")) - 1
    session.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=doc, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(
                        start=types.Position(line=end, character=0), end=types.Position(line=end, character=0)
                    ),
                    text=added,
                )
            ],
        )
    )
    await session.wait_indexed(n + 1)
    symbol = await session.until_symbol("Kafka", "Kafka decision")
    assert isinstance(symbol.location, types.Location)
    assert symbol.location.range.start.line == end + 1
    assert path.read_text() == original  # nothing was saved
    session.client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=doc))
    )
    await session.wait_indexed(n + 2)
    assert "Kafka decision" not in {s.name for s in await session.symbols("Kafka")}


async def test_file_written_by_another_program_becomes_searchable(session: Session) -> None:
    path = session.workspace / "memory/2026-03-01.md"
    n = len(session.indexed)
    path.write_text("# 2026-03-01\n\n## Walrus migration\n\nThe walrus service moved to Graviton.\n")
    if session.registrations:  # the client watches: it tells the server
        session.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=uri(path), type=types.FileChangeType.Created)]
            )
        )
    await session.wait_indexed(n + 1, timeout=30)
    await session.until_symbol("walrus Graviton", "Walrus migration", timeout=10)


@pytest_asyncio.fixture(loop_scope="module")
async def polling(own_lsp: LanguageClient, tmp_path: Path) -> Session:
    """A server of its own: a client that cannot watch files (dynamic registration off)."""
    caps = capabilities(own_lsp.profile, dynamic_watch=False)  # type: ignore[attr-defined]
    return await open_session(own_lsp, make_workspace(tmp_path), SETTINGS, caps)


@pytest.mark.clients("visual_studio_code")  # no client capability changes what it checks
async def test_polling_finds_new_files_within_two_intervals(polling: Session) -> None:
    assert not polling.registrations  # the poller took its first scan before the first index pass ended
    n = len(polling.indexed)
    path = polling.workspace / "memory/2026-03-02.md"
    path.write_text("# 2026-03-02\n\n## Narwhal rollout\n\nNarwhal flags are enabled for 10% of users.\n")
    note = await polling.wait_indexed(n + 1, timeout=30)
    assert note["embedded"] >= 1  # the pass the poller started indexed the new note
    await polling.until_symbol("Narwhal rollout", "Narwhal rollout", timeout=5)
    before = path.stat()  # a same-size edit with its mtime put back (`cp -p`, `touch -r`) moves only the ctime
    path.write_text(path.read_text().replace("Narwhal flags", "Pangolin labs"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))

    async def reread() -> bool:
        hits = await polling.client.protocol.send_request_async("memsearch/search", {"query": "pangolin", "topK": 3})
        return any("Pangolin labs" in hit["snippet"] for hit in hits)

    await until(reread, "the poller to read the edit again")


@pytest.mark.clients("visual_studio_code")  # no client capability changes what it checks
async def test_bad_input_gets_errors_and_the_server_keeps_serving(session: Session) -> None:
    client = session.client
    send_raw(client, {"jsonrpc": "2.0", "id": 90001, "method": "textDocument/hover", "params": {"textDocument": 3}})
    send_raw(client, {"jsonrpc": "2.0", "id": 90002, "method": "workspace/symbol", "params": None})
    with pytest.raises(JsonRpcException):
        await client.protocol.send_request_async("memsearch/search", {"query": "redis", "topK": "many"})
    with pytest.raises(JsonRpcException, match="takes an object"):
        await client.protocol.send_request_async("memsearch/search", ["redis"])
    with pytest.raises(JsonRpcException):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(command="memsearch.nope"))
    before = snapshot(session.workspace / "memory")
    for wrong, command, pattern in [  # never read as "no options": "apply with the defaults" moves files
        (["dryRun"], "memsearch.compact", "one object of options"),
        ([None], "memsearch.compact", "one object of options"),
        ([True], "memsearch.compact", "one object of options"),
        (["redis", "2"], "memsearch.search", "topK must be a positive integer"),
        (["redis", 0], "memsearch.search", "topK must be a positive integer"),
        (["redis", 2, "since=2030-01-01"], "memsearch.search", "the filters"),  # never ignored
        ([{"force": "no"}], "memsearch.reindex", "force must be true or false"),  # "no" was a forced reindex
        (["0123456789abcdef"], "memsearch.expand", "no chunk with id '0123456789abcdef'"),  # was a bare null
        (["redis", 2, {"scope": "bogus"}], "memsearch.search", "scope"),  # (the scope was not read: all)
        # more arguments than a command takes, an option it does not know: the plan was applied, a reindex ran
        ([{}, {"dryRun": True}], "memsearch.compact", "got 2 arguments"),
        ([{"dry_run": True}], "memsearch.compact", "no option 'dry_run'"),
        ([{"dryRun": "false"}], "memsearch.compact", "dryRun must be true or false"),
        ([42, {"force": "yes"}], "memsearch.reindex", "got 2 arguments"),
        (["x"], "memsearch.reindex", "takes"),
        ([1, 2], "memsearch.status", "no arguments"),
        (["redis", None, {}, 7], "memsearch.search", "got 4 arguments"),
        (["redis", None, {"sinse": "7d"}], "memsearch.search", "no option 'sinse'"),
        ([{"rot": "/tmp"}], "memsearch.today", "no option 'rot'"),
    ]:
        with pytest.raises(JsonRpcException, match=pattern):
            await client.workspace_execute_command_async(types.ExecuteCommandParams(command=command, arguments=wrong))
    assert snapshot(session.workspace / "memory") == before
    # a null query (the spec says a string) lists the headings, as an empty one does: it never searched "None"
    params = types.WorkspaceSymbolParams(query="")
    object.__setattr__(params, "query", None)  # (past attrs' check: a client that sends null)
    listed = await client.workspace_symbol_async(params)
    assert {s.name for s in listed} == {s.name for s in await session.symbols("")}
    # a file indexed despite a problem is in the reindex's warnings, as in `index --json` (they were always [])
    (session.workspace / "memory" / "2026-03-03.md").write_bytes(b"# 2026-03-03\n\n## Odd\n\nLatin-1 caf\xe9.\n")
    stats: Any = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="memsearch.reindex", arguments=[{"force": True}])
    )
    assert [w["source"] for w in stats["warnings"]] == ["memory/2026-03-03.md"], stats
    with pytest.raises(JsonRpcException, match="no memory"):  # a folder given alone is read, never ignored
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="memsearch.today", arguments=["/etc"])
        )
    outside = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri="file:///etc/passwd"),
            position=types.Position(line=0, character=0),
        )
    )
    assert outside is None
    gone = session.workspace / "memory/2026-02-03.md"
    doc = uri(gone)
    gone.unlink()
    assert await hover_text(session, doc, 2, 2) == ""
    n = len(session.indexed)
    bad = session.workspace / "memory/2026-03-03.md"
    bad.write_bytes("# Caf\xe9\n\n## Ocelot\n\nocelot na\xefve\n".encode("latin-1"))
    if session.registrations:
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[
                    types.FileEvent(uri=uri(bad), type=types.FileChangeType.Created),
                    types.FileEvent(uri=doc, type=types.FileChangeType.Deleted),
                ]
            )
        )
    await session.wait_indexed(n + 1, timeout=30)
    await session.until_symbol("ocelot", "Ocelot", timeout=10)
    assert (await session.symbols("Redis cache config"))[0].name == "Redis Caching"


@pytest.mark.clients("visual_studio_code")  # no client capability changes what it checks
async def test_a_burst_of_edits_causes_one_or_two_passes(session: Session) -> None:
    path = session.workspace / "memory/2026-02-13.md"
    doc = session.open(path)
    await session.wait_indexed(2)
    before = len(session.indexed)
    for version in range(2, 502):
        session.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=doc, version=version),
                content_changes=[
                    types.TextDocumentContentChangePartial(
                        range=types.Range(
                            start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
                        ),
                        text="x" if version < 501 else "\n## Burst done\n\nokapi\n",
                    )
                ],
            )
        )
        if version % 50 == 0:
            await asyncio.sleep(0.2)  # 500 edits over about 2 s
    await session.until_symbol("okapi", "Burst done", timeout=20)
    # No sleeping for passes that may still come: closing the buffer cancels any pass still debouncing and
    # queues the file's re-read behind every pass already under way (one writer, in order). Once the
    # re-read is seen (the section is gone), a reindex's reply comes after every notification before it.
    session.client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=doc))
    )

    async def reread() -> bool:
        return not [s for s in await session.symbols("okapi") if s.name == "Burst done"]

    await until(reread, "the closed file re-read", timeout=20, every=0.1)
    await session.client.workspace_execute_command_async(types.ExecuteCommandParams(command="memsearch.reindex"))
    assert 1 <= len(session.indexed) - before - 2 <= 2  # less the re-read's pass and the reindex's


@pytest.mark.clients("visual_studio_code")  # no client capability changes what it checks
async def test_commands_and_custom_search(session: Session) -> None:
    client = session.client
    status: Any = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="memsearch.status"))
    assert status["roots"][0]["chunks"] > 30
    hits: Any = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="memsearch.search", arguments=["PostgreSQL 16", 5])
    )
    assert hits[0]["source"] in {"memory/MEMORY.md", "memory/2026-02-16.md"} and hits[0]["uri"].startswith("file:")
    chunk: Any = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="memsearch.expand", arguments=[hits[0]["id"]])
    )
    assert "PostgreSQL 16" in chunk["content"]
    today: Any = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="memsearch.today"))
    assert Path(today["path"]).is_file() and Path(today["path"]).name == f"{TODAY}.md"
    stats: Any = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="memsearch.reindex"))
    assert (stats["files_added"], stats["chunks_embedded"]) == (1, 1)  # only today's new log


@pytest.mark.clients("visual_studio_code")  # no client capability changes what it checks
async def test_a_folder_removed_and_another_added_at_once_are_each_handled_once(
    server: Session, session: Session, tmp_path: Path
) -> None:
    other = make_workspace(tmp_path / "other")
    messages = len(session.client.messages)
    session.client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(added=[], removed=[workspace_folder(session.workspace)])
        )
    )
    async with added_folder(server, other) as added:  # sent right after the removal, before its handler ran
        status: Any = await added.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="memsearch.status")
        )
        assert [r["root"] for r in status["roots"]] == [added.root] and status["roots"][0]["chunks"] > 30
        assert (await added.symbols("Redis cache config"))[0].name == "Redis Caching"
        assert not list((other / ".memsearch").glob("milvus.db.broken*"))  # its index was opened once
        assert len(added.indexed) == 1
    assert [m.message for m in session.client.messages[messages:] if m.type <= types.MessageType.Warning] == []


async def test_today_and_compact_act_on_the_folder_they_are_given(
    server: Session, session: Session, tmp_path: Path
) -> None:
    """Two memory folders in one window: `memsearch.today` and `memsearch.compact` take `{"root": ...}` (a path or
    a URI, the folder's own or one inside it: an editor's folder of `src/`) and act on that folder's memory."""
    other = make_workspace(tmp_path / "other")
    (other / "memory/2025-01-06.md").write_text("# 2025-01-06\n\n- Decision: only the other folder has it.\n")
    async with added_folder(server, other) as added:

        async def run(command: str, **args: Any) -> Any:
            params = types.ExecuteCommandParams(command=command, arguments=[args])
            return await added.client.workspace_execute_command_async(params)

        for where in (str(other), uri(other), str(other / "memory")):
            found = await run("memsearch.today", root=where)
            assert found["path"].startswith(str(other / "memory")), (where, found)
        first = await run("memsearch.today", root=uri(session.workspace))
        assert found["path"] != first["path"] and first["path"].startswith(str(session.workspace / "memory"))
        with pytest.raises(JsonRpcException, match="no memory"):
            await run("memsearch.today", root=str(tmp_path / "elsewhere"))
        dry = await run("memsearch.compact", root=uri(other), dryRun=True, olderThanDays=7)
        seen = [m["from"] for m in dry["archive"]] + [x for g in dry["nothing_to_gain"] for x in g["logs"]]
        assert "memory/2025-01-06.md" in seen  # (a log too short to gain from: left, and said so)
        assert not (other / "memory/archive").exists() and not (session.workspace / "memory/archive").exists()


@pytest.mark.parametrize("own_lsp", ["visual_studio_code"], indirect=True)
async def test_a_folder_added_while_initialized_runs_is_indexed_once(own_lsp: LanguageClient, tmp_path: Path) -> None:
    server = await start_shared(own_lsp, SETTINGS)  # `initialized` asks for the settings: the folder comes meanwhile
    async with added_folder(server, make_workspace(tmp_path)) as session:
        stats: Any = await session.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="memsearch.reindex")
        )  # the writer's passes run in order
        assert stats["chunks_embedded"] == 0
        assert len(session.indexed) == 2 and len(session.registrations) == 1  # the first pass and this one


@pytest.mark.parametrize("own_lsp", ["visual_studio_code", "neovim@v0.11.0"], indirect=True)
async def test_requests_sent_right_after_initialized_wait_for_the_folders(
    own_lsp: LanguageClient, tmp_path: Path
) -> None:
    """An editor's first search goes out the moment `initialized` is sent, while the server still asks for the
    settings and opens the folder's index: it is answered from that index, not with nothing."""
    ws = make_workspace(tmp_path)
    cli(ws, "index", check=True)
    session = Session(own_lsp, ws, own_lsp.profile)  # type: ignore[attr-defined]
    await session.start(capabilities(session.profile), SETTINGS)  # no wait for the first pass
    symbols, hits, today = await asyncio.gather(
        own_lsp.workspace_symbol_async(types.WorkspaceSymbolParams(query="Redis cache config")),
        own_lsp.protocol.send_request_async("memsearch/search", {"query": "Redis cache config"}),
        own_lsp.workspace_execute_command_async(types.ExecuteCommandParams(command="memsearch.today")),
    )
    assert symbols and "redis" in json.dumps(hits).lower()
    assert today["path"].startswith(str(ws))


@pytest.mark.parametrize("own_lsp", ["visual_studio_code"], indirect=True)
async def test_a_user_memory_hit_expands_on_hover_definition_and_command(
    own_lsp: LanguageClient, tmp_path: Path
) -> None:
    """Search shows the user memory's hits beside the workspace's: their ids resolve like any other."""
    ws = make_workspace(tmp_path / "ws")
    note = json.loads(cli(ws, "remember", "--user", "Okapi deploys always go out on Tuesdays.", "--json").stdout)
    session = await open_session(own_lsp, ws, SETTINGS)
    found = await session.client.protocol.send_request_async(
        "memsearch/search", {"query": "okapi deploys Tuesdays", "topK": 10}
    )
    hits = [h for h in found if h["id"] == note["id"]]
    assert hits and hits[0]["scope"] == "user"
    data: Any = await session.client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="memsearch.expand", arguments=[note["id"]])
    )
    assert "Okapi deploys always go out on Tuesdays." in data["content"] and data["uri"] == hits[0]["uri"]
    assert data["scope"] == "user"  # (audit M1, 4: it said "workspace", as the CLI and MCP do not)
    notes = ws / "notes.md"
    notes.write_text(f"# Notes\n\nsee {note['id']}\n")
    doc = session.open(notes)
    assert "Okapi deploys" in await hover_text(session, doc, 2, 6)
    place = await session.client.text_document_definition_async(
        types.DefinitionParams(
            text_document=types.TextDocumentIdentifier(uri=doc), position=types.Position(line=2, character=6)
        )
    )
    assert isinstance(place, types.Location) and place.uri == hits[0]["uri"]
