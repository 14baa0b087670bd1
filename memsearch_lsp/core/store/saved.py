"""The read model saved beside a local index as plain data, so a new process opens it in milliseconds.

Layout, in `<index>/read-model/`: one raw little-endian file per array (vectors, masks, source codes, BM25 weights
and postings, and every string column as a UTF-8 blob with its offsets), `files.json` (each file's record) and
`meta.json`, written last, which makes them valid: it names each file's dtype, shape, size and CRC-32, the model's
identity and the engine's files as they stood (`fingerprint`: path, size, mtime and inode of each). Nothing is
code (no serialised objects). A load checks every file against `meta.json` (size, checksum, dtype, shape) and every
index into another array against its bounds; anything that does not hold is reported once and the read model is
rebuilt from the engine, never served half-right. Every file is opened through the folder's descriptor without
following a link (core/store/folder.py). Before the first write after a save the store removes `meta.json`
(`invalidate`), so a process killed before the next save leaves nothing that could be read stale, and its writer then
the files (`discard`): no row deleted since outlives it. A save holds the live rows only (`ReadModel.compact`: the
slots of deleted rows go first), so the copy does not grow with edits.
"""

from __future__ import annotations

import json
import logging
import os
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from memsearch_lsp.core.files import folder_fd, read_file, remove_file, write_file
from memsearch_lsp.core.store.columns import Postings, Texts, pack
from memsearch_lsp.core.store.folder import LOCK
from memsearch_lsp.core.store.readmodel import FileRecord, ReadModel
from memsearch_lsp.core.store.schema import INTS, TEXTS

log = logging.getLogger(__name__)

FOLDER = "read-model"
OLD_FOLDER = "search-cache"  # the saved mirror of earlier versions (serialised rows): never read, removed
META = "meta.json"
FORMAT = 3


def fingerprint(index: str | Path) -> list[list[Any]]:
    """The engine's files under `index` (not the saved read model, not the locks): [path, size, mtime_ns, inode]
    each, in path order. Any write to the engine changes it."""
    root = str(index)
    found: list[list[Any]] = []
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        if rel == ".":
            dirs[:] = [d for d in dirs if d not in (FOLDER, OLD_FOLDER)]
        dirs.sort()
        for name in sorted(files):
            if rel == "." and name in ("LOCK", LOCK):
                continue
            try:
                st = os.lstat(os.path.join(folder, name))
            except FileNotFoundError:  # a temporary file of the engine closing meanwhile (save's copy is stamped after)
                continue
            found.append([os.path.normpath(os.path.join(rel, name)), st.st_size, st.st_mtime_ns, st.st_ino])
    return found


def invalidate(index: str | Path) -> None:
    """Make the saved read model of `index` invalid (before a write to the engine): its `meta.json` goes."""
    if os.path.isdir(Path(index) / FOLDER):
        with folder_fd(Path(index) / FOLDER) as fd:
            remove_file(fd, META)


def discard(index: str | Path) -> None:
    """Remove the files of an invalid saved read model (never of a valid one: `meta.json` is gone first). A row
    deleted since it was saved, a forgotten note, is in them; the read model loaded from them keeps its mapping of
    the files it opened. The writer does it, off the caller's first write."""
    if os.path.isdir(Path(index) / FOLDER):
        with folder_fd(Path(index) / FOLDER) as fd:
            names = os.listdir(fd)
            if META not in names:
                for name in names:
                    remove_file(fd, name)


def _arrays(model: ReadModel) -> dict[str, np.ndarray]:
    """Every array of `model`: the slots of deleted rows dropped (the copy saved is the one a fresh index of the same
    rows saves) and postings built in full first (they load built)."""
    model.compact()
    model.full_postings()
    chunks, windows, n = model.chunks, model.windows, model.chunks.n
    out: dict[str, np.ndarray] = {
        "chunk_vecs": chunks.matrix(),
        "chunk_live": chunks.live[:n],
        "chunk_source": chunks.source[:n],
        "window_vecs": windows.matrix(),
        "window_live": windows.live[: windows.n],
        "window_source": windows.source[: windows.n],
        "ints": model.ints[:n],
        "terms": np.concatenate(model.terms[:n]).astype(np.uint32) if n else np.zeros(0, np.uint32),
        "weights": np.concatenate(model.weights[:n]).astype(np.float32) if n else np.zeros(0, np.float32),
        "term_ends": np.cumsum([len(t) for t in model.terms[:n]], dtype=np.int64),
        "post_slots": model.main.slots,
        "post_weights": model.main.weights,
        "post_keys": model.main.keys,
        "post_bounds": model.main.bounds,
    }
    packed = {"chunk_ids": pack(chunks.ids), "window_ids": pack(windows.ids), "window_owner": pack(model.owner)}
    packed.update({name: model.texts[name].packed(n) for name in TEXTS})
    for name, (blob, offsets) in packed.items():
        out[f"{name}.blob"], out[f"{name}.offsets"] = blob, offsets
    return out


def save(model: ReadModel, index: str | Path, identity: dict[str, Any]) -> None:
    """Write `model` and its files' records beside `index` (the caller holds the store's lock: no write runs
    meanwhile)."""
    stored = next((model.texts["model"][slot] for slot in model.chunks.slot.values()), "")  # the rows' model
    files = model.files(stored)
    with folder_fd(Path(index) / FOLDER, create=True) as fd:
        remove_file(fd, META)
        described = {}
        for name, array in _arrays(model).items():
            data = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
            raw = _raw(data)
            write_file(fd, f"{name}.bin", raw)
            described[name] = {"dtype": data.dtype.str, "shape": list(data.shape), "crc32": zlib.crc32(raw)}
        listing = json.dumps({s: [r.file_hash, r.chunks, r.size, r.mtime_ns] for s, r in files.items()}).encode()
        write_file(fd, "files.json", listing)
        described["files.json"] = {"crc32": zlib.crc32(listing), "size": len(listing)}
        counted = [sum(1 for r in files.values() if r.chunks), model.docs]
        meta = dict(identity, format=FORMAT, names=model.names, arrays=described, counts=counted, model=stored)
        meta["engine"] = fingerprint(index)
        write_file(fd, META, json.dumps(meta).encode())


def stamp(index: str | Path) -> None:
    """Name the engine's files as they stand now in `meta.json` (the caller knows the saved copy is the store's
    present state, holds the folder's lock and has closed the engine: nothing writes)."""
    with folder_fd(Path(index) / FOLDER) as fd:
        meta = json.loads(read_file(fd, META))
        meta["engine"] = fingerprint(index)
        write_file(fd, META, json.dumps(meta).encode())


def stored_dim(index: str | Path) -> int:
    """The embedding dimension of the read model saved beside `index`; 0 when there is none (or it cannot be read)."""
    try:
        with folder_fd(Path(index) / FOLDER) as fd:
            meta = json.loads(read_file(fd, META, 1 << 26))
        return int(meta.get("dim", 0)) if isinstance(meta, dict) else 0
    except (OSError, ValueError, TypeError):
        return 0


def load(index: str | Path, identity: dict[str, Any], dim: int) -> ReadModel | None:
    """The read model saved beside `index` (with its files' records), or None when there is none valid for `identity`
    and the engine's files as they stand (a damaged or forged copy is reported once, then left to be rebuilt)."""
    where = Path(index) / FOLDER
    if not where.is_dir():
        return None
    try:
        with folder_fd(where) as fd:
            meta = json.loads(read_file(fd, META, 1 << 26))
            if not isinstance(meta, dict) or meta.get("format") != FORMAT:
                return None
            if any(meta.get(key) != value for key, value in identity.items()):
                return None
            if meta.get("engine") != fingerprint(index):
                log.debug("the index in %s changed since its read model was saved: reading the engine", index)
                return None
            arrays = {name: _mapped(fd, name, spec) for name, spec in meta["arrays"].items() if name != "files.json"}
            listing = read_file(fd, "files.json", 1 << 30)
        spec = meta["arrays"]["files.json"]
        if zlib.crc32(listing) != spec["crc32"]:
            raise ValueError("files.json does not match its checksum")
        model = _model(arrays, [str(n) for n in meta["names"]], dim)
        files = {str(s): FileRecord(str(h), int(c), int(z), int(m)) for s, (h, c, z, m) in json.loads(listing).items()}
        model.saved_files = (str(meta.get("model", "")), files)
        model.stats = {source: (record.size, record.mtime_ns) for source, record in files.items() if record.mtime_ns}
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError, UnicodeDecodeError) as exc:
        log.warning("the saved read model in %s cannot be used (%s); rebuilding it from the index", where, exc)
        return None
    return model


def _mapped(folder: int, name: str, spec: dict[str, Any]) -> np.ndarray:
    """The array `name` memory-mapped (copy on write), checked against its dtype, shape and checksum."""
    dtype, shape = np.dtype(spec["dtype"]), tuple(int(s) for s in spec["shape"])
    if dtype.kind not in "biuf" or dtype.byteorder == ">" or dtype.hasobject:
        raise ValueError(f"{name}: dtype {dtype} is not plain data")
    fd = os.open(f"{name}.bin", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size != dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"{name}: {size} bytes, not {dtype} {shape}")
        array = np.memmap(handle, dtype=dtype, mode="c", shape=shape) if size else np.zeros(shape, dtype)
    data = np.asarray(array).view(np.ndarray)
    if zlib.crc32(_raw(data)) != spec["crc32"]:
        raise ValueError(f"{name} does not match its checksum")
    return data


def _raw(array: np.ndarray) -> memoryview:
    """The bytes of an array (C-contiguous), without a copy."""
    data = np.ascontiguousarray(array)
    return memoryview(data.data).cast("B") if data.size else memoryview(b"")


def _column(a: dict[str, np.ndarray], name: str, rows: int) -> Texts:
    blob, offsets = a[f"{name}.blob"], a[f"{name}.offsets"]
    _check(offsets.shape == (rows + 1,) and offsets.dtype == np.int64, f"{name} offsets")
    _check(rows == 0 or (offsets[0] == 0 and offsets[-1] == len(blob) and bool(np.all(np.diff(offsets) >= 0))), name)
    return Texts(blob.astype(np.uint8, copy=False), offsets)


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(f"{what} out of bounds")


def _model(a: dict[str, np.ndarray], names: list[str], dim: int) -> ReadModel:
    """A read model from checked arrays: every index into another array is within its bounds."""
    model = ReadModel(dim)
    n, nw = len(a["chunk_live"]), len(a["window_live"])
    for prefix, rows, count in (("chunk", model.chunks, n), ("window", model.windows, nw)):
        vecs, live, source = a[f"{prefix}_vecs"], a[f"{prefix}_live"], a[f"{prefix}_source"]
        _check(vecs.shape == (count, dim) and source.shape == (count,), f"{prefix} vectors")
        _check(not count or (int(source.min()) >= 0 and int(source.max()) < len(names)), f"{prefix} sources")
        rows.ids, rows.vecs = _column(a, f"{prefix}_ids", count).values(count), vecs
        rows.live, rows.source = live.astype(bool, copy=False), source.astype(np.int32)
        rows.slot = {rows.ids[s]: s for s in np.flatnonzero(rows.live).tolist()}
        _check(len(rows.slot) == int(rows.live.sum()), "ids (repeated)")
    model.names, model.sources = names, {name: code for code, name in enumerate(names)}
    owners = _column(a, "window_owner", nw)
    model.owner = owners.values(nw)
    for slot, key in enumerate(model.windows.ids):
        if model.windows.live[slot]:
            _check(model.owner[slot] in model.chunks.slot, "window owners")
            model.windows_of.setdefault(model.owner[slot], []).append(key)
    model.texts = {name: _column(a, name, n) for name in TEXTS}
    _check(a["ints"].shape == (n, len(INTS)), "ints")
    model.ints = a["ints"]
    ends, terms, weights = a["term_ends"], a["terms"], a["weights"]
    _check(ends.shape == (n,) and terms.shape == weights.shape, "terms")
    _check(n == 0 or (int(ends[-1]) == len(terms) and bool(np.all(np.diff(ends, prepend=0) >= 0))), "term ends")
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64) if n else np.zeros(0, np.int64)
    model.terms = [terms[s:e] for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]
    model.weights = [weights[s:e] for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]
    main = Postings([], [], [])
    main.slots, main.weights, main.keys = a["post_slots"], a["post_weights"], a["post_keys"]
    main.bounds = bounds = a["post_bounds"]
    _check(main.slots.shape == main.weights.shape and bounds.shape == (main.keys.size + 1,), "postings")
    _check(not main.slots.size or (int(main.slots.min()) >= 0 and int(main.slots.max()) < n), "posting slots")
    _check(bounds[0] == 0 and bounds[-1] == len(main.slots) and bool(np.all(np.diff(bounds) >= 0)), "posting ranges")
    _check(bool(np.all(np.diff(main.keys.astype(np.int64)) > 0)), "posting terms")
    model.main, model.main_upto = main, n
    return model
