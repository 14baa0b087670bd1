"""Helpers for end-to-end tests: start the real server over stdio with a client profile."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import shutil
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "memory"
SERVER = [sys.executable, "-m", "memsearch_lsp", "serve"]
CLIENTS = ["neovim@v0.11.0", "visual_studio_code"]


#: The servers' "today" (clock seam): never one of the example logs' dates, whatever day the tests run.
TODAY = "2026-03-15"


def config() -> ClientServerConfig:
    return ClientServerConfig(server_command=SERVER, server_env={**os.environ, "MEMSEARCH_NOW": f"{TODAY}T10:00"})


def uri(path: Path) -> str:
    return from_fs_path(str(path)) or ""


def make_workspace(base: Path, examples: bool = True) -> Path:
    ws = base / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    if examples:
        shutil.copytree(EXAMPLES, ws / "memory")
    else:
        (ws / "memory").mkdir()
    return ws


class Session:
    """A started client with the indexed notifications it received. A session made by `add_folder` is one
    workspace folder of a shared server: it sees the memsearch/indexed notifications of that folder only."""

    def __init__(self, client: LanguageClient, workspace: Path, profile: str):
        self.client, self.workspace, self.profile = client, workspace, profile
        self.root: str | None = None  # the folder this session is about, on a shared server
        self._indexed: list[dict[str, Any]] = []
        self.registrations: list[types.Registration] = []
        self.edits: list[types.ApplyWorkspaceEditParams] = []
        self.encoding = "utf-16"

        @client.feature("memsearch/indexed")
        def on_indexed(params: Any) -> None:
            self._indexed.append(params if isinstance(params, dict) else params._asdict())

        @client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def on_register(params: types.RegistrationParams) -> None:
            self.registrations.extend(params.registrations)

        @client.feature(types.CLIENT_UNREGISTER_CAPABILITY)
        def on_unregister(params: types.UnregistrationParams) -> None:
            return None

    @property
    def indexed(self) -> list[dict[str, Any]]:
        return [n for n in self._indexed if self.root is None or n.get("root") == self.root]

    async def start(self, capabilities: types.ClientCapabilities, settings: dict[str, Any] | None = None,
                    folders: list[Path] | None = None) -> types.InitializeResult:
        """initialize + initialized; `folders=[]` starts a server without any workspace folder."""
        folders = [self.workspace] if folders is None else folders
        self.client._configuration = {"": {}, "memsearch": settings or {}}
        result = await self.client.initialize_session(types.InitializeParams(
            capabilities=capabilities, root_uri=uri(folders[0]) if folders else None,
            workspace_folders=[workspace_folder(f) for f in folders],
            initialization_options={"memsearch": settings or {}}))
        self.encoding = str(result.capabilities.position_encoding or "utf-16")
        return result

    async def wait_indexed(self, count: int = 1, timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while len(self.indexed) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {len(self.indexed)} memsearch/indexed notifications")
            await asyncio.sleep(0.05)
        return self.indexed[count - 1]

    async def symbols(self, query: str) -> list[types.WorkspaceSymbol]:
        result = await self.client.workspace_symbol_async(types.WorkspaceSymbolParams(query=query))
        return list(result or [])  # type: ignore[arg-type]

    async def until_symbol(self, query: str, name: str, timeout: float = 30.0) -> types.WorkspaceSymbol:
        deadline = time.monotonic() + timeout
        while True:
            found = [s for s in await self.symbols(query) if s.name == name]
            if found:
                return found[0]
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name!r} never found for {query!r}")
            await asyncio.sleep(0.2)

    def open(self, path: Path, text: str | None = None, version: int = 1) -> str:
        doc_uri = uri(path)
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=doc_uri, language_id="markdown", version=version,
            text=path.read_text() if text is None else text)))
        return doc_uri

    def units(self, text: str) -> int:
        """Length of `text` in the negotiated position encoding."""
        if "8" in self.encoding:
            return len(text.encode("utf-8"))
        if "32" in self.encoding:
            return len(text)
        return len(text.encode("utf-16-le")) // 2


def workspace_folder(path: Path) -> types.WorkspaceFolder:
    return types.WorkspaceFolder(uri=uri(path), name=path.name)


def capabilities(profile: str, dynamic_watch: bool | None = None) -> types.ClientCapabilities:
    caps = client_capabilities(profile)
    if dynamic_watch is not None:
        caps.workspace = caps.workspace or types.WorkspaceClientCapabilities()
        caps.workspace.did_change_watched_files = types.DidChangeWatchedFilesClientCapabilities(
            dynamic_registration=dynamic_watch, relative_pattern_support=dynamic_watch)
    return caps


def send_raw(client: LanguageClient, message: dict[str, Any] | bytes) -> None:
    """Write a JSON-RPC message as is, bypassing the client's type checks (for malformed input)."""
    import json

    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    client.protocol.writer.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)  # type: ignore[union-attr]


async def open_session(client: LanguageClient, workspace: Path, settings: dict[str, Any],
                       caps: types.ClientCapabilities | None = None, wait: int = 1,
                       folders: list[Path] | None = None) -> Session:
    """Initialise a pytest-lsp client (its `profile` is set by the fixtures in conftest.py) and wait for the
    first index passes."""
    profile: str = client.profile  # type: ignore[attr-defined]
    session = Session(client, workspace, profile)
    await session.start(caps or capabilities(profile), settings, folders=folders)
    await session.wait_indexed(wait)
    return session


# -- one server per module, one workspace folder per test -------------------------------------------
async def start_shared(client: LanguageClient, settings: dict[str, Any]) -> Session:
    """Initialise a module's shared server without any folder: each test adds its own (`added_folder`)."""
    profile: str = client.profile  # type: ignore[attr-defined]
    session = Session(client, Path(), profile)
    await session.start(capabilities(profile), settings, folders=[])
    return session


@contextlib.asynccontextmanager
async def added_folder(server: Session, workspace: Path) -> AsyncIterator[Session]:
    """`workspace` added to the shared server as an editor adds a folder (its own index, watcher and first
    index pass in the running process), and removed after. The session seen inside is about this folder:
    it counts the memsearch/indexed notifications of this folder only."""
    session = copy.copy(server)  # the same client and recorded lists
    session.workspace, session.root = workspace, str(workspace.resolve())
    change = server.client.workspace_did_change_workspace_folders
    change(types.DidChangeWorkspaceFoldersParams(event=types.WorkspaceFoldersChangeEvent(
        added=[workspace_folder(workspace)], removed=[])))
    try:
        await session.wait_indexed(1)
        yield session
    finally:
        change(types.DidChangeWorkspaceFoldersParams(event=types.WorkspaceFoldersChangeEvent(
            added=[], removed=[workspace_folder(workspace)])))


async def hover_text(session: Session, doc: str, line: int, character: int) -> str:
    """The hover's Markdown at a position, or "" when the server has none."""
    result = await session.client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=doc), position=types.Position(line=line, character=character)))
    if result is None:
        return ""
    assert isinstance(result.contents, types.MarkupContent)
    return result.contents.value


async def wait_for(condition: Any, what: str, timeout: float = 30.0) -> None:
    """Wait until `condition()` holds (an event the server caused), failing after `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


# -- sessions started by hand (several windows, kill -9) --------------------------------------------
FAST = {"watch": {"debounceMs": 200, "pollIntervalMs": 1000}}


async def start(workspace: Path, profile: str = "visual_studio_code") -> Session:
    client = LanguageClient()
    for method, handler in DEFAULT_CLIENT_FEATURES.items():
        client.feature(method)(handler)
    await client.start_io(*SERVER)
    session = Session(client, workspace, profile)
    await session.start(capabilities(profile), FAST)
    return session


async def stop(session: Session) -> None:
    try:
        await asyncio.wait_for(session.client.shutdown_session(), timeout=20)
    finally:
        await session.client.stop()


def server_pid(session: Session) -> int:
    return session.client._server.pid  # type: ignore[union-attr]
