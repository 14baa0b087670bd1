"""scripts/apply_moves.py rewrites code written against the old core layout, and only that (idempotent)."""

from __future__ import annotations

import importlib.util

from tests.helpers import ROOT

_spec = importlib.util.spec_from_file_location("apply_moves", ROOT / "scripts" / "apply_moves.py")
assert _spec and _spec.loader
apply_moves = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(apply_moves)
MOVES = apply_moves.read_table(ROOT / "docs" / "moves-issue-30.txt")

OLD = """from memsearch_lsp.core import clock, compact, lite
from memsearch_lsp.core.embed_openai import OpenAIEmbedder
from memsearch_lsp.core.embed import create_embedder
import memsearch_lsp.core.mirror as mirror_module
monkeypatch.setattr("memsearch_lsp.core.compact.create_summarizer", fake)
"""
NEW = """from memsearch_lsp.core import clock
from memsearch_lsp.core.compact import plan as compact
from memsearch_lsp.core.store import lite
from memsearch_lsp.core.embedding.openai import OpenAIEmbedder
from memsearch_lsp.core.embedding.onnx import create_embedder
import memsearch_lsp.core.store.mirror as mirror_module
monkeypatch.setattr("memsearch_lsp.core.compact.plan.create_summarizer", fake)
"""
SPLIT_OFF = """from memsearch_lsp.core.store.schema import sparse_arrays
from memsearch_lsp.core.compact.types import CompactionPlan
"""


def test_old_imports_and_dotted_names_are_rewritten_once() -> None:
    assert apply_moves.rewrite(OLD, MOVES) == NEW
    assert apply_moves.rewrite(NEW, MOVES) == NEW  # the new layout is left alone
    assert apply_moves.rewrite(SPLIT_OFF, MOVES) == SPLIT_OFF  # and so are modules split out of an old one
    assert apply_moves.rewrite(SPLIT_OFF, MOVES, prose=True) == SPLIT_OFF


def test_every_new_module_of_the_table_exists() -> None:
    for old, new in MOVES.items():
        path = ROOT / (new.replace(".", "/") + ".py")
        assert path.is_file(), f"{old} -> {new}: no {path.relative_to(ROOT)}"
        assert not (ROOT / (old.replace(".", "/") + ".py")).is_file(), f"{old} is still there"
