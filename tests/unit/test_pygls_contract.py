"""The private parts of pygls that lsp/protocol.py overrides are as it was written for, and a release that moved one
stops the server with one message naming pygls (never a half-working server)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.protocol import LanguageServerProtocol

from memsearch_lsp.config import tomllib
from memsearch_lsp.lsp import protocol
from tests.helpers import ROOT, frame, server_in_process, wait_until


def test_the_installed_pygls_has_every_private_part_overridden() -> None:
    protocol.check_pygls()
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.startswith(f"pygls{protocol.PYGLS_SUPPORTED}") for d in deps), "pyproject pins the tested range"


def test_a_moved_private_part_stops_with_one_message(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata

    def renamed(self: object, msg_id: object, result: object = None) -> None:  # a release that dropped `error`
        return None

    monkeypatch.setattr(LanguageServerProtocol, "_send_response", renamed)
    with pytest.raises(protocol.PyglsDrift) as info:
        protocol.check_pygls()
    message = str(info.value)
    assert "pygls" in message and metadata.version("pygls") in message and protocol.PYGLS_SUPPORTED in message
    assert "_send_response" in message and "\n" not in message


def test_pygls_logs_an_unreadable_message_as_the_filter_expects() -> None:
    """lsp/protocol.py's ClientSlipsOnOneLine says on one line what pygls logs with a traceback."""
    import inspect

    from pygls import io_
    from pygls.protocol import json_rpc

    assert f'logger.exception("{protocol.PYGLS_UNHANDLED}")' in inspect.getsource(io_.run_async)
    unread = protocol.PYGLS_UNREAD.replace("\n", "\\n")
    source = inspect.getsource(json_rpc.JsonRPCProtocol)
    assert f'logger.error("{unread}%s", traceback.format_exc())' in source
    assert f"logger.exception('{protocol.PYGLS_ANSWERED}', msg_id)" in source


def test_a_stdio_reader_that_reads_headers_otherwise_stops_with_one_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """lsp/protocol.py's TolerantHeaders hands pygls' stdio reader each header line in the one form its pattern
    matches, a blank line to end the block, and a body by `read(n)`; a reader that reads otherwise (a wrong length
    would leave it deaf again, or every header unread) stops the server at start."""
    from pygls import io_

    async def other_reader(stop_event: object, reader: object, protocol: object) -> None:
        return None

    monkeypatch.setattr(io_, "run_async", other_reader)
    with pytest.raises(protocol.PyglsDrift, match=r"io_\.run_async is not as it was") as info:
        protocol.check_pygls()
    assert protocol.PYGLS_SUPPORTED in str(info.value) and "\n" not in str(info.value)


def test_handled_notifications_leave_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pygls kept each notification's future and task (its own and its generator step's) under a fresh id for good:
    ~3 KB a keystroke, 34 MB after 11,500 edits (audit V). The real server on stdio pipes, in this process."""
    with server_in_process(tmp_path, monkeypatch) as (server, client):
        client.write(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}))
        client.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        uri = (tmp_path / "notes.md").as_uri()
        document = {"uri": uri, "languageId": "markdown", "version": 1, "text": "# Log\n"}
        client.write(frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": document}}))
        for version in range(2, 302):
            change = {"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}}, "text": "x"}
            params = {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}
            client.write(frame({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": params}))
        client.flush()
        wait_until(lambda: len(server.workspace.get_text_document(uri).source) == 306, "the 300 edits applied")
        wait_until(lambda: len(server.protocol._request_futures) <= 2, "the handlers' futures to be let go", 10)
