"""Security and robustness III over stdio (the real server): an oversized unsaved buffer is skipped with one
message, a lone surrogate in a query is an ordinary query, and nothing is written through a linked index folder."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from memsearch_lsp.core.files import MAX_FILE_BYTES
from tests.helpers import Session, make_workspace, start, stop

pytestmark = pytest.mark.asyncio(loop_scope="module")
REPLY_S = 60.0


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def session(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Session]:
    running = await start(make_workspace(tmp_path_factory.mktemp("iii")))
    await running.wait_indexed(1)
    yield running
    await stop(running)


# -- 6. an unsaved buffer over the file cap is not indexed, with one message -------------------------------
async def test_an_oversized_buffer_is_skipped_with_one_message(session: Session) -> None:
    path = session.workspace / "memory" / "2026-02-10.md"
    line = "Zebrafish quokka pangolin axolotl " * 30 + "\n"
    huge = "# Huge\n\n" + line * (MAX_FILE_BYTES // len(line) * 9)  # ~9 MB, as in the report
    n = len(session.indexed)
    doc = session.open(path, text=huge)
    session.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=doc, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=huge + "Quokka.\n")],
        )
    )

    def said() -> list[str]:
        return [m.message for m in session.client.messages if "larger than" in m.message]

    for _ in range(int(REPLY_S / 0.1)):
        if said():
            break
        await asyncio.sleep(0.1)
    # The server answers at once meanwhile, and the buffer's words were never indexed.
    hits = await asyncio.wait_for(session.symbols("zebrafish quokka axolotl"), REPLY_S)
    assert not any(h.name == "Huge" for h in hits)
    await asyncio.sleep(2.5)  # past the edit's debounce (1.5 s): its pass is skipped too, without a message
    assert len(said()) == 1, said()
    assert "memory/2026-02-10.md" in said()[0] and f"{MAX_FILE_BYTES // (1024 * 1024)} MiB" in said()[0]
    assert len(session.indexed) == n, "no index pass ran for the buffer"

    session.client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=doc))
    )
    await session.until_symbol("Redis cache config", "Redis Caching")


# -- 7. a lone surrogate in a query is replaced, the query answered ----------------------------------------
async def test_a_lone_surrogate_in_a_query_is_an_ordinary_query(session: Session) -> None:
    query = "Redis \ud800cache config\udfff"  # JSON carries it as "\ud800"; the decoder gives a lone surrogate
    symbols = await asyncio.wait_for(session.symbols(query), REPLY_S)
    assert "Redis Caching" in [s.name for s in symbols]
    hits = await asyncio.wait_for(
        session.client.protocol.send_request_async("memsearch/search", {"query": query}), REPLY_S
    )
    assert "Redis Caching" in [h["heading"] if isinstance(h, dict) else h.heading for h in hits]


async def test_a_lone_surrogate_in_a_buffer_never_reaches_a_symbol_name(session: Session) -> None:
    """documentSymbol echoed a buffer's lone surrogate as "\\ud83d", which strict JSON decoders refuse."""
    doc = session.open(session.workspace / "memory" / "surr.md", text="# Surr \ud83d tapir\n\n## Kid \udc00\n\nbody\n")
    outline = await asyncio.wait_for(
        session.client.text_document_document_symbol_async(
            types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=doc))
        ),
        REPLY_S,
    )
    assert outline and isinstance(outline[0], types.DocumentSymbol) and outline[0].children
    names = [outline[0].name, outline[0].children[0].name]
    for name in names:
        name.encode("utf-8")  # (a lone surrogate cannot be encoded)
    assert names[0].startswith("Surr ") and names[0].endswith(" tapir") and names[1].startswith("Kid")


# -- 2. over LSP: a workspace whose .memsearch is a link outside gets nothing written through it -------------
async def test_the_server_writes_nothing_through_a_linked_index_folder(tmp_path: Path) -> None:
    ws, outside = make_workspace(tmp_path), tmp_path / "outside"
    outside.mkdir()
    (ws / ".memsearch").symlink_to(outside, target_is_directory=True)
    running = await start(ws)
    try:
        for _ in range(int(REPLY_S / 0.1)):
            if any("must be a real folder" in m.message for m in running.client.messages):
                break
            await asyncio.sleep(0.1)
        assert any("must be a real folder" in m.message for m in running.client.messages)
        with pytest.raises(JsonRpcException, match="must be a real folder"):  # answered, with the reason
            await asyncio.wait_for(running.symbols("redis"), REPLY_S)
    finally:
        await stop(running)
    assert list(outside.iterdir()) == [], "no index, statistics, socket or record was written outside"
