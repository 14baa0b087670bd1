"""A plain client (few capabilities, as a minimal LSP client or an old editor declares them) gets only what it can
take: Commands instead of CodeAction literals, a compaction applied on disk when it cannot take
workspace/applyEdit, flat document symbols, plain-text hovers; and a notification it got wrong is logged, never
shown to its user as a server error."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.helpers import FAST, make_workspace, open_session, send_raw, uri

pytestmark = [pytest.mark.asyncio, pytest.mark.clients("visual_studio_code")]  # (the client's profile is replaced here)

PLAIN = types.ClientCapabilities(
    workspace=types.WorkspaceClientCapabilities(
        apply_edit=False,
        workspace_edit=types.WorkspaceEditClientCapabilities(
            document_changes=True,
            resource_operations=[types.ResourceOperationKind.Create, types.ResourceOperationKind.Rename],
        ),
    ),
    text_document=types.TextDocumentClientCapabilities(
        hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.PlainText]),
        document_symbol=types.DocumentSymbolClientCapabilities(hierarchical_document_symbol_support=False),
        code_action=types.CodeActionClientCapabilities(),
    ),
)


async def test_a_plain_client_gets_what_it_can_take(lsp: LanguageClient, tmp_path) -> None:  # type: ignore[no-untyped-def]
    session = await open_session(lsp, make_workspace(tmp_path), FAST, caps=PLAIN)
    memory = session.workspace / "memory"
    log = session.open(memory / "2026-02-09.md")

    actions = await lsp.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=log),
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert actions and all(isinstance(a, types.Command) for a in actions), actions

    symbols = await lsp.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri(memory / "MEMORY.md")))
    )
    assert symbols and all(isinstance(s, types.SymbolInformation) for s in symbols)
    assert any(s.container_name for s in symbols)  # a `##` heading names its `#` title

    heading = (memory / "MEMORY.md").read_text().split("\n").index("## Redis Caching")
    hover = await lsp.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=session.open(memory / "MEMORY.md")),
            position=types.Position(line=heading, character=4),
        )
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.kind == types.MarkupKind.PlainText
    assert "Redis Caching" in hover.contents.value  # as text: no Markdown marks of ours, no link syntax
    assert "**" not in hover.contents.value and "](" not in hover.contents.value and "`" not in hover.contents.value

    send_raw(lsp, {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": log}}})
    await asyncio.sleep(0.5)
    assert not [m for m in lsp.messages if m.type == types.MessageType.Error]  # a client's slip is logged only

    with pytest.raises(JsonRpcException, match="sent twice"):  # "may only be sent once": the buffers stay as they are
        await lsp.protocol.send_request_async(types.INITIALIZE, types.InitializeParams(capabilities=PLAIN))

    applied = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="memsearch.compact", arguments=[{"olderThanDays": 7}])
    )
    assert applied["applied"] is True and (memory / "archive" / "2026-02-09.md").is_file()  # on disk, by the server
