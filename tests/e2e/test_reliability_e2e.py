"""Reliability end to end: the CLI beside a running server, two windows, kill -9, hostile messages, load."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from memsearch_lsp.core.index import GROUP_CHUNKS
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.process.door import open_memory
from tests.fakes import EmbeddingServer
from tests.helpers import (
    FAST,
    OWNER_SCRIPT,
    Session,
    cli,
    document_frequencies,
    endpoint_env,
    make_workspace,
    send_raw,
    server_pid,
    start,
    stop,
    two_windows,
    until,
    uri,
)

pytestmark = pytest.mark.slow  # and all but the kill -9 runs use the real model (marker `model`)


@pytest.mark.model
async def test_cli_beside_a_running_server_gets_the_servers_hits(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    session = await start(ws)
    try:
        await session.wait_indexed()
        for query in ("Redis cache config", "PostgreSQL 16", "who is on call on Mondays"):
            served = await session.client.protocol.send_request_async("memsearch/search", {"query": query, "topK": 5})
            result = cli(ws, "search", query, "-k", "5", "--json")
            assert result.returncode == 0, result.stderr
            hits = json.loads(result.stdout)["hits"]
            assert [(h["id"], h["score"], h["rank_score"]) for h in hits] == [
                (h["id"], h["score"], h["rank_score"]) for h in served
            ]
        status = json.loads(cli(ws, "status", "--json").stdout)
        assert status["served_by_pid"] == server_pid(session)
    finally:
        await stop(session)
    assert not (ws / ".memsearch" / "server.json").exists()  # a clean exit leaves no record


@pytest.mark.model
async def test_a_second_window_becomes_a_client_of_the_first(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    async with two_windows(ws) as (first, second):
        status: Any = await second.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="memsearch.status")
        )
        assert status["roots"][0]["served_by_pid"] == server_pid(first)
        note = ws / "memory" / "2026-03-05.md"
        doc = second.open(note, "# 2026-03-05\n\n## Tapir\n\ntapir rollout finished\n")
        await second.wait_indexed(2)
        symbols = await first.symbols("tapir rollout")
        assert symbols and symbols[0].name == "Tapir"  # an edit in window 2 is searchable in window 1
        assert symbols[0].location.uri == doc
        await stop(first)  # window 1 closes: window 2 takes the index over
        symbols = await second.symbols("Redis cache config")
        assert symbols[0].name == "Redis Caching"
        status = json.loads(cli(ws, "status", "--json").stdout)
        assert status["served_by_pid"] == server_pid(second)


async def test_changes_a_client_window_sends_while_the_owner_does_not_answer_are_kept_and_sent(tmp_path: Path) -> None:
    """A client window forwarded a file written on disk (or an edit) to an owner that did not answer its ping (stopped
    with Ctrl-Z, or slower than 2 s): the change was thrown away for good, and the log blamed a message it could not
    read. It is kept, said once, and sent when the owner answers again."""
    ws = make_workspace(tmp_path)
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER_SCRIPT, str(ws)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "ready"
        window = await start(ws)
        try:
            await window.wait_indexed()
            os.kill(owner.pid, signal.SIGSTOP)
            written = ws / "memory" / "2026-03-06.md"
            written.write_text("# 2026-03-06\n\n## Okapi\n\nokapi sighting at the zoo\n")
            window.client.workspace_did_change_watched_files(
                types.DidChangeWatchedFilesParams(
                    changes=[types.FileEvent(uri=uri(written), type=types.FileChangeType.Created)]
                )
            )
            window.open(ws / "memory" / "2026-03-07.md", "# 2026-03-07\n\n## Tapir\n\nunsaved tapir note\n")
            logged = window.client.log_messages

            def kept() -> list[str]:
                return [m.message for m in logged if "kept and sent when it answers" in m.message]

            def busy() -> list[str]:
                return [m.message for m in logged if "does not answer" in m.message]

            await until(busy, "the window to find the owner not answering", timeout=60)
            os.kill(owner.pid, signal.SIGCONT)
            with open_memory(ws) as served:
                assert served.remote
                await until(
                    lambda: served.is_indexed("memory/2026-03-06.md") and served.has_overlay("memory/2026-03-07.md"),
                    "the kept changes to reach the owner",
                    timeout=60,
                )
            assert len(kept()) == 1 and f"pid {owner.pid}" in kept()[0], kept()
            assert not [m.message for m in logged if "could not read" in m.message or "failed" in m.message]
        finally:
            await stop(window)
    finally:
        os.kill(owner.pid, signal.SIGCONT)
        owner.communicate("", timeout=60)


async def until_changed(session: Session, query: dict[str, Any], old: Any) -> Any:
    """memsearch/search results once they differ from `old` (new settings took effect)."""

    async def changed() -> Any:
        new = await session.client.protocol.send_request_async("memsearch/search", query)
        return new if new != old else None

    new = await until(changed, "the new search settings to reach the searches", timeout=30, every=0.2)
    assert [h["score"] for h in new] != [h["score"] for h in old]
    return new


@pytest.mark.model
async def test_a_client_windows_settings_change_reaches_its_searches_or_is_refused_once(tmp_path: Path) -> None:
    """Window 2 follows window 1's index: its search settings travel with each of its searches; settings
    that shape the index (memory.paths here) stay window 1's, and window 2 says so once, naming the owner."""
    ws = make_workspace(tmp_path)
    async with two_windows(ws) as (first, second):
        query = {"query": "message broker decision", "topK": 5}
        before = await second.client.protocol.send_request_async("memsearch/search", query)
        (ws / "journal").mkdir()
        (ws / "journal" / "2026-03-09.md").write_text("# 2026-03-09\n\n## Quokka\n\nquokka sighting\n")
        settings = {**FAST, "search": {"vectorWeight": 0.0, "bm25Weight": 1.0}, "memory": {"paths": ["journal"]}}
        second.client._configuration["memsearch"] = settings
        second.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"memsearch": settings})
        )
        warnings = second.client.messages
        await until(lambda: any(m.type == types.MessageType.Warning for m in warnings), "the refusal")
        text = warnings[0].message
        assert len(warnings) == 1 and warnings[0].type == types.MessageType.Warning, warnings
        assert "memory.paths cannot change in this window" in text and "vectorWeight" not in text
        assert f"memsearch-lsp serve for an editor (pid {server_pid(first)})" in text
        after = await until_changed(second, query, before)
        assert await first.client.protocol.send_request_async("memsearch/search", query) == before  # window 1's own
        assert "Quokka" not in [s.name for s in await second.symbols("quokka sighting")]  # journal/ is not indexed
        status: Any = await second.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="memsearch.status")
        )
        assert status["roots"][0]["served_by_pid"] == server_pid(first)  # still the owner's client, serving
        settings["search"] = {"vectorWeight": 0.5, "bm25Weight": 0.5}  # memory.paths still refused: said once
        second.client._configuration["memsearch"] = settings
        second.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"memsearch": settings})
        )
        await until_changed(second, query, after)  # the handler is past its refusal when the weights apply
        assert len(warnings) == 1


BIG_FILES = 212  # more than one embed+write group (index.GROUP_CHUNKS chunks): 1,060 chunks and the examples


def big_memory(ws: Path, files: int = BIG_FILES) -> None:
    rng = random.Random(7)
    words = [
        "cache",
        "kafka",
        "broker",
        "replica",
        "deploy",
        "canary",
        "rollback",
        "latency",
        "budget",
        "schema",
        "migration",
        "token",
    ]
    for i in range(files):
        day = f"2025-{1 + i // 28:02d}-{1 + i % 28:02d}"
        parts = [f"# {day}\n"]
        for j in range(4):
            parts.append(f"## Topic {i}-{j}\n\n" + " ".join(rng.choice(words) for _ in range(60)) + f" marker{i}x{j}\n")
        (ws / "memory" / f"{day}.md").write_text("\n".join(parts))


def index_rows(ws: Path) -> set[tuple[Any, ...]]:
    with Memory(ws) as memory:
        stats = memory.index()
        assert stats.chunks_embedded == 0 or stats.changed, stats
        rows = {(r["id"], r["source"], r["file_hash"]) for r in memory.store.scan(["source", "file_hash"])}
        docs, idf = document_frequencies(memory)
        return rows | {("df", docs, len(idf), round(sum(idf.values()), 6))}


def _chunks_done(reports: dict[Any, list[Any]]) -> int:
    """The most chunks a `$/progress` report of the index pass said were done ("N/M chunks")."""
    said = [getattr(v, "message", None) or "" for vs in reports.values() for v in vs]
    return max((int(m.split("/")[0]) for m in said if m.endswith(" chunks") and m.split("/")[0].isdigit()), default=0)


@pytest.fixture(scope="module")
def fresh_rows(tmp_path_factory: pytest.TempPathFactory) -> Iterator[set[tuple[Any, ...]]]:
    """The rows of a fresh, uninterrupted index of the big memory (the same files in every attempt)."""
    fresh = make_workspace(tmp_path_factory.mktemp("fresh"))
    big_memory(fresh)
    endpoint = EmbeddingServer()
    try:
        with pytest.MonkeyPatch.context() as mp:
            for name, value in endpoint_env(endpoint).items():
                mp.setenv(name, value)
            yield index_rows(fresh)
    finally:
        endpoint.close()


@pytest.mark.parametrize("attempt", [1, 2, 3])
async def test_kill_9_during_a_full_index_then_restart(
    tmp_path: Path, attempt: int, fresh_rows: set[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = make_workspace(tmp_path / "a")
    big_memory(ws)
    endpoint = EmbeddingServer()
    for name, value in endpoint_env(endpoint).items():
        monkeypatch.setenv(name, value)  # the servers started below inherit it
    try:
        # 1: while the first group's embeddings are in flight (nothing written yet); 2: on a progress report
        # past the first group (it is written); 3: while the last group's embeddings are in flight
        marker = {1: "marker0x", 3: f"marker{BIG_FILES - 1}x"}.get(attempt)  # in the first / the last file
        if marker:
            endpoint.hold = lambda texts: any(marker in t for t in texts)
        session = await start(ws)
        reports = session.client.progress_reports
        if attempt != 2:
            await until(endpoint.held.is_set, "an embedding request to hold", timeout=120)
        if attempt != 1:  # the server reports the chunks done ("N/M chunks") as it goes: the first group written
            await until(lambda: _chunks_done(reports) > GROUP_CHUNKS, "a report past the first group", 120)
        os.kill(server_pid(session), signal.SIGKILL)
        await session.client.stop()
        endpoint.release()
        restarted = await start(ws)
        try:
            note = await restarted.wait_indexed(timeout=300)
            assert note["chunks"] >= BIG_FILES * 5
        finally:
            await stop(restarted)
        assert index_rows(ws) == fresh_rows
    finally:
        endpoint.close()


@pytest.mark.model
async def test_hostile_messages_then_a_valid_request(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    session = await start(ws)
    try:
        await session.wait_indexed()
        rng = random.Random(1)
        methods = [
            "textDocument/hover",
            "workspace/symbol",
            "memsearch/search",
            "textDocument/didChange",
            "workspace/executeCommand",
            "textDocument/definition",
            "nonsense/method",
            "$/cancelRequest",
            "textDocument/didOpen",
            "workspace/didChangeWatchedFiles",
            "textDocument/documentSymbol",
        ]
        junk: list[Any] = [
            None,
            1,
            -1,
            "x" * 1000,
            [],
            {},
            {"textDocument": {"uri": 5}},
            {"query": {"a": 1}},
            {"textDocument": {"uri": "file:///etc/shadow"}, "position": {"line": -5, "character": 1e9}},
            {"command": "memsearch.expand", "arguments": [None]},
            {"changes": [{"uri": "file:///nope", "type": 99}]},
        ]
        for n in range(200):
            kind = n % 4
            if kind == 0:
                send_raw(session.client, bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 80))))
            elif kind == 1:
                send_raw(session.client, b'{"jsonrpc": "2.0", "id": ' + str(n).encode() + b', "method": ')
            else:
                message: dict[str, Any] = {"jsonrpc": "2.0", "method": rng.choice(methods), "params": rng.choice(junk)}
                if kind == 2:
                    message["id"] = 100000 + n
                send_raw(session.client, message)
        # the request is read after all of the junk on the same stream
        symbols = await asyncio.wait_for(session.symbols("Redis cache config"), timeout=30)
        assert symbols[0].name == "Redis Caching"
    finally:
        await stop(session)


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


WORKERS, SEARCHES_EACH = 8, 2  # 8 CLI searches at a time, twice over, while the editor types


@pytest.mark.model
async def test_load_concurrent_cli_searches_and_fast_edits(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    session = await start(ws)
    try:
        await session.wait_indexed()
        path = ws / "memory" / "2026-02-13.md"
        doc = session.open(path)
        rss_start = peak_rss_mb(server_pid(session))

        searching = asyncio.Event()  # set when every search has answered: the edits go on until then

        async def searches(worker: int) -> list[int]:
            codes = []
            for _ in range(SEARCHES_EACH):
                proc = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "memsearch_lsp",
                    "search",
                    f"load query {worker}",
                    "--json",
                    "--workspace",
                    str(ws),
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                )
                out, err = await proc.communicate()
                assert proc.returncode == 0, err.decode()
                json.loads(out)
                codes.append(proc.returncode)
            return codes

        async def edits() -> int:
            version = 1
            while not searching.is_set():
                version += 1
                session.client.text_document_did_change(
                    types.DidChangeTextDocumentParams(
                        text_document=types.VersionedTextDocumentIdentifier(uri=doc, version=version),
                        content_changes=[
                            types.TextDocumentContentChangePartial(
                                range=types.Range(
                                    start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
                                ),
                                text=f"\n## Edit {version}\n\nwombat{version}\n",
                            )
                        ],
                    )
                )
                await asyncio.sleep(0.02)
            return version

        async def all_searches() -> list[list[int]]:
            try:
                return await asyncio.gather(*(searches(w) for w in range(WORKERS)))
            finally:
                searching.set()

        last, answers = await asyncio.gather(edits(), all_searches())
        answered = sum(len(r) for r in answers)
        assert answered == WORKERS * SEARCHES_EACH and last > 2
        await session.until_symbol(f"wombat{last}", f"Edit {last}", timeout=30)
        rss_end = peak_rss_mb(server_pid(session))
        sys.stderr.write(
            f"load: {answered} CLI searches answered, {last - 1} edits, "
            f"server peak RSS {rss_start:.0f} -> {rss_end:.0f} MiB\n"
        )
        assert rss_end < 1500
    finally:
        await stop(session)


async def test_an_endpoint_that_refuses_every_call_fails_requests_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh workspace whose embedding endpoint refuses every call (HTTP 404 here; 401 alike): each workspace/symbol
    failed as an internal error whose message began with the Python class path
    (`memsearch_lsp.core.embedding.base.EmbeddingError: ...`), a traceback on stderr each time. Now RequestFailed,
    one line naming the endpoint, and the server keeps serving."""
    ws = make_workspace(tmp_path)
    endpoint = EmbeddingServer()
    try:
        for name, value in {**endpoint_env(endpoint), "MEMSEARCH_EMBEDDING_MODEL": "no-such-model"}.items():
            monkeypatch.setenv(name, value)
        session = await start(ws)
        try:
            symbols = types.WorkspaceSymbolParams(query="Redis cache")
            status = types.ExecuteCommandParams(command="memsearch.status")
            for ask in (session.client.workspace_symbol_async(symbols), session.client.workspace_symbol_async(symbols)):
                with pytest.raises(Exception) as failed:
                    await ask
                error = getattr(failed.value, "code", None), str(failed.value)
                assert error[0] == types.LSPErrorCodes.RequestFailed, error
                assert "memsearch_lsp." not in error[1] and "Error:" not in error[1] and endpoint.url in error[1], error

            async def status_error() -> str:  # (status answers, saying what is wrong, once the first pass failed)
                found = await session.client.workspace_execute_command_async(status)
                return str(found["roots"][0].get("error", ""))

            said = await until(status_error, "status to say what is wrong", timeout=30)
            assert "memsearch_lsp." not in said and "Error:" not in said and endpoint.url in said, said
            # (opening the index and indexing it failed with the same cause: shown once, not twice)
            shown = [m.message for m in session.client.messages if m.type == types.MessageType.Error]
            assert len([m for m in shown if endpoint.url in m]) == 1, shown
        finally:
            await stop(session)
    finally:
        endpoint.close()
