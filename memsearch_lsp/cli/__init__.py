"""The `memsearch-lsp` command: serve | index | search | expand | compact | status | reset | init | doctor |
remember | recent | warm | mcp (arguments in cli/parser.py, the commands in cli/commands.py and cli/servers.py)."""

from __future__ import annotations

import errno
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memsearch_lsp.cli.commands import COMMANDS as ONE_SHOT
from memsearch_lsp.cli.commands import json_line
from memsearch_lsp.cli.parser import EXIT_USER, UsageError, UserError, build_parser
from memsearch_lsp.cli.servers import SERVING
from memsearch_lsp.cli.terminal import ShownFormatter, printable
from memsearch_lsp.trust import hide_credentials

__all__ = ["COMMANDS", "UsageError", "UserError", "main"]

COMMANDS = {**ONE_SHOT, **SERVING}


def _hint(exc: BaseException, command: str = "") -> str:
    """What to do about an error, for the `hint` of a JSON error (and nothing else)."""
    from memsearch_lsp.config import ConfigError
    from memsearch_lsp.core.embedding import EmbeddingError
    from memsearch_lsp.core.files import NotWritable
    from memsearch_lsp.core.notes import NoteError
    from memsearch_lsp.core.onboard import INIT_HINT, NestedWorkspace, NoMemoryHere, NotAProject
    from memsearch_lsp.core.process.protocol import OtherProtocol
    from memsearch_lsp.core.search.filters import DATE_FORMS, FilterError

    if isinstance(exc, UserError):
        return exc.hint or f"see `memsearch-lsp {command or ''} --help`".replace("  ", " ")
    if isinstance(exc, NoteError):  # (the message says why)
        return f"nothing was written or removed; see `memsearch-lsp {command or ''} --help`".replace("  ", " ")
    if isinstance(exc, NotWritable):  # (no damage: nothing to reset)
        return f"nothing was changed; make {exc.folder} writable ({exc.fix}), then run again"
    if isinstance(exc, NoMemoryHere):
        return f"{INIT_HINT} in the project folder, or pass --workspace DIR"
    if isinstance(exc, NotAProject):
        return "run `memsearch-lsp init` in your project's folder (or pass it: memsearch-lsp init DIR)"
    if isinstance(exc, NestedWorkspace):
        return "run commands anywhere inside the enclosing workspace: they find it as git finds a repository"
    if isinstance(exc, FilterError):
        return f"dates: {DATE_FORMS}; sources: gitignore-style globs relative to the workspace"
    if isinstance(exc, ConfigError):
        return "correct or remove that setting; `memsearch-lsp doctor` shows where each setting comes from"
    if isinstance(exc, EmbeddingError):
        return "`memsearch-lsp doctor` checks the model and the embedding settings"
    if isinstance(exc, OtherProtocol):
        return exc.fix
    return "run the command with -v for details; `memsearch-lsp doctor` checks the install, settings and index"


def _fail(as_json: bool, exc: BaseException, message: str, command: str = "") -> int:
    """Report an error: one line on stderr, or with --json `{"error": {"message", "hint"}}` on stdout; exit 1."""
    message = hide_credentials(message)  # (a URL's password in milvus.uri or a base_url)
    if as_json:
        error = {"message": message, "hint": _hint(exc, command)}
        sys.stdout.write(json_line({"error": error}) + "\n")
    elif isinstance(exc, UsageError):  # as argparse says it, once: the (sub-)command, the message, where to look
        sys.stderr.write(printable(f"{exc.prog}: error: {message} ({exc.hint})") + "\n")
    else:
        sys.stderr.write(printable(f"memsearch-lsp: error: {message}") + "\n")
    return EXIT_USER


def main(argv: Sequence[str] | None = None) -> int:
    from memsearch_lsp.core.onboard import platform_problem

    arguments = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in arguments[: arguments.index("--")] if "--" in arguments else "--json" in arguments
    if (problem := platform_problem()) is not None:
        return _fail(as_json, UserError(problem, "use Linux, macOS or WSL"), problem)
    os.umask(os.umask(0o022) | 0o022)  # what it creates is never writable by others, whatever the umask (000)
    try:
        args = build_parser().parse_args(arguments)
    except UsageError as exc:
        return _fail(as_json, exc, str(exc))
    as_json = bool(getattr(args, "json", False))
    if as_json and args.command in ("serve", "mcp"):
        prog = f"memsearch-lsp {args.command}"
        refused = UsageError(f"--json has no meaning here: {args.command} speaks JSON-RPC on stdout", "", prog)
        return _fail(as_json, refused, str(refused), args.command)
    if args.command != "serve":  # configure logging once: the server sets up its own
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(ShownFormatter("memsearch-lsp: %(levelname)s: %(message)s"))
        if args.command == "index" and not as_json:  # (its report lists the files skipped: not twice on a terminal)
            from memsearch_lsp.core.index import SKIP_NOTE

            handler.addFilter(lambda record: not getattr(record, SKIP_NOTE, False))
        logging.basicConfig(handlers=[handler], level=logging.INFO if args.verbose else logging.WARNING)
    try:
        return _run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): nothing more to tell it, nor a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (Python flushes stdout at exit)
        return 128 + signal.SIGPIPE
    except Exception as exc:
        if args.verbose and not isinstance(exc, UserError):  # -v: the details (a traceback, on stderr) first
            logging.getLogger(__name__).error("the details of the error below:", exc_info=True)
        if (shut := _refused_write(exc)) is not None:  # a read-only workspace or index folder: where, what to do
            return _fail(as_json, shut, str(shut), args.command)
        if isinstance(exc, _user_errors()):
            return _fail(as_json, exc, str(exc), args.command)
        return _fail(as_json, exc, f"{type(exc).__name__}: {exc}")


def _refused_write(exc: BaseException) -> OSError | None:
    """`exc` as NotWritable when it is a write refused in the workspace: a read-only file system, or no permission in
    its index folder (a permission refused elsewhere may be a read: that error names its own file, as it is)."""
    from memsearch_lsp.core.files import INDEX_DIR, NotWritable, not_writable

    shut = not_writable(exc)
    if shut is None or not isinstance(exc, OSError) or isinstance(exc, NotWritable):
        return shut
    named = os.fsdecode(exc.filename) if exc.filename is not None else ""
    return shut if exc.errno == errno.EROFS or INDEX_DIR in Path(named).parts else None


# commands that change nothing, or that only bring the index up to date with the Markdown: safe to ask again
ASKED_AGAIN = frozenset({"search", "expand", "recent", "status", "index"})


def _run(args: Any) -> int:
    """The command; one of ASKED_AGAIN is asked again, once, when the process that owned the index went away while
    it answered (an editor closing just then): the second time there is no owner, and this process opens the index."""
    try:
        return COMMANDS[args.command](args)
    except Exception as exc:
        from memsearch_lsp.core.process.protocol import OwnerGone

        if not isinstance(exc, OwnerGone) or args.command not in ASKED_AGAIN:
            raise
        logging.getLogger(__name__).info("%s; asking again", exc)
        return COMMANDS[args.command](args)


def _user_errors() -> tuple[type[Exception], ...]:
    """The errors reported as their message alone; imported only once one happened (a command that never
    loads the compaction or embedding modules does not pay for them)."""
    from memsearch_lsp.core.compact.plan import CompactError
    from memsearch_lsp.core.embedding import EmbeddingError
    from memsearch_lsp.core.files import NotWritable, PathError
    from memsearch_lsp.core.notes import NoteError
    from memsearch_lsp.core.onboard import NestedWorkspace, NoMemoryHere
    from memsearch_lsp.core.process.protocol import OwnerGone
    from memsearch_lsp.core.store import IndexBusy

    # ValueError: ConfigError, FilterError, AmbiguousId, owner replies
    return (
        IndexBusy,  # (names the process that holds the index)
        OwnerGone,  # (says what the process that owned it did)
        UserError,
        ValueError,
        FileNotFoundError,
        CompactError,
        PathError,
        NoMemoryHere,
        NestedWorkspace,
        EmbeddingError,
        NoteError,
        NotWritable,
    )
