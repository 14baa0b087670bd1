"""The owner protocol's number changes with what travels over the socket: its operations, their parameters, the
search settings a search carries, and the payloads' shapes (core/process/protocol.py PROTOCOL). When one of them
changes, this test fails until PROTOCOL is bumped and the new fingerprint is recorded here; the Claude Code hooks,
which talk to the socket themselves, say the same number."""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import fields

from memsearch_lsp.config.sections import SearchConfig
from memsearch_lsp.core.api import Forgotten, Remembered, StatusData
from memsearch_lsp.core.chunks import Chunk
from memsearch_lsp.core.index import IndexStats
from memsearch_lsp.core.process.protocol import OPERATIONS, PROTOCOL, declared
from memsearch_lsp.core.search.hybrid import Expanded, Hit
from tests.helpers import ROOT

#: PROTOCOL -> the fingerprint of the declarations it was bumped for (add a line with each bump)
FINGERPRINTS = {1: "35c16ccd0022746c", 2: "49103557bbe1a120"}


def fingerprint() -> str:
    lines = []
    for op in OPERATIONS:
        signature = declared(op)[0]
        arguments = ", ".join(f"{name}: {p.annotation}" for name, p in signature.parameters.items())
        lines.append(f"{op}({arguments}) -> {signature.return_annotation}")
    for kind in (Chunk, Hit, Expanded, IndexStats, Remembered, Forgotten, SearchConfig):
        lines.append(f"{kind.__name__}: " + ", ".join(f"{f.name}: {f.type}" for f in fields(kind)))
    lines.append("status: " + ", ".join(StatusData.__annotations__))
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]


def test_the_protocol_is_bumped_with_what_travels_over_the_socket() -> None:
    assert FINGERPRINTS.get(PROTOCOL) == fingerprint(), (
        f"the owner protocol changed (fingerprint {fingerprint()}): bump PROTOCOL in core/process/protocol.py (and "
        "OWNER_PROTOCOL in integrations/claude-code/scripts/memsearch_hook.py), then record it in FINGERPRINTS here"
    )


def test_the_hooks_say_the_same_protocol() -> None:
    spec = importlib.util.spec_from_file_location(
        "memsearch_hook", ROOT / "integrations" / "claude-code" / "scripts" / "memsearch_hook.py"
    )
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    assert hook.OWNER_PROTOCOL == PROTOCOL
