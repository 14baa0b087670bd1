"""Indexer: reconcile disk (and unsaved buffers) with the store; embed only text never seen before."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memsearch_lsp.config import Config
from memsearch_lsp.core.chunks import CHUNKING, MAX_CHARS, MAX_FILE_CHUNKS, Chunk, chunk_markdown, sha256, valid_unicode
from memsearch_lsp.core.embedding import Embedder
from memsearch_lsp.core.files import (
    MemoryFile,
    Skipped,
    find_memory_files,
    folder_fd,
    read_file,
    read_memory_file,
    write_file,
)
from memsearch_lsp.core.passes import IndexStats, PassGate
from memsearch_lsp.core.progress import ChunkProgress, Progress
from memsearch_lsp.core.search.analyzer import Analyzer
from memsearch_lsp.core.search.bm25 import doc_vector
from memsearch_lsp.core.store import Store

log = logging.getLogger(__name__)

SKIP_NOTE = "memsearch_skip_note"  # a log record's mark: a file skipped or cut, said once (`index` prints its own)
GROUP_CHUNKS = 1024  # embed+write unit: bench/throughput showed 256 cost ~9% of throughput
EMBED_SLICE = 64  # texts per embed() call while reporting, for an embedder that cannot report its own batches


@dataclass
class _FileState:
    file_hash: str  # "<sha256 of the text>:<number of chunks>"; "" when its rows disagree or are of another model
    chunks: int = 0
    size: int = 0  # the file's size and change stamp (files.changed_ns) when its text was last read (0: unknown)
    mtime_ns: int = 0

    @property
    def complete(self) -> bool:
        expected = self.file_hash.rsplit(":", 1)[-1]
        return expected.isdigit() and int(expected) == self.chunks

    def unchanged(self, item: MemoryFile) -> bool:
        """The file on disk has the size and change stamp it had when its indexed text was read (need not be read)."""
        return bool(self.mtime_ns) and self.complete and (item.size, item.mtime_ns) == (self.size, self.mtime_ns)


class Indexer:
    """Owns the store's rows; one writer at a time (callers serialise through `lock`)."""

    def __init__(self, root: Path, config: Config, store: Store, embedder: Embedder, analysis: Path | None = None):
        self.root, self.config, self.store, self.embedder = root, config, store, embedder
        # Names the BM25 analysis the stored rows' weights were made with (written after a whole pass with it): a
        # pass that finds another name there, or none beside rows, rewrites every row (nothing embedded).
        self.analysis = analysis
        self.lock = threading.RLock()
        self.gate = PassGate(self.lock)  # a write that cannot wait for a whole pass leaves its file to that pass
        self.overlays: dict[str, str] = {}  # unsaved editor buffers: the truth for their files
        self._manifest: dict[str, _FileState] | None = None
        self._epoch = -1  # the store's epoch the manifest was read at
        self._writes = -1  # the store's write count this indexer last saw (another writer makes it read again)
        self._files = self._chunks = 0  # the manifest's totals (files with rows, rows), kept as it changes
        self._said: set[tuple[str, str]] = set()  # the skipped files and warnings the last pass logged

    @property
    def model(self) -> str:
        return self.embedder.model_name

    @property
    def analyzer(self) -> Analyzer:
        """The BM25 analysis of this index's settings (`search.language`)."""
        return Analyzer(self.config.search.language)

    @property
    def written_by(self) -> str:
        """What the stored rows were made with besides the model: the BM25 analysis and the chunking's version."""
        return f"{self.analyzer.name} chunks-{CHUNKING}"

    def analysis_stale(self) -> bool:
        """The stored rows' BM25 weights or chunks were made by another analysis or chunking (an older version,
        another search.language): the next pass rewrites every row from its text, the vectors reused."""
        if self.analysis is None or not self.manifest():
            return False
        return self._recorded_analysis() != self.written_by  # (none: an index written before there was a record)

    def _recorded_analysis(self) -> str:
        """The analysis the record names ("" when there is none, or it is damaged: then the rows are rewritten)."""
        assert self.analysis is not None
        try:
            with folder_fd(self.analysis.parent) as fd:
                return read_file(fd, self.analysis.name, 4096).decode("utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return ""

    def _analysis_done(self) -> None:
        """Record that every stored row's weights are this analysis's (after a whole pass)."""
        if self.analysis is None or self._recorded_analysis() == self.written_by:
            return
        try:
            with folder_fd(self.analysis.parent, create=True) as fd:
                write_file(fd, self.analysis.name, (self.written_by + "\n").encode())
        except OSError as exc:  # a read-only folder: the next pass rewrites the weights again, nothing lost
            log.warning("cannot record the BM25 analysis in %s: %s", self.analysis, exc)

    # -- state -----------------------------------------------------------------------------
    def manifest(self) -> dict[str, _FileState]:
        """Each indexed file's state (read from the store once, then kept as this indexer writes)."""
        if self._manifest is not None and (self._epoch, self._writes) != (self.store.epoch, self.store.writes):
            self._manifest = None  # the store was rebuilt since, or written by another memory of this process
        if self._manifest is None:
            files = self.store.files(self.model)
            self._manifest = {s: _FileState(r.file_hash, r.chunks, r.size, r.mtime_ns) for s, r in files.items()}
            self._epoch, self._writes = self.store.epoch, self.store.writes
            self._files = sum(1 for s in self._manifest.values() if s.chunks)
            self._chunks = sum(s.chunks for s in self._manifest.values())
        return self._manifest

    def ids(self, source: str) -> set[str]:
        """The ids of the rows `source` has in the store."""
        return self.store.ids_of(source) if source in self.manifest() else set()

    def forget(self) -> None:
        """Drop the cached manifest (after a reset or a store swap)."""
        self._manifest = None

    def chunk(self, source: str, text: str, stats: IndexStats | None = None) -> list[Chunk]:
        """`source`'s chunks as indexed: the first MAX_FILE_CHUNKS (a file of 20,000 one-line sections took two
        minutes to embed); when more are left out, a pass says so in `stats.warnings` (`index --json` too)."""
        chunks = chunk_markdown(text, source, model=self.model, max_chars=MAX_CHARS)
        if len(chunks) > MAX_FILE_CHUNKS and stats is not None:
            cut = f"{len(chunks)} sections; the first {MAX_FILE_CHUNKS} are indexed"
            stats.warnings.append(Skipped(source, cut))
        return chunks[:MAX_FILE_CHUNKS]

    # -- public operations -----------------------------------------------------------------
    def reconcile(self, force: bool = False, progress: Progress | None = None) -> IndexStats:
        """Bring the index in line with the memory files: read the changed ones (a file whose size and change stamp
        are as they were when it was indexed is not read again), write what changed, drop what is gone; a file
        written meanwhile that could not wait for the pass (`PassGate.index_soon`) is read again before it ends."""
        first, *more = self.gate.run(lambda again: self._reconcile(force and not again, progress))
        for stats in more:  # (the passes over what was written meanwhile)
            first.add(stats)
        return first

    def _reconcile(self, force: bool, progress: Progress | None) -> IndexStats:
        started = time.perf_counter()
        stats = IndexStats()
        with self.lock:
            manifest = self.manifest()
            files, stats.skipped = find_memory_files(self.root, self.config, indexed=manifest.keys())
            epoch = self.store.epoch
            if not force and self.analysis_stale():
                log.info("the BM25 analysis changed (%s): rewriting every row's term weights", self.analyzer.name)
                force = True
            kept = set() if force else {f.source for f in files if self._kept(manifest.get(f.source), f)}
            texts = self._read_all([f for f in files if f.source not in kept], stats)
            changed = {s: t for s, t in texts.items() if force or self._stale(manifest.get(s), t)}
            for source in changed:
                if source in manifest:
                    stats.files_modified += 1
                elif texts[source].strip():
                    stats.files_added += 1
            self._write(changed, stats, progress)
            self._note_read(files, texts, changed)
            self._drop_gone(manifest, kept | set(texts), {s.source for s in stats.skipped}, stats)
            self.store.flush(wait=True)  # a whole pass ends durable (a single file's write does not wait)
            if self.store.epoch != epoch:  # rebuilt during this pass (its engine, opened to write, was unreadable)
                return self._reconcile(force, progress)
            self._analysis_done()
            self._totals(stats)
        stats.seconds = time.perf_counter() - started
        log.info("%s: %s", self.root.name, str(stats).split("\n", 1)[0])
        said = {(note.source, note.reason) for note in [*stats.skipped, *stats.warnings]}
        for source, reason in sorted(said - self._said):  # once while it holds, not at every pass (stats keep all)
            log.warning("%s: %s", source, reason, extra={SKIP_NOTE: True})
        self._said = said
        return stats

    def _kept(self, state: _FileState | None, item: MemoryFile) -> bool:
        return state is not None and item.source not in self.overlays and state.unchanged(item)

    def _note_read(self, files: list[MemoryFile], texts: dict[str, str], changed: dict[str, str]) -> None:
        """Record the size and change stamp of each file whose indexed text was just read from disk, unless it changed
        in the last second (a second write within the same mtime tick must not go unseen)."""
        recent = time.time_ns() - 1_000_000_000
        manifest = self.manifest()
        for item in files:
            state = manifest.get(item.source)
            if state is None or item.source not in texts or item.source in self.overlays or item.mtime_ns > recent:
                continue
            if (state.size, state.mtime_ns) != (item.size, item.mtime_ns) or item.source in changed:
                state.size, state.mtime_ns = item.size, item.mtime_ns
                self.store.note_file(item.source, item.size, item.mtime_ns)

    def _read_all(self, files: list[MemoryFile], stats: IndexStats) -> dict[str, str]:
        """Each file's text (an open buffer's overlay first); unreadable files go to `stats.skipped`, files
        decoded with replacement to `stats.warnings`."""
        texts: dict[str, str] = {}
        for item in files:
            if item.source in self.overlays:
                texts[item.source] = self.overlays[item.source]
                continue
            text, problem = read_memory_file(item)
            if problem and not text:
                stats.skipped.append(problem)
                continue
            if problem:
                stats.warnings.append(problem)
            texts[item.source] = text
        for source, text in self.overlays.items():
            texts.setdefault(source, text)
        return texts

    def _drop_gone(
        self, manifest: dict[str, _FileState], present: set[str], unreadable: set[str], stats: IndexStats
    ) -> None:
        """Removals last, so a renamed file reuses the vectors of its old rows; files that became unreadable
        lose their rows too (the index mirrors what can be read)."""
        removed = [s for s in manifest if s not in present and s not in unreadable]
        for source in removed:
            self._remove(source)
        stats.files_removed = len(removed)
        for source in unreadable & set(manifest):
            self._remove(source)

    def index_text(self, source: str, text: str, overlay: bool = True) -> IndexStats:
        """Index one file's text (an unsaved buffer when `overlay`), replacing its rows. A lone surrogate (half an
        emoji an editor's JSON carried) is read as "?", one character for one: lines and columns stay."""
        text = valid_unicode(text)
        started = time.perf_counter()
        stats = IndexStats()
        with self.lock:
            if overlay:
                self.overlays[source] = text
            empty, state, epoch = not self.manifest(), self.manifest().get(source), self.store.epoch
            if self._stale(state, text):
                if state is None:
                    stats.files_added = 1
                else:
                    stats.files_modified = 1
                self._write({source: text}, stats, None)
                for note in stats.warnings:  # (a pass says its own once)
                    log.warning("%s: %s", note.source, note.reason)
                if overlay:  # rows of a buffer, not of the file: the next pass without the buffer reads the disk
                    self.store.note_file(source, 0, 0)
                self.store.flush()
                if empty:  # the first rows of an index are this analysis's (no pass needs to rewrite them)
                    self._analysis_done()
            self._rebuilt_since(epoch)
            self._totals(stats)
        stats.seconds = time.perf_counter() - started
        return stats

    def drop_overlay(self, source: str) -> None:
        with self.lock:
            self.overlays.pop(source, None)

    def remove(self, source: str) -> IndexStats:
        started = time.perf_counter()
        stats = IndexStats()
        with self.lock:
            self.overlays.pop(source, None)
            if source in self.manifest():
                epoch = self.store.epoch
                self._remove(source)
                self.store.flush()
                stats.files_removed = 1
                self._rebuilt_since(epoch)
            self._totals(stats)
        stats.seconds = time.perf_counter() - started
        return stats

    # -- internals -------------------------------------------------------------------------
    def _rebuilt_since(self, epoch: int) -> None:
        """The store was rebuilt empty during a write: everything else is indexed again now, not at the next pass."""
        if self.store.epoch != epoch:
            self.reconcile()

    def _stale(self, state: _FileState | None, text: str) -> bool:
        return state is None or not state.complete or state.file_hash.split(":")[0] != sha256(text)

    def _totals(self, stats: IndexStats) -> None:
        self.manifest()
        stats.files_total, stats.chunks_total = self._files, self._chunks

    def _put(self, source: str, state: _FileState | None) -> None:
        """Set (or with None, drop) a file's state, keeping the totals: no pass over every file per write."""
        manifest = self.manifest()
        old = manifest.get(source)
        if old is not None:
            self._files -= bool(old.chunks)
            self._chunks -= old.chunks
        if state is None:
            manifest.pop(source, None)
        else:
            manifest[source] = state
            self._files += bool(state.chunks)
            self._chunks += state.chunks

    def _remove(self, source: str) -> None:
        if source in self.manifest():
            ids = self.ids(source)
            self._put(source, None)
            self.store.delete(sorted(ids))
            self._writes = self.store.writes

    def _write(self, texts: dict[str, str], stats: IndexStats, progress: Progress | None) -> None:
        """Chunk, embed what is new, upsert, then delete the rows the new chunks replace; `progress` hears how many
        of the chunks are done about every REPORT_S seconds while the embedder works, and once at the end."""
        chunked = [(source, text, self.chunk(source, text, stats)) for source, text in texts.items()]
        report = ChunkProgress(progress, sum(len(cs) for _, _, cs in chunked))
        report.start()
        pending: list[tuple[str, str, list[Chunk]]] = []
        grouped = 0
        for item in chunked:
            pending.append(item)
            grouped += len(item[2])
            if grouped >= GROUP_CHUNKS:
                self._write_group(pending, stats, report)
                report.written()
                pending, grouped = [], 0
        if pending:
            self._write_group(pending, stats, report)
        report.finish()

    def _write_group(
        self, group: Sequence[tuple[str, str, list[Chunk]]], stats: IndexStats, report: ChunkProgress | None = None
    ) -> None:
        chunks = [c for _, _, cs in group for c in cs]
        vectors = self.store.vectors_for([c.embed_hash for c in chunks], self.model) if chunks else {}
        missing: dict[str, list[str]] = {}
        for c in chunks:
            if c.embed_hash not in vectors:
                missing.setdefault(c.embed_hash, c.windows)
        if report:
            report.add(len(chunks) - len(missing))  # found in the store: done
        if missing:
            texts = [w for ws in missing.values() for w in ws]
            flat = iter(self._embed(texts, report.texts(len(missing), len(texts)) if report else None))
            for h, ws in missing.items():
                vectors[h] = [next(flat) for _ in ws]
        stats.chunks_embedded += len(missing)
        stats.chunks_reused += len(chunks) - sum(1 for c in chunks if c.embed_hash in missing)
        rows: list[dict[str, Any]] = []
        windows: list[dict[str, Any]] = []
        for _, text, cs in group:
            file_hash = f"{sha256(text)}:{len(cs)}"
            for c in cs:
                embed_hash = c.embed_hash  # (hashed once: a chunk may have many windows)
                first, *rest = vectors[embed_hash]
                row = self._row(c, file_hash, first)
                row["windows"] = 1 + len(rest)
                rows.append(row)
                windows += [
                    {
                        "id": f"{c.id}:{n}",
                        "chunk_id": c.id,
                        "source": c.source,
                        "embed_hash": embed_hash,
                        "model": self.model,
                        "dense": v,
                    }
                    for n, v in enumerate(rest, 1)
                ]
        old = {source: self.ids(source) for source, _, _ in group}
        self.store.upsert(rows, windows)
        self._writes = self.store.writes
        self.store.flush()  # the engine takes this group while the next one is embedded
        for source, text, cs in group:
            gone = old[source] - {c.id for c in cs}
            if gone:
                self.store.delete(sorted(gone))
                self._writes = self.store.writes
            self._put(source, _FileState(f"{sha256(text)}:{len(cs)}", len(cs)))

    def _embed(self, texts: list[str], done: Callable[[int], None] | None) -> list[list[float]]:
        """The embedder's vectors for `texts`; `done(n)` after each batch when the embedder reports its batches
        (`embed_reporting`), else after each slice of EMBED_SLICE texts."""
        if done is None:
            return self.embedder.embed(texts)
        reporting = getattr(self.embedder, "embed_reporting", None)
        if reporting is not None:
            vectors: list[list[float]] = reporting(texts, done)
            return vectors
        vectors = []
        for start in range(0, len(texts), EMBED_SLICE):
            vectors.extend(self.embedder.embed(texts[start : start + EMBED_SLICE]))
            done(len(vectors))
        return vectors

    def _row(self, c: Chunk, file_hash: str, vector: list[float]) -> dict[str, Any]:
        return {
            "id": c.id,
            "source": c.source,
            "heading": c.heading,
            "heading_path": " > ".join(c.heading_path),
            "level": c.level,
            "start_line": c.start_line,
            "end_line": c.end_line,
            "content_hash": c.content_hash,
            "embed_hash": c.embed_hash,
            "file_hash": file_hash,
            "model": self.model,
            "date": c.date,
            "content": c.content,
            "dense": vector,
            "sparse": doc_vector(c.embed_text, self.analyzer),
        }
