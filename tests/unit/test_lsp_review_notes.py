"""The review of a compaction plan in an editor (change annotations, code action titles) counts in words."""

from __future__ import annotations

from pathlib import Path

import pytest

from memsearch_lsp.core.compact.types import ArchiveMove, CompactionPlan, MemoryEdit, Promotion
from memsearch_lsp.lsp.features.edits import ARCHIVE, PROMOTED, disk_text, review_notes


def test_one_log_and_one_fact_are_said_in_the_singular() -> None:
    fact = Promotion("Decisions", "We use Kafka.", "memory/2026-01-05.md", 3, "decision")
    plan = CompactionPlan(
        archive=(ArchiveMove("memory/2026-01-05.md", "memory/archive/2026-01-05.md"),),
        memory_edit=MemoryEdit("memory/MEMORY.md", "insert", "", (), (fact,)),
    )
    notes = review_notes(plan)
    assert notes[ARCHIVE].description == "1 log, still searchable there"
    assert notes[PROMOTED].label == "Add 1 lasting fact to memory/MEMORY.md"


def test_a_log_is_read_for_an_edit_with_its_line_ends_and_refused_by_name_when_not_utf8(tmp_path: Path) -> None:
    """An editor's edit merged a recreated log into its archived copy with its CRLF turned to LF, and a log with a
    Latin-1 byte failed the code action with Python's codec message."""
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory/2026-02-05.md").write_bytes(b"# 2026-02-05\r\n\r\nDecision: Go 1.22.\r\n")
    assert disk_text(tmp_path, "memory/2026-02-05.md") == "# 2026-02-05\r\n\r\nDecision: Go 1.22.\r\n"
    (tmp_path / "memory/2026-02-06.md").write_bytes(b"# 2026-02-06\n\ncaf\xe9\n")
    with pytest.raises(ValueError, match=r"memory/2026-02-06\.md is not valid UTF-8 .*memsearch-lsp compact"):
        disk_text(tmp_path, "memory/2026-02-06.md")
