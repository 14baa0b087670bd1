"""An OpenAI-compatible endpoint (embeddings, chat completions): its client, set up from settings, and its
failures said in one sentence naming the endpoint, the requests made and the setting to check.

The openai client itself retries 429, 5xx, timeouts and lost connections with exponential backoff
(honouring Retry-After) up to `max_retries` times; both the embedder and the summariser go through here.
A redirect is not followed: what is sent (the memory, the API key) goes only where the base_url points. The API key
sent is hidden (***) wherever an endpoint's answer is quoted: some echo it in their error messages.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urljoin, urlsplit, urlunsplit

from memsearch_lsp.trust import hide_credentials

log = logging.getLogger(__name__)

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})
_ERROR_PREFIX = re.compile(r"^Error code: \d+ - ")
HIDDEN_KEY_CHARS = 8  # a shorter "key" (none, EMPTY, ollama) is a placeholder, not a secret: the message is left whole
_sent = threading.local()  # requests this thread sent inside `Endpoint.failures` (the client's retries included)


def _one_more(_request: Any) -> None:
    _sent.count = getattr(_sent, "count", 0) + 1


@dataclass
class Endpoint:
    """One endpoint as its settings section describes it (`embedding` or `compact`)."""

    role: str  # what messages call it: "embedding", "summariser"
    section: str  # the settings section named in hints
    base_url: str
    api_key_env: str
    timeout_s: float
    max_retries: int
    url: str = ""  # the URL messages name (default: base_url)
    _client: Any = field(default=None, init=False, repr=False)
    _key: str = field(default="", init=False, repr=False)  # the API key the client sends: hidden in what is quoted
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def where(self) -> str:
        return f"{self.role} endpoint {self.url or self.base_url}"

    def hidden(self, text: str) -> str:
        """`text` (what the endpoint answered) with the API key the client sent as ***."""
        return hide_key(text, self._key)

    def client(self) -> Any:
        """The openai client, made on first use; the API key only from the environment variable named in
        the settings (a remote endpoint without one is called anyway, with a warning)."""
        with self._lock:
            if self._client is None:
                key = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
                if not key:
                    host = urlsplit(self.base_url).hostname or ""
                    log.log(
                        logging.DEBUG if host in LOCAL_HOSTS else logging.WARNING,
                        "environment variable %s is not set; calling %s without an API key",
                        self.api_key_env or f"({self.section}.api_key_env)",
                        self.url or self.base_url,
                    )
                self._client, self._key = openai_client(self.base_url, key, self.timeout_s, self.max_retries), key
            return self._client

    @contextlib.contextmanager
    def failures(
        self,
        error: type[Exception],
        model: str,
        hints: Mapping[int, str] | None = None,
        *,
        timeout_s: float | None = None,
        max_retries: int | None = None,
    ) -> Iterator[None]:
        """The openai client's errors inside the block, raised again as one `error` each, with the requests it
        sent (a 401 is not retried, a 500 is); `hints` adds a sentence for an HTTP status beside the usual ones
        (API key, base URL and model). `timeout_s` and `max_retries`: what the block's client used when not the
        settings' (a search's query)."""
        import openai

        timeout = self.timeout_s if timeout_s is None else timeout_s
        planned = (self.max_retries if max_retries is None else max_retries) + 1
        _sent.count = 0
        try:
            yield
        except openai.OpenAIError as exc:
            tries = getattr(_sent, "count", 0) or planned
            said = self._said(exc, model, hints or {}, timeout, f"{tries} attempt{'s' if tries != 1 else ''}")
            raise error(said) from None  # (the client's error, which may quote the API key, left out of tracebacks)

    def _said(self, exc: Exception, model: str, hints: Mapping[int, str], timeout: float, attempts: str) -> str:
        """What `exc` (an openai error) means: the endpoint, what was tried and what to check."""
        import openai

        told = message(exc, self._key)
        if isinstance(exc, openai.APITimeoutError):
            return (
                f"{self.where} timed out after {timeout:g}s ({attempts}); raise {self.section}.timeout_s "
                "or check the server"
            )
        if isinstance(exc, openai.APIConnectionError):
            return f"cannot reach {self.where} ({attempts}): {told.rstrip('.')}; check {self.section}.base_url"
        if isinstance(exc, openai.APIStatusError) and 300 <= exc.status_code < 400:
            return (
                f"{self.where} redirects to {redirect_target(exc.response)}: not followed (what it is sent goes only "
                f"where {self.section}.base_url points); set {self.section}.base_url to that address if you trust it"
            )
        if isinstance(exc, openai.APIStatusError):
            return (
                f"{self.where} answered HTTP {exc.status_code} ({attempts}): {told}"
                f"{self._hint(exc.status_code, model, hints)}"
            )
        return f"{self.where} failed: {told}"

    def _hint(self, status: int, model: str, hints: Mapping[int, str]) -> str:
        if status in (401, 403):
            return f"; check the API key in the environment variable {self.api_key_env}"
        if status == 404:
            return f"; check {self.section}.base_url and {self.section}.model ({model!r})"
        return f"; {hints[status]}" if status in hints else ""


def endpoint_url(base_url: str, path: str) -> str:
    """`path` under `base_url`, its query kept after it (`http://h/v1?api_key=k` -> `http://h/v1/embeddings?api_key=k`,
    not `http://h/v1?api_key=k/embeddings`)."""
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + path.lstrip("/")))


def openai_client(base_url: str, key: str, timeout_s: float, max_retries: int) -> Any:
    """The openai client an endpoint is asked through (the embedder, the summariser, doctor): a redirect answers
    as an error instead of being followed, and each request sent is counted for `Endpoint.failures`. A query in
    `base_url` is sent with every request, after its path (the client would append the path to the query)."""
    from openai import DefaultHttpxClient, OpenAI

    parts = urlsplit(base_url)
    return OpenAI(
        base_url=urlunsplit(parts._replace(query="", fragment="")),
        default_query=dict(parse_qsl(parts.query, keep_blank_values=True)) or None,
        api_key=key or "no-key",
        timeout=timeout_s,
        max_retries=max_retries,
        http_client=DefaultHttpxClient(follow_redirects=False, event_hooks={"request": [_one_more]}),
    )


def models_answer(base_url: str, key: str, timeout_s: float) -> tuple[int, str]:
    """GET {base_url}/models asked once as every endpoint is asked (`openai_client`: the API key, a user and
    password in the URL, no redirect followed): its HTTP status, with where a redirect points; 0 and why when no
    answer came (refused, timed out, not a URL)."""
    import openai

    client = openai_client(base_url, key, timeout_s, 0)
    try:
        return client.models.with_raw_response.list().status_code, ""
    except openai.APIStatusError as exc:
        return exc.status_code, redirect_target(exc.response) if 300 <= exc.status_code < 400 else ""
    except (openai.OpenAIError, ValueError) as exc:
        reason = exc.__cause__ if isinstance(exc, openai.APIConnectionError) and exc.__cause__ else exc
        return 0, str(reason) or type(reason).__name__
    finally:
        client.close()


def message(exc: Exception, key: str = "") -> str:
    """The endpoint's own error message (its JSON body's `message` when there is one), on one line, with the API
    key sent (`key`) hidden wherever it is quoted."""
    body = getattr(exc, "body", None)
    text = body.get("message") if isinstance(body, dict) and body.get("message") else getattr(exc, "message", exc)
    text = _ERROR_PREFIX.sub("", " ".join(str(text).split()))
    text = hide_key(text, key)
    return text if len(text) <= 300 else text[:299] + "…"


def hide_key(text: str, key: str) -> str:
    """`text` with the API key `key` as *** (a placeholder shorter than HIDDEN_KEY_CHARS is left)."""
    return text.replace(key, "***") if len(key) >= HIDDEN_KEY_CHARS else text


def redirect_target(response: Any) -> str:
    """Where a redirect answer (an httpx response) points: its Location made absolute, without its query and with
    any password hidden ("(no Location)" when it names none)."""
    location = response.headers.get("location", "")
    if not location:
        return "(no Location)"
    parts = urlsplit(urljoin(str(response.url), location))
    return hide_credentials(urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")))
