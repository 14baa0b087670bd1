"""workspace/symbol (ranked hybrid search), textDocument/documentSymbol and `memsearch/search`."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from memsearch_lsp.core.chunks import split_lines
from memsearch_lsp.core.files import read_text
from memsearch_lsp.core.process.door import READY_WAIT_S  # (the bound every search's wait for an index pass has)
from memsearch_lsp.core.search.headings import HEADINGS_LIMIT
from memsearch_lsp.core.search.hybrid import Hit
from memsearch_lsp.core.store import IndexBusy
from memsearch_lsp.lsp import convert

if TYPE_CHECKING:
    from memsearch_lsp.lsp.server import MemsearchServer, Root

SEARCH = "memsearch/search"
log = logging.getLogger(__name__)


def param(params: Any, *names: str, default: Any = None) -> Any:
    """A field of custom-request params, whether they arrive as a dict or an object."""
    for name in names:
        value = params.get(name) if isinstance(params, dict) else getattr(params, name, None)
        if value is not None:
            return value
    return default


_SURROGATES = re.compile("[\ud800-\udfff]")


def top_k_of(value: Any) -> int | None:
    """A request's topK: None when not given; ValueError (invalid params) unless a positive integer."""
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ValueError("topK must be a positive integer")
    return value


def query_text(value: Any) -> str:
    """A query as text the tokenizer accepts: JSON may carry a lone surrogate (`"\\ud800"`), which becomes
    U+FFFD (a pair was already joined into one character by the JSON decoder)."""
    return _SURROGATES.sub("\ufffd", str(value))


def lines_of(ls: MemsearchServer, root: Root | UserRoot, source: str, disk: bool = True) -> Sequence[str] | None:
    """The current lines of a memory file (split as the chunker splits them: CRLF, CR, LF): the open buffer, else
    (with `disk`) the disk, read again only when the file's size, time or inode changed."""
    text = ls.open_text(convert.uri_of(root.path, source))
    if text is not None:
        return split_lines(text)
    if not disk:
        return None
    path = root.path / source
    try:
        info = os.stat(path)
        return _disk_lines(str(path), info.st_mtime_ns, info.st_size, info.st_ino)
    except OSError:
        return None


@functools.lru_cache(maxsize=256)
def _disk_lines(path: str, mtime_ns: int, size: int, inode: int) -> tuple[str, ...]:
    text, _ = read_text(Path(path))
    return tuple(split_lines(text))


_CAPPED: set[Path] = set()  # the roots whose headings were more than HEADINGS_LIMIT (said once each)


def capped(root: Root, headings: list[Hit]) -> list[Hit]:
    """At most HEADINGS_LIMIT of a root's headings (asked for one more, to know); that the rest are left out is said
    in the log once a root."""
    if len(headings) > HEADINGS_LIMIT and root.path not in _CAPPED:
        _CAPPED.add(root.path)
        log.warning(
            "%s: more than %d headings; workspace/symbol with an empty query lists the first %d (the newest daily logs"
            " first); type a query to search them all",
            root.path.name,
            HEADINGS_LIMIT,
            HEADINGS_LIMIT,
        )
    return headings[:HEADINGS_LIMIT]


async def ready_roots(ls: MemsearchServer, roots: Sequence[Root] | None = None) -> list[Root]:
    """Every root (or `roots`), once its first index pass is done or READY_WAIT_S have passed: a root still indexing
    (a large memory, a slow embedding endpoint) then answers from the part indexed so far, rather than
    the request failing."""
    roots = list(ls.roots.values()) if roots is None else list(roots)
    waiting = [r for r in roots if not r.ready.is_set()]
    if waiting:
        try:  # one task, awaited in turn (a gather a cancelled request left logged an ERROR with a traceback)
            await asyncio.wait_for(_all_ready(waiting), timeout=READY_WAIT_S)
        except asyncio.TimeoutError:  # (not TimeoutError itself before Python 3.11)
            busy = ", ".join(r.path.name for r in roots if not r.ready.is_set())
            log.warning("%s: still indexing after %gs; answering from the part indexed so far", busy, READY_WAIT_S)
    return roots


async def _all_ready(roots: Sequence[Root]) -> None:
    for root in roots:
        await root.ready.wait()


def search_filters(params: Any) -> dict[str, Any]:
    """The filters of a search request (`since`, `until`, `source`: a glob or a list; `archived`: archived originals
    beside their summaries too), as Memory.search takes them; a wrong type is a ValueError (a JSON-RPC error)."""
    found: dict[str, Any] = {}
    for name in ("since", "until"):
        value = param(params, name)
        if value is not None:
            if not isinstance(value, str):
                raise ValueError(f"{name} must be a date string (YYYY-MM-DD or 7d)")
            found[name] = value
    source = param(params, "source")
    if source is not None:
        globs = [source] if isinstance(source, str) else source
        if not isinstance(globs, list) or not all(isinstance(g, str) for g in globs):
            raise ValueError("source must be a glob or a list of globs")
        found["source"] = globs
    archived = param(params, "archived")
    if archived is not None:
        if not isinstance(archived, bool):
            raise ValueError("archived must be true or false")
        found["archived"] = archived
    return found


@dataclass
class UserRoot:
    """The user memory beside the workspace folders (core/scopes.py), as `located` reads a root."""

    path: Path
    door: Any  # core.process.door.Door

    def close(self) -> None:
        self.door.close()


def user_root(ls: MemsearchServer) -> UserRoot | None:
    """The user memory, opened on first need (its owner's client, or owned and served here); None when the user
    has none."""
    from memsearch_lsp.core.scopes import user_door, user_memory_exists

    if ls.user is None and user_memory_exists():
        from memsearch_lsp.core.scopes import user_root as root_of_user

        ls.user = UserRoot(root_of_user(), user_door("memsearch-lsp serve"))
    return ls.user


def _user_search(user: UserRoot, query: str, limit: int, filters: dict[str, Any]) -> list[Hit]:
    from memsearch_lsp.core.scopes import scoped

    return scoped(user.door.call(lambda m: (m.index(), m.search(query, limit, **filters))[1]), "user")


async def search_all(
    ls: MemsearchServer, query: str, limit: int, scope: str = "all", **filters: Any
) -> list[tuple[Root | UserRoot, Hit]]:
    """Hybrid search in every root (and, `scope` "all" or "user", the user memory), merged best first by
    relevance, which compares across indexes (`filters`: see search_filters)."""
    from memsearch_lsp.core import clock
    from memsearch_lsp.core.scopes import beside, by_day, check_scope, is_user_root, merge

    query = query_text(query)
    roots = await ready_roots(ls) if check_scope(scope) != "user" else []
    results = await asyncio.gather(*(while_indexed(ls.read(r.memory.search, query, limit, **filters)) for r in roots))
    lists: list[list[tuple[Root | UserRoot, Hit]]] = [[(root, h) for h in hits] for root, hits in zip(roots, results)]
    user = user_root(ls) if scope != "workspace" and not any(is_user_root(r.path) for r in roots) else None
    if user is not None:  # (one that does not answer: a warning, then left alone for a while, as the CLI and MCP do)
        found = await asyncio.to_thread(beside, lambda: _user_search(user, query, limit, filters), True, "left out")
        lists.append([(user, h) for h in found or []])
    first = by_day(query, clock.now().date())  # (the notes of a day the query names first, as each root gives them)
    return merge(lists, limit, lambda pair: first(pair[1]))


async def while_indexed(reading: Awaitable[list[Hit]]) -> list[Hit]:
    """What a root answers; nothing while a child process builds its index (its first pass of a large memory)."""
    try:
        return await reading
    except IndexBusy as exc:
        log.info("%s; answering without it", exc)
        return []


def located(
    ls: MemsearchServer, pairs: Sequence[tuple[Root | UserRoot, Hit]]
) -> list[tuple[Root | UserRoot, Hit, types.Range]]:
    """Each hit with its range: from the editor's buffer when the file is open (it may differ from the
    index), else from the chunk's last line as indexed (the index follows the disk), else from the disk."""
    codec = ls.workspace.position_codec
    cache: dict[tuple[Path, str, bool], Sequence[str] | None] = {}
    out = []
    for root, hit in pairs:
        key = (root.path, hit.source, hit.last_line is None)  # (one hit of a file may need its disk lines, another not)
        if key not in cache:
            cache[key] = lines_of(ls, root, hit.source, disk=key[2])
        out.append((root, hit, convert.hit_range(codec, hit, cache[key])))
    return out


def register(server: MemsearchServer) -> None:
    @server.feature(types.WORKSPACE_SYMBOL)
    async def workspace_symbol(ls: MemsearchServer, params: types.WorkspaceSymbolParams) -> list[types.WorkspaceSymbol]:
        query = query_text(params.query).strip()
        pairs: list[tuple[Root | UserRoot, Hit]]
        if not query:
            roots = await ready_roots(ls)
            listed = [capped(r, await while_indexed(ls.read(r.memory.headings, HEADINGS_LIMIT + 1))) for r in roots]
            pairs = [(r, h) for r, headings in zip(roots, listed) for h in headings]
        else:
            limit = max((r.config.search.symbol_limit for r in ls.roots.values()), default=20)
            pairs = await search_all(ls, query, limit)
        return [convert.hit_symbol(root.path, hit, rng) for root, hit, rng in located(ls, pairs)]

    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    async def document_symbol(
        ls: MemsearchServer, params: types.DocumentSymbolParams
    ) -> list[types.DocumentSymbol] | list[types.SymbolInformation]:
        found = ls.locate(params.text_document.uri)
        text = await ls.document_text(params.text_document.uri) if found else None
        if found is None or text is None:
            return []
        root, source = found  # (chunked and converted off the event loop: 20,000 headings took seconds)
        chunks = await ls.read(root.memory.outline, source, text)
        outline = await asyncio.to_thread(convert.document_symbols, ls.workspace.position_codec, chunks)
        document = ls.client_capabilities.text_document
        nested = (
            document.document_symbol.hierarchical_document_symbol_support
            if document and document.document_symbol
            else None
        )
        return outline if nested else convert.flat_symbols(params.text_document.uri, outline)

    @server.feature(SEARCH)
    async def memsearch_search(ls: MemsearchServer, params: Any) -> list[dict[str, Any]]:
        if params is None or isinstance(params, list | str | int | float | bool):
            raise ValueError("memsearch/search takes an object: {query, topK, since, until, source, archived, scope}")
        query = param(params, "query")
        if not isinstance(query, str):  # (missing or null too: `query` is no optional field)
            raise ValueError("query must be a string")  # invalid params, as every ValueError of a handler
        query = query_text(query)
        top_k = top_k_of(param(params, "topK", "top_k", "limit"))
        limit = top_k or max((r.config.search.top_k for r in ls.roots.values()), default=3)
        filters = search_filters(params)
        scope = param(params, "scope", default="all")
        pairs = await search_all(ls, query, limit, str(scope), **filters) if query.strip() else []
        return [convert.hit_json(root.path, hit, rng) for root, hit, rng in located(ls, pairs)]
