"""Unsaved editor buffers never outlive their editor in the index: the Markdown on disk is the truth once the window
that held them quits (without didClose), is killed, or was another window's; a folder deleted outside the editor
takes its notes out of search."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.helpers import (
    TODAY,
    Session,
    cli,
    make_workspace,
    server_pid,
    snapshot,
    start,
    stop,
    two_windows,
    until,
    uri,
    watches,
)

pytestmark = pytest.mark.slow

LOG = "memory/2026-02-06.md"
UNSAVED = "\n## Bonobo\n\nbonobo migration window is Thursday night\n"


def type_unsaved(session: Session, path: Path, added: str = UNSAVED) -> str:
    """Open the file and type `added` at its end, never saved."""
    doc = session.open(path)
    session.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=doc, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=path.read_text() + added)],
        )
    )
    return doc


async def found(session: Session) -> bool:
    return any(s.name == "Bonobo" for s in await session.symbols("bonobo migration window"))


async def not_found(session: Session) -> bool:
    return not await found(session)


def found_by_cli(ws: Path) -> bool:
    hits = json.loads(cli(ws, "search", "bonobo migration window", "--json").stdout)["hits"]
    return any(h["heading"] == "Bonobo" for h in hits)


async def test_an_editor_that_quits_without_closing_its_buffer_leaves_the_file_indexed(tmp_path: Path) -> None:
    """shutdown + exit (a window closed) sends no didClose: the next reader of the index sees the file, not the
    buffer, even a plain `index` (the rows record that they were a buffer's)."""
    ws = make_workspace(tmp_path)
    session = await start(ws)
    try:
        await session.wait_indexed()
        type_unsaved(session, ws / LOG)
        await until(lambda: found(session), "the unsaved section to be searchable")
    finally:
        await stop(session)
    assert "Bonobo" not in (ws / LOG).read_text()
    assert not found_by_cli(ws)


async def test_a_second_windows_unsaved_text_leaves_the_owners_index_when_it_quits(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    async with two_windows(ws) as (first, second):
        type_unsaved(second, ws / LOG)
        await until(lambda: found(first), "window 2's unsaved section in window 1's searches")
        await stop(second)
        await until(lambda: not_found(first), "the unsaved section to leave window 1's index")
        status = await first.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="memsearch.status")
        )
        assert status["roots"][0].get("pending_buffers", []) == []  # type: ignore[index]


async def test_a_window_that_takes_the_index_over_drops_the_dead_owners_unsaved_text(tmp_path: Path) -> None:
    """The owner is killed with an unsaved section in its buffer: the window that takes the index over searches the
    file as it is on disk, and keeps its own unsaved buffers."""
    ws = make_workspace(tmp_path)
    async with two_windows(ws) as (first, second):
        type_unsaved(second, ws / "memory/2026-02-09.md", "\n## Kestrel\n\nkestrel\n")
        type_unsaved(first, ws / LOG)
        await until(lambda: found(second), "window 1's unsaved section in window 2's searches")
        os.kill(server_pid(first), signal.SIGKILL)
        await until(lambda: not_found(second), "the dead owner's unsaved section to leave the index", timeout=60)
        assert [s.name for s in await second.symbols("kestrel")][:1] == ["Kestrel"]  # window 2's own buffer stays


async def test_cli_compact_beside_the_editor_refuses_a_log_it_holds_unsaved(tmp_path: Path) -> None:
    """`compact` beside an editor whose server owns the index archived a log the editor held with unsaved changes:
    the next save wrote it back beside its archived copy (every note twice, summarised again by the next compact).
    Refused as remember and forget refuse, naming the log, nothing written; once saved, compacted."""
    ws = make_workspace(tmp_path)
    now = {"MEMSEARCH_NOW": f"{TODAY}T10:00"}
    session = await start(ws)
    try:
        await session.wait_indexed()
        text = (ws / LOG).read_text() + UNSAVED
        type_unsaved(session, ws / LOG)
        await until(lambda: found(session), "the unsaved section to reach the owner's index")
        assert json.loads(cli(ws, "status", "--json").stdout)["served_by_pid"] == server_pid(session)
        before = snapshot(ws)
        refused = cli(ws, "compact", "--older-than", "7", "--json", env=now)
        assert refused.returncode == 1, refused.stdout[:300]
        message = json.loads(refused.stdout)["error"]["message"]
        assert f"{LOG} has unsaved changes in an editor: save or close it, then compact again" in message
        assert snapshot(ws) == before and not (ws / "memory/archive").exists()  # nothing archived, nothing written
        (ws / LOG).write_text(text)  # the user saves
        session.client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri(ws / LOG)), text=text)
        )
        done = cli(ws, "compact", "--older-than", "7", "--json", env=now, check=True)
        assert json.loads(done.stdout)["applied"] is True and (ws / "memory/archive" / LOG.split("/")[1]).is_file()
    finally:
        await stop(session)


def cli_hits(ws: Path, query: str, *options: str) -> list[dict[str, Any]]:
    return json.loads(cli(ws, "search", query, "--json", *options, check=True).stdout)["hits"]


async def test_files_open_unmodified_follow_the_disk_when_cli_compact_moves_and_rewrites_them(tmp_path: Path) -> None:
    """The editor has MEMORY.md and an old log open, not modified (each buffer is its file), when `compact` beside it
    moves the log into the archive and adds lasting facts to MEMORY.md: the index kept the buffers' text, the moved
    log a live hit at a path gone and the facts not found, both "pending". An unmodified buffer is its file: the
    index follows the disk, as it does after `remember` (a file with unsaved changes is refused: test above)."""
    ws = make_workspace(tmp_path)
    session = await start(ws)
    try:
        await session.wait_indexed()
        memory_md, old = ws / "memory/MEMORY.md", ws / "memory/2026-02-02.md"
        session.open(memory_md)
        session.open(old)
        await session.wait_indexed(3)  # both buffers taken by the server before the CLI compacts
        now = {"MEMSEARCH_NOW": f"{TODAY}T10:00"}
        done = json.loads(cli(ws, "compact", "--older-than", "7", "--json", env=now, check=True).stdout)
        assert done["applied"] is True and done["promoted"] and not old.exists()
        assert {"from": "memory/2026-02-02.md", "to": "memory/archive/2026-02-02.md"} in done["archive"]
        found = [
            (h["source"], h["archived"]) for h in cli_hits(ws, "docker-compose stack needs 6 GB of RAM", "--archived")
        ]
        assert ("memory/archive/2026-02-02.md", True) in found and ("memory/2026-02-02.md", False) not in found, found
        for fact in done["promoted"]:  # MEMORY.md as compaction wrote it, not as the buffer showed it
            top = cli_hits(ws, fact["text"], "--source", "memory/MEMORY.md", "-k", "1")[0]
            chunk = json.loads(cli(ws, "expand", top["id"], "--json", check=True).stdout)
            assert fact["text"] in chunk["content"], (fact["text"], chunk["content"])
        assert json.loads(cli(ws, "status", "--json").stdout)["pending_buffers"] == []
    finally:
        await stop(session)


async def test_a_file_changed_on_disk_under_an_unmodified_buffer_is_read_again(tmp_path: Path) -> None:
    """A watched "changed" event for a file whose open buffer still holds its old text (not modified: an editor that
    has not reloaded it yet) makes the index follow the disk; the buffer never outranks the file it only shows. A
    buffer with unsaved changes stays the truth for its file."""
    ws = make_workspace(tmp_path)
    session = await start(ws)
    try:
        await session.wait_indexed()
        memory_md = ws / "memory/MEMORY.md"
        session.open(memory_md)
        type_unsaved(session, ws / LOG)
        await until(lambda: found(session), "the unsaved section to be searchable")
        (ws / LOG).write_text((ws / LOG).read_text() + "\n## Tapir\n\ntapir enclosure\n")
        memory_md.write_text(memory_md.read_text() + "\n## Capybara\n\ncapybara herd grazes by the river\n")
        changed = [types.FileEvent(uri=uri(p), type=types.FileChangeType.Changed) for p in (ws / LOG, memory_md)]
        session.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=changed))
        await session.until_symbol("capybara herd grazes by the river", "Capybara")  # (after the log's event)
        assert await found(session) and "Tapir" not in [s.name for s in await session.symbols("tapir enclosure")]
    finally:
        await stop(session)


async def test_a_folder_deleted_outside_the_editor_leaves_search(tmp_path: Path) -> None:
    """Watchers report a removed folder, not each file in it: its notes leave the index all the same."""
    ws = make_workspace(tmp_path)
    (ws / "memory/projects").mkdir()
    (ws / "memory/projects/ocelot.md").write_text("# Ocelot\n\n## Ocelot transport\n\nocelot transport layer\n")
    session = await start(ws)
    try:
        await session.wait_indexed()
        await session.until_symbol("ocelot transport layer", "Ocelot transport")
        shutil.rmtree(ws / "memory/projects")
        session.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=uri(ws / "memory/projects"), type=types.FileChangeType.Deleted)]
            )
        )

        async def gone() -> bool:
            return "Ocelot transport" not in [s.name for s in await session.symbols("ocelot transport layer")]

        await until(gone, "the deleted folder's notes to leave search")
    finally:
        await stop(session)


async def test_a_memory_file_made_a_link_out_of_the_workspace_leaves_search(tmp_path: Path) -> None:
    """(audit Y4, 4) A memory file replaced by a link to a file outside the workspace: the outside file is never
    read, and its watched event was skipped, so the file's old text stayed searchable until a manual reindex."""
    ws = make_workspace(tmp_path / "ws")
    (ws / "memory/projects").mkdir()
    (ws / "memory/projects/ocelot.md").write_text("# Ocelot\n\n## Ocelot transport\n\nocelot transport layer\n")
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\n\n## Platypus\n\nplatypus outside token\n")
    session = await start(ws)
    try:
        await session.wait_indexed()
        await session.until_symbol("ocelot transport layer", "Ocelot transport")
        (ws / "memory/projects/ocelot.md").unlink()
        (ws / "memory/projects/ocelot.md").symlink_to(outside)
        event = types.FileEvent(uri=uri(ws / "memory/projects/ocelot.md"), type=types.FileChangeType.Changed)
        session.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[event]))

        async def gone() -> bool:
            return "Ocelot transport" not in [s.name for s in await session.symbols("ocelot transport layer")]

        await until(gone, "the linked file's old text to leave search")
        assert "Platypus" not in [s.name for s in await session.symbols("platypus outside token")]
    finally:
        await stop(session)


async def test_a_folder_moved_into_memory_is_searchable_and_leaves_when_moved_out(tmp_path: Path) -> None:
    """`mv inbox/trip memory/trip` reports one created folder, none of its files: a client that filters by the
    registered watchers must report it, and the notes in it are indexed; moved out again, they leave search."""
    ws = make_workspace(tmp_path)
    (ws / "inbox/trip").mkdir(parents=True)
    (ws / "inbox/trip/lighthouse.md").write_text("# Trip\n\n## Lighthouse keeper\n\nlighthousekeeper cottage\n")
    session = await start(ws)
    try:
        await session.wait_indexed()
        watched = next(r for r in session.registrations if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
        moves = [(ws / "inbox/trip", ws / "memory/trip", types.FileChangeType.Created)]
        moves.append((ws / "memory/trip", ws / "inbox/trip", types.FileChangeType.Deleted))
        for (source, target, kind), wanted in zip(moves, (True, False), strict=True):
            os.rename(source, target)
            folder = ws / "memory/trip"
            assert watches(watched, folder, kind.value), kind  # a client honouring the registration reports it
            event = types.FileEvent(uri=uri(folder), type=kind)
            session.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[event]))

            async def settled(wanted: bool = wanted) -> bool:
                names = [s.name for s in await session.symbols("lighthousekeeper cottage")]
                return ("Lighthouse keeper" in names) == wanted

            await until(settled, f"the moved folder's note {'in' if wanted else 'out of'} search")
    finally:
        await stop(session)


async def test_an_edit_of_a_document_never_opened_is_taken_without_an_error_per_keystroke(tmp_path: Path) -> None:
    """The server restarted under a running editor (or a didOpen was lost): each didChange raised KeyError, shown
    as "Error in server" at every keystroke. A whole-text change now opens the buffer with its text; a ranged one
    is left out quietly, and the server keeps serving."""
    ws = make_workspace(tmp_path)
    session = await start(ws)
    try:
        await session.wait_indexed()
        doc = uri(ws / LOG)
        for version, change in enumerate(
            [
                types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(0, 0), types.Position(0, 0)), text="x"
                ),
                types.TextDocumentContentChangeWholeDocument(text=(ws / LOG).read_text() + UNSAVED),
            ]
        ):
            session.client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=doc, version=version + 5),
                    content_changes=[change],
                )
            )
        await until(lambda: found(session), "the unopened buffer's text to be searchable")
        assert [m.message for m in session.client.messages if "Error" in m.message] == []
    finally:
        await stop(session)
