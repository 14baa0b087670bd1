"""A small synchronous LSP client over stdio for timing the server: JSON-RPC framing, a reader thread,
automatic answers to the server's own requests, and waits for notifications with timestamps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SERVE = [sys.executable, "-m", "memsearch_lsp", "serve"]


class LspError(RuntimeError):
    pass


class LspClient:
    """Spawn the server; `request()` blocks for the answer; `wait_notification()` for a method."""

    def __init__(self, cwd: Path | None = None, env: dict[str, str] | None = None, stderr: Any = None):
        if stderr is None and os.environ.get("BENCH_SERVER_LOG"):  # debugging: keep the server's stderr
            stderr = open(os.environ["BENCH_SERVER_LOG"], "ab")  # noqa: SIM115 - lives as long as the server
        self.t_spawn = time.perf_counter()
        extra = os.environ.get("BENCH_SERVE_ARGS", "").split()  # profiling, e.g. "-m cProfile -o FILE"
        self.proc = subprocess.Popen(
            SERVE[:1] + extra + SERVE[1:],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr if stderr is not None else subprocess.DEVNULL,
            cwd=cwd,
            env={**os.environ, **(env or {})},
        )
        self._next = 0
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self._answers: dict[int, tuple[float, dict[str, Any]]] = {}
        self.notifications: list[tuple[float, str, Any]] = []  # (time, method, params)
        self.settings: dict[str, Any] = {}
        self.handlers: dict[str, Callable[[Any], Any]] = {
            "workspace/configuration": lambda p: [self.settings for _ in p.get("items", [])],
            "client/registerCapability": lambda p: None,
            "client/unregisterCapability": lambda p: None,
            "window/workDoneProgress/create": lambda p: None,
            "workspace/applyEdit": lambda p: {"applied": False},
            "window/showMessageRequest": lambda p: None,
            "window/showDocument": lambda p: {"success": False},
        }
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # -- framing -------------------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode("utf-8")
        with self._lock:
            assert self.proc.stdin is not None
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            length = 0
            while True:
                line = stream.readline()
                if not line:
                    with self._cond:
                        self._cond.notify_all()
                    return
                line = line.strip()
                if not line:
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            message = json.loads(stream.read(length))
            now = time.perf_counter()
            if "method" in message and "id" in message:  # a request from the server
                handler = self.handlers.get(message["method"])
                reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
                if handler is None:
                    reply["error"] = {"code": -32601, "message": f"bench client: no {message['method']}"}
                else:
                    reply["result"] = handler(message.get("params") or {})
                self._send(reply)
            elif "method" in message:
                with self._cond:
                    self.notifications.append((now, message["method"], message.get("params")))
                    self._cond.notify_all()
            else:
                with self._cond:
                    self._answers[message["id"]] = (now, message)
                    self._cond.notify_all()

    # -- API -----------------------------------------------------------------------------
    def send_request(self, method: str, params: Any) -> int:
        with self._lock:
            self._next += 1
            rid = self._next
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def wait_answer(self, rid: int, timeout: float = 600) -> tuple[float, Any]:
        deadline = time.perf_counter() + timeout
        with self._cond:
            while rid not in self._answers:
                left = deadline - time.perf_counter()
                if left <= 0 or self.proc.poll() is not None:
                    state = "exited" if self.proc.poll() is not None else "silent"
                    raise LspError(f"no answer to request {rid} (server {state})")
                self._cond.wait(min(left, 0.5))
            when, message = self._answers.pop(rid)
        if "error" in message:
            raise LspError(f"{message['error']}")
        return when, message.get("result")

    def request(self, method: str, params: Any, timeout: float = 600) -> Any:
        return self.wait_answer(self.send_request(method, params), timeout)[1]

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def mark(self) -> int:
        """A position in the notification list; wait_notification(after=mark) sees only later ones."""
        with self._cond:
            return len(self.notifications)

    def wait_notification(
        self, method: str, after: int = 0, timeout: float = 600, where: Callable[[Any], bool] | None = None
    ) -> tuple[float, Any]:
        deadline = time.perf_counter() + timeout
        with self._cond:
            while True:
                for when, name, params in self.notifications[after:]:
                    if name == method and (where is None or where(params)):
                        return when, params
                left = deadline - time.perf_counter()
                if left <= 0 or self.proc.poll() is not None:
                    raise LspError(f"no {method} notification within {timeout}s")
                self._cond.wait(min(left, 0.5))

    def initialize(self, root: Path, options: dict[str, Any] | None = None) -> tuple[float, Any]:
        """(seconds from spawn to the initialize answer, result); then sends `initialized`."""
        params = {
            "processId": os.getpid(),
            "rootUri": root.resolve().as_uri(),
            "workspaceFolders": [{"uri": root.resolve().as_uri(), "name": root.name}],
            "initializationOptions": options or {},
            "capabilities": {
                "workspace": {
                    "configuration": True,
                    "workspaceFolders": True,
                    "symbol": {},
                    "didChangeWatchedFiles": {"dynamicRegistration": True, "relativePatternSupport": True},
                },
                "textDocument": {
                    "synchronization": {"didSave": True, "dynamicRegistration": False},
                    "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
                    "hover": {"contentFormat": ["markdown", "plaintext"]},
                },
                "window": {"workDoneProgress": True},
                "general": {"positionEncodings": ["utf-16"]},
            },
        }
        when, result = self.wait_answer(self.send_request("initialize", params), timeout=120)
        self.notify("initialized", {})
        return when - self.t_spawn, result

    def peak_rss_mib(self) -> float:
        """VmHWM of the server and its children (sum of peaks: an upper bound)."""
        return sum(_hwm(pid) for pid in _tree(self.proc.pid))

    def rss_mib(self) -> float:
        """VmRSS now of the server and its children."""
        return sum(_hwm(pid, "VmRSS:") for pid in _tree(self.proc.pid))

    def close(self, timeout: float = 10) -> None:
        if self.proc.poll() is None:
            try:
                self.request("shutdown", None, timeout=timeout)
                self.notify("exit", None)
                self.proc.wait(timeout=timeout)
            except (LspError, OSError, subprocess.TimeoutExpired, BrokenPipeError):
                pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self) -> LspClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _tree(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _hwm(pid: int, field: str = "VmHWM:") -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def text_document(path: Path, version: int = 1) -> dict[str, Any]:
    return {
        "uri": path.resolve().as_uri(),
        "languageId": "markdown",
        "version": version,
        "text": path.read_text(encoding="utf-8"),
    }
