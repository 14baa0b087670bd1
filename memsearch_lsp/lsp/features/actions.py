"""Compaction over LSP: `source.compact` code actions (edit built in resolve) and the memsearch.compact command."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path

from memsearch_lsp.config import archive_folder
from memsearch_lsp.core.api import MemoryApi
from memsearch_lsp.core.compact.apply import grown_archives, stale_since
from memsearch_lsp.core.compact.plan import CompactionPlan, apply_checked, compactable, old_logs, plan_compaction
from memsearch_lsp.core.compact.types import plural
from memsearch_lsp.core.files import PathError, unsaved
from memsearch_lsp.core.index import IndexStats
from memsearch_lsp.core.notes import LONG_TERM
from memsearch_lsp.core.onboard import NO_MEMORY
from memsearch_lsp.lsp import convert
from memsearch_lsp.lsp.features.edits import plan_edit, previews
from memsearch_lsp.lsp.server import MemsearchServer, Root  # pygls reads command handlers' type hints
from memsearch_lsp.trust import hide_credentials

log = logging.getLogger(__name__)

COMPACT_KIND = "source.compact"  # a custom kind: lsprotocol's CodeActionKind enum cannot hold it
COMMAND = "memsearch.compact"
OPTIONS = ("olderThanDays", "files", "dryRun", "root", "planId")  # its one argument's keys (docs/protocol.md)
REINDEX = "memsearch.reindex"
MAX_DAYS = 365_000  # as the CLI's --older-than: further back would leave the calendar (before the year 1)


class CompactCommandError(ValueError):
    """Bad memsearch.compact arguments or a failed compaction; returned as a JSON-RPC error."""


def older_than_days(value: Any) -> int | None:
    """`olderThanDays` as a client sent it (None: the setting); CompactCommandError (invalid params) unless it
    is a whole number of days from 0 to MAX_DAYS."""
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_DAYS):
        raise CompactCommandError(
            f"memsearch.compact: olderThanDays must be a whole number of days from 0 to {MAX_DAYS}, got {value!r}"
        )
    return value


# -- client capabilities ------------------------------------------------------------------------
def can_edit_files(ls: MemsearchServer) -> bool:
    """True when the client creates and renames files through WorkspaceEdit.documentChanges.

    Neovim 0.11 handles documentChanges without declaring it, so only an explicit `false` counts.
    """
    workspace = ls.client_capabilities.workspace
    edit = workspace.workspace_edit if workspace else None
    if edit is None or edit.document_changes is False or workspace is None or workspace.apply_edit is False:
        return False  # (the last: it cannot take workspace/applyEdit, so the server applies the plan on disk)
    kinds = {str(getattr(k, "value", k)) for k in edit.resource_operations or ()}
    return {"create", "rename"} <= kinds


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


# -- planning with progress -------------------------------------------------------------------
def say(ls: MemsearchServer, kind: types.MessageType, message: str) -> None:
    """A message for the user (window/showMessage), unless the client turned the server's messages off."""
    if ls.config_show_notifications():
        ls.window_show_message(types.ShowMessageParams(type=kind, message=hide_credentials(message)))


def editor_texts(ls: MemsearchServer, root: Root) -> dict[str, str]:
    """The text of each log (and MEMORY.md: the promoted facts go into its buffer) the editor holds open in `root`,
    by source: what the editor's edit applies to."""
    texts = {}
    for uri, document in list(ls.workspace.text_documents.items()):
        found = ls.locate(uri)
        if found and found[0] is root and (compactable(root.memory, found[1]) or found[1] == memory_file(root)):
            texts[found[1]] = document.source
    return texts


async def make_plan(
    ls: MemsearchServer,
    root: Root,
    older_than_days: int | None,
    files: list[str] | None,
    title: str = "Compacting memory",
    say_failure: bool = True,
) -> CompactionPlan:
    """Plan off the event loop (LLM calls are slow) with work-done progress; a failure is said to the user unless
    the caller's request fails with it (`say_failure` False: the client shows that one, once).

    When the editor applies the edit, its open buffers are the truth; when the server applies the
    plan on disk, the files are (a log is moved only if it still holds what was summarised).
    """
    texts = editor_texts(ls, root) if by_edit(ls) else {}
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
        if say_failure:
            say(ls, types.MessageType.Error, f"memsearch: compaction failed: {exc}")
        raise
    finally:
        if token is not None:
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))


# -- code actions -----------------------------------------------------------------------------
def offers(ls: MemsearchServer, params: types.CodeActionParams) -> list[types.CodeAction | types.Command] | None:
    """The compaction actions for a memory file: CodeActions, or their Commands for a client that takes no
    CodeAction literals (LSP: "if the property is not set the request can only return Command literals")."""
    if not wanted(params.context.only):
        return None
    document = ls.client_capabilities.text_document
    literals = bool(document and document.code_action and document.code_action.code_action_literal_support)
    found = ls.locate_memory(params.text_document.uri)
    if found is None:
        return None
    root, source = found
    days = root.config.compact.older_than_days
    edits = literals and by_edit(ls) and resolves_edits(ls)
    actions: list[types.CodeAction] = []

    def action(title: str, args: dict[str, Any]) -> types.CodeAction:
        args = {"root": str(root.path), **args}  # (its folder: the command's default is the first one)
        if edits:  # the edit is computed in codeAction/resolve
            return types.CodeAction(title=title, kind=COMPACT_KIND, data=args)
        return types.CodeAction(
            title=title, kind=COMPACT_KIND, command=types.Command(title=title, command=COMMAND, arguments=[args])
        )

    def offer(title: str, args: dict[str, Any], why_not: str | None) -> None:
        """The action, or (`why_not`) a disabled one saying why, where the client shows those."""
        if why_not is None:
            actions.append(action(title, args))
        elif shows_disabled(ls):
            actions.append(types.CodeAction(title=title, kind=COMPACT_KIND, disabled=types.CodeActionDisabled(why_not)))

    logs = old_logs(root.memory)
    older = f"Compact logs older than {plural(days, 'day')} ({plural(len(logs), 'log')})"
    empty = f"no daily logs older than {days} days" if not logs else _no_gain.get(_state(ls, root, logs))
    offer(older, {"olderThanDays": days}, empty)
    if compactable(root.memory, source):
        offer("Compact this log", {"files": [source]}, _no_gain.get(_state(ls, root, [source])))
    return list(actions) if literals else [a.command for a in actions if a.command is not None]


# the logs of a plan that changed nothing, as they were then -> why: while they stay so, the action is offered disabled
# with that reason (or not at all), never as an empty edit to confirm
_no_gain: dict[tuple[Path, tuple[tuple[str, int, int], ...]], str] = {}


def _state(ls: MemsearchServer, root: Root, logs: Sequence[str]) -> tuple[Path, tuple[tuple[str, int, int], ...]]:
    """The logs as they are now (an open buffer's version, else the file's size and time): a plan of them is the
    same plan while this is."""
    versions = {}
    for uri, document in list(ls.workspace.text_documents.items()):
        found = ls.locate(uri)
        if found and found[0] is root:
            versions[found[1]] = (-1, document.version or 0)
    state = []
    for source in sorted(logs):
        try:
            info = root.memory.path_of(source).stat()
            size, stamp = versions.get(source, (info.st_size, info.st_mtime_ns))
        except OSError:
            size, stamp = -2, 0
        state.append((source, size, stamp))
    return root.path, tuple(state)


def memory_file(root: Root) -> str:
    """MEMORY.md's source in `root` (where compaction proposes its lasting facts)."""
    return root.memory.source_of(root.memory.memory_folder() / LONG_TERM)


def _root_named(ls: MemsearchServer, name: Any) -> Root:
    if not isinstance(name, str):  # (a number: never "no memory here in 7")
        raise CompactCommandError("memsearch.compact: root must be a path or a file: URI")
    root = ls.root_holding(name) if name else None
    if root is None:  # (an open folder with no memory too: it is no root)
        raise CompactCommandError(f"{NO_MEMORY} in {name!r}")
    return root


async def resolve(ls: MemsearchServer, action: types.CodeAction) -> types.CodeAction:
    data = action.data if isinstance(action.data, dict) else {}
    if action.edit is not None or not data:
        return action
    root = _root_named(ls, data.get("root"))
    files = data.get("files") or None
    days = older_than_days(data.get("olderThanDays")) if files is None else None
    plan = await make_plan(ls, root, days, files)
    if plan.empty:  # nothing to apply: no edit to confirm, the reason said once, the action disabled from now on
        if len(_no_gain) > 256:
            _no_gain.clear()
        _no_gain[_state(ls, root, files or old_logs(root.memory, days))] = plan.describe()
        say(ls, types.MessageType.Info, f"memsearch: {plan.describe()}")
        return action
    action.edit = plan_edit(ls, root.path, plan)
    remember(root, plan)  # (the command after the edit checks what it archived)
    after = [{"planId": plan.plan_id}]
    action.command = types.Command(title="Index the compacted memory", command=REINDEX, arguments=after)
    return action


def check_applied(ls: MemsearchServer, plan_id: str) -> None:
    """The command run after a code action's edit: `say_grown` for the plan it applied."""
    for root in ls.roots.values():
        if (plan := REVIEWED.pop((root.path, plan_id), None)) is not None:
            say_grown(ls, root, plan)


def say_grown(ls: MemsearchServer, root: Root, plan: CompactionPlan) -> None:
    """After an editor applied `plan` (it cannot check a log before renaming it): an archived log that holds more
    than its summary read, because a writer changed it during the preview, is said, with where that text now is."""
    if grown := grown_archives(root.memory, plan):
        say(
            ls,
            types.MessageType.Warning,
            f"memsearch: {', '.join(grown)} changed during the compaction's preview: the archive holds it "
            "whole, but its summary does not have what was written meanwhile; copy that into a log to keep it "
            "in live memory (or undo the compaction)",
        )


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
    # ("dryRun", null, true; {"dry_run": true}; a second object: never taken for "apply with the defaults")
    usage = 'no argument or one object of options, e.g. [{"dryRun": true}]'
    options = convert.command_arguments(COMMAND, args, usage, 1, OPTIONS) or {}
    if not isinstance(options.get("dryRun", False), bool):
        raise CompactCommandError(f"memsearch.compact: dryRun must be true or false, got {options['dryRun']!r:.40}")
    days = older_than_days(options.get("olderThanDays"))
    root, files = _files(ls, options.get("files"))
    if options.get("root") not in (None, ""):
        named = _root_named(ls, options["root"])
        if root is not None and root is not named:  # (never a log of another folder under this folder's name)
            raise CompactCommandError(f"memsearch.compact: files are in {root.path}, not in root {named.path}")
        root = named
    if root is None:
        if not ls.roots:
            raise CompactCommandError(f"{NO_MEMORY} in a workspace folder")
        root = next(iter(ls.roots.values()))
    reviewed = options.get("planId")
    if reviewed is not None and not re.fullmatch(r"(?:[0-9a-f]{16})?", str(reviewed)):  # (never searched for)
        raise CompactCommandError(f"memsearch.compact: planId must be a dry run's plan_id, got {reviewed!r:.40}")
    plan = REVIEWED.pop((root.path, reviewed), None) if reviewed else None  # the very plan shown (no new LLM call)
    try:
        plan = plan or await make_plan(ls, root, days, files, say_failure=False)
    except (ValueError, PathError) as exc:
        raise CompactCommandError(str(exc)) from exc
    result = answer(plan, applied=False)
    if options.get("dryRun") or plan.empty:
        remember(root, plan)
        return result
    if reviewed is not None and reviewed != plan.plan_id:
        raise CompactCommandError(
            "memsearch.compact: the memory changed since the plan was reviewed; review the new plan"
        )
    if by_edit(ls):
        # (a reviewed plan is the very one shown: a log written since, in the editor or on disk, refuses it)
        if reviewed is not None and (changed := stale_since(root.memory, plan, editor_texts(ls, root))):
            raise CompactCommandError(f"{', '.join(changed)} changed since the plan was reviewed; nothing compacted")
        response = await ls.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(edit=plan_edit(ls, root.path, plan), label="Compact memory")
        )
        if not response.applied:
            result["failureReason"] = response.failure_reason or "the editor did not apply the edit"
            return result
        say_grown(ls, root, plan)
        await ls.reconcile(root, title="Indexing the compacted memory")
        return dict(result, applied=True, appliedBy="editor")
    if held := unsaved_in(ls, root, plan):  # the server writes the disk: the buffers' next save would undo it
        raise CompactCommandError(f"memsearch.compact: save {', '.join(held)} first (changes not on disk)")
    applied = await apply_on_disk(ls, root, plan, exact=reviewed is not None)  # a reviewed plan, or none
    archive = archive_folder(root.config)
    left = f"; left {', '.join(applied.left)} (changed meanwhile)" if applied.left else ""
    headline = applied.headline(applied=not applied.empty)
    say(ls, types.MessageType.Info, f"memsearch: {headline} on disk; the originals are in {archive}/{left}")
    return answer(applied, applied=not applied.empty, appliedBy="server")


def answer(plan: CompactionPlan, **outcome: Any) -> dict[str, Any]:
    """The plan as JSON (`compact --json`'s keys) with its `planId` for the editor, and what became of it."""
    return dict(plan.to_dict(), planId=plan.plan_id, **outcome)


def unsaved_in(ls: MemsearchServer, root: Root, plan: CompactionPlan) -> list[str]:
    """The files `plan` writes (logs, summaries, MEMORY.md) that an editor holds with changes not on disk."""
    written = set(plan.written)
    held = []
    for uri, document in list(ls.workspace.text_documents.items()):
        found = ls.locate(uri)
        if (
            found
            and found[0] is root
            and found[1] in written
            and unsaved(root.memory.path_of(found[1]), document.source)
        ):
            held.append(found[1])
    return sorted(held)


REVIEWED: dict[tuple[Path, str], CompactionPlan] = {}  # dry-run plans by (root, plan_id), until applied
KEEP_REVIEWED = 8


def remember(root: Root, plan: CompactionPlan) -> None:
    """Keep a dry-run plan so that applying its planId applies exactly it (its logs are re-checked then)."""
    if plan.empty:
        return
    REVIEWED[(root.path, plan.plan_id)] = plan
    while len(REVIEWED) > KEEP_REVIEWED:
        del REVIEWED[next(iter(REVIEWED))]


async def apply_on_disk(ls: MemsearchServer, root: Root, plan: CompactionPlan, exact: bool = False) -> CompactionPlan:
    """The server writes the summaries and moves the logs itself (one writer), then re-indexes; `exact`: that very
    plan or nothing (a log changed since it was reviewed fails the command, naming it)."""
    done: list[CompactionPlan] = []

    def apply(memory: MemoryApi) -> IndexStats:
        done.append(apply_checked(memory, plan, exact))
        return memory.index()

    try:
        await ls.write(root, apply)
    except (ValueError, PathError) as exc:
        raise CompactCommandError(str(exc)) from exc
    return done[-1] if done else plan


def register(server: MemsearchServer) -> None:
    options = types.CodeActionOptions(code_action_kinds=[COMPACT_KIND], resolve_provider=True)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, options)
    async def code_action(
        ls: MemsearchServer, params: types.CodeActionParams
    ) -> list[types.CodeAction | types.Command] | None:
        return offers(ls, params)

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: MemsearchServer, params: types.CodeAction) -> types.CodeAction:
        return await resolve(ls, params)

    @server.command(COMMAND)
    async def compact(ls: MemsearchServer, *args: Any) -> dict[str, Any]:
        return await compact_command(ls, args)
