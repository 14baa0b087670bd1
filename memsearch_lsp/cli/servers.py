"""The commands that run a long-lived process: `serve` (the language server), `mcp` (the MCP server) and `warm` (an
index owner for hooks and scripts)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from memsearch_lsp.cli import progress
from memsearch_lsp.cli.commands import _emit, _workspace
from memsearch_lsp.cli.parser import EXIT_OK, UserError


def cmd_warm(args: argparse.Namespace) -> int:
    from memsearch_lsp.core.process.door import serve_until_idle, spawn

    if args.idle is not None and args.idle <= 0:
        raise UserError("--idle must be more than 0 seconds")
    workspace = _workspace(args)
    if args.detach:
        from memsearch_lsp.config import load_config

        idle = args.idle if args.idle is not None else load_config(workspace).warm.idle_s
        if (owner := _serving(workspace)) is None:
            started = spawn(["warm", "--idle", str(idle), "--workspace", str(workspace)])
            owner = _served_by(workspace, started)
            if owner is None or owner["pid"] == started.pid:  # (None: still starting after WARM_WAIT_S)
                _emit(args, {"pid": started.pid, "idle_s": idle}, f"warming the index in pid {started.pid}")
                return EXIT_OK
        # a warm one would exit at once: say who serves it (how long it stays, when its record says: not an editor)
        said = {"pid": owner["pid"], **({"idle_s": owner["idle_s"]} if "idle_s" in owner else {}), "running": True}
        _emit(args, said, f"the index is already served by pid {owner['pid']}")
        return EXIT_OK
    with progress.bar(args, "indexing") as report:
        served = serve_until_idle(workspace, args.idle, progress=report)
    _emit(args, {"served": served}, "served until idle" if served else "another process owns the index")
    return EXIT_OK


def _serving(workspace: Path) -> dict[str, Any] | None:
    """The record of the live process that owns `workspace`'s index (one that answers), else None."""
    from memsearch_lsp.core.process.owner import find_owner, read_record
    from memsearch_lsp.core.process.protocol import OtherProtocol

    try:
        record = read_record(workspace) if find_owner(workspace) is not None else None
    except OtherProtocol:  # (said in one line: a warm one would end at once)
        raise
    except (OSError, ValueError, RuntimeError):  # not answering, or not this user's: a warm one finds out
        return None
    return record if record and int(record.get("pid", 0) or 0) > 0 else None


WARM_WAIT_S = 30.0  # `warm --detach` returns once its owner serves the index (the next call finds it), or this late


def _served_by(workspace: Path, started: subprocess.Popen[bytes]) -> dict[str, Any] | None:
    """The record of the owner that serves `workspace`'s index once `started` (a warm owner) or another serves it;
    None when none does within WARM_WAIT_S; UserError when `started` ended and none does."""
    deadline = time.monotonic() + WARM_WAIT_S
    while time.monotonic() < deadline:
        if (record := _serving(workspace)) is not None:
            return record
        if started.poll() is not None:  # it ended: another owner came first, or it could not start
            if (record := _serving(workspace)) is not None:
                return record
            raise UserError(f"the warm owner (pid {started.pid}) ended at once: run `memsearch-lsp warm` to see why")
        time.sleep(0.05)
    return None


def cmd_mcp(args: argparse.Namespace) -> int:
    try:
        from memsearch_lsp.mcp_server import serve
    except ModuleNotFoundError as exc:  # the optional extra is missing
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types", "pydantic", "anyio"):
            raise
        from memsearch_lsp.doctor import mcp_install

        raise UserError(
            f"the MCP server needs the mcp package ({exc}); install it: {mcp_install()}", mcp_install()
        ) from exc
    from memsearch_lsp.config import ConfigError
    from memsearch_lsp.core.onboard import NoMemoryHere

    try:
        workspace = _workspace(args)
    except (NoMemoryHere, ConfigError) as exc:  # (a plugin starts it in every project: it serves, each tool saying
        # how to start one; settings that do not load: each tool says why until the file is fixed)
        workspace = Path(args.workspace or Path.cwd()).expanduser().resolve()
        until = "then" if isinstance(exc, NoMemoryHere) else "the settings load"
        print(f"memsearch-lsp mcp: {exc}; serving anyway: each tool says so until {until}", file=sys.stderr)
    serve(workspace)
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    from memsearch_lsp.lsp.setup import run

    run(tcp=args.tcp, verbose=args.verbose)  # the server configures its own logging (INFO to stderr and client)
    return EXIT_OK


SERVING = {"serve": cmd_serve, "warm": cmd_warm, "mcp": cmd_mcp}
