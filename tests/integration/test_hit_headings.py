"""A hit's and a chunk's heading in the Python API is the one its JSON, the CLI, MCP and the language server show: a
note under a bare `## HH:MM` named by its first line with the time beside it (issue 38), on a real Milvus Lite with
the fake embedder; the Markdown heading as written is `markdown_heading`."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from memsearch_lsp.core.onboard import init_workspace

NOW = dt.datetime(2026, 12, 5, 21, 18)
SHOWN = "We chose Kafka for the event bus (21:18)"


def test_a_hit_and_an_expanded_chunk_say_the_heading_their_json_says(tmp_path: Path, make_memory) -> None:
    """(audit RC, 1) `Hit.heading` and `Expanded.heading` were the bare "21:18" while `to_dict()` (and so the CLI,
    MCP and the editor) said "We chose Kafka for the event bus (21:18)": README, "Hits are dataclasses with the
    fields of the JSON hits"."""
    init_workspace(tmp_path, today=NOW.date())
    memory = make_memory(tmp_path)
    note = memory.remember("We chose Kafka for the event bus", now=NOW).to_dict()
    hit = memory.search("Kafka event bus", top_k=1)[0]
    assert hit.id == note["id"]
    assert (hit.heading, hit.to_dict()["heading"], hit.markdown_heading) == (SHOWN, SHOWN, "21:18")
    chunk = memory.expand(hit.id)
    assert chunk is not None
    assert (chunk.heading, chunk.to_dict()["heading"], chunk.markdown_heading) == (SHOWN, SHOWN, "21:18")
    (listed,) = [h for h in memory.headings() if h.id == hit.id]  # (workspace symbols' list)
    assert (listed.heading, listed.to_dict()["heading"], listed.markdown_heading) == (SHOWN, SHOWN, "21:18")


def test_a_linked_heading_is_its_text_and_another_heading_is_as_written(tmp_path: Path, make_memory) -> None:
    """A summary's day heading `## [2026-02-05](archive/2026-02-05.md)` is shown as "2026-02-05" in a hit's
    `heading` as in its JSON; any other heading is the same in both and as written."""
    init_workspace(tmp_path, today=NOW.date())
    (tmp_path / "memory" / "summary-2026-W06.md").write_text(
        "# Week 6\n\n## [2026-02-05](archive/2026-02-05.md)\n\n- We moved the okapi cluster to Frankfurt.\n\n"
        "## Deploys\n\nThe wombat service deploys on Tuesdays.\n"
    )
    memory = make_memory(tmp_path)
    memory.index()
    day = memory.search("okapi cluster Frankfurt", top_k=1)[0]
    assert (day.heading, day.to_dict()["heading"]) == ("2026-02-05", "2026-02-05")
    assert day.markdown_heading == "[2026-02-05](archive/2026-02-05.md)"
    plain = memory.search("wombat deploys Tuesdays", top_k=1)[0]
    assert plain.heading == plain.to_dict()["heading"] == plain.markdown_heading == "Deploys"
