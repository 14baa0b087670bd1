"""Markdown under git (audit G): a log or MEMORY.md mid-merge is never compacted nor written by compaction, and a line
over `---` or over a conflict's `=======` (a setext heading to CommonMark) is a note that search and `recent` find."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from memsearch_lsp.core.chunks import merge_conflict
from memsearch_lsp.core.compact.plan import CompactError, plan_compaction
from memsearch_lsp.core.recall import recent_notes
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
NOTES = """# 2026-11-06

## 09:00
Standup notes: the team agreed on trunk-based development.

<<<<<<< HEAD
## 10:05
Bob: the payment gateway is Adyen for EU customers.
=======
## 10:00
Chose Postgres for the billing ledger.
---

## 11:00
The quokka cache lives in eu-west-1.
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


def test_a_line_over_a_rule_or_a_conflict_separator_is_found_by_search_and_recent(tmp_path: Path, make_memory) -> None:
    """CommonMark reads `text` over `---` (or over git's `=======`) as a setext heading: the note was "a heading
    alone", dropped by search and `recent`; its text is what a person wrote. An ATX heading alone still says nothing."""
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "2026-11-06.md").write_text(NOTES, encoding="utf-8")
    memory = make_memory(tmp_path)
    memory.index()
    for query, line in (("billing ledger Postgres", "Chose Postgres"), ("payment gateway Adyen", "Bob: the payment")):
        hits = memory.search(query, top_k=3, min_score=0.0)
        assert hits and hits[0].snippet.startswith(line), (query, [h.snippet for h in hits])
        assert "---" not in hits[0].snippet and "===" not in hits[0].snippet
    notes = [n.content for n in recent_notes(memory, days=1, today=dt.date(2026, 11, 6))]
    assert any(n.startswith("Chose Postgres") for n in notes) and any(n.startswith("Bob: the payment") for n in notes)
    assert not any(n in ("## 10:00", "## 10:05", "# 2026-11-06") for n in notes), notes  # (ATX headings alone)


def test_notes_beside_a_merge_conflict_keep_out_of_it(tmp_path: Path, make_memory) -> None:
    """`remember --long-term` into a MEMORY.md mid-merge went into one side of the conflict (`git checkout --theirs`
    dropped it); `forget` of a note of a conflict took git's `>>>>>>>` line with it. A fact is refused (nothing
    written) and a day's note goes to the day's next file; a note with a conflict's line is refused, one outside
    it is forgotten."""
    from memsearch_lsp.core.notes import NoteError

    sides = "<<<<<<< HEAD\n- chose Kafka.\n=======\n- chose RabbitMQ.\n>>>>>>> other\n"
    write_lasting_logs(tmp_path, LASTING_MEMORY.replace("- 2027-01-04: chose Kafka.\n", sides))
    (tmp_path / "memory" / "2026-11-06.md").write_text(MID_MERGE.replace("2026-02-08", "2026-11-06"), encoding="utf-8")
    memory = make_memory(tmp_path)
    memory.index()
    before = snapshot(tmp_path)
    with pytest.raises(NoteError, match=f"MEMORY.md cannot take the note \\({CONFLICTED}\\); nothing was written"):
        memory.remember("We deploy on Tuesdays.", long_term=True)
    assert snapshot(tmp_path) == before
    note = memory.remember("The broker vote is on Friday.", now=dt.datetime(2026, 11, 6, 16, 0))
    assert (
        note.source == "memory/2026-11-06.2.md"
        and snapshot(tmp_path)["memory/2026-11-06.md"] == before["memory/2026-11-06.md"]
    )
    hits = memory.search("message broker Kafka Alice", top_k=5, min_score=0.0)
    inside = [h for h in hits if h.source == "memory/2026-11-06.md" and h.start_line > 6]  # (## 15:00's)
    outside = memory.search("flaky integration tests checkout service", top_k=1, min_score=0.0)[0]
    assert inside and outside.markdown_heading.startswith("09:00"), (inside, outside)
    with pytest.raises(NoteError, match=f"memory/2026-11-06.md: the note is part of an {CONFLICTED}"):
        memory.forget(inside[0].id)
    assert snapshot(tmp_path)["memory/2026-11-06.md"] == before["memory/2026-11-06.md"]
    memory.forget(outside.id)  # (its section ends before the conflict's first line)
    after = snapshot(tmp_path)["memory/2026-11-06.md"].decode("utf-8")
    assert MID_MERGE.split("## 15:00\n")[1] in after and "flaky integration tests" not in after


def test_a_note_that_quotes_a_conflict_never_locks_its_own_file(workspace: Path, make_memory) -> None:
    """(review R24) a note about resolving a conflict, with git's markers in a code block or as plain lines, made its
    file "mid-merge": the day's later notes went to `.2.md`, the note could not be forgotten, and MEMORY.md took no
    fact again. A note's own marker lines are indented by a space; a real conflict in a code block still counts."""
    quoted = "We resolved the conflict in app.py:\n\n```\n<<<<<<< HEAD\nx = 1\n=======\nx = 2\n>>>>>>> feature\n```"
    plain = "Merge notes:\n<<<<<<< HEAD\nkeep a\n=======\nkeep b\n>>>>>>> x\nKept b."
    memory = make_memory(workspace)
    first = memory.remember(quoted, heading="How I resolved the conflict", now=dt.datetime(2026, 11, 6, 10, 0))
    second = memory.remember(plain, now=dt.datetime(2026, 11, 6, 10, 5))
    third = memory.remember("Second note after that", now=dt.datetime(2026, 11, 6, 10, 6))
    assert {first.source, second.source, third.source} == {"memory/2026-11-06.md"}
    text = (workspace / "memory" / "2026-11-06.md").read_text()
    assert "```\n <<<<<<< HEAD\nx = 1\n =======\nx = 2\n >>>>>>> feature\n```" in text and not merge_conflict(text)
    assert "keep b\n >>>>>>> x\nKept b." in text  # (its own `=======` under a line: a setext heading, made bold)
    memory.remember(plain, long_term=True)
    memory.remember("Use Postgres 16", long_term=True)  # (MEMORY.md still takes facts)
    assert "Use Postgres 16" in (workspace / "memory" / "MEMORY.md").read_text()
    assert memory.forget(first.to_dict()["id"]).removed
    assert "x = 1" not in (workspace / "memory" / "2026-11-06.md").read_text()
    # git's own conflict inside a code block (two branches changed one command) is a conflict: the note goes on
    log = workspace / "memory" / "2026-11-07.md"
    log.write_text("# 2026-11-07\n\n## 09:00\n```bash\n<<<<<<< HEAD\nmake fast\n=======\nmake slow\n>>>>>>> b\n```\n")
    assert memory.remember("Release freeze starts Friday", now=dt.datetime(2026, 11, 7, 10, 0)).source.endswith(".2.md")
