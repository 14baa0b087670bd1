"""The wire of every boundary between our processes: JSON-RPC 2.0 messages, one per line (the owner's socket, the
engine's process), their errors, and who is at the other end of a Unix socket."""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
from collections.abc import Callable
from typing import Any

MAX_MESSAGE = 256 * 1024 * 1024  # bytes of one message (a group of rows with their vectors is well below)
INVALID_PARAMS, INTERNAL_ERROR = -32602, -32603


class Gone(ConnectionError):
    """The other process closed the line before it answered."""


def send(out: Any, **fields: Any) -> None:
    """Write one message (`id`, `method`, `params`, `result` or `error`) to a socket or a binary file."""
    data = json.dumps({"jsonrpc": "2.0", **fields}, ensure_ascii=True, separators=(",", ":")).encode() + b"\n"
    if isinstance(out, socket.socket):
        out.sendall(data)
    else:
        out.write(data)
        out.flush()


def receive(reader: Any) -> dict[str, Any] | None:
    """The next message from a reader (None when it closed); ValueError for one that is not."""
    line = reader.readline(MAX_MESSAGE + 1)
    if not line:
        return None
    if len(line) > MAX_MESSAGE or not line.endswith(b"\n"):
        raise ValueError("a message too long or cut short")
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError("a message that is not an object")
    return message


def call(
    out: Any,
    reader: Any,
    method: str,
    params: dict[str, Any],
    notified: Callable[[Any], None] | None = None,
    kinds: dict[int, type[Exception]] | None = None,
) -> Any:
    """Send a request and return its result (the exception an error names, `raise_error`); the notifications sent
    before it go to `notified` (their params). Gone when the line closes first."""
    send(out, id=1, method=method, params=params)
    while (message := receive(reader)) is not None:
        if "id" not in message:
            if notified is not None:
                notified(message.get("params") or {})
            continue
        if "error" in message:
            raise_error(message["error"], kinds)
        return message.get("result")
    raise Gone(f"the other process closed the line before it answered {method!r}")


def answer(
    out: Any,
    message: dict[str, Any],
    handle: Callable[[str, dict[str, Any]], Any],
    code: Callable[[Exception], int | None] = lambda exc: None,
) -> None:
    """Reply to one request with what `handle(method, params)` returns, or the error it raised (`code`: its code)."""
    try:
        result = handle(str(message.get("method", "")), dict(message.get("params") or {}))
    except Exception as exc:  # every failure goes back to the caller, none ends the one who answers
        send(out, id=message.get("id"), error=error(exc, code(exc)))
        return
    send(out, id=message.get("id"), result=result)


def error(exc: BaseException, code: int | None = None) -> dict[str, Any]:
    """A JSON-RPC error object: bad input (ValueError) or a failure (or the given `code`)."""
    if code is None:
        code = INVALID_PARAMS if isinstance(exc, ValueError) else INTERNAL_ERROR
    return {"code": code, "message": f"{type(exc).__name__}: {exc}" if code == INTERNAL_ERROR else str(exc)}


def raise_error(err: Any, kinds: dict[int, type[Exception]] | None = None) -> None:
    """Raise what an error object says: ValueError for bad input, the exception `kinds` names for its code, else
    RuntimeError."""
    message = str(err.get("message", "the other process failed")) if isinstance(err, dict) else str(err)
    code = err.get("code") if isinstance(err, dict) else None
    if code == INVALID_PARAMS:
        raise ValueError(message)
    raise (kinds or {}).get(code, RuntimeError)(message)  # type: ignore[arg-type]


def peer_uid(conn: socket.socket) -> int | None:
    """The user id of the process at the other end of a Unix socket (None where the platform cannot say)."""
    if hasattr(socket, "SO_PEERCRED"):  # Linux: struct ucred {pid, uid, gid}
        data = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return int(struct.unpack("3i", data)[1])
    if sys.platform == "darwin":  # LOCAL_PEERCRED: struct xucred {u_int version; uid_t uid; ...}
        data = conn.getsockopt(0, 0x001, 76)
        return int(struct.unpack_from("Ii", data)[1])
    return None


def same_user(conn: socket.socket) -> bool:
    uid = peer_uid(conn)
    return uid is None or uid == os.geteuid()
