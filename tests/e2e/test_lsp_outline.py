"""End to end: the headings and ranges an editor gets back (outline, `workspace/symbol`, `memsearch/search`) for the
Markdown people write: repeated headings, long sections, old line endings, a byte order mark, a huge line (audit R).
One server for the module, one workspace folder per test."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp import LanguageClient

from memsearch_lsp.core.search.headings import HEADINGS_LIMIT
from tests.fakes import EmbeddingServer
from tests.helpers import Session, added_folder, endpoint_env, hover_text, lsp_session, make_workspace, start_shared

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


PARAGRAPHS = "\n\n".join(f"paragraph {n} about the release train and its rollback plan" for n in range(60))
LISTED = {
    "2026-01-05.md": "# 2026-01-05\n\n## Old\n\nold note\n",
    "2026-01-07.md": "# 2026-01-07\n\n## New\n\nnew note\n",
    "MEMORY.md": "# Long term\n\n## Stack\n\nPostgres.\n",
    "long.md": f"# Long\n\n## Big\n\n{PARAGRAPHS}\n\n## Big\n\nagain\n",
}


@pytest.mark.clients("visual_studio_code")  # (no capability changes workspace symbols)
async def test_every_heading_lists_the_newest_logs_first_and_a_long_section_once(
    server: Session, tmp_path: Path
) -> None:
    """(audit R, 3-4) the empty query listed headings by file name, so past its cap the newest daily logs were the
    ones left out; and a long section was listed once per piece (the outline merges them)."""
    async with folder(server, tmp_path, LISTED) as session:
        listed = [
            (s.location.uri.rsplit("/", 1)[-1], s.name, span(s.location.range))
            for s in await session.symbols("")
            if isinstance(s.location, types.Location)
        ]
        long_end = 2 + 2 * 60  # (the 60th paragraph's line, 0-based)
        assert listed == [
            ("2026-01-07.md", "2026-01-07", "0:0-0:12"),
            ("2026-01-07.md", "New", "2:0-4:8"),
            ("2026-01-05.md", "2026-01-05", "0:0-0:12"),
            ("2026-01-05.md", "Old", "2:0-4:8"),
            ("MEMORY.md", "Long term", "0:0-0:11"),
            ("MEMORY.md", "Stack", "2:0-4:9"),
            ("long.md", "Long", "0:0-0:6"),
            ("long.md", "Big", f"2:0-{long_end}:{len(PARAGRAPHS.rsplit(chr(10), 1)[-1])}"),
            ("long.md", "Big", f"{long_end + 2}:0-{long_end + 4}:5"),
        ]


@pytest.mark.clients("visual_studio_code")
async def test_past_the_cap_the_oldest_headings_are_left_out_and_it_is_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(audit R, 3) past 5,000 headings the empty query stopped without a word, and the newest logs were the ones
    left out (sorted by file name). Embedded through a local endpoint: 6,000 sections in seconds."""
    ws = make_workspace(tmp_path, examples=False)
    for day in ("2026-01-01", "2026-01-02"):
        notes = "".join(f"## note {n}\n\nsaid {n}\n\n" for n in range(2999))
        (ws / "memory" / f"{day}.md").write_text(f"# {day}\n\n{notes}")
    endpoint = EmbeddingServer()
    for name, value in endpoint_env(endpoint).items():
        monkeypatch.setenv(name, value)  # (the server started below inherits it)
    try:
        async with lsp_session(ws) as session:
            await session.wait_indexed(timeout=240)
            listed = [s.container_name for s in await session.symbols("")]
            assert len(listed) == HEADINGS_LIMIT and len(await session.symbols("")) == HEADINGS_LIMIT
            assert listed.count("memory/2026-01-02.md · 2026-01-02") == 3000  # the newest day whole, first
            assert set(listed[3000:]) == {"memory/2026-01-01.md · 2026-01-01"}
            said = [m.message for m in session.client.log_messages if "workspace/symbol" in m.message]
            assert len(said) == 1 and f"the first {HEADINGS_LIMIT} (the newest daily logs first)" in said[0]
    finally:
        endpoint.close()


CR = "# CR One\r\rCR body about puffins.\r\r## CR Two\r\rCR two body about gannets.\r"


async def test_lone_carriage_returns_end_lines_in_every_range(server: Session, tmp_path: Path) -> None:
    """(audit R, 5) a file with old Mac line ends (CR alone): the chunker counted its lines, while the ranges of
    workspace/symbol and memsearch/search split the disk file or the open buffer on LF only, so they fell on line 0."""
    async with folder(server, tmp_path, {"cr.md": CR}) as session:
        want = {"CR One": "0:0-2:22", "CR Two": "4:0-6:26"}
        every = {
            s.name: span(s.location.range) for s in await session.symbols("") if isinstance(s.location, types.Location)
        }
        assert every == want
        for opened in (False, True):
            if opened:
                session.open(session.workspace / "memory/cr.md", CR)
            hits = await session.client.protocol.send_request_async("memsearch/search", {"query": "gannets"})
            got = hits[0]["range"]
            assert (hits[0]["heading"], got["start"]["line"], got["end"]["line"], got["end"]["character"]) == (
                "CR Two",
                4,
                6,
                26,
            )
            (found,) = [s for s in await session.symbols("gannets") if s.name == "CR Two"]
            assert span(found.location.range) == want["CR Two"]  # type: ignore[union-attr]


BLOB = " ".join(f"blob{n:05d}" for n in range(11000)) + " lyrebird"


@pytest.mark.clients("visual_studio_code")  # (no capability changes it; the column is UTF-16's and ASCII)
async def test_a_range_ends_after_a_line_longer_than_the_stored_text(server: Session, tmp_path: Path) -> None:
    """(audit R, 6) the store keeps 60,000 bytes of a chunk's text: the range of a hit whose last line is longer ended
    where the stored text was cut (2:59985), not at the line's end."""
    files = {"huge.md": f"# Pasted blob\n\n{BLOB}\n\n## After\n\nafter text about bowerbirds.\n"}
    async with folder(server, tmp_path, files) as session:
        assert len(BLOB) > 100_000
        hits = await session.client.protocol.send_request_async("memsearch/search", {"query": "lyrebird"})
        assert hits[0]["heading"] == "Pasted blob" and hits[0]["range"]["end"] == {"line": 2, "character": len(BLOB)}
        (found,) = [s for s in await session.symbols("lyrebird") if s.name == "Pasted blob"]
        assert span(found.location.range) == f"0:0-2:{len(BLOB)}"  # type: ignore[union-attr]


@pytest.mark.clients("visual_studio_code")
async def test_a_long_last_line_ends_its_range_when_another_hit_of_the_file_comes_first(
    server: Session, tmp_path: Path
) -> None:
    """(review G, 4) the lines of a file were read once per search, as its first hit needed them: a later hit of the
    same file whose stored text was cut short ended at the start of the next line (4:0-7:0)."""
    files = {"huge.md": f"# Lyrebird notes\n\nlyrebird lyrebird mimicry of the lyrebird\n\n## Pasted blob\n\n{BLOB}\n"}
    async with folder(server, tmp_path, files) as session:
        hits = await session.client.protocol.send_request_async("memsearch/search", {"query": "lyrebird", "topK": 5})
        assert [h["heading"] for h in hits] == ["Lyrebird notes", "Pasted blob"]
        assert hits[1]["range"]["end"] == {"line": 6, "character": len(BLOB)}


LATIN_BOM = (
    b"\xef\xbb\xbf# Caf\xe9 notes\n\nWe met at the caf\xe9 to discuss the toucans.\n\n## Second\n\nMore on toucans.\n"
)


@pytest.mark.clients("visual_studio_code")  # (hierarchical symbols)
async def test_a_byte_order_mark_is_no_part_of_the_first_heading(server: Session, tmp_path: Path) -> None:
    """(audit R, 7) a file with a byte order mark and a byte that is not UTF-8 (decoded with replacement), or an
    editor's buffer starting with one: its first heading was '\\ufeff# Café notes' (the mark and the `# `), in search,
    snippets, the child's heading path and the outline."""
    async with folder(server, tmp_path, {"bomlatin.md": LATIN_BOM}) as session:
        hits = await session.client.protocol.send_request_async("memsearch/search", {"query": "toucans", "topK": 2})
        first = next(h for h in hits if h["start_line"] == 1)
        assert first["heading"] == "Caf\ufffd notes" and first["snippet"].startswith("We met at the caf")
        every = [s.name for s in await session.symbols("")]
        assert every == ["Caf\ufffd notes", "Second"]
        doc = session.open(session.workspace / "memory/buffer.md", "\ufeff# BOM Title\n\nbody\n\n## Child\n\nmore\n")
        assert [(depth, name) for depth, name, _ in await outline(session, doc)] == [(0, "BOM Title"), (1, "Child")]


HEADINGS = "".join(f"## H{n}\n\nthe heading number {n}\n\n" for n in range(6000))


TIMED = {
    "2026-12-04.md": "# 2026-12-04\n\n## 09:00\n\nWe chose Kafka for the event bus.\n",
    "2026-12-05.md": "# 2026-12-05\n\n## 10:40\n\nThe Kafka event bus keeps a week.\n",
}


@pytest.mark.clients("visual_studio_code")  # (no capability changes the names)
async def test_a_hover_names_timed_notes_as_the_symbols_do(server: Session, tmp_path: Path) -> None:
    """(audit RC, 2) a hover named a note under a bare `## HH:MM` by its time alone ("**10:40**", related
    "[09:00](…)"), where workspace and document symbols say "We chose Kafka for the event bus. (09:00)"."""
    async with folder(server, tmp_path, TIMED) as session:
        names = {s.name for s in await session.symbols("")}
        earlier, later = "We chose Kafka for the event bus. (09:00)", "The Kafka event bus keeps a week. (10:40)"
        assert {earlier, later} <= names, names
        doc = session.open(session.workspace / "memory/2026-12-05.md")
        assert (1, later, "2:0-4:33") in await outline(session, doc)
        text = await hover_text(session, doc, 2, 3)  # (on `## 10:40`: the note and its related memories)
        assert text.startswith(f"**{later}** · `") and f"- [{earlier}](" in text, text
        hits = await session.client.protocol.send_request_async("memsearch/search", {"query": "We chose Kafka"})
        notes = session.workspace / "notes.md"
        notes.write_text(f"see {hits[0]['id']}\n")
        assert hits[0]["heading"] == earlier
        shown = await hover_text(session, session.open(notes), 0, 6)  # (on a chunk id: the whole note)
        assert shown.startswith(f"**{earlier}** · [memory/2026-12-04.md:3-5]("), shown


# (last in the file: its 6,000-heading buffer keeps the shared server busy for a while after it)
@pytest.mark.clients("visual_studio_code")
async def test_a_long_outline_is_made_while_other_requests_are_answered(server: Session, tmp_path: Path) -> None:
    """(audit Y4, 2) the outline of a file of 20,000 headings (and a hover on one of them) was chunked on the event
    loop: every request waited seconds behind it. A request sent after them is answered first now."""
    async with folder(server, tmp_path, {"a.md": "# A\n\nalpha\n"}) as session:
        doc = session.open(session.workspace / "memory/heads.md", HEADINGS)
        client = session.client
        heavy = [
            asyncio.ensure_future(
                client.text_document_document_symbol_async(
                    types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=doc))
                )
            ),
            asyncio.ensure_future(
                client.text_document_hover_async(
                    types.HoverParams(
                        text_document=types.TextDocumentIdentifier(uri=doc),
                        position=types.Position(line=4 * 5000, character=3),
                    )
                )
            ),
        ]
        elsewhere = types.TextDocumentIdentifier(uri=(tmp_path / "outside.md").as_uri())  # (no file of a root)
        light = asyncio.ensure_future(
            client.text_document_hover_async(types.HoverParams(text_document=elsewhere, position=types.Position(0, 0)))
        )
        done, _ = await asyncio.wait([*heavy, light], return_when=asyncio.FIRST_COMPLETED)
        assert done == {light} and await light is None
        symbols, hover = await asyncio.gather(*heavy)
        assert len(symbols or []) == 6000 and hover is not None and "H5000" in str(hover.contents)
