"""Memory: one facade over config, embedder, store and indexer (the index this process owns)."""

from __future__ import annotations

import atexit
import contextlib
import datetime as dt
import hashlib
import logging
import os
import threading
import weakref
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

from memsearch_lsp.config import Config
from memsearch_lsp.core.api import Forgotten, Remembered
from memsearch_lsp.core.chunks import Chunk
from memsearch_lsp.core.embedding import Embedder, probed_dim, reads_what
from memsearch_lsp.core.files import INDEX_DIR, PathError, Skipped, private_folder, read_text, unsaved
from memsearch_lsp.core.filewrite import WritesBusy, memory_writes
from memsearch_lsp.core.forget import note_at, rewrite_note_file, section_of, without_section
from memsearch_lsp.core.index import Indexer, IndexStats, Progress
from memsearch_lsp.core.kept_ids import forget_ids, heading_made, keep_id, keep_moved, prune_ids, remembered_row
from memsearch_lsp.core.notes import (
    LONG_TERM,
    MAX_DAY_FILES,
    NoteError,
    add_long_term,
    append_to_day,
    as_indexed,
    clean_heading,
    clean_note,
    read_exact,
    read_note_file,
    same_note,
)
from memsearch_lsp.core.onboard import require_memory_workspace
from memsearch_lsp.core.search.filters import FILTER_KEYS, caller_day, make_filter, sources_of_day
from memsearch_lsp.core.search.headings import HEADINGS_LIMIT, display_heading
from memsearch_lsp.core.search.hybrid import AmbiguousId, Expanded, Hit, hybrid_search, to_expanded
from memsearch_lsp.core.search.listing import every_heading
from memsearch_lsp.core.store import IndexBusy, Store, StoreError, is_local_uri, open_store
from memsearch_lsp.core.store.folder import remove_index
from memsearch_lsp.core.store.schema import cut_short
from memsearch_lsp.core.workspace import MemoryFiles, index_settings_changed, index_uri
from memsearch_lsp.trust import hide_credentials
from memsearch_lsp.version import __version__

log = logging.getLogger(__name__)

MIN_ID_PREFIX = 4  # `expand` takes a unique prefix of a chunk id this long or longer
MAX_TOP_K = 1000  # a larger top_k (or candidates) is clamped: a request cannot make the store allocate without bound


class Memory(MemoryFiles):
    """A workspace's memory whose index this process owns: `index()`, `search()`, `expand()` and their
    async twins (see core.api.MemoryApi; `core.process.owner.RemoteMemory` is the other implementation).

    >>> Memory("~/project").search("redis ttl")  # doctest: +SKIP (search brings the index up to date first)
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
        self._store: Store | None = None
        self._indexer: Indexer | None = None
        _OPEN.add(self)  # closed when the process ends, if its user did not (`_close_open`)
        self._appending = threading.Lock()  # one remember() at a time appends to a log
        self._emptied = False  # reset() deleted the index: the next read rebuilds it from the Markdown
        self._epoch = 0  # the store's epoch (bumped when it is started afresh) as the last pass left it

    # -- composition (lazy: nothing heavy until the first index or search) -----------------
    @property
    def uri(self) -> str:
        return index_uri(self.root, self.config)

    @property
    def collection(self) -> str:
        name = self.config.milvus.collection  # on a server (shared by every workspace): the prefix of one per root
        suffix = "" if is_local_uri(self.uri) else "_" + hashlib.sha256(str(self.root).encode()).hexdigest()[:10]
        return name[: 247 - len(suffix)] + suffix  # (247: room for "_windows" in Milvus' 255)

    @property
    def index_dir(self) -> Path:
        """`.memsearch/`, private (0700, files 0600); a link or another user's folder raises files.UnsafeFolder, and
        a folder that is no memory workspace NoMemoryHere (nothing is created there)."""
        if not (self.root / INDEX_DIR).is_dir():
            require_memory_workspace(self.root, self.config)
        return private_folder(self.root / INDEX_DIR)

    @property
    def store(self) -> Store:
        with self._lock:
            if self._store is None:
                _ = self.index_dir
                self._store = open_store(self.uri, self.collection, self._dim(), token=self.config.milvus.token)
                self._epoch = self._store.epoch
            return self._store

    def _dim(self) -> int:
        from memsearch_lsp.core.store.saved import stored_dim  # (the index's own, to check the recorded one against)

        return probed_dim(self.embedder, self.index_dir / f"dimension-{self.collection}.txt", stored_dim(self.uri))

    @property
    def indexer(self) -> Indexer:
        with self._lock:
            if self._indexer is None:
                analysis = self.index_dir / f"analysis-{self.collection}.txt"  # the BM25 analysis of the rows
                self._indexer = Indexer(self.root, self.config, self.store, self.embedder, analysis)
            return self._indexer

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

    def owner_process(self) -> str:
        return f"this process (pid {os.getpid()})"

    def claim(self) -> None:
        """Open the index now (IndexBusy when another process holds the local folder)."""
        _ = self.store

    # -- indexing --------------------------------------------------------------------------
    def index(self, force: bool = False, progress: Progress | None = None) -> IndexStats:
        self._emptied = False
        stats = self.indexer.reconcile(force=force, progress=progress)
        self._epoch = self.store.epoch
        prune_ids(self.root / INDEX_DIR, self.path_of)  # (a note deleted by hand: its kept id goes too)
        return stats

    def _refilled(self) -> None:
        """After reset() (else an editor's server that owns the index answers a CLI's reset with nothing until a file
        changes), or the store started afresh under this process, the first read rebuilds the index first."""
        if self._emptied or (self._store is not None and self._store.epoch != self._epoch):
            self.index()

    def index_text(self, source: str, text: str, overlay: bool = True) -> IndexStats:
        if overlay and not unsaved(self.path_of(source), text):  # a buffer only opened, saved or undone is its file:
            return self.index_file(source)  # the disk stays the truth (compact or remember may move or rewrite it)
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

    def is_unsaved(self, source: str) -> bool:
        """True when an editor holds `source` with changes not on disk (its next save would undo a write there); never
        before this process opened its index (no editor's buffer reached it: a note written beside another's pass)."""
        buffer = self._indexer.overlays.get(source) if self._indexer is not None else None
        return buffer is not None and unsaved(self.path_of(source), buffer)

    def is_indexed(self, source: str) -> bool:
        return source in self.indexer.manifest()

    def reset(self) -> None:
        """Delete the index (the Markdown is untouched); the next index() rebuilds it."""
        if not is_local_uri(self.uri):
            self.store.drop()
        else:  # the folder may also hold the owner's socket: delete only the index itself
            with self._lock:  # (no other call of this process opens it again meanwhile)
                try:
                    self.claim()  # checks `.memsearch/` and signs an index built before the marker existed
                except IndexBusy:
                    raise
                except StoreError as exc:  # an index that cannot be opened is what reset is for
                    log.warning("the index at %s cannot be opened (%s); deleting it", self.uri, exc)
                self.close()
                remove_index(self.uri)  # only a real folder carrying this program's marker, under its lock
        if self._indexer is not None:
            self._indexer.forget()
        self._indexer, self._emptied = None, True

    # -- reading ---------------------------------------------------------------------------
    def search(self, query: str, top_k: int | None = None, *, scope: str | None = None, **overrides: Any) -> list[Hit]:
        """Hybrid search; overrides such as vector_weight=0.5 or ranker='rrf' apply to this call; `scope` "user" or
        "all" reads the user memory too (`memsearch_lsp.search`).

        Filters (core/search/filters.py): `since` / `until` (a date, 'YYYY-MM-DD', or relative as '7d', '2w'
        before today; inclusive) and `source` (one glob or a list of them). Both legs take their candidates
        from the chunks that pass, so a filter never empties the top k; with a date filter, chunks outside
        daily logs and summaries (undated) are left out. An archived original whose summary holds the same
        match is left out (the summary comes first); `archived=True` keeps it, below its summary. `today` (a date or
        'YYYY-MM-DD'): the day relative dates and named days count from, when not this memory's clock's.
        """
        if (hits := self.beyond(query, top_k, scope, overrides)) is not None:
            return hits
        self._refilled()
        archived = bool(overrides.pop("archived", False))  # archived originals beside their summaries too
        wanted = {k: overrides.pop(k) for k in FILTER_KEYS if k in overrides}
        today = caller_day(overrides.pop("today", None)) or self.clock().date()  # (a follower's: its clock may differ)
        where = make_filter(**wanted, today=today, root=self.root) if wanted else None
        settings = replace(self.config.search, **overrides) if overrides else self.config.search
        settings = replace(settings, candidates=min(settings.candidates, MAX_TOP_K))
        manifest = self.indexer.manifest()
        only = where.allowed(manifest) if where else None
        if where and only is not None and where.narrowed(sum(manifest[s].chunks for s in only), overrides):
            settings = replace(settings, min_score=0.0)  # the filter narrowed it: the floor would only empty it
        return self.mine(
            hybrid_search(
                self.store,
                self.embedder,
                query,
                settings,
                min(top_k if top_k is not None else settings.top_k, MAX_TOP_K),
                archive_dir=self.archive_dir,
                only=only,
                archived=archived,
                dated=None if where else sources_of_day(query, today, manifest),
            )
        )

    def expand(self, chunk_id: str) -> Expanded | None:
        """The chunk with this id or the one id it starts (>= 4 hex characters); None, or AmbiguousId for several;
        ValueError for a prefix too short."""
        self._refilled()
        key = chunk_id.strip().lower()
        if len(key) < MIN_ID_PREFIX:
            raise ValueError(
                f"a prefix needs {MIN_ID_PREFIX} characters: {chunk_id.strip()!r} has {len(key)} (ids are 16 hex "
                "characters, from search)"
            )
        row = self.store.get(key) if len(key) == 16 else None
        if row is None and MIN_ID_PREFIX <= len(key) < 16 and all(c in "0123456789abcdef" for c in key):
            found = sorted(i for r in self.store.scan([]) if (i := r["id"]).startswith(key))
            if len(found) > 1:
                shown = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
                raise AmbiguousId(f"the id prefix {key!r} matches {len(found)} chunks ({shown}): give more of the id")
            row = self.store.get(found[0]) if found else None
        row = remembered_row(self.store, self.index_dir, key, row)  # a note remember answered for: all of it
        if row is None:
            return None
        if cut_short(row.content):  # the whole from the file
            with contextlib.suppress(OSError, PathError):  # (gone or changed since: the stored text it is)
                text = self.indexer.overlays.get(row.source) or read_text(self.path_of(row.source))[0]
                whole = next((c.content for c in self.indexer.chunk(row.source, text) if c.id == row.id), row.content)
                row = replace(row, content=whole)
        return replace(to_expanded(row, self.archive_dir), scope=self.scope)

    def related(self, chunk: Chunk, top_k: int = 3) -> list[Hit]:
        """Memories from other files that resemble `chunk`, the nearest ones (no relevance floor: made for typed
        queries, while a whole chunk as the query covers a small share of any other chunk's terms)."""
        query = f"{chunk.heading}\n{chunk.content}"[:2000]
        return hybrid_search(
            self.store,
            self.embedder,
            query,
            replace(self.config.search, min_score=0.0),
            top_k,
            exclude_source=chunk.source,
            archive_dir=self.archive_dir,
        )

    def headings(self, limit: int = HEADINGS_LIMIT) -> list[Hit]:
        """Every indexed heading, one entry a section, the newest daily logs first (the empty workspace/symbol
        query)."""
        self._refilled()
        return every_heading(self.store, self.archive_dir, limit)

    def status(self) -> dict[str, Any]:
        files = self.store.files(self.embedder.model_name).values()
        counts = sum(1 for r in files if r.chunks), sum(r.chunks for r in files)
        return {
            "version": __version__,
            "root": str(self.root),
            "uri": hide_credentials(self.uri),  # (a server's password is never said)
            "collection": self.collection,
            "model": self.embedder.model_name,
            "dim": self.embedder.dim,
            "provider": self.config.embedding.provider,  # as set (doctor's word): "bundled" for the extra's e5 too
            "max_tokens": self.embedder.max_tokens,
            "reads": reads_what(self.embedder),
            "files": counts[0],
            "chunks": counts[1],
            "pending_buffers": sorted(self.indexer.overlays),
            "damaged_vectors": self.store.damaged(),  # (values changed on disk: searches leave them out)
            **({"error": str(self.store.failure)} if self.store.failure else {}),  # (the index cannot be written)
        }

    def remember(
        self, text: str, heading: str | None = None, *, now: dt.datetime | None = None, long_term: bool = False
    ) -> Remembered:
        """Append a note to today's log under `## HH:MM` (or `heading`) and index it; with `long_term`, add it
        to MEMORY.md at the end of the section `heading` (created at the end when missing).

        The 'remember' step of an agent loop; `now` (default: the clock) picks the log and the time. The note
        is cleaned first (core.notes: control characters removed, fences closed, at most 64 KiB: NoteError
        otherwise); a heading already in the log gets a number; a log the note cannot join cleanly (full,
        unreadable, held unsaved by an editor, or left in a state where the note would not start a chunk) continues
        in the day's next file (YYYY-MM-DD.2.md, ...). Nothing is written unless the whole note can be.
        """
        body = clean_note(text)
        when = now or self.clock()
        title = clean_heading(heading, text) or ("Notes" if long_term else when.strftime("%H:%M"))
        with self._appending:
            with self._writing():  # (the files alone: indexing may wait for a pass)
                found = self._already(body, when.date(), long_term)
                if found is not None:  # the same note again: the one there is the answer
                    source, first, last = found
                    after = read_text(self.path_of(source))[0]
                else:
                    if long_term:
                        source, addition = add_long_term(
                            self.memory_folder(), body, title, self.source_of, self.is_unsaved
                        )
                    else:
                        source, addition = append_to_day(
                            self.memory_folder(), when.date(), body, title, self.source_of, self.is_unsaved
                        )
                    after, first, last = addition.text, addition.first, addition.last
            try:  # (while a pass holds the index past PASS_WAIT_S, it is left to that pass: None)
                stats = self.indexer.gate.index_soon(source, lambda: self.index_file(source))
            except Exception as exc:  # written: the file is the truth, and the next pass indexes the note
                log.warning("%s: the note is written but not indexed yet (%s: %s)", source, type(exc).__name__, exc)
                later = isinstance(exc, IndexBusy)  # (held by another process's pass: the next pass indexes it)
                stats = None if later else IndexStats(warnings=[Skipped(source, f"written, not indexed yet: {exc}")])
        chunks = [c for c in self.outline(source, after) if c.end_line >= first and c.start_line <= last]
        own = (max(first, last - body.count("\n")), last)  # the note's own lines (not the heading it created)
        made = after.split("\n")[first - 1] if long_term and found is None and own[0] > first else ""  # its heading
        if chunks:
            keep_id(self.index_dir, chunks[0].id, source, body, made)
        lines = own if long_term else None
        return Remembered(source, tuple(chunks), stats or IndexStats(), self.scope, lines, indexing=stats is None)

    def _already(self, body: str, day: dt.date, long_term: bool) -> tuple[str, int, int] | None:
        """(source, first line, last line) of a note of the day's logs (or of MEMORY.md) that says `body`."""
        folder = self.memory_folder()
        names = [LONG_TERM] if long_term else [f"{day}.md", *(f"{day}.{n}.md" for n in range(2, MAX_DAY_FILES + 1))]
        for name in names:
            try:
                found = read_note_file(folder / name, name)
            except NoteError:
                continue
            if found is None:
                break
            lines = same_note(found[0], body, long_term)
            if lines is not None:
                return self.source_of(folder / name), *lines
        return None

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """The memory's files to this writer alone, in every process (`filewrite.memory_writes`: a compaction that
        another process applies included); NoteError when another writer keeps them too long."""
        try:
            with memory_writes(self.index_dir):
                yield
        except WritesBusy as exc:
            raise NoteError(str(exc)) from None

    def forget(
        self, chunk_id: str, dry_run: bool = False, line: int | None = None, end_line: int | None = None
    ) -> Forgotten:
        """Take the note holding the chunk `chunk_id` (an id or a prefix of >= 4 characters) out of its Markdown file
        (its `##` section; in MEMORY.md its fact, and the heading only when `remember` wrote it for that fact), then
        re-index that file; with `line` (to `end_line`), only the paragraphs or list items at those lines; `dry_run`:
        only say what would go. NoteError for a chunk that is no note (a file's preamble or `#` title), a MEMORY.md
        section of several notes (without `line`), an id nobody has, a file held unsaved or changed since indexed."""
        with self._appending:  # (the chunk found after the forget before it: its lines as that one left them)
            chunk = self.expand(chunk_id)
            if chunk is None:
                raise NoteError(f"no chunk with id {chunk_id!r}: ids (or a prefix of 4+ characters) come from search")
            source, path = chunk.source, self.path_of(chunk.source)
            if self.is_unsaved(source):
                raise NoteError(f"{source} has unsaved changes in an editor: save or close it first")
            with self._writing():
                exact = read_exact(path, source)  # (written back byte for byte but for the note's lines)
                text = as_indexed(exact)
                lines = text.split("\n")
                if "\n".join(lines[chunk.start_line - 1 : chunk.end_line]) != chunk.content:
                    raise NoteError(
                        f"{source} changed since it was indexed: run `memsearch-lsp index` and search again"
                    )
                first, last = section_of(text, chunk.start_line, source)
                while last > first and not lines[last - 1].strip():
                    last -= 1
                section = lines[first - 1 : last]  # (its heading as every surface shows it: display_heading)
                heading = display_heading(section[0].lstrip("#").strip(), "\n".join(section))
                before = self.indexer.chunk(source, text)
                ids = tuple(c.id for c in before if first <= c.start_line <= last)
                wanted = (line, end_line or line) if line is not None else None
                made = heading_made(self.index_dir, source, section)  # (recorded in MEMORY.md alone)
                first, last = note_at(lines, first, last, wanted, PurePosixPath(source).name == LONG_TERM, source, made)
                content = "\n".join(lines[first - 1 : last])
                gone = Forgotten(chunk.id, source, heading, first, last, content, ids, not dry_run)
                if not dry_run:
                    rewrite_note_file(path, source, exact, after := without_section(exact, first, last))
            if not dry_run:
                forget_ids(self.index_dir, source, content, section)
                moved = [c for c in before if c.start_line > last]  # (the ids search gave them still find them)
                keep_moved(self.index_dir, moved, self.indexer.chunk(source, as_indexed(after)))
                self.index_file(source)
        return gone

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
        self._store, self._indexer = None, None


_OPEN: weakref.WeakSet[Memory] = weakref.WeakSet()


@atexit.register
def _close_open() -> None:
    """A memory still open when the process ends is closed: what it wrote is made durable (the engine's process
    takes its last writes) and that process ends quietly, as after `close()` (a script that never closes)."""
    for memory in list(_OPEN):
        with contextlib.suppress(Exception):
            memory.close()
