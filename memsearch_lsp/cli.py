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
    """A mistake the user can fix; printed as one line, exit code 1."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_USER)


def _parser() -> _Parser:
    parser = _Parser(prog="memsearch-lsp", description="Markdown memory with hybrid search, over LSP and a CLI.")
    parser.add_argument("--version", action="version", version=f"memsearch-lsp {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    # --workspace and --json work before or after the command; SUPPRESS keeps a later default from
    # overwriting what was given earlier.
    parser.add_argument("--workspace", "-w", default=".", help="workspace folder (default: the current folder)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    common = _Parser(add_help=False)
    common.add_argument("--workspace", "-w", default=argparse.SUPPRESS, help="workspace folder (default: .)")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    serve = sub.add_parser("serve", help="run the language server (stdio by default)")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    serve.add_argument("--stdio", action="store_true", help="use stdio (the default)")

    index = sub.add_parser("index", parents=[common], help="bring the index up to date with the Markdown")
    index.add_argument("--force", action="store_true", help="re-index every file")

    search = sub.add_parser("search", parents=[common], help="hybrid search (reconciles first)")
    search.add_argument("query")
    search.add_argument("-k", "--top-k", type=int, default=None, help="number of results (default 3)")
    search.add_argument("--vector-weight", type=float, default=None, help="dense weight; BM25 gets 1 - W")
    search.add_argument("--ranker", choices=["minmax", "weighted", "rrf"], default=None)

    expand = sub.add_parser("expand", parents=[common], help="print the full text of a chunk")
    expand.add_argument("id")

    compact = sub.add_parser("compact", parents=[common], help="summarise old daily logs and archive them")
    compact.add_argument("--older-than", type=int, default=None, metavar="DAYS")
    compact.add_argument("--dry-run", action="store_true", help="print the plan without applying it")
    compact.add_argument("files", nargs="*", help="compact these logs instead of the old ones")

    sub.add_parser("status", parents=[common], help="what is indexed, where, with which model")

    reset = sub.add_parser("reset", parents=[common], help="delete the index (the Markdown stays)")
    reset.add_argument("--yes", action="store_true", help="confirm")

    init = sub.add_parser("init", parents=[common], help="start a memory here: memory/, .memsearch.toml, .gitignore")
    init.add_argument("dir", nargs="?", default=None, metavar="DIR", help="the folder (default: the workspace)")

    sub.add_parser("doctor", parents=[common], help="check the install, model, settings and index; say what to fix")
    remember = sub.add_parser("remember", parents=[common], help="append a note to today's log and index it")
    remember.add_argument("text", nargs="*", metavar="TEXT", help="the note; - (or nothing) reads it from stdin")
    remember.add_argument("--heading", metavar="H", default=None,
                          help="the note's ## heading (default: HH:MM); with --long-term, the MEMORY.md section")
    remember.add_argument("--long-term", action="store_true",
                          help="record a lasting fact or preference in MEMORY.md under --heading (default: Notes), "
                               "appended to that section; what is there stays as written")
    remember.add_argument("--summarize", action="store_true",
                          help="store the configured summariser endpoint's note for the text (compact.summarizer "
                               "= \"openai\" in your user settings), the text itself when none is set or it fails")

    recent = sub.add_parser("recent", parents=[common],
                            help="the last days' notes from the daily logs (no index needed)",
                            description="Print the notes of the last days' daily logs, newest day first. "
                                        "Example: memsearch-lsp recent --days 2 --json")
    recent.add_argument("--days", type=int, default=3, metavar="N", help="today and the N-1 days before (default 3)")
    recent.add_argument("--session", action="store_true",
                        help="what a new session should know: MEMORY.md, the newest summary, then the notes")
    recent.add_argument("--chars", type=int, default=None, metavar="N",
                        help="at most N characters of note text (whole notes; default: no limit)")

    warm = sub.add_parser("warm", parents=[common],
                          help="keep the index open in the background for hooks and scripts",
                          description="Own the workspace's index and serve it to later commands (hooks, scripts, "
                                      "the CLI) until no call came for --idle seconds; exits at once when another "
                                      "process (an editor) owns it. Example: memsearch-lsp warm --detach --idle 900")
    warm.add_argument("--idle", type=float, default=900, metavar="SECONDS",
                      help="exit after this many seconds without a call (default 900)")
    warm.add_argument("--detach", action="store_true", help="start it in the background and return at once")

    sub.add_parser("mcp", parents=[common], help="run the MCP server over stdio (for agents; needs memsearch-lsp[mcp])")
    return parser


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=None) + "\n")
    else:
        sys.stdout.write(text.rstrip("\n") + "\n")


def _memory(args: argparse.Namespace, **settings: Any) -> MemoryApi:
    """The running server's index when one owns it, else this process opens it."""
    from memsearch_lsp.core.onboard import require_memory_workspace
    from memsearch_lsp.core.process.owner import open_memory

    workspace = Path(args.workspace).expanduser()
    if not workspace.is_dir():
        raise UserError(f"workspace {workspace} is not a folder")
    require_memory_workspace(workspace.resolve())
    return open_memory(workspace, **settings)


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
    if args.top_k is not None and args.top_k < 1:
        raise UserError("-k must be at least 1")
    with _memory(args) as memory:
        memory.index()
        hits = memory.search(args.query, top_k=args.top_k, **overrides)
    _emit(args, [h.to_dict() for h in hits], _format_hits(hits))
    return EXIT_OK


def cmd_expand(args: argparse.Namespace) -> int:
    with _memory(args) as memory:
        chunk = memory.expand(args.id)
    if chunk is None:
        raise UserError(f"no chunk with id {args.id!r} (ids come from `search`; run `index` if files changed)")
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
    _emit(args, dict(plan.to_dict(), applied=not args.dry_run and not plan.empty), plan.describe())
    return EXIT_OK


def cmd_init(args: argparse.Namespace) -> int:
    from memsearch_lsp.core.onboard import init_workspace

    result = init_workspace(Path(args.dir if args.dir is not None else args.workspace))
    _emit(args, result.to_dict(), result.describe())
    return EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    from memsearch_lsp.doctor import run_doctor

    report = run_doctor(Path(args.workspace).expanduser())
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
    from memsearch_lsp.core.onboard import require_memory_workspace
    from memsearch_lsp.core.recall import recent_notes, session_notes, within

    if args.days < 1 or (args.chars is not None and args.chars < 1):
        raise UserError("--days and --chars must be at least 1")
    workspace = Path(args.workspace).expanduser()
    if not workspace.is_dir():
        raise UserError(f"workspace {workspace} is not a folder")
    require_memory_workspace(workspace.resolve())
    memory = MemoryFiles(workspace)
    notes = (session_notes if args.session else recent_notes)(memory, args.days)
    if args.chars is not None:
        notes = within(notes, args.chars)
    text = "\n\n".join(f"<!-- {n.source}:{n.start_line}-{n.end_line} id={n.id} -->\n{n.content}" for n in notes)
    _emit(args, [n.to_dict() for n in notes], text or "no notes")
    return EXIT_OK


def cmd_warm(args: argparse.Namespace) -> int:
    from memsearch_lsp.core.onboard import require_memory_workspace
    from memsearch_lsp.core.process.shared import serve_until_idle

    if args.idle <= 0:
        raise UserError("--idle must be more than 0 seconds")
    workspace = Path(args.workspace).expanduser()
    if not workspace.is_dir():
        raise UserError(f"workspace {workspace} is not a folder")
    require_memory_workspace(workspace.resolve())
    if args.detach:
        import subprocess

        command = [sys.executable, "-m", "memsearch_lsp", "warm", "--idle", str(args.idle),
                   "--workspace", str(workspace.resolve())]
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
        raise UserError(f"the MCP server needs the mcp package ({exc}); "
                        "install it with: pip install 'memsearch-lsp[mcp]'") from exc
    from memsearch_lsp.core.onboard import require_memory_workspace

    workspace = Path(args.workspace).expanduser()
    if not workspace.is_dir():
        raise UserError(f"workspace {workspace} is not a folder")
    require_memory_workspace(workspace.resolve())
    serve(workspace)
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    from memsearch_lsp.lsp.setup import run

    run(tcp=args.tcp, verbose=args.verbose)  # the server configures its own logging (INFO to stderr and client)
    return EXIT_OK


COMMANDS = {"serve": cmd_serve, "index": cmd_index, "search": cmd_search, "expand": cmd_expand,
            "compact": cmd_compact, "status": cmd_status, "reset": cmd_reset, "init": cmd_init, "doctor": cmd_doctor,
            "remember": cmd_remember, "recent": cmd_recent, "warm": cmd_warm,
            "mcp": cmd_mcp}


def main(argv: Sequence[str] | None = None) -> int:
    from memsearch_lsp.core.onboard import NoMemoryHere, platform_problem

    if (problem := platform_problem()) is not None:
        sys.stderr.write(f"memsearch-lsp: error: {problem}\n")
        return EXIT_USER
    args = _parser().parse_args(argv)
    if args.command != "serve":  # configure logging once: the server sets up its own
        logging.basicConfig(stream=sys.stderr, level=logging.INFO if args.verbose else logging.WARNING,
                            format="memsearch-lsp: %(levelname)s: %(message)s")
    from memsearch_lsp.config import ConfigError
    from memsearch_lsp.core.compact.plan import CompactError
    from memsearch_lsp.core.embedding.onnx import EmbeddingError
    from memsearch_lsp.core.files import PathError
    from memsearch_lsp.core.notes import NoteError

    try:
        return COMMANDS[args.command](args)
    except (UserError, ConfigError, FileNotFoundError, CompactError, PathError, NoMemoryHere,
            EmbeddingError, NoteError) as exc:
        sys.stderr.write(f"memsearch-lsp: error: {exc}\n")
        return EXIT_USER
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # never a traceback for the user; -v shows it
        logging.getLogger(__name__).debug("failed", exc_info=True)
        sys.stderr.write(f"memsearch-lsp: error: {type(exc).__name__}: {exc}\n")
        return EXIT_USER
