"""Watching the memory folders (and the workspace's settings file): the client watches them (dynamic registration of
workspace/didChangeWatchedFiles), else the server polls them."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import from_fs_path

from memsearch_lsp.config import CONFIG_FILE
from memsearch_lsp.core.files import SUFFIXES, changed_ns, memory_folders
from memsearch_lsp.core.onboard import memory_markers
from memsearch_lsp.lsp.features.forward import forwarded

if TYPE_CHECKING:
    from memsearch_lsp.lsp.server import MemsearchServer, Root

log = logging.getLogger(__name__)
UNREGISTER_S = 5.0  # a client that never answers an unregistration holds up no folder change longer
WHOLE_FOLDER = ""  # a folder deleted or created (moved in or out) whole: a pass over the root follows it


def _dynamic(ls: MemsearchServer) -> tuple[bool, bool]:
    workspace = ls.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace else None
    if watched is None or not watched.dynamic_registration:
        return False, False
    return True, bool(watched.relative_pattern_support)


async def watch(ls: MemsearchServer, root: Root) -> None:
    """Ask the client to watch the memory folders (again: the registration it had is withdrawn); poll them when it
    cannot. One at a time: two asked at once would leave the client one registration the server never withdraws."""
    async with root.watching:
        dynamic, relative = _dynamic(ls)
        await unwatch(ls, root)
        if not dynamic:
            root.poller = asyncio.ensure_future(poll(ls, root))
            return
        root.watched = present(root.path, root.config.memory.paths)
        try:
            root.registration = await _register(ls, watchers(root.path, root.config.memory.paths, relative))
        except Exception as exc:
            log.warning("the editor refused to watch files (%s); polling instead", exc)
            root.poller = asyncio.ensure_future(poll(ls, root))


def stale(root: Root, named: Sequence[Path]) -> bool:
    """The client must be asked again to watch the root: an event `named` one of its memory folders or a folder above
    one (deleted or created whole: `git checkout` of a branch without it and back, `git stash -u`; a client stops
    watching under a folder deleted, and never starts under the one that comes back), or the memory folders there
    are not those it was asked to watch (it may report nothing but `.memsearch.toml`)."""
    if not root.registration:  # (polled, or not watched yet)
        return False
    paths = root.config.memory.paths
    return (
        any(root.path / folder in named for folder in anchors(root.path, paths))
        or present(root.path, paths) != root.watched
    )


async def watch_bare(ls: MemsearchServer) -> None:
    """Ask the client to watch the workspace folders with no memory for what would make them one (a memory folder
    or `.memsearch.toml` created: `memsearch-lsp init`); its event opens them (`MemsearchServer.open_woken`), as
    does any request when the client cannot watch."""
    dynamic, relative = _dynamic(ls)
    await _unregister(ls, ls.bare_watch)
    ls.bare_watch = ""
    if not dynamic or not ls.bare:
        return
    found = [
        _watcher(path, marker.strip("/"), relative, types.WatchKind.Create)
        for path, config in ls.bare.items()
        for marker in memory_markers(config)
    ]
    try:
        ls.bare_watch = await _register(ls, found)
    except Exception as exc:  # (the next request opens a folder made a memory)
        log.debug("the editor refused to watch the folders with no memory: %s", exc)


async def _register(ls: MemsearchServer, found: list[types.FileSystemWatcher]) -> str:
    """Register `found` with the client; the registration's id."""
    registration = f"memsearch-watch-{uuid.uuid4().hex[:12]}"  # never one a removed folder's may still hold
    await ls.client_register_capability_async(
        types.RegistrationParams(
            registrations=[
                types.Registration(
                    id=registration,
                    method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                    register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=found),
                )
            ]
        )
    )
    return registration


async def _unregister(ls: MemsearchServer, registration: str) -> None:
    if not registration:
        return
    unregistration = types.Unregistration(id=registration, method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    try:
        unregister = ls.client_unregister_capability_async(
            types.UnregistrationParams(unregisterations=[unregistration])
        )
        await asyncio.wait_for(unregister, UNREGISTER_S)
    except Exception as exc:
        log.debug("unregister failed: %s", exc)


async def unwatch(ls: MemsearchServer, root: Root) -> None:
    """Withdraw the root's watcher: unregister it with the client, or stop polling."""
    registration, root.registration = root.registration, ""
    await _unregister(ls, registration)
    if root.poller:
        root.poller.cancel()
        root.poller = None


def _watcher(base: Path, pattern: str, relative: bool, kind: int | None = None) -> types.FileSystemWatcher:
    """`pattern` under `base`: a RelativePattern rooted there (where a client that watches folders, Neovim on
    Linux, starts), else a plain glob."""
    glob: types.GlobPattern = (
        types.RelativePattern(base_uri=from_fs_path(str(base)) or str(base), pattern=pattern)
        if relative
        else f"{base.as_posix()}/{pattern}"
    )
    return types.FileSystemWatcher(glob_pattern=glob, kind=kind)


def _where(workspace: Path, entry: str) -> tuple[Path, str]:
    """The folder a memory path is watched under, and the one Markdown file it names ('': a memory folder)."""
    base = workspace / entry
    if base.name.endswith(SUFFIXES) and not base.is_dir():  # a memory path may name one Markdown file
        return base.parent, base.name
    return base, ""


def present(workspace: Path, paths: Sequence[str]) -> frozenset[Path]:
    """The folders of the memory paths that are there (a client watches under those only)."""
    return frozenset(folder for folder, _ in (_where(workspace, entry) for entry in paths) if folder.is_dir())


def anchors(workspace: Path, paths: Sequence[str]) -> list[str]:
    """The workspace-relative folders whose deletion or creation takes a memory path's folder with it: that folder
    and each one above it in the workspace (`docs/log`: `docs`, `docs/log`)."""
    found: dict[str, None] = {}
    for entry in paths:
        folder = Path(os.path.normpath(_where(workspace, entry)[0]))
        parts = folder.relative_to(workspace).parts if folder.is_relative_to(workspace) else ()
        found.update((Path(*parts[: n + 1]).as_posix(), None) for n in range(len(parts)))
    return list(found)


def watchers(workspace: Path, paths: Sequence[str], relative: bool) -> list[types.FileSystemWatcher]:
    """What a client watches for a root: the Markdown files (every suffix the indexer reads) under each memory
    folder, a memory path that names one file, and any creation or deletion under a memory folder (a folder moved
    in or out, or deleted whole, reports only itself), rooted at the memory folder (or a file's folder) when it is
    there; and, rooted at the workspace (whose watch outlives them), the creation or deletion of each memory path's
    folder and the folders above it: the server asks again then (`stale`), so the client watches the folder that
    came back."""
    found = []
    for entry in paths:
        folder, name = _where(workspace, entry)
        if not folder.is_dir():  # (a client cannot watch under it; asked again when it comes)
            continue
        if name:
            found.append(_watcher(folder, name, relative))
            continue
        found += [_watcher(folder, f"**/*{suffix}", relative) for suffix in SUFFIXES]
        found.append(_watcher(folder, "**", relative, types.WatchKind.Create | types.WatchKind.Delete))
    moved = types.WatchKind.Create | types.WatchKind.Delete
    found += [_watcher(workspace, folder, relative, moved) for folder in anchors(workspace, paths)]
    return [*found, _watcher(workspace, CONFIG_FILE, relative)]  # (its settings: features/sync.py reloads them)


def snapshot(root: Root) -> dict[str, tuple[int, int]]:
    """The change stamp (`files.changed_ns`) and size of every Markdown file under the memory folders."""
    state: dict[str, tuple[int, int]] = {}
    for base in memory_folders(root.path, root.config)[0]:
        for folder, _, names in os.walk(base):
            for name in names:
                if name.endswith(SUFFIXES):
                    path = os.path.join(folder, name)
                    try:
                        st = os.stat(path)
                    except OSError:
                        continue
                    state[path] = (changed_ns(st), st.st_size)
    return state


async def poll(ls: MemsearchServer, root: Root) -> None:
    """The fallback watcher: a scan of change stamps every `watch.poll_interval_ms`. The first scan is taken before
    the first index pass ends (not after), so a file written just after that pass is still a change."""
    before = await asyncio.to_thread(snapshot, root)
    await root.ready.wait()
    while True:
        await asyncio.sleep(max(0.1, root.config.watch.poll_interval_ms / 1000))
        try:
            now = await asyncio.to_thread(snapshot, root)
        except Exception as exc:  # pragma: no cover - a vanished folder
            log.debug("poll failed: %s", exc)
            continue
        if now != before:
            before = now
            try:
                await forwarded(ls, root, WHOLE_FOLDER, functools.partial(ls.write, root, "index"))
            except Exception as exc:
                ls.report(f"indexing changed files failed: {exc}", exc)
