"""The ids search gave still name their chunks after a `forget` moved them, on a real Milvus Lite with the fake
embedder."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from memsearch_lsp.core.onboard import init_workspace

DAY = dt.date(2026, 12, 1)


def test_the_hits_of_one_search_can_each_be_forgotten_in_turn(tmp_path: Path, make_memory) -> None:
    """(audit Y2, 3) an agent searched once, then forgot each hit: the second said "no chunk with id ..." (a chunk's id
    holds its lines, and the forget of the one above moved it up)."""
    init_workspace(tmp_path, today=DAY)
    path = tmp_path / "memory" / f"{DAY}.md"
    sections = "".join(f"## 1{s}:00 item {s}\n\nWrong fact wrongx{s}q about the deploy.\n\n" for s in range(3))
    path.write_text(f"# {DAY}\n\n{sections}## 14:00 kept\n\nThe deploy runs on Tuesdays.\n")
    memory = make_memory(tmp_path)
    memory.index()
    hits = [h for h in memory.search("wrong fact about the deploy", top_k=5) if "item" in h.heading]
    assert len(hits) == 3
    for hit in sorted(hits, key=lambda h: h.start_line):  # (the one above first: it moves the others)
        chunk = memory.expand(hit.id)
        assert chunk is not None and chunk.heading == hit.heading
        assert memory.forget(hit.id).heading == hit.heading
    assert path.read_text() == f"# {DAY}\n\n## 14:00 kept\n\nThe deploy runs on Tuesdays.\n"
    kept = memory.search("deploy Tuesdays", top_k=1)[0]
    assert memory.expand(kept.id) is not None and memory.forget(kept.id, dry_run=True).heading == kept.heading
