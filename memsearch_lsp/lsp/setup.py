"""The composition root: wires the features and the lifecycle handlers to a MemsearchServer, and runs it.

Features import the server class; the server class imports no feature; only this module knows them all.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import sys

from lsprotocol import types

from memsearch_lsp.core.process import end_on_signals
from memsearch_lsp.core.store.folder import SHOWN
from memsearch_lsp.lsp import lifeline
from memsearch_lsp.lsp.convert import options_from
from memsearch_lsp.lsp.features import actions, commands, hover, settings, symbols, sync
from memsearch_lsp.lsp.protocol import quiet_pygls
from memsearch_lsp.lsp.server import MemsearchServer
from memsearch_lsp.trust import HidingFormatter


def create_server() -> MemsearchServer:
    """The server with every feature and the lifecycle handlers registered."""
    server = MemsearchServer()
    for feature in (sync, settings, symbols, hover, commands, actions):
        feature.register(server)
    server.open_new = functools.partial(sync.start_roots, server)  # (a folder made a memory while the server runs)

    @server.feature(types.INITIALIZE)
    def on_initialize(ls: MemsearchServer, params: types.InitializeParams) -> None:
        ls.loop = asyncio.get_running_loop()
        ls.init_options = ls.overrides = options_from(params.initialization_options)
        ls.client_pid = params.process_id
        ls.client_name = params.client_info.name if params.client_info else ""

    @server.feature(types.INITIALIZED)
    async def on_initialized(ls: MemsearchServer, params: types.InitializedParams) -> None:
        ls.initialized = True
        try:
            await settings.load_settings(ls)
            await sync.start_roots(ls)
        finally:
            ls.started.set()  # the requests that came meanwhile go on (MemsearchServer.settled)

    @server.feature(types.SHUTDOWN)
    def on_shutdown(ls: MemsearchServer, params: None) -> None:
        ls.shut_down = True
        ls.shutdown_roots()

    @server.feature(types.EXIT)
    def on_exit(ls: MemsearchServer, params: None) -> None:
        lifeline.finish(ls.close_all, 0 if ls.shut_down else 1)  # never kept alive by a busy thread

    return server


LOG_FORMAT = "memsearch-lsp %(levelname)s %(name)s: %(message)s"


class ClientLogHandler(logging.Handler):
    """Forwards log records to the client as window/logMessage (thread-safe); a record marked SHOWN (a warning about
    the index the user must see) is shown too (window/showMessage), once."""

    LEVELS = {
        logging.ERROR: types.MessageType.Error,
        logging.WARNING: types.MessageType.Warning,
        logging.INFO: types.MessageType.Info,
    }

    def __init__(self, server: MemsearchServer):
        super().__init__(level=logging.INFO)
        self.server = server

    def emit(self, record: logging.LogRecord) -> None:
        loop = self.server.loop
        if loop is None or not self.server.initialized:
            return
        kind = self.LEVELS.get(record.levelno, types.MessageType.Log)
        message = self.format(record)
        params = types.LogMessageParams(type=kind, message=message)
        try:
            loop.call_soon_threadsafe(self.server.window_log_message, params)
            if getattr(record, SHOWN, False):  # (an index moved aside or that cannot be written: shown once too)
                loop.call_soon_threadsafe(self.server._show_once, message, kind, message)
        except RuntimeError:
            pass  # the loop is closed: we are shutting down


def configure_logging(verbose: bool = False) -> None:
    """The server's logging, set up once, never to stdout: INFO and above go to the client (window/logMessage, at
    their level; see ClientLogHandler), and stderr gets warnings and errors only (everything with -v): an editor
    logs a server's every stderr line as an error (Neovim's lsp.log), so routine lines go to the client alone."""
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if verbose else logging.INFO,
        format=LOG_FORMAT,
        force=True,
    )
    for handler in logging.getLogger().handlers:
        handler.setFormatter(HidingFormatter(LOG_FORMAT))
        handler.setLevel(logging.DEBUG if verbose else logging.WARNING)
    logging.getLogger("pygls").setLevel(logging.WARNING)
    quiet_pygls()  # a message the client got wrong: one line, not a traceback


def listen_address(text: str) -> tuple[str, int]:
    """`--tcp HOST:PORT` as (host, port): no host is 127.0.0.1, an IPv6 host may be bracketed (`[::1]:2087`);
    ValueError says what is wrong with it."""
    host, colon, port = text.strip().rpartition(":")
    if not colon:
        raise ValueError(f"{text!r} is not HOST:PORT (e.g. 127.0.0.1:2087)")
    if not re.fullmatch(r"[0-9]{1,5}", port) or not 1 <= int(port) <= 65535:
        raise ValueError(f"the port of {text!r} must be a number from 1 to 65535")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host or "127.0.0.1", int(port)


def run(tcp: str | None = None, verbose: bool = False) -> None:
    """Serve over stdio, or on TCP `tcp` (HOST:PORT: ValueError before anything starts when it is not one);
    the process ends here: exit 1 when the port cannot be listened on or the server failed, else 0."""
    address = listen_address(tcp) if tcp else None
    configure_logging(verbose)
    server = create_server()
    handler = ClientLogHandler(server)
    handler.setFormatter(HidingFormatter("%(message)s"))
    logging.getLogger("memsearch_lsp").addHandler(handler)
    lifeline.watch_parent(lambda: server.client_pid, server.close_all)
    end_on_signals(lambda: lifeline.finish(server.close_all, 0), "memsearch-lsp-exit")  # as stdin's end does
    code = 0
    try:
        if address is None:
            server.start_io()  # returns when stdin closes: the editor is gone
        else:
            try:
                server.start_tcp(*address)
            except OSError as exc:  # the port is taken, the host is not this machine's, ...
                sys.stderr.write(f"memsearch-lsp serve: error: cannot listen on {tcp}: {exc.strerror or exc}\n")
                code = 1
    except Exception:
        logging.getLogger(__name__).exception("the server stopped on an error")
        code = 1
    finally:
        lifeline.finish(server.close_all, code)
