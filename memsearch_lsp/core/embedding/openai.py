"""OpenAIEmbedder: any OpenAI-compatible /v1/embeddings endpoint (OpenAI, Ollama, vLLM, LM Studio, llama.cpp)."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memsearch_lsp.config import EmbeddingConfig
from memsearch_lsp.core.embedding.base import CHARS_PER_TOKEN, Calibration, EmbeddingError, variant
from memsearch_lsp.core.embedding.calibration import measure
from memsearch_lsp.core.embedding.dimension import record_dim
from memsearch_lsp.core.endpoint import Endpoint, endpoint_url

log = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = 8191  # OpenAI's text-embedding-3 limit; set embedding.max_tokens for other endpoints
DEFAULT_OPENAI_MODEL = "text-embedding-3-small"
# what to check after an HTTP status beyond the API key, base URL and model (core/endpoint.py)
HINTS = {
    400: "a text may exceed the model's context: lower embedding.max_tokens",
    413: "a text may exceed the model's context: lower embedding.max_tokens",
}
# A search's query waits at most this long (and is retried once): an endpoint busy embedding the index
# must not hold a search for timeout_s x retries; the search then answers with BM25 alone (core/search/hybrid.py).
QUERY_TIMEOUT_S = 10.0
QUERY_RETRIES = 1


class OpenAIEmbedder:
    """Batches of `batch_size` texts per request; the openai client retries 429, 5xx, timeouts and lost
    connections with exponential backoff (honouring Retry-After) up to `max_retries` times."""

    provider = "openai"
    languages: tuple[str, ...] = ()  # not known: every language is read

    def __init__(self, settings: EmbeddingConfig):
        from memsearch_lsp.config import DEFAULT_MODEL

        model = settings.model if settings.model != DEFAULT_MODEL else DEFAULT_OPENAI_MODEL
        self.settings = settings
        self.model = model
        self.endpoint = endpoint_url(settings.base_url, "embeddings")
        self.batch_size = max(1, settings.batch_size)
        self.max_tokens = settings.max_tokens or DEFAULT_MAX_TOKENS
        # The stored model name: chunk ids and the embedding cache follow it, so a change re-embeds.
        self.model_name = (
            "openai:"
            + model
            + (f":{settings.dimensions}d" if settings.dimensions else "")
            + (f":{settings.max_tokens}t" if settings.max_tokens else "")
            + variant(settings)
        )
        self.dim = settings.dimensions  # 0 until the first answer
        self.dim_record: Path | None = None  # where `dim` was read from, until an answer confirms it (dimension.py)
        self.requests = 0
        self.api = Endpoint(
            "embedding",
            "embedding",
            settings.base_url,
            settings.api_key_env,
            settings.timeout_s,
            settings.max_retries,
            url=self.endpoint,
        )

    def client(self) -> Any:
        return self.api.client()

    def warm(self) -> None:
        """Nothing to load here (the endpoint holds the model)."""

    def calibration(self) -> Calibration:
        """Probed once per model name (32 texts; kept in the user's cache)."""
        return measure(self.model_name, self.embed, self.embed_query)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        prefix = self.settings.document_prefix
        cut = self._cut([prefix + t for t in texts] if prefix else texts)
        out: list[list[float]] = []
        for start in range(0, len(cut), self.batch_size):
            out.extend(self._request(cut[start : start + self.batch_size], self.model))
        return out

    def embed_query(self, query: str) -> list[float]:
        model = self.settings.query_model or self.model
        return self._request(self._cut([self.settings.query_prefix + query]), model, query=True)[0]

    def _cut(self, texts: Sequence[str]) -> list[str]:
        limit = self.max_tokens * CHARS_PER_TOKEN
        return [(t[:limit] if len(t) > limit else t) or " " for t in texts]

    def _request(self, batch: list[str], model: str, query: bool = False) -> list[list[float]]:
        extra = {"dimensions": self.settings.dimensions} if self.settings.dimensions else {}
        timeout, retries = self.settings.timeout_s, self.settings.max_retries
        client = self.client()
        if query:
            timeout, retries = min(timeout, QUERY_TIMEOUT_S), min(retries, QUERY_RETRIES)
            client = client.with_options(timeout=timeout, max_retries=retries)
        self.requests += 1
        try:
            create = client.embeddings.with_streaming_response.create
            with (
                self.api.failures(EmbeddingError, model, HINTS, timeout_s=timeout, max_retries=retries),
                create(model=model, input=batch, encoding_format="float", **extra) as response,
            ):
                body = self._read(response, len(batch))
        except httpx_errors() as exc:  # the connection broke while the body was read
            raise EmbeddingError(
                f"embedding endpoint {self.endpoint}: the answer was cut off ({type(exc).__name__}: {exc})"
            ) from exc
        return self._vectors(body, len(batch), model)

    def _read(self, response: Any, texts: int) -> bytes:
        """The answer's body, at most `max_response_bytes(texts)`: a bigger one is refused as soon as its
        Content-Length or what has arrived says so, before it is parsed."""
        cap = max_response_bytes(texts)
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > cap:
            raise EmbeddingError(self._too_big(int(declared), cap, texts))
        body = bytearray()
        for part in response.iter_bytes():
            body += part
            if len(body) > cap:
                raise EmbeddingError(self._too_big(len(body), cap, texts, more=True))
        return bytes(body)

    def _check_recorded(self, lengths: set[int]) -> None:
        """The first answer after the index opened with the dimension recorded for this model (dimension.py):
        the same confirms it; another one, in every vector, is the endpoint's model changed under the same name:
        refused (the index holds vectors of the recorded one), and recorded, so the next open moves the index
        aside and builds it again."""
        record = self.dim_record
        if record is None or len(lengths) != 1 or min(lengths) <= 0:
            return  # (vectors of several lengths, or not lists: refused below as they are)
        got = min(lengths)
        if got == self.dim:
            self.dim_record = None
            return
        record_dim(record, self.model_name, got)  # (each answer says so until the index is opened again)
        raise EmbeddingError(
            f"embedding endpoint {self.endpoint} now answers {got}-d vectors for model {self.model!r}, but the "
            f"index was built with {self.dim}-d ones: it is moved aside and built again when next opened "
            "(run `memsearch-lsp index`, or restart the editor's language server)"
        )

    def _too_big(self, size: int, cap: int, texts: int, more: bool = False) -> str:
        return (
            f"embedding endpoint {self.endpoint} sent {'over ' if more else ''}{size:,} bytes for {texts} "
            f"text{'s' if texts != 1 else ''}, more than the {cap:,} bytes allowed; check embedding.base_url"
        )

    def _vectors(self, body: bytes, expected: int, model: str = "") -> list[list[float]]:
        """The unit vectors of a /v1/embeddings answer, in input order; anything malformed (not JSON, a
        wrong count or length, a non-finite or all-zero vector) is an EmbeddingError naming the endpoint,
        raised before any vector is stored or cached. `model`: the one asked (a recorded dimension is checked
        against the passages' model's answer)."""
        where = f"embedding endpoint {self.endpoint}"
        try:
            answer = json.loads(body)
            data = sorted(answer["data"], key=lambda d: int(d["index"]))
            raw = [d["embedding"] for d in data]
        except (ValueError, TypeError, KeyError) as exc:  # json.JSONDecodeError and UnicodeDecodeError too
            start = _short(self.api.hidden(body.decode("utf-8", "replace")))
            raise EmbeddingError(
                f"{where} sent an answer that is not an embeddings list "
                f"({type(exc).__name__}: {_short(str(exc))}): {start}"
            ) from exc
        if len(raw) != expected:
            raise EmbeddingError(f"{where} returned {len(raw)} vectors for {expected} texts (model {self.model!r})")
        if self.dim_record is not None and model == self.model:
            self._check_recorded({len(item) if isinstance(item, list) else -1 for item in raw})
        vectors = []
        for n, item in enumerate(raw):
            if not isinstance(item, list) or not all(
                isinstance(x, int | float) and not isinstance(x, bool) for x in item
            ):
                raise EmbeddingError(f"{where} sent vector {n} that is not a list of numbers (model {self.model!r})")
            vector = [float(x) for x in item]
            if not self.dim:
                self.dim = len(vector)
            if len(vector) != self.dim:
                raise EmbeddingError(
                    f"{where} returned {len(vector)}-d vectors, "
                    f"expected {self.dim} (model {self.model!r}, embedding.dimensions)"
                )
            norm = math.hypot(*vector)
            if not math.isfinite(norm) or not all(math.isfinite(x) for x in vector):
                raise EmbeddingError(
                    f"{where} sent vector {n} with NaN or infinite values (model {self.model!r}); "
                    "nothing was stored: fix the endpoint and index again"
                )
            if norm == 0.0:
                raise EmbeddingError(
                    f"{where} sent vector {n} with all zeros (model {self.model!r}); "
                    "nothing was stored: fix the endpoint and index again"
                )
            vectors.append([x / norm for x in vector])
        return vectors


def max_response_bytes(texts: int) -> int:
    """The largest answer accepted for `texts` texts: 1 MiB plus 512 KiB a text (a 16,384-d vector written as
    JSON floats is ~400 KiB), so a runaway endpoint cannot take the process's memory with it."""
    return (1 << 20) + texts * (512 << 10)


def httpx_errors() -> tuple[type[Exception], ...]:
    """The transport errors of the HTTP library the installed openai client speaks through: httpx, and httpx2 (its
    fork, which openai 3.x uses; whichever is installed)."""
    import importlib

    errors: list[type[Exception]] = []
    for name in ("httpx", "httpx2"):
        try:
            library = importlib.import_module(name)
        except ImportError:
            continue
        errors += [library.HTTPError, library.StreamError]
    return tuple(errors)


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
