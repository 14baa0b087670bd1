"""Writers of the memory files racing (audit Y2), on a real Milvus Lite with the fake embedder: a compaction and
a long-term fact remembered meanwhile, forgets sent together; each writer waits for the one writing."""

from __future__ import annotations

import datetime as dt
import threading
import time
from pathlib import Path

from memsearch_lsp.core.onboard import init_workspace


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
