"""Indexer: reconcile disk (and unsaved buffers) with the store; embed only text never seen before."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memsearch_lsp.config import Config
from memsearch_lsp.core.chunks import MAX_CHARS, Chunk, chunk_markdown, sha256
from memsearch_lsp.core.embedding.onnx import Embedder
from memsearch_lsp.core.files import MemoryFile, Skipped, find_memory_files, read_text
from memsearch_lsp.core.search.bm25 import DfTable, doc_vector
from memsearch_lsp.core.store.milvus import MilvusStore, sparse_dict

log = logging.getLogger(__name__)

Progress = Callable[[int, int, str], None]
GROUP_CHUNKS = 1024  # embed+write unit: bench/throughput showed 256 cost ~9% of throughput


@dataclass
class IndexStats:
    files_added: int = 0
    files_modified: int = 0
    files_removed: int = 0
    files_total: int = 0
    chunks_total: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    seconds: float = 0.0
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[Skipped] = field(default_factory=list)

    def __str__(self) -> str:
        text = (
            f"+{self.files_added} added ~{self.files_modified} modified -{self.files_removed} removed, "
            f"{self.chunks_embedded} chunks embedded, {self.chunks_reused} reused "
            f"({self.chunks_total} chunks in {self.files_total} files, {self.seconds:.2f}s)"
        )
        for item in self.skipped:
            text += f"\nskipped {item.source}: {item.reason}"
        for item in self.warnings:
            text += f"\nwarning {item.source}: {item.reason}"
        return text

    @property
    def changed(self) -> bool:
        return bool(self.files_added or self.files_modified or self.files_removed)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["seconds"] = round(self.seconds, 3)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IndexStats:
        """The stats as `to_dict` (or `asdict`) gave them, from another process."""
        notes = {key: [Skipped(**item) for item in data.get(key, [])] for key in ("skipped", "warnings")}
        return cls(**{**data, **notes})


class HandOver(Exception):
    """The pass would write at least the text it was asked to hand over at (`reconcile(hand_over=...)`); nothing
    was written: the caller runs it elsewhere (core/process/bulk.py)."""

    def __init__(self, chars: int, files: int):
        super().__init__(f"{files} files, {chars} characters to index")
        self.chars, self.files = chars, files


@dataclass
class _FileState:
    file_hash: str  # "<sha256 of the text>:<number of chunks>"
    ids: set[str] = field(default_factory=set)
    consistent: bool = True  # every row carries the same file_hash and the current model

    @property
    def complete(self) -> bool:
        expected = self.file_hash.rsplit(":", 1)[-1]
        return self.consistent and expected.isdigit() and int(expected) == len(self.ids)


class Indexer:
    """Owns the store's rows; one writer at a time (callers serialise through `lock`)."""

    def __init__(self, root: Path, config: Config, store: MilvusStore, embedder: Embedder, df: DfTable):
        self.root, self.config, self.store, self.embedder, self.df = root, config, store, embedder, df
        self.lock = threading.RLock()
        self.overlays: dict[str, str] = {}  # unsaved editor buffers: the truth for their files
        self._manifest: dict[str, _FileState] | None = None
        self._epoch = -1  # the store's epoch the manifest was read at
        # hash() of every embed_hash stored under the current model: the embedding cache asks the store
        # only for these, since a lookup Milvus Lite must also answer from its unflushed rows copies them
        # all (vectors as Python floats), once per group: much of a full index's peak memory and about half its
        # store time. A superset is harmless (a lookup that finds nothing), so deletes leave it alone.
        self._stored: set[int] = set()
        self._files = self._chunks = 0  # the manifest's totals (files with rows, rows), kept as it changes

    @property
    def model(self) -> str:
        return self.embedder.model_name

    # -- state -----------------------------------------------------------------------------
    def manifest(self) -> dict[str, _FileState]:
        if self._manifest is not None and self._epoch != self.store.epoch:  # the store was rebuilt since
            self._manifest = None
        if self._manifest is None:
            manifest: dict[str, _FileState] = {}
            self._stored = set()
            for row in self.store.scan(["source", "file_hash", "model", "embed_hash"]):
                if row["model"] == self.model:
                    self._stored.add(hash(row["embed_hash"]))
                state = manifest.get(row["source"])
                if state is None:
                    state = manifest[row["source"]] = _FileState(row["file_hash"])
                state.ids.add(row["id"])
                if row["file_hash"] != state.file_hash or row["model"] != self.model:
                    state.consistent = False
            self._manifest, self._epoch = manifest, self.store.epoch
            self._files = sum(1 for s in manifest.values() if s.ids)
            self._chunks = sum(len(s.ids) for s in manifest.values())
            if not self.df.load(self._chunks):
                self.df.reset()
                if self._chunks:  # (an empty index has none to count: its engine need not open)
                    self.df.add(sparse_dict(r["sparse"]) for r in self.store.iter_rows(["sparse"]))
                self.df.save()
        return self._manifest

    def forget(self) -> None:
        """Drop the cached manifest (after a reset or a store swap)."""
        self._manifest = None

    def chunk(self, source: str, text: str) -> list[Chunk]:
        return chunk_markdown(text, source, model=self.model, max_chars=MAX_CHARS)

    # -- public operations -----------------------------------------------------------------
    def reconcile(self, force: bool = False, progress: Progress | None = None, hand_over: int = 0) -> IndexStats:
        """Bring the index in line with the memory files: read them, write what changed, drop what is gone.
        `hand_over`: raise HandOver, writing nothing, when the changed files hold at least that many characters."""
        started = time.perf_counter()
        stats = IndexStats()
        with self.lock:
            files, stats.skipped = find_memory_files(self.root, self.config)
            manifest = self.manifest()
            epoch = self.store.epoch
            texts = self._read_all(files, stats)
            changed = {s: t for s, t in texts.items() if force or self._stale(manifest.get(s), t)}
            if hand_over and (chars := sum(len(t) for t in changed.values())) >= hand_over:
                raise HandOver(chars, len(changed))
            for source in changed:
                if source in manifest:
                    stats.files_modified += 1
                elif texts[source].strip():
                    stats.files_added += 1
            self._write(changed, stats, progress)
            self._drop_gone(manifest, texts, {s.source for s in stats.skipped}, stats)
            if stats.changed or force or self.df.dirty:
                self.store.flush()
                self.df.save()
            if self.store.epoch != epoch:  # rebuilt during this pass (its engine, opened to write, was unreadable)
                return self.reconcile(force=force, progress=progress)
            self._totals(stats)
        stats.seconds = time.perf_counter() - started
        for note in [*stats.skipped, *stats.warnings]:
            log.warning("%s: %s", note.source, note.reason)
        return stats

    def _read_all(self, files: list[MemoryFile], stats: IndexStats) -> dict[str, str]:
        """Each file's text (an open buffer's overlay first); unreadable files go to `stats.skipped`, files
        decoded with replacement to `stats.warnings`."""
        texts: dict[str, str] = {}
        for item in files:
            if item.source in self.overlays:
                texts[item.source] = self.overlays[item.source]
                continue
            try:
                text, problem = read_text(item.path)
            except OSError as exc:
                stats.skipped.append(Skipped(item.source, f"cannot read: {exc}"))
                continue
            if problem and not text:
                stats.skipped.append(Skipped(item.source, problem))
                continue
            if problem:
                stats.warnings.append(Skipped(item.source, problem))
            texts[item.source] = text
        for source, text in self.overlays.items():
            texts.setdefault(source, text)
        return texts

    def _drop_gone(
        self, manifest: dict[str, _FileState], texts: dict[str, str], unreadable: set[str], stats: IndexStats
    ) -> None:
        """Removals last, so a renamed file reuses the vectors of its old rows; files that became unreadable
        lose their rows too (the index mirrors what can be read)."""
        removed = [s for s in manifest if s not in texts and s not in unreadable]
        for source in removed:
            self._remove(source)
        stats.files_removed = len(removed)
        for source in unreadable & set(manifest):
            self._remove(source)

    def index_text(self, source: str, text: str, overlay: bool = True) -> IndexStats:
        """Index one file's text (an unsaved buffer when `overlay`), replacing its rows."""
        started = time.perf_counter()
        stats = IndexStats()
        with self.lock:
            if overlay:
                self.overlays[source] = text
            state, epoch = self.manifest().get(source), self.store.epoch
            if self._stale(state, text):
                if state is None:
                    stats.files_added = 1
                else:
                    stats.files_modified = 1
                self._write({source: text}, stats, None)
                self.store.flush()
                self.df.save()
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
                self.df.save()
                stats.files_removed = 1
                self._rebuilt_since(epoch)
            self._totals(stats)
        stats.seconds = time.perf_counter() - started
        return stats

    # -- internals -------------------------------------------------------------------------
    def _rebuilt_since(self, epoch: int) -> None:
        """The store was rebuilt empty during a write (its engine, opened for it, found the index unreadable and
        moved it aside): everything else is indexed again now, not at the next full pass."""
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
            self._files -= bool(old.ids)
            self._chunks -= len(old.ids)
        if state is None:
            manifest.pop(source, None)
        else:
            manifest[source] = state
            self._files += bool(state.ids)
            self._chunks += len(state.ids)

    def _remove(self, source: str) -> None:
        state = self.manifest().get(source)
        if state is not None:
            self._put(source, None)
            self._delete(state.ids)

    def _delete(self, ids: set[str]) -> None:
        """Delete rows, taking their terms out of the document frequencies first."""
        ordered = sorted(ids)
        self.df.begin()
        self.df.add(self.store.sparse_of(ordered), sign=-1)
        self.store.delete(ordered)

    def _write(self, texts: dict[str, str], stats: IndexStats, progress: Progress | None) -> None:
        """Chunk, embed what is new, upsert, then delete the rows the new chunks replace."""
        pending: list[tuple[str, str, list[Chunk]]] = []
        total = len(texts)
        done = grouped = 0
        for source, text in texts.items():
            pending.append((source, text, self.chunk(source, text)))
            grouped += len(pending[-1][2])
            if grouped >= GROUP_CHUNKS:
                self._write_group(pending, stats)
                done += len(pending)
                pending, grouped = [], 0
                if progress:
                    progress(done, total, f"{done}/{total} files")
        if pending:
            self._write_group(pending, stats)
            if progress:
                progress(total, total, f"{total}/{total} files")

    def _write_group(self, group: Sequence[tuple[str, str, list[Chunk]]], stats: IndexStats) -> None:
        chunks = [c for _, _, cs in group for c in cs]
        stored = [c.embed_hash for c in chunks if hash(c.embed_hash) in self._stored]
        vectors = self.store.vectors_for(stored, self.model) if stored else {}
        missing: dict[str, list[str]] = {}
        for c in chunks:
            if c.embed_hash not in vectors:
                missing.setdefault(c.embed_hash, c.windows)
        if missing:
            texts = [w for ws in missing.values() for w in ws]
            flat = iter(self.embedder.embed(texts))
            for h, ws in missing.items():
                vectors[h] = [next(flat) for _ in ws]
        stats.chunks_embedded += len(missing)
        stats.chunks_reused += len(chunks) - sum(1 for c in chunks if c.embed_hash in missing)
        manifest = self.manifest()
        rows: list[dict[str, Any]] = []
        windows: list[dict[str, Any]] = []
        added: list[dict[int, float]] = []
        for source, text, cs in group:
            file_hash = f"{sha256(text)}:{len(cs)}"
            known = manifest[source].ids if source in manifest else set()
            for c in cs:
                first, *rest = vectors[c.embed_hash]
                row = self._row(c, file_hash, first)
                row["windows"] = 1 + len(rest)
                rows.append(row)
                windows += [
                    {
                        "id": f"{c.id}:{n}",
                        "chunk_id": c.id,
                        "source": c.source,
                        "embed_hash": c.embed_hash,
                        "model": self.model,
                        "dense": v,
                    }
                    for n, v in enumerate(rest, 1)
                ]
                if c.id not in known:
                    added.append(row["sparse"])
        self.df.begin()  # the saved statistics may go stale from here until df.save()
        self.store.upsert(rows, windows)
        self._stored.update(hash(c.embed_hash) for c in chunks)
        self.df.add(added)
        for source, text, cs in group:
            new_ids = {c.id for c in cs}
            old = manifest.get(source)
            if old is not None and old.ids - new_ids:
                self._delete(old.ids - new_ids)
            self._put(source, _FileState(f"{sha256(text)}:{len(cs)}", new_ids))

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
            "sparse": doc_vector(c.embed_text),
        }
