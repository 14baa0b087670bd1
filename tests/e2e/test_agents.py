"""Other agents' MCP set-ups, as the README gives them: each snippet (Codex CLI's config.toml, Gemini CLI's
settings.json, Cursor's .cursor/mcp.json, OpenCode's opencode.json) is parsed with that format's reader, and
the command it names is started over stdio by the `mcp` SDK's client, which lists the memory tools."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from memsearch_lsp.config import tomllib
from tests.helpers import ROOT, make_workspace

README = (ROOT / "README.md").read_text(encoding="utf-8")
TOOLS = {"memory_search", "memory_expand", "memory_recent", "memory_remember", "memory_forget", "memory_status"}


def snippet(label: str) -> str:
    """The first fenced block after the line that starts with `label` in the README."""
    part = README.split(f"\n{label}", 1)[1]
    found = re.search(r"```(\w+)\n(.*?)```", part, re.S)
    assert found, label
    return found.group(2)


def codex(text: str) -> tuple[str, list[str]]:
    server = tomllib.loads(text)["mcp_servers"]["memsearch"]
    return server["command"], server["args"]


def mcp_servers(text: str) -> tuple[str, list[str]]:  # Gemini CLI and Cursor share this shape
    server = json.loads(text)["mcpServers"]["memsearch"]
    return server["command"], server["args"]


def opencode(text: str) -> tuple[str, list[str]]:
    server = json.loads(text)["mcp"]["memsearch"]
    assert server["type"] == "local" and server["enabled"] is True
    return server["command"][0], server["command"][1:]


AGENTS: dict[str, tuple[str, Any]] = {
    "codex": ("Codex CLI, `~/.codex/config.toml`", codex),
    "gemini": ("Gemini CLI, `~/.gemini/settings.json`", mcp_servers),
    "cursor": ("Cursor, `.cursor/mcp.json`", mcp_servers),
    "opencode": ("OpenCode, `opencode.json`", opencode),
}


@pytest.mark.slow
@pytest.mark.parametrize("agent", sorted(AGENTS))
async def test_each_agents_readme_snippet_starts_the_memory_server(agent: str, tmp_path: Path) -> None:
    label, read = AGENTS[agent]
    command, args = read(snippet(label))
    assert command == "memsearch-lsp" and "/path/to/project" in args
    ws = make_workspace(tmp_path)
    installed = Path(sys.executable).parent / command  # the console script this environment installed
    params = StdioServerParameters(
        command=str(installed), args=[str(ws) if a == "/path/to/project" else a for a in args], env=dict(os.environ)
    )
    async with stdio_client(params) as (read_stream, write_stream), ClientSession(read_stream, write_stream) as session:
        info = await session.initialize()
        assert info.server_info.name == "memsearch"
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == TOOLS
        forget = tools["memory_forget"].annotations
        assert forget is not None and forget.destructive_hint is True


def test_the_instructions_snippet_says_when_to_search_remember_and_forget() -> None:
    text = snippet("These agents have no hooks")
    assert "AGENTS.md" in README and "GEMINI.md" in README
    for tool in ("memory_search", "memory_remember", "memory_forget", "<private>"):
        assert tool in text
