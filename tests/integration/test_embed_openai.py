"""The `openai` embedding provider against a real /v1/embeddings server on 127.0.0.1 (http.server in a thread)."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memsearch_lsp.config import EmbeddingConfig
from memsearch_lsp.core.chunks import MAX_WINDOWS, WINDOW_CHARS
from memsearch_lsp.core.embedding import CHARS_PER_TOKEN, EmbeddingError, create_embedder, query_vector, reads_what
from memsearch_lsp.core.embedding import openai as embedder_module
from memsearch_lsp.core.embedding.calibration import PROBE
from memsearch_lsp.core.embedding.openai import OpenAIEmbedder
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.trust import hide_credentials
from tests.fakes import EmbeddingServer, FakeEmbedder
from tests.helpers import cli, free_port


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    srv = EmbeddingServer()
    yield srv
    srv.close()


@pytest.fixture
def settings(server: EmbeddingServer) -> Callable[..., EmbeddingConfig]:
    def make(**changes: Any) -> EmbeddingConfig:
        base: dict[str, Any] = {
            "provider": "openai",
            "base_url": server.url,
            "model": "fake-a",
            "api_key_env": "",
            "timeout_s": 10.0,
            "max_retries": 2,
        }
        return EmbeddingConfig(**{**base, **changes})

    return make


def norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


def test_requests_are_batched_authorised_and_answers_kept_in_order(
    server: EmbeddingServer, settings: Callable[..., EmbeddingConfig], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MS_TEST_EMBED_KEY", "sekrit")
    embedder = create_embedder(settings(api_key_env="MS_TEST_EMBED_KEY", batch_size=3))
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.model_name == "openai:fake-a" and embedder.dim == 0
    texts = [f"note {i} about redis caching number {i}" for i in range(7)]
    vectors = embedder.embed(texts)
    assert [len(r["input"]) for r in server.requests] == [3, 3, 1]
    assert all(r["path"] == "/v1/embeddings" and r["model"] == "fake-a" for r in server.requests)
    assert all(r["encoding_format"] == "float" and "dimensions" not in r for r in server.requests)
    assert [h["authorization"] for h in server.headers] == ["Bearer sekrit"] * 3
    assert server.texts_for("fake-a") == texts
    expected = EmbeddingServer.vectors("fake-a", texts)
    for got, want in zip(vectors, expected):
        assert abs(norm(got) - 1) < 1e-6
        assert got == pytest.approx([x / norm(want) for x in want])
    assert embedder.dim == 16


def test_dimensions_are_asked_for_and_known_before_any_call(
    server: EmbeddingServer, settings: Callable[..., EmbeddingConfig]
) -> None:
    embedder = create_embedder(settings(dimensions=8))
    assert embedder.dim == 8 and embedder.model_name == "openai:fake-a:8d"
    assert len(embedder.embed(["one text"])[0]) == 8
    assert server.requests[0]["dimensions"] == 8


def test_429_and_5xx_are_retried_with_backoff(
    server: EmbeddingServer, settings: Callable[..., EmbeddingConfig]
) -> None:
    embedder = create_embedder(settings(max_retries=2))
    server.script = ["429", "500"]
    vectors = embedder.embed(["retry me"])
    assert len(server.requests) == 3 and len(vectors) == 1
    assert [r["input"] for r in server.requests] == [["retry me"]] * 3


def test_failure_after_the_retries_names_the_endpoint(
    server: EmbeddingServer, settings: Callable[..., EmbeddingConfig]
) -> None:
    embedder = create_embedder(settings(max_retries=1))
    server.script = ["500", "500", "500"]
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["doomed"])
    assert len(server.requests) == 2
    message = str(info.value)
    assert f"{server.url}/embeddings" in message and "HTTP 500" in message and "2 attempts" in message
    assert "scripted 500" in message


def test_a_query_in_the_base_url_is_sent_after_the_path_and_its_key_never_shown(
    server: EmbeddingServer, settings: Callable[..., EmbeddingConfig]
) -> None:
    """(audit Z3, 7) `base_url = "http://host/v1?api_key=..."` was asked at `/v1/?api_key=...embeddings`, and errors,
    doctor and -v logs said the key."""
    server.route = "/v1/embeddings?api_key=QueryKey000"
    embedder = create_embedder(settings(base_url=f"{server.url}?api_key=QueryKey000", max_retries=0))
    assert len(embedder.embed(["hello"])) == 1
    assert [r["path"] for r in server.requests] == ["/v1/embeddings?api_key=QueryKey000"]
    server.script = ["500"]
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["doomed"])
    assert f"{server.url}/embeddings?api_key=QueryKey000 answered HTTP 500" in str(info.value)
    assert f"{server.url}/embeddings?api_key=*** answered" in hide_credentials(str(info.value))


def test_unknown_model_and_timeout_and_unreachable_say_what_to_check(
    server: EmbeddingServer, settings: Callable[..., EmbeddingConfig]
) -> None:
    with pytest.raises(EmbeddingError, match=r"HTTP 404 .*not found.*embedding\.model \('nope'\)"):
        create_embedder(settings(model="nope")).embed(["x"])
    server.script = [2.0]
    with pytest.raises(EmbeddingError, match=r"timed out after 0\.3s .*embedding\.timeout_s"):
        create_embedder(settings(timeout_s=0.3, max_retries=0)).embed(["slow"])
    port = free_port()
    with pytest.raises(
        EmbeddingError, match=rf"cannot reach embedding endpoint http://127\.0\.0\.1:{port}/v1/embeddings"
    ):
        create_embedder(settings(base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)).embed(["x"])


def test_long_text_is_sent_whole_up_to_the_endpoint_limit(
    server: EmbeddingServer, settings: Callable[..., EmbeddingConfig]
) -> None:
    long_text = "word " * 2000  # ~2000 tokens: far past the bundled model's 256
    embedder = create_embedder(settings())
    embedder.embed([long_text])
    assert server.requests[-1]["input"] == [long_text]
    small = create_embedder(settings(max_tokens=100))
    small.embed([long_text])
    assert server.requests[-1]["input"] == [long_text[:300]]
    assert small.model_name == "openai:fake-a:100t"


def test_prefixes_and_query_model_shape_what_is_sent(
    server: EmbeddingServer, settings: Callable[..., EmbeddingConfig]
) -> None:
    plain = create_embedder(settings())
    e5 = create_embedder(settings(document_prefix="passage: ", query_prefix="query: ", query_model="fake-a-query"))
    assert e5.model_name.startswith("openai:fake-a+") and e5.model_name != plain.model_name  # re-embeds
    assert create_embedder(settings(query_prefix="q: ")).model_name == plain.model_name  # queries only: no
    e5.embed(["Redis caching"])
    query_vector(e5, "how long do entries live")
    assert [(r["model"], r["input"]) for r in server.requests] == [
        ("fake-a", ["passage: Redis caching"]),
        ("fake-a-query", ["query: how long do entries live"]),
    ]
    assert query_vector(FakeEmbedder(), "x") == FakeEmbedder().embed(["x"])[0]  # no query form: plain


def test_search_embeds_the_query_in_its_query_form(server: EmbeddingServer, workspace: Path) -> None:
    settings = {
        "provider": "openai",
        "base_url": server.url,
        "model": "fake-a",
        "api_key_env": "",
        "query_prefix": ">> ",
        "query_model": "fake-a-query",
    }  # no word: the fake vectors stay comparable
    with Memory(workspace, embedding=settings) as memory:
        memory.index()
        assert memory.search("Redis cache TTL")[0].heading == "Redis Caching"
    assert asked(server, "fake-a-query") == [">> Redis cache TTL"]
    assert not any("Redis cache TTL" in t for t in server.texts_for("fake-a"))


def asked(server: EmbeddingServer, model: str) -> list[str]:
    """What a model was sent beside the calibration probe (its 32 texts, sent once per model and cache)."""
    probe = {text for pair in PROBE for text in pair}
    return [t for t in server.texts_for(model) if t.removeprefix(">> ") not in probe]


def _index(memory: Memory) -> tuple[int, int]:
    stats = memory.index()
    return stats.chunks_embedded, stats.chunks_total


def test_memory_on_the_endpoint_and_switching_models_re_embeds_once(server: EmbeddingServer, workspace: Path) -> None:
    base = {"provider": "openai", "base_url": server.url, "model": "fake-a", "api_key_env": ""}
    with Memory(workspace, embedding=base) as memory:
        embedded, total = _index(memory)
        assert embedded == total > 20
        hits = memory.search("Redis cache TTL")
        assert hits and hits[0].heading == "Redis Caching"
        status = memory.status()
        assert (status["provider"], status["model"], status["dim"]) == ("openai", "openai:fake-a", 16)
        assert "each window cut at 8191 tokens" in status["reads"]
        assert _index(memory) == (0, total)

        memory.reconfigure(memory.config.merged({"embedding": {"model": "fake-c"}}))  # same dimension
        assert _index(memory) == (total, total)
        assert _index(memory) == (0, total)
        assert {r["model"] for r in memory.store.scan(["model"])} == {"openai:fake-c"}

        a_texts = len(server.texts_for("fake-a"))
        memory.reconfigure(memory.config.merged({"embedding": {"model": "fake-b"}}))
        assert _index(memory) == (total, total)  # every chunk once with the new model
        assert _index(memory) == (0, total)
        assert memory.status()["dim"] == 32 and memory.store.dim == 32
        assert memory.search("Redis cache TTL")[0].heading == "Redis Caching"
        b_texts = asked(server, "fake-b")
        assert len(b_texts) - b_texts.count("Redis cache TTL") - b_texts.count("dimension probe") == total
        assert len(set(b_texts)) == len(b_texts) - b_texts.count("Redis cache TTL") + 1  # nothing twice

        memory.reconfigure(memory.config.merged({"embedding": {"model": "fake-a"}}))
        assert _index(memory) == (total, total)  # nothing stale is reused on the way back
        rows = list(memory.store.scan(["model"]))
        assert {r["model"] for r in rows} == {"openai:fake-a"}
        assert len(server.texts_for("fake-a")) > a_texts + total - 1


def test_bench_accepts_the_provider_settings(server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.__main__ import parse
    from bench.common import bench_embedder, embedding_settings

    monkeypatch.setenv("MEMSEARCH_EMBEDDING_TIMEOUT_S", "7")
    args = parse(
        [
            "quality",
            "--provider",
            "openai",
            "--base-url",
            server.url,
            "--model",
            "fake-b",
            "--api-key-env",
            "",
            "--dimensions",
            "12",
            "--batch-size",
            "5",
        ]
    )
    settings = embedding_settings(args)
    assert (settings.provider, settings.base_url, settings.model, settings.timeout_s) == (
        "openai",
        server.url,
        "fake-b",
        7.0,
    )
    embedder = bench_embedder(args)
    assert embedder.embed(["a b c"] * 6) and [len(r["input"]) for r in server.requests] == [5, 1]
    assert server.requests[0]["dimensions"] == 12 and embedder.dim == 12
    assert embedding_settings(parse(["throughput"])).provider == "bundled"


def test_a_search_while_the_endpoint_is_busy_answers_with_bm25_alone(
    server: EmbeddingServer, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = {
        "provider": "openai",
        "base_url": server.url,
        "model": "fake-a",
        "api_key_env": "",
        "timeout_s": 0.5,
        "max_retries": 3,
    }
    with Memory(workspace, embedding=settings) as memory:
        memory.index()
        # The endpoint is busy: the query's request (and its one retry) answer after the timeout.
        server.script = [1.5, 1.5]
        with caplog.at_level(logging.WARNING, logger="memsearch_lsp.core.search.hybrid"):
            hits = memory.search("Redis cache TTL", top_k=3)
        assert hits and hits[0].heading == "Redis Caching"
        assert "BM25 alone" in caplog.text and "timed out after 0.5s (2 attempts)" in caplog.text
        # A query without a word BM25 could search for finds nothing, and never fails.
        server.script = [1.5, 1.5]
        assert memory.search("?!", top_k=3) == []


def test_an_index_opens_and_answers_with_bm25_alone_while_its_endpoint_is_down(
    server: EmbeddingServer, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The dimension of an endpoint's model is known from its first answer: a new process (the CLI, MCP) could not
    open a complete index while the endpoint was down, though search needs only BM25 then and expand nothing."""
    settings = {"provider": "openai", "base_url": server.url, "model": "fake-a", "api_key_env": "", "max_retries": 0}
    with Memory(workspace, embedding=settings) as memory:
        memory.index()
        chunk_id = memory.search("Redis cache TTL", top_k=1)[0].id
    down = {**settings, "base_url": f"http://127.0.0.1:{free_port()}/v1"}
    with Memory(workspace, embedding=down) as memory, caplog.at_level(logging.WARNING):
        hits = memory.search("Redis cache TTL", top_k=3)
        assert hits and hits[0].heading == "Redis Caching" and "BM25 alone" in caplog.text
        assert memory.expand(chunk_id) is not None and memory.status()["chunks"] > 0
    other = Memory(workspace, embedding={**down, "model": "fake-b"})  # another model: nothing to go on
    with other, pytest.raises(EmbeddingError, match="cannot reach"):
        other.search("Redis cache TTL")


def test_the_cli_searches_what_is_indexed_while_the_endpoint_is_down_and_new_text_waits(
    server: EmbeddingServer, workspace: Path
) -> None:
    """The README: "search answers with BM25 alone meanwhile, and indexing new text waits for the endpoint". A CLI
    search after an edit failed instead (exit 1): reconciling first needed the endpoint for the new text."""
    settings = {"provider": "openai", "base_url": server.url, "model": "fake-a", "api_key_env": "", "max_retries": 0}
    with Memory(workspace, embedding=settings) as memory:
        memory.index()
    (workspace / "memory" / "2026-02-13.md").write_text("# 2026-02-13\n\n## Zookeeper\n\nA quorum of five nodes.\n")
    env = {f"MEMSEARCH_EMBEDDING_{k.upper()}": str(v) for k, v in settings.items()}
    env["MEMSEARCH_EMBEDDING_BASE_URL"] = f"http://127.0.0.1:{free_port()}/v1"
    found = cli(workspace, "search", "Redis cache TTL", env=env)
    assert found.returncode == 0 and "Redis Caching" in found.stdout, found.stderr
    assert "cannot reach" in found.stderr and "searching what is indexed already" in found.stderr
    assert cli(workspace, "index", env=env).returncode == 1  # (indexing itself says it failed)
    # the same through an owner (a warm one, as the hooks keep): the warm owner ended at once, and an owner's failure
    # came back as a RuntimeError, which failed the search
    warm = cli(workspace, "warm", "--detach", "--idle", "5", env=env)
    assert warm.returncode == 0 and "warming" in warm.stdout, warm.stderr
    (workspace / "memory" / "2026-02-14.md").write_text("# 2026-02-14\n\n## Etcd\n\nThree nodes.\n")
    found = cli(workspace, "search", "Redis cache TTL", env=env)
    assert found.returncode == 0 and "Redis Caching" in found.stdout, found.stderr
    assert "searching what is indexed already" in found.stderr


def test_a_query_waits_at_most_the_query_timeout_and_one_retry(
    server: EmbeddingServer, settings: Callable[..., EmbeddingConfig]
) -> None:
    embedder = create_embedder(settings(timeout_s=60.0, max_retries=4))
    assert isinstance(embedder, OpenAIEmbedder)
    embedder_module.QUERY_TIMEOUT_S = 0.3  # as 10 s would, in a test's time
    try:
        server.script = [1.0, 1.0, 1.0]
        start = time.monotonic()
        with pytest.raises(EmbeddingError, match=r"timed out after 0\.3s \(2 attempts\)"):
            embedder.embed_query("slow")
        assert time.monotonic() - start < 5
    finally:
        embedder_module.QUERY_TIMEOUT_S = 10.0


async def test_workspace_symbol_during_a_slow_first_index_answers_instead_of_failing(
    server: EmbeddingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lsprotocol import types

    from memsearch_lsp.lsp.features.symbols import READY_WAIT_S
    from tests.helpers import make_workspace, start, stop

    for key, value in {
        "PROVIDER": "openai",
        "BASE_URL": server.url,
        "MODEL": "fake-a",
        "API_KEY_ENV": "",
        "BATCH_SIZE": "2",
        "TIMEOUT_S": "30",
    }.items():
        monkeypatch.setenv(f"MEMSEARCH_EMBEDDING_{key}", value)
    ws = make_workspace(tmp_path)
    server.script = [1.0] * 400  # every request answers after a second: the first index takes ~25 s
    session = await start(ws)
    try:
        while len(server.requests) < 2:  # the first pass is under way (a second a request)
            await asyncio.sleep(0.05)
        begin = time.monotonic()
        result = await session.client.workspace_symbol_async(types.WorkspaceSymbolParams(query="Redis cache TTL"))
        # Answered (from the part indexed so far) after waiting READY_WAIT_S for the first pass, not an error
        # and not after the whole first pass.
        assert isinstance(result, list)
        assert time.monotonic() - begin < READY_WAIT_S + 5 and not session.indexed
        server.script = []  # the rest of the pass at full speed
        await session.wait_indexed(1, timeout=120)
        after = await session.client.workspace_symbol_async(types.WorkspaceSymbolParams(query="Redis cache TTL"))
        assert after and after[0].name.startswith("Redis Caching")
    finally:
        await stop(session)


async def test_mcp_search_during_a_slow_first_index_answers_within_the_bound_and_says_so(
    server: EmbeddingServer, tmp_path: Path
) -> None:
    """MCP's memory_search reconciled the whole index before answering (24 s for 301 chunks; minutes for a real
    memory, past a client's tool timeout). The first search now starts the pass in the background and
    waits READY_WAIT_S at most, then answers from the part indexed so far with `indexing` true, and a client that
    sent a progressToken hears the pass's progress meanwhile."""
    import os
    import sys

    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from tests.helpers import make_workspace

    bound_s = 10.0  # READY_WAIT_S, as the README says it: "waits at most 10 s"

    settings = {"PROVIDER": "openai", "BASE_URL": server.url, "MODEL": "fake-a", "API_KEY_ENV": "", "BATCH_SIZE": "2"}
    env = {
        **os.environ,
        **{f"MEMSEARCH_EMBEDDING_{k}": v for k, v in settings.items()},
        "MEMSEARCH_EMBEDDING_TIMEOUT_S": "30",
    }
    ws = make_workspace(tmp_path)
    server.script = [1.0] * 400  # every request answers after a second: the first index takes ~25 s
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memsearch_lsp", "mcp", "--workspace", str(ws)], env=env
    )
    heard: list[float] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append(done)

    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await asyncio.sleep(2.0)  # no pass before the first search (a remember first does not wait for one)
        assert len(server.requests) < 2, "indexed before the first search"
        begin = time.monotonic()
        first = await asyncio.wait_for(
            session.call_tool("memory_search", {"query": "Redis cache TTL"}, progress_callback=progress), 60
        )
        assert time.monotonic() - begin < bound_s + 5, "waited for the whole first index"
        assert not first.is_error and first.structured_content is not None, first.content
        assert first.structured_content["indexing"] is True and isinstance(first.structured_content["hits"], list)
        assert heard, "no progress notification for the progressToken"
        server.script = []  # the rest of the pass at full speed
        for _ in range(120):
            after = (await session.call_tool("memory_search", {"query": "Redis cache TTL"})).structured_content
            if after is not None and not after["indexing"]:
                break
        assert after is not None and after["indexing"] is False
        assert after["hits"] and after["hits"][0]["heading"] == "Redis Caching"


def test_mcp_closed_during_the_first_index_exits_cleanly(tmp_path: Path) -> None:
    """The client closed stdin while the index pass ran in the background (the bundled ONNX model embedding): the
    interpreter tore down with that native thread running (exit -6, "terminate called without an active
    exception"). Closing now stops the pass and waits for it: exit 0."""
    import json
    import os
    import subprocess
    import sys

    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    for f in range(30):  # 3,000 sections: the first pass takes about a minute
        notes = "".join(f"## 10:{i:02d} note {f}-{i}\n\nThe consumer {f}-{i} lag was fixed.\n\n" for i in range(100))
        (ws / "memory" / f"2026-02-{f + 1 if f < 28 else f - 27:02d}{'' if f < 28 else '.2'}.md").write_text(notes)
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "d"), "XDG_CONFIG_HOME": str(tmp_path / "c")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "memsearch_lsp", "mcp", "--workspace", str(ws)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        search = {"name": "memory_search", "arguments": {"query": "consumer lag"}}
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": search},
        ):
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()
        assert proc.stdout.readline(), "no answer to initialize"
        assert b'"indexing":true' in proc.stdout.readline().replace(b" ", b""), "the pass did not run past the search"
        proc.stdin.close()
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = proc.stderr.read().decode() if proc.stderr is not None else ""
    assert rc == 0, stderr[-2000:]
    assert "terminate called" not in stderr


def test_an_answer_cut_off_mid_body_is_said_as_such(settings: Callable[..., EmbeddingConfig]) -> None:
    """An endpoint that closed the connection in the middle of its answer escaped as a raw error of the HTTP library
    the installed openai client uses (httpx2 since openai 3.x; the code caught httpx's alone)."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))

    def answer_half() -> None:
        with listener:
            for _ in range(4):  # (the client may ask again)
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                with conn:
                    conn.recv(65536)
                    conn.sendall(
                        b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"da'
                    )

    threading.Thread(target=answer_half, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    with pytest.raises(EmbeddingError, match=r"the answer was cut off"):
        create_embedder(settings(base_url=url, max_retries=0)).embed(["half"])
    listener.close()


def test_an_endpoint_that_quotes_the_api_key_back_never_has_it_shown(server: EmbeddingServer, workspace: Path) -> None:
    """Some endpoints quote the Authorization header in their errors ("Incorrect API key provided: Bearer sk-..."):
    index, search (its warning, twice in --json) and doctor printed the key whole. What memsearch sent is hidden."""
    secret = "sk-proj-" + "AbCdEfGh12345678" * 10  # (as long as real keys: one that runs past where a quote is cut)
    settings = {"provider": "openai", "base_url": server.url, "model": "fake-a", "max_retries": "0"}
    env = {f"MEMSEARCH_EMBEDDING_{k.upper()}": v for k, v in settings.items()}
    env |= {"MEMSEARCH_EMBEDDING_API_KEY_ENV": "QUOTED_TEST_KEY", "QUOTED_TEST_KEY": secret}
    server.script = ["echo401"] * 20
    said = cli(workspace, "index", env=env)
    assert said.returncode == 1 and "HTTP 401 (1 attempt): Incorrect API key provided: Bearer ***;" in said.stderr
    server.script = ["echo500"] * 20
    outputs = [said, cli(workspace, "search", "Redis", "--json", env=env), cli(workspace, "-v", "index", env=env)]
    server.script = ["echo401"] * 20
    outputs.append(cli(workspace, "doctor", env=env))
    server.script = ["echo200"] * 20  # (a 200 answer that is no embeddings list, quoted as it starts: review E, 4)
    outputs.append(cli(workspace, "index", env=env))
    assert "not an embeddings list" in outputs[4].stderr and "Bearer ***" in outputs[4].stderr, outputs[4].stderr
    assert "Bearer ***" in outputs[1].stdout + outputs[1].stderr and "Bearer ***" in outputs[3].stdout
    assert server.headers and all(h["authorization"] == f"Bearer {secret}" for h in server.headers)  # (it was sent)
    assert not [out.args[-3:] for out in outputs if secret in out.stdout + out.stderr]


def test_status_and_the_readme_say_what_is_sent_windows_of_each_chunk(server: EmbeddingServer, workspace: Path) -> None:
    """`status` said "whole chunks up to 8191 tokens" (the bundled model: "the first 256 tokens of each chunk
    (heading path + text)") while every provider is sent windows of the chunk's text (core/chunks.py)."""
    long_section = "## Big section\n" + " ".join(["lorem ipsum dolor sit amet"] * 600) + "\n"
    (workspace / "memory" / "long.md").write_text("# Long\n\n" + long_section)
    with Memory(workspace, embedding={"provider": "openai", "base_url": server.url, "model": "fake-a"}) as memory:
        memory.index()
        reads = memory.status()["reads"]
    sent = [t for r in server.requests for t in r["input"]]
    assert max(map(len, sent)) <= WINDOW_CHARS and "## Big section" in sent and "# Long\n## Big section" not in sent
    windows = f"in windows of at most {WINDOW_CHARS} characters cut at line ends, at most {MAX_WINDOWS} a chunk"
    assert reads == f"the chunk's text (its heading line included, not the headings above it) {windows}; " + (
        f"each window cut at 8191 tokens ({8191 * CHARS_PER_TOKEN} characters)"
    )
    assert reads_what(create_embedder(EmbeddingConfig())).endswith(f"{windows}; each window cut at 256 tokens")
    readme = " ".join((Path(__file__).parents[2] / "README.md").read_text().split())
    assert windows in readme and "(`reads: the chunk's text (its heading line included, not the headings" in readme
