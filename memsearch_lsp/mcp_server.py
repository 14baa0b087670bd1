"""`memsearch-lsp mcp`: the workspace's memory as MCP tools and resources over stdio (official `mcp` SDK).

A thin adapter like `cli/` and `lsp/`: every tool is one call into `core.Memory` through the process model's
door (`core.process.door.Door`), which follows the index owner (an editor's language server) or owns the index.
Imported only by the `mcp` command, so the SDK stays an optional extra (`memsearch-lsp[mcp]`).
"""

from __future__ import annotations

import inspect
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, cast
from urllib.parse import unquote, urlparse

import anyio
import mcp_types
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from pydantic import Field, ValidationError
from typing_extensions import TypedDict

from memsearch_lsp.config import Config, ConfigError, load_config
from memsearch_lsp.core import clock
from memsearch_lsp.core.api import ForgottenData, MemoryApi, RememberedData, StatusData
from memsearch_lsp.core.files import PathError, find_memory_files, is_memory_source, read_text, relative_source
from memsearch_lsp.core.onboard import NoMemoryHere
from memsearch_lsp.core.process import end_on_signals
from memsearch_lsp.core.process.door import READY_WAIT_S, Door
from memsearch_lsp.core.recall import RECENT_CHARS, NoteData, recent_notes, within
from memsearch_lsp.core.scopes import (
    UNCHECKED,
    beside,
    looks_beyond,
    one_memory,
    search_scopes,
    user_door,
    user_memory_exists,
)
from memsearch_lsp.core.search.filters import FilterError, make_filter
from memsearch_lsp.core.search.hybrid import ChunkData, HitData
from memsearch_lsp.core.workspace import MemoryFiles
from memsearch_lsp.mcp_arguments import argument_error, hint, unexpected
from memsearch_lsp.mcp_stdin import filter_stdin
from memsearch_lsp.trust import hide_credentials
from memsearch_lsp.version import __version__

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])

INSTRUCTIONS = """Long-term memory of this workspace: Markdown notes in memory/ (MEMORY.md and daily logs).
Call memory_search before answering questions about past decisions, people, preferences or work (it also
searches the user's own memory, shared by every project: each hit says its scope); memory_expand(id) returns a
hit's whole section; memory_recent(days) the last days' notes; memory_remember(text) appends a note to today's
log, or with long_term=true a lasting fact or preference to a section of MEMORY.md, or with scope="user" to the
user's memory (a preference that holds in every project); memory_forget(id) removes a wrong or outdated note.
Secrets and <private>...</private> text are never written."""
READ_ONLY = mcp_types.ToolAnnotations(read_only_hint=True, open_world_hint=False)
ADDITIVE = mcp_types.ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
DESTRUCTIVE = mcp_types.ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)
Scope = Literal["workspace", "user", "all"]
ANY_PASS_S = 1.0  # the least a search waits for the index pass (one with nothing to do ends within it)


# The tools' output schemas are the result types' own wire shapes (core's TypedDicts), not copies.
class SearchResult(TypedDict):
    hits: list[HitData]
    indexing: bool
    """the index is still being brought up to date (a first index): after {READY_WAIT_S:g} s the hits come from the part
    indexed so far; search again later for the rest"""


class RecentResult(TypedDict):
    notes: list[NoteData]


class MemoryMCPServer(MCPServer[Any]):
    """MCPServer whose resources are the memory files found on disk at each listing, whose tools are described
    by their docstrings as written (dedented), and whose argument errors are one sentence with a hint."""

    def __init__(self, door: Door, config: Config | None):
        super().__init__("memsearch", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
        self.door, self.given = door, config
        self.user: Door | None = None  # the user memory (core/scopes.py), opened on first need
        self._opening = threading.Lock()  # (tools run at once, each on a thread: one door for it)

    @property
    def config(self) -> Config:
        """The settings read at the start; when they did not load then, the open memory's, else read now (ConfigError
        naming the file while it is still wrong)."""
        if self.given is not None:
            return self.given
        memory = self.door.current
        return memory.config if memory is not None else load_config(self.door.root)

    def user_memory(self, create: bool = False) -> Door | None:
        """The user memory's door; None when the user has none (and `create` is False)."""
        with self._opening:
            if self.user is None and (create or user_memory_exists()):
                self.user = user_door("memsearch-lsp mcp")
            return self.user

    def memory_tool(self, title: str, annotations: mcp_types.ToolAnnotations) -> Callable[[F], F]:
        """`tool()` with the function's docstring as its description, dedented and unwrapped."""

        def register(fn: F) -> F:
            return self.tool(title=title, description=described(fn), annotations=annotations)(fn)

        return register

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        schema = tool.parameters if tool is not None else {}
        if said := unexpected(name, schema, arguments or {}) if tool is not None else "":  # (before the SDK's lax read)
            raise ToolError(f"{said}. {hint(name, schema)}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            said, bad = str(exc), exc.__cause__
            if isinstance(bad, ToolError):  # (ours, raised by the tool: the SDK put its own around it)
                said, bad = str(bad), bad.__cause__
            elif isinstance(bad, ValueError):  # (raised by the tool itself)
                said = str(bad)
            if not isinstance(bad, ValueError) or isinstance(bad, ConfigError):  # (bad input: an id, a note, a filter)
                raise
            said = argument_error(name, bad) if isinstance(bad, ValidationError) else said
            said = said if said.startswith(f"{name}: ") else f"{name}: {said}"  # (an id, a note: it says what to do)
            about = isinstance(bad, ValidationError | FilterError)  # (the arguments: how to call it)
            raise ToolError(f"{said.rstrip('.')}. {hint(name, schema)}" if about else said) from bad

    async def list_resources(self) -> list[mcp_types.Resource]:
        files = (await anyio.to_thread.run_sync(find_memory_files, self.door.root, self.config))[0]
        return [
            mcp_types.Resource(
                uri=f.path.as_uri(), name=f.source, title=f.source, mime_type="text/markdown", description="memory file"
            )
            for f in files
        ]

    async def read_resource(self, uri: Any, context: Any = None) -> list[ReadResourceContents]:
        text = await anyio.to_thread.run_sync(self._read, str(uri))
        return [ReadResourceContents(content=text, mime_type="text/markdown")]

    def _read(self, uri: str) -> str:
        parsed = urlparse(uri)
        if parsed.scheme != "file":
            raise ResourceNotFoundError(f"unknown resource {uri}: memory files have file:// URIs")
        path = Path(unquote(parsed.path))
        try:
            source = relative_source(self.door.root, path)
        except PathError as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        if not is_memory_source(self.config, source) or not path.is_file():
            raise ResourceNotFoundError(f"{source} is not a memory file of {self.door.root}")
        text, problem = read_text(path)
        if problem and not text:
            raise ResourceError(f"{source}: {problem}")
        return text


def described(fn: Callable[..., Any]) -> str:
    """A docstring as a description: dedented, each paragraph on one line."""
    return re.sub(r"(?<!\n)\n(?!\n)", " ", inspect.cleandoc(fn.__doc__ or ""))


def create_server(door: Door, config: Config | None) -> MemoryMCPServer:
    """The MCP server with its six tools; every tool is one `Memory` call run off the event loop, each on its own
    thread (as the owner's socket serves other processes): a call that waits (a remember during a first index, for
    10 s at most) holds up no other. `config` None: the settings did not load at the start; each tool says why until
    they do."""
    server = MemoryMCPServer(door, config)

    async def user_run(mine: Door, fn: Any, instead: str = "", write: bool = False) -> Any:
        """`fn(memory)` of the door `mine`; every failure as a tool error that says it in one line (the SDK says
        only "Error executing tool ..." for any other exception: an owner that does not answer, a broken index);
        with `instead`, the user memory asked beside the workspace's answer: None where it does not answer
        (core/scopes.py `beside`)."""
        try:
            done = mine.write if write else mine.call  # (a note: the Markdown alone while another's pass holds it)
            return await anyio.to_thread.run_sync(beside, lambda: done(fn), bool(instead), instead)
        except ConfigError as exc:  # (a settings file broken since the start: the memory opens once it loads)
            raise ToolError(f"{exc}; fix the settings, then call the tool again") from exc
        except ValueError as exc:  # bad input, said plainly (ToolError keeps the message as it is)
            raise ToolError(str(exc)) from exc
        except NoMemoryHere as exc:  # served in a folder with no memory yet (`init` there opens it at the next call)
            raise ToolError(f"{exc}; then call the tool again") from exc
        except Exception as exc:
            log.warning("%s: %s", type(exc).__name__, exc, exc_info=log.isEnabledFor(logging.DEBUG))
            raise ToolError(hide_credentials(f"{type(exc).__name__}: {exc}")) from exc

    async def run(fn: Any, mine_instead: bool = False, write: bool = False) -> Any:
        """`fn(memory)` of the workspace; with `mine_instead`, None where it has none and the user has one."""
        try:
            return await user_run(door, fn, write=write)
        except ToolError as exc:  # (a project without memory/: the user memory stays in reach, as from the CLI)
            if not (mine_instead and isinstance(exc.__cause__, NoMemoryHere) and server.user_memory() is not None):
                raise
            return None

    @server.memory_tool(title="Search memory", annotations=READ_ONLY)
    async def memory_search(
        query: Annotated[str, Field(description="what to look for", min_length=1)],
        top_k: Annotated[int, Field(ge=1, le=100, description="number of hits")] = 3,
        since: Annotated[
            str | None,
            Field(
                description="only chunks dated on or after this day: YYYY-MM-DD, today, yesterday, "
                "or 7d / 2w / 3m / 1y ago (a daily log's day or a summary's period; "
                "undated files are left out)"
            ),
        ] = None,
        until: Annotated[str | None, Field(description="only chunks dated on or before this day (as since)")] = None,
        source: Annotated[
            list[str] | str | None,
            Field(
                description="only chunks from files matching this glob or one of these globs "
                "(gitignore style, relative to the workspace), e.g. "
                '["memory/2026-02-*", "**/MEMORY.md"]'
            ),
        ] = None,
        scope: Annotated[
            Scope,
            Field(description="whose memory: this workspace's, the user's own (shared by every project) or all"),
        ] = "all",
        archived: Annotated[
            bool,
            Field(
                description="also return archived originals whose summary holds the same match (after the "
                "summary); by default the summary stands for them"
            ),
        ] = False,
        ctx: Context | None = None,
    ) -> SearchResult:
        """Hybrid (semantic + keyword) search over the memory files; best hits first. since / until / source
        restrict the candidates (e.g. "what did we decide last week": since="7d"); each hit's scope says whether
        it is from this workspace's memory or the user's. The index is brought up to date first, waiting at most
        10 s (a first index of a large memory takes longer): `indexing` true says the hits come from the part
        indexed so far."""
        asked = time.monotonic()  # (the wait for the index pass counts from here, opening the memory included)
        filters: dict[str, Any] = {
            k: v for k, v in (("since", since), ("until", until), ("source", source)) if v is not None
        }
        try:  # said before the index is reconciled (today by the clock the search counts from: MEMSEARCH_NOW too)
            make_filter(**filters, today=clock.now().date())
        except ValueError as exc:  # (FilterError is one)
            raise ToolError(f"memory_search: {exc}") from exc
        if archived:
            filters["archived"] = True

        def searcher(at: Door) -> Callable[[MemoryApi], SearchResult]:
            def search(memory: MemoryApi) -> SearchResult:  # reconciled first, like the CLI, for READY_WAIT_S at most
                heard = (lambda *said: anyio.from_thread.run(ctx.report_progress, *said)) if ctx is not None else None
                left = asked + READY_WAIT_S - time.monotonic()  # (a pass that is done at once still is awaited)
                indexed = at.reconciled(max(left, ANY_PASS_S), heard=heard)
                mine = server.user_memory()
                user = (lambda: mine.memory) if mine is not None else (lambda: None)
                hits = [h.to_dict() for h in search_scopes(memory, user, query, top_k, scope, **filters)]
                return {"hits": hits, "indexing": not indexed}

            return search

        found = await run(searcher(door), mine_instead=scope == "all") if scope != "user" else None
        mine = server.user_memory() if found is None else None  # the user's alone: asked for, or no memory here
        result = await user_run(mine, searcher(mine)) if mine is not None else found
        return cast(SearchResult, result or {"hits": [], "indexing": False})

    async def holder(id: str) -> tuple[Door, Any]:
        """(the memory whose chunk `id` names, the chunk): the workspace's, else the user's; a prefix of a chunk in
        each is refused, as is one of several chunks in one (core/scopes.py `one_memory`); one of the workspace's
        chunks is its own where the user memory does not answer."""

        def current(memory: MemoryApi) -> Any:  # (after a `git checkout`, the id of a note no longer there is none)
            door.reconciled()  # brought up to date first, as a search is (READY_WAIT_S at most)
            return memory.expand(id)

        chunk = await run(current, mine_instead=True)
        mine = server.user_memory() if chunk is None or looks_beyond(door.root, id) else None
        beside_ours = UNCHECKED.format(id) if chunk is not None else ""  # (ours stands where theirs does not answer)
        theirs = await user_run(mine, lambda memory: memory.expand(id), beside_ours) if mine is not None else None
        try:
            one_memory(id, chunk, theirs)
        except ValueError as exc:
            raise ToolError(str(exc)) from exc
        if chunk is None and (mine is None or theirs is None):
            raise ValueError(f"no chunk with id {id!r} (ids come from memory_search; files may have changed since)")
        return (door, chunk) if chunk is not None else (cast(Door, mine), theirs)

    @server.memory_tool(title="Expand a memory", annotations=READ_ONLY)
    async def memory_expand(id: Annotated[str, Field(description="a chunk id from memory_search")]) -> ChunkData:
        """The whole section (chunk) behind a search hit (its id, or a unique prefix of at least 4 characters)."""
        data: ChunkData = (await holder(id))[1].to_dict()
        return data

    @server.memory_tool(title="Recent notes", annotations=READ_ONLY)
    async def memory_recent(
        days: Annotated[int, Field(ge=1, le=366, description="today and the days before")] = 3,
        chars: Annotated[int, Field(ge=1, le=10**9, description="at most this much note text")] = RECENT_CHARS,
    ) -> RecentResult:
        """The notes of the last days' daily logs, newest first, within `chars` characters of note text (the first
        note that does not fit and all older ones are left out: ask for more chars); read from the files, no search."""

        def recent() -> list[NoteData]:
            files = MemoryFiles(door.root, config=server.config)
            return [n.to_dict() for n in within(recent_notes(files, days), chars)]

        try:
            return {"notes": await anyio.to_thread.run_sync(recent)}
        except ValueError as exc:  # (a MEMSEARCH_NOW that is no date and time, said as memory_remember says it)
            raise ToolError(f"memory_recent: {exc}") from exc

    @server.memory_tool(title="Remember", annotations=ADDITIVE)
    async def memory_remember(
        text: Annotated[str, Field(description="the note (Markdown, at most 64 KiB)")],
        heading: Annotated[
            str | None,
            Field(description="its ## heading (default HH:MM); with long_term, the MEMORY.md section (default Notes)"),
        ] = None,
        long_term: Annotated[
            bool,
            Field(description="a lasting fact or preference: add it to MEMORY.md under heading instead of today's log"),
        ] = False,
        scope: Annotated[
            Literal["workspace", "user"],
            Field(description="\"user\": the user's own memory, which every project's searches include"),
        ] = "workspace",
    ) -> RememberedData:
        """Append a note to today's daily log (memory/YYYY-MM-DD.md), or a lasting fact to a section of
        MEMORY.md (appended; what is there stays as written), and index it (during a first index, at most 10 s are
        waited for it: `indexing` true says the note is written and searchable once that index pass ends). Secrets in
        it are redacted and <private>...</private> spans left out."""

        def remember(memory: MemoryApi) -> Any:
            return memory.remember(text, heading, long_term=long_term)

        mine = server.user_memory(create=True) if scope == "user" else None
        note = await (user_run(mine, remember, write=True) if mine is not None else run(remember, write=True))
        data: RememberedData = replace(note, scope="user").to_dict() if mine is not None else note.to_dict()
        return data

    @server.memory_tool(title="Forget", annotations=DESTRUCTIVE)
    async def memory_forget(
        id: Annotated[str, Field(description="a chunk id from memory_search (or a unique prefix of 4+ characters)")],
        line: Annotated[
            int | None,
            Field(
                description="only the paragraphs or list items from this line (a long-term fact: memory_remember's "
                "start_line); needed for a MEMORY.md section that holds several notes",
                ge=1,
            ),
        ] = None,
        end_line: Annotated[
            int | None, Field(description="to this line (memory_remember's end_line); default: `line`", ge=1)
        ] = None,
    ) -> ForgottenData:
        """Remove the note (its ## section, or with `line` one paragraph or list item of it) holding this chunk from
        its Markdown file, and so from search: a wrong or outdated memory. Text before a file's first heading, a
        file's # title and a MEMORY.md section of several notes without `line` are refused."""

        at, _ = await holder(id)  # (the one memory the id names, before anything is removed)
        gone = await user_run(at, lambda memory: memory.forget(id, line=line, end_line=end_line))
        data: ForgottenData = (replace(gone, scope="user") if at is not door else gone).to_dict()
        return data

    @server.memory_tool(title="Memory status", annotations=READ_ONLY)
    async def memory_status() -> StatusData:
        """What is indexed, where, and with which model."""
        return cast(StatusData, await run(lambda memory: memory.status()))

    return server


def serve(workspace: Path) -> None:
    """Serve MCP over stdio until the client closes it."""
    filter_stdin()
    try:
        config: Config | None = load_config(workspace)
    except ConfigError:  # (said once by the command: each tool says it until the file is fixed)
        config = None
    door = Door(workspace, config=config, process="memsearch-lsp mcp")
    server = create_server(door, config)

    def close() -> None:
        door.close()
        if server.user is not None:
            server.user.close()

    def leave() -> None:
        try:
            close()
        finally:
            os._exit(0)  # (the stdio loop would wait for its thread reading stdin)

    end_on_signals(leave, "memsearch-mcp-exit")  # the client ends it: the index and its owner record let go
    try:
        server.run("stdio")
    finally:
        close()
        # a pass stopped but not ended (the workspace's or the user memory's): out without the teardown that its
        # native thread would abort
        if any(d.passing for d in (door, server.user) if d is not None):
            os._exit(0)
