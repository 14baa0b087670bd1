"""The one protocol between our processes: JSON-RPC 2.0 messages, one per line, over a Unix socket.

Each index operation is declared once, in `core.api.IndexApi`; this module derives its wire form from that
declaration: a request's params are the operation's arguments by name, unstructured (and structured again on the
other side) by one cattrs converter from the operation's type hints, and so is its result. A callable `progress`
argument travels as `$/progress` notifications sent before the reply. A caller's mistake (bad input) comes back as
error code -32602 and is raised as ValueError; any other failure as -32603 (RuntimeError); a peer that is not this
user is never answered (`peer_uid`).
"""

from __future__ import annotations

import datetime as dt
import functools
import inspect
import json
import os
import socket
import struct
import sys
from collections.abc import Callable
from typing import Any, TypeVar, get_type_hints

from cattrs import Converter

from memsearch_lsp.core.api import IndexApi, Remembered
from memsearch_lsp.core.chunks import Chunk
from memsearch_lsp.core.index import IndexStats, Progress
from memsearch_lsp.core.search.hybrid import Expanded, Hit

F = TypeVar("F", bound=Callable[..., Any])
MAX_MESSAGE = 64 * 1024 * 1024  # bytes of one message: a reply of 1000 hits with snippets is well below
INVALID_PARAMS, INTERNAL_ERROR = -32602, -32603
PROGRESS = "$/progress"

CONVERTER = Converter()
CONVERTER.register_unstructure_hook(dt.datetime, dt.datetime.isoformat)
CONVERTER.register_structure_hook(dt.datetime, lambda value, _: dt.datetime.fromisoformat(value))
CONVERTER.register_unstructure_hook(dt.date, dt.date.isoformat)

# Remembered's fields are typed with names its module imports for the type checker only.
CONVERTER.register_unstructure_hook(
    Remembered,
    lambda r: {"source": r.source, "chunks": CONVERTER.unstructure(r.chunks), "stats": CONVERTER.unstructure(r.stats)},
)
CONVERTER.register_structure_hook(
    Remembered,
    lambda d, _: Remembered(
        d["source"], CONVERTER.structure(d["chunks"], tuple[Chunk, ...]), CONVERTER.structure(d["stats"], IndexStats)
    ),
)

#: The operations of IndexApi, by name; their type hints read once.
OPERATIONS = tuple(name for name, value in vars(IndexApi).items() if inspect.isfunction(value) and name[0] != "_")
_TYPES = {"Chunk": Chunk, "Expanded": Expanded, "Hit": Hit, "IndexStats": IndexStats, "Progress": Progress,
          "Remembered": Remembered}  # fmt: skip


class OwnerGone(RuntimeError):
    """The process that owns the index stopped answering."""


@functools.cache
def hints(op: str) -> dict[str, Any]:
    return get_type_hints(getattr(IndexApi, op), localns=_TYPES)


@functools.cache
def signature(op: str) -> inspect.Signature:
    return inspect.signature(getattr(IndexApi, op))


def request(op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[dict[str, Any], Progress | None]:
    """(the params of a call of `op` with these arguments, its progress callback if it has one)."""
    bound = signature(op).bind(None, *args, **kwargs).arguments
    bound.pop("self", None)
    progress = bound.pop("progress", None)
    params = {name: CONVERTER.unstructure(value) for name, value in bound.items() if name != "overrides"}
    params.update(CONVERTER.unstructure(bound.get("overrides", {})))
    if progress is not None:
        params["progress"] = True
    return params, progress


def call_arguments(op: str, params: dict[str, Any], progress: Progress) -> dict[str, Any]:
    """The keyword arguments of `op` from its params (ValueError for a name or value it does not take)."""
    known, types = signature(op).parameters, hints(op)
    arguments: dict[str, Any] = {}
    for name, value in params.items():
        if name == "progress":
            arguments[name] = progress if value else None
        elif name in known and known[name].kind is not inspect.Parameter.VAR_KEYWORD:
            try:
                arguments[name] = CONVERTER.structure(value, types[name])
            except Exception as exc:
                raise ValueError(f"{op}: {name} cannot be {value!r:.80}") from exc
        elif any(p.kind is inspect.Parameter.VAR_KEYWORD for p in known.values()):
            arguments[name] = value
        else:
            raise ValueError(f"{op} takes no argument {name!r}")
    return arguments


def result_of(op: str, value: Any) -> Any:
    kind = hints(op)["return"]
    return None if kind is type(None) else CONVERTER.structure(value, kind)


def asked_of_owner(method: F) -> F:
    """A client's version of the IndexApi operation `method`: the same signature, asked of the owner
    (`self.ask(op, params, progress)`)."""
    op = method.__name__

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        params, progress = request(op, args, kwargs)
        return result_of(op, self.ask(op, params, progress))

    functools.update_wrapper(call, method)
    return call  # type: ignore[return-value]


# -- the wire -----------------------------------------------------------------------------------
def send(conn: socket.socket, message: dict[str, Any]) -> None:
    conn.sendall(json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode() + b"\n")


def receive(reader: Any) -> dict[str, Any] | None:
    """The next message from a connection's reader (None when it closed); ValueError for one that is not."""
    line = reader.readline(MAX_MESSAGE + 1)
    if not line:
        return None
    if len(line) > MAX_MESSAGE or not line.endswith(b"\n"):
        raise ValueError("a message too long or cut short")
    message = json.loads(line)
    if not isinstance(message, dict):
        raise ValueError("a message that is not an object")
    return message


def error(exc: BaseException) -> dict[str, Any]:
    """A JSON-RPC error object: bad input (ValueError) or a failure."""
    code = INVALID_PARAMS if isinstance(exc, ValueError) else INTERNAL_ERROR
    return {"code": code, "message": str(exc) if code == INVALID_PARAMS else f"{type(exc).__name__}: {exc}"}


def raise_error(err: Any) -> None:
    message = str(err.get("message", "the index owner failed")) if isinstance(err, dict) else str(err)
    if isinstance(err, dict) and err.get("code") == INVALID_PARAMS:
        raise ValueError(message)
    raise RuntimeError(message)


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
