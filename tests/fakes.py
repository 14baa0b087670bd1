"""Fakes: a deterministic embedder (hashed bag of words, L2-normalised, no model) and a real
/v1/embeddings endpoint on 127.0.0.1 serving its vectors (http.server in a thread)."""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeEmbedder:
    """The Embedder protocol (core/embedding/__init__.py) without a model: queries embed as passages, and its
    cosines are read on the bundled model's scale (the reference calibration)."""

    provider = "fake"
    max_tokens = 0
    languages: tuple[str, ...] = ()

    def __init__(self, dim: int = 64, model_name: str = "fake-embedder"):
        self.dim = dim
        self.model_name = model_name
        self.calls: list[int] = []  # texts per embed() call
        self.texts: list[str] = []

    def embed_query(self, query: str) -> list[float]:
        return self.embed([query])[0]

    def warm(self) -> None:
        pass

    def calibration(self) -> Any:
        from memsearch_lsp.core.embedding import REFERENCE

        return REFERENCE

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        self.texts.extend(texts)
        return [self._one(t) for t in texts]

    def _one(self, text: str) -> list[float]:
        vec = [0.0] * self.dim
        for word in re.findall(r"\w+", text.lower()):
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
            vec[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        if norm == 1.0 and not any(vec):
            vec[0] = 1.0
        return [v / norm for v in vec]

    @property
    def embedded(self) -> int:
        return sum(self.calls)


class GatedEmbedder(FakeEmbedder):
    """A FakeEmbedder whose index passes wait at a gate (as a first index of thousands of notes takes minutes):
    `embed` sets `waiting` and waits until `opened` is set (a minute at most); queries are embedded at once."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting, self.opened = threading.Event(), threading.Event()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.waiting.set()
        self.opened.wait(60)
        return super().embed(texts)

    def embed_query(self, query: str) -> list[float]:
        return super().embed([query])[0]


DIMS = {"fake-a": 16, "fake-b": 32, "fake-c": 16, "fake-a-query": 16}


Reply = tuple[int, dict[str, Any], dict[str, str]]  # status, JSON body, extra headers


class JsonEndpoint:
    """An OpenAI-compatible API on 127.0.0.1 (http.server in a thread): records every request and its
    headers, follows a script of failures; a subclass answers POSTs to its `route` in `reply`."""

    route = ""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        # an HTTP status as a string -> that failure; "echo401", "echo500", "echo200": that answer quoting the request's
        # Authorization header (as some endpoints do); a float -> sleep first
        self.script: list[str | float] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append({"path": self.path, **body})
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    step = server.script.pop(0) if server.script else None
                if self.path != server.route:
                    self._send((404, {"error": {"message": f"no route {self.path}"}}, {}))
                    return
                if isinstance(step, str) and step.startswith("echo"):
                    said = f"Incorrect API key provided: {self.headers.get('Authorization')}"
                    self._send((int(step[4:]), {"error": {"message": said}}, {}))
                    return
                if isinstance(step, float):
                    time.sleep(step)
                self._send(server.reply(body, step))

            def _send(self, reply: Reply) -> None:
                status, data, headers = reply
                payload = json.dumps(data).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client gave up (a timeout)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def reply(self, body: dict[str, Any], step: str | float | None) -> Reply:
        raise NotImplementedError

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class EmbeddingServer(JsonEndpoint):
    """Speaks POST /v1/embeddings (script: "429" / "500" fail once each).

    Vectors come from FakeEmbedder (bag of words), so search over them means something; the data
    array is sent in reverse order with its `index`, as the API allows.
    """

    route = "/v1/embeddings"

    def __init__(self) -> None:
        # hold(texts) -> True: that request (the first that matches) waits until release(); `held` is set
        # meanwhile, so a test acts at a known point of the client's work (e.g. kill -9 while embedding)
        self.hold: Callable[[list[str]], bool] | None = None
        self.held, self._released = threading.Event(), threading.Event()
        super().__init__()

    def reply(self, body: dict[str, Any], step: str | float | None) -> Reply:
        if step in ("429", "500"):
            return int(str(step)), {"error": {"message": f"scripted {step}"}}, {"retry-after-ms": "5"}
        if self._holds(body.get("input")):
            self._released.wait(120)
        if body["model"] not in DIMS:
            return 404, {"error": {"message": f"model {body['model']!r} not found"}}, {}
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = self.vectors(body["model"], texts, body.get("dimensions"))
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        return (
            200,
            {
                "object": "list",
                "data": data[::-1],
                "model": body["model"],
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            },
            {},
        )

    @staticmethod
    def vectors(model: str, texts: list[str], dimensions: int | None = None) -> list[list[float]]:
        """Unnormalised on purpose (times 3): the client must normalise."""
        fake = FakeEmbedder(dim=dimensions or DIMS[model], model_name=model)
        return [[3 * x for x in v] for v in fake.embed(texts)]

    def _holds(self, texts: Any) -> bool:
        with self.lock:
            if self.hold is None or not self.hold(texts if isinstance(texts, list) else [texts]):
                return False
            self.hold = None
        self.held.set()
        return True

    def release(self) -> None:
        self._released.set()

    def texts_for(self, model: str) -> list[str]:
        return [t for r in self.requests if r.get("model") == model for t in r["input"]]

    def close(self) -> None:
        self.release()
        super().close()


class ChatServer(JsonEndpoint):
    """Speaks POST /v1/chat/completions (script: "500" fails once)."""

    route = "/v1/chat/completions"

    def __init__(self) -> None:
        self.answer: Callable[[list[dict[str, str]]], str] = lambda messages: "## Topic\n\n- a canned fact\n"
        super().__init__()

    def reply(self, body: dict[str, Any], step: str | float | None) -> Reply:
        if step == "500":
            return 500, {"error": {"message": "model crashed", "type": "server_error"}}, {"retry-after-ms": "10"}
        content = self.answer(body["messages"])
        return (
            200,
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
            {},
        )

    def user_messages(self) -> list[str]:
        return [r["messages"][-1]["content"] for r in self.requests]
