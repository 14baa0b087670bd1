"""Bad input to the real processes gets a clear answer and the right exit status: `serve --tcp` that cannot
listen, the CLI's arguments and settings, and the language server's compaction and search requests (which
answer invalid params, -32602, and keep serving)."""

from __future__ import annotations

import datetime as dt
import json
import socket
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.helpers import cli, lsp_session, run_cli

INVALID_PARAMS = -32602


@pytest.mark.parametrize("address", ["abc", "127.0.0.1:99999", "127.0.0.1:", "[::1]:abc"])
def test_serve_refuses_a_malformed_tcp_address(address: str) -> None:
    result = run_cli("serve", "-v", "--tcp", address, timeout=60)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("memsearch-lsp serve: error: argument --tcp: "), result.stderr
    assert "Traceback" not in result.stderr


def test_serve_says_so_when_the_port_is_taken() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        started = time.monotonic()
        result = run_cli("serve", "--tcp", f"127.0.0.1:{port}", timeout=60)
    assert result.returncode == 1 and result.stdout == "" and time.monotonic() - started < 30
    assert f"memsearch-lsp serve: error: cannot listen on 127.0.0.1:{port}: " in result.stderr, result.stderr
    assert "address already in use" in result.stderr.lower()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("compact", "--dry-run", "--older-than", "100000000"), "argument --older-than: must be a whole number"),
        (("compact", "--dry-run", "--older-than", "99999999999999999999"), "at most 365000"),
        (("recent", "--days", "100000000"), "argument --days: must be a whole number of days"),
        (("search", "x", "--source", "a\\"), "the source pattern 'a\\\\' is not a valid gitignore-style glob"),
        (("search", "x", "--source", "memory/[z-a].md"), "the source pattern 'memory/[z-a].md' is not a valid glob"),
        (("search", "x", "--source", "../elsewhere/x.md"), "the source '../elsewhere/x.md' is outside the workspace"),
        (("search", "x", "--source", "/etc/*.md"), "the source '/etc/*.md' is outside the workspace"),
        (("search", "x", "--since", ""), "argument --since: needs a date or a relative age like 7d"),
        (("search", "x", "--since", "\u0663d"), "cannot read the date"),
        (("search", "x", "--since", "740000d"), "is out of range: it would be before the year 1"),
        (("warm", "--idle", "nan", "--detach"), "argument --idle: must be a number of seconds more than 0"),
        (("warm", "--idle", "inf"), "argument --idle: must be a number of seconds more than 0"),
    ],
)
def test_bad_arguments_get_a_clear_message_and_exit_1(workspace: Path, args: tuple[str, ...], needle: str) -> None:
    result = cli(workspace, *args, timeout=120)
    assert result.returncode == 1 and result.stdout == "" and needle in result.stderr, result.stderr
    assert "Error:" not in result.stderr and "run the command with -v" not in result.stderr  # no internal exception
    as_json = cli(workspace, *args, "--json", timeout=120)
    error = json.loads(as_json.stdout)["error"]  # valid JSON (no NaN), an error object
    assert as_json.returncode == 1 and needle in error["message"] and error["hint"]


def test_a_source_given_as_a_path_in_the_workspace_is_its_glob(workspace: Path, tmp_path: Path) -> None:
    from memsearch_lsp.core.search.filters import make_filter

    root = workspace.resolve()
    (tmp_path / "link").symlink_to(root)
    anchored = make_filter(source=str(tmp_path / "link" / "memory" / "MEMORY.md"), today=dt.date.today(), root=root)
    assert anchored.sources == ("/memory/MEMORY.md",)  # through a link; that file, not every MEMORY.md below
    assert anchored.allows("memory/MEMORY.md") and not anchored.allows("memory/team/memory/MEMORY.md")
    for given in (str(workspace / "memory" / "2026-02-05.md"), "./memory/2026-02-05.md", "/memory/2026-02-05.md"):
        result = cli(workspace, "search", "Kafka", "--json", "--source", given, timeout=120)
        hits = json.loads(result.stdout)["hits"]
        assert hits and {h["source"] for h in hits} == {"memory/2026-02-05.md"}, (given, result.stderr)


def test_a_workspace_that_is_no_folder_is_named(tmp_path: Path) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("x")
    for args in (("--workspace", str(file), "init"), ("init", str(file))):
        result = run_cli(*args, cwd=tmp_path, timeout=60)
        assert result.returncode == 1 and "is not a folder" in result.stderr and "FileExistsError" not in result.stderr
    long = run_cli("status", "--workspace", str(tmp_path / ("a" * 5000)), timeout=60)
    assert long.returncode == 1 and "characters): the name is too long" in long.stderr
    assert "OSError" not in long.stderr and len(long.stderr) < 400


def test_an_empty_collection_name_is_a_settings_error(workspace: Path) -> None:
    result = cli(workspace, "index", env={"MEMSEARCH_MILVUS_COLLECTION": ""}, timeout=120)  # (the user's setting)
    assert result.returncode == 1 and "StoreError" not in result.stderr and "please report" not in result.stderr
    assert "milvus.collection: must be 1 to 247 letters, digits or underscores" in result.stderr, result.stderr
    assert not (workspace / ".memsearch" / "milvus.db").exists()  # refused before the index was touched


async def test_the_server_answers_bad_compact_and_search_params_with_invalid_params(workspace: Path) -> None:
    async with lsp_session(workspace) as session:
        client = session.client
        with pytest.raises(JsonRpcException) as caught:
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="memsearch.compact", arguments=[{"olderThanDays": 1_000_000_000}])
            )
        assert caught.value.code == INVALID_PARAMS and "olderThanDays must be a whole number" in caught.value.message
        for query in (5, ["redis"], {"text": "redis"}, True):
            with pytest.raises(JsonRpcException) as caught:
                await client.protocol.send_request_async("memsearch/search", {"query": query})
            assert caught.value.code == INVALID_PARAMS and "query must be a string" in caught.value.message
        await session.wait_indexed(1)
        hits = await client.protocol.send_request_async("memsearch/search", {"query": "Redis cache config"})
        assert hits  # still serving
        dry = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="memsearch.compact", arguments=[{"olderThanDays": 365_000, "dryRun": True}]
            )
        )
        assert dry is not None and dry["applied"] is False
