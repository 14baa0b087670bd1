"""Memory.remember(): today's log, the note's heading and lines, the clock seam, through the index owner."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from memsearch_lsp.config import load_config
from memsearch_lsp.core import clock
from memsearch_lsp.core.process.door import open_memory
from memsearch_lsp.core.process.owner import OwnerServer, RemoteMemory
from memsearch_lsp.core.recall import recent_notes
from tests.fakes import FakeEmbedder
from tests.helpers import owner_serving

NINE = dt.datetime(2026, 12, 3, 9, 5)


def test_a_note_creates_todays_log_with_its_title_and_is_indexed(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    memory.clock = lambda: NINE
    note = memory.remember("  We chose Postgres 16 for billing.\n")
    log = workspace / "memory" / "2026-12-03.md"
    assert log.read_text() == "# 2026-12-03\n\n## 09:05\n\nWe chose Postgres 16 for billing.\n"
    assert (note.source, note.chunks[0].heading, note.chunks[0].start_line, note.chunks[-1].end_line) == (
        "memory/2026-12-03.md",
        "09:05",
        3,
        5,
    )
    assert memory.expand(note.to_dict()["id"]).content == "## 09:05\n\nWe chose Postgres 16 for billing."
    assert memory.search("Postgres billing", top_k=1)[0].id == note.chunks[0].id
    assert note.stats.files_added == 1


def test_a_note_added_to_a_crlf_file_has_crlf_lines(workspace: Path, make_memory) -> None:
    """A memory written on Windows kept its CRLF lines and got LF-only ones from remember: every note was noise in a
    git diff."""
    log, lasting = workspace / "memory" / "2026-12-03.md", workspace / "memory" / "MEMORY.md"
    log.write_bytes(b"# 2026-12-03\r\n\r\n## 08:00\r\nStandup moved.\r\n")
    lasting.write_bytes(b"# Long-term memory\r\n\r\n## Notes\r\n- Ana prefers small PRs.\r\n")
    memory = make_memory(workspace)
    memory.clock = lambda: NINE
    note = memory.remember("We chose Postgres 16 for billing.")
    memory.remember("Joel reviews in the morning.", long_term=True)
    for path in (log, lasting):
        data = path.read_bytes()
        assert data.count(b"\n") == data.count(b"\r\n") > 4, data
    assert b"## 09:05\r\n\r\nWe chose Postgres 16 for billing.\r\n" in log.read_bytes()
    assert memory.expand(note.to_dict()["id"]).content == "## 09:05\n\nWe chose Postgres 16 for billing."


def test_an_id_remember_answered_still_expands_to_its_note_once_its_section_grew(workspace: Path, make_memory) -> None:
    """A long-term fact's id is its MEMORY.md section's: a second fact in that section made the first id unknown."""
    memory = make_memory(workspace)
    first = memory.remember("We deploy on Tuesdays only.", heading="Release rules", long_term=True).to_dict()["id"]
    second = memory.remember("Hotfixes skip the train.", heading="Release rules", long_term=True).to_dict()["id"]
    assert first != second and memory.store.get(first) is None  # the section's chunk changed
    for key in (first, first[:8]):
        expanded = memory.expand(key)
        assert expanded is not None and "We deploy on Tuesdays only." in expanded.content
    note = memory.remember("Our on-call rota lives in PagerDuty.")
    log = workspace / "memory" / f"{memory.clock().date()}.md"
    log.write_text(log.read_text() + "Escalation after 15 min.\n")
    memory.index()
    grown = memory.expand(note.to_dict()["id"])  # a note someone added to: its section, found by its first line
    assert grown is not None and "Escalation after 15 min." in grown.content
    (workspace / "memory" / "MEMORY.md").write_text("# Memory\n")  # the note is gone: so is its id
    memory.index()
    assert memory.expand(first) is None
    kept = workspace / ".memsearch" / "remembered.json"
    assert "Tuesdays" not in kept.read_text()  # ... and its first line, kept beside the index, with it
    kept.write_text("[1, 2]")  # damaged: a cache, never a failed note
    secret = memory.remember("The door code is 4711.").to_dict()
    assert "door code" in kept.read_text()
    memory.forget(secret["id"])  # forgotten: its line is not kept beside the index either
    assert "door code" not in kept.read_text() and memory.expand(secret["id"]) is None


def test_the_id_of_a_note_longer_than_a_chunk_expands_to_all_of_it(workspace: Path, make_memory) -> None:
    """A 5 KB note is indexed as four chunks of its section: the id `remember` answered expanded to the first alone
    (lines 3-13 of 3-43); an id of another chunk is still that chunk."""
    memory = make_memory(workspace)
    paragraphs = [f"Paragraph {n}: " + " ".join(f"word{n}x{k}" for k in range(40)) + "." for n in range(20)]
    note = memory.remember("\n\n".join(paragraphs), heading="Long note")
    data = note.to_dict()
    assert len(data["chunks"]) > 1
    whole = memory.expand(data["id"])
    assert whole is not None and (whole.start_line, whole.end_line) == (data["start_line"], data["end_line"])
    assert all(p in whole.content for p in paragraphs) and whole.content.startswith("## Long note")
    last = memory.expand(data["chunks"][-1]["id"])
    assert last is not None and paragraphs[-1] in last.content and paragraphs[0] not in last.content
    after = memory.remember("A short note after it.", heading="Next")
    assert "A short note after it." not in memory.expand(data["id"]).content  # (another section: not the note)
    assert memory.expand(after.to_dict()["id"]).content.startswith("## Next")
    # a tight list cut across chunks: expanded as the file has it (blank lines were put between the chunks, and
    # `forget` of the id refused: "changed since it was indexed")
    items = [f"- item {n}: " + " ".join(f"w{n}x{k}" for k in range(12)) for n in range(60)]
    listed = memory.remember("\n".join(items), heading="Tight list").to_dict()
    assert len(listed["chunks"]) > 1
    lines = (workspace / listed["source"]).read_text().split("\n")
    whole = memory.expand(listed["id"])
    assert whole.content == "\n".join(lines[listed["start_line"] - 1 : listed["end_line"]])
    gone = memory.forget(listed["id"])
    assert gone.removed and "item 59" not in (workspace / listed["source"]).read_text()


def test_notes_append_with_their_own_lines_and_headings(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    log = workspace / "memory" / "2026-12-03.md"
    log.write_text("# 2026-12-03\n\nno newline at the end")
    first = memory.remember("first", heading="  Decision:\n  Kafka  ", now=NINE)
    second = memory.remember("second\n\n### Detail\n\nmore", now=NINE.replace(hour=17, minute=30))
    lines = log.read_text().split("\n")
    assert lines[first.chunks[0].start_line - 1] == "## Decision: Kafka"
    assert lines[second.chunks[0].start_line - 1] == "## 17:30"
    assert lines[2] == "no newline at the end" and lines[3] == ""  # the note starts on its own paragraph
    assert [c.heading for c in second.chunks] == ["17:30"] and "\n**Detail**\n" in second.chunks[0].content
    assert second.to_dict()["end_line"] == len(lines) and second.to_dict()["id"] == second.chunks[0].id
    assert lines[-1] == "more"  # (the file ends as it did, without a line end: forget gives it back byte for byte)
    assert {c.id for c in second.chunks} <= {h.id for h in memory.headings()}


def test_empty_notes_are_refused_and_nothing_is_written(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    with pytest.raises(ValueError, match="nothing to remember"):
        memory.remember(" \n\t")
    assert not list((workspace / "memory").glob("20[3-9]*.md"))


def test_the_clock_follows_memsearch_now_and_is_not_a_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMSEARCH_NOW", "2026-01-31T23:59")
    monkeypatch.setenv("MEMSEARCH_HOOK_CONTEXT_CHARS", "500")
    assert clock.now() == dt.datetime(2026, 1, 31, 23, 59)
    load_config(tmp_path)  # neither variable is an unknown setting
    monkeypatch.setenv("MEMSEARCH_NOW", "yesterday")
    with pytest.raises(ValueError, match="ISO 8601"):
        clock.now()


def test_a_client_remembers_through_the_owner_at_its_own_time(workspace: Path, make_memory) -> None:
    owner = make_memory(workspace)
    owner.index()
    server = OwnerServer(owner)
    server.start()
    try:
        client = open_memory(workspace, embedder=FakeEmbedder())
        assert isinstance(client, RemoteMemory)
        client.clock = lambda: NINE
        note = client.remember("Quokkaflux retention is 7 days")
        assert note.source == "memory/2026-12-03.md" and note.chunks[0].heading == "09:05"
        assert owner.expand(note.chunks[0].id) is not None  # the owner indexed it
        assert client.search("Quokkaflux retention", top_k=1)[0].id == note.chunks[0].id
        with pytest.raises(ValueError, match="nothing to remember"):
            client.remember("")
    finally:
        server.close()


def test_open_memory_works_beside_a_running_owner(workspace: Path, make_memory) -> None:
    """README's `memsearch_lsp.open_memory(...)` while an editor owns the index: it is that owner's
    client (no IndexBusy, and nothing written before the index was reachable); alone, a local Memory."""
    import memsearch_lsp

    owner = make_memory(workspace)
    owner.index()
    with owner_serving(owner), memsearch_lsp.open_memory(workspace, embedder=FakeEmbedder()) as memory:
        assert isinstance(memory, RemoteMemory)
        memory.clock = lambda: NINE
        note = memory.remember("Wallaby quota is 40 GB")
        assert owner.expand(note.chunks[0].id) is not None
        assert memory.search("Wallaby quota", top_k=1)[0].id == note.chunks[0].id
    alone = memsearch_lsp.open_memory(workspace, embedder=FakeEmbedder())  # no owner now: it owns the index
    try:
        assert isinstance(alone, memsearch_lsp.Memory) and alone.search("Wallaby quota", top_k=1)
    finally:
        alone.close()


def test_a_bare_timed_note_has_one_heading_wherever_it_is_sent(workspace: Path, make_memory) -> None:
    """A note under a bare `## HH:MM` is named by its first line (README): a search hit said "We picked Hetzner ...
    (03:58)" while expand (CLI, LSP, MCP), remember and recent said "03:58" for the same chunk."""
    memory = make_memory(workspace)
    memory.clock = lambda: NINE.replace(hour=3, minute=58)
    note = memory.remember("We picked **Hetzner** for the CI runners because of price\n\nThe runners are ARM.")
    again = memory.remember("We picked Hetzner again", heading=None)  # `## 03:58 (2)`
    shown = "We picked Hetzner for the CI runners because of price (03:58)"
    hit = memory.search("Hetzner CI runners price", top_k=1)[0]
    assert hit.id == note.chunks[0].id and hit.to_dict()["heading"] == shown
    assert memory.expand(hit.id).to_dict()["heading"] == shown
    assert note.to_dict()["heading"] == shown and note.to_dict()["chunks"][0]["heading"] == shown
    assert again.to_dict()["heading"] == "We picked Hetzner again (03:58)"
    recent = {n.id: n.to_dict()["heading"] for n in recent_notes(memory, days=1, today=NINE.date())}
    assert recent == {note.chunks[0].id: shown, again.chunks[0].id: "We picked Hetzner again (03:58)"}
    named = memory.remember("Alice owns the release train", heading="Release rules")
    assert named.to_dict()["heading"] == memory.expand(named.chunks[0].id).to_dict()["heading"] == "Release rules"
