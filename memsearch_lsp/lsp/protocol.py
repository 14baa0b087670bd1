"""The JSON-RPC edge: every request gets an answer, URIs are normalised once, LSP's line model."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import sys
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, BinaryIO, cast
from urllib.parse import unquote

from cattrs import transform_error
from cattrs.errors import ClassValidationError
from cattrs.v import format_exception
from lsprotocol import types
from pygls.exceptions import (
    FeatureNotificationError,
    FeatureRequestError,
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
    JsonRpcServerNotInitialized,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.workspace import PositionCodec, TextDocument, Workspace

from memsearch_lsp.config import editor_key
from memsearch_lsp.core.embedding.base import EmbeddingError
from memsearch_lsp.core.onboard import NoMemoryHere
from memsearch_lsp.core.process.door import PassStopped
from memsearch_lsp.core.store.folder import StoreError
from memsearch_lsp.lsp.convert import LineCodec, normalize_uri, uri_places
from memsearch_lsp.trust import hide_credentials

log = logging.getLogger(__name__)

MAX_ERROR_CHARS = 300

#: The pygls releases this module was written and tested against (pyproject pins the same range). It overrides private
#: parts of pygls, each named here with what it is for (no public hook does it: pygls 2.1 has none for answering a
#: request whose params do not parse, nor for the error a handler's ValueError becomes, nor for a reply with a null id:
#: its converter leaves a None id out); a release that moved one, or whose stdio reader (`io_.run_async`: no hook reads
#: a header otherwise) no longer reads a frame as TolerantHeaders hands it, stops the server at start with PyglsDrift,
#: naming pygls, its version and this range (tests/unit/test_pygls_contract.py checks them against the installed pygls).
PYGLS_SUPPORTED = ">=2.0,<2.2"
PRIVATE = {
    (LanguageServerProtocol, "_send_response"): ("msg_id", "result", "error"),  # every error message one line
    (LanguageServerProtocol, "_send_handler_result"): ("future", "msg_id"),  # a handler's ValueError: InvalidParams
    (LanguageServerProtocol, "_send_data"): ("data",),  # an error for a message without an id says `"id": null`
    (Workspace, "_create_text_document"): ("doc_uri", "source", "version", "language_id"),  # LSP's line model
    # a handler's future leaves `_request_futures` when done (pygls kept each notification's: ~3 KB a keystroke)
    (LanguageServerProtocol, "_execute_handler"): ("msg_id", "handler", "callback", "args", "kwargs"),
}
READER = rb"^Content-Length: (\d+)\r\n$"  # the one header line pygls' stdio reader matches (TolerantHeaders hands it)
PRIVATE_STATE = ("_request_futures", "_workspace")  # the protocol's, and the workspace's "_sync_kind"


class PyglsDrift(RuntimeError):
    """The installed pygls moved a private part this module overrides."""


def check_pygls() -> None:
    """PyglsDrift, naming pygls, its version and the supported range, when a private part overridden here moved."""
    import inspect
    from importlib import metadata

    from pygls import io_

    reader = io_.run_async.__code__  # (its header pattern, a line for each header, `n` bytes for a body)
    same = READER in reader.co_consts and {"readline", "readexactly"} <= set(reader.co_names)
    moved = [] if same else ["io_.run_async"]
    for (cls, name), wanted in PRIVATE.items():
        method = getattr(cls, name, None)
        found = tuple(inspect.signature(method).parameters)[1:] if callable(method) else ()
        moved += [f"{cls.__name__}.{name} ({found or 'gone'})"] if found != wanted else []
    if moved:
        raise PyglsDrift(
            f"pygls {metadata.version('pygls')} is installed, but memsearch-lsp supports pygls{PYGLS_SUPPORTED}: "
            f"{moved[0]} is not as it was; install a supported version: pip install 'pygls{PYGLS_SUPPORTED}'"
        )


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def lsp_lines(text: str) -> list[str]:
    """Lines as LSP counts them: only CRLF, CR and LF end a line (not U+2028, form feed, ...)."""
    return _LINE.findall(text)


def one_line(message: str) -> str:
    """An error message as one short line (never a traceback)."""
    line = " ".join(str(message).split())
    return line if len(line) <= MAX_ERROR_CHARS else line[: MAX_ERROR_CHARS - 1] + "…"


class LspTextDocument(TextDocument):
    """pygls splits lines like `str.splitlines`; the client and our chunker split only at CR/LF."""

    @property
    def lines(self) -> list[str]:
        return lsp_lines(self.source)


class LspWorkspace(Workspace):
    """Documents split as LSP splits them, their positions counted by convert.LineCodec (in C, not a character at a
    time in Python at each keystroke)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.codec = LineCodec(self.position_encoding)

    @property
    def position_codec(self) -> PositionCodec:
        return self.codec

    def update_text_document(
        self, text_doc: types.VersionedTextDocumentIdentifier, change: types.TextDocumentContentChangeEvent
    ) -> None:
        """A change to a document never opened (the server restarted under the editor, a didOpen lost) raised
        KeyError, shown at every keystroke: a whole-text change opens it with that text; a ranged one cannot be
        applied and is left out (the file on disk stays the truth until the editor opens or saves it)."""
        if unquote(text_doc.uri) in self.text_documents:
            super().update_text_document(text_doc, change)
        elif isinstance(change, types.TextDocumentContentChangeWholeDocument):
            self.put_text_document(types.TextDocumentItem(text_doc.uri, "markdown", text_doc.version, change.text))
        else:
            log.info("left out an edit of %s: the client never opened it here", text_doc.uri)

    def _create_text_document(
        self, doc_uri: str, source: str | None = None, version: int | None = None, language_id: str | None = None
    ) -> TextDocument:
        return LspTextDocument(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=self._sync_kind,
            position_codec=self.codec,
        )


def _now(function: Callable[..., Any], *args: Any) -> None:
    function(*args)


class _Refused:
    """A message answered with an error instead of being handled: a request whose params could not be read
    (InvalidParams), one without a method (InvalidRequest)."""

    def __init__(self, msg_id: Any, error: JsonRpcException):
        self.id, self.error = msg_id, error


def _msg_id(data: Any) -> Any:
    """The id of a message to answer: a number or a string (JSON-RPC), else None (`"id": null`)."""
    msg_id = data.get("id") if isinstance(data, dict) else None
    return msg_id if isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool) else None


def _invalid(exc: BaseException) -> str:
    """What is wrong in a request's params, each field named as LSP spells it (`params.position: Position.line should
    be in range [0:2147483647], but was -1.`); not `ClassValidationError: While structuring HoverRequest`."""
    if not isinstance(exc, ClassValidationError):
        return f"{type(exc).__name__}: {exc}"
    found = transform_error(
        exc, path="$", format_exception=lambda e, t: str(e) if type(e) is ValueError else format_exception(e, t)
    )
    return "; ".join(
        f"{editor_key(path.removeprefix('$.'))}: {what}" for what, _, path in (f.rpartition(" @ ") for f in found)
    )


def _no_text(params: dict[str, Any]) -> str | None:
    """The field of `params` that should hold a string and does not: workspace/symbol's query, a document's text
    (didOpen's, each of didChange's changes, didSave's unless left null: it is optional)."""
    changes = params.get("contentChanges")
    places = [("textDocument.text", params.get("textDocument")), ("query", params), ("text", params)]
    places += [(f"contentChanges[{n}].text", c) for n, c in enumerate(changes)] if isinstance(changes, list) else []
    for path, place in places:
        value = place.get(path.rpartition(".")[2], "") if isinstance(place, dict) else ""
        if not isinstance(value, str) and (place is not params or value is not None):
            return path
    return None


_NOT_REQUESTS = {"dict": 'an object without "jsonrpc": "2.0"', "list": "an array (LSP has no batches)"}

_CONTENT_LENGTH = re.compile(rb"(?<![A-Za-z0-9-])content-length[ \t]*:[ \t]*0*([1-9][0-9]*)[ \t]*$", re.IGNORECASE)
_HEADER = re.compile(rb"[A-Za-z][A-Za-z0-9-]*[ \t]*:")


class TolerantHeaders:
    """stdin as pygls' reader takes it (`readline` for each header line, `read` for a body), each header line as that
    reader matches it (only `Content-Length: N\\r\\n` byte for byte): a header named in another case, without the
    space, or ended by LF alone made it skip the body, then read it as a header glued to the next: no reply ever
    again. A wrong length did the same (the rest of a body glued to the next header, `}Content-Length: 52`): the
    header is found at the end of any line, and what came before it (a block without a valid length, what is left of a
    body) is skipped, said once when the next message is read. Passed to pygls' public `start_io(stdin)`."""

    def __init__(self, stream: BinaryIO):
        self.stream = stream
        self.length = False  # the header block being read has a valid Content-Length
        self.block = 0  # the bytes of its other header lines (skipped if it ends without one)
        self.skipped = 0  # the bytes that were no message since the last one read

    def readline(self) -> bytes:
        line = self.stream.readline()
        if not line.endswith(b"\n"):  # the end of the stream
            return line
        text = line.rstrip(b"\r\n")
        if found := _CONTENT_LENGTH.search(text):
            self.skipped, self.length = self.skipped + found.start(), True
            return b"Content-Length: %d\r\n" % int(found.group(1))
        if text.strip():
            if self.length or _HEADER.match(text):
                self.block += len(line)
            else:
                self.skipped += len(line)
            return text + b"\r\n"
        if not self.length:  # (pygls reads no body: what comes up to the next header is skipped)
            self.skipped, self.block = self.skipped + self.block, 0
            return b"\r\n"
        if self.skipped:
            log.warning("skipped %d byte(s) that were no LSP message (a wrong Content-Length?)", self.skipped)
        self.length, self.block, self.skipped = False, 0, 0
        return b"\r\n"

    def read(self, n: int) -> bytes:
        return self.stream.read(n)


class MemsearchProtocol(LanguageServerProtocol):
    """Answers malformed requests (-32602), early ones (-32002), late ones, those of another JSON-RPC and anything
    that is no JSON-RPC message (-32600), unreadable JSON (-32700); error messages are one line."""

    def __init__(self, *args: Any, **kwargs: Any):
        check_pygls()
        super().__init__(*args, **kwargs)
        missing = [name for name in PRIVATE_STATE[:1] if not hasattr(self, name)]
        if missing:
            raise PyglsDrift(f"pygls: {', '.join(missing)} is gone; memsearch-lsp supports pygls{PYGLS_SUPPORTED}")
        self.initialize_seen = False
        self.shut_down = False  # after `shutdown`, a request gets InvalidRequest (LSP), not silence

    def structure_message(self, data: dict[str, Any]) -> Any:
        params, method = data.get("params"), data.get("method")
        if method == types.WORKSPACE_SYMBOL and isinstance(params, dict) and params.get("query") is None:
            params["query"] = ""  # a null query lists the headings as an empty one does (cattrs would read "None")
        if "jsonrpc" in data and isinstance(method, str) and isinstance(params, dict) and (bad := _no_text(params)):
            reason = f"invalid params for {method}: {bad} must be a string"  # (cattrs read null as "None", 5 as "5")
            if _msg_id(data) is None:
                raise JsonRpcInvalidParams(reason)  # a notification: left out, said on one line (report_server_error)
            return _Refused(_msg_id(data), JsonRpcInvalidParams(reason))
        if "jsonrpc" in data and isinstance(method, str) and "params" not in data and not self.get_message_type(method):
            data = {**data, "params": None}  # (pygls' message of a method it has no type for requires params)
        if data.get("id") is not None and _msg_id(data) is None:  # an object, an array, true: no id (JSON-RPC)
            return _Refused(None, JsonRpcInvalidRequest("a request id must be a number or a string"))
        if "jsonrpc" in data and "method" in data and not isinstance(data["method"], str):
            return _Refused(_msg_id(data), JsonRpcInvalidRequest("a method must be a string"))
        arguments = params.get("arguments") if isinstance(params, dict) else None  # (a string: each letter one)
        if data.get("method") == types.WORKSPACE_EXECUTE_COMMAND and not isinstance(arguments, (list, type(None))):
            reason = "invalid params for workspace/executeCommand: arguments must be a list"
            if _msg_id(data) is not None:
                return _Refused(_msg_id(data), JsonRpcInvalidParams(reason))
        if "jsonrpc" in data and "id" in data and not {"method", "result", "error"} & data.keys():
            if data["id"] in self._request_futures:  # the client's reply to the server's request, its null result left
                data = {**data, "result": None}  # out (`{"jsonrpc", "id"}` after client/registerCapability)
            else:
                return _Refused(_msg_id(data), JsonRpcInvalidRequest("a request without a method"))
        try:
            return super().structure_message(data)
        except Exception as exc:
            if "jsonrpc" in data and "method" in data and _msg_id(data) is not None:
                reason = f"invalid params for {data['method']}: {_invalid(exc.__cause__ or exc)}"
                return _Refused(data["id"], JsonRpcInvalidParams(reason))
            raise

    def refuse(self, msg_id: Any, error: JsonRpcException) -> None:
        """Answer a message the server cannot handle with `error` (logged on one line, never shown to the user)."""
        log.info("answered a message it could not handle (id %s): %s", msg_id, one_line(str(error)))
        self._send_response(msg_id, error=error.to_response_error())

    def handle_message(self, message: Any) -> None:
        if isinstance(message, _Refused):
            self.refuse(message.id, message.error)
            return
        if not hasattr(message, "jsonrpc"):  # no JSON-RPC 2.0 message: an array, a number, an object without "jsonrpc"
            if isinstance(message, dict) and "method" not in message and {"result", "error"} & message.keys():
                log.info("ignored a reply without a jsonrpc version (id %s)", _msg_id(message))  # (a reply: no answer)
            else:
                what = _NOT_REQUESTS.get(type(message).__name__, "a JSON value")
                self.refuse(_msg_id(message), JsonRpcInvalidRequest(f"not a JSON-RPC 2.0 request: {what}"))
            return
        method = getattr(message, "method", None)
        is_request = method is not None and getattr(message, "id", None) is not None
        if method == types.INITIALIZE and self.initialize_seen and is_request:  # "may only be sent once" (LSP)
            self._send_response(message.id, error=JsonRpcInvalidRequest("initialize: sent twice").to_response_error())
            return
        if method == types.INITIALIZE:
            self.initialize_seen = True
        elif is_request and not self.initialize_seen:
            self._send_response(
                message.id,
                error=JsonRpcServerNotInitialized(f"{method}: the server is not initialized yet").to_response_error(),
            )
            return
        elif method is not None and not self.initialize_seen and method != types.EXIT:
            return  # notifications before initialize are dropped (LSP)
        if is_request and (self.shut_down or getattr(message, "jsonrpc", "2.0") != "2.0") and method != types.EXIT:
            why = "the server is shut down" if self.shut_down else "only JSON-RPC 2.0 is spoken"
            self._send_response(message.id, error=JsonRpcInvalidRequest(f"{method}: {why}").to_response_error())
            return
        self.shut_down = self.shut_down or method == types.SHUTDOWN
        for place in uri_places(getattr(message, "params", None)):
            place.uri = normalize_uri(place.uri)
        super().handle_message(message)
        if method == types.INITIALIZE and self._workspace is not None:
            ws = self._workspace
            self._workspace = LspWorkspace(ws.root_uri, ws._sync_kind, list(ws.folders.values()), ws.position_encoding)

    def _execute_handler(self, msg_id: Any, handler: Any, callback: Any, args: Any = None, kwargs: Any = None) -> None:
        """pygls files each handler's future under its message id (a notification's and each step of a generator
        handler's under a fresh uuid) and takes it out only for a request's answer: the rest stayed forever. Taken
        out once done, on the loop's next turn: `shutdown` cancels every future while it walks that dict."""
        later: Callable[..., Any]
        try:
            later = asyncio.get_running_loop().call_soon_threadsafe
        except RuntimeError:  # (not on the loop's thread: a thread handler's next step)
            later = _now

        def done(future: Any) -> None:
            try:
                callback(future)
            finally:
                with contextlib.suppress(RuntimeError):  # (the loop is closed: the process is ending)
                    later(self._forget, msg_id, future)

        super()._execute_handler(msg_id, handler, done, args, kwargs)

    def _forget(self, msg_id: Any, future: Any) -> None:
        if self._request_futures.get(msg_id) is future:
            del self._request_futures[msg_id]

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        failure = None if future.cancelled() else future.exception()
        if isinstance(failure, ValueError):
            self._request_futures.pop(msg_id, None)
            self._send_response(msg_id, error=JsonRpcInvalidParams(str(failure)).to_response_error())
            return
        # an index or model that cannot be used, a folder closed while the request ran (or with no memory): said as is
        if isinstance(failure, (StoreError, EmbeddingError, PassStopped, NoMemoryHere)):
            self._request_futures.pop(msg_id, None)
            log.warning("%s", hide_credentials(str(failure)))
            failed = types.ResponseError(code=types.LSPErrorCodes.RequestFailed, message=str(failure))
            self._send_response(msg_id, error=failed)
            return
        super()._send_handler_result(future, msg_id=msg_id)

    def _send_response(self, msg_id: Any, result: Any | None = None, error: types.ResponseError | None = None) -> None:
        if error is not None:
            error = types.ResponseError(code=error.code, message=hide_credentials(one_line(error.message)))
            if msg_id is None:  # (pygls' converter would leave the id out)
                self._send_data({"jsonrpc": "2.0", "id": None, "error": {"code": error.code, "message": error.message}})
                return
        super()._send_response(msg_id, result, error)


class ReportingServer(LanguageServer):
    """A language server whose failures outside a request (pygls' public hook, `report_server_error`) are told as
    they should be: a message it could not read (a notification's bad params: the client's slip) is logged, never
    shown to the user as a server error; JSON it could not parse is answered ParseError; a request's failure is its
    answer (nothing more: an unknown method is no warning); a handler's own failure is reported once (`report`)."""

    def report(self, message: str, exc: BaseException | None = None) -> None:
        raise NotImplementedError

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """pygls' stdio server, reading headers as LSP clients write them (`TolerantHeaders`)."""
        super().start_io(cast(BinaryIO, TolerantHeaders(stdin or sys.stdin.buffer)), stdout)

    def report_server_error(self, error: Exception, source: Any) -> None:
        if source is FeatureRequestError:  # answered: its failure is its answer (pygls logged it)
            return
        if source is JsonRpcException and isinstance(error, UNREADABLE):  # the body is no JSON (pygls' reader)
            assert isinstance(self.protocol, MemsearchProtocol)
            why = "nested too deeply to read" if isinstance(error, RecursionError) else f"not JSON: {error}"
            self.protocol.refuse(None, JsonRpcParseError(f"the message is {why}"))
        elif source is FeatureNotificationError:  # read, then its handler failed (said on one line, as pygls has it)
            log.warning("handling a notification failed: %s", error)
        elif isinstance(error, JsonRpcException):
            log.warning("ignored a message the server could not read: %s", error)
        else:
            self.report(f"{type(error).__name__}: {error}", error)


#: what json.loads raises for a body that is not JSON, or nested deeper than Python's reader goes
UNREADABLE = (json.JSONDecodeError, UnicodeDecodeError, RecursionError)
#: pygls' log lines with a traceback for what the client got wrong (pygls 2.1's wording, checked against its source by
#: tests/unit/test_pygls_contract.py: a release that rewords one brings its traceback back, nothing worse): a message it
#: could not read (this module answers or logs it on one line), a request answered with a JSON-RPC error
PYGLS_UNHANDLED, PYGLS_UNREAD = "Unable to handle message", "Unable to deserialize message\n"
PYGLS_ANSWERED = 'Exception occurred for message "%s"'


class ClientSlipsOnOneLine(logging.Filter):
    """pygls logs what the client got wrong with a traceback at ERROR level: this module says it on one line (a server
    bug keeps its traceback)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if record.msg == PYGLS_UNHANDLED and isinstance(exc, (*UNREADABLE, JsonRpcException)):
            return False  # (told by ReportingServer.report_server_error)
        if isinstance(record.msg, str) and record.msg.startswith(PYGLS_UNREAD):
            return False  # (told by MemsearchProtocol.refuse, or report_server_error)
        if (
            record.msg == PYGLS_ANSWERED
            and isinstance(exc, JsonRpcException)
            and not isinstance(exc, JsonRpcInternalError)
        ):
            msg_id = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
            record.msg, record.args = "answered request %s: %s", (msg_id, one_line(str(exc)))
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def quiet_pygls() -> None:
    """Install ClientSlipsOnOneLine on the loggers of pygls' reader and protocol (once)."""
    from pygls import server
    from pygls.protocol import json_rpc

    for module in (server, json_rpc):
        logger = logging.getLogger(module.__name__)
        if not any(isinstance(f, ClientSlipsOnOneLine) for f in logger.filters):
            logger.addFilter(ClientSlipsOnOneLine())
