"""The life of a window's roots: a folder that becomes a memory while the server runs, a folder removed while its
first pass runs, and two folders holding one memory (the same chunk ids), end to end over stdio."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.helpers import make_workspace, open_session, run_cli, until, uri, watches, workspace_folder

FAST = {"watch": {"debounceMs": 200}}


async def command(client: LanguageClient, name: str, *arguments: Any) -> Any:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=list(arguments))
    )


@pytest.mark.clients("visual_studio_code")  # (its watcher: RelativePatterns; Neovim's request opens it the same way)
async def test_a_folder_made_a_memory_while_the_server_runs_is_opened_and_indexed(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    """`memsearch-lsp init` in a workspace folder that had no memory: the client watches for what makes one, and its
    event opens the folder (indexed, in status, today's log), no restart needed."""
    first, later = make_workspace(tmp_path / "one"), tmp_path / "later"
    later.mkdir()
    session = await open_session(lsp, first, FAST, folders=[first, later])
    bare = [r for r in session.registrations if watches(r, later / ".memsearch.toml", kind=1)]
    assert bare and watches(bare[0], later / "memory", kind=1)
    run_cli("init", str(later), check=True)
    (later / "memory" / "MEMORY.md").write_text("# Memory\n\n## Wombat\n\nwombat burrow notes\n")
    session.client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=uri(later / ".memsearch.toml"), type=types.FileChangeType.Created)]
        )
    )
    await until(lambda: any(n["root"] == str(later) for n in session.indexed), "the new memory's first pass", 60)
    assert (await session.until_symbol("wombat burrow", "Wombat")).location.uri.startswith(uri(later))  # type: ignore[union-attr]
    status = await command(session.client, "memsearch.status")
    assert [r["root"] for r in status["roots"]] == [str(first), str(later)]
    today = await command(session.client, "memsearch.today", {"root": uri(later)})
    assert today["uri"].startswith(uri(later / "memory"))
    assert any(u.id == bare[0].id for u in session.unregistrations)  # (no folder left without a memory)


@pytest.mark.clients("visual_studio_code")  # no client capability changes what it checks
async def test_a_folder_removed_during_its_first_pass_is_let_go_at_once(lsp: LanguageClient, tmp_path: Path) -> None:
    """The pass stops (it held the index, and its owner record, to its end: a CLI run there became this window's
    client), no memsearch/indexed comes for the removed folder, and the index is whole when the folder comes back."""
    first, big = make_workspace(tmp_path / "one"), tmp_path / "big"
    (big / "memory").mkdir(parents=True)
    for i in range(80):
        text = f"# Note {i}\n\n## Section {i}\n\n" + f"lorem ipsum dolor sit amet {i} " * 40 + "\n"
        (big / "memory" / f"note{i}.md").write_text(text)
    session = await open_session(lsp, first, FAST)
    change = session.client.workspace_did_change_workspace_folders
    record = big / ".memsearch" / "server.json"
    change(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(added=[workspace_folder(big)], removed=[])
        )
    )
    await until(record.exists, "the added folder's index to open", 60)
    await asyncio.sleep(1.0)  # (its pass embeds)
    change(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(added=[], removed=[workspace_folder(big)])
        )
    )
    await until(lambda: not record.exists(), "the removed folder's index to be let go", 10)
    assert not [n for n in session.indexed if n["root"] == str(big)]
    change(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(added=[workspace_folder(big)], removed=[])
        )
    )
    await until(lambda: any(n["root"] == str(big) for n in session.indexed), "the folder's pass, again", 120)
    again = next(n for n in session.indexed if n["root"] == str(big))
    assert again["files"] == 80 and again["chunks"] >= 80  # (the stopped pass's work resumed, nothing lost)


@pytest.mark.clients("visual_studio_code")  # no client capability changes what it checks
async def test_a_chunk_id_two_folders_share_resolves_in_the_folder_it_is_written_in(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    """Two worktrees of one repository hold the same memory, so the same chunk ids: definition and hover on an id
    in B's file go to B's chunk, and memsearch.expand with `{"root"}` looks there first."""
    a, b = make_workspace(tmp_path / "a"), make_workspace(tmp_path / "b")
    session = await open_session(lsp, a, FAST, wait=2, folders=[a, b])
    hits = await command(session.client, "memsearch.search", "Redis cache config", 4)
    chunk_id = hits[0]["id"]
    assert {h["uri"] for h in hits if h["id"] == chunk_id} == {uri(a / "memory/MEMORY.md"), uri(b / "memory/MEMORY.md")}
    for here, there in ((b, a), (a, b)):
        path = here / "memory" / "MEMORY.md"
        text = path.read_text() + f"\nSee {chunk_id}.\n"
        doc = session.open(path, text)
        at = types.Position(line=text.count("\n") - 1, character=6)
        found = await session.client.text_document_definition_async(
            types.DefinitionParams(text_document=types.TextDocumentIdentifier(uri=doc), position=at)
        )
        assert isinstance(found, types.Location) and found.uri == doc, (here.name, found)
        expanded = await command(session.client, "memsearch.expand", chunk_id, {"root": str(here)})
        assert expanded["uri"] == doc
        other = await command(session.client, "memsearch.expand", chunk_id, {"root": uri(there / "memory")})
        assert other["uri"] == uri(there / "memory/MEMORY.md")
