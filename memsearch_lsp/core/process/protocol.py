"""The owner's protocol: JSON-RPC 2.0 messages, one per line (core/wire.py), over a Unix socket.

Each index operation is declared once, in `core.api.IndexApi`; this module derives its wire form from that
declaration: a request's params are the operation's arguments by name, unstructured (and structured again on the
other side) by one cattrs converter from the operation's type hints, and so is its result. A callable `progress`
argument travels as `$/progress` notifications sent before the reply. A caller's mistake (bad input) comes back as
error code -32602 and is raised as ValueError; an embeddings endpoint's failure as -32001 (EmbeddingError: a
search goes on without the new text); any other failure as -32603 (RuntimeError); a peer that is not this
user is never answered (`peer_uid`).

The protocol has a number, PROTOCOL, in every `ping` answer and owner record: a client asks nothing of an owner
that says another (or none: a build before it), since their operations, arguments or payloads may differ
(`OtherProtocol`, one line naming the pid to restart).
"""

from __future__ import annotations

import datetime as dt
import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, get_type_hints

from cattrs import Converter

from memsearch_lsp.core.api import Forgotten, IndexApi, Remembered
from memsearch_lsp.core.chunks import Chunk
from memsearch_lsp.core.embedding.base import EmbeddingError
from memsearch_lsp.core.index import IndexStats, Progress
from memsearch_lsp.core.search.hybrid import Expanded, Hit
from memsearch_lsp.core.store import IndexBusy

F = TypeVar("F", bound=Callable[..., Any])
PROGRESS = "$/progress"
#: The owner protocol's number: bump it whenever an IndexApi operation, one of its parameters, a search setting (a
#: search's overrides) or the shape of a payload (Hit, Chunk, Expanded, IndexStats, Remembered, Forgotten, status)
#: changes; tests/unit/test_owner_protocol.py fails, naming this line, when they change without a bump.
PROTOCOL = 2

CONVERTER = Converter()
CONVERTER.register_unstructure_hook(dt.datetime, dt.datetime.isoformat)
CONVERTER.register_structure_hook(dt.datetime, lambda value, _: dt.datetime.fromisoformat(value))
CONVERTER.register_unstructure_hook(dt.date, dt.date.isoformat)

# Remembered's fields are typed with names its module imports for the type checker only.
CONVERTER.register_unstructure_hook(
    Remembered,
    lambda r: {
        "source": r.source,
        "chunks": CONVERTER.unstructure(r.chunks),
        "stats": CONVERTER.unstructure(r.stats),
        "lines": list(r.lines) if r.lines else None,
        "indexing": r.indexing,
    },
)
CONVERTER.register_structure_hook(
    Remembered,
    lambda d, _: Remembered(
        d["source"],
        CONVERTER.structure(d["chunks"], tuple[Chunk, ...]),
        CONVERTER.structure(d["stats"], IndexStats),
        lines=tuple(d["lines"]) if d.get("lines") else None,
        indexing=bool(d.get("indexing")),
    ),
)

#: The operations of IndexApi, by name; their type hints read once.
OPERATIONS = tuple(name for name, value in vars(IndexApi).items() if inspect.isfunction(value) and name[0] != "_")
_TYPES = {
    "Chunk": Chunk,
    "Expanded": Expanded,
    "Forgotten": Forgotten,
    "Hit": Hit,
    "IndexStats": IndexStats,
    "Progress": Progress,
    "Remembered": Remembered,
}


class OwnerGone(RuntimeError):
    """The process that owns the index stopped answering."""


class OtherProtocol(IndexBusy):
    """The index is held by a process of another release, whose owner protocol is not PROTOCOL (or one of a build
    before it): it is asked nothing, and holds the index until it is restarted."""

    def __init__(self, pid: int, older: bool = False):
        self.pid = pid
        self.problem = (
            f"another process holds the index: an older memsearch-lsp (pid {pid}, by its owner record, answers in no "
            "protocol of this one)"
            if older
            else f"the index is served by pid {pid}, a memsearch-lsp of another version"
        )
        self.fix = f"restart it (close and reopen the editor, or `kill {pid}`)"
        super().__init__(f"{self.problem}: {self.fix}")


def speaks(about: Any) -> bool:
    """An owner's ping answer says this build's PROTOCOL."""
    return isinstance(about, dict) and about.get("protocol") == PROTOCOL


class OwnerBusy(TimeoutError):
    """The owner answered a ping, then nothing within the time its caller gives it (it waits for an index pass)."""


# failures a caller handles by their kind, each under its own error code (JSON-RPC's range for a server's own)
KINDS: dict[int, type[Exception]] = {-32001: EmbeddingError}  # an embeddings endpoint that does not answer


def code_of(exc: Exception) -> int | None:
    """The error code of a failure `KINDS` names (None: the usual ones)."""
    return next((code for code, kind in KINDS.items() if isinstance(exc, kind)), None)


@functools.cache
def declared(op: str) -> tuple[inspect.Signature, dict[str, Any]]:
    """The signature and type hints of the IndexApi operation `op` (read once)."""
    method = getattr(IndexApi, op)
    return inspect.signature(method), get_type_hints(method, localns=_TYPES)


def request(op: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[dict[str, Any], Progress | None]:
    """(the params of a call of `op` with these arguments, its progress callback if it has one)."""
    bound = declared(op)[0].bind(None, *args, **kwargs).arguments
    bound.pop("self", None)
    progress = bound.pop("progress", None)
    params = {name: CONVERTER.unstructure(value) for name, value in bound.items() if name != "overrides"}
    params.update(CONVERTER.unstructure(bound.get("overrides", {})))
    if progress is not None:
        params["progress"] = True
    return params, progress


def call_arguments(op: str, params: dict[str, Any], progress: Progress) -> dict[str, Any]:
    """The keyword arguments of `op` from its params (ValueError for a name or value it does not take)."""
    signature, types = declared(op)
    known = signature.parameters
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


def asked_of_owner(method: F) -> F:
    """A client's version of the IndexApi operation `method`: the same signature, asked of the owner
    (`self.ask(op, params, progress)`)."""
    op = method.__name__

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        params, progress = request(op, args, kwargs)
        result, kind = self.ask(op, params, progress), declared(op)[1]["return"]
        return None if kind is type(None) else CONVERTER.structure(result, kind)

    functools.update_wrapper(call, method)
    return call  # type: ignore[return-value]
