"""docs/protocol.md lists every setting the server reads, with its type and default, exactly as config/ defines
them: the block between its `settings` markers is what `settings_reference()` below writes (run this module with
`python -m tests.unit.test_docs_protocol` to rewrite it after a change to the settings)."""

from __future__ import annotations

import json
import sys
from dataclasses import MISSING, fields
from typing import get_origin, get_type_hints

from memsearch_lsp.config import SECTIONS, choices, editor_key, settings_keys
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


if __name__ == "__main__":
    text = DOC.read_text()
    head, rest = text.split(START, 1)
    tail = rest.split(END, 1)[1]
    DOC.write_text(f"{head}{START}\n{settings_reference()}\n{END}{tail}")
    sys.exit(0)
