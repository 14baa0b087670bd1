"""End-to-end compaction over LSP: code actions resolved into WorkspaceEdits, the memsearch.compact command.

One server per client profile serves the module (`shared_lsp`); each test compacts its own copy of the example
memory, added as a workspace folder and removed after."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Union

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.protocol import default_converter
from pygls.uris import to_fs_path
from pytest_lsp import LanguageClient

from memsearch_lsp.core.compact.types import plural
from tests.helpers import (
    TODAY,
    Session,
    added_folder,
    capabilities,
    make_workspace,
    open_session,
    snapshot,
    start_shared,
    uri,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

SETTINGS = {"watch": {"debounceMs": 300, "pollIntervalMs": 1000}}


def offset(text: str, position: types.Position, encoding: str) -> int:
    """A client position (line, character in the negotiated encoding) as an index into `text`."""
    lines = text.split("\n")
    start = sum(len(line) + 1 for line in lines[: position.line])
    line = lines[position.line] if position.line < len(lines) else ""
    units = 0
    for n, char in enumerate(line):
        if units >= position.character:
            return start + n
        size = (
            len(char.encode("utf-8"))
            if "8" in encoding
            else 1
            if "32" in encoding
            else len(char.encode("utf-16-le")) // 2
        )
        units += size
    return start + len(line)


def apply_edit(edit: types.WorkspaceEdit, encoding: str) -> None:
    """What an editor does with the edit: create, edit and rename files on disk, in order."""
    for change in edit.document_changes or []:
        if isinstance(change, types.CreateFile):
            path = Path(to_fs_path(change.uri) or "")
            assert not path.exists() and change.options and change.options.overwrite is False
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"")
        elif isinstance(change, types.RenameFile):
            old, new = Path(to_fs_path(change.old_uri) or ""), Path(to_fs_path(change.new_uri) or "")
            assert old.is_file() and not new.exists()
            new.parent.mkdir(parents=True, exist_ok=True)
            old.rename(new)
        elif isinstance(change, types.DeleteFile):
            raise AssertionError("compaction deletes no file: a rename takes along what a writer added meanwhile")
        elif isinstance(change, types.TextDocumentEdit):
            path = Path(to_fs_path(change.text_document.uri) or "")
            text = path.read_bytes().decode("utf-8")
            # last first; inserts at one position appear in the array's order (the LSP specification)
            edits = list(enumerate(change.edits))
            for _, item in sorted(edits, key=lambda e: (e[1].range.start.line, e[1].range.start.character, e[0]))[::-1]:
                assert isinstance(item, (types.TextEdit, types.AnnotatedTextEdit))
                a, b = offset(text, item.range.start, encoding), offset(text, item.range.end, encoding)
                text = text[:a] + item.new_text + text[b:]
            path.write_bytes(text.encode("utf-8"))
        else:
            raise AssertionError(f"unexpected change {change!r}")


@pytest.fixture(scope="module")
def cli_compacted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The files after the same compaction by the CLI (logs older than 7 days), on another copy of the
    example memory: made once, compared with the result of each LSP route."""
    ws = make_workspace(tmp_path_factory.mktemp("cli"))
    now = {**os.environ, "MEMSEARCH_NOW": f"{TODAY}T10:00"}  # the servers' clock (tests/helpers.py)
    argv = [sys.executable, "-m", "memsearch_lsp", "compact", "-w", str(ws)]
    subprocess.run(argv, check=True, capture_output=True, timeout=300, env=now)
    return without_index(snapshot(ws))


def without_index(tree: dict[str, bytes]) -> dict[str, bytes]:
    return {k: v for k, v in tree.items() if not k.startswith(".memsearch")}


class Editor:
    """Answers workspace/applyEdit by applying the edit to disk (or refusing it). The client's handler is
    registered once and answers with the editor of the running test; without one, the request fails."""

    def __init__(self, session: Session, applied: bool = True):
        self.calls: list[types.ApplyWorkspaceEditParams] = []
        self.applied = applied
        self.encoding = session.encoding
        client = session.client
        if types.WORKSPACE_APPLY_EDIT not in client.protocol.fm.features:

            @client.feature(types.WORKSPACE_APPLY_EDIT)
            def on_apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
                editor: Editor | None = client.editor  # type: ignore[attr-defined]
                if editor is None:
                    raise RuntimeError("this test has no editor to apply edits")
                return editor.apply(params)

        client.editor = self  # type: ignore[attr-defined]

    def apply(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        self.calls.append(params)
        if self.applied:
            apply_edit(params.edit, self.encoding)
        return types.ApplyWorkspaceEditResult(
            applied=self.applied, failure_reason=None if self.applied else "the user said no"
        )


def _command_or_action(data: Any, _: type) -> types.Command | types.CodeAction:
    """lsprotocol 2025.0.0 reads any item with a `command` key as a Command, though a CodeAction may
    carry a command too (then `command` is an object, not a string): tell them apart like editors do."""
    converter = default_converter()
    if isinstance(data.get("command"), str):
        return converter.structure(data, types.Command)
    return converter.structure(data, types.CodeAction)


def accept_code_actions(client: LanguageClient) -> None:
    fixed = Union[types.Command, types.CodeAction]  # noqa: UP007 - the key lsprotocol registered
    client.protocol._converter.register_structure_hook(fixed, _command_or_action)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(shared_lsp: LanguageClient) -> Session:
    accept_code_actions(shared_lsp)
    return await start_shared(shared_lsp, SETTINGS)


@contextlib.asynccontextmanager
async def compacting(server: Session, tmp_path: Path) -> AsyncIterator[Session]:
    """A copy of the example memory as a folder of the shared server; no editor unless the test makes one."""
    async with added_folder(server, make_workspace(tmp_path / "lsp")) as session:
        try:
            yield session
        finally:
            session.client.editor = None  # type: ignore[attr-defined]


@pytest_asyncio.fixture(loop_scope="module")
async def session(server: Session, tmp_path: Path) -> AsyncIterator[Session]:
    async with compacting(server, tmp_path) as session:
        yield session


@pytest_asyncio.fixture(loop_scope="module")
async def vscode_session(server: Session, tmp_path: Path) -> AsyncIterator[Session]:
    if not vscode(server):  # skipped before a folder is added for nothing
        pytest.skip("Neovim's compaction is applied by the server after the plugin's review (tests/e2e/test_nvim.py)")
    async with compacting(server, tmp_path) as session:
        yield session


@pytest_asyncio.fixture(loop_scope="module")
async def limited(own_lsp: LanguageClient, tmp_path: Path) -> Session:
    """A server of its own: a client that cannot create or rename files through edits."""
    caps = capabilities(own_lsp.profile)  # type: ignore[attr-defined]
    assert caps.workspace is not None
    caps.workspace.workspace_edit = types.WorkspaceEditClientCapabilities(document_changes=False)
    accept_code_actions(own_lsp)
    return await open_session(own_lsp, make_workspace(tmp_path / "lsp"), SETTINGS, caps)


async def code_actions(session: Session, path: Path, only: list[str] | None = None) -> list[types.CodeAction]:
    result = await session.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri(path)),
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
            context=types.CodeActionContext(diagnostics=[], only=only),
        )
    )
    return [a for a in result or [] if isinstance(a, types.CodeAction)]


def vscode(session: Session) -> bool:
    """VS Code shows change annotations (a preview); Neovim does not, so the server applies after its review."""
    return session.profile.startswith("visual")


async def command(session: Session, **args: Any) -> Any:
    return await session.client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="memsearch.compact", arguments=[args] if args else None)
    )


def annotated(edit: types.WorkspaceEdit) -> bool:
    """Every change of the edit carries an annotation that needs confirmation."""
    notes = edit.change_annotations or {}
    if not notes or not all(n.needs_confirmation for n in notes.values()):
        return False
    for change in edit.document_changes or []:
        ids = (
            [e.annotation_id for e in change.edits if isinstance(e, types.AnnotatedTextEdit)]
            if isinstance(change, types.TextDocumentEdit)
            else [change.annotation_id]
        )
        if not ids or not all(i in notes for i in ids):
            return False
    return True


async def test_code_action_is_reviewed_then_gives_the_same_files_as_the_cli(
    session: Session, cli_compacted: dict[str, bytes]
) -> None:
    memory = session.workspace / "memory"
    actions = await code_actions(session, memory / "2026-02-09.md", only=["source.compact"])
    assert [(a.title, a.kind) for a in actions] == [
        ("Compact logs older than 7 days (12 logs)", "source.compact"),
        ("Compact this log", "source.compact"),
    ]
    assert all(a.edit is None for a in actions)  # the edit is computed in codeAction/resolve
    assert not await code_actions(session, memory / "2026-02-09.md", only=["quickfix"])
    assert [a.title for a in await code_actions(session, memory / "MEMORY.md", only=["source"])] == [
        "Compact logs older than 7 days (12 logs)"
    ]  # MEMORY.md is never compacted by itself
    assert not await code_actions(session, session.workspace / "notes.md")  # not a memory file

    if vscode(session):
        before = len(session.client.progress_reports)
        resolved = await session.client.code_action_resolve_async(actions[0])
        assert resolved.edit is not None and resolved.edit.document_changes
        kinds = [type(c).__name__ for c in resolved.edit.document_changes]
        assert kinds == ["CreateFile", "TextDocumentEdit"] * 3 + ["TextDocumentEdit"] + ["RenameFile"] * 12
        assert annotated(resolved.edit)  # needsConfirmation: VS Code opens the refactor preview
        written = {
            c.text_document.uri: c.edits[0].new_text
            for c in resolved.edit.document_changes
            if isinstance(c, types.TextDocumentEdit)
        }
        notes = resolved.edit.change_annotations or {}
        for change in resolved.edit.document_changes:  # the preview shows each summary's own text
            if isinstance(change, types.TextDocumentEdit) and not change.text_document.uri.endswith("MEMORY.md"):
                edit = change.edits[0]
                assert isinstance(edit, types.AnnotatedTextEdit)
                note = notes[edit.annotation_id]
                assert note.label.startswith("Write memory/summary-2026-W0") and note.description
                facts = [x for x in written[change.text_document.uri].splitlines() if x.startswith("- ")]
                assert facts and all(f in note.description for f in facts), (note, facts)
        assert len(session.client.progress_reports) > before  # resolve reported its progress
        assert (memory / "2026-02-09.md").exists() and not (memory / "archive").exists()  # nothing applied yet
        apply_edit(resolved.edit, session.encoding)
        assert resolved.command is not None and resolved.command.command == "memsearch.reindex"
        stats: Any = await session.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=resolved.command.command, arguments=resolved.command.arguments)
        )
        assert stats["files_total"] == 4 + 12  # the summaries, MEMORY.md and the archive
    else:  # the action is the command; the plugin shows the dry run and applies the plan it showed
        assert all(a.command is not None and a.command.command == "memsearch.compact" for a in actions)
        assert actions[0].command is not None and actions[0].command.arguments
        args = actions[0].command.arguments[0]
        dry = await command(session, **args, dryRun=True)
        assert dry["applied"] is False and len(dry["planId"]) == 16 and dry["plan_id"] == dry["planId"]
        assert 0 < dry["chars_after"] < dry["chars_before"]
        with pytest.raises(Exception, match="changed since the plan was reviewed"):
            await command(session, **args, planId="0" * 16)
        assert not (memory / "archive").exists()
        done = await command(session, **args, planId=dry["planId"])
        assert done["applied"] is True and done["appliedBy"] == "server" and done["planId"] == dry["planId"]
        for summary in done["summaries"]:  # written on disk, not left in a buffer
            assert (session.workspace / summary["path"]).read_text() == summary["content"]

    lsp_tree, cli_tree = without_index(snapshot(session.workspace)), cli_compacted
    assert sorted(lsp_tree) == sorted(cli_tree) and lsp_tree == cli_tree
    assert "memory/archive/2026-02-05.md" in lsp_tree and "memory/summary-2026-W06.md" in lsp_tree

    hits: Any = await session.client.protocol.send_request_async(
        "memsearch/search", {"query": "PostgreSQL 15 legacy reporting replica", "topK": 10}
    )
    assert {h["archived"] for h in hits} == {True, False}  # archived originals are found, and say so
    assert all(h["archived"] == ("/archive/" in h["source"]) for h in hits)
    kept = "we need replay of order events for 7 days"  # in a summary: it stands for its archived original
    hits = await session.client.protocol.send_request_async("memsearch/search", {"query": kept, "topK": 10})
    both = await session.client.protocol.send_request_async(
        "memsearch/search", {"query": kept, "topK": 10, "archived": True}
    )
    assert hits[0]["source"].startswith("memory/summary-") and both[0]["source"] == hits[0]["source"]
    assert "memory/archive/2026-02-05.md" not in [h["source"] for h in hits]
    assert "memory/archive/2026-02-05.md" in [h["source"] for h in both]  # asked for: after its summary
    with pytest.raises(Exception, match="archived must be true or false"):
        await session.client.protocol.send_request_async("memsearch/search", {"query": kept, "archived": "yes"})
    symbols = await session.symbols("PostgreSQL 15 legacy reporting replica")
    assert any((s.container_name or "").endswith(" · archived") for s in symbols)
    status: Any = await session.client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="memsearch.status")
    )
    assert status["roots"][0]["files"] == 4 + 12  # the index matches the files (the archive stays indexed)


async def test_a_failed_compact_command_is_said_once_by_its_error(session: Session) -> None:
    """The server showed the failure and failed the request with it: the client showed it a second time."""
    before = len(session.client.messages)
    with pytest.raises(Exception, match=r"not a daily log|no such|not found|does not exist"):
        await command(session, files=["memory/notes.txt"])
    assert not [m for m in session.client.messages[before:] if m.type == types.MessageType.Error]


async def test_a_reviewed_plan_is_applied_as_it_is_or_refused_naming_the_log_that_changed(session: Session) -> None:
    """planId: that very plan, or nothing (never a plan re-made without the log written meanwhile). A client that
    applies workspace edits was sent the reviewed plan's edit all the same: the log written since went to the archive,
    its new line in no summary."""
    memory, editor = session.workspace / "memory", Editor(session)
    files = ["memory/2026-02-09.md", "memory/2026-02-10.md"]
    dry = await command(session, files=files, dryRun=True)
    with (memory / "2026-02-10.md").open("a") as log:
        log.write("\nDecision: roll the release back.\n")
    with pytest.raises(
        Exception, match=r"memory/2026-02-10\.md changed since the plan was reviewed; nothing compacted"
    ):
        await command(session, files=files, planId=dry["planId"])
    assert not (memory / "archive").exists() and not (memory / "summary-2026-W07.md").exists()
    assert (memory / "2026-02-09.md").is_file() and not editor.calls


async def test_a_reviewed_plan_is_refused_when_memory_md_changed_since(session: Session) -> None:
    """The editor's check of a reviewed plan looked at its logs alone: a paragraph added to MEMORY.md since the dry run
    put the promoted facts in the middle of its lines."""
    memory, editor = session.workspace / "memory", Editor(session)
    dry = await command(session, olderThanDays=7, dryRun=True)
    assert dry["promoted"], dry
    md = memory / "MEMORY.md"
    md.write_text("A paragraph written after the review.\n\n" + md.read_text())
    with pytest.raises(Exception, match=r"memory/MEMORY\.md changed since the plan was"):
        await command(session, olderThanDays=7, planId=dry["planId"])
    assert not (memory / "archive").exists() and not editor.calls
    assert md.read_text().startswith("A paragraph written after the review.\n\n")


async def test_today_s_log_is_not_offered_to_compact_by_itself(session: Session) -> None:
    """Agents still append to today's log (the server's clock): "Compact this log" is not offered on it."""
    log = session.workspace / "memory" / f"{TODAY}.md"
    log.write_text(f"# {TODAY}\n\n## 09:00\n\nDecision: ship checkout 1.5 on Friday.\n")
    assert [a.title for a in await code_actions(session, log)] == ["Compact logs older than 7 days (12 logs)"]
    assert "Compact this log" in [
        a.title for a in await code_actions(session, session.workspace / "memory/2026-02-17.md")
    ]


async def test_compact_this_log_and_the_command(session: Session) -> None:
    memory = session.workspace / "memory"
    editor = Editor(session)
    by = "editor" if vscode(session) else "server"
    if vscode(session):
        (this,) = [a for a in await code_actions(session, memory / "2026-02-16.md") if a.title == "Compact this log"]
        resolved = await session.client.code_action_resolve_async(this)
        assert resolved.edit is None and resolved.command is None  # 337 characters: nothing to gain, no empty edit
        assert any("nothing to gain" in m.message for m in session.client.messages)
        (again,) = [a for a in await code_actions(session, memory / "2026-02-16.md") if a.title == "Compact this log"]
        assert again.disabled is not None and "nothing to gain" in again.disabled.reason and again.data is None
        (both,) = [a for a in await code_actions(session, memory / "2026-02-09.md") if a.title == "Compact this log"]
        both.data = dict(both.data or {}, files=["memory/2026-02-16.md", "memory/2026-02-17.md"])
        resolved = await session.client.code_action_resolve_async(both)
        assert resolved.edit is not None and resolved.edit.document_changes is not None
        renames = [c for c in resolved.edit.document_changes if isinstance(c, types.RenameFile)]
        assert [
            (Path(to_fs_path(r.old_uri) or "").name, Path(to_fs_path(r.new_uri) or "").parent.name) for r in renames
        ] == [("2026-02-16.md", "archive"), ("2026-02-17.md", "archive")]

    dry: Any = await command(session, olderThanDays=7, dryRun=True)
    assert dry["applied"] is False and len(dry["archive"]) == 12 and not editor.calls
    assert (memory / "2026-02-16.md").exists()

    n = len(session.indexed)
    done: Any = await command(session, files=["memory/2026-02-16.md", "memory/2026-02-17.md"])
    assert done["applied"] is True and done["appliedBy"] == by and len(editor.calls) == (by == "editor")
    assert done["planId"] == done["plan_id"] != dry["planId"]  # the plan applied, by either hand
    assert [s["path"] for s in done["summaries"]] == ["memory/summary-2026-W08.md"]
    assert (memory / "archive/2026-02-17.md").is_file() and not (memory / "2026-02-17.md").exists()
    assert (memory / "summary-2026-W08.md").read_text() == done["summaries"][0]["content"]
    assert len(session.indexed) > n  # reconciled after the files changed
    hits: Any = await session.client.protocol.send_request_async("memsearch/search", {"query": "Amazon SES MJML"})
    assert hits[0]["source"] in {"memory/summary-2026-W08.md", "memory/archive/2026-02-17.md"}

    # a summary that ends without a newline, on a line with characters that differ in UTF-8/16/32
    await command(session, files=[str(memory / "2026-02-09.md"), str(memory / "2026-02-10.md")])
    w07 = memory / "summary-2026-W07.md"
    w07.write_text(w07.read_text() + "- Café 🎉 naïve → reviewed by hand")
    before = w07.read_text()
    # (with Windows line ends: the editor's edit lost them, the archived original no longer byte for byte)
    (memory / "2026-02-09.md").write_bytes(b"# 2026-02-09\r\n\r\n## Recreated\r\n\r\n- Written after the archive.\r\n")
    rest: Any = await command(session)
    assert rest["applied"] is True and len(rest["archive"]) == 9  # [] means: older than the configured days
    assert {"from": "memory/2026-02-09.md", "to": "memory/archive/2026-02-09.2.md"} in rest["archive"]
    (appended,) = [s for s in rest["summaries"] if s["action"] == "append"]
    assert appended["path"] == "memory/summary-2026-W07.md"
    assert w07.read_text() == before + appended["content"] and appended["content"].startswith("\n\n---\n")
    assert len(list((memory / "archive").iterdir())) == 13  # the day's first archived copy stays as it was
    recreated = b"# 2026-02-09\r\n\r\n## Recreated\r\n\r\n- Written after the archive.\r\n"
    assert (memory / "archive/2026-02-09.2.md").read_bytes() == recreated

    nothing: Any = await command(session, olderThanDays=7)
    assert nothing["applied"] is False and nothing["summaries"] == [] and "nothing to compact" in nothing["note"]
    with pytest.raises(Exception, match="olderThanDays"):
        await command(session, olderThanDays=-1)
    with pytest.raises(Exception, match="not a daily log"):
        await command(session, files=["memory/MEMORY.md"])


def undoable(edit: types.WorkspaceEdit, encoding: str) -> list[Any]:
    """Apply the edit as an editor does and return what undoes it, as an editor's undo of one WorkspaceEdit:
    each file's text before it, each rename backwards, each created file removed (to run in reverse order)."""
    undo: list[Any] = []
    for change in edit.document_changes or []:
        if isinstance(change, types.CreateFile):
            undo.append(("remove", Path(to_fs_path(change.uri) or "")))
        elif isinstance(change, types.RenameFile):
            undo.append(("rename", Path(to_fs_path(change.new_uri) or ""), Path(to_fs_path(change.old_uri) or "")))
        elif isinstance(change, types.TextDocumentEdit):
            path = Path(to_fs_path(change.text_document.uri) or "")
            undo.append(("text", path, path.read_bytes()))
        apply_edit(types.WorkspaceEdit(document_changes=[change]), encoding)
    return undo


def undo_all(undo: list[Any]) -> None:
    for step in reversed(undo):
        if step[0] == "remove":
            step[1].unlink()
        elif step[0] == "rename":
            step[1].rename(step[2])
        else:
            step[1].write_bytes(step[2])
    for folder in [p for p in {s[1].parent for s in undo} if p.is_dir() and not any(p.iterdir())]:
        folder.rmdir()  # the archive folder the edit made


async def test_the_preview_holds_the_memory_md_additions_and_one_undo_takes_all_back(vscode_session: Session) -> None:
    """Issue 39: the lasting facts of the compacted logs are MEMORY.md edits of the same reviewed edit, each
    with its section and its source; undoing the edit undoes them with the summaries and the moves."""
    session = vscode_session
    memory = session.workspace / "memory"
    dry: Any = await command(session, olderThanDays=7, dryRun=True)
    promoted = dry["promoted"]
    assert promoted and all(p["path"] == "memory/MEMORY.md" for p in promoted)
    assert {p["section"] for p in promoted} <= {"Preferences", "Conventions", "Decisions"}
    for p in promoted:  # each with its source: the archived log, at its line
        day = Path(p["source"]).stem
        assert p["text"].endswith(f"([{day}](archive/{day}.md#L{p['line']}))"), p
    (action, *_) = await code_actions(session, memory / "2026-02-09.md", only=["source.compact"])
    resolved = await session.client.code_action_resolve_async(action)
    assert resolved.edit is not None and annotated(resolved.edit)
    (change,) = [
        c
        for c in resolved.edit.document_changes or []
        if isinstance(c, types.TextDocumentEdit) and c.text_document.uri.endswith("/memory/MEMORY.md")
    ]
    notes = resolved.edit.change_annotations or {}
    note = notes[change.edits[0].annotation_id]  # type: ignore[union-attr]
    assert note.needs_confirmation and note.label == f"Add {plural(len(promoted), 'lasting fact')} to memory/MEMORY.md"
    assert all(f"## {p['section']}: {p['text']}" in (note.description or "") for p in promoted)
    inserted = "".join(e.new_text for e in change.edits)
    assert all(p["text"] in inserted for p in promoted)
    before = without_index(snapshot(session.workspace))
    undo = undoable(resolved.edit, session.encoding)  # the user applies the reviewed edit
    text = (memory / "MEMORY.md").read_text()
    for p in promoted:  # under its section, every line that was there kept
        section = text.index(f"## {p['section']}")
        assert text.index(f"- {p['text']}") > section, (p, text)
    lines = iter(text.splitlines())
    assert all(old in lines for old in before["memory/MEMORY.md"].decode().splitlines())  # every line kept, in order
    assert (memory / "archive/2026-02-09.md").is_file() and (memory / "summary-2026-W07.md").is_file()
    undo_all(undo)  # one undo: MEMORY.md, the summaries and the archive back as they were
    assert without_index(snapshot(session.workspace)) == before


async def test_a_refused_edit_changes_nothing(vscode_session: Session) -> None:
    session = vscode_session
    editor = Editor(session, applied=False)
    before = snapshot(session.workspace)
    result: Any = await command(session, olderThanDays=7)
    assert result["applied"] is False and result["failureReason"] == "the user said no" and editor.calls
    assert len(result["planId"]) == 16 and "appliedBy" not in result
    assert annotated(editor.calls[0].edit)
    assert without_index(snapshot(session.workspace)) == without_index(before)


@pytest.mark.clients("visual_studio_code")  # applied on disk by the server: no client capability is involved
async def test_a_client_that_cannot_rename_files_gets_the_plan_applied_on_disk(
    limited: Session, cli_compacted: dict[str, bytes]
) -> None:
    session = limited
    (action, _) = await code_actions(session, session.workspace / "memory/2026-02-09.md")
    assert action.command is not None and action.command.command == "memsearch.compact" and action.data is None
    result: Any = await session.client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=action.command.command, arguments=action.command.arguments)
    )
    assert result["applied"] is True and result["appliedBy"] == "server"
    assert any("on disk" in m.message for m in session.client.messages)
    assert without_index(snapshot(session.workspace)) == cli_compacted
    status: Any = await session.client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="memsearch.status")
    )
    assert status["roots"][0]["files"] == 4 + 12


async def test_the_server_does_not_write_a_file_an_editor_holds_unsaved(limited: Session) -> None:
    """Applied on disk, the plan would add its lasting facts to MEMORY.md under the editor's unsaved buffer, whose
    next save drops them while their logs are archived: refused, naming the file, until it is saved."""
    session = limited
    memory_md = session.workspace / "memory/MEMORY.md"
    doc = types.TextDocumentItem(uri=uri(memory_md), language_id="markdown", version=1, text=memory_md.read_text())
    session.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=doc))
    before = without_index(snapshot(session.workspace))
    session.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=doc.uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=doc.text + "\n- Typed, not saved.\n")],
        )
    )
    with pytest.raises(Exception, match=r"save memory/MEMORY\.md first"):
        await command(session, olderThanDays=7)
    assert without_index(snapshot(session.workspace)) == before  # nothing written, nothing moved
    session.client.text_document_did_change(  # the user undoes the typing: the buffer is the file again
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=doc.uri, version=3),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=doc.text)],
        )
    )
    done: Any = await command(session, olderThanDays=7)
    assert done["applied"] is True and done["appliedBy"] == "server"


@pytest.mark.clients("visual_studio_code")  # applied on disk by the server: no client capability is involved
async def test_files_open_unmodified_follow_the_disk_the_server_compacted(limited: Session) -> None:
    """MEMORY.md and an old log open in the editor, not modified (each buffer is its file), when the server applies a
    compaction on disk: the index kept the buffers' text (the moved log a live hit at a path gone, the promoted facts
    not found) until the editor sent a change. An unmodified buffer is its file: the index follows the disk."""
    session = limited
    memory_md, old = session.workspace / "memory/MEMORY.md", session.workspace / "memory/2026-02-02.md"
    session.open(memory_md)
    session.open(old)
    await session.wait_indexed(3)  # both buffers taken by the server before it compacts

    async def search(query: str, **options: Any) -> list[dict[str, Any]]:
        params = {"query": query, "topK": 5, **options}
        return list(await session.client.protocol.send_request_async("memsearch/search", params))

    done: Any = await command(session, olderThanDays=7)
    assert done["applied"] is True and done["appliedBy"] == "server" and done["promoted"] and not old.exists()
    found = [(h["source"], h["archived"]) for h in await search("docker-compose stack needs 6 GB", archived=True)]
    assert ("memory/archive/2026-02-02.md", True) in found and ("memory/2026-02-02.md", False) not in found, found
    for fact in done["promoted"]:  # MEMORY.md as the server wrote it, not as the buffer showed it
        top = (await search(fact["text"], source="memory/MEMORY.md"))[0]
        chunk: Any = await session.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="memsearch.expand", arguments=[top["id"]])
        )
        assert fact["text"] in chunk["content"], (fact["text"], chunk["content"])


async def test_a_summary_with_cr_only_line_ends_is_appended_to_at_its_end(vscode_session: Session) -> None:
    """(review of audit R, 5) The edit that appends a week's summary to the one already there counted lines by LF
    alone: in a file whose lines end with CR (an old Mac's), the end was "line 0, character N", which an editor reads
    as the end of the first line: the new summary went in after the title."""
    session = vscode_session
    summary = session.workspace / "memory" / "summary-2026-W07.md"
    summary.write_bytes(b"# Summary 2026-W07\r\rEarlier: the cache TTL is 24 hours.\r")
    (action, *_) = await code_actions(session, session.workspace / "memory" / "2026-02-09.md", ["source.compact"])
    resolved = await session.client.code_action_resolve_async(action)
    assert resolved.edit is not None
    (change,) = [
        c
        for c in resolved.edit.document_changes or []
        if isinstance(c, types.TextDocumentEdit) and c.text_document.uri.endswith("/summary-2026-W07.md")
    ]
    (edit,) = change.edits
    assert edit.range.start == edit.range.end == types.Position(line=3, character=0)


async def test_a_log_written_during_the_preview_loses_nothing_and_is_said(vscode_session: Session) -> None:
    """(audit Z1, 1) An editor renames the logs the user reviewed: it cannot check them first. A log recreated at an
    archived date was copied into its archived copy and deleted, so a line a writer added during the preview was lost;
    now every log moves whole to a name nothing holds (`2026-02-09.2.md`), and what a summary did not read is said."""
    session = vscode_session
    memory = session.workspace / "memory"
    (memory / "archive").mkdir()
    (memory / "2026-02-09.md").rename(memory / "archive/2026-02-09.md")  # archived by an earlier compaction
    first = (memory / "archive/2026-02-09.md").read_bytes()
    chatter = "".join(f"- Looked at the dashboards again, nothing new there (round {n}).\n" for n in range(12))
    recreated = f"# 2026-02-09\n\n## Recreated\n\n- Decision: chose Postgres 17 for the ledger.\n{chatter}"
    (memory / "2026-02-09.md").write_text(recreated)
    actions = await code_actions(session, memory / "2026-02-09.md", only=["source.compact"])
    (action,) = [a for a in actions if a.title == "Compact this log"]
    resolved = await session.client.code_action_resolve_async(action)
    assert resolved.edit is not None and resolved.command is not None
    with (memory / "2026-02-09.md").open("a") as log:  # an agent writes while the user reviews the preview
        log.write("- IMPORTANT-LATE-LINE: the ledger's replica is db-7.\n")
    before = len(session.client.messages)
    apply_edit(resolved.edit, session.encoding)
    await session.client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=resolved.command.command, arguments=resolved.command.arguments)
    )
    assert (memory / "archive/2026-02-09.md").read_bytes() == first  # the earlier copy untouched
    assert "IMPORTANT-LATE-LINE" in (memory / "archive/2026-02-09.2.md").read_text()
    (warning,) = [m for m in session.client.messages[before:] if "during the compaction's preview" in m.message]
    assert warning.type == types.MessageType.Warning and "memory/archive/2026-02-09.2.md" in warning.message


@pytest.mark.clients("visual_studio_code")  # applied on disk by the server: no client capability is involved
async def test_a_code_actions_command_compacts_the_folder_of_its_log(own_lsp: LanguageClient, tmp_path: Path) -> None:
    """(audit Y1, 1) With two folders, the compaction actions offered on the second folder's log, run as the
    commands the server gave (a client taking no edits), compacted the first folder's logs: they named no folder."""
    caps = capabilities(own_lsp.profile)  # type: ignore[attr-defined]
    assert caps.workspace is not None
    caps.workspace.workspace_edit = types.WorkspaceEditClientCapabilities(document_changes=False)
    accept_code_actions(own_lsp)
    first, second = make_workspace(tmp_path / "one"), make_workspace(tmp_path / "two")
    session = await open_session(own_lsp, first, SETTINGS, caps, wait=2, folders=[first, second])
    untouched = without_index(snapshot(first))
    actions = await code_actions(session, second / "memory/2026-02-09.md")
    for title in ("Compact this log", "Compact logs older than 7 days (12 logs)"):
        (action,) = [a for a in actions if a.title == title]
        assert action.command is not None and action.command.arguments, action
        assert action.command.arguments[0]["root"] == str(second)
    (older,) = [a for a in actions if a.title.startswith("Compact logs older")]
    assert older.command is not None
    result: Any = await session.client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=older.command.command, arguments=older.command.arguments)
    )
    assert result["applied"] is True, result
    assert (second / "memory/archive/2026-02-09.md").is_file() and not (second / "memory/2026-02-09.md").exists()
    assert without_index(snapshot(first)) == untouched
    # (review R1b, 3) a log of one folder named with another folder's root planned the other folder's log
    with pytest.raises(Exception, match="not in root"):
        await command(session, root=str(second), files=[str(first / "memory/2026-02-10.md")], dryRun=True)
