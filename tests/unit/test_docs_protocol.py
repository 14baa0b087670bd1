"""docs/protocol.md lists every setting the server reads, with its type and default, exactly as config/ defines
them: the block between its `settings` markers is what `settings_reference()` below writes (run this module with
`python -m tests.unit.test_docs_protocol` to rewrite it after a change to the settings). Its `fields` blocks list
exactly the fields of what the server sends: a search hit, `memsearch/indexed`, and the answers of
`memsearch.expand`, `memsearch.reindex` and `memsearch.compact` (built here by the server's own code)."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from dataclasses import MISSING, fields
from pathlib import Path
from types import SimpleNamespace
from typing import Any, get_origin, get_type_hints

import pytest
from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from memsearch_lsp.config import SECTIONS, choices, editor_key, settings_keys
from memsearch_lsp.core.compact.types import CompactionPlan
from memsearch_lsp.core.index import IndexStats
from memsearch_lsp.core.search.hybrid import Expanded, Hit
from memsearch_lsp.lsp import convert
from memsearch_lsp.lsp.features import commands
from memsearch_lsp.lsp.features.actions import answer
from tests.helpers import ROOT

DOC = ROOT / "docs" / "protocol.md"
START, END = "<!-- settings: written by tests/unit/test_docs_protocol.py -->", "<!-- /settings -->"


def settings_reference() -> str:
    """One line per setting: its editor key, type (or its choices) and default."""
    lines = []
    for section, cls in SECTIONS.items():
        hints = get_type_hints(cls)
        for f in fields(cls):
            kind = hints[f.name]
            options = choices(section, f.name)
            if options:
                typ = " | ".join(json.dumps(o) for o in options)
            elif get_origin(kind) is tuple:
                typ = "string[]"
            else:
                typ = {bool: "boolean", int: "integer", float: "number", str: "string"}.get(kind, str(kind))
            default = f.default if f.default is not MISSING else f.default_factory()  # type: ignore[misc]
            key = editor_key(f"{section}.{f.name}") if section != "lsp" else editor_key(f.name)
            shown = json.dumps(list(default) if isinstance(default, tuple) else default)
            lines.append(f"- `{key}`: {typ}, default `{shown}`")
    return "\n".join(lines)


def test_the_protocol_document_lists_every_setting_as_config_defines_it() -> None:
    text = DOC.read_text()
    assert START in text and END in text
    written = text.split(START, 1)[1].split(END, 1)[0].strip()
    assert written == settings_reference(), "run `python -m tests.unit.test_docs_protocol` to rewrite docs/protocol.md"
    assert len(written.splitlines()) == len(settings_keys())


def documented_fields(name: str) -> tuple[set[str], set[str]]:
    """The fields a `<!-- fields: name -->` block of docs/protocol.md lists: (always sent, sent only at times: `x`?)."""
    text = DOC.read_text()
    start = f"<!-- fields: {name} -->"
    assert start in text, f"docs/protocol.md has no {start} block"
    block = text.split(start, 1)[1].split("<!-- /fields -->", 1)[0]
    always: set[str] = set()
    sometimes: set[str] = set()
    for line in block.splitlines():
        listed = re.match(r"\s*- ((?:`\w+`\??(?:, )?)+):", line)
        for field, optional in re.findall(r"`(\w+)`(\??)", listed.group(1) if listed else ""):
            (sometimes if optional else always).add(field)
    return always, sometimes


RANGE = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=1, character=3))


def test_a_documented_hit_has_the_fields_the_server_sends() -> None:
    hit = Hit(id="0" * 16, source="memory/a.md", heading="A", start_line=1, end_line=2, rank_score=0.5, snippet="x")
    assert documented_fields("hit") == (set(convert.hit_json(Path("/w"), hit, RANGE)), set())


def test_the_indexed_notification_has_the_documented_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    from memsearch_lsp.lsp.server import MemsearchServer, Root

    server = MemsearchServer()
    sent: list[tuple[str, Any]] = []
    monkeypatch.setattr(server.protocol, "notify", lambda method, params=None: sent.append((method, params)))
    root = Root(Path("/w"), SimpleNamespace(memory=SimpleNamespace(remote=False), halted=False))  # type: ignore[arg-type]
    server.roots[root.path] = root  # (a removed folder's pass is announced no more)
    try:
        asyncio.run(server.write(root, lambda memory: IndexStats()))
    finally:
        server.writer.shutdown(wait=True)
    assert [method for method, _ in sent] == ["memsearch/indexed"]
    assert documented_fields("indexed") == (set(sent[0][1]), set())


class _Commands:
    """A server as `commands.register` sees it: it keeps each command's handler."""

    def __init__(self) -> None:
        self.handlers: dict[str, Any] = {}

    def command(self, name: str) -> Any:
        return lambda handler: self.handlers.setdefault(name, handler)


def _command(name: str) -> Any:
    server = _Commands()
    commands.register(server)  # type: ignore[arg-type]
    return server.handlers[name]


def test_the_expand_and_reindex_answers_have_the_documented_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    chunk = Expanded(id="0" * 16, source="memory/a.md", heading="A", heading_path="A", start_line=1, end_line=2,
                     content="# A\nx")  # fmt: skip
    root = SimpleNamespace(path=Path("/w"))

    async def find_chunk(ls: Any, chunk_id: str, near: Any = None) -> Any:
        return root, chunk

    async def reconcile(root: Any, force: bool = False, title: str = "") -> IndexStats:
        return IndexStats()

    monkeypatch.setattr(commands, "find_chunk", find_chunk)
    ls = SimpleNamespace(workspace=SimpleNamespace(position_codec=PositionCodec()), roots={root.path: root},
                         reconcile=reconcile)  # fmt: skip
    expanded = asyncio.run(_command("memsearch.expand")(ls, chunk.id))
    assert documented_fields("expand") == (set(expanded), set())
    stats = asyncio.run(_command("memsearch.reindex")(ls))
    assert documented_fields("reindex") == (set(stats), set())


def test_the_compact_answer_has_the_documented_fields() -> None:
    empty = set(answer(CompactionPlan(), applied=False))
    full = set(answer(CompactionPlan(left=("a",), skipped=(("a", "b"),), note="n", stats={"logs": 1}), applied=False))
    # memsearch.compact adds `appliedBy` once applied, `failureReason` when the editor refused
    assert documented_fields("compact") == (empty, (full - empty) | {"appliedBy", "failureReason"})


if __name__ == "__main__":
    text = DOC.read_text()
    head, rest = text.split(START, 1)
    tail = rest.split(END, 1)[1]
    DOC.write_text(f"{head}{START}\n{settings_reference()}\n{END}{tail}")
    sys.exit(0)
