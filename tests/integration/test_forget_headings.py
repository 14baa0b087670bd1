"""`forget` and the headings of the notes it takes out, on a real Milvus Lite with the fake embedder: a heading
`remember` made goes with the last fact under it, and the heading `forget` names is the one search shows."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from memsearch_lsp.core.onboard import init_workspace

NOW = dt.datetime(2026, 12, 7, 5, 3)


def test_a_heading_remember_made_goes_with_the_last_fact_under_it_whichever_goes_first(
    tmp_path: Path, make_memory
) -> None:
    """(review D, 4) two facts remembered under a heading the first made: forgetting that first fact, then the other,
    left an empty `## Deploy` in MEMORY.md (the record that `remember` made it went with the first fact's id)."""
    init_workspace(tmp_path, today=NOW.date())
    memory = make_memory(tmp_path)
    path = tmp_path / "memory" / "MEMORY.md"
    template = path.read_bytes()
    for first_goes in (0, 1):
        facts = [
            memory.remember(text, "Deploy", long_term=True).to_dict()
            for text in (f"We deploy on Tuesdays only ({first_goes}).", f"Rollbacks need a ticket ({first_goes}).")
        ]
        first, last = facts[first_goes], facts[1 - first_goes]
        assert memory.forget(first["id"], line=first["start_line"], end_line=first["end_line"]).removed
        assert "## Deploy" in path.read_text() and last["start_line"] > 0  # the other fact is still under it
        assert memory.forget(last["id"]).removed
        assert path.read_bytes() == template, path.read_text()  # the heading it made went with the last fact
    path.write_text(template.decode() + "\n## Deploy\n")  # a heading a person wrote stays
    facts = [memory.remember(t, "Deploy", long_term=True).to_dict() for t in ("Deploy at noon.", "Tag each release.")]
    for fact in reversed(facts):  # (the later first: the lines remember gave the other stay its own)
        assert memory.forget(fact["id"], line=fact["start_line"], end_line=fact["end_line"]).removed
    assert path.read_text() == template.decode() + "\n## Deploy\n"


def test_forget_names_a_timed_note_as_search_and_expand_do(tmp_path: Path, make_memory) -> None:
    """(review D, 4) `forget` said "(05:03)" (its prompt, --json, MCP memory_forget) for a note under a bare `## HH:MM`
    heading that search and expand name "We chose Hetzner for the CI runners (05:03)"."""
    init_workspace(tmp_path, today=NOW.date())
    memory = make_memory(tmp_path)
    note = memory.remember("We chose Hetzner for the CI runners", now=NOW).to_dict()
    shown = "We chose Hetzner for the CI runners (05:03)"
    chunk = memory.expand(note["id"])
    assert chunk is not None and chunk.to_dict()["heading"] == shown
    assert memory.search("Hetzner CI runners", top_k=1)[0].to_dict()["heading"] == shown
    preview = memory.forget(note["id"], dry_run=True)
    assert preview.heading == shown and preview.to_dict()["heading"] == shown and str(preview).endswith(shown)
    assert memory.forget(note["id"]).heading == shown
