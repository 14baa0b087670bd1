"""The review of a compaction plan in an editor (change annotations, code action titles) counts in words."""

from __future__ import annotations

from memsearch_lsp.core.compact.types import ArchiveMove, CompactionPlan, MemoryEdit, Promotion
from memsearch_lsp.lsp.features.edits import ARCHIVE, PROMOTED, review_notes


def test_one_log_and_one_fact_are_said_in_the_singular() -> None:
    fact = Promotion("Decisions", "We use Kafka.", "memory/2026-01-05.md", 3, "decision")
    plan = CompactionPlan(
        archive=(ArchiveMove("memory/2026-01-05.md", "memory/archive/2026-01-05.md"),),
        memory_edit=MemoryEdit("memory/MEMORY.md", "insert", "", (), (fact,)),
    )
    notes = review_notes(plan)
    assert notes[ARCHIVE].description == "1 log, still searchable there"
    assert notes[PROMOTED].label == "Add 1 lasting fact to memory/MEMORY.md"
