"""The life of a window's roots: a folder that becomes a memory while the server runs, a folder removed while its
first pass runs, and two folders holding one memory (the same chunk ids), end to end over stdio."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.helpers import make_workspace, open_session, until, workspace_folder

FAST = {"watch": {"debounceMs": 200}}


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
