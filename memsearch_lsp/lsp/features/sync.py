"""Document sync (open/change/save/close, debounced) and the changes watched files report (features/watch.py: what
is watched); a change of a workspace's `.memsearch.toml` reloads the settings."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import to_fs_path

from memsearch_lsp.config import CONFIG_FILE
from memsearch_lsp.core.files import MAX_FILE_BYTES
from memsearch_lsp.core.onboard import find_workspace
from memsearch_lsp.lsp.features.forward import forwarded
from memsearch_lsp.lsp.features.settings import apply_settings, load_settings
from memsearch_lsp.lsp.features.watch import WHOLE_FOLDER, stale, unwatch, watch, watch_bare

if TYPE_CHECKING:
    from memsearch_lsp.lsp.server import MemsearchServer, Root

log = logging.getLogger(__name__)


def _bump(ls: MemsearchServer, root: Root, source: str) -> int:
    key = (root.path, source)
    ls.generations[key] = ls.generations.get(key, 0) + 1
    return ls.generations[key]


async def index_buffer(ls: MemsearchServer, uri: str) -> None:
    """Index the open buffer's current text (the truth for its file while it is open)."""
    found = ls.locate_memory(uri)
    if found is None:
        return
    root, source = found
    await root.ready.wait()
    text = ls.open_text(uri)
    if text is None:  # closed meanwhile: didClose re-reads the disk
        return
    if oversized(text):  # as a file on disk: skipped, said once; the index keeps what it had for the file
        ls.warn(
            f"{source}: not indexed: the buffer is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB "
            "(files over that size are skipped)"
        )
        return

    async def send() -> None:  # (the buffer as it is when sent: one closed meanwhile is re-read from disk by didClose)
        if (now := ls.open_text(uri)) is not None:
            await ls.write(root, "index_text", source, now)

    await forwarded(ls, root, source, send)


def oversized(text: str) -> bool:
    """The buffer is over the file size cap (files.MAX_FILE_BYTES) in UTF-8, counted without a copy when the
    character count decides it."""
    if len(text) > MAX_FILE_BYTES:
        return True
    if 4 * len(text) <= MAX_FILE_BYTES:
        return False
    return len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES


async def debounced(ls: MemsearchServer, root: Root, source: str, uri: str, generation: int) -> None:
    await asyncio.sleep(root.config.watch.debounce_ms / 1000)
    if ls.generations.get((root.path, source)) == generation:  # a later edit cancels this pass
        await index_buffer(ls, uri)


def index_now(ls: MemsearchServer, uri: str, what: str) -> None:
    """Index a buffer at once (open, save), cancelling any debounced pass for it."""
    found = ls.locate_memory(uri)
    if found:
        _bump(ls, *found)
        ls.background(index_buffer(ls, uri), what)


def register(server: MemsearchServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: MemsearchServer, params: types.DidOpenTextDocumentParams) -> None:
        index_now(ls, params.text_document.uri, "indexing an opened file")

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: MemsearchServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        found = ls.locate_memory(uri)
        if found:
            generation = _bump(ls, *found)
            ls.background(debounced(ls, *found, uri, generation), "indexing an edit")

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: MemsearchServer, params: types.DidSaveTextDocumentParams) -> None:
        if settings_file(ls, params.text_document.uri):
            ls.background(apply_settings(ls), "applying the changed settings")
        else:
            index_now(ls, params.text_document.uri, "indexing a saved file")

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls: MemsearchServer, params: types.DidCloseTextDocumentParams) -> None:
        found = ls.locate_memory(params.text_document.uri)
        if found:
            root, source = found
            _bump(ls, root, source)
            await root.ready.wait()
            again = functools.partial(ls.write, root, "index_file", source)
            ls.background(forwarded(ls, root, source, again), "re-reading a closed file")

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def did_change_watched(ls: MemsearchServer, params: types.DidChangeWatchedFilesParams) -> None:
        touched: dict[Path, list[str]] = {}
        changes = [change for change in params.changes if not settings_file(ls, change.uri)]
        if len(changes) < len(params.changes):
            ls.background(apply_settings(ls), "applying the changed settings")
        for change in changes:
            found = ls.locate(change.uri)
            if found is None:
                if (linked := _named_in(ls, change.uri)) is not None:  # a file of a root made a link out of it: read
                    touched.setdefault(linked.path, []).append(WHOLE_FOLDER)  # again, its old text leaves the index
                continue
            root, source = found
            if whole_folder(change.type, root.path / source, root.memory.is_memory(source)):
                touched.setdefault(root.path, []).append(WHOLE_FOLDER)  # watchers report the folder, not its files
                continue
            if change.type == types.FileChangeType.Created and not root.memory.is_memory(source):
                continue  # another kind of file created in a memory folder
            touched.setdefault(root.path, []).append(source)
        named = [path for change in params.changes if (path := _path_of(change.uri)) is not None]
        for root in list(ls.roots.values()):
            if stale(root, named):  # its memory folder went or came: watched again, then read whole
                touched.pop(root.path, None)
                ls.background(_watch_again(ls, root), "watching a memory folder again")
        for path, sources in touched.items():
            root = ls.roots[path]
            ls.background(_reindex(ls, root, sources), "indexing changed files")

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_folders(ls: MemsearchServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        if params.event.added:
            await load_settings(ls)  # the added folders' own settings
        await start_roots(ls, removed=params.event.removed)


def _path_of(uri: str) -> Path | None:
    """The path a file: URI names, links not followed."""
    path = to_fs_path(uri) if uri.startswith("file:") else None
    return Path(os.path.normpath(path)) if path else None


def _named_in(ls: MemsearchServer, uri: str) -> Root | None:
    """The root whose folder names `uri`'s path, links not followed (`locate` follows them)."""
    named = _path_of(uri)
    return next((r for r in ls.roots.values() if named is not None and r.path in named.parents), None)


def settings_file(ls: MemsearchServer, uri: str) -> bool:
    """`uri` is a root's own `.memsearch.toml`: its change is new settings, applied as a didChangeConfiguration's
    (told without the root's memory: one its settings keep shut opens with the file fixed)."""
    path = to_fs_path(uri) if uri.startswith("file:") else None
    return bool(path) and Path(path or "").name == CONFIG_FILE and Path(path or "").resolve().parent in ls.roots


async def start_roots(ls: MemsearchServer, removed: Sequence[types.WorkspaceFolder] = ()) -> None:
    """Close the roots of removed folders; open a Root for each new memory folder, watch it and start its
    first index pass. One change at a time: a removal and an addition sent back to back would open the added
    folder's index twice, and a folder added while `initialized` runs would be watched and indexed twice."""
    async with ls.folders_changing:
        for folder in removed:
            path = Path(to_fs_path(folder.uri) or "").resolve()
            root = ls.roots.pop(path, None)
            if root is None:  # a folder inside a workspace: close that workspace unless another folder uses it
                served = find_workspace(path) if path.is_dir() else None
                kept = [Path(to_fs_path(f.uri) or "").resolve() for f in ls.workspace.folders.values()]
                if served in ls.roots and not any(k == served or served in k.parents for k in kept):
                    root = ls.roots.pop(served)
            if root is not None:
                await unwatch(ls, root)
                ls.close_root(root)
        started = set(ls.roots)
        await ls.open_roots(root_path=not removed)  # the folder removed was the root: it stays closed
        for path, root in list(ls.roots.items()):
            if path not in started:
                await watch(ls, root)
                ls.background(ls.reconcile(root), f"indexing {root.path.name}")
        await watch_bare(ls)


def whole_folder(kind: types.FileChangeType, path: Path, memory_file: bool) -> bool:
    """The event reports a folder, not a file: a deleted path that is no memory file (it may have been a folder),
    or a created path that is a folder (a folder moved in reports only itself, not the files in it)."""
    if kind == types.FileChangeType.Deleted:
        return not memory_file
    return kind == types.FileChangeType.Created and path.is_dir()


async def _watch_again(ls: MemsearchServer, root: Root) -> None:
    """Ask the client to watch the root's memory folders as they are now, then read them whole (what was written
    before the client watched the folder that came back is read by this pass)."""
    await watch(ls, root)
    await _reindex(ls, root, [WHOLE_FOLDER])


async def _reindex(ls: MemsearchServer, root: Root, sources: list[str]) -> None:
    await root.ready.wait()
    if len(sources) > 20 or WHOLE_FOLDER in sources:
        again = functools.partial(ls.reconcile, root, title="Indexing changed files")
        await forwarded(ls, root, WHOLE_FOLDER, again)
        return
    for source in dict.fromkeys(sources):
        await forwarded(ls, root, source, functools.partial(_read_again, ls, root, source))


async def _read_again(ls: MemsearchServer, root: Root, source: str) -> None:
    """A file changed on disk: read it again, unless it is there and an open buffer with changes not on disk is the
    truth for it (in any window: a file deleted leaves the index, its buffer with it; an unmodified buffer is its file,
    never an overlay: `Memory.index_text`)."""
    if root.memory.path_of(source).exists() and await ls.read(root.memory.has_overlay, source):
        return
    if root.memory.is_memory(source) or await ls.read(root.memory.is_indexed, source):
        await ls.write(root, "index_file", source)
