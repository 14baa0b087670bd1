"""Markdown under git (audit G): a log or MEMORY.md mid-merge is never compacted nor written by compaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from memsearch_lsp.core.compact.plan import CompactError, plan_compaction
from tests.helpers import FEB18, LASTING_MEMORY, LASTING_TODAY, snapshot, write_lasting_logs

CONFLICTED = "unresolved merge conflict: resolve it first"
# an old log mid-merge, as git writes it (diff3 style: the common ancestor between `|||||||` and `=======`)
MID_MERGE = """# 2026-02-08

## 09:00
Worked on the flaky integration tests of the checkout service, retried the pipeline, nothing conclusive yet.

## 15:00
<<<<<<< HEAD
Decision: the message broker is RabbitMQ (Bob).
||||||| base
Decision: the message broker is undecided.
=======
Decision: the message broker is Kafka (Alice).
>>>>>>> alice
"""


def test_an_old_log_mid_merge_is_skipped_with_the_reason_and_never_promoted(workspace: Path, make_memory) -> None:
    """`compact` moved a log holding conflict markers to the archive and promoted one side, markers included
    ("the message broker is Kafka (Alice). >>>>>>> alice") to MEMORY.md: it is left in place, said in `skipped`."""
    log = workspace / "memory" / "2026-02-08.md"
    log.write_text(MID_MERGE, encoding="utf-8")
    memory = make_memory(workspace)
    plan = plan_compaction(memory, today=FEB18)
    assert plan.skipped == (("memory/2026-02-08.md", CONFLICTED),)
    assert "memory/2026-02-08.md" not in {m.src for m in plan.archive} and len(plan.archive) == 7
    written = "".join(s.content for s in plan.summaries) + (plan.memory_edit.content if plan.memory_edit else "")
    assert "<<<<<<<" not in written and ">>>>>>>" not in written and "message broker" not in written
    assert plan.to_dict()["skipped"] == [{"source": "memory/2026-02-08.md", "reason": CONFLICTED}]
    with pytest.raises(CompactError, match=f"memory/2026-02-08.md: {CONFLICTED}"):  # named: refused, not passed over
        plan_compaction(memory, files=["memory/2026-02-08.md"], today=FEB18)
    # an editor's buffer mid-merge is what its edit would apply to; a resolved one is compacted
    clean = MID_MERGE.split("<<<<<<< HEAD\n")[0] + "Decision: the message broker is Kafka.\n"
    log.write_text(clean, encoding="utf-8")
    assert plan_compaction(memory, today=FEB18, texts={"memory/2026-02-08.md": MID_MERGE}).skipped == plan.skipped
    plan = plan_compaction(memory, today=FEB18)
    assert not plan.skipped and "memory/2026-02-08.md" in {m.src for m in plan.archive}
    # a lone `=======` (a setext underline) or `<<<<<<<` in a note is no conflict
    log.write_text(clean + "\nTitle\n=======\n\n<<<<<<< quoted\n", encoding="utf-8")
    assert not plan_compaction(memory, today=FEB18).skipped


def test_memory_md_mid_merge_is_never_written_by_compaction(tmp_path: Path, make_memory) -> None:
    """The promoted facts went into MEMORY.md while it held a conflict: the plan is refused, nothing written."""
    sides = "<<<<<<< HEAD\n- chose Kafka.\n=======\n- chose RabbitMQ.\n>>>>>>> other\n"
    write_lasting_logs(tmp_path, LASTING_MEMORY.replace("- 2027-01-04: chose Kafka.\n", sides))
    memory = make_memory(tmp_path)
    before = snapshot(tmp_path)
    with pytest.raises(CompactError, match=f"memory/MEMORY.md: {CONFLICTED}"):
        plan_compaction(memory, today=LASTING_TODAY)
    assert snapshot(tmp_path) == before
    off = make_memory(tmp_path, compact={"promote": False})  # nothing to write into it: the logs are compacted
    assert plan_compaction(off, today=LASTING_TODAY).archive
