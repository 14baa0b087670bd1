"""The `memsearch-lsp` commands: each reads its arguments, makes one call into the memory and prints the answer."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memsearch_lsp.cli import progress
from memsearch_lsp.cli.parser import EXIT_OK, EXIT_USER, UserError, heading_text, note_text
from memsearch_lsp.cli.terminal import printable

if TYPE_CHECKING:
    from memsearch_lsp.core.api import MemoryApi


_SURROGATE = re.compile("[\ud800-\udfff]")


def json_line(data: Any) -> str:
    """`data` as one line of JSON in UTF-8; a path's bytes that are not UTF-8 (lone surrogates) escaped."""
    text = json.dumps(data, ensure_ascii=False, indent=None)
    return json.dumps(data, ensure_ascii=True, indent=None) if _SURROGATE.search(text) else text


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if getattr(args, "json", False):
        sys.stdout.write(json_line(data) + "\n")
    else:
        sys.stdout.write(printable(text).rstrip("\n") + "\n")


def _workspace(args: argparse.Namespace) -> Path:
    """The workspace found from --workspace (else the current folder) upwards, as git -C finds a repository: a
    subfolder of a workspace (an agent started in `src/pkg`) is that workspace; NoMemoryHere when there is none
    (nothing is written)."""
    from memsearch_lsp.core.onboard import NoMemoryHere, enclosing_workspace, require_memory_workspace, workspace_for

    if args.workspace is None:
        return workspace_for(Path.cwd())
    workspace = Path(args.workspace).expanduser()
    if not workspace.is_dir():
        raise UserError(f"workspace {workspace} is not a folder", "give --workspace an existing folder")
    workspace = workspace.resolve()
    try:
        require_memory_workspace(workspace)
    except NoMemoryHere:
        found = enclosing_workspace(workspace)
        if found is None:
            raise
        return found
    return workspace


def _memory(args: argparse.Namespace, **settings: Any) -> MemoryApi:
    """The running server's index when one owns it, else this process opens it."""
    from memsearch_lsp.core.process.door import open_memory

    return open_memory(_workspace(args), **settings)


def _user_memory(beside: MemoryApi | None = None, create: bool = False, **opening: Any) -> MemoryApi | None:
    """The user memory (None when there is none yet and `create` is False); it borrows the embedder of
    `beside` (a local memory of the same model) instead of loading the model twice."""
    from memsearch_lsp.core.scopes import open_user_memory, user_config

    same = beside is not None and not beside.remote and beside.config.embedding == user_config().embedding
    return open_user_memory(create=create, **opening, **({"embedder": beside.embedder} if same and beside else {}))


def _format_hits(hits: Sequence[Any], floor: bool = False, filters: str = "") -> str:
    if not hits:
        if filters:  # (a filter that matches no note is the likelier cause: it is named first)
            closest = ", or none is relevant enough: `--min-score 0` lists the closest" if floor else ""
            return f"no results with {filters} (no note matches them{closest})"
        return "no results" + (" relevant enough (`--min-score 0` lists the closest anyway)" if floor else "")
    lines = []
    for n, hit in enumerate(hits, 1):
        where = f"{'user:' if hit.scope == 'user' else ''}{hit.source}:{hit.start_line}-{hit.end_line}"
        name = hit.heading or "(preamble)"
        lines.append(f"{n}. {where}  {name}  score={hit.score:.3f}  id={hit.id}")
        lines.append(f"   {hit.snippet}")
    return "\n".join(lines)


def cmd_index(args: argparse.Namespace) -> int:
    with _memory(args) as memory, progress.bar(args, "indexing") as report:
        stats = memory.index(force=args.force, progress=report)
    _emit(args, stats.to_dict(), str(stats))
    return EXIT_OK


def cmd_search(args: argparse.Namespace) -> int:
    if args.query == "-":  # (a hook's prompt, secrets and all, stays off the process list)
        if sys.stdin is None or sys.stdin.isatty():
            raise UserError("pipe the query in with `-`, or give it as QUERY")
        args.query = " ".join(sys.stdin.read().split())
    if not args.query.strip():
        raise UserError("the query is empty", "give the words to look for; `memsearch-lsp recent` lists the last notes")
    overrides: dict[str, Any] = {}
    if args.vector_weight is not None:  # (0 to 1, and -k at least 1: parser.py says so)
        overrides = {"vector_weight": args.vector_weight, "bm25_weight": round(1 - args.vector_weight, 6)}
    if args.ranker:
        overrides["ranker"] = args.ranker
    if args.min_score is not None:
        overrides["min_score"] = args.min_score
    for name in ("since", "until", "source"):
        if getattr(args, name) is not None:
            overrides[name] = getattr(args, name)
    if args.archived:
        overrides["archived"] = True
    from memsearch_lsp.core.scopes import search_scopes

    opened: list[MemoryApi] = []

    users: list[MemoryApi | None] = []  # (opened once: a search under a lower --min-score asks twice)

    def user() -> MemoryApi | None:
        if not users:
            users.append(_user_memory(opened[0] if opened else None))
            opened.extend([users[0]] if users[0] is not None else [])
        return users[0]

    try:
        if args.scope != "user" and (workspace := _here(args, args.scope == "all")) is not None:
            opened.append(workspace)
            _up_to_date(args, workspace, "searching")
        hits = search_scopes(opened[0] if opened else None, user, args.query, args.top_k, args.scope, **overrides)
        configured = opened[0].config.search.min_score if opened else 0.0
        if args.min_score is not None and args.min_score < configured:  # what the floor shows, then what it hides
            del overrides["min_score"]
            shown = search_scopes(opened[0] if opened else None, user, args.query, args.top_k, args.scope, **overrides)
            limit = max(len(hits), len(shown))  # (-k, else search.top_k: each search gave at most that many)
            hits = [*shown, *(h for h in hits if h.id not in {s.id for s in shown})][:limit]
        setting = opened[0].config.search.min_score if opened else 0.0
        floor = (setting if args.min_score is None else args.min_score) > 0 and bool(args.query.strip())
        if floor and not hits:  # the answer names `--min-score 0` only when that would list something
            below = {**overrides, "min_score": 0.0}
            floor = bool(
                search_scopes(opened[0] if opened else None, user, args.query, args.top_k, args.scope, **below)
            )
    finally:
        for memory in opened:
            memory.close()
    given = [f"--{name} {value!r}" for name in ("since", "until") if (value := getattr(args, name)) is not None]
    given += [f"--source {glob!r}" for glob in args.source or ()]
    _emit(args, {"hits": [h.to_dict() for h in hits]}, _format_hits(hits, floor, " ".join(given)))
    return EXIT_OK


def _here(args: argparse.Namespace, mine_instead: bool = True) -> MemoryApi | None:
    """The workspace's memory; with `mine_instead`, None where the folder has none (no --workspace named it) and
    the user has a memory: the user memory stays in reach in a project without `memory/`."""
    from memsearch_lsp.core.onboard import NoMemoryHere
    from memsearch_lsp.core.scopes import user_memory_exists

    try:
        return _memory(args)
    except NoMemoryHere:
        if not mine_instead or args.workspace is not None or not user_memory_exists():
            raise
        return None


def _up_to_date(args: argparse.Namespace, memory: MemoryApi, then: str) -> None:
    """The index brought up to date first (an owner's first index: waited for 10 s at most): after a `git checkout`
    a search, and an id that search gave (`expand`, `forget`), answer from the files as they are now."""
    from memsearch_lsp.core.process.door import READY_WAIT_S, index_what_it_can

    with progress.bar(args, "indexing") as report:
        index_what_it_can(memory, report, then, READY_WAIT_S)


def _either(args: argparse.Namespace, find: Any) -> tuple[Any, MemoryApi | None]:
    """`find(memory)` on the workspace's memory, else on the user memory (AmbiguousId for a prefix of a chunk in each:
    scopes.one_memory; where the user memory does not answer, the workspace's: scopes.user_beside); (what it found,
    the memory that found it, open: the caller closes it) or (None, None)."""
    from memsearch_lsp.core.onboard import NoMemoryHere
    from memsearch_lsp.core.scopes import looks_beyond, one_memory, user_beside

    missing: NoMemoryHere | None = None
    try:
        memory: MemoryApi | None = _memory(args)
    except NoMemoryHere as exc:
        if args.workspace is not None:
            raise
        memory, missing = None, exc
    mine = kept = theirs = None
    try:
        if memory is not None:
            _up_to_date(args, memory, "looking the id up in")
        found = find(memory) if memory is not None else None
        if memory is None or found is None or looks_beyond(memory.root, args.id):
            mine, theirs = user_beside(lambda: _user_memory(memory), args.id, found is not None)
        if memory is not None and found is not None:  # the workspace's, unless a prefix starts a chunk of each
            one_memory(args.id, memory.expand(args.id), theirs)
            kept = memory
        elif mine is not None and (found := find(mine)) is not None:
            kept, found = mine, replace(found, scope="user") if hasattr(found, "scope") else found  # (a user source)
    finally:
        for opened in [m for m in (memory, mine) if m is not None and m is not kept]:
            opened.close()
    if kept is None and missing is not None:  # no workspace here, and the user memory has no such id either
        raise missing
    return found, kept  # (None, None) when neither found it


_ID_HINT = "ids (or a unique prefix of at least 4 characters) come from `search`; run `index` if files changed"


def cmd_expand(args: argparse.Namespace) -> int:
    try:
        chunk, memory = _either(args, lambda m: m.expand(args.id))
    except ValueError as exc:  # a prefix too short, or one that several ids start with
        raise UserError(str(exc), _ID_HINT) from exc
    if memory is not None:
        memory.close()
    if chunk is None:
        raise UserError(f"no chunk with id {args.id!r}", _ID_HINT)
    where = f"{'user:' if chunk.scope == 'user' else ''}{chunk.source}:{chunk.start_line}-{chunk.end_line}"
    _emit(args, chunk.to_dict(), f"{where}\n\n{chunk.content}")
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
        with progress.bar(args, "summarising", unit="group") as report:
            plan = plan_compaction(memory, older_than_days=args.older_than, files=args.files or None, progress=report)
        if not args.dry_run and not plan.empty:
            plan = apply_checked(memory, plan)  # a log changed meanwhile is left in place (plan.left)
            with progress.bar(args, "indexing") as report:
                memory.index(progress=report)
    applied = not args.dry_run and not plan.empty
    said = None if plan.empty and not args.dry_run else applied  # "nothing to compact" needs no "applied"
    _emit(args, dict(plan.to_dict(), applied=applied), plan.describe(applied=said))
    return EXIT_OK


def cmd_init(args: argparse.Namespace) -> int:
    from memsearch_lsp.core.onboard import init_workspace

    folder = args.dir if args.dir is not None else args.workspace
    result = init_workspace(Path(folder if folder is not None else "."))
    _emit(args, result.to_dict(), result.describe())
    from memsearch_lsp.config import load_config
    from memsearch_lsp.core.search.language import advice

    note = advice(result.root, load_config(result.root))
    if note:
        print(f"note: {note}", file=sys.stderr)
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
    from memsearch_lsp.core.notes import check_note, clean_heading, clean_note
    from memsearch_lsp.core.process.door import WRITE_WAIT_S, once_more

    text = note_text(args.text)  # (UserError: none, or not UTF-8)
    try:  # (redacted once: by `remember`; before a summariser reads it, here, and its summary by `remember`)
        body = clean_note(text) if args.summarize else check_note(text)
    except ValueError as exc:
        raise UserError(str(exc)) from exc
    beside: dict[str, Any] = {"wait_s": WRITE_WAIT_S, "files_alone": True}  # (another's long pass: the Markdown)
    opened = (lambda: _user_memory(create=True, **beside)) if args.user else (lambda: _memory(args, **beside))
    with opened() as memory:  # type: ignore[union-attr]
        if args.summarize:  # (the summariser's module only then)
            from memsearch_lsp.core.compact.summarize import summarized

            body = summarized(memory.config, memory.root, body)
        named = heading_text(args.heading if args.heading is not None else os.environ.get("MEMSEARCH_HOOK_HEADING"))
        heading = clean_heading(named, text) or None  # (with the note as given: a summary may not name its secrets)
        when = memory.clock()  # (asked again, the same note of the same day: the one written, if it was)
        note = once_more(memory, opened, lambda m: m.remember(body, heading, now=when, long_term=args.long_term))
    note = replace(note, scope="user") if args.user else note
    _emit(args, note.to_dict(), str(note))
    return EXIT_OK


def cmd_forget(args: argparse.Namespace) -> int:
    line, end = args.line or (None, None)
    preview, memory = _either(
        args, lambda m: m.expand(args.id) and m.forget(args.id, dry_run=True, line=line, end_line=end)
    )
    if memory is None:
        raise UserError(f"no chunk with id {args.id!r}", _ID_HINT)
    with memory:
        scope = preview.scope  # (`_either` says whose memory found it)
        shown = f"{'user:' if scope == 'user' else ''}{preview.source}:{preview.start_line}-{preview.end_line}"
        if not args.yes:
            if sys.stdin is None or not sys.stdin.isatty():
                raise UserError(
                    f"forget would remove {shown} ({preview.heading}); nothing was removed: add --yes to remove it",
                    f"run `memsearch-lsp forget {args.id}{f' --line {line}-{end}' if line else ''} --yes` to remove it "
                    "without being asked",
                )
            sys.stderr.write(printable(f"{shown}\n\n{preview.content}\n\nForget this note? [y/N] "))
            sys.stderr.flush()
            if sys.stdin.readline().strip().lower() not in ("y", "yes"):
                _emit(args, dict(preview.to_dict(), scope=scope), "kept: nothing was removed")
                return EXIT_OK
        gone = memory.forget(preview.id, line=line, end_line=end)
    _emit(args, dict(gone.to_dict(), scope=scope), f"forgot {shown}  {gone.heading}")
    return EXIT_OK


def cmd_recent(args: argparse.Namespace) -> int:
    from memsearch_lsp.core.recall import RECENT_CHARS, recent_notes, session_notes, within
    from memsearch_lsp.core.workspace import MemoryFiles

    if args.days < 1 or (args.chars is not None and args.chars < 1):
        raise UserError("--days and --chars must be at least 1")
    memory = MemoryFiles(_workspace(args))
    notes = within((session_notes if args.session else recent_notes)(memory, args.days), args.chars or RECENT_CHARS)
    text = "\n\n".join(f"<!-- {n.source}:{n.start_line}-{n.end_line} id={n.id} -->\n{n.content}" for n in notes)
    _emit(args, {"notes": [n.to_dict() for n in notes]}, text or "no notes")
    return EXIT_OK


COMMANDS = {
    "index": cmd_index,
    "search": cmd_search,
    "expand": cmd_expand,
    "forget": cmd_forget,
    "compact": cmd_compact,
    "status": cmd_status,
    "reset": cmd_reset,
    "init": cmd_init,
    "doctor": cmd_doctor,
    "remember": cmd_remember,
    "recent": cmd_recent,
}
