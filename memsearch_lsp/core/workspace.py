"""MemoryFiles: what every memory does in its own process, whoever owns the index (settings, the workspace's
files, the embedder that names the model, the async twins); the settings that shape an index."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import threading
from collections.abc import Callable
from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memsearch_lsp.config import (
    Config,
    ConfigError,
    archive_folder,
    is_local_uri,
    kwargs_to_settings,
    load_config,
    milvus_uri_problem,
)
from memsearch_lsp.core import clock
from memsearch_lsp.core.api import Remembered, ScopeError, check_scope
from memsearch_lsp.core.chunks import Chunk, chunk_markdown
from memsearch_lsp.core.embedding import Embedder, create_embedder
from memsearch_lsp.core.files import INDEX_DIR, is_memory_source, relative_source, writing
from memsearch_lsp.core.onboard import daily_log_text

if TYPE_CHECKING:
    from memsearch_lsp.core.api import MemoryApi
    from memsearch_lsp.core.index import IndexStats
    from memsearch_lsp.core.search.hybrid import Expanded, Hit

T = TypeVar("T")


async def _to_thread(fn: Callable[..., T], *args: Any) -> T:
    """asyncio.to_thread, with asyncio imported on the first async call: a CLI process never needs it."""
    import asyncio

    return await asyncio.to_thread(fn, *args)


#: The settings that shape the index (what is indexed, how and where): changing one re-indexes, and only
#: the process that owns the index can (see RemoteMemory.reconfigure).
INDEX_SETTINGS = ("memory", "embedding", "milvus", "search.language", "compact.index_archive", "compact.archive_dir")


def index_values(config: Config) -> dict[str, Any]:
    """Each of the INDEX_SETTINGS of `config`, by `section.key`."""
    values = {}
    for setting in INDEX_SETTINGS:
        section, _, key = setting.partition(".")
        settings = getattr(config, section)
        names = [key] if key else [f.name for f in fields(settings)]
        values.update({f"{section}.{name}": getattr(settings, name) for name in names})
    return values


def index_settings_changed(old: Config, new: Config) -> list[str]:
    """The INDEX_SETTINGS that differ between `old` and `new`, as `section.key`."""
    before = index_values(old)
    return [name for name, value in index_values(new).items() if before[name] != value]


def index_digests(config: Config) -> dict[str, str]:
    """A digest of each of the INDEX_SETTINGS of `config`: what the index owner tells another process, which compares
    its own (`index_settings_differ`) without learning a value (milvus.token is a password)."""
    return {name: hashlib.sha256(repr(value).encode()).hexdigest()[:16] for name, value in index_values(config).items()}


def index_settings_differ(digests: dict[str, str], config: Config) -> list[str]:
    """The INDEX_SETTINGS of `config` that differ from those `digests` (`index_digests`) were made of, as `section.key`
    (a setting the other process does not name is left out: a build before it)."""
    return [name for name, digest in index_digests(config).items() if digests.get(name, digest) != digest]


def index_uri(root: Path, config: Config) -> str:
    """Where the index of the workspace `root` is with `config`: a local folder (`.memsearch/milvus.db` unless
    `milvus.uri` names another, `~` expanded) or a server's URI; ConfigError for a `milvus.uri` that names neither
    (a Config made in code is not checked as settings are read: nothing is ever written under the current folder)."""
    uri = config.milvus.uri
    if not uri:
        return str(root / INDEX_DIR / "milvus.db")
    if problem := milvus_uri_problem(uri):
        raise ConfigError(f"milvus.uri: {problem}")
    return os.path.expanduser(uri) if is_local_uri(uri) else uri


def with_index_settings(config: Config, source: Config) -> Config:
    """`config` with the INDEX_SETTINGS of `source`."""
    sections: dict[str, Any] = {}
    for setting in INDEX_SETTINGS:
        section, _, key = setting.partition(".")
        value = getattr(source, section)
        sections[section] = (
            replace(sections.get(section, getattr(config, section)), **{key: getattr(value, key)}) if key else value
        )
    return replace(config, **sections)


class MemoryFiles:
    """What every memory does in its own process, whoever owns the index: settings, the workspace's
    files (paths, today's log, outlines), the embedder that names the model, the async twins.

    `Memory` and `core.process.owner.RemoteMemory` build on it; each implements the index operations itself.
    """

    def __init__(
        self,
        workspace: str | Path = ".",
        *,
        config: Config | None = None,
        embedder: Embedder | None = None,
        scope: str = "workspace",
        scoped: Callable[..., list[Hit]] | None = None,
        **settings: Any,
    ):
        self.scope = scope  # whose memory: "workspace", or "user" (core/scopes.open_user_memory); its hits say it
        self._scoped = scoped  # `memsearch_lsp.search`, which `search(scope="user" | "all")` hands the query to
        self.root = Path(workspace).expanduser().resolve()
        if not self.root.is_dir():
            raise FileNotFoundError(f"workspace {self.root} is not a folder")
        base = config or load_config(self.root)
        self.config = base.merged(kwargs_to_settings(settings)) if settings else base
        self._embedder = embedder
        self.embedder_given = embedder is not None  # not the one the settings name (a test's, a program's own)
        self._lock = threading.RLock()  # lazy composition from several threads
        self.clock: Callable[[], dt.datetime] = clock.now  # "today" and "now"; tests may replace it

    @property
    def embedder(self) -> Embedder:
        if self._embedder is not None:  # no lock once made: the editor's thread asks while an index pass holds it
            return self._embedder
        with self._lock:
            if self._embedder is None:
                self._embedder = create_embedder(self.config.embedding, root=self.root)
            return self._embedder

    def beyond(self, query: str, top_k: int | None, scope: str | None, filters: dict[str, Any]) -> list[Hit] | None:
        """The hits of `search(query, scope=...)` when `scope` reaches past this memory (the user memory for a
        workspace's); None when it is this memory alone: no scope, "workspace", or the user memory's own."""
        if scope is None or check_scope(scope) == "workspace" or self.scope == "user":
            return None
        if self._scoped is None:
            raise ScopeError(
                f"scope {scope!r} reads the user memory too: open this memory with memsearch_lsp.open_memory, or "
                f"call memsearch_lsp.search(memory, query, scope={scope!r})"
            )
        return self._scoped(self, query, top_k, scope=scope, **filters)

    def mine(self, hits: list[Hit]) -> list[Hit]:
        """`hits` of this memory, said to be the user's when it is the user memory."""
        return hits if self.scope == "workspace" else [replace(h, scope=self.scope) for h in hits]

    # -- paths -----------------------------------------------------------------------------
    def source_of(self, path: str | Path) -> str:
        """Workspace-relative POSIX source; PathError when `path` is outside the workspace."""
        return relative_source(self.root, Path(path))

    def is_memory(self, source: str) -> bool:
        return is_memory_source(self.config, source)

    def path_of(self, source: str) -> Path:
        return self.root / relative_source(self.root, Path(source))

    @property
    def archive_dir(self) -> str:
        """The archive folder when its logs are indexed (their hits are marked and demoted), else ''."""
        return archive_folder(self.config).strip("/") if self.config.compact.index_archive else ""

    def outline(self, source: str, text: str) -> list[Chunk]:
        try:
            model = self.embedder.model_name  # the stored name, so outline ids match the index
        except ConfigError:
            model = self.config.embedding.model
        return chunk_markdown(text, source, model=model)

    def memory_folder(self) -> Path:
        """The first memory folder (where daily logs and MEMORY.md are written; `~/notes` is the home folder's, outside
        the workspace as the index reads it: `memory_folders`)."""
        return self.root / os.path.expanduser(self.config.memory.paths[0] if self.config.memory.paths else "memory")

    def today(self, date: dt.date | None = None) -> Path:
        """Today's daily log (created with a heading when missing); an OSError when it cannot be: NotWritable naming the
        folder when it is read-only or not this user's, else one naming the log (a folder in its place)."""
        day = (date or self.clock().date()).isoformat()
        folder = self.memory_folder()
        path = folder / f"{day}.md"
        self.source_of(path)  # PathError before anything is written outside the workspace
        if not path.is_file():
            try:
                with writing(folder):
                    folder.mkdir(parents=True, exist_ok=True)
                    with open(path, "x", encoding="utf-8") as file:  # (never over what is there)
                        file.write(daily_log_text(day))
            except FileExistsError:
                if not path.is_file():
                    raise
        return path

    def __enter__(self: T) -> T:
        return self

    def __exit__(self: MemoryApi, *exc: object) -> None:
        self.close()

    # -- async twins, for event-loop code --------------------------------------------------
    async def aindex(self: MemoryApi, force: bool = False) -> IndexStats:
        return await _to_thread(self.index, force)

    async def asearch(self: MemoryApi, query: str, top_k: int | None = None, **overrides: Any) -> list[Hit]:
        return await _to_thread(lambda: self.search(query, top_k, **overrides))

    async def aexpand(self: MemoryApi, chunk_id: str) -> Expanded | None:
        return await _to_thread(self.expand, chunk_id)

    async def aremember(
        self: MemoryApi, text: str, heading: str | None = None, *, long_term: bool = False
    ) -> Remembered:
        return await _to_thread(lambda: self.remember(text, heading, long_term=long_term))
