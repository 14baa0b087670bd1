"""The server indexes only memory workspaces: a folder without memory gets nothing written (real server)."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.helpers import Session, capabilities, config, uri

PROFILE = "neovim@v0.11.0"


@pytest_lsp.fixture(config=config())
async def client(lsp_client: LanguageClient):
    yield
    if not lsp_client.stopped:  # the tests stop the server themselves before looking at the disk
        await lsp_client.shutdown_session()


def files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


async def test_a_root_without_memory_is_not_indexed_and_gets_nothing_written(
    client: LanguageClient, tmp_path: Path
) -> None:
    memory_root = tmp_path / "notes-project"
    (memory_root / "memory").mkdir(parents=True)
    (memory_root / "memory" / "MEMORY.md").write_text("# Memory\n\n## Axolotl\n\naxolotl habitat notes\n")
    plain = tmp_path / "plain-repo"
    (plain / ".git").mkdir(parents=True)
    (plain / "README.md").write_text("# A repository\n\n## Axolotl\n\nnot memory\n")
    (plain / "docs").mkdir()
    (plain / "docs" / "guide.md").write_text("# Guide\n")
    before = files(plain)

    session = Session(client, memory_root, PROFILE)
    await session.start(capabilities(PROFILE), {"watch": {"debounceMs": 100}}, folders=[plain, memory_root])
    note = await session.wait_indexed(1, timeout=120)
    assert note["root"] == str(memory_root.resolve()) and note["chunks"] == 2

    readme = session.open(plain / "README.md")
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=readme, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text="# Edited\n\n## Zebra\n\nzebra\n")],
        )
    )
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=readme))
    )
    outline = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=readme))
    )
    assert not outline  # not a memory file of any root
    hits = [s.location.uri for s in await session.symbols("axolotl habitat") if isinstance(s.location, types.Location)]
    assert hits and all(h.startswith(uri(memory_root.resolve())) for h in hits)
    status = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="memsearch.status"))
    assert [r["root"] for r in status["roots"]] == [str(memory_root.resolve())]
    assert len(session.indexed) == 1  # the edit and save in the plain folder started no index pass

    await client.shutdown_session()
    assert files(plain) == before  # no .memsearch/, no socket, nothing


async def test_without_any_memory_today_says_run_init(client: LanguageClient, tmp_path: Path) -> None:
    session = Session(client, tmp_path, PROFILE)
    await session.start(capabilities(PROFILE), {})
    status = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="memsearch.status"))
    assert status["roots"] == []
    with pytest.raises(Exception, match="no memory here: run `memsearch-lsp init`"):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(command="memsearch.today"))
    # (compaction said "no workspace folder '...' is open" of the folder open in the editor)
    for options in ({"dryRun": True}, {"root": uri(tmp_path), "dryRun": True}):
        with pytest.raises(Exception, match="no memory here: run `memsearch-lsp init`"):
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="memsearch.compact", arguments=[options])
            )
    await client.shutdown_session()
    assert list(tmp_path.iterdir()) == []
