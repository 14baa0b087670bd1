"""`memsearch-lsp mcp` end to end: a subprocess driven by the mcp SDK's stdio client, alone and beside a server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from memsearch_lsp.core.search.hybrid import ChunkData, HitData
from tests.helpers import make_workspace, server_pid, start, stop

pytestmark = [pytest.mark.model, pytest.mark.slow]
NOW = "2026-12-03T09:41"
TOOLS = {"memory_search", "memory_expand", "memory_recent", "memory_remember", "memory_forget", "memory_status"}


@asynccontextmanager
async def mcp_session(ws: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memsearch_lsp", "mcp", "--workspace", str(ws)],
        env={**os.environ, "MEMSEARCH_NOW": NOW},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        info = await session.initialize()
        assert info.server_info.name == "memsearch"
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def drive(session: ClientSession, ws: Path) -> dict[str, Any]:
    """initialize (done), list tools, search, expand, remember, then search finds the note."""
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == TOOLS
    assert tools["memory_search"].input_schema["required"] == ["query"]
    assert tools["memory_search"].input_schema["properties"]["top_k"]["default"] == 3
    assert tools["memory_remember"].input_schema["required"] == ["text"]
    assert "hits" in (tools["memory_search"].output_schema or {})["properties"]
    # the output schemas are the core's wire shapes (HitData, ...), descriptions included, not copies
    hit = (tools["memory_search"].output_schema or {})["$defs"]["HitData"]
    assert set(hit["properties"]) == set(HitData.__annotations__) and "expand" in hit["properties"]["id"]["description"]
    assert set((tools["memory_expand"].output_schema or {})["properties"]) == set(ChunkData.__annotations__)
    for name in ("memory_search", "memory_expand", "memory_recent", "memory_status"):
        assert tools[name].annotations is not None and tools[name].annotations.read_only_hint is True
    remember = tools["memory_remember"].annotations
    assert remember is not None and (remember.read_only_hint, remember.destructive_hint) == (False, False)

    hits = (await call(session, "memory_search", query="Redis cache config"))["hits"]
    assert len(hits) == 3
    assert set(hits[0]) == set(HitData.__annotations__) and {"score", "rank_score", "scope"} <= set(hits[0])
    assert {h["scope"] for h in hits} == {"workspace"}
    assert hits[0]["date"] is None and hits[0]["archived"] is False  # the CLI's fields, null when undated
    assert (hits[0]["source"], hits[0]["heading"]) == ("memory/MEMORY.md", "Redis Caching")

    chunk = await call(session, "memory_expand", id=hits[0]["id"][:8])  # a unique prefix is enough
    assert chunk["content"].startswith("## Redis Caching") and chunk["start_line"] == hits[0]["start_line"]
    assert (chunk["id"], chunk["date"], chunk["archived"]) == (hits[0]["id"], None, False)
    missing = await session.call_tool("memory_expand", {"id": "0123456789abcdef"})
    assert missing.is_error and "no chunk with id '0123456789abcdef'" in missing.content[0].text  # type: ignore[union-attr]
    empty = await session.call_tool("memory_remember", {"text": "   "})
    assert empty.is_error and "nothing to remember" in empty.content[0].text  # type: ignore[union-attr]

    note = await call(session, "memory_remember", text="The okapi deploy window is Thursday 14:00 UTC.")
    assert (note["source"], note["heading"]) == (
        "memory/2026-12-03.md",
        "The okapi deploy window is Thursday 14:00 UTC. (09:41)",  # (under `## 09:41`: as a search hit names it)
    )
    log_lines = (ws / note["source"]).read_text().split("\n")
    assert log_lines[0] == "# 2026-12-03" and log_lines[note["start_line"] - 1] == "## 09:41"
    found = (await call(session, "memory_search", query="okapi deploy window", top_k=1))["hits"]
    assert found[0]["id"] == note["id"] and found[0]["date"] == "2026-12-03" and found[0]["heading"] == note["heading"]
    schema = tools["memory_search"].input_schema["properties"]
    assert {"since", "until", "source", "archived"} <= set(schema) and schema["archived"]["default"] is False
    archived = (await call(session, "memory_search", query="Redis cache config", archived=True))["hits"]
    assert archived and all(set(h) == set(found[0]) for h in archived)  # the option the CLI's --archived is
    dated = (await call(session, "memory_search", query="Redis cache config", since="1d", source=["memory/*"]))["hits"]
    assert dated and {h["source"] for h in dated} == {"memory/2026-12-03.md"}  # MEMORY.md is undated: left out
    assert (await call(session, "memory_search", query="Redis cache config", until="2026-02-01"))["hits"] == []
    curated = (await call(session, "memory_search", query="Redis cache config", source="**/MEMORY.md"))["hits"]
    assert curated and {h["source"] for h in curated} == {"memory/MEMORY.md"}
    bad = await session.call_tool("memory_search", {"query": "redis", "since": "last week"})
    assert bad.is_error and "cannot read the date" in bad.content[0].text  # type: ignore[union-attr]
    recent = (await call(session, "memory_recent", days=1))["notes"]
    assert [(n["id"], n["kind"], n["date"]) for n in recent] == [(note["id"], "daily", "2026-12-03")]
    fact = await call(
        session, "memory_remember", text="Okapi releases need two approvals", heading="Release rules", long_term=True
    )
    assert fact["source"] == "memory/MEMORY.md"
    assert "## Release rules\n\nOkapi releases need two approvals\n" in (ws / "memory" / "MEMORY.md").read_text()
    forget = tools["memory_forget"].annotations
    assert forget is not None and (forget.read_only_hint, forget.destructive_hint) == (False, True)
    extra = await call(session, "memory_remember", text="Wombat tokens expire after 9 minutes.", heading="Wombat")
    assert extra["scope"] == "workspace"
    gone = await call(session, "memory_forget", id=extra["id"])
    assert gone["removed"] and gone["scope"] == "workspace" and "Wombat" not in (ws / extra["source"]).read_text()
    mine = await call(session, "memory_remember", text="I prefer tabs over spaces.", scope="user")
    assert mine["scope"] == "user"
    assert not (ws / mine["source"]).is_file() or "tabs over spaces" not in (ws / mine["source"]).read_text()
    found = (await call(session, "memory_search", query="tabs over spaces preference", scope="user"))["hits"]
    assert found and found[0]["scope"] == "user" and found[0]["id"] == mine["id"]

    resources = {r.name: str(r.uri) for r in (await session.list_resources()).resources}
    assert {"memory/MEMORY.md", "memory/2026-12-03.md"} <= set(resources)
    read = await session.read_resource(resources["memory/2026-12-03.md"])
    assert "okapi deploy window" in read.contents[0].text  # type: ignore[union-attr]
    (ws / "secret.md").write_text("not memory")
    with pytest.raises(Exception, match="not a memory file"):
        await session.read_resource((ws / "secret.md").as_uri())
    return await call(session, "memory_status")


async def test_mcp_alone_owns_the_index(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    async with mcp_session(ws) as session:
        status = await drive(session, ws)
        assert "served_by_pid" not in status and status["chunks"] > 40
        record = json.loads((ws / ".memsearch" / "server.json").read_text())  # it serves others meanwhile
        cli = subprocess.run(
            [sys.executable, "-m", "memsearch_lsp", "status", "--json", "--workspace", str(ws)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert json.loads(cli.stdout)["served_by_pid"] == record["pid"]
    assert not (ws / ".memsearch" / "server.json").exists()


async def test_mcp_beside_a_running_language_server(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    lsp = await start(ws, now=NOW)  # the MCP server's clock: "since 1d" is resolved by the index's owner
    try:
        await lsp.wait_indexed()
        async with mcp_session(ws) as session:
            status = await drive(session, ws)
            assert status["served_by_pid"] == server_pid(lsp)
            served = await lsp.client.protocol.send_request_async(
                "memsearch/search", {"query": "okapi deploy window", "topK": 1}
            )
            assert served[0]["source"] == "memory/2026-12-03.md"  # the editor's index has the agent's note
            cli = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "memsearch_lsp",
                    "remember",
                    "-",
                    "--heading",
                    "From the CLI",
                    "--json",
                    "--workspace",
                    str(ws),
                ],
                input="The wombat cache lives 5 min.",
                capture_output=True,
                text=True,
                timeout=300,
                env={**os.environ, "MEMSEARCH_NOW": NOW},
            )
            assert cli.returncode == 0, cli.stderr
            note = json.loads(cli.stdout)
            served = await lsp.client.protocol.send_request_async(
                "memsearch/search", {"query": "wombat cache", "topK": 1}
            )
            assert served[0]["id"] == note["id"] and note["heading"] == "From the CLI"

            editor = server_pid(lsp)
            await stop(lsp)  # the editor closes: the MCP server takes the index over and goes on
            hits = (await call(session, "memory_search", query="wombat cache", top_k=1))["hits"]
            assert hits[0]["id"] == note["id"]
            assert "served_by_pid" not in await call(session, "memory_status")
            assert json.loads((ws / ".memsearch" / "server.json").read_text())["pid"] not in (editor, 0)
    finally:
        if lsp.client._server and lsp.client._server.returncode is None:  # type: ignore[union-attr]
            await stop(lsp)


def test_a_lone_surrogate_gets_an_answer(workspace: Path) -> None:
    """A client may send "\\ud800" (JSON allows it); the SDK's parser rejects such a message without answering, so the
    server cleans it first: every request gets a reply, and the server keeps serving. So do odd params and a batch."""
    server = subprocess.Popen(
        [sys.executable, "-m", "memsearch_lsp", "mcp", "--workspace", str(workspace)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert server.stdin is not None and server.stdout is not None

    def ask(raw: str) -> dict[str, Any]:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(raw.encode() + b"\n")
        server.stdin.flush()
        while True:
            reply = json.loads(server.stdout.readline())
            if "id" in reply:
                return dict(reply)

    try:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        assert "result" in ask(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}))
        server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        call = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":{%s}}}'
        lone = ask(call % (2, "memory_search", '"query":"\\ud800 Redis"'))
        assert lone["id"] == 2 and not lone["result"]["isError"], lone
        assert ask(call % (3, "memory_expand", '"id":"\\udfff"'))["result"]["isError"]  # answered: no such chunk
        ok = ask(call % (4, "memory_search", '"query":"Redis cache config"'))
        assert ok["result"]["structuredContent"]["hits"][0]["heading"] == "Redis Caching"
        # params that are no object, and a batch, were dropped without a reply: each request is answered
        odd = ask('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":[1,2]}')
        assert (odd["id"], odd["error"]["code"]) == (5, -32602)
        assert ask('[{"jsonrpc":"2.0","id":6,"method":"ping"}]') == {"jsonrpc": "2.0", "id": 6, "result": {}}
        # ended by its client (SIGTERM): it lets the index go and takes its owner record with it
        record = workspace / ".memsearch" / "server.json"
        assert json.loads(record.read_text())["pid"] == server.pid
        server.terminate()
        assert server.wait(30) == 0 and not record.exists()
    finally:
        server.kill()
        server.wait()


async def test_a_tool_says_why_it_failed_when_the_index_owner_does_not_answer(tmp_path: Path) -> None:
    """An owner that does not answer (stopped, swapping) gave the bare "Error executing tool memory_search": every
    failure is a tool error that says it in one line, as the CLI does."""
    ws = make_workspace(tmp_path)
    env = {**os.environ, "MEMSEARCH_NOW": NOW}
    warm = [sys.executable, "-m", "memsearch_lsp", "warm", "--detach", "--idle", "60", "--workspace", str(ws)]
    subprocess.run(warm, check=True, capture_output=True, timeout=300, env=env)
    record = ws / ".memsearch" / "server.json"
    for _ in range(600):
        if record.exists():
            break
        await asyncio.sleep(0.1)
    pid = int(json.loads(record.read_text())["pid"])
    try:
        os.kill(pid, signal.SIGSTOP)
        async with mcp_session(ws) as session:
            result = await session.call_tool("memory_search", {"query": "okapi"})
            assert result.is_error and "does not answer" in result.content[0].text  # type: ignore[union-attr]
        os.kill(pid, signal.SIGCONT)
        async with mcp_session(ws) as session:  # following the owner already, when it stops: not 600 s, a few
            assert (await call(session, "memory_search", query="redis cache"))["hits"]
            os.kill(pid, signal.SIGSTOP)
            started = time.monotonic()
            result = await asyncio.wait_for(session.call_tool("memory_search", {"query": "okapi"}), 60)
            assert result.is_error and "does not answer" in result.content[0].text  # type: ignore[union-attr]
            assert time.monotonic() - started < 15
    finally:
        os.kill(pid, signal.SIGCONT)
        os.kill(pid, signal.SIGTERM)


async def test_in_a_project_without_memory_it_serves_and_each_tool_says_how_to_start_one(tmp_path: Path) -> None:
    """A plugin starts the server in every project: it exited before `initialize`, so the client listed a failed
    server. It now answers, each tool saying "no memory here", and serves the memory once `init` made one."""
    plain = tmp_path / "project"
    plain.mkdir()
    async with mcp_session(plain) as session:
        assert {t.name for t in (await session.list_tools()).tools} == TOOLS
        result = await session.call_tool("memory_search", {"query": "redis"})
        assert result.is_error and "no memory here" in str(result.content) and "init" in str(result.content)
        assert list(plain.iterdir()) == []  # nothing written there
        subprocess.run([sys.executable, "-m", "memsearch_lsp", "init", str(plain)], check=True, capture_output=True)
        await call(session, "memory_remember", text="We cache sessions in Redis for 5 minutes.")
        assert (await call(session, "memory_search", query="redis sessions"))["hits"]


async def test_settings_that_do_not_load_at_start_are_each_tools_answer_until_the_file_is_fixed(tmp_path: Path) -> None:
    """(audit Z4, 5) A `.memsearch.toml` with a syntax error when the client started the server: it exited (rc 1) and
    the agent had no memory tools all session, even after the file was fixed. It serves; each tool names the file
    and what is wrong in it until the file loads, then the memory opens."""
    ws = make_workspace(tmp_path)
    settings = ws / ".memsearch.toml"
    settings.write_text("[search\ntop_k = 3\n")
    async with mcp_session(ws) as session:
        assert {t.name for t in (await session.list_tools()).tools} == TOOLS
        for tool, arguments in (("memory_search", {"query": "redis"}), ("memory_recent", {}), ("memory_status", {})):
            result = await session.call_tool(tool, arguments)
            said = result.content[0].text  # type: ignore[union-attr]
            assert result.is_error and f"{settings}: Expected ']'" in said and "\n" not in said, said
        settings.write_text("[search]\ntop_k = 2\n")
        assert (await call(session, "memory_search", query="Redis cache config"))["hits"]
        assert "notes" in await call(session, "memory_recent")


@pytest.mark.skipif(os.name == "nt", reason="POSIX signals")
def test_ctrl_c_ends_the_server_and_lets_the_index_go(workspace: Path) -> None:
    """`memsearch-lsp mcp` run by hand and stopped with Ctrl-C (SIGINT) hung: the stdio loop waited on its thread
    reading stdin. It ends as when its client stops it, taking its owner record with it."""
    server = subprocess.Popen(
        [sys.executable, "-m", "memsearch_lsp", "mcp", "--workspace", str(workspace)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert server.stdin is not None and server.stdout is not None and server.stderr is not None
    try:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        search = {"name": "memory_search", "arguments": {"query": "Redis cache config"}}
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": search},
        ):
            server.stdin.write(json.dumps(message).encode() + b"\n")
        server.stdin.flush()
        while json.loads(server.stdout.readline()).get("id") != 2:
            pass
        record = workspace / ".memsearch" / "server.json"
        assert json.loads(record.read_text())["pid"] == server.pid
        server.send_signal(signal.SIGINT)
        assert server.wait(30) == 0 and not record.exists()
    finally:
        server.kill()
        server.wait()
    assert b"Traceback" not in server.stderr.read()
