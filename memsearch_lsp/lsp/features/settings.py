"""The editor's settings as they change: read at start-up (initializationOptions, then workspace/configuration),
pushed or changed later (workspace/didChangeConfiguration), and applied to each root (its memory reconfigured, its
folders watched again and re-indexed when what is indexed changed)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

from memsearch_lsp.config import editor_key, flat_settings
from memsearch_lsp.lsp.convert import options_from
from memsearch_lsp.lsp.features.watch import watch
from memsearch_lsp.trust import USER_ONLY_SETTINGS

if TYPE_CHECKING:
    from memsearch_lsp.lsp.server import MemsearchServer

log = logging.getLogger(__name__)


async def load_settings(ls: MemsearchServer) -> None:
    """initializationOptions, then workspace/configuration (section `memsearch`) when supported: one item for the
    window, then one for each workspace folder (its scopeUri), whose answer applies to its root (MemsearchServer
    .settings_of), the settings only the user sets excepted (the window's stay)."""
    workspace = ls.client_capabilities.workspace
    if not (workspace and workspace.configuration):
        return
    folders = list(ls.workspace.folders.values())
    items = [types.ConfigurationItem(section="memsearch")]
    items += [types.ConfigurationItem(section="memsearch", scope_uri=folder.uri) for folder in folders]
    try:
        result = await asyncio.wait_for(
            ls.workspace_configuration_async(types.ConfigurationParams(items=items)), timeout=5
        )
    except Exception as exc:
        log.debug("workspace/configuration failed: %s", exc)
        return
    answers = list(result or [])
    if answers and isinstance(answers[0], dict):  # complete; `{}` (lsp-mode's for a section it does not hold): the
        ls.overrides = options_from(answers[0]) or ls.init_options  # start-up options or the last push stay
    ls.scoped = {  # (a folder answered `{}` or nothing: the window's settings are its)
        Path(to_fs_path(folder.uri) or "").resolve(): folder_settings(ls.overrides, own)
        for folder, answer in zip(folders, answers[1:])
        if (own := options_from(answer))
    }


def folder_settings(window: dict[str, Any], folder: dict[str, Any]) -> dict[str, Any]:
    """A folder's own settings, with the window's values of the settings only the user sets (where the memory,
    secrets or the index go: VS Code's `machine` scope), whatever the folder's answer says of them."""
    own = [(key, value) for key, value in flat_settings(folder) if editor_key(key) not in USER_ONLY_SETTINGS]
    users = [(key, value) for key, value in flat_settings(window) if editor_key(key) in USER_ONLY_SETTINGS]
    return dict(own + users)


async def apply_settings(ls: MemsearchServer) -> None:
    """Ask the client for the settings (when it answers) and apply them to every root."""
    await load_settings(ls)
    for root in list(ls.roots.values()):
        config = ls.settings_of(root.path)
        await ls.follow(root, config)
        heavy = await ls.in_writer(root.door.reconfigure, config)
        if heavy:
            await watch(ls, root)
            ls.background(ls.reconcile(root, title="Re-indexing memory"), f"re-indexing {root.path.name}")


def register(server: MemsearchServer) -> None:
    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def on_configuration(ls: MemsearchServer, params: types.DidChangeConfigurationParams) -> None:
        pushed = params.settings  # (none, or none of ours: the client is asked)
        if isinstance(pushed, dict) and ("memsearch" in pushed or options_from(pushed)):
            ls.init_options = ls.overrides = options_from(pushed)  # complete: a setting the user removed is gone
        await apply_settings(ls)
