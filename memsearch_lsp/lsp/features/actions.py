"""Compaction over LSP: `source.compact` code actions (edit built in resolve) and the memsearch.compact command."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path

from memsearch_lsp.core.api import MemoryApi
from memsearch_lsp.core.compact.plan import CompactionPlan, apply_checked, compactable, old_logs, plan_compaction
from memsearch_lsp.core.files import PathError
from memsearch_lsp.core.index import IndexStats
from memsearch_lsp.lsp import convert
from memsearch_lsp.lsp.server import MemsearchServer, Root  # pygls reads command handlers' type hints

log = logging.getLogger(__name__)

COMPACT_KIND = "source.compact"  # a custom kind: lsprotocol's CodeActionKind enum cannot hold it
COMMAND = "memsearch.compact"
REINDEX = "memsearch.reindex"


class CompactCommandError(ValueError):
    """Bad memsearch.compact arguments or a failed compaction; returned as a JSON-RPC error."""


# -- client capabilities ------------------------------------------------------------------------
def can_edit_files(ls: MemsearchServer) -> bool:
    """True when the client creates and renames files through WorkspaceEdit.documentChanges.

    Neovim 0.11 handles documentChanges without declaring it, so only an explicit `false` counts.
    """
    workspace = ls.client_capabilities.workspace
    edit = workspace.workspace_edit if workspace else None
    if edit is None or edit.document_changes is False:
        return False
    kinds = {str(getattr(k, "value", k)) for k in edit.resource_operations or ()}
    return {"create", "rename"} <= kinds


def previews(ls: MemsearchServer) -> bool:
    """True when the client honours change annotations, so a `needsConfirmation` edit opens its preview."""
    workspace = ls.client_capabilities.workspace
    edit = workspace.workspace_edit if workspace else None
    return bool(edit and edit.change_annotation_support is not None)


def by_edit(ls: MemsearchServer) -> bool:
    """Compaction goes through a WorkspaceEdit the user reviews; else the server applies it on disk."""
    return can_edit_files(ls) and previews(ls)


def resolves_edits(ls: MemsearchServer) -> bool:
    document = ls.client_capabilities.text_document
    action = document.code_action if document else None
    support = action.resolve_support if action else None
    return bool(support and "edit" in support.properties)


def shows_disabled(ls: MemsearchServer) -> bool:
    document = ls.client_capabilities.text_document
    action = document.code_action if document else None
    return bool(action and action.disabled_support)


def wanted(only: Sequence[str] | None) -> bool:
    """Does the client's `context.only` filter admit source.compact (kinds are hierarchical)?"""
    if not only:
        return True
    kinds = [str(getattr(k, "value", k)) for k in only]
    return any(k == COMPACT_KIND or COMPACT_KIND.startswith(f"{k}.") for k in kinds)


# -- the WorkspaceEdit ------------------------------------------------------------------------
def end_position(ls: MemsearchServer, text: str) -> types.Position:
    lines = text.split("\n")
    last = lines[-1].rstrip("\r")
    return types.Position(line=len(lines) - 1, character=ls.workspace.position_codec.client_num_units(last))


SUMMARIES, ARCHIVE = "memsearch.summaries", "memsearch.archive"
Change = types.TextDocumentEdit | types.CreateFile | types.RenameFile | types.DeleteFile


def summary_note(path: str) -> str:
    return f"{SUMMARIES}:{path}"


PREVIEW_CHARS = 2000  # of a summary's text in its change annotation


def review_notes(plan: CompactionPlan) -> dict[str, types.ChangeAnnotation]:
    """Every change needs confirmation: the client shows the edit for review before applying it.

    Each summary has its own note whose description is the summary's text (its facts, one per line), so
    the review shows what will be kept, not only that a file is written.
    """
    share = f" ({plan.chars_after} characters in place of {plan.chars_before})" if plan.chars_before else ""
    notes = {
        summary_note(s.path): types.ChangeAnnotation(
            label=f"{'Append to' if s.action == 'append' else 'Write'} {s.path}"
            + (share if len(plan.summaries) == 1 else ""),
            needs_confirmation=True,
            description=preview_text(s.content),
        )
        for s in plan.summaries
    }
    notes[ARCHIVE] = types.ChangeAnnotation(
        label="Archive compacted daily logs",
        needs_confirmation=True,
        description=f"{len(plan.archive)} logs, still searchable there",
    )
    return notes


def preview_text(content: str, limit: int = PREVIEW_CHARS) -> str:
    """A summary's text without its title and blank lines, cut at a line end near `limit` characters."""
    lines = [line for line in content.split("\n") if line.strip() and not line.startswith("# ")]
    out: list[str] = []
    for line in lines:
        if out and sum(len(x) + 1 for x in out) + len(line) > limit:
            out.append(f"… ({len(lines) - len(out)} more lines)")
            break
        out.append(line)
    return "\n".join(out)


def _append(ls: MemsearchServer, root: Path, path: str, text: str, note: str | None) -> types.TextDocumentEdit:
    """Insert `text` at the end of a file (its open buffer, else the disk)."""
    uri = convert.uri_of(root, path)
    document = ls.workspace.text_documents.get(uri)
    current = document.source if document else (root / path).read_text(encoding="utf-8")
    at = end_position(ls, current)
    edit = (
        types.TextEdit(range=types.Range(start=at, end=at), new_text=text)
        if note is None
        else types.AnnotatedTextEdit(range=types.Range(start=at, end=at), new_text=text, annotation_id=note)
    )
    return types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(
            uri=uri, version=document.version if document else None
        ),
        edits=[edit],
    )


def plan_edit(ls: MemsearchServer, root: Path, plan: CompactionPlan) -> types.WorkspaceEdit:
    """Create (or append to) each summary, then rename each original into the archive (or merge it there).

    With a client that supports change annotations, every change needs confirmation (a preview).
    """
    note = previews(ls)
    archive = ARCHIVE if note else None
    changes: list[Change] = []
    start = types.Position(line=0, character=0)
    for summary in plan.summaries:
        summaries = summary_note(summary.path) if note else None
        uri = convert.uri_of(root, summary.path)
        if summary.action == "create":
            changes.append(
                types.CreateFile(
                    uri=uri,
                    options=types.CreateFileOptions(overwrite=False, ignore_if_exists=False),
                    annotation_id=summaries,
                )
            )
            edit = (
                types.TextEdit(range=types.Range(start=start, end=start), new_text=summary.content)
                if summaries is None
                else types.AnnotatedTextEdit(
                    range=types.Range(start=start, end=start), new_text=summary.content, annotation_id=summaries
                )
            )
            changes.append(
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None), edits=[edit]
                )
            )
        else:
            changes.append(_append(ls, root, summary.path, summary.content, summaries))
    for move in plan.archive:
        src, dst = convert.uri_of(root, move.src), convert.uri_of(root, move.dst)
        if move.action == "merge":  # a log recreated at an archived date: appended to its archived copy
            text = (root / move.src).read_text(encoding="utf-8")
            existing = (root / move.dst).read_text(encoding="utf-8")
            lead = "\n" if existing and not existing.endswith("\n") else ""
            changes.append(_append(ls, root, move.dst, lead + text, archive))
            changes.append(types.DeleteFile(uri=src, annotation_id=archive))
        else:
            changes.append(
                types.RenameFile(
                    old_uri=src,
                    new_uri=dst,
                    options=types.RenameFileOptions(overwrite=False, ignore_if_exists=False),
                    annotation_id=archive,
                )
            )
    return types.WorkspaceEdit(document_changes=changes, change_annotations=review_notes(plan) if note else None)


# -- planning with progress -------------------------------------------------------------------
async def make_plan(
    ls: MemsearchServer,
    root: Root,
    older_than_days: int | None,
    files: list[str] | None,
    title: str = "Compacting memory",
) -> CompactionPlan:
    """Plan off the event loop (LLM calls are slow) with work-done progress.

    When the editor applies the edit, its open buffers are the truth; when the server applies the
    plan on disk, the files are (a log is moved only if it still holds what was summarised).
    """
    texts = {}
    for uri, document in list(ls.workspace.text_documents.items()) if by_edit(ls) else []:
        found = ls.locate(uri)
        if found and found[0] is root and compactable(root.memory, found[1]):
            texts[found[1]] = document.source
    token = await ls.progress_begin(title)
    loop = asyncio.get_running_loop()

    def progress(done: int, total: int, message: str) -> None:
        if token is not None:
            value = types.WorkDoneProgressReport(message=message, percentage=int(100 * done / total) if total else 100)
            loop.call_soon_threadsafe(ls.work_done_progress.report, token, value)

    try:
        return await ls.read(
            lambda: plan_compaction(
                root.memory, older_than_days=older_than_days, files=files, texts=texts, progress=progress
            )
        )
    except Exception as exc:
        ls.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Error, message=f"memsearch: compaction failed: {exc}")
        )
        raise
    finally:
        if token is not None:
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))


# -- code actions -----------------------------------------------------------------------------
def offers(ls: MemsearchServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    if not wanted(params.context.only):
        return None
    found = ls.locate_memory(params.text_document.uri)
    if found is None:
        return None
    root, source = found
    days = root.memory.config.compact.older_than_days
    count = len(old_logs(root.memory))
    edits = by_edit(ls) and resolves_edits(ls)
    actions: list[types.CodeAction] = []

    def action(title: str, args: dict[str, Any]) -> types.CodeAction:
        if edits:  # the edit is computed in codeAction/resolve
            return types.CodeAction(title=title, kind=COMPACT_KIND, data={"root": str(root.path), **args})
        return types.CodeAction(
            title=title, kind=COMPACT_KIND, command=types.Command(title=title, command=COMMAND, arguments=[args])
        )

    older = action(f"Compact logs older than {days} days ({count} logs)", {"olderThanDays": days})
    if count:
        actions.append(older)
    elif shows_disabled(ls):
        older.data, older.command = None, None
        older.disabled = types.CodeActionDisabled(reason=f"no daily logs older than {days} days")
        actions.append(older)
    if compactable(root.memory, source):
        actions.append(action("Compact this log", {"files": [source]}))
    return actions


def _root_named(ls: MemsearchServer, name: Any) -> Root:
    root = ls.roots.get(Path(str(name))) if name else None
    if root is None:
        raise CompactCommandError(f"no workspace folder {name!r} is open")
    return root


async def resolve(ls: MemsearchServer, action: types.CodeAction) -> types.CodeAction:
    data = action.data if isinstance(action.data, dict) else {}
    if action.edit is not None or not data:
        return action
    root = _root_named(ls, data.get("root"))
    files = data.get("files") or None
    plan = await make_plan(ls, root, data.get("olderThanDays") if files is None else None, files)
    action.edit = plan_edit(ls, root.path, plan)
    action.command = types.Command(title="Index the compacted memory", command=REINDEX)  # runs after the edit
    if plan.empty:
        ls.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Info, message=f"memsearch: {plan.describe()}")
        )
    return action


# -- the command ------------------------------------------------------------------------------
def _files(ls: MemsearchServer, value: Any) -> tuple[Root | None, list[str] | None]:
    if value is None:
        return None, None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CompactCommandError("memsearch.compact: files must be a list of paths or URIs")
    root: Root | None = None
    paths = []
    for item in value:
        uri = item if item.startswith("file:") else (from_fs_path(item) if Path(item).is_absolute() else None)
        if uri is None:
            paths.append(item)  # relative to the workspace folder
            continue
        found = ls.locate(uri)
        if found is None:
            raise CompactCommandError(f"memsearch.compact: {item} is outside every workspace folder")
        root = found[0]
        paths.append(found[1])
    return root, paths


async def compact_command(ls: MemsearchServer, args: Sequence[Any]) -> dict[str, Any]:
    """Plan; with `dryRun`, return the plan; else apply it: through an edit the user reviews, or on disk.

    `planId` (from a dry run the user reviewed) makes the server refuse a plan that is no longer the same.
    """
    options = args[0] if args and isinstance(args[0], dict) else {}
    days = options.get("olderThanDays")
    if days is not None and (not isinstance(days, int) or isinstance(days, bool) or days < 0):
        raise CompactCommandError("memsearch.compact: olderThanDays must be a whole number of days, 0 or more")
    root, files = _files(ls, options.get("files"))
    if options.get("root"):
        root = _root_named(ls, options["root"])
    if root is None:
        if not ls.roots:
            raise CompactCommandError("no workspace folder is open")
        root = next(iter(ls.roots.values()))
    reviewed = options.get("planId")
    plan = REVIEWED.pop((root.path, reviewed), None) if reviewed else None  # the very plan shown (no new LLM call)
    try:
        plan = plan or await make_plan(ls, root, days, files)
    except (ValueError, PathError) as exc:
        raise CompactCommandError(str(exc)) from exc
    result = dict(plan.to_dict(), applied=False)
    if options.get("dryRun") or plan.empty:
        remember(root, plan)
        return result
    if reviewed is not None and reviewed != plan.plan_id:
        raise CompactCommandError(
            "memsearch.compact: the memory changed since the plan was reviewed; review the new plan"
        )
    if by_edit(ls):
        response = await ls.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(edit=plan_edit(ls, root.path, plan), label="Compact memory")
        )
        if not response.applied:
            result["failureReason"] = response.failure_reason or "the editor did not apply the edit"
            return result
        await ls.reconcile(root, title="Indexing the compacted memory")
        return dict(result, applied=True, appliedBy="editor")
    applied = await apply_on_disk(ls, root, plan)
    archive = root.memory.config.compact.archive_dir
    left = f"; left {', '.join(applied.left)} (changed meanwhile)" if applied.left else ""
    ls.window_show_message(
        types.ShowMessageParams(
            type=types.MessageType.Info,
            message=(
                f"memsearch: {applied.headline(applied=not applied.empty)} on disk; "
                f"the originals are in {archive}/{left}"
            ),
        )
    )
    return dict(applied.to_dict(), applied=not applied.empty, appliedBy="server")


REVIEWED: dict[tuple[Path, str], CompactionPlan] = {}  # dry-run plans by (root, plan_id), until applied
KEEP_REVIEWED = 8


def remember(root: Root, plan: CompactionPlan) -> None:
    """Keep a dry-run plan so that applying its planId applies exactly it (its logs are re-checked then)."""
    if plan.empty:
        return
    REVIEWED[(root.path, plan.plan_id)] = plan
    while len(REVIEWED) > KEEP_REVIEWED:
        del REVIEWED[next(iter(REVIEWED))]


async def apply_on_disk(ls: MemsearchServer, root: Root, plan: CompactionPlan) -> CompactionPlan:
    """The server writes the summaries and moves the logs itself (one writer), then re-indexes."""
    done: list[CompactionPlan] = []

    def apply(memory: MemoryApi) -> IndexStats:
        done.append(apply_checked(memory, plan))
        return memory.index()

    try:
        await ls.write(root, apply)
    except (ValueError, PathError) as exc:
        raise CompactCommandError(str(exc)) from exc
    return done[-1] if done else plan


def register(server: MemsearchServer) -> None:
    options = types.CodeActionOptions(code_action_kinds=[COMPACT_KIND], resolve_provider=True)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, options)
    def code_action(ls: MemsearchServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        return offers(ls, params)

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: MemsearchServer, params: types.CodeAction) -> types.CodeAction:
        return await resolve(ls, params)

    @server.command(COMMAND)
    async def compact(ls: MemsearchServer, *args: Any) -> dict[str, Any]:
        return await compact_command(ls, args)
