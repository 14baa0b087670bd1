"""End-to-end, read-only: one real server per client profile and one indexed workspace shared by the whole
module (`shared_lsp`), so each profile pays the start-up and first index once."""

from __future__ import annotations

import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.helpers import Session, hover_text, make_workspace, open_session, until

pytestmark = pytest.mark.asyncio(loop_scope="module")
SETTINGS = {"watch": {"debounceMs": 300, "pollIntervalMs": 1000}}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def session(shared_lsp: LanguageClient, tmp_path_factory: pytest.TempPathFactory) -> Session:
    return await open_session(shared_lsp, make_workspace(tmp_path_factory.mktemp("shared")), SETTINGS)


async def test_startup_reports_progress_and_ranks_redis_first(session: Session) -> None:
    def kinds() -> list[str | None]:
        return [getattr(v, "kind", None) for vs in session.client.progress_reports.values() for v in vs]

    # memsearch/indexed is sent before the progress ends: wait for the end on its own event
    await until(lambda: "end" in kinds(), what="the start-up progress to end")
    assert kinds()[0] == "begin" and kinds()[-1] == "end"
    first = session.indexed[0]
    assert first["files"] == 13 and first["chunks"] > 30 and first["embedded"] == first["chunks"]
    symbols = await session.symbols("Redis cache config")
    assert symbols[0].name == "Redis Caching"
    loc = symbols[0].location
    assert isinstance(loc, types.Location) and loc.uri.endswith("memory/MEMORY.md")
    lines = (session.workspace / "memory/MEMORY.md").read_text().split("\n")
    assert lines[loc.range.start.line] == "## Redis Caching"
    assert loc.range.end.line == 15 and loc.range.end.character == session.units(lines[15])
    assert len(await session.symbols("")) >= 30  # empty query: every heading


async def test_dynamic_registration_uses_memory_folder_patterns(session: Session) -> None:
    if session.profile.startswith("neovim"):
        assert not session.registrations  # this Neovim profile cannot register: the server polls
        return
    (registration,) = session.registrations
    assert registration.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
    watchers = registration.register_options["watchers"]  # type: ignore[index]
    assert any("memory" in str(w["globPattern"]) for w in watchers)


async def test_hover_and_definition_on_chunk_ids_with_emoji_and_accents(session: Session) -> None:
    symbol = (await session.symbols("Kafka over RabbitMQ"))[0]
    hits = await session.client.protocol.send_request_async("memsearch/search", {"query": "Kafka over RabbitMQ"})
    chunk_id = hits[0]["id"]
    prefix = "Café 🎉 naïve → see "
    notes = session.workspace / "notes.md"
    notes.write_text(f"# Notes\n\n{prefix}{chunk_id} for details\n")
    doc = session.open(notes)
    column = session.units(prefix) + 3
    text = await hover_text(session, doc, 2, column)
    assert "Decision: Kafka over RabbitMQ" in text and "we chose Kafka over RabbitMQ" in text
    assert await hover_text(session, doc, 2, session.units(prefix) - 2) == ""  # on the emoji line, not the id
    result = await session.client.text_document_definition_async(
        types.DefinitionParams(
            text_document=types.TextDocumentIdentifier(uri=doc), position=types.Position(line=2, character=column)
        )
    )
    assert isinstance(result, types.Location) and isinstance(symbol.location, types.Location)
    assert result.uri == symbol.location.uri and result.range.start == symbol.location.range.start


async def test_hover_on_heading_shows_related_memories(session: Session) -> None:
    path = session.workspace / "memory/MEMORY.md"
    doc = session.open(path)
    line = path.read_text().split("\n").index("## Redis Caching")
    text = await hover_text(session, doc, line, 4)
    assert "Related memories" in text and "memory/MEMORY.md" in text
    assert "2026-02-06.md" in text  # the pool-exhaustion incident is related


async def test_document_symbols_outline(session: Session) -> None:
    path = session.workspace / "memory/MEMORY.md"
    doc = session.open(path)
    result = await session.client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=doc))
    )
    assert result and isinstance(result[0], types.DocumentSymbol)
    assert result[0].name == "Project Memory"
    assert [c.name for c in result[0].children or []][:3] == ["Team", "Redis Caching", "Database"]
