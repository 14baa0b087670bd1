"""Positions in a line are counted in C (lsp/convert.py LineCodec), with pygls' answers: pygls' codec walked the line
a character at a time in Python at each keystroke, 2 s an edit on a 5 MB line, every request waiting (audit Y4, 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types
from pygls.workspace import PositionCodec, position_codec

from memsearch_lsp.lsp.protocol import LspWorkspace
from tests.helpers import frame, server_in_process, wait_until

ENCODINGS = ["utf-8", "utf-16", "utf-32"]
#: ASCII, two- and three-byte characters, astral ones (a UTF-16 surrogate pair), lone surrogates (a buffer may hold
#: them: JSON's "\ud83d"), a high one before a low one (two characters, not a pair), line ends
PIECES = ["a", " ", "é", "€", "😋", "\U0010ffff", "\ud83d", "\ude0b", "\ud83d\ude0b", "\r\n", "\n", "\r", "\x00"]


@given(
    st.lists(st.sampled_from(PIECES), max_size=12).map("".join),
    st.sampled_from([*ENCODINGS, "utf-7", None]),
    st.integers(min_value=0, max_value=2),
)
def test_positions_are_pygls_own_in_every_encoding(line: str, encoding: str | None, row: int) -> None:
    """Every character offset, inside a surrogate pair, past the end of the line and past the last line."""
    from memsearch_lsp.lsp.convert import LineCodec

    theirs, ours = PositionCodec(encoding), LineCodec(encoding)
    lines = [line, "x😋é\n"]
    assert ours.client_num_units(line) == theirs.client_num_units(line)
    for character in range(3 * len(line) + 4):
        position = types.Position(line=row, character=character)
        expected = theirs.position_from_client_units(lines, types.Position(line=row, character=character))
        assert ours.position_from_client_units(lines, position) == expected, (line, encoding, row, character)
        assert ours.position_to_client_units(lines, position) == theirs.position_to_client_units(lines, position)
    assert ours.position_from_client_units([], types.Position(line=0, character=3)) == (
        theirs.position_from_client_units([], types.Position(line=0, character=3))
    )


@pytest.fixture
def no_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """pygls' counting a character at a time (its codec's every path) fails the test."""

    def walked(*args: object) -> int:
        raise AssertionError("a line was walked a character at a time in Python")

    for counter in (position_codec.Utf8, position_codec.Utf16, position_codec.Utf32):
        monkeypatch.setattr(counter, "code_units_for_char", walked)
        monkeypatch.setattr(counter, "num_units", walked)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_an_edit_in_a_long_line_is_placed_without_walking_it(no_walk: None, encoding: str) -> None:
    """The server's workspace places a keystroke in a 1 MB line (ASCII, then with astral characters before it)."""
    for before in ("x" * 1_000_000, "😋é" * 300_000):
        ws = LspWorkspace(None, types.TextDocumentSyncKind.Incremental, position_encoding=encoding)
        text = f"# One\r\n\r\n{before}|tail\n"
        ws.put_text_document(types.TextDocumentItem("file:///x.md", "markdown", 1, text))
        units = len(before.encode(encoding.replace("utf-16", "utf-16-le").replace("utf-32", "utf-32-le")))
        units //= {"utf-8": 1, "utf-16": 2, "utf-32": 4}[encoding]
        where = types.Position(line=2, character=units)
        change = types.TextDocumentContentChangePartial(range=types.Range(where, where), text="y")
        ws.update_text_document(types.VersionedTextDocumentIdentifier(uri="file:///x.md", version=2), change)
        assert ws.get_text_document("file:///x.md").source == f"# One\r\n\r\n{before}y|tail\n"


def test_the_server_places_keystrokes_in_a_long_line_without_walking_it(
    no_walk: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real server on stdio pipes, in this process (UTF-16, the encoding every client speaks): a buffer of one
    long line with surrogate pairs, edited as an editor sends each keystroke."""
    line = "😋 word " * 100_000  # (8 UTF-16 units, 7 characters each)
    uri = (tmp_path / "notes.md").as_uri()
    with server_in_process(tmp_path, monkeypatch) as (server, client):
        client.write(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}))
        client.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        document = {"uri": uri, "languageId": "markdown", "version": 1, "text": f"# Log\n{line}\n"}
        client.write(frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": document}}))
        for version, character in enumerate((800_000, 8 * 50_000 + 1, 8 * 50_000), start=2):
            where = {"line": 1, "character": character}  # (the end, inside a surrogate pair, before it)
            change = {"range": {"start": where, "end": where}, "text": "x"}
            params = {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}
            client.write(frame({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": params}))
        client.flush()
        edited = f"# Log\n{'😋 word ' * 50_000}x😋x word {'😋 word ' * 49_999}x\n"
        wait_until(lambda: server.open_text(uri) == edited, "the 3 edits placed", 30)
