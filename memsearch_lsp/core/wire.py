"""The wire of every boundary between our processes: JSON-RPC 2.0 messages, one per line (the owner's socket, the
engine's process), their errors, and who is at the other end of a Unix socket."""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
from typing import Any

MAX_MESSAGE = 256 * 1024 * 1024  # bytes of one message (a group of rows with their vectors is well below)
INVALID_PARAMS, INTERNAL_ERROR = -32602, -32603


def send(out: Any, message: dict[str, Any]) -> None:
    """Write one message to a socket (`sendall`) or a binary file (`write`, then flushed)."""
    data = json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode() + b"\n"
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
