"""The dimension an endpoint's index opens with (core/embedding/dimension.py): the one recorded for its model, taken at
once (nothing waits on an endpoint that hangs), checked by the endpoint's first answer."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memsearch_lsp.core.embedding import EmbeddingError
from memsearch_lsp.core.embedding import openai as embedder_module
from memsearch_lsp.core.memory import Memory
from tests import fakes
from tests.fakes import EmbeddingServer


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    srv = EmbeddingServer()
    yield srv
    srv.close()


def settings(server: EmbeddingServer, **changes: Any) -> dict[str, Any]:
    return {"provider": "openai", "base_url": server.url, "model": "fake-a", "api_key_env": "", **changes}


def test_a_complete_index_opens_at_once_while_its_endpoint_hangs(
    server: EmbeddingServer, workspace: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every command and the language server waited timeout_s x attempts on a "dimension probe" sent at open, though
    the dimension was recorded (CLI search: 91 s against an endpoint that hung), and only then answered by BM25."""
    with Memory(workspace, embedding=settings(server)) as memory:
        memory.index()
    server.requests.clear()
    monkeypatch.setattr(embedder_module, "QUERY_TIMEOUT_S", 0.3)  # (10 s in use)
    server.script = [5.0] * 8  # every request hangs past the timeouts
    hanging = settings(server, timeout_s=2.0, max_retries=2)
    with Memory(workspace, embedding=hanging) as memory, caplog.at_level(logging.WARNING):
        start = time.monotonic()
        status = memory.status()
        assert (status["dim"], status["chunks"] > 20) == (16, True)
        assert time.monotonic() - start < 1.5 and server.requests == [], "nothing was asked of the endpoint"
        hits = memory.search("Redis cache TTL", top_k=3)
        assert hits and hits[0].heading == "Redis Caching" and "BM25 alone" in caplog.text
        assert time.monotonic() - start < 4
    assert [r["input"] for r in server.requests] == [["Redis cache TTL"]] * 2  # the query and its one retry only


def test_a_dimension_changed_under_the_same_model_name_is_caught_and_the_index_built_again(
    server: EmbeddingServer, workspace: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The recorded dimension is not asked of the endpoint at open: its first answer checks it. Vectors of another
    dimension are never stored; the record follows the endpoint, and the next open moves the old index aside."""
    with Memory(workspace, embedding=settings(server)) as memory:
        memory.index()
    record = workspace / ".memsearch" / f"dimension-{memory.collection}.txt"
    assert record.read_text() == "openai:fake-a\n16\n"
    monkeypatch.setitem(fakes.DIMS, "fake-a", 32)  # the endpoint now serves another model under the same name
    (workspace / "memory" / "2026-02-13.md").write_text("# 2026-02-13\n\n## Zookeeper\n\nA quorum of five nodes.\n")
    with Memory(workspace, embedding=settings(server)) as memory:
        with pytest.raises(
            EmbeddingError, match=r"now answers 32-d vectors .* built with 16-d ones: it is moved aside"
        ):
            memory.index()
        assert record.read_text() == "openai:fake-a\n32\n"
        with caplog.at_level(logging.WARNING):
            hits = memory.search("Redis cache TTL", top_k=3)  # what is indexed still answers, by BM25
        assert hits and hits[0].heading == "Redis Caching" and "now answers 32-d vectors" in caplog.text
    with Memory(workspace, embedding=settings(server)) as memory:
        stats = memory.index()
        assert stats.chunks_embedded == stats.chunks_total > 20  # every chunk again, with the new dimension
        assert memory.store.dim == 32 and memory.status()["dim"] == 32
        assert memory.search("quorum of five nodes", top_k=1)[0].heading == "Zookeeper"
    aside = [p.name for p in (workspace / ".memsearch").iterdir() if ".previous-" in p.name]
    assert len(aside) == 1, "the index built for 16-d vectors was moved aside"


def test_a_new_model_is_probed_once_and_its_dimension_recorded(server: EmbeddingServer, workspace: Path) -> None:
    with Memory(workspace, embedding=settings(server, model="fake-b")) as memory:
        memory.index()
        assert memory.store.dim == 32
    record = workspace / ".memsearch" / f"dimension-{memory.collection}.txt"
    assert record.read_text() == "openai:fake-b\n32\n"
    assert server.texts_for("fake-b").count("dimension probe") == 1


def test_a_record_that_disagrees_with_the_index_is_checked_before_the_index_is_moved_aside(
    server: EmbeddingServer, workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A recorded dimension taken on trust (8, damaged or written by hand) had a sound 16-d index moved aside at open
    and all its chunks embedded again: when the saved index holds vectors of another one, the endpoint is asked."""
    with Memory(workspace, embedding=settings(server)) as memory:
        memory.index()
        chunks = memory.status()["chunks"]
    (workspace / ".memsearch" / "dimension-memsearch.txt").write_text("openai:fake-a\n8\n")
    server.requests.clear()
    with Memory(workspace, embedding=settings(server)) as memory, caplog.at_level(logging.WARNING):
        assert memory.status()["dim"] == 16 and memory.status()["chunks"] == chunks
        assert not memory.index().chunks_embedded
        assert memory.search("Redis cache TTL", top_k=1)[0].heading == "Redis Caching"
    assert "moved to" not in caplog.text and not list((workspace / ".memsearch").glob("*.broken-*"))
    assert server.requests[0]["input"] == ["dimension probe"]
