"""The WorkspaceEdit of a compaction plan: summaries written, originals archived, lasting facts added to
MEMORY.md, every change annotated so the editor shows it for review before applying it (one undo)."""

from __future__ import annotations

import re
from pathlib import Path

from lsprotocol import types

from memsearch_lsp.core.compact.plan import CompactionPlan
from memsearch_lsp.core.compact.types import MemoryEdit, plural
from memsearch_lsp.lsp import convert
from memsearch_lsp.lsp.server import MemsearchServer


def previews(ls: MemsearchServer) -> bool:
    """True when the client honours change annotations, so a `needsConfirmation` edit opens its preview."""
    workspace = ls.client_capabilities.workspace
    edit = workspace.workspace_edit if workspace else None
    return bool(edit and edit.change_annotation_support is not None)


# -- the WorkspaceEdit ------------------------------------------------------------------------
def end_position(ls: MemsearchServer, text: str) -> types.Position:
    """Where `text` ends, as LSP counts lines (CRLF, CR and LF each end one: an old Mac file's CR-only lines too)."""
    lines = _LINE_END.split(text)
    return types.Position(line=len(lines) - 1, character=ls.workspace.position_codec.client_num_units(lines[-1]))


_LINE_END = re.compile(r"\r\n|\r|\n")


SUMMARIES, ARCHIVE, PROMOTED = "memsearch.summaries", "memsearch.archive", "memsearch.promoted"
Change = types.TextDocumentEdit | types.CreateFile | types.RenameFile


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
        description=f"{plural(len(plan.archive), 'log')}, still searchable there",
    )
    if plan.memory_edit is not None:  # the lasting facts, each with its section and source
        edit = plan.memory_edit
        notes[PROMOTED] = types.ChangeAnnotation(
            label=f"Add {plural(len(edit.promotions), 'lasting fact')} to {edit.path}",
            needs_confirmation=True,
            description="\n".join(f"## {p.section}: {p.text}" for p in edit.promotions),
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


def disk_text(root: Path, path: str) -> str:
    """A memory file's text as it is on disk, its line ends as they are (an edit moves it byte for byte); ValueError
    naming it when it is not UTF-8 (an edit carries text: the CLI moves such a log as it is)."""
    try:
        return (root / path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path} is not valid UTF-8 (byte {exc.start}): an editor's edit cannot move it byte for byte; "
            "compact it with `memsearch-lsp compact`"
        ) from exc


def _append(ls: MemsearchServer, root: Path, path: str, text: str, note: str | None) -> types.TextDocumentEdit:
    """Insert `text` at the end of a file (its open buffer, else the disk)."""
    uri = convert.uri_of(root, path)
    document = ls.workspace.text_documents.get(uri)
    current = document.source if document else disk_text(root, path)
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
    """Create (or append to) each summary, add the lasting facts to MEMORY.md, then rename each original into the
    archive, under a name nothing holds (a rename takes whatever a writer added since with it: never a copy of the
    text and a delete): one edit, so one undo takes all of it back.

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
    if plan.memory_edit is not None:
        changes.extend(memory_changes(ls, root, plan.memory_edit, PROMOTED if note else None))
    for move in plan.archive:
        src, dst = convert.uri_of(root, move.src), convert.uri_of(root, move.dst)
        changes.append(
            types.RenameFile(
                old_uri=src,
                new_uri=dst,
                options=types.RenameFileOptions(overwrite=False, ignore_if_exists=False),
                annotation_id=archive,
            )
        )
    return types.WorkspaceEdit(document_changes=changes, change_annotations=review_notes(plan) if note else None)


def memory_changes(ls: MemsearchServer, root: Path, edit: MemoryEdit, note: str | None) -> list[Change]:
    """MEMORY.md with the promoted facts: created, or its text (the open buffer the plan read, else the disk)
    with each block inserted where the plan put it (an offset into that text)."""
    uri = convert.uri_of(root, edit.path)
    document = ls.workspace.text_documents.get(uri)
    changes: list[Change] = []
    if edit.action == "create":
        changes.append(
            types.CreateFile(
                uri=uri, options=types.CreateFileOptions(overwrite=False, ignore_if_exists=False), annotation_id=note
            )
        )
        base = ""
    else:
        base = document.source if document else disk_text(root, edit.path)
    edits: list[types.TextEdit | types.AnnotatedTextEdit] = []
    for offset, text in edit.inserts:
        at = _position(ls, base, offset)
        where = types.Range(start=at, end=at)
        edits.append(
            types.TextEdit(range=where, new_text=text)
            if note is None
            else types.AnnotatedTextEdit(range=where, new_text=text, annotation_id=note)
        )
    version = document.version if document and edit.action != "create" else None
    identifier = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
    changes.append(types.TextDocumentEdit(text_document=identifier, edits=edits))
    return changes


def _position(ls: MemsearchServer, text: str, offset: int) -> types.Position:
    """The position of `offset` in `text`, in the client's position encoding."""
    before = text[:offset]
    line_start = before.rfind("\n") + 1
    codec = ls.workspace.position_codec
    return types.Position(line=before.count("\n"), character=codec.client_num_units(before[line_start:]))
