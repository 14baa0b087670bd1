"""Writers of the memory files racing (audit Y2), on a real Milvus Lite with the fake embedder: a compaction and
a long-term fact remembered meanwhile, forgets sent together; each writer waits for the one writing."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memsearch_lsp.core.compact import apply as compact_apply
from memsearch_lsp.core.compact.plan import CompactError, apply_plan, plan_compaction
from memsearch_lsp.core.onboard import init_workspace
from tests.helpers import LASTING_TODAY, snapshot, write_lasting_logs

FACT = "The team convention lt0x20q holds for every service."


def test_a_fact_remembered_while_a_compaction_installs_memory_md_is_kept(
    tmp_path: Path, make_memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(audit Y2, 1) `remember --long-term` in the index's owner while `compact` (another process) applied its plan:
    the fact was written after the plan's check of MEMORY.md, then the planned MEMORY.md was renamed over it (compact
    said applied, remember said saved, the fact was gone). Now the remember waits for the compaction, and adds its
    fact to the compacted MEMORY.md."""
    write_lasting_logs(tmp_path)
    memory = make_memory(tmp_path)
    plan = plan_compaction(memory, today=LASTING_TODAY)
    assert plan.memory_edit is not None and plan.promotions
    path, real, saved = tmp_path / "memory/MEMORY.md", compact_apply._install, []
    agent = threading.Thread(target=lambda: saved.append(memory.remember(FACT, "Conventions", long_term=True)))

    def install(source: Path, target: Path) -> None:
        if target.name == "MEMORY.md" and not agent.is_alive() and not saved:  # the agent's fact, right now
            agent.start()
            deadline = time.monotonic() + 3  # (it is written within milliseconds when nothing holds it back)
            while FACT not in path.read_text() and time.monotonic() < deadline:
                time.sleep(0.01)
        real(source, target)

    monkeypatch.setattr(compact_apply, "_install", install)
    apply_plan(memory, plan)
    agent.join(30)
    assert saved and saved[0].source == "memory/MEMORY.md"
    text = path.read_text()
    assert text.count(FACT) == 1, text  # the fact remember answered for is there ...
    assert all(p.text in text for p in plan.promotions)  # ... beside the facts the compaction promoted
    assert not (tmp_path / "memory/2026-10-13.md").exists()  # (the compaction applied)


def test_a_compaction_waits_for_a_writer_in_another_process_and_refuses_a_changed_memory_md(
    tmp_path: Path, make_memory
) -> None:
    """(audit Y2, 1) the lock is one of every process: a compaction applied while another process writes MEMORY.md
    waits for it, then finds MEMORY.md changed and changes nothing."""
    write_lasting_logs(tmp_path)
    memory = make_memory(tmp_path)
    plan = plan_compaction(memory, today=LASTING_TODAY)
    script = (
        "import sys, time\nfrom pathlib import Path\nfrom memsearch_lsp.core.filewrite import memory_writes\n"
        "(folder := Path(sys.argv[1]) / '.memsearch').mkdir(mode=0o700, exist_ok=True)\n"
        "with memory_writes(folder):\n"
        "    print('held', flush=True)\n    time.sleep(1)\n"
        "    with open(Path(sys.argv[1]) / 'memory/MEMORY.md', 'a') as f:\n        f.write('- written meanwhile\\n')\n"
    )
    before = snapshot(tmp_path)
    writer = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None and writer.stdout.readline() == "held\n"
    with pytest.raises(CompactError, match=r"MEMORY\.md changed since the plan was made"):
        apply_plan(memory, plan)
    assert writer.wait(30) == 0
    before["memory/MEMORY.md"] += b"- written meanwhile\n"
    assert snapshot(tmp_path) == before  # the other's write, and nothing compacted


def test_forgets_sent_together_are_each_applied_in_turn(tmp_path: Path, make_memory) -> None:
    """(audit Y2, 2) three forgets at once (an MCP server answers each on a thread of its own): the second and third
    found their note's lines before the first rewrote the log, and failed "changed since it was indexed"."""
    now = dt.datetime(2026, 12, 7, 9, 0)
    init_workspace(tmp_path, today=now.date())
    memory = make_memory(tmp_path)
    ids = [memory.remember(f"Note number {i} about topic zz{i}qq.", now=now).to_dict()["id"] for i in range(4)]
    results: dict[str, object] = {}

    def forget(chunk_id: str) -> None:
        try:
            results[chunk_id] = memory.forget(chunk_id).removed
        except Exception as exc:  # (the test reports it)
            results[chunk_id] = exc

    threads = [threading.Thread(target=forget, args=(i,)) for i in ids[:3]]
    with memory._appending:  # (the forgets all arrive while a write is under way)
        for thread in threads:
            thread.start()
        time.sleep(0.5)
    for thread in threads:
        thread.join(30)
    assert results == {i: True for i in ids[:3]}, results
    text = (tmp_path / "memory" / f"{now.date()}.md").read_text()
    assert [f"zz{i}qq" in text for i in range(4)] == [False, False, False, True], text


def test_a_link_planted_at_the_writes_lock_is_replaced_and_never_followed(tmp_path: Path, make_memory) -> None:
    """(review R2b, 3) A link at `.memsearch/writes.lock` made every remember fail with a raw OSError (ELOOP): the
    lock is the index folder's own file, so the link is replaced, its target untouched, and the note written."""
    (tmp_path / "memory").mkdir()
    memory = make_memory(tmp_path)
    target = tmp_path / "elsewhere.txt"
    target.write_text("not ours\n")
    lock = memory.index_dir / "writes.lock"
    lock.unlink(missing_ok=True)
    lock.symlink_to(target)
    memory.remember("The okapi feeding schedule moved to 9am.")
    assert any("okapi feeding" in log.read_text() for log in tmp_path.rglob("*.md") if log != target)
    assert target.read_text() == "not ours\n" and not lock.is_symlink() and lock.stat().st_mode & 0o777 == 0o600
