"""An OpenAI-compatible endpoint's answers that are not embeddings: a redirect is not followed (the memory goes only
where embedding.base_url points), and an error says how many requests were made (a 401 is not retried)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memsearch_lsp.config import EmbeddingConfig
from memsearch_lsp.core.embedding import EmbeddingError, create_embedder
from tests.fakes import EmbeddingServer, Reply


class Answering(EmbeddingServer):
    """/v1/embeddings that gives `answer` (status, body, headers) instead of vectors while it is set."""

    def __init__(self) -> None:
        self.answer: Reply | None = None
        super().__init__()

    def reply(self, body: dict[str, Any], step: str | float | None) -> Reply:
        return self.answer or super().reply(body, step)


@pytest.fixture
def servers() -> Iterator[tuple[Answering, EmbeddingServer]]:
    endpoint, elsewhere = Answering(), EmbeddingServer()
    yield endpoint, elsewhere
    endpoint.close()
    elsewhere.close()


def settings(url: str, **changes: Any) -> EmbeddingConfig:
    return EmbeddingConfig(
        **{"provider": "openai", "base_url": url, "model": "fake-a", "api_key_env": "MS_TEST_KEY", **changes}
    )


@pytest.mark.parametrize("status", [307, 302, 301])
def test_a_redirect_is_not_followed_and_says_where_it_points(
    servers: tuple[Answering, EmbeddingServer], monkeypatch: pytest.MonkeyPatch, status: int
) -> None:
    endpoint, elsewhere = servers
    monkeypatch.setenv("MS_TEST_KEY", "sk-secret")
    port = elsewhere.url.split(":")[2].split("/")[0]
    endpoint.answer = (status, {}, {"Location": f"http://bob:pw@localhost:{port}/v1/embeddings?token=t"})
    embedder = create_embedder(settings(endpoint.url, max_retries=2))
    with pytest.raises(EmbeddingError) as info:
        embedder.embed(["the memory's private text"])
    assert elsewhere.requests == [], "neither the text nor the key went to the other host"
    assert len(endpoint.requests) == 1
    said = str(info.value)
    assert said.startswith(
        f"embedding endpoint {endpoint.url}/embeddings redirects to http://bob:***@localhost:{port}/v1/embeddings: "
        "not followed"
    ), said
    assert "embedding.base_url" in said and "pw" not in said and "token" not in said
    query = embedder.embed_query  # (a search's query goes the same way)
    with pytest.raises(EmbeddingError, match="redirects to"):
        query("redis")
    assert elsewhere.requests == []


def test_an_error_that_is_not_retried_says_one_attempt(servers: tuple[Answering, EmbeddingServer]) -> None:
    endpoint, _ = servers
    endpoint.answer = (401, {"error": {"message": "Incorrect API key provided"}}, {})
    with pytest.raises(EmbeddingError, match=r"answered HTTP 401 \(1 attempt\): Incorrect API key provided"):
        create_embedder(settings(endpoint.url, max_retries=2)).embed(["x"])
    assert len(endpoint.requests) == 1
    endpoint.answer = (500, {"error": {"message": "crashed"}}, {"retry-after-ms": "5"})
    with pytest.raises(EmbeddingError, match=r"answered HTTP 500 \(3 attempts\): crashed"):
        create_embedder(settings(endpoint.url, max_retries=2)).embed(["x"])
    assert len(endpoint.requests) == 4
    # the server says not to retry (the openai client obeys x-should-retry): the count follows what was sent
    endpoint.answer = (503, {"error": {"message": "down"}}, {"x-should-retry": "false"})
    with pytest.raises(EmbeddingError, match=r"answered HTTP 503 \(1 attempt\): down"):
        create_embedder(settings(endpoint.url, max_retries=2)).embed(["x"])
