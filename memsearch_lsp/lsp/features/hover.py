"""textDocument/hover (a chunk id, or a heading with related memories) and textDocument/definition."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lsprotocol import types

from memsearch_lsp.core.chunks import valid_unicode
from memsearch_lsp.core.search.hybrid import Expanded
from memsearch_lsp.core.store import IndexBusy
from memsearch_lsp.lsp import convert
from memsearch_lsp.lsp.features.symbols import UserRoot, ready_roots, user_root
from memsearch_lsp.lsp.protocol import lsp_lines

if TYPE_CHECKING:
    from memsearch_lsp.lsp.server import MemsearchServer, Root

log = logging.getLogger(__name__)


async def cursor(ls: MemsearchServer, uri: str, position: types.Position) -> tuple[Sequence[str], int] | None:
    """The document's lines (LSP's line model) and the cursor column in UTF-32 units.

    Only open buffers and regular files inside a workspace root are read (`ls.document_text`).
    """
    text = await ls.document_text(uri)
    if text is None:
        return None
    lines = lsp_lines(text)
    if position.line >= len(lines):
        return None
    where = ls.workspace.position_codec.position_from_client_units(
        lines, types.Position(line=position.line, character=position.character)
    )
    return lines, where.character


async def find_chunk(
    ls: MemsearchServer, chunk_id: str, near: Root | None = None
) -> tuple[Root | UserRoot, Expanded] | None:
    """Look a chunk id up in the root `near` (the one of the file it is written in), then every other root, then in
    the user memory, whose hits search shows beside them: two folders holding one memory (two worktrees of a
    repository) hold the same ids, and a file's own folder answers for the ids in it."""
    roots = await ready_roots(ls)
    roots.sort(key=lambda root: root is not near)  # (stable: the others keep their order)
    found = await asyncio.gather(*(ls.read(r.memory.expand, chunk_id) for r in roots))
    for root, chunk in zip(roots, found):
        if chunk is not None:
            return root, chunk
    user = user_root(ls)
    if user is None:
        return None
    try:
        mine = await asyncio.to_thread(user.door.call, lambda m: m.expand(chunk_id))
    except (OSError, IndexBusy) as exc:
        log.warning("the user memory did not answer: %s", exc)
        return None
    return (user, mine) if mine is not None else None


async def chunk_under_cursor(
    ls: MemsearchServer, uri: str, position: types.Position, at: tuple[Sequence[str], int] | None
) -> tuple[Root | UserRoot, Expanded] | None:
    if at is None:
        return None
    lines, column = at
    chunk_id = convert.id_at(lines[position.line].rstrip("\r\n"), column)
    return await find_chunk(ls, chunk_id, ls.root_holding(uri)) if chunk_id else None


_LINK, _BOLD, _CODE = (
    re.compile(r"\[([^\]\n]*)\]\([^)\s]*\)"),
    re.compile(r"\*\*([^*\n]*)\*\*"),
    re.compile(r"`([^`\n]*)`"),
)


def plain(markdown: str) -> str:
    """A hover's Markdown as plain text: our framing's links, bold and code marks taken away (the note's own text,
    after the `---` rule, stays as the file has it)."""
    frame, rule, note = markdown.partition("\n\n---\n\n")
    frame = _CODE.sub(r"\1", _BOLD.sub(r"\1", _LINK.sub(r"\1", frame))).replace("  \n", "\n")
    return f"{frame}\n\n{note}" if rule else frame


def content(ls: MemsearchServer, markdown: str) -> types.MarkupContent:
    """Markdown, or plain text (`plain`) for a client that reads no Markdown; never a lone surrogate (a buffer's,
    which strict JSON decoders refuse)."""
    document = ls.client_capabilities.text_document
    formats = document.hover.content_format if document and document.hover else None
    if not formats or types.MarkupKind.Markdown in formats:
        return types.MarkupContent(kind=types.MarkupKind.Markdown, value=valid_unicode(markdown))
    return types.MarkupContent(kind=types.MarkupKind.PlainText, value=valid_unicode(plain(markdown)))


def register(server: MemsearchServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: MemsearchServer, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        at = await cursor(ls, uri, params.position)
        found = await chunk_under_cursor(ls, uri, params.position, at)
        if found is not None:
            root, chunk = found
            return types.Hover(contents=content(ls, convert.chunk_markdown_hover(root.path, chunk)))
        located = ls.locate_memory(uri)
        if located is None or at is None:
            return None
        root, source = located
        lines, _ = at
        line_no = params.position.line + 1
        chunks = await ls.read(root.memory.outline, source, "".join(lines))  # (off the event loop: a long file's)
        heading = next((c for c in chunks if c.level > 0 and c.start_line == line_no), None)
        if heading is None:
            return None
        await ready_roots(ls, [root])  # (at most READY_WAIT_S: a long first pass answers from what is indexed)
        related = await ls.read(root.memory.related, heading, 3)
        return types.Hover(
            contents=content(ls, convert.heading_markdown_hover(root.path, heading, related)),
            range=convert.chunk_range(
                ls.workspace.position_codec, line_no, line_no, lines[params.position.line].rstrip("\r\n")
            ),
        )

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    async def definition(ls: MemsearchServer, params: types.DefinitionParams) -> types.Location | None:
        uri = params.text_document.uri
        found = await chunk_under_cursor(ls, uri, params.position, await cursor(ls, uri, params.position))
        if found is None:
            return None
        root, chunk = found
        return types.Location(
            uri=convert.uri_of(root.path, chunk.source),
            range=convert.expanded_range(ls.workspace.position_codec, chunk),
        )
