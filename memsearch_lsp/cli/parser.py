"""The `memsearch-lsp` command line: its arguments (one parser, one sub-command each) and the user errors."""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any, NoReturn

from memsearch_lsp.cli.types import (
    MAX_DAYS,
    date_filter,
    folder,
    line_span,
    seconds,
    share,
    source_glob,
    tcp_address,
    whole,
)
from memsearch_lsp.version import __version__

EXIT_OK, EXIT_USER = 0, 1


class UserError(Exception):
    """A mistake the user can fix; printed as one line (with --json: an error object on stdout), exit code 1."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint


class UsageError(UserError):
    """Arguments argparse could not read; `prog` is the (sub-)command that could not (`memsearch-lsp search`)."""

    def __init__(self, message: str, hint: str = "", prog: str = "memsearch-lsp"):
        super().__init__(message, hint)
        self.prog = prog


def note_text(words: list[str]) -> str:
    """The note `remember` was given: its TEXT words, or with `-` (or none) what is piped in. UserError when there is
    none, or when it is not UTF-8 (a Latin-1 pipe): a note goes into the user's Markdown as it came, never with `?` or
    U+FFFD for a byte that could not be read, so nothing is written and the first such byte is named."""
    if words in ([], ["-"]):
        if sys.stdin is None or sys.stdin.isatty():
            raise UserError("give the note as TEXT, or pipe it in with `-`")
        data = sys.stdin.buffer.read()
    else:
        data = " ".join(words).encode("utf-8", "surrogateescape")  # (a word's bytes that are not UTF-8, as they came)
    return _utf8(data, "the note")


def heading_text(heading: str | None) -> str | None:
    """`--heading` (or the hook's) as given; UserError naming its first byte that is not UTF-8, as for the note."""
    return None if heading is None else _utf8(heading.encode("utf-8", "surrogateescape"), "the heading")


def _utf8(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(
            f"{what} is not UTF-8 text: byte {exc.start} (0x{data[exc.start]:02x}) is not; nothing was written "
            "(convert it first, e.g. with `iconv -f latin1 -t utf-8`)"
        ) from None


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message, f"see `{self.prog} --help`", self.prog)

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        """argparse's, but an argument no command takes is named by the command it was given to, and a query or
        note that starts with "-" ("--max-model-len", "-x") is told to come after "--"."""
        argv = [str(a) for a in (sys.argv[1:] if args is None else args)]
        try:
            parsed, extra = self.parse_known_args(argv, namespace)
        except UsageError as exc:
            raise self._dashed(exc, argv) from None
        if extra:
            prog = " ".join([self.prog, *([parsed.command] if getattr(parsed, "command", None) else [])])
            error = UsageError(f"unrecognized arguments: {' '.join(extra)}", f"see `{prog} --help`", prog)
            raise (
                self._dashed(error, argv) if getattr(parsed, "text", None) == [] else error
            )  # (remember's is optional)
        return parsed

    def _dashed(self, exc: UsageError, argv: list[str]) -> UsageError:
        """`exc`, with the hint to put "--" before the QUERY or TEXT that starts with "-" when it was read as an
        option: an argument no option of the command takes, with which "--" before it makes the line whole, or
        "--" before it and the options given after it moved ahead of them (`search "--dry-run" -w ws`)."""
        for n, arg in enumerate(argv):
            if (
                "--" in argv[:n]
                or not arg.startswith("-")
                or arg in _ACTIONS
                or not self._unknown([*argv[:n], "x", arg])
            ):
                continue
            after = argv[n + 1 :]  # the options given after it go ahead of "--" (`search "--dry-run" -w ws`)
            for before, rest in [(after, []), ([], after)] if any(a.startswith("-") for a in after) else [([], after)]:
                if self._extra([*argv[:n], *before, "--", arg, *rest]) == []:
                    line = " ".join(
                        [shlex.join(["memsearch-lsp", *argv[:n], *before]), "--", f'"{arg}"', shlex.join(rest)]
                    ).rstrip()
                    hint = f'a QUERY or TEXT that starts with "-" goes after the options and "--": {line}'
                    return UsageError(
                        f'"{arg}" was read as an option ({exc})', f"{hint} (or pipe it in as -)", exc.prog
                    )
        return exc

    def _extra(self, argv: list[str]) -> list[str] | None:
        """What argparse leaves of `argv` unread; None when it refuses the line."""
        try:
            return self.parse_known_args(argv)[1]
        except UsageError:
            return None

    def _unknown(self, argv: list[str]) -> bool:
        """Whether the last of `argv` is an option no parser takes there (left over, not read or refused)."""
        return argv[-1] in (self._extra(argv) or [])


_ACTIONS = ("-", "-h", "--help", "--version")  # never tried as a query: argparse answers them (and exits) at once
VERBOSE_HELP = "log what happens (and a failure's details) to stderr"
WORKSPACE_HELP = (
    "the memory workspace (default: the current folder or the nearest parent folder that is one, "
    "as git finds a repository, stopping at the home folder)"
)


def _command(
    sub: Any, name: str, help: str, example: str, common: argparse.ArgumentParser | None = None, description: str = ""
) -> _Parser:
    parser: _Parser = sub.add_parser(
        name,
        parents=[common] if common is not None else [],
        help=help,
        description=(description or help[0].upper() + help[1:]) + ".",
        epilog=f"example: {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def build_parser() -> _Parser:
    parser = _Parser(
        prog="memsearch-lsp",
        description="Markdown memory with hybrid search, over LSP and a CLI.",
        epilog='example: memsearch-lsp search "which message broker did we pick" --since 30d',
    )
    parser.add_argument("--version", action="version", version=f"memsearch-lsp {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    # -v, --workspace and --json work before or after the command; SUPPRESS keeps a later default from
    # overwriting what was given earlier.
    parser.add_argument("--workspace", "-w", default=None, type=folder, metavar="DIR", help=WORKSPACE_HELP)
    parser.add_argument(
        "--json", action="store_true", help='print JSON on stdout (errors too: {"error": {"message", "hint"}}, exit 1)'
    )
    verbose = _Parser(add_help=False)  # for every command
    verbose.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP)
    located = _Parser(add_help=False, parents=[verbose])  # for every command run in a workspace
    located.add_argument(
        "--workspace", "-w", default=argparse.SUPPRESS, type=folder, metavar="DIR", help=WORKSPACE_HELP
    )
    common = _Parser(add_help=False, parents=[located])  # ... that answers on stdout
    common.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help='print JSON on stdout (errors too, as {"error": {"message", "hint"}})',
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    serve = _command(
        sub,
        "serve",
        "run the language server (stdio by default)",
        "memsearch-lsp serve --tcp 127.0.0.1:2087",
        verbose,
    )
    serve.add_argument("--tcp", type=tcp_address, metavar="HOST:PORT", help="listen on TCP instead of stdio")
    serve.add_argument("--stdio", action="store_true", help="use stdio (the default)")

    index = _command(sub, "index", "bring the index up to date with the Markdown", "memsearch-lsp index --json", common)
    index.add_argument("--force", action="store_true", help="re-index every file")

    search = _command(
        sub,
        "search",
        "hybrid search (reconciles first)",
        "memsearch-lsp search \"what did we decide about retries\" --since 7d --source 'memory/**' -k 5",
        common,
        "Hybrid (semantic + keyword) search over the memory files, best hits first; the index "
        "is brought up to date first. Filters restrict the candidates of both legs, not the "
        "top k afterwards",
    )
    search.add_argument(
        "query",
        metavar="QUERY",
        help="what to look for, in your own words or by keyword; - reads it from stdin (never on a command line "
        "that other users' `ps` shows)",
    )
    search.add_argument(
        "-k",
        "--top-k",
        type=whole(1, 10**9, "results"),
        default=None,
        metavar="N",
        help="number of results (default 3; at most 1000 are returned)",
    )
    search.add_argument(
        "--vector-weight",
        type=share,
        default=None,
        metavar="W",
        help="the dense (semantic) leg's weight, 0 to 1; BM25 (keyword) gets 1 - W",
    )
    search.add_argument(
        "--ranker",
        choices=["learned", "minmax", "weighted", "rrf"],
        default=None,
        help="how the two legs' scores are fused: learned (default: each leg weighted by its own "
        "confidence, BM25 also by term coverage), minmax (min-max normalised, weighted), "
        "weighted (raw scores; the seed's 0.7/0.3 with --vector-weight 0.7) or rrf (reciprocal rank fusion)",
    )
    search.add_argument(
        "--min-score",
        type=share,
        default=None,
        metavar="S",
        help="leave out hits less relevant than S (0..1; default search.min_score, 0 = off)",
    )
    search.add_argument(
        "--since",
        metavar="DATE",
        default=None,
        type=date_filter,
        help="only chunks dated on or after DATE: YYYY-MM-DD, today, yesterday, or 7d / 2w / 3m / 1y "
        "ago; a chunk's date is its daily log's day or its summary's period, other files are left "
        "out",
    )
    search.add_argument(
        "--until",
        metavar="DATE",
        default=None,
        type=date_filter,
        help="only chunks dated on or before DATE (as --since)",
    )
    search.add_argument(
        "--source",
        metavar="GLOB",
        action="append",
        default=None,
        type=source_glob,
        help="only chunks from files matching GLOB (gitignore style, relative to the workspace: "
        "'memory/2026-02-*', '**/MEMORY.md'); repeat for several",
    )
    search.add_argument(
        "--scope",
        choices=["workspace", "user", "all"],
        default="all",
        help="whose memory: this workspace's, your user memory (remember --user) or both (default: all)",
    )
    search.add_argument(
        "--archived",
        action="store_true",
        help="also return archived originals whose summary holds the same match (after the summary); by default "
        "the summary stands for them",
    )

    expand = _command(sub, "expand", "print the full text of a chunk", "memsearch-lsp expand cee73279", common)
    expand.add_argument(
        "id", metavar="ID", help="a chunk id from search (16 hex characters) or a unique prefix of one (at least 4)"
    )

    forget = _command(
        sub,
        "forget",
        "remove a note from its Markdown file (and so from search)",
        "memsearch-lsp forget cee73279 --yes",
        common,
        "Remove the note (the ## section) that holds a chunk from its Markdown file, then re-index the "
        "file. Shows what it will remove and asks first (--yes does not ask); text before a file's first "
        "heading, a file's # title and a MEMORY.md section of several notes (without --line) are refused, "
        "with the reason",
    )
    forget.add_argument(
        "id", metavar="ID", help="a chunk id from search or expand, or a unique prefix of one (at least 4 characters)"
    )
    forget.add_argument(
        "--line",
        type=line_span,
        default=None,
        metavar="N[-M]",
        help="only the paragraphs or list items of that section at line N (to M): remember reports a note's "
        "start_line-end_line",
    )
    forget.add_argument("--yes", action="store_true", help="remove it without asking")

    compact = _command(
        sub,
        "compact",
        "summarise old daily logs and archive them",
        "memsearch-lsp compact --older-than 14 --dry-run",
        common,
    )
    compact.add_argument(
        "--older-than",
        type=whole(0, MAX_DAYS, "days"),
        default=None,
        metavar="DAYS",
        help="compact the daily logs older than DAYS days (default: compact.older_than_days, 7)",
    )
    compact.add_argument("--dry-run", action="store_true", help="print the plan without applying it")
    compact.add_argument("files", nargs="*", metavar="FILE", help="compact these logs instead of the old ones")

    _command(sub, "status", "what is indexed, where, with which model", "memsearch-lsp status --json", common)

    reset = _command(sub, "reset", "delete the index (the Markdown stays)", "memsearch-lsp reset --yes", common)
    reset.add_argument("--yes", action="store_true", help="confirm")

    init = _command(
        sub,
        "init",
        "start a memory here: memory/, .memsearch.toml, .gitignore",
        "memsearch-lsp init ~/project",
        common,
        "Start a memory workspace: memory/MEMORY.md, today's log, a commented .memsearch.toml and "
        ".memsearch/ in .gitignore; never overwrites a file, and refuses a folder inside another "
        "workspace or its memory folder",
    )
    init.add_argument(
        "dir",
        nargs="?",
        default=None,
        type=folder,
        metavar="DIR",
        help="the folder (default: --workspace, else the current folder)",
    )

    _command(
        sub,
        "doctor",
        "check the install, model, settings and index; say what to fix",
        "memsearch-lsp doctor --json",
        common,
    )
    remember = _command(
        sub,
        "remember",
        "append a note to today's log and index it",
        'memsearch-lsp remember "We chose Kafka for the event bus" --heading "Event bus"',
        common,
    )
    remember.add_argument("text", nargs="*", metavar="TEXT", help="the note; - (or nothing) reads it from stdin")
    remember.add_argument(
        "--heading",
        metavar="H",
        default=None,
        help="the note's ## heading (default: $MEMSEARCH_HOOK_HEADING, else HH:MM); with --long-term, the MEMORY.md "
        "section",
    )
    remember.add_argument(
        "--long-term",
        action="store_true",
        help="record a lasting fact or preference in MEMORY.md under --heading (default: Notes), "
        "appended to that section; what is there stays as written",
    )
    remember.add_argument(
        "--user",
        action="store_true",
        help="write it to your user memory ($XDG_DATA_HOME/memsearch-lsp/memory, private), which every "
        "workspace's searches include, instead of this workspace's",
    )
    remember.add_argument(
        "--summarize",
        action="store_true",
        help="store the configured summariser endpoint's note for the text (compact.summarizer "
        '= "openai" in your user settings), the text itself when none is set or it fails',
    )

    recent = _command(
        sub,
        "recent",
        "the last days' notes from the daily logs (no index needed)",
        "memsearch-lsp recent --days 2 --json",
        common,
        "Print the notes of the last days' daily logs, newest first",
    )
    recent.add_argument(
        "--days",
        type=whole(1, MAX_DAYS, "days"),
        default=3,
        metavar="N",
        help="today and the N-1 days before (default 3)",
    )
    recent.add_argument(
        "--session",
        action="store_true",
        help="what a new session should know: MEMORY.md, the newest summary, then the notes",
    )
    recent.add_argument(
        "--chars",
        type=whole(1, 1_000_000_000),
        default=None,
        metavar="N",
        help="at most N characters of note text (whole notes, newest first, up to the first that does not fit; "
        "default 20000)",
    )

    warm = _command(
        sub,
        "warm",
        "keep the index open in the background for hooks and scripts",
        "memsearch-lsp warm --detach --idle 900",
        common,
        "Own the workspace's index and serve it to later commands (hooks, scripts, the CLI) until no "
        "call came for --idle seconds; exits at once when another process (an editor) owns it",
    )
    warm.add_argument(
        "--idle",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="exit after this many seconds without a call (default: the warm.idle_s setting, 600)",
    )
    warm.add_argument(
        "--detach",
        action="store_true",
        help="start it in the background; return once it serves the index (at most 30 s)",
    )

    _command(
        sub,
        "mcp",
        "run the MCP server over stdio (for agents; needs memsearch-lsp[mcp])",
        "claude mcp add memsearch -- memsearch-lsp mcp --workspace ~/project",
        located,  # it speaks JSON-RPC on stdout: no --json
    )
    return parser
