"""Security and robustness over stdio: raw JSON-RPC against the real server (no client library in between).

Besides the test of a server before `initialize`, one server serves the module; each test adds its own workspace
folder (prepared before it is added) and removes it after."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from pygls.uris import from_fs_path

from memsearch_lsp.config import DEFAULT_MODEL
from memsearch_lsp.core.chunks import chunk_markdown
from tests.fakes import EmbeddingServer
from tests.helpers import EXAMPLES, SERVER, make_workspace

pytestmark = pytest.mark.asyncio(loop_scope="module")
REPLY_S = 60.0  # how long a reply may take before the test fails (a hang shows as a failure, not a stall)


def workspace_folders(paths: list[Path]) -> list[dict[str, Any]]:
    return [{"uri": from_fs_path(str(p)), "name": p.name} for p in paths]


class Raw:
    """The real server on pipes; requests and replies as plain JSON."""

    def __init__(self, proc: asyncio.subprocess.Process):
        self.proc = proc
        self.notifications: list[dict[str, Any]] = []
        self.replies: dict[Any, dict[str, Any]] = {}
        self._next = 1000
        self.bare = False  # answer the server's requests with `{"jsonrpc", "id"}` alone (a null result left out)

    @classmethod
    async def start(cls, cwd: Path, stderr: Any = asyncio.subprocess.DEVNULL) -> Raw:
        proc = await asyncio.create_subprocess_exec(
            *SERVER,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            cwd=cwd,
        )
        return cls(proc)

    def send(self, message: dict[str, Any]) -> None:
        self.write(json.dumps({"jsonrpc": "2.0", **message}).encode())

    def write(self, body: bytes, header: bytes = b"Content-Length: %d\r\n\r\n") -> None:
        """`body` as it is, framed by `header` (its %d: the body's length)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(header % len(body) + body)

    async def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        length = 0
        while True:
            line = (await self.proc.stdout.readline()).decode()
            if not line:
                raise EOFError("the server closed stdout")
            if line.lower().startswith("content-length:"):
                length = int(line.split(":")[1])
            elif line in ("\r\n", "\n") and length:
                return json.loads(await self.proc.stdout.readexactly(length))

    async def _pump(self) -> None:
        """Read one message: answer a server request with null, keep a notification or a reply."""
        message = await self._read()
        if "method" in message and "id" in message:
            self.send({"id": message["id"]} if self.bare else {"id": message["id"], "result": None})
        elif "method" in message:
            self.notifications.append(message)
        else:
            self.replies[message.get("id")] = message

    async def reply(self, msg_id: Any) -> dict[str, Any]:
        async def wait() -> dict[str, Any]:
            while msg_id not in self.replies:
                await self._pump()
            return self.replies.pop(msg_id)

        return await asyncio.wait_for(wait(), timeout=REPLY_S)

    async def request(self, method: str, params: Any) -> dict[str, Any]:
        self._next += 1
        self.send({"id": self._next, "method": method, "params": params})
        return await self.reply(self._next)

    async def initialize(self, ws: Path | None) -> None:
        """initialize + initialized, with `ws` as the workspace folder (None: no folder yet)."""
        folders = workspace_folders([ws] if ws else [])
        result = await self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": folders[0]["uri"] if ws else None,
                "capabilities": {},
                "workspaceFolders": folders,
            },
        )
        assert "result" in result, result
        self.send({"method": "initialized", "params": {}})

    def change_folders(self, added: list[Path], removed: list[Path]) -> None:
        self.send(
            {
                "method": "workspace/didChangeWorkspaceFolders",
                "params": {"event": {"added": workspace_folders(added), "removed": workspace_folders(removed)}},
            }
        )

    async def indexed(self, ws: Path | None = None) -> None:
        """Wait for the first memsearch/indexed notification (of the folder `ws` when given)."""

        def seen() -> bool:
            return any(
                n["method"] == "memsearch/indexed" and (ws is None or n["params"]["root"] == str(ws))
                for n in self.notifications
            )

        async def wait() -> None:
            while not seen():
                await self._pump()

        await asyncio.wait_for(wait(), timeout=REPLY_S * 3)

    async def stop(self) -> None:
        try:
            await self.request("shutdown", None)
            self.send({"method": "exit"})
            await asyncio.wait_for(self.proc.wait(), timeout=20)
        except (EOFError, asyncio.TimeoutError, ConnectionError):
            pass
        finally:
            if self.proc.returncode is None:
                self.proc.kill()
                await self.proc.wait()


def hover(uri: str, line: int, character: int) -> dict[str, Any]:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}


def assert_error(reply: dict[str, Any], msg_id: int | None, code: int) -> None:
    assert reply.get("id") == msg_id and "error" in reply, reply
    error = reply["error"]
    assert error["code"] == code, error
    assert "\n" not in error["message"] and "Traceback" not in error["message"] and "data" not in error, error


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Raw]:
    """The module's server, initialised without a folder."""
    server = await Raw.start(tmp_path_factory.mktemp("server"))
    try:
        await server.initialize(None)
        yield server
    finally:
        await server.stop()


@contextlib.asynccontextmanager
async def started(
    shared: Raw, tmp_path: Path, before: Callable[[Path], Any] | None = None
) -> AsyncIterator[tuple[Raw, Path]]:
    """A copy of the example memory (changed by `before`) as a folder of the shared server, indexed."""
    ws = make_workspace(tmp_path)
    if before is not None:
        before(ws)
    shared.change_folders(added=[ws], removed=[])
    try:
        await shared.indexed(ws)
        yield shared, ws
    finally:
        shared.change_folders(added=[], removed=[ws])


# -- 13. every request gets an answer ----------------------------------------------------------------
async def test_requests_before_initialize_get_server_not_initialized(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    server = await Raw.start(ws)
    try:
        server.send(
            {"id": 1, "method": "workspace/executeCommand", "params": {"command": "memsearch.reindex", "arguments": []}}
        )
        assert_error(await server.reply(1), 1, -32002)
        server.send({"id": 2, "method": "textDocument/hover", "params": hover("file:///x.md", 0, 0)})
        assert_error(await server.reply(2), 2, -32002)
        await server.initialize(ws)
        await server.indexed()
        ok = await server.request("workspace/symbol", {"query": "Redis cache config"})
        assert ok["result"][0]["name"] == "Redis Caching"
    finally:
        await server.stop()


async def test_requests_after_shutdown_and_of_another_jsonrpc_get_invalid_request(tmp_path: Path) -> None:
    """LSP: after `shutdown` every request but `exit` is answered InvalidRequest, not left unanswered; so is a
    request that is not JSON-RPC 2.0, or whose id is no number or string. `exit` still ends the process (code 0
    after shutdown)."""
    ws = make_workspace(tmp_path)
    server = await Raw.start(ws)
    try:
        await server.initialize(ws)
        await server.indexed()
        body = json.dumps({"jsonrpc": "1.0", "id": 7, "method": "workspace/symbol", "params": {"query": "x"}}).encode()
        assert server.proc.stdin is not None
        server.proc.stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        assert_error(await server.reply(7), 7, -32600)
        for bad_id in ({"a": 1}, [1], True):  # JSON-RPC: an id is a number or a string (no id to answer with)
            server.send({"id": bad_id, "method": "workspace/symbol", "params": {"query": "Redis"}})
            assert_error(await server.reply(None), None, -32600)
        assert (await server.request("shutdown", None))["result"] is None
        for method, params in [
            ("workspace/symbol", {"query": "Redis"}),
            ("textDocument/hover", hover("file:///x.md", 0, 0)),
            ("shutdown", None),
            ("no/such", {}),
        ]:
            server.send({"id": 8, "method": method, "params": params})
            assert_error(await server.reply(8), 8, -32600)
        server.send({"method": "exit"})
        assert await asyncio.wait_for(server.proc.wait(), timeout=20) == 0
    finally:
        await server.stop()


async def test_a_file_uri_naming_localhost_is_the_same_folder(tmp_path: Path) -> None:
    """RFC 8089: `file://localhost/abs/path` is `file:///abs/path` (pygls reads it as a UNC path: nothing served)."""
    ws = make_workspace(tmp_path)
    server = await Raw.start(ws)
    try:
        local = "file://localhost" + str(from_fs_path(str(ws)))[len("file://") :]
        result = await server.request(
            "initialize",
            {
                "processId": None,
                "rootUri": local,
                "capabilities": {},
                "workspaceFolders": [{"uri": local, "name": "w"}],
            },
        )
        assert "result" in result, result
        server.send({"method": "initialized", "params": {}})
        await server.indexed(ws)
        ok = await server.request("workspace/symbol", {"query": "Redis cache config"})
        assert ok["result"][0]["name"] == "Redis Caching"
    finally:
        await server.stop()


async def test_malformed_requests_get_invalid_params_with_their_ids(shared: Raw, tmp_path: Path) -> None:
    async with started(shared, tmp_path) as (server, ws):
        uri = from_fs_path(str(ws / "memory" / "MEMORY.md"))
        malformed = [
            ("textDocument/hover", "string"),
            ("workspace/symbol", None),
            ("textDocument/hover", hover(uri, -1, 0)),
            ("textDocument/definition", hover(uri, 0, -3)),
            (
                "textDocument/codeAction",
                {
                    "textDocument": {"uri": uri},
                    "context": {"diagnostics": []},
                    "range": {"start": {"line": -5, "character": 0}, "end": {"line": 0, "character": 0}},
                },
            ),
            ("memsearch/search", {"query": "redis", "topK": -4}),
            ("workspace/executeCommand", {"command": "memsearch.search", "arguments": [None]}),
            # (docs/protocol.md: params an object with a string query; these were answered [] or searched as "5")
            ("memsearch/search", None),
            ("memsearch/search", {}),
            ("memsearch/search", {"query": None, "topK": 2}),
            ("workspace/symbol", {"query": 5}),
            ("workspace/symbol", {"query": ["redis"]}),
        ]
        for n, (method, params) in enumerate(malformed, start=10):
            server.send({"id": n, "method": method, "params": params})
        for n in range(10, 10 + len(malformed)):
            assert_error(await server.reply(n), n, -32602)
        assert "query" in (await server.request("memsearch/search", {}))["error"]["message"]  # (naming the field)
        assert "query" in (await server.request("workspace/symbol", {"query": 5}))["error"]["message"]
        assert (await server.request("memsearch/search", {"query": "  "}))["result"] == []  # (blank: [], as documented)
        assert "result" in await server.request("workspace/symbol", {"query": None})  # (null: the headings, as "")
        huge = await server.request("memsearch/search", {"query": "redis cache", "topK": 10**15})
        assert 0 < len(huge["result"]) <= 1000
        ok = await server.request("workspace/symbol", {"query": "Redis cache config"})
        assert ok["result"][0]["name"] == "Redis Caching"


async def test_a_wrong_argument_or_field_is_named_at_once(shared: Raw, tmp_path: Path) -> None:
    """Misleading answers: arguments sent as a string were counted as its letters, a root that is no path was "no
    memory here in 7", a planId of another shape was looked for (seconds) then "the memory changed since", a line
    below 0 named the class that could not be built, not the field."""
    async with started(shared, tmp_path) as (server, ws):
        uri = from_fs_path(str(ws / "memory" / "MEMORY.md"))
        for method, params, said in [
            ("workspace/executeCommand", {"command": "memsearch.search", "arguments": "redis"}, "must be a list"),
            ("workspace/executeCommand", {"command": "memsearch.status", "arguments": {}}, "must be a list"),
            ("workspace/executeCommand", {"command": "memsearch.compact", "arguments": [{"root": 7}]}, "root must be"),
            ("workspace/executeCommand", {"command": "memsearch.compact", "arguments": [{"planId": "zz"}]}, "plan_id"),
            ("textDocument/hover", hover(uri, -1, 0), "params.position: Position.line"),
            ("textDocument/definition", hover(uri, 0, -3), "params.position: Position.character"),
            ("textDocument/hover", {"textDocument": {"uri": uri}}, "params.position: required field missing"),
            # (a range written backwards: the regular expression's own error was -32603 with no reason)
            ("memsearch/search", {"query": "redis", "source": "memory/[z-a].md"}, "'memory/[z-a].md' is not a valid"),
            (
                "workspace/executeCommand",
                {"command": "memsearch.search", "arguments": ["r", None, {"source": "[9-0]"}]},
                "bad character range 9-0",
            ),
        ]:
            reply = await server.request(method, params)
            assert_error(reply, server._next, -32602)
            assert said in reply["error"]["message"], (params, reply)


def names(reply: dict[str, Any]) -> list[str]:
    return [symbol["name"] for symbol in reply["result"]]


async def test_a_text_that_is_no_string_leaves_the_buffer_as_it_was(shared: Raw, tmp_path: Path) -> None:
    """(audit Y4, 3) didOpen or didChange with `"text": null` (or 5) replaced the buffer with the text "None" ("5"):
    its outline and its notes left. Such a notification is left out (said in the log), the buffer as it was."""
    async with started(shared, tmp_path) as (server, ws):
        on_disk, unsaved = (from_fs_path(str(ws / "memory" / name)) for name in ("MEMORY.md", "unsaved.md"))
        item = {"languageId": "markdown", "version": 1}
        server.send(
            {"method": "textDocument/didOpen", "params": {"textDocument": {"uri": on_disk, **item, "text": None}}}
        )
        opened = {"uri": unsaved, **item, "text": "# Kept\n\nalpha\n"}
        server.send({"method": "textDocument/didOpen", "params": {"textDocument": opened}})
        whole = {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}}}
        for version, changes in enumerate([[{"text": None}], [{**whole, "text": 5}], [{"text": "# x"}, {"text": []}]]):
            params = {"textDocument": {"uri": unsaved, "version": version + 2}, "contentChanges": changes}
            server.send({"method": "textDocument/didChange", "params": params})
        outline = await server.request("textDocument/documentSymbol", {"textDocument": {"uri": unsaved}})
        assert names(outline) == ["Kept"], outline
        outline = await server.request("textDocument/documentSymbol", {"textDocument": {"uri": on_disk}})
        assert names(outline)[:2] == ["Project Memory", "Team"], outline  # (not opened: the file on disk)


async def test_a_request_without_params_is_answered_as_one_with_them(shared: Raw) -> None:
    """(audit Y4, 4) a request of a method the server does not know, its params left out, got -32602 naming pygls'
    own class (`JsonRPCRequestMessage.__init__() missing 1 required positional argument`), not -32601; one of
    another JSON-RPC got the same, not -32600."""
    shared.send({"id": 90, "method": "no/such"})
    assert_error(await shared.reply(90), 90, -32601)
    shared.send({"jsonrpc": "1.0", "id": 91, "method": "no/such"})
    assert_error(await shared.reply(91), 91, -32600)
    shared.send({"id": 92, "method": "memsearch/search"})
    reply = await shared.reply(92)
    assert_error(reply, 92, -32602)
    assert "takes an object" in reply["error"]["message"], reply
    shared.send({"method": "no/such/notification"})
    assert "result" in await shared.request("workspace/symbol", {"query": "x"})


async def test_headers_in_another_case_spacing_or_line_end_are_read(shared: Raw) -> None:
    """pygls' reader takes only `Content-Length: N\\r\\n` byte for byte: any other spelling skipped the body, then
    read it as a header glued to the next one, and the server never answered again."""
    headers = [
        b"content-length: %d\r\n\r\n",
        b"Content-Length:%d\r\n\r\n",
        b"Content-Length: %d\n\n",
        b"CONTENT-LENGTH :\t%d \r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\n\r\n",
    ]
    for n, header in enumerate(headers, start=40):
        shared.write(
            json.dumps({"jsonrpc": "2.0", "id": n, "method": "workspace/symbol", "params": {"query": "x"}}).encode(),
            header,
        )
        assert "result" in await shared.reply(n)
    assert "result" in await shared.request("workspace/symbol", {"query": "x"})


async def test_a_frame_with_a_wrong_content_length_costs_that_frame_only(shared: Raw) -> None:
    """A Content-Length one byte short (a client counting characters: one `é`) or no number at all left the rest of
    the body glued to the next header line, which was never read as one: no request was ever answered again."""
    assert shared.proc.stdin is not None
    symbol = {"jsonrpc": "2.0", "id": 60, "method": "workspace/symbol", "params": {"query": "café"}}
    body = json.dumps(symbol, ensure_ascii=False).encode()
    shared.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % (len(body) - 1) + body)
    assert_error(await shared.reply(None), None, -32700)
    assert "result" in await shared.request("workspace/symbol", {"query": "x"})
    shared.proc.stdin.write(b"Content-Length: abc\r\n\r\n{}")
    assert "result" in await shared.request("workspace/symbol", {"query": "x"})
    assert "result" in await shared.request("workspace/symbol", {"query": "x"})
    # (a header whose name only ends in Content-Length is another header: review F, 3)
    body = json.dumps({"jsonrpc": "2.0", "id": 64, "method": "workspace/symbol", "params": {"query": "x"}}).encode()
    shared.proc.stdin.write(b"X-Original-Content-Length: 10\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    assert "result" in await shared.reply(64)


async def test_two_hundred_malformed_frames_then_a_request_is_answered(tmp_path: Path) -> None:
    """Issue 8: 200 random or malformed messages (a length too short, too long, no number or none; bytes that are no
    JSON), then valid requests: all but one the last frame's excess length swallowed are answered."""
    server = await Raw.start(tmp_path)
    try:
        await server.initialize(None)
        assert server.proc.stdin is not None
        rng = random.Random(8)
        symbol = {"jsonrpc": "2.0", "id": 0, "method": "workspace/symbol", "params": {"query": "café"}}
        request = json.dumps(symbol, ensure_ascii=False).encode()
        for _ in range(200):
            body = rng.choice([request, rng.randbytes(rng.randint(1, 60)), b"{}", b"[" * 3000])
            length = len(body) + rng.choice([-3, -1, 0, 1, 4])
            header = rng.choice([b"Content-Length: %d" % length, b"content-length:%d" % length, b"Content-Length: abc"])
            server.proc.stdin.write(rng.choice([header + b"\r\n\r\n", b"", b"\r\n"]) + body)
        for n in (61, 62, 63):
            server.send({"id": n, "method": "workspace/symbol", "params": {"query": "x"}})
        assert "result" in await server.reply(63)
        assert "result" in await server.request("workspace/symbol", {"query": "x"})
    finally:
        await server.stop()


async def test_what_is_no_jsonrpc_request_is_answered_and_never_shown(shared: Raw) -> None:
    """JSON-RPC 2.0: a body that is not JSON gets ParseError (-32700), anything that is no request InvalidRequest
    (-32600), with its id when it has one; neither pops up a server error before the user."""
    popups = len([n for n in shared.notifications if n["method"] == "window/showMessage"])
    symbol = {"id": 50, "method": "workspace/symbol", "params": {"query": "x"}}
    shared.write(json.dumps(symbol).encode())  # no "jsonrpc"
    assert_error(await shared.reply(50), 50, -32600)
    shared.write(json.dumps({"jsonrpc": "2.0", "id": 51, "params": {}}).encode())  # no method
    assert_error(await shared.reply(51), 51, -32600)
    for body, code in [
        (json.dumps([{"jsonrpc": "2.0", **symbol}]).encode(), -32600),  # a batch: LSP has none
        (b"42", -32600),
        (b"null", -32600),
        (b"{bad}", -32700),
        (b"\xff\xfe{", -32700),
        (b'{"jsonrpc": "2.0", "id": 52, "params": {"query": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}", -32700),
    ]:
        shared.write(body)
        reply = await shared.reply(None)
        assert "id" in reply and reply["error"]["code"] == code, (body, reply)
    shared.write(b'{"jsonrpc": "2.0", "id": 53, "method": 5}')  # (its method no string: no request)
    assert_error(await shared.reply(53), 53, -32600)
    assert "result" in await shared.request("workspace/symbol", {"query": "x"})
    assert len([n for n in shared.notifications if n["method"] == "window/showMessage"]) == popups


async def test_a_reply_that_leaves_its_null_result_out_is_a_reply(tmp_path: Path) -> None:
    """A client answering client/registerCapability with `{"jsonrpc", "id"}` alone got an InvalidRequest under the
    server's own request id ("a request without a method"), and the server, still waiting for that reply, never
    indexed nor answered again."""
    ws = make_workspace(tmp_path)
    server = await Raw.start(tmp_path)
    server.bare = True
    try:
        folders = workspace_folders([ws])
        watching = {"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}}}
        init = {"processId": None, "rootUri": folders[0]["uri"], "capabilities": watching, "workspaceFolders": folders}
        assert "result" in await server.request("initialize", init)
        server.send({"method": "initialized", "params": {}})
        await server.indexed(ws)
        status = await server.request("workspace/executeCommand", {"command": "memsearch.status", "arguments": []})
        assert status["result"]["roots"][0]["chunks"] > 0, status
        assert not [r for r in server.replies.values() if "error" in r], server.replies
    finally:
        await server.stop()


async def test_what_the_client_got_wrong_is_logged_on_one_line(tmp_path: Path) -> None:
    """pygls logged what the client got wrong with a traceback at ERROR level, and the server warned of each unknown
    method or command it had answered as of a message it could not read: one line says each (the answer says it
    all); each index pass is said once, not by the indexer and again by the server, to the client: stderr, which an
    editor logs as errors, gets warnings and errors only."""
    ws = make_workspace(tmp_path, examples=False)
    (ws / "memory" / "a.md").write_text("# A\n\nalpha\n")
    err = tmp_path / "stderr"
    with err.open("wb") as sink:
        server = await Raw.start(ws, stderr=sink)
        try:
            await server.initialize(ws)
            await server.indexed()
            server.send({"id": 70, "method": "textDocument/hover", "params": "string"})
            assert_error(await server.reply(70), 70, -32602)
            server.send({"id": 71, "method": "no/such", "params": {}})
            assert_error(await server.reply(71), 71, -32601)
            server.send({"id": 72, "method": "workspace/executeCommand", "params": {"command": "memsearch.nope"}})
            assert_error(await server.reply(72), 72, -32602)
            server.send({"method": "textDocument/didOpen", "params": {"textDocument": 3}})
            server.write(b"{bad}")
            assert_error(await server.reply(None), None, -32700)
            server.write(b"[" * 100_000 + b"]" * 100_000)  # (deeper than Python's JSON reader goes)
            assert_error(await server.reply(None), None, -32700)
            assert server.proc.stdin is not None
            server.proc.stdin.write(b"Content-Length: 1\r\n\r\n{}")  # (one byte short: `}` before the next header)
            assert_error(await server.reply(None), None, -32700)
            assert "result" in await server.request("workspace/symbol", {"query": "x"})
        finally:
            await server.stop()
    log = err.read_text()
    assert "Traceback" not in log and "ERROR" not in log, log
    assert len([line for line in log.splitlines() if "no LSP message" in line]) == 1, log
    told = [n["params"]["message"] for n in server.notifications if n["method"] == "window/logMessage"]
    assert not [m for m in told if "no/such" in m or "memsearch.nope" in m], told
    assert len([m for m in told if "+1 added" in m]) == 1, told
    assert " INFO " not in log and "+1 added" not in log, log  # routine lines reach the client, not stderr


async def test_an_index_that_cannot_be_used_is_one_line_request_failed_without_traceback(tmp_path: Path) -> None:
    """An index place this program may not touch (a link at `.memsearch/milvus.db`) failed every request as an
    internal error naming the exception's class path, with a traceback on stderr per request."""
    ws = make_workspace(tmp_path, examples=False)
    (ws / "memory" / "a.md").write_text("# A\n\nalpha\n")
    (ws / ".memsearch").mkdir(mode=0o700)
    (tmp_path / "elsewhere").write_text("mine")
    (ws / ".memsearch" / "milvus.db").symlink_to(tmp_path / "elsewhere")
    err = tmp_path / "stderr"
    with err.open("wb") as sink:
        server = await Raw.start(ws, stderr=sink)
        try:
            await server.initialize(ws)
            for n in (80, 81):
                server.send({"id": n, "method": "workspace/symbol", "params": {"query": "alpha"}})
                reply = await server.reply(n)
                assert_error(reply, n, -32803)
                message = reply["error"]["message"]
                assert "memsearch_lsp." not in message and "cannot open the index" in message, message
        finally:
            await server.stop()
    assert "Traceback" not in err.read_text()
    assert (tmp_path / "elsewhere").read_text() == "mine"


async def test_a_search_cancelled_during_the_first_index_leaves_stderr_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workspace/symbol cancelled while the first index ran (VS Code's Ctrl+T cancels one at each keystroke) logged
    "ERROR asyncio: _GatheringFuture exception was never retrieved" and a traceback on stderr each time (audit V)."""
    ws = make_workspace(tmp_path, examples=False)
    (ws / "memory" / "a.md").write_text("# A\n\nalpha\n")
    endpoint = EmbeddingServer()  # holds the note's embedding: the first index runs until the test releases it
    endpoint.hold = lambda texts: any("alpha" in t for t in texts)
    for name, value in {
        "MEMSEARCH_EMBEDDING_PROVIDER": "openai",
        "MEMSEARCH_EMBEDDING_BASE_URL": endpoint.url,
        "MEMSEARCH_EMBEDDING_MODEL": "fake-a",
        "MEMSEARCH_EMBEDDING_API_KEY_ENV": "",
    }.items():
        monkeypatch.setenv(name, value)
    err = tmp_path / "stderr"
    try:
        with err.open("wb") as sink:
            server = await Raw.start(ws, stderr=sink)
            try:
                await server.initialize(ws)
                await asyncio.wait_for(asyncio.to_thread(endpoint.held.wait, REPLY_S), REPLY_S)
                for n in (90, 91, 92):
                    server.send({"id": n, "method": "workspace/symbol", "params": {"query": "alph"[: n - 88]}})
                    await asyncio.sleep(0.3)
                    server.send({"method": "$/cancelRequest", "params": {"id": n}})
                    assert_error(await server.reply(n), n, -32800)
                endpoint.release()
                await server.indexed()
                assert "result" in await server.request("workspace/symbol", {"query": "alpha"})
            finally:
                await server.stop()
    finally:
        endpoint.release()
        endpoint.close()
    log = err.read_text()
    assert "never retrieved" not in log and "Traceback" not in log, log


# -- 11. LSP's line model: only CR, LF and CRLF end a line ----------------------------------------------
async def test_hover_and_edits_count_lines_like_the_client(shared: Raw, tmp_path: Path) -> None:
    head = "# Alpha\n\none\u2028two\fthree\x0bfour\x85five\n\n"
    alpha = chunk_markdown(head + "# Refs\n", "memory/u.md", model=DEFAULT_MODEL)[0]
    text = head + f"# Refs\n\nsee {alpha.id} here\n"
    async with started(shared, tmp_path, lambda ws: (ws / "memory" / "u.md").write_text(text)) as (server, ws):
        u = from_fs_path(str(ws / "memory" / "u.md"))
        found = await server.request("textDocument/hover", hover(u, 6, 6))
        assert found["result"] and "# Alpha" in found["result"]["contents"]["value"], found
        definition = await server.request("textDocument/definition", hover(u, 6, 6))
        assert definition["result"]["range"]["start"]["line"] == 0
        # An incremental edit after those characters lands where the client put it.
        server.send(
            {
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {
                        "uri": u,
                        "languageId": "markdown",
                        "version": 1,
                        "text": text.replace(alpha.id, "x"),
                    }
                },
            }
        )
        server.send(
            {
                "method": "textDocument/didChange",
                "params": {
                    "textDocument": {"uri": u, "version": 2},
                    "contentChanges": [
                        {
                            "text": alpha.id,
                            "range": {"start": {"line": 6, "character": 4}, "end": {"line": 6, "character": 5}},
                        }
                    ],
                },
            }
        )
        again = await server.request("textDocument/hover", hover(u, 6, 6))
        assert again["result"] and "# Alpha" in again["result"]["contents"]["value"], again


# -- 3. a URI is normalised once and confined ------------------------------------------------------------
async def test_an_encoded_uri_never_reads_a_file_outside(shared: Raw, tmp_path: Path) -> None:
    alpha = chunk_markdown((EXAMPLES / "MEMORY.md").read_text(), "memory/MEMORY.md", model=DEFAULT_MODEL)[0]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "ids.txt").write_text(f"{alpha.id}\n")
    async with started(shared, tmp_path) as (server, ws):
        inside = ws / "memory" / "ids.md"
        inside.write_text(f"{alpha.id}\n")
        control = await server.request("textDocument/hover", hover(from_fs_path(str(inside)), 0, 3))
        assert control["result"], control  # the id resolves when the file is inside
        base = from_fs_path(str(outside))
        server.send(
            {
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {
                        "uri": f"{base}/ids.tx%2574",
                        "languageId": "markdown",
                        "version": 1,
                        "text": "nothing\n",
                    }
                },
            }
        )
        for trick in (
            f"{base}/ids.tx%74",
            f"{base}/ids.txt",
            f"{base}/../outside/ids.txt",
            f"{from_fs_path(str(ws))}/../outside/ids.txt",
        ):
            leaked = await server.request("textDocument/hover", hover(trick, 0, 3))
            assert leaked.get("result") is None, (trick, leaked)


# -- 4. a FIFO never blocks the server -------------------------------------------------------------------
async def test_a_fifo_in_the_memory_folder_blocks_nothing(shared: Raw, tmp_path: Path) -> None:
    async with started(shared, tmp_path, lambda ws: os.mkfifo(ws / "memory" / "pipe.md")) as (server, ws):
        pipe = from_fs_path(str(ws / "memory" / "pipe.md"))
        assert (await server.request("textDocument/hover", hover(pipe, 0, 0))).get("result") is None
        assert (await server.request("textDocument/documentSymbol", {"textDocument": {"uri": pipe}}))["result"] == []
        ok = await server.request("workspace/symbol", {"query": "Redis cache config"})
        assert ok["result"][0]["name"] == "Redis Caching"


# -- 5. memsearch.today refuses a log outside the workspace -------------------------------------------------
async def test_today_command_refuses_a_log_outside(shared: Raw, tmp_path: Path) -> None:
    async with started(
        shared, tmp_path, lambda ws: (ws / ".memsearch.toml").write_text('[memory]\npaths = ["../outside", "memory"]\n')
    ) as (server, _):
        reply = await server.request("workspace/executeCommand", {"command": "memsearch.today", "arguments": []})
        assert "error" in reply and "outside the workspace" in reply["error"]["message"], reply
        assert not (tmp_path / "outside").exists()
