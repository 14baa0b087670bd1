"""End to end: the headings and ranges an editor gets back (outline, `workspace/symbol`, `memsearch/search`) for the
Markdown people write: repeated headings, long sections, old line endings, a byte order mark, a huge line (audit R).
One server for the module, one workspace folder per test."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.helpers import Session, added_folder, make_workspace, start_shared

pytestmark = pytest.mark.asyncio(loop_scope="module")
SETTINGS = {"watch": {"debounceMs": 200, "pollIntervalMs": 1000}}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def server(shared_lsp: LanguageClient) -> Session:
    return await start_shared(shared_lsp, SETTINGS)


@contextlib.asynccontextmanager
async def folder(server: Session, tmp_path: Path, files: dict[str, str | bytes]) -> AsyncIterator[Session]:
    """A workspace folder whose memory holds `files` (name -> text, or bytes written as they are), indexed."""
    ws = make_workspace(tmp_path, examples=False)
    for name, text in files.items():
        (ws / "memory" / name).write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    async with added_folder(server, ws) as session:
        yield session


def span(rng: types.Range) -> str:
    return f"{rng.start.line}:{rng.start.character}-{rng.end.line}:{rng.end.character}"


async def outline(session: Session, doc: str) -> list[tuple[int, str, str]]:
    """(depth, name, range) of each symbol of the document's outline, parents first."""
    result = await session.client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=doc))
    )
    out: list[tuple[int, str, str]] = []

    def walk(symbols: Any, depth: int) -> None:
        for symbol in symbols or []:
            assert isinstance(symbol, types.DocumentSymbol)
            out.append((depth, symbol.name, span(symbol.range)))
            walk(symbol.children, depth + 1)

    walk(result, 0)
    return out


STANDUP = (
    "# Standup notes\n\n## Monday\n\nTalked about the release.\n\n## Monday\n\nRollbacks, a week later.\n\n"
    "## Tuesday\n\nOther.\n"
)


@pytest.mark.clients("visual_studio_code")  # (hierarchical symbols; a flat client gets the same list flattened)
async def test_a_repeated_sibling_heading_is_its_own_symbol_in_the_outline(server: Session, tmp_path: Path) -> None:
    """(audit R, 1) the second `## Monday` was folded into the first's range, as if a piece of a long section."""
    async with folder(server, tmp_path, {"standup.md": STANDUP}) as session:
        doc = session.open(session.workspace / "memory/standup.md")
        assert await outline(session, doc) == [
            (0, "Standup notes", "0:0-12:6"),
            (1, "Monday", "2:0-4:25"),
            (1, "Monday", "6:0-8:24"),
            (1, "Tuesday", "10:0-12:6"),
        ]
