"""MemoryApi: what callers may ask of a workspace's memory, whichever process owns its index.

Two implementations, neither a subclass of the other: `core.memory.Memory` (this process owns the
index) and `core.process.owner.RemoteMemory` (another process does, and every `IndexApi` call goes over its
socket). The CLI, the MCP server, the language server and the public `memsearch_lsp.Memory` type
against `MemoryApi`; mypy checks both classes against it (the assignments at the end of core/process/owner.py).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from typing_extensions import NotRequired, TypedDict

from memsearch_lsp.config import Config
from memsearch_lsp.core.search.headings import HEADINGS_LIMIT, display_heading

if TYPE_CHECKING:
    from memsearch_lsp.core.chunks import Chunk
    from memsearch_lsp.core.embedding import Embedder
    from memsearch_lsp.core.index import IndexStats, Progress
    from memsearch_lsp.core.search.hybrid import Expanded, Hit


SCOPES = ("workspace", "user", "all")  # whose memory a search reads: the workspace's, the user's (core/scopes.py), both


class ScopeError(ValueError):
    """A scope that is none of SCOPES."""


def check_scope(scope: str) -> str:
    if scope not in SCOPES:
        raise ScopeError(f"unknown scope {scope!r}: expected one of {', '.join(SCOPES)}")
    return scope


class NoteChunkData(TypedDict):
    id: str
    heading: str
    start_line: int
    end_line: int


class RememberedData(TypedDict):
    """What `remember` reports (CLI `--json`, MCP `memory_remember`)."""

    id: str
    """the new note's chunk id"""
    source: str
    heading: str
    start_line: int
    end_line: int
    chunks: list[NoteChunkData]
    scope: str
    """workspace or user: whose memory holds it"""
    indexing: NotRequired[bool]
    """true: written, and searchable once the index pass that is running (a first index) ends, or, beside another
    process holding the index (`memsearch-lsp index`), once the next pass (a search brings one) indexes it"""


RememberedData.__pydantic_config__ = {"use_attribute_docstrings": True}  # type: ignore[attr-defined]


class StatusData(TypedDict):
    """What `status` reports (CLI `--json`, MCP `memory_status`): `Memory.status()`'s keys."""

    version: str
    root: str
    """the workspace"""
    uri: str
    """where the index is: a Milvus Lite folder or a server's URI"""
    collection: str
    model: str
    """the embedding model's name as stored with every vector"""
    dim: int
    provider: str
    """bundled, onnx or openai"""
    max_tokens: int
    reads: str
    """what the embedder reads of each chunk"""
    files: int
    chunks: int
    pending_buffers: list[str]
    """unsaved editor buffers indexed in place of their files"""
    damaged_vectors: int
    """stored vectors changed on disk (not of unit length): searches leave them out; `index --force` mends them"""
    error: NotRequired[str]
    """why the index cannot be written now (searches answer from what was indexed; it is tried again)"""
    served_by_pid: NotRequired[int]
    """the process that owns the index, when it is another one"""


StatusData.__pydantic_config__ = {"use_attribute_docstrings": True}  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Remembered:
    """What `remember()` appended: the note's chunks (the first is its `## heading`), as indexed."""

    source: str
    chunks: tuple[Chunk, ...]
    stats: IndexStats
    scope: str = "workspace"  # "user": the user memory's (core/scopes.py), set by the caller that chose it
    lines: tuple[int, int] | None = None  # a long-term note's own lines inside its section (what forget's line takes)
    indexing: bool = False  # written while an index pass held the index, too long to wait for: that pass indexes it

    def to_dict(self) -> RememberedData:
        first, last = self.chunks[0], self.chunks[-1]
        start, end = self.lines or (first.start_line, last.end_line)
        chunks: list[NoteChunkData] = [
            {
                "id": c.id,
                "heading": display_heading(c.heading, c.content),
                "start_line": c.start_line,
                "end_line": c.end_line,
            }
            for c in self.chunks
        ]  # (headings as a search hit on each chunk says them: a bare `## HH:MM` named by its first line)
        data: RememberedData = {
            "id": first.id,
            "source": self.source,
            "heading": chunks[0]["heading"],
            "start_line": start,
            "end_line": end,
            "chunks": chunks,
            "scope": self.scope,
        }
        if self.indexing:
            data["indexing"] = True
        return data

    def __str__(self) -> str:
        data = self.to_dict()
        where = f"{'user:' if self.scope == 'user' else ''}{self.source}:{data['start_line']}-{data['end_line']}"
        later = "  (searchable once the index pass running now ends)" if self.indexing else ""
        return f"remembered {where}  {data['heading']}  id={data['id']}{later}"


class ForgottenData(TypedDict):
    """What `forget` removes (CLI `--json`, MCP `memory_forget`)."""

    id: str
    """the chunk id asked for"""
    source: str
    heading: str
    start_line: int
    """1-based, inclusive: the lines taken out of the file"""
    end_line: int
    content: str
    """the text taken out"""
    ids: list[str]
    """every chunk id those lines held"""
    removed: bool
    """false for a preview (nothing written yet)"""
    scope: str
    """workspace or user: whose memory held it"""


ForgottenData.__pydantic_config__ = {"use_attribute_docstrings": True}  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Forgotten:
    """A note `forget()` took (or, `removed` False, would take) out of its file: its lines and text."""

    id: str
    source: str
    heading: str
    start_line: int
    end_line: int
    content: str
    ids: tuple[str, ...]
    removed: bool
    scope: str = "workspace"

    def to_dict(self) -> ForgottenData:
        return cast(ForgottenData, dict(asdict(self), ids=list(self.ids)))

    def __str__(self) -> str:
        verb = "forgot" if self.removed else "would forget"
        return f"{verb} {self.source}:{self.start_line}-{self.end_line}  {self.heading}"


class IndexApi(Protocol):
    """The index owner's operations, each declared once: `core.process.owner.OwnerServer.dispatch` answers exactly
    these over the owner's socket, their arguments and results carried by their types (core/process/protocol.py)."""

    def index(self, force: bool = False, progress: Progress | None = None) -> IndexStats: ...
    def index_text(self, source: str, text: str, overlay: bool = True) -> IndexStats: ...
    def index_file(self, source: str) -> IndexStats: ...
    def remove(self, source: str) -> IndexStats: ...
    def reset(self) -> None: ...
    def search(self, query: str, top_k: int | None = None, **overrides: Any) -> list[Hit]: ...
    def expand(self, chunk_id: str) -> Expanded | None: ...
    def related(self, chunk: Chunk, top_k: int = 3) -> list[Hit]: ...
    def headings(self, limit: int = HEADINGS_LIMIT) -> list[Hit]: ...
    def remember(
        self, text: str, heading: str | None = None, *, now: dt.datetime | None = None, long_term: bool = False
    ) -> Remembered: ...
    def forget(
        self, chunk_id: str, dry_run: bool = False, line: int | None = None, end_line: int | None = None
    ) -> Forgotten: ...
    def status(self) -> dict[str, Any]: ...
    def has_overlay(self, source: str) -> bool: ...
    def is_unsaved(self, source: str) -> bool: ...
    def is_indexed(self, source: str) -> bool: ...
    def drop_overlay(self, source: str) -> None: ...


class MemoryApi(IndexApi, Protocol):
    """`IndexApi` plus what each process does itself: its settings, the workspace's files, its lifetime."""

    root: Path
    config: Config
    clock: Callable[[], dt.datetime]
    scope: str  # whose memory this is: "workspace", or "user" for the user memory (core/scopes.py)

    @property
    def remote(self) -> bool: ...
    @property
    def embedder(self) -> Embedder: ...
    @property
    def archive_dir(self) -> str: ...
    def search(self, query: str, top_k: int | None = None, *, scope: str | None = None, **overrides: Any) -> list[Hit]:
        """`scope` None or "workspace": this memory's hits; "user" or "all": as `memsearch_lsp.search`."""
        ...

    def reconfigure(self, config: Config) -> bool: ...
    def owner_process(self) -> str: ...
    def source_of(self, path: str | Path) -> str: ...
    def is_memory(self, source: str) -> bool: ...
    def path_of(self, source: str) -> Path: ...
    def outline(self, source: str, text: str) -> list[Chunk]: ...
    def memory_folder(self) -> Path: ...
    def today(self, date: dt.date | None = None) -> Path: ...
    def close(self) -> None: ...
    def __enter__(self) -> MemoryApi: ...
    def __exit__(self, *exc: object) -> None: ...
    async def aindex(self, force: bool = False) -> IndexStats: ...
    async def asearch(self, query: str, top_k: int | None = None, **overrides: Any) -> list[Hit]: ...
    async def aexpand(self, chunk_id: str) -> Expanded | None: ...
    async def aremember(self, text: str, heading: str | None = None, *, long_term: bool = False) -> Remembered: ...
