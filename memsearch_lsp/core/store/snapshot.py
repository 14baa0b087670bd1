"""The search mirror saved beside a local index, so a new process opens it in milliseconds.

A LegMirror read from Milvus Lite costs ~1 s per 10k chunks (every row's vector as Python floats); the
same state as numpy files loads memory-mapped (copy on write) in a few ms. Layout, in `<index>/search-cache/`:
one `.npy` file per array, `rows.marshal` (the row cache: marshal, which builds plain values only and runs
no code, unlike pickle) and `meta.json`, written last. `meta.json` is what makes the files valid:

- before the store accepts the first write after a save, `invalidate()` unlinks `meta.json` (the store
  calls it first, then writes to Milvus Lite, whose WAL makes the write durable at once);
- `save()` unlinks it, writes every file to a temporary name and `os.replace`s it in, then writes
  `meta.json` the same way.

So a process killed between a store write and the next save leaves no `meta.json`, and the next opening
reads the mirror from the store again (`tests/integration/test_snapshot.py` kills one with SIGKILL there);
`meta.json` also pins the format, the dimension, the kept fields, the collections and the store's
generation (each collection's write sequence in Milvus Lite, restored from its manifest and WAL when it
opens), so a copy of another layout, or one that a process not knowing it wrote past, is never read.

It also names the engine's files as they stood (`fingerprint`: each file's path, size, modification time
and inode; written at save and again by `stamp` once the engine has closed, under the folder's lock). A
store opens from a copy whose files still stand so without opening its engine at all (no segment load): any
write by any process, ours or not, appends to a WAL or replaces a file, so it changes the fingerprint, and
the engine is then opened and asked for its write sequence as above.
"""

from __future__ import annotations

import contextlib
import json
import logging
import marshal
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy and the mirror load with the saved copy itself: checking one needs neither
    import numpy as np

    from memsearch_lsp.core.store.mirror import LegMirror, _Vectors

log = logging.getLogger(__name__)

FOLDER = "search-cache"
META = "meta.json"
FORMAT = 1
_ARRAYS = (
    "chunk_ids",
    "chunk_vecs",
    "chunk_live",
    "chunk_source",
    "window_ids",
    "window_vecs",
    "window_live",
    "window_source",
    "window_owner",
    "terms",
    "weights",
    "term_ends",
    "post_slots",
    "post_weights",
    "post_keys",
    "post_starts",
    "post_ends",
)


def folder_of(index: str | Path) -> Path:
    return Path(index) / FOLDER


def invalidate(index: str | Path) -> None:
    """Make the saved mirror of `index` invalid (before a write to the store)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(folder_of(index) / META)


def fingerprint(index: str | Path) -> list[list[Any]]:
    """The engine's files under `index` (not this copy, not the lock file): [path, size, mtime_ns, inode] each,
    in path order. Any write to the index changes it."""
    root = str(index)
    found: list[list[Any]] = []
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        if rel == ".":
            dirs[:] = [d for d in dirs if d != FOLDER]
        dirs.sort()
        for name in sorted(files):
            if rel == "." and name == "LOCK":
                continue
            st = os.lstat(os.path.join(folder, name))
            found.append([os.path.normpath(os.path.join(rel, name)), st.st_size, st.st_mtime_ns, st.st_ino])
    return found


def stamp(index: str | Path) -> None:
    """Name the engine's files as they stand now in the saved copy's `meta.json` (the caller knows the copy is
    of the store's present state, holds the folder's lock and has closed the engine: nothing writes)."""
    path = folder_of(index) / META
    try:
        meta = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return
    meta["engine"] = fingerprint(index)
    _replace(path, lambda handle: handle.write(json.dumps(meta).encode()))


def saved_generation(index: str | Path) -> list[Any] | None:
    """The store generation the saved copy was written at (None without a readable `meta.json`)."""
    try:
        value = json.loads((folder_of(index) / META).read_bytes()).get("generation")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, list) else None


def _identity(dim: int, fields: Sequence[str], collections: Sequence[str]) -> dict[str, Any]:
    kept = tuple(dict.fromkeys(f for f in ("heading_path", *fields) if f not in ("id", "source")))  # LegMirror.fields
    return {"format": FORMAT, "dim": dim, "fields": list(kept), "collections": list(collections)}


def check(index: str | Path, dim: int, fields: Sequence[str], collections: Sequence[str]) -> dict[str, Any] | None:
    """The saved copy's `meta.json` when it is of this layout and the index's files stand as they did at its
    save (`fingerprint`), else None; reads no array (no numpy)."""
    meta = _meta(index, dim, fields, collections)
    if meta is None:
        return None
    if meta.get("engine") != fingerprint(index):
        log.debug("the index in %s changed since its search mirror was saved: opening the engine", index)
        return None
    return meta


def _meta(index: str | Path, dim: int, fields: Sequence[str], collections: Sequence[str]) -> dict[str, Any] | None:
    """The saved copy's `meta.json` when there is one of this layout (format, dimension, fields, collections)."""
    try:
        meta = json.loads((folder_of(index) / META).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(meta, dict) or {k: meta.get(k) for k in ("format", "dim", "fields", "collections")} != _identity(
        dim, fields, collections
    ):
        return None
    return meta


def counts(meta: dict[str, Any]) -> tuple[int, int] | None:
    """(files, chunks) the saved copy holds, as its `meta.json` says (None when it does not)."""
    value = meta.get("counts")
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return value[0], value[1]
    return None


def save(mirror: LegMirror, index: str | Path, collections: Sequence[str], generation: Sequence[int | None]) -> None:
    """Write `mirror` beside `index` (the caller holds the store's lock: no write runs meanwhile), as of the
    store's `generation` (its collections' write sequence: a copy is read only while it stands there)."""
    if None in generation:
        raise ValueError("the engine does not say where its write sequence stands")
    import numpy as np

    out = folder_of(index)
    out.mkdir(mode=0o700, exist_ok=True)
    invalidate(index)
    mirror.full_postings()  # saved built: the first BM25 search after opening builds nothing
    chunks, windows, n = mirror.chunks, mirror.windows, mirror.chunks.n
    lengths = np.fromiter((len(t) for t in mirror.terms[:n]), dtype=np.int64, count=n)
    arrays = {
        "chunk_ids": np.asarray(chunks.ids, dtype=str),
        "chunk_vecs": chunks.vecs[:n],
        "chunk_live": chunks.live[:n],
        "chunk_source": chunks.source[:n],
        "window_ids": np.asarray(windows.ids, dtype=str),
        "window_vecs": windows.vecs[: windows.n],
        "window_live": windows.live[: windows.n],
        "window_source": windows.source[: windows.n],
        "window_owner": np.asarray(mirror.owner, dtype=str),
        "terms": _concat(mirror.terms[:n], np.uint32),
        "weights": _concat(mirror.weights[:n], np.float32),
        "term_ends": np.cumsum(lengths),
        "post_slots": mirror.main.slots,
        "post_weights": mirror.main.weights,
        "post_keys": mirror.main.keys,
        "post_starts": mirror.main.starts,
        "post_ends": mirror.main.ends,
    }
    for name, array in arrays.items():
        _replace(out / f"{name}.npy", lambda handle, a=array: np.save(handle, np.ascontiguousarray(a)))
    _replace(out / "rows.marshal", lambda handle: marshal.dump(mirror.rows, handle, 4))
    live = np.flatnonzero(chunks.live[:n])
    files = len(np.unique(chunks.source[live])) if len(live) else 0
    meta = dict(
        _identity(mirror.chunks.dim, mirror.fields, collections),
        names=mirror.names,
        chunks=n,
        windows=windows.n,
        generation=list(generation),
        counts=[files, len(live)],
        engine=fingerprint(index),
    )
    _replace(out / META, lambda handle: handle.write(json.dumps(meta).encode()))


def load(
    index: str | Path,
    dim: int,
    fields: Sequence[str],
    collections: Sequence[str],
    generation: Sequence[int | None] | None,
    rows: dict[str, tuple[Any, ...]] | None = None,
) -> LegMirror | None:
    """The mirror saved beside `index`, or None when there is none, it is invalid, of another layout or of
    another `generation` of the store (written since by a process that did not invalidate it). With
    `generation` None (the engine is not open), of the index's files as they stand (`fingerprint`)."""
    import numpy as np

    from memsearch_lsp.core.store.mirror import LegMirror

    where = folder_of(index)
    try:
        found = check(index, dim, fields, collections) if generation is None else _meta(index, dim, fields, collections)
        if found is None:
            return None
        meta = found
        if generation is not None and (None in generation or meta.get("generation") != list(generation)):
            log.info("the saved search mirror in %s is of another state of the index: reading the index", where)
            return None
        mirror = LegMirror(dim, fields)
        # Plain ndarray views of the maps (the same pages): slicing a np.memmap runs Python code per slice.
        a = {
            name: np.load(where / f"{name}.npy", mmap_mode="c", allow_pickle=False).view(np.ndarray) for name in _ARRAYS
        }
        if rows is None:  # `rows`: the row cache already in memory, equal to the saved one
            rows = marshal.loads((where / "rows.marshal").read_bytes())
        _fill(mirror, meta, a, rows)
    except FileNotFoundError:
        return None
    except Exception as exc:  # a damaged or foreign file: read the store instead
        log.warning("the saved search mirror in %s cannot be read (%s); reading the index instead", where, exc)
        return None
    return mirror


def _fill(mirror: LegMirror, meta: dict[str, Any], a: dict[str, np.ndarray], rows: dict[str, tuple[Any, ...]]) -> None:
    import numpy as np

    from memsearch_lsp.core.store.mirror import _Postings

    n, nw, dim = int(meta["chunks"]), int(meta["windows"]), mirror.chunks.dim
    shapes = {
        "chunk_ids": (n,),
        "chunk_vecs": (n, dim),
        "chunk_live": (n,),
        "chunk_source": (n,),
        "window_ids": (nw,),
        "window_vecs": (nw, dim),
        "window_live": (nw,),
        "window_source": (nw,),
        "window_owner": (nw,),
        "term_ends": (n,),
    }
    terms = int(a["term_ends"][-1]) if n else 0
    shapes.update(
        terms=(terms,),
        weights=(terms,),
        post_slots=(len(a["post_weights"]),),
        post_starts=(len(a["post_keys"]),),
        post_ends=(len(a["post_keys"]),),
    )
    wrong = [name for name, shape in shapes.items() if a[name].shape != shape]
    if wrong:
        raise ValueError(f"{', '.join(wrong)} do not match meta.json")
    mirror.names = list(meta["names"])
    mirror.sources = {name: code for code, name in enumerate(mirror.names)}
    _vectors(mirror.chunks, a["chunk_ids"], a["chunk_vecs"], a["chunk_live"], a["chunk_source"])
    _vectors(mirror.windows, a["window_ids"], a["window_vecs"], a["window_live"], a["window_source"])
    mirror.owner = a["window_owner"].tolist()
    live = a["window_live"]
    for slot, (key, chunk) in enumerate(zip(mirror.windows.ids, mirror.owner, strict=True)):
        if live[slot]:
            mirror.windows_of.setdefault(chunk, []).append(key)
    starts = np.concatenate([[0], a["term_ends"][:-1]]).astype(np.int64) if n else np.zeros(0, dtype=np.int64)
    mirror.terms = [a["terms"][s:e] for s, e in zip(starts.tolist(), a["term_ends"].tolist(), strict=True)]
    mirror.weights = [a["weights"][s:e] for s, e in zip(starts.tolist(), a["term_ends"].tolist(), strict=True)]
    main = _Postings([], [], [])
    main.slots, main.weights, main.keys = a["post_slots"], a["post_weights"], a["post_keys"]
    main.starts, main.ends = a["post_starts"], a["post_ends"]
    mirror.main, mirror.main_upto = main, n
    if set(rows) != set(mirror.chunks.slot):
        raise ValueError("the row cache does not match the chunks")
    mirror.rows = rows


def _vectors(into: _Vectors, ids: np.ndarray, vecs: np.ndarray, live: np.ndarray, source: np.ndarray) -> None:
    import numpy as np

    into.ids = ids.tolist()
    into.vecs, into.live, into.source = vecs, live, source
    into.slot = {into.ids[s]: s for s in np.flatnonzero(live).tolist()}


def _concat(parts: Sequence[np.ndarray], dtype: Any) -> np.ndarray:
    import numpy as np

    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype=dtype)


def _replace(path: Path, write: Any) -> None:
    """Write `path` through a temporary file and os.replace, so a reader never sees half a file."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "wb") as handle:
            write(handle)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
