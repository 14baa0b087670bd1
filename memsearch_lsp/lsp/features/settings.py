"""The editor's settings as they change: read at start-up (initializationOptions, then workspace/configuration),
pushed or changed later (workspace/didChangeConfiguration), and applied to each root (its memory reconfigured, its
folders watched again and re-indexed when what is indexed changed)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from memsearch_lsp.config import Config, editor_key
from memsearch_lsp.core.process.owner import OwnerGone
from memsearch_lsp.core.workspace import index_settings_changed
from memsearch_lsp.lsp.convert import options_from
from memsearch_lsp.lsp.features.watch import watch

if TYPE_CHECKING:
    from memsearch_lsp.lsp.server import MemsearchServer, Root

log = logging.getLogger(__name__)


async def load_settings(ls: MemsearchServer) -> None:
    """initializationOptions, then workspace/configuration (section `memsearch`) when supported."""
    workspace = ls.client_capabilities.workspace
    if not (workspace and workspace.configuration):
        return
    try:
        items = [types.ConfigurationItem(section="memsearch")]
        result = await asyncio.wait_for(
            ls.workspace_configuration_async(types.ConfigurationParams(items=items)), timeout=5
        )
    except Exception as exc:
        log.debug("workspace/configuration failed: %s", exc)
        return
    if result and isinstance(result[0], dict):  # complete; `{}` (lsp-mode's for a section it does not hold): the
        ls.overrides = options_from(result[0]) or ls.init_options  # start-up options or the last push stay


async def refuse_index_settings(ls: MemsearchServer, root: Root, config: Config) -> None:
    """In a window that is the index owner's client, the settings that shape the index (what is
    indexed, how, where) cannot change: say so once, naming the owner; the rest still apply here."""
    if root.door.current is None or not root.memory.remote:
        return
    refused = index_settings_changed(root.memory.config, config)
    if refused:
        try:
            owner = await asyncio.to_thread(root.memory.owner_process)
        except (OwnerGone, OSError, RuntimeError):
            owner = "another process"
        ls.warn(
            f"{root.path.name}: {', '.join(editor_key(k) for k in refused)} cannot change in this window: "
            f"the index is owned by {owner}, whose settings for them stay in force (search, watch and "
            f"compaction settings do apply here). Change them there, or close it and reload this window.",
            show=config.lsp.show_notifications,
        )


async def apply_settings(ls: MemsearchServer) -> None:
    """Ask the client for the settings (when it answers) and apply them to every root."""
    await load_settings(ls)
    for root in list(ls.roots.values()):
        config = ls.settings_of(root.path)
        await refuse_index_settings(ls, root, config)
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
