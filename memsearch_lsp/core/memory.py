"""Memory: one facade over config, embedder, store and indexer (the index this process owns); MemoryFiles."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import logging
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memsearch_lsp.config import Config
from memsearch_lsp.core.api import Remembered
from memsearch_lsp.core.chunks import Chunk
from memsearch_lsp.core.embedding.onnx import Embedder, reads
from memsearch_lsp.core.files import (
    glob_match,
    private_folder,
    read_text,
)
from memsearch_lsp.core.index import Indexer, IndexStats, Progress
from memsearch_lsp.core.notes import (
    LONG_TERM,
    LONG_TERM_TEXT,
    append_to_day,
    clean_heading,
    clean_note,
    insert_in_section,
    write_note,
)
from memsearch_lsp.core.search.bm25 import DfTable
from memsearch_lsp.core.search.filters import FILTER_KEYS, make_filter
from memsearch_lsp.core.search.hybrid import AmbiguousId, Expanded, Hit, hybrid_search, to_expanded
from memsearch_lsp.core.store.lite import lend, take_back
from memsearch_lsp.core.store.milvus import IndexBusy, MilvusStore, remove_index
from memsearch_lsp.core.workspace import MemoryFiles, index_settings_changed
from memsearch_lsp.version import __version__

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

INDEX_DIR = ".memsearch"
MIN_ID_PREFIX = 4  # `expand` takes a unique prefix of a chunk id this long or longer
MAX_TOP_K = 1000  # a larger top_k (or candidates) is clamped: a request cannot make the store allocate without bound
HANDOVER_WAIT_S = 5.0  # how long a read waits for an index a child process of ours is writing (Memory.released)
T = TypeVar("T")


class Memory(MemoryFiles):
    """A workspace's memory whose index this process owns: `index()`, `search()`, `expand()` and their
    async twins (see core.api.MemoryApi; `core.process.owner.RemoteMemory` is the other implementation).

    >>> mem = Memory("~/project")            # doctest: +SKIP
    >>> mem.index(); mem.search("redis ttl")  # doctest: +SKIP
    """

    def __init__(
        self,
        workspace: str | Path = ".",
        *,
        config: Config | None = None,
        embedder: Embedder | None = None,
        **settings: Any,
    ):
        super().__init__(workspace, config=config, embedder=embedder, **settings)
        self._store: MilvusStore | None = None
        self._indexer: Indexer | None = None
        self._appending = threading.Lock()  # one remember() at a time appends to a log
        self._back: threading.Event | None = None  # set when the index another process writes is back (`released`)

    # -- composition (lazy: nothing heavy until the first index or search) -----------------
    @property
    def uri(self) -> str:
        return self.config.milvus.uri or str(self.root / INDEX_DIR / "milvus.db")

    @property
    def collection(self) -> str:
        name = self.config.milvus.collection
        if "://" in self.uri and name == "memsearch":  # a shared server: one collection per root
            name += "_" + hashlib.sha256(str(self.root).encode()).hexdigest()[:10]
        return name

    @property
    def index_dir(self) -> Path:
        """`.memsearch/`, private (0700, files 0600); a link or another user's folder raises files.UnsafeFolder."""
        return private_folder(self.root / INDEX_DIR)

    @contextlib.contextmanager
    def _present(self) -> Iterator[None]:
        """The lock, once the index is here: while another process of ours writes it (`released`), a caller waits
        HANDOVER_WAIT_S at most, then gets IndexBusy."""
        while True:
            back = self._back
            if back is not None and not back.wait(HANDOVER_WAIT_S):
                raise IndexBusy(
                    f"the index of {self.root.name} is being built in a child process of its owner; "
                    "try again when that pass ends"
                )
            with self._lock:
                if self._back is None:
                    yield
                    return

    @property
    def store(self) -> MilvusStore:
        with self._present():
            if self._store is None:
                _ = self.index_dir
                store = MilvusStore(self.uri, self.collection, self._dim(), token=self.config.milvus.token)
                store.open()
                self._store = store
            return self._store

    def _dim(self) -> int:
        if not self.embedder.dim:
            self.embedder.embed(["dimension probe"])
        return self.embedder.dim

    @property
    def indexer(self) -> Indexer:
        with self._present():
            if self._indexer is None:
                df = DfTable(self.index_dir / f"bm25-{self.collection}.json")
                self._indexer = Indexer(self.root, self.config, self.store, self.embedder, df)
            return self._indexer

    @property
    def df(self) -> DfTable:
        """The BM25 document frequencies (loaded with the manifest)."""
        indexer = self.indexer
        indexer.manifest()
        return indexer.df

    def reconfigure(self, config: Config) -> bool:
        """Apply new settings; True when the index must be rebuilt (model, paths or store moved)."""
        old, self.config = self.config, config
        heavy = bool(index_settings_changed(old, config))
        if old.embedding != config.embedding:
            self._embedder = None
        if old.milvus != config.milvus or old.embedding != config.embedding:
            self.close()
        elif self._indexer is not None:
            self._indexer.config = config
        return heavy

    @property
    def remote(self) -> bool:
        """False here; True for a RemoteMemory served by the process that owns the index."""
        return False

    def claim(self) -> None:
        """Open the index now (IndexBusy when another process holds the local folder)."""
        _ = self.store

    # -- indexing --------------------------------------------------------------------------
    def index(self, force: bool = False, progress: Progress | None = None, hand_over: int = 0) -> IndexStats:
        return self.indexer.reconcile(force=force, progress=progress, hand_over=hand_over)

    @contextlib.contextmanager
    def released(self) -> Iterator[int]:
        """The local index lent to a child process to write (saved, its engine closed; the descriptor of its lock,
        to pass on: core/store/lite.lend); what reaches for it meanwhile waits (`_present`), and is let in once it
        is taken back, with its unsaved editor buffers."""
        with self._lock:
            self.claim()
            indexer = self._indexer
            with indexer.lock if indexer is not None else contextlib.nullcontext():  # a write under way ends first
                overlays = dict(indexer.overlays) if indexer is not None else {}
                lock_fd = lend(self.uri)
                self.close()
            back = self._back = threading.Event()
        try:
            yield lock_fd
        finally:
            with self._lock:
                self._back = None
                take_back(self.uri)
                try:
                    self.claim()
                    self.indexer.overlays.update(overlays)
                finally:
                    back.set()

    def index_text(self, source: str, text: str, overlay: bool = True) -> IndexStats:
        return self.indexer.index_text(source, text, overlay=overlay)

    def index_file(self, source: str) -> IndexStats:
        """Re-index one file from disk (it lost its buffer, or an agent wrote it)."""
        self.indexer.drop_overlay(source)
        path = self.path_of(source)
        if not path.is_file() or not self.is_memory(source):
            return self.indexer.remove(source)
        text, problem = read_text(path)
        if problem and not text:
            log.warning("%s: %s", source, problem)
            return self.indexer.remove(source)
        return self.indexer.index_text(source, text, overlay=False)

    def remove(self, source: str) -> IndexStats:
        return self.indexer.remove(source)

    def drop_overlay(self, source: str) -> None:
        self.indexer.drop_overlay(source)

    def has_overlay(self, source: str) -> bool:
        """True while an unsaved editor buffer is the truth for `source`."""
        return source in self.indexer.overlays

    def is_indexed(self, source: str) -> bool:
        return source in self.indexer.manifest()

    def reset(self) -> None:
        """Delete the index (the Markdown is untouched); the next index() rebuilds it."""
        if self.config.milvus.uri:
            self.store.drop()
            self.df.reset()
            self.df.save()
        else:  # the folder may also hold the owner's socket: delete only the index itself
            self.claim()  # checks `.memsearch/` and signs an index built before the marker existed
            self.close()
            remove_index(self.uri)  # only a real folder carrying this program's marker
            for stats in [*self.index_dir.glob("bm25-*.json"), *self.index_dir.glob("bm25-*.journal")]:
                stats.unlink()
        if self._indexer is not None:
            self._indexer.forget()
        self._indexer = None

    # -- reading ---------------------------------------------------------------------------
    def search(self, query: str, top_k: int | None = None, **overrides: Any) -> list[Hit]:
        """Hybrid search; overrides such as vector_weight=0.5 or ranker='rrf' apply to this call.

        Filters (core/search/filters.py): `since` / `until` (a date, 'YYYY-MM-DD', or relative as '7d', '2w'
        before today; inclusive) and `source` (one glob or a list of them). Both legs take their candidates
        from the chunks that pass, so a filter never empties the top k; with a date filter, chunks outside
        daily logs and summaries (undated) are left out.
        """
        wanted = {k: overrides.pop(k) for k in FILTER_KEYS if k in overrides}
        where = make_filter(**wanted, today=self.clock().date()) if wanted else None
        settings = replace(self.config.search, **overrides) if overrides else self.config.search
        settings = replace(settings, candidates=min(settings.candidates, MAX_TOP_K))
        only = where.allowed(self.indexer.manifest()) if where else None
        return hybrid_search(
            self.store,
            self.embedder,
            self.df,
            query,
            settings,
            min(top_k if top_k is not None else settings.top_k, MAX_TOP_K),
            archive_dir=self.archive_dir,
            only=only,
        )

    def expand(self, chunk_id: str) -> Expanded | None:
        """The chunk with this id or the one id it starts (>= 4 hex characters); None, or AmbiguousId for several."""
        key = chunk_id.strip().lower()
        row = self.store.get(key) if len(key) == 16 else None
        if row is None and MIN_ID_PREFIX <= len(key) < 16 and all(c in "0123456789abcdef" for c in key):
            found = sorted(i for state in self.indexer.manifest().values() for i in state.ids if i.startswith(key))
            if len(found) > 1:
                shown = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
                raise AmbiguousId(f"the id prefix {key!r} matches {len(found)} chunks ({shown}): give more of the id")
            row = self.store.get(found[0]) if found else None
        return to_expanded(row, self.archive_dir) if row else None

    def related(self, chunk: Expanded | Chunk, top_k: int = 3) -> list[Hit]:
        """Memories from other files that resemble `chunk`, the nearest ones (no relevance floor: made for typed
        queries, while a whole chunk as the query covers a small share of any other chunk's terms)."""
        query = f"{chunk.heading}\n{chunk.content}"[:2000]
        return hybrid_search(
            self.store,
            self.embedder,
            self.df,
            query,
            replace(self.config.search, min_score=0.0),
            top_k,
            exclude_source=chunk.source,
            archive_dir=self.archive_dir,
        )

    def headings(self, limit: int = 5000) -> list[Hit]:
        """Every indexed heading chunk, by file and line (the empty workspace/symbol query)."""
        rows = [
            r
            for r in self.store.scan(["source", "heading", "start_line", "end_line", "level", "date"])
            if int(r["level"]) > 0
        ]  # the mirror's rows when loaded: no read of the engine
        archive = self.archive_dir
        hits = [
            Hit(
                id=r["id"],
                source=r["source"],
                heading=r["heading"],
                start_line=int(r["start_line"]),
                end_line=int(r["end_line"]),
                score=0.0,
                snippet="",
                date=r["date"] or None,
                archived=bool(archive) and glob_match(archive, r["source"]),
            )
            for r in rows
        ]
        hits.sort(key=lambda h: (h.source, h.start_line))
        return hits[:limit]

    def status(self) -> dict[str, Any]:
        indexer = self.indexer
        counts = self.store.mirrors.counts()  # the saved mirror's record while nothing has read or written it
        if counts is None:
            manifest = indexer.manifest()
            counts = len(manifest), sum(len(s.ids) for s in manifest.values())
        return {
            "version": __version__,
            "root": str(self.root),
            "uri": self.uri,
            "collection": self.collection,
            "model": self.embedder.model_name,
            "dim": self.embedder.dim,
            "provider": getattr(self.embedder, "provider", "custom"),
            "max_tokens": getattr(self.embedder, "max_tokens", 0),
            "reads": reads(self.embedder),
            "files": counts[0],
            "chunks": counts[1],
            "pending_buffers": sorted(indexer.overlays),
        }

    def remember(
        self, text: str, heading: str | None = None, *, now: dt.datetime | None = None, long_term: bool = False
    ) -> Remembered:
        """Append a note to today's log under `## HH:MM` (or `heading`) and index it; with `long_term`, add it
        to MEMORY.md at the end of the section `heading` (created at the end when missing).

        The 'remember' step of an agent loop; `now` (default: the clock) picks the log and the time. The note
        is cleaned first (core.notes: control characters removed, fences closed, at most 64 KiB: NoteError
        otherwise); a heading already in the log gets a number; a log the note cannot join cleanly (full,
        unreadable, or left in a state where the note would not start a chunk) continues in the day's next
        file (YYYY-MM-DD.2.md, ...). Nothing is written unless the whole note can be.
        """
        body = clean_note(text)
        when = now or self.clock()
        title = clean_heading(heading) or ("Notes" if long_term else when.strftime("%H:%M"))
        with self._appending:
            if long_term:
                source, addition = write_note(
                    self.memory_folder() / LONG_TERM,
                    self.source_of,
                    LONG_TERM_TEXT,
                    lambda before, src: insert_in_section(before, body, title, src),
                )
            else:
                source, addition = append_to_day(self.memory_folder(), when.date(), body, title, self.source_of)
            stats = self.index_file(source)
        chunks = [
            c
            for c in self.indexer.chunk(source, addition.text)
            if c.end_line >= addition.first and c.start_line <= addition.last
        ]
        return Remembered(source, tuple(chunks), stats)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
        self._store, self._indexer = None, None
