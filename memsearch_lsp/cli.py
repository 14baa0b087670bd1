"""The `memsearch-lsp` command: serve | index | search | expand | compact | status | reset | init | doctor |
remember | recent | warm | mcp."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from memsearch_lsp.version import __version__

if TYPE_CHECKING:
    from memsearch_lsp.core.api import MemoryApi

EXIT_OK, EXIT_USER = 0, 1


class UserError(Exception):
    """A mistake the user can fix; printed as one line (with --json: an error object on stdout), exit code 1."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.hint = hint


class UsageError(UserError):
    """Arguments argparse could not read."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}", f"see `{self.prog} --help`")


WORKSPACE_HELP = ("the memory workspace (default: the current folder or the nearest parent folder that is one, "
                  "as git finds a repository, stopping at the home folder)")


def _command(sub: Any, name: str, help: str, example: str, common: argparse.ArgumentParser | None = None,
             description: str = "") -> _Parser:
    parser: _Parser = sub.add_parser(name, parents=[common] if common is not None else [], help=help,
                                     description=(description or help[0].upper() + help[1:]) + ".",
                                     epilog=f"example: {example}", formatter_class=argparse.RawDescriptionHelpFormatter)
    return parser


def _parser() -> _Parser:
    parser = _Parser(prog="memsearch-lsp", description="Markdown memory with hybrid search, over LSP and a CLI.",
                     epilog="example: memsearch-lsp search \"which message broker did we pick\" --since 30d")
    parser.add_argument("--version", action="version", version=f"memsearch-lsp {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    # --workspace and --json work before or after the command; SUPPRESS keeps a later default from
    # overwriting what was given earlier.
    parser.add_argument("--workspace", "-w", default=None, metavar="DIR", help=WORKSPACE_HELP)
    parser.add_argument("--json", action="store_true",
                        help="print JSON on stdout (errors too: {\"error\": {\"message\", \"hint\"}}, exit 1)")
    common = _Parser(add_help=False)
    common.add_argument("--workspace", "-w", default=argparse.SUPPRESS, metavar="DIR", help=WORKSPACE_HELP)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print JSON on stdout (errors too, as {\"error\": {\"message\", \"hint\"}})")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    serve = _command(sub, "serve", "run the language server (stdio by default)",
                     "memsearch-lsp serve --tcp 127.0.0.1:2087")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    serve.add_argument("--stdio", action="store_true", help="use stdio (the default)")

    index = _command(sub, "index", "bring the index up to date with the Markdown", "memsearch-lsp index --json", common)
    index.add_argument("--force", action="store_true", help="re-index every file")

    search = _command(sub, "search", "hybrid search (reconciles first)",
                      "memsearch-lsp search \"what did we decide about retries\" --since 7d --source 'memory/**' -k 5",
                      common, "Hybrid (semantic + keyword) search over the memory files, best hits first; the index "
                              "is brought up to date first. Filters restrict the candidates of both legs, not the "
                              "top k afterwards")
    search.add_argument("query", metavar="QUERY", help="what to look for, in your own words or by keyword")
    search.add_argument("-k", "--top-k", type=int, default=None, metavar="N", help="number of results (default 3)")
    search.add_argument("--vector-weight", type=float, default=None, metavar="W",
                        help="the dense (semantic) leg's weight, 0 to 1; BM25 (keyword) gets 1 - W")
    search.add_argument("--ranker", choices=["learned", "minmax", "weighted", "rrf"], default=None,
                        help="how the two legs' scores are fused: learned (default: each leg weighted by its own "
                             "confidence, BM25 also by term coverage), minmax (min-max normalised, weighted), "
                             "weighted (raw scores, weighted; the seed's 0.7/0.3) or rrf (reciprocal rank fusion)")
    search.add_argument("--min-score", type=float, default=None, metavar="S",
                        help="leave out hits less relevant than S (0..1; default search.min_score, 0 = off)")
    search.add_argument("--since", metavar="DATE", default=None,
                        help="only chunks dated on or after DATE: YYYY-MM-DD, today, yesterday, or 7d / 2w / 3m / 1y "
                             "ago; a chunk's date is its daily log's day or its summary's period, other files are left "
                             "out")
    search.add_argument("--until", metavar="DATE", default=None,
                        help="only chunks dated on or before DATE (as --since)")
    search.add_argument("--source", metavar="GLOB", action="append", default=None,
                        help="only chunks from files matching GLOB (gitignore style, relative to the workspace: "
                             "'memory/2026-02-*', '**/MEMORY.md'); repeat for several")

    expand = _command(sub, "expand", "print the full text of a chunk", "memsearch-lsp expand cee73279", common)
    expand.add_argument("id", metavar="ID",
                        help="a chunk id from search (16 hex characters) or a unique prefix of one (at least 4)")

    compact = _command(sub, "compact", "summarise old daily logs and archive them",
                       "memsearch-lsp compact --older-than 14 --dry-run", common)
    compact.add_argument("--older-than", type=int, default=None, metavar="DAYS",
                         help="compact the daily logs older than DAYS days (default: compact.older_than_days, 7)")
    compact.add_argument("--dry-run", action="store_true", help="print the plan without applying it")
    compact.add_argument("files", nargs="*", metavar="FILE", help="compact these logs instead of the old ones")

    _command(sub, "status", "what is indexed, where, with which model", "memsearch-lsp status --json", common)

    reset = _command(sub, "reset", "delete the index (the Markdown stays)", "memsearch-lsp reset --yes", common)
    reset.add_argument("--yes", action="store_true", help="confirm")

    init = _command(sub, "init", "start a memory here: memory/, .memsearch.toml, .gitignore",
                    "memsearch-lsp init ~/project", common,
                    "Start a memory workspace: memory/MEMORY.md, today's log, a commented .memsearch.toml and "
                    ".memsearch/ in .gitignore; never overwrites a file, and refuses a folder inside another "
                    "workspace or its memory folder")
    init.add_argument("dir", nargs="?", default=None, metavar="DIR",
                      help="the folder (default: --workspace, else the current folder)")

    _command(sub, "doctor", "check the install, model, settings and index; say what to fix",
             "memsearch-lsp doctor --json", common)
    remember = _command(sub, "remember", "append a note to today's log and index it",
                        "memsearch-lsp remember \"We chose Kafka for the event bus\" --heading \"Event bus\"", common)
    remember.add_argument("text", nargs="*", metavar="TEXT", help="the note; - (or nothing) reads it from stdin")
    remember.add_argument("--heading", metavar="H", default=None,
                          help="the note's ## heading (default: HH:MM); with --long-term, the MEMORY.md section")
    remember.add_argument("--long-term", action="store_true",
                          help="record a lasting fact or preference in MEMORY.md under --heading (default: Notes), "
                               "appended to that section; what is there stays as written")
    remember.add_argument("--summarize", action="store_true",
                          help="store the configured summariser endpoint's note for the text (compact.summarizer "
                               "= \"openai\" in your user settings), the text itself when none is set or it fails")

    recent = _command(sub, "recent", "the last days' notes from the daily logs (no index needed)",
                      "memsearch-lsp recent --days 2 --json", common,
                      "Print the notes of the last days' daily logs, newest day first")
    recent.add_argument("--days", type=int, default=3, metavar="N", help="today and the N-1 days before (default 3)")
    recent.add_argument("--session", action="store_true",
                        help="what a new session should know: MEMORY.md, the newest summary, then the notes")
    recent.add_argument("--chars", type=int, default=None, metavar="N",
                        help="at most N characters of note text (whole notes; default: no limit)")

    warm = _command(sub, "warm", "keep the index open in the background for hooks and scripts",
                    "memsearch-lsp warm --detach --idle 900", common,
                    "Own the workspace's index and serve it to later commands (hooks, scripts, the CLI) until no "
                    "call came for --idle seconds; exits at once when another process (an editor) owns it")
    warm.add_argument("--idle", type=float, default=900, metavar="SECONDS",
                      help="exit after this many seconds without a call (default 900)")
    warm.add_argument("--detach", action="store_true", help="start it in the background and return at once")

    _command(sub, "mcp", "run the MCP server over stdio (for agents; needs memsearch-lsp[mcp])",
             "claude mcp add memsearch -- memsearch-lsp mcp --workspace ~/project", common)
    return parser


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=None) + "\n")
    else:
        sys.stdout.write(text.rstrip("\n") + "\n")


def _workspace(args: argparse.Namespace) -> Path:
    """--workspace as given, else the workspace found from the current folder upwards; NoMemoryHere when
    it is no memory workspace (nothing is written)."""
    from memsearch_lsp.core.onboard import require_memory_workspace, workspace_for

    if args.workspace is None:
        return workspace_for(Path.cwd())
    workspace = Path(args.workspace).expanduser()
    if not workspace.is_dir():
        raise UserError(f"workspace {workspace} is not a folder", "give --workspace an existing folder")
    workspace = workspace.resolve()
    require_memory_workspace(workspace)
    return workspace


def _memory(args: argparse.Namespace, **settings: Any) -> MemoryApi:
    """The running server's index when one owns it, else this process opens it."""
    from memsearch_lsp.core.process.owner import open_memory

    return open_memory(_workspace(args), **settings)


def _format_hits(hits: Sequence[Any]) -> str:
    if not hits:
        return "no results"
    lines = []
    for n, hit in enumerate(hits, 1):
        lines.append(f"{n}. {hit.source}:{hit.start_line}-{hit.end_line}  {hit.heading or '(preamble)'}"
                     f"  score={hit.score:.3f}  id={hit.id}")
        lines.append(f"   {hit.snippet}")
    return "\n".join(lines)


def cmd_index(args: argparse.Namespace) -> int:
    with _memory(args) as memory:
        stats = memory.index(force=args.force)
    _emit(args, stats.to_dict(), str(stats))
    return EXIT_OK


def cmd_search(args: argparse.Namespace) -> int:
    overrides: dict[str, Any] = {}
    if args.vector_weight is not None:
        if not 0 <= args.vector_weight <= 1:
            raise UserError("--vector-weight must be between 0 and 1")
        overrides = {"vector_weight": args.vector_weight, "bm25_weight": round(1 - args.vector_weight, 6)}
    if args.ranker:
        overrides["ranker"] = args.ranker
    if args.min_score is not None:
        if not 0 <= args.min_score <= 1:
            raise UserError("--min-score must be between 0 and 1")
        overrides["min_score"] = args.min_score
    if args.top_k is not None and args.top_k < 1:
        raise UserError("-k must be at least 1")
    for name in ("since", "until", "source"):
        if getattr(args, name) is not None:
            overrides[name] = getattr(args, name)
    with _memory(args) as memory:
        memory.index()
        hits = memory.search(args.query, top_k=args.top_k, **overrides)
    _emit(args, [h.to_dict() for h in hits], _format_hits(hits))
    return EXIT_OK


def cmd_expand(args: argparse.Namespace) -> int:
    with _memory(args) as memory:
        chunk = memory.expand(args.id)
    if chunk is None:
        raise UserError(f"no chunk with id {args.id!r}",
                        "ids (or a unique prefix of at least 4 characters) come from `search`; run `index` if files "
                        "changed")
    _emit(args, chunk.to_dict(), f"{chunk.source}:{chunk.start_line}-{chunk.end_line}\n\n{chunk.content}")
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    with _memory(args) as memory:
        data = memory.status()
    _emit(args, data, "\n".join(f"{k}: {v}" for k, v in data.items()))
    return EXIT_OK


def cmd_reset(args: argparse.Namespace) -> int:
    if not args.yes:
        raise UserError("reset deletes the index; run `memsearch-lsp reset --yes` to confirm")
    with _memory(args) as memory:
        memory.reset()
    _emit(args, {"reset": True}, "index deleted; the next index or search rebuilds it")
    return EXIT_OK


def cmd_compact(args: argparse.Namespace) -> int:
    from memsearch_lsp.core.compact.plan import apply_checked, plan_compaction

    with _memory(args) as memory:
        plan = plan_compaction(memory, older_than_days=args.older_than, files=args.files or None)
        if not args.dry_run and not plan.empty:
            plan = apply_checked(memory, plan)  # a log changed meanwhile is left in place (plan.left)
            memory.index()
    applied = not args.dry_run and not plan.empty
    said = None if plan.empty and not args.dry_run else applied  # "nothing to compact" needs no "applied"
    _emit(args, dict(plan.to_dict(), applied=applied), plan.describe(applied=said))
    return EXIT_OK


def cmd_init(args: argparse.Namespace) -> int:
    from memsearch_lsp.core.onboard import init_workspace

    folder = args.dir if args.dir is not None else args.workspace
    result = init_workspace(Path(folder if folder is not None else "."))
    _emit(args, result.to_dict(), result.describe())
    return EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    from memsearch_lsp.core.onboard import find_workspace
    from memsearch_lsp.doctor import run_doctor

    if args.workspace is not None:
        folder = Path(args.workspace).expanduser()
    else:
        folder = find_workspace(Path.cwd()) or Path.cwd()
    report = run_doctor(folder)
    _emit(args, report.to_dict(), report.describe())
    return EXIT_OK if report.ok else EXIT_USER


def cmd_remember(args: argparse.Namespace) -> int:
    from memsearch_lsp.core.notes import clean_note, summarized

    if args.text in ([], ["-"]):
        if sys.stdin is None or sys.stdin.isatty():
            raise UserError("give the note as TEXT, or pipe it in with `-`")
        text = sys.stdin.read()
    else:
        text = " ".join(args.text)
    try:
        body = clean_note(text)
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    with _memory(args) as memory:
        if args.summarize:
            body = clean_note(summarized(memory.config, memory.root, body))
        note = memory.remember(body, args.heading, long_term=args.long_term)
    _emit(args, note.to_dict(), str(note))
    return EXIT_OK


def cmd_recent(args: argparse.Namespace) -> int:
    from memsearch_lsp.core.memory import MemoryFiles
    from memsearch_lsp.core.recall import recent_notes, session_notes, within

    if args.days < 1 or (args.chars is not None and args.chars < 1):
        raise UserError("--days and --chars must be at least 1")
    memory = MemoryFiles(_workspace(args))
    notes = (session_notes if args.session else recent_notes)(memory, args.days)
    if args.chars is not None:
        notes = within(notes, args.chars)
    text = "\n\n".join(f"<!-- {n.source}:{n.start_line}-{n.end_line} id={n.id} -->\n{n.content}" for n in notes)
    _emit(args, [n.to_dict() for n in notes], text or "no notes")
    return EXIT_OK


def cmd_warm(args: argparse.Namespace) -> int:
    from memsearch_lsp.core.process.shared import serve_until_idle

    if args.idle <= 0:
        raise UserError("--idle must be more than 0 seconds")
    workspace = _workspace(args)
    if args.detach:
        import subprocess

        command = [sys.executable, "-m", "memsearch_lsp", "warm", "--idle", str(args.idle),
                   "--workspace", str(workspace)]
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        _emit(args, {"pid": process.pid, "idle_s": args.idle}, f"warming the index in pid {process.pid}")
        return EXIT_OK
    served = serve_until_idle(workspace, args.idle)
    _emit(args, {"served": served}, "served until idle" if served else "another process owns the index")
    return EXIT_OK


def cmd_mcp(args: argparse.Namespace) -> int:
    try:
        from memsearch_lsp.mcp_server import serve
    except ModuleNotFoundError as exc:  # the optional extra is missing
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types", "pydantic", "anyio"):
            raise
        raise UserError(f"the MCP server needs the mcp package ({exc}); install it with: "
                        "pip install 'memsearch-lsp[mcp]'", "pip install 'memsearch-lsp[mcp]'") from exc
    serve(_workspace(args))
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    from memsearch_lsp.lsp.setup import run

    run(tcp=args.tcp, verbose=args.verbose)  # the server configures its own logging (INFO to stderr and client)
    return EXIT_OK


COMMANDS = {"serve": cmd_serve, "index": cmd_index, "search": cmd_search, "expand": cmd_expand,
            "compact": cmd_compact, "status": cmd_status, "reset": cmd_reset, "init": cmd_init, "doctor": cmd_doctor,
            "remember": cmd_remember, "recent": cmd_recent, "warm": cmd_warm,
            "mcp": cmd_mcp}


def _hint(exc: BaseException, command: str = "") -> str:
    """What to do about an error, for the `hint` of a JSON error (and nothing else)."""
    from memsearch_lsp.config import ConfigError
    from memsearch_lsp.core.embedding.onnx import EmbeddingError
    from memsearch_lsp.core.onboard import INIT_HINT, NestedWorkspace, NoMemoryHere
    from memsearch_lsp.core.search.filters import DATE_FORMS, FilterError

    if isinstance(exc, UserError):
        return exc.hint or f"see `memsearch-lsp {command or ''} --help`".replace("  ", " ")
    if isinstance(exc, NoMemoryHere):
        return f"{INIT_HINT} in the project folder, or pass --workspace DIR"
    if isinstance(exc, NestedWorkspace):
        return "run commands anywhere inside the enclosing workspace: they find it as git finds a repository"
    if isinstance(exc, FilterError):
        return f"dates: {DATE_FORMS}; sources: gitignore-style globs relative to the workspace"
    if isinstance(exc, ConfigError):
        return "correct or remove that setting; `memsearch-lsp doctor` shows where each setting comes from"
    if isinstance(exc, EmbeddingError):
        return "`memsearch-lsp doctor` checks the model and the embedding settings"
    return "run the command with -v for details; `memsearch-lsp doctor` checks the install, settings and index"


def _fail(as_json: bool, exc: BaseException, message: str, command: str = "") -> int:
    """Report an error: one line on stderr, or with --json `{"error": {"message", "hint"}}` on stdout; exit 1."""
    if as_json:
        error = {"message": message, "hint": _hint(exc, command)}
        sys.stdout.write(json.dumps({"error": error}, ensure_ascii=False) + "\n")
    else:
        sys.stderr.write(f"memsearch-lsp: error: {message}\n")
    return EXIT_USER


def main(argv: Sequence[str] | None = None) -> int:
    from memsearch_lsp.core.onboard import platform_problem

    arguments = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in arguments[:arguments.index("--")] if "--" in arguments else "--json" in arguments
    if (problem := platform_problem()) is not None:
        return _fail(as_json, UserError(problem, "use Linux, macOS or WSL"), problem)
    try:
        args = _parser().parse_args(arguments)
    except UsageError as exc:
        return _fail(as_json, exc, str(exc))
    as_json = bool(getattr(args, "json", False))
    if args.command != "serve":  # configure logging once: the server sets up its own
        logging.basicConfig(stream=sys.stderr, level=logging.INFO if args.verbose else logging.WARNING,
                            format="memsearch-lsp: %(levelname)s: %(message)s")
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if isinstance(exc, _user_errors()):
            return _fail(as_json, exc, str(exc), args.command)
        logging.getLogger(__name__).debug("failed", exc_info=True)  # never a traceback for the user; -v shows it
        return _fail(as_json, exc, f"{type(exc).__name__}: {exc}")


def _user_errors() -> tuple[type[Exception], ...]:
    """The errors reported as their message alone; imported only once one happened (a command that never
    loads the compaction or embedding modules does not pay for them)."""
    from memsearch_lsp.core.compact.plan import CompactError
    from memsearch_lsp.core.embedding.onnx import EmbeddingError
    from memsearch_lsp.core.files import PathError
    from memsearch_lsp.core.notes import NoteError
    from memsearch_lsp.core.onboard import NestedWorkspace, NoMemoryHere

    # ValueError: ConfigError, FilterError, AmbiguousId, owner replies
    return (UserError, ValueError, FileNotFoundError, CompactError, PathError, NoMemoryHere, NestedWorkspace,
            EmbeddingError, NoteError)
