"""The ids `remember` answered: kept in the private index folder (id -> the note's source and first line), so an id
still finds its note after its section changed (a second fact joins its MEMORY.md section) and expands to all of it
(a note longer than a chunk), and goes when the note does (`forget`, deleted by hand); so are the ids search gave the
chunks a `forget` moved to other lines."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from memsearch_lsp.core.chunks import Chunk
from memsearch_lsp.core.files import folder_fd, read_file, read_text, write_file
from memsearch_lsp.core.store import Store
from memsearch_lsp.core.store.schema import Row, cut_short

KEPT_IDS = "remembered.json"  # in the private index folder: id -> (source, the note's first line[, its heading])
MAX_KEPT_IDS = 500
MAX_MOVED_IDS = 100  # the old ids a forget keeps, of the first chunks it moved (the rest of the 500 are remember's)


def _kept(fd: int) -> dict[str, list[str]]:
    """The ids kept in the index folder `fd` ({} when there are none or their file is damaged: a cache)."""
    try:
        kept = json.loads(read_file(fd, KEPT_IDS, 1 << 20))
    except (OSError, ValueError):
        return {}
    if not isinstance(kept, dict):
        return {}
    return {
        str(k): v
        for k, v in kept.items()
        if isinstance(v, list) and len(v) in (2, 3) and all(isinstance(x, str) for x in v)
    }


def _update_kept(folder: Path, change: Callable[[dict[str, list[str]]], dict[str, list[str]]]) -> None:
    with contextlib.suppress(OSError, ValueError), folder_fd(folder) as fd:
        kept = _kept(fd)
        changed = dict(list(change(dict(kept)).items())[-MAX_KEPT_IDS:])
        if changed != kept:
            write_file(fd, KEPT_IDS, json.dumps(changed).encode())


def keep_id(folder: Path, chunk_id: str, source: str, body: str, made: str = "") -> None:
    """Remember that `remember` answered `chunk_id` for the note `body` of `source`: the id of a note whose section
    changes later (a second fact joins its MEMORY.md section) still finds it (`kept_note`); `made`: the heading line
    `remember` wrote for it (kept when the same note is remembered again), which `forget` may take out with it."""
    line = next((s.strip() for s in body.splitlines() if s.strip()), "")[:200]

    def change(kept: dict[str, list[str]]) -> dict[str, list[str]]:
        was = kept.pop(chunk_id, [])
        heading = made.strip() or (was[2] if was[:2] == [source, line] and len(was) == 3 else "")
        return {**kept, chunk_id: [source, line, heading] if heading else [source, line]}

    _update_kept(folder, change)


def heading_made(folder: Path, source: str, section: list[str]) -> bool:
    """`remember` wrote the heading of `section` (its lines, the heading first) of `source` for a note still under
    it; False when nothing says so (a heading `init` or a person wrote, ids kept before this was recorded)."""
    try:
        with folder_fd(folder) as fd:
            kept = list(_kept(fd).values())
    except OSError:
        return False
    body = "\n".join(section[1:])
    return any(len(v) == 3 and v[0] == source and v[2] == section[0].strip() and v[1] and v[1] in body for v in kept)


def forget_ids(folder: Path, source: str, removed: str, section: list[str] | None = None) -> None:
    """A note removed from `source` (`removed`: its text) is no longer found by the ids kept for it; a heading
    `remember` made for it that stays (`section`: the lines of the section it was taken from, the heading first)
    passes to the notes kept under it, so that `forget` of the last of them takes it out too (`heading_made`)."""
    title = section[0].strip() if section else ""

    def change(kept: dict[str, list[str]]) -> dict[str, list[str]]:
        gone = {k for k, v in kept.items() if v[0] == source and v[1] in removed}
        made = bool(title) and any(kept[k][2:] == [title] for k in gone)
        left = "\n".join((section or [])[1:]).replace(removed, "") if made else ""
        return {
            k: [*v[:2], title] if made and v[0] == source and v[1] and v[1] in left else v
            for k, v in kept.items()
            if k not in gone
        }

    _update_kept(folder, change)


def keep_moved(folder: Path, before: Sequence[Chunk], after: Sequence[Chunk]) -> None:
    """The chunks a `forget` moved to other lines (`before`: those below the note, as they were; `after`: the file's
    chunks after it; the same text on other lines has a new id) are still found by the ids search gave them (an agent
    forgets its hits one after the other): each old id is kept as a note's, by a line of its text that no other chunk
    of the file has."""
    now, texts = {c.id for c in after}, [c.content for c in after]
    moved: dict[str, list[str]] = {}
    for chunk in (c for c in before if c.id not in now and c.content in texts):
        lines = [s.strip() for s in chunk.content.splitlines() if s.strip()]
        line = next((s for s in lines if not s.startswith("#")), lines[0] if lines else "")[:200]
        if line and sum(line in t for t in texts) == 1 and len(moved) < MAX_MOVED_IDS:
            moved[chunk.id] = [chunk.source, line]
    if moved:
        _update_kept(folder, lambda kept: {**kept, **{k: v for k, v in moved.items() if k not in kept}})


def prune_ids(folder: Path, path_of: Callable[[str], Path]) -> None:
    """Drop the ids kept for notes that are no longer in their file (deleted by hand, the file gone): the first line
    a kept id remembers is not kept longer than its note."""
    if not (folder / KEPT_IDS).is_file():
        return

    def text_of(source: str) -> str:
        try:
            return read_text(path_of(source))[0]
        except (OSError, ValueError):
            return ""

    def change(kept: dict[str, list[str]]) -> dict[str, list[str]]:
        texts = {v[0]: text_of(v[0]) for v in kept.values()}
        return {k: v for k, v in kept.items() if v[1] and v[1] in texts[v[0]]}

    _update_kept(folder, change)


def kept_note(folder: Path, key: str) -> tuple[str, str] | None:
    """(source, first line) of the note `remember` answered the id (or the one id starting with) `key` for."""
    try:
        with folder_fd(folder) as fd:
            found = [v for k, v in _kept(fd).items() if k.startswith(key)]
    except OSError:
        return None
    return (found[0][0], found[0][1]) if len(found) == 1 and found[0][1] else None


def remembered_row(store: Store, index_dir: Path, key: str, row: Row | None) -> Row | None:
    """The chunk an id names (`row`, found by it); for an id `remember` answered (`key`: the id or the one id it
    starts), the note whole: its chunk (found by the note's first line once its section changed) with the chunks that
    continue it (a note longer than a chunk is cut at its paragraphs under the same heading)."""
    kept = kept_note(index_dir, key)
    if kept is None:
        return row
    rows = sorted(store.rows(sorted(store.ids_of(row.source if row else kept[0]))), key=lambda r: r.start_line)
    first = row or next((r for r in rows if kept[1] in r.content), None)
    if first is None:
        return None
    content, end = first.content, first.end_line
    for later in (r for r in rows if r.start_line > first.end_line):
        joined = content + "\n" * (later.start_line - end) + later.content  # (the blank lines between, as in the file)
        same = (later.heading, later.level) == (first.heading, first.level) and not later.content.startswith("#")
        if not same or cut_short(joined):  # (as stored: longer is read from its file)
            break
        content, end = joined, later.end_line
    return replace(first, end_line=end, content=content)
