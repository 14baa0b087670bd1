"""What the language server says and does when its index or memory folder cannot be written (audit Y4): said once,
in one line, and it keeps serving; an index folder that can be made again is written again."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests import helpers
from tests.helpers import Session, make_workspace, start, stop, until, uri


def added(session: Session, path: Path, text: str) -> None:
    """A memory file written by an agent (and the watcher's event for it)."""
    path.write_text(text)
    event = types.FileEvent(uri=uri(path), type=types.FileChangeType.Created)
    session.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[event]))


async def command(session: Session, name: str, *arguments: Any) -> Any:
    params = types.ExecuteCommandParams(command=name, arguments=list(arguments))
    return await session.client.workspace_execute_command_async(params)


def shown(session: Session, text: str) -> list[str]:
    return [m.message for m in session.client.messages if text in m.message]


async def test_an_index_folder_replaced_by_a_file_is_said_once_and_written_again_once_it_can_be(
    tmp_path: Path,
) -> None:
    """`.memsearch/` replaced by a file while the server ran: the store's writer thread died on an AssertionError,
    reindex answered "AssertionError", status said nothing was wrong and the index was never written again until a
    restart. Now the problem is shown once and named by status and reindex, searches go on, and once the file is
    gone the next reindex makes the index folder again and writes it."""
    ws = make_workspace(tmp_path)
    session = await start(ws)
    try:
        await session.wait_indexed()
        shutil.rmtree(ws / ".memsearch")
        (ws / ".memsearch").write_text("not a folder")
        added(session, ws / "memory" / "emu.md", "# Emu\n\n## Emu facts\n\nThe emu runs fast across the plain.\n")

        async def error() -> str:
            return str((await command(session, "memsearch.status"))["roots"][0].get("error", ""))

        said = await until(error, "status to say the index cannot be written", timeout=60, every=0.2)
        assert f"{ws / '.memsearch'} is a file" in said and "\n" not in said, said
        await session.until_symbol("emu runs fast", "Emu facts")  # searches answer from what was indexed
        with pytest.raises(Exception) as failed:
            await command(session, "memsearch.reindex", {"force": True})
        assert getattr(failed.value, "code", None) == types.LSPErrorCodes.RequestFailed, failed.value
        assert "Assertion" not in str(failed.value) and f"{ws / '.memsearch'} is a file" in str(failed.value)
        assert len(shown(session, "cannot make the index folder")) == 1, [m.message for m in session.client.messages]

        (ws / ".memsearch").unlink()  # the user removes the stray file
        await command(session, "memsearch.reindex", {"force": True})
        assert (ws / ".memsearch" / "milvus.db" / "collections").is_dir()  # written again, not only held in memory
        assert await error() == ""
        await session.until_symbol("emu runs fast", "Emu facts")
    finally:
        await stop(session)


async def test_an_index_deleted_while_in_use_is_rebuilt_and_the_user_is_told_once(tmp_path: Path) -> None:
    """A deleted (or damaged) index was rebuilt from the Markdown, but said only in the log (stderr, logMessage):
    the user was never told. Now it is shown once (window/showMessage, a warning)."""
    ws = make_workspace(tmp_path)
    session = await start(ws)
    try:
        await session.wait_indexed()
        while (ws / ".memsearch").exists():  # (as `rm -rf` run again: the engine may still be writing a segment)
            shutil.rmtree(ws / ".memsearch", ignore_errors=True)
        added(session, ws / "memory" / "dingo.md", "# Dingo\n\n## Dingo facts\n\nThe dingo howls at night.\n")
        await session.until_symbol("dingo howls at night", "Dingo facts")
        told = await until(lambda: shown(session, "rebuilding it from the Markdown"), "the user to be told", timeout=30)
        assert len(told) == 1 and "deleted while in use" in told[0], told
        kinds = {m.type for m in session.client.messages if m.message in told}
        assert kinds == {types.MessageType.Warning}, kinds
        await session.until_symbol("Redis cache config", "Redis Caching")  # rebuilt from the Markdown
    finally:
        await stop(session)


async def _today_fails(session: Session) -> str:
    """What memsearch.today's RequestFailed says."""
    with pytest.raises(Exception) as failed:
        await command(session, "memsearch.today")
    said = str(failed.value)
    assert getattr(failed.value, "code", None) == types.LSPErrorCodes.RequestFailed, said
    return said


async def test_today_in_a_read_only_memory_folder_fails_in_one_line_naming_it(tmp_path: Path) -> None:
    """memsearch.today on a read-only memory folder answered an internal error, "OSError: [Errno 30] Read-only file
    system: '.../memory/2026-03-15.md'", with a traceback on stderr. Now RequestFailed, naming the folder and what to
    do; the server goes on serving."""
    ws = make_workspace(tmp_path)
    with helpers.read_only(ws / "memory") as prefix:
        session = await start(ws, now="2026-03-15T10:00", prefix=prefix)
        try:
            await session.wait_indexed()
            said = await _today_fails(session)
            assert f"{ws / 'memory'} is " in said and "OSError" not in said and "Errno" not in said, said
            await session.until_symbol("Redis cache config", "Redis Caching")
        finally:
            await stop(session)
    assert not (ws / "memory" / "2026-03-15.md").exists()


async def test_today_with_a_folder_in_the_place_of_its_log_fails_instead_of_answering_the_folder(
    tmp_path: Path,
) -> None:
    """A folder named like today's log (`memory/2026-03-15.md/`): memsearch.today answered it as the log, for the
    editor to open a folder. Now RequestFailed naming it; the folder is left as it is."""
    ws = make_workspace(tmp_path)
    (ws / "memory" / "2026-03-15.md").mkdir()
    session = await start(ws, now="2026-03-15T10:00")
    try:
        await session.wait_indexed()
        said = await _today_fails(session)
        assert str(ws / "memory" / "2026-03-15.md") in said and "OSError" not in said, said
        assert (ws / "memory" / "2026-03-15.md").is_dir()
    finally:
        await stop(session)
