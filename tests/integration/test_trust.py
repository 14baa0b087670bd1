"""Memory the user can trust (issue 38), on a real Milvus Lite with the fake embedder: one note per text and
day, forget (file first, index after), date-filtered questions that the relevance floor does not empty, no
template text or empty title chunks in answers, and a user memory merged into every workspace's searches."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import os
import signal
import stat
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import memsearch_lsp
from memsearch_lsp import cli
from memsearch_lsp.core.api import ScopeError
from memsearch_lsp.core.notes import NoteError
from memsearch_lsp.core.onboard import init_workspace
from memsearch_lsp.core.process.protocol import OwnerGone
from memsearch_lsp.core.scopes import (
    make_user_root,
    merge,
    open_user_memory,
    search_scopes,
    user_config,
    user_root,
)
from memsearch_lsp.core.search.hybrid import Hit
from memsearch_lsp.core.store import IndexBusy
from tests.fakes import FakeEmbedder
from tests.helpers import PREFIX_TWINS, USER_OWNER, owner_process, owner_serving

NOW = dt.datetime(2026, 12, 5, 9, 41)


def test_remembering_the_same_text_the_same_day_returns_the_note_already_there(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    first = memory.remember("The okapi deploy window is Thursday.", now=NOW)
    again = memory.remember("The okapi deploy window is Thursday.\n", now=NOW + dt.timedelta(minutes=3))
    log = (workspace / first.source).read_text()
    assert again.to_dict()["id"] == first.to_dict()["id"] and log.count("okapi deploy window") == 1
    other_day = memory.remember("The okapi deploy window is Thursday.", now=NOW + dt.timedelta(days=1))
    assert other_day.source != first.source  # another day's log is another note
    fact = memory.remember("Commits in the imperative", "Preferences", long_term=True)
    same = memory.remember("Commits in the imperative", "Preferences", long_term=True)
    text = (workspace / "memory" / "MEMORY.md").read_text()
    assert same.to_dict()["id"] == fact.to_dict()["id"] and text.count("Commits in the imperative") == 1


def test_forget_takes_the_note_out_of_its_file_and_out_of_search(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    memory.index()
    keep = memory.remember("Quokka cache size is 512 MB.", now=NOW)
    gone = memory.remember("Wombat queue retries five times.", "Wombat", now=NOW + dt.timedelta(minutes=1))
    path = workspace / gone.source
    before = path.read_text()
    preview = memory.forget(gone.to_dict()["id"][:6], dry_run=True)
    assert path.read_text() == before and preview.removed is False and "Wombat queue" in preview.content
    done = memory.forget(gone.to_dict()["id"])
    assert done.removed and (done.heading, done.start_line) == ("Wombat", gone.to_dict()["start_line"])
    after = path.read_text()
    assert "Wombat" not in after and "Quokka cache size is 512 MB." in after and not after.endswith("\n\n")
    assert all(h.id not in done.ids for h in memory.search("wombat queue retries", top_k=10))
    assert keep.to_dict()["id"] in {h.id for h in memory.search("quokka cache size", top_k=3)}
    with pytest.raises(NoteError, match="no chunk"):
        memory.forget(gone.to_dict()["id"])


def test_a_forgotten_note_leaves_no_byte_in_the_saved_read_model(workspace: Path, make_memory) -> None:
    """The saved read model kept a deleted row's text (its slot only marked dead) until... never: a forgotten password
    was still in `content.blob.bin` after more notes, an index and new processes."""
    secret = "Vault unseal phrase is okapi-lantern-7731"
    memory = make_memory(workspace)
    memory.index()
    gone = memory.remember(secret, "Unseal", now=NOW)
    memory.close()  # saved with the note in it

    def saved_bytes() -> bytes:
        folder = workspace / ".memsearch" / "milvus.db" / "read-model"
        return b"".join(p.read_bytes() for p in folder.iterdir()) if folder.is_dir() else b""

    assert b"okapi-lantern-7731" in saved_bytes()
    again = make_memory(workspace)
    assert again.forget(gone.to_dict()["id"]).removed
    again.store.flush(wait=True)  # (the writer removes them before it writes: the caller's first write waits not)
    assert b"okapi-lantern-7731" not in saved_bytes()  # the saved files went with the first write
    again.remember("Lunch is at noon.", now=NOW + dt.timedelta(minutes=1))
    again.close()  # saved again, without it
    assert saved_bytes() and b"okapi-lantern-7731" not in saved_bytes()
    assert all("okapi" not in h.snippet for h in make_memory(workspace).search("okapi lantern unseal", min_score=0))


def test_forget_by_the_id_of_a_notes_part_takes_out_the_whole_note(workspace: Path, make_memory) -> None:
    """A note with `###` parts (written by hand, or by `remember` before its headings became bold lines): search
    returns the id of its `### Root cause` part, and forget by that id left the note's `##` heading and intro behind."""
    log = workspace / "memory" / "2026-12-05.md"
    log.write_text(
        "# 2026-12-05\n\n## 10:00\n\nIncident notes for the checkout outage.\n\n### Root cause\n\n"
        "The Stripe webhook secret rotated.\n"
    )
    memory = make_memory(workspace)
    memory.index()
    memory.remember("Lunch is at noon.", now=NOW + dt.timedelta(minutes=1))
    part = next(c for c in memory.indexer.chunk("memory/2026-12-05.md", log.read_text()) if c.heading == "Root cause")
    assert memory.forget(part.id).removed
    text = log.read_text()
    assert "Incident notes" not in text and "Stripe" not in text and "Lunch is at noon." in text
    assert memory.search("lunch at noon", top_k=1)[0].source == "memory/2026-12-05.md"  # (moved up: a new id)


def test_forget_refuses_a_title_or_text_before_the_first_heading_with_the_reason(workspace: Path, make_memory) -> None:
    (workspace / "memory" / "2026-12-04.md").write_text("# 2026-12-04\n\n## Note\n\nbody\n")
    (workspace / "memory" / "loose.md").write_text("loose words about capybaras\n\n## Later\n\ntext\n")
    memory = make_memory(workspace)
    memory.index()
    chunks = memory.indexer.chunk("memory/2026-12-04.md", (workspace / "memory" / "2026-12-04.md").read_text())
    with pytest.raises(NoteError, match="title"):
        memory.forget(chunks[0].id)
    loose = memory.indexer.chunk("memory/loose.md", (workspace / "memory" / "loose.md").read_text())
    with pytest.raises(NoteError, match="before the file's first heading"):
        memory.forget(loose[0].id)
    assert (workspace / "memory" / "loose.md").read_text().startswith("loose words")


def test_forget_writes_every_other_byte_back_as_it_was(workspace: Path, make_memory) -> None:
    """Line endings (CRLF, CR) and bytes that are no UTF-8 stay as they were outside the note taken out."""
    crlf = workspace / "memory" / "2026-11-21.md"
    crlf.write_bytes(b"# 2026-11-21\r\n\r\n## 10:00\r\nCRLF note about the dugong deploy\r\n\r\n## 11:00\r\nkept\r\n")
    latin = workspace / "memory" / "2026-11-18.md"
    latin.write_bytes(b"# 2026-11-18\n\n## 10:00\nforget me: zebra plan\n\n## 11:00\nlatin1 caf\xe9 kept\n")
    memory = make_memory(workspace)
    memory.index()
    for path, words in ((crlf, "dugong deploy"), (latin, "zebra plan")):
        source = f"memory/{path.name}"
        chunk = next(
            c for c in memory.indexer.chunk(source, path.read_bytes().decode("utf-8", "replace")) if words in c.content
        )
        assert memory.forget(chunk.id).removed
    assert crlf.read_bytes() == b"# 2026-11-21\r\n\r\n## 11:00\r\nkept\r\n"
    assert latin.read_bytes() == b"# 2026-11-18\n\n## 11:00\nlatin1 caf\xe9 kept\n"
    long_term = workspace / "memory" / "MEMORY.md"
    long_term.write_bytes(b"# Long-term memory\n\n## Notes\n\nlatin1 caf\xe9\n\n## Later\n\nx\n")
    with pytest.raises(NoteError, match="invalid UTF-8"):  # inside the file: only an append keeps such bytes
        memory.remember("Deploys on Tuesdays", long_term=True)
    assert long_term.read_bytes() == b"# Long-term memory\n\n## Notes\n\nlatin1 caf\xe9\n\n## Later\n\nx\n"


def test_forget_never_takes_out_a_long_term_section_of_several_notes(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    memory.remember("Alice prefers tabs in Go code", long_term=True)
    memory.remember("The staging DB password rotates monthly", long_term=True)
    wrong = memory.remember("wrong fact: bananas are blue", long_term=True)
    path = workspace / "memory" / "MEMORY.md"
    before = path.read_bytes()
    assert path.read_text().split("\n")[wrong.to_dict()["start_line"] - 1] == "wrong fact: bananas are blue"
    with pytest.raises(NoteError, match=r"holds 3 notes.*MCP.s line and end_line"):
        memory.forget(wrong.to_dict()["id"])
    with pytest.raises(NoteError, match="in none of the notes"):  # the heading: no one note
        memory.forget(wrong.to_dict()["id"], line=path.read_text().split("\n").index("## Notes") + 1)
    assert path.read_bytes() == before
    gone = memory.forget(wrong.to_dict()["id"], line=wrong.to_dict()["start_line"])
    assert gone.content == "wrong fact: bananas are blue" and gone.heading == "Notes"
    text = path.read_text()
    assert "bananas" not in text and "Alice prefers tabs" in text and "rotates monthly" in text
    assert "\n\n\n" not in text and text.endswith("monthly\n")
    lone = memory.remember("Deploys go out on Tuesdays", "Release", long_term=True)
    assert lone.to_dict()["start_line"] == lone.to_dict()["end_line"]  # the fact's line, not the heading it made
    assert memory.forget(lone.to_dict()["id"]).removed
    text = path.read_text()
    assert "Tuesdays" not in text and "## Release" not in text and "Alice prefers tabs" in text
    path.write_text(text + "\n## Reviews\n")  # a heading `init` (or the user) wrote, no note under it yet
    pref = memory.remember("Ines prefers small PRs", "Reviews", long_term=True).to_dict()
    assert memory.forget(pref["id"], line=pref["start_line"], end_line=pref["end_line"]).removed
    text = path.read_text()
    assert "small PRs" not in text and text.endswith("## Reviews\n")  # --line: the fact, never that heading
    # a fact of two paragraphs, and a list item with its nested items: forget takes out what remember wrote
    memory.remember(
        "- Use uv for Python envs\n  - pinned in uv.lock\n  - CI uses uv sync --frozen", "Tools", long_term=True
    )
    two = memory.remember("Kafka over RabbitMQ for the bus.\n\nReason: replay for 7 days.", "Tools", long_term=True)
    data = two.to_dict()
    assert memory.forget(data["id"], line=data["start_line"], end_line=data["end_line"]).removed
    text = path.read_text()
    assert "Kafka over RabbitMQ" not in text and "Reason: replay" not in text and "CI uses uv sync" in text
    tools = memory.expand(memory.search("uv for Python envs", top_k=1)[0].id)
    assert tools is not None
    line = text.split("\n").index("- Use uv for Python envs") + 1
    assert memory.forget(tools.id, line=line).removed
    assert "uv.lock" not in path.read_text() and "Use uv for" not in path.read_text()  # the item, its nested items


def test_forget_of_a_lone_long_term_fact_keeps_a_heading_remember_did_not_write(tmp_path: Path, make_memory) -> None:
    """(audit H, 8) `forget ID` of the one fact under `init`'s `## Decisions` took the heading out with it (issue 25:
    what a person wrote is never rewritten); a heading `remember` wrote for the fact goes with it, as in a daily log,
    where a note's `## HH:MM` heading is its own."""
    init_workspace(tmp_path / "ws", today=NOW.date())
    memory = make_memory(tmp_path / "ws")
    path = tmp_path / "ws" / "memory" / "MEMORY.md"
    template = path.read_bytes()
    fact = memory.remember("We use Redis 7 for the session cache.", "Decisions", long_term=True).to_dict()
    gone = memory.forget(fact["id"])
    assert (gone.start_line, gone.end_line, gone.content) == (
        fact["start_line"],
        fact["end_line"],
        "We use Redis 7 for the session cache.",
    )
    assert path.read_bytes() == template  # `## Decisions` stays, one blank line where the fact was
    memory.remember("Tabs are four spaces wide.", "Preferences", long_term=True)
    hit = memory.search("tabs four spaces wide", top_k=1)[0]  # a search's id: the section's, not remember's
    assert memory.forget(hit.id).removed and path.read_bytes() == template
    memory.remember("Deploys go out on Tuesdays.", "Release", long_term=True)
    memory.remember("Deploys go out on Tuesdays.", "Release", long_term=True)  # the same fact again: still its heading
    assert memory.forget(memory.search("deploys tuesdays", top_k=1)[0].id).removed and path.read_bytes() == template
    made = memory.remember("Ops pages go to #ops-alerts.", "Ops", long_term=True).to_dict()
    assert memory.forget(made["id"], line=made["start_line"], end_line=made["end_line"]).removed  # remember's lines
    assert path.read_bytes() == template  # undo it: the heading it wrote too
    made = memory.remember("Billing runs on Postgres 16.", "Storage", long_term=True).to_dict()
    (memory.index_dir / "remembered.json").unlink()  # no record who wrote `## Storage` (an older version's note)
    assert memory.forget(made["id"]).removed
    assert path.read_text() == template.decode() + "\n## Storage\n"  # kept: it may be a person's
    note = memory.remember("The nightly backup runs at 02:00.", "backup window", now=NOW)  # a daily log's note
    memory.remember("Kafka is the event bus.", now=NOW + dt.timedelta(minutes=1))
    assert memory.forget(note.to_dict()["id"]).removed
    log = (tmp_path / "ws" / note.source).read_text()
    assert "backup" not in log and "## 09:42" in log and "Kafka is the event bus." in log  # its own heading went


def test_a_heading_inside_a_note_is_a_bold_line_so_forget_takes_the_whole_note(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    note = memory.remember("Deploy notes\n## Credentials\nthe staging db password is tr0ub4dor\n\nSetext\n===", now=NOW)
    log = (workspace / note.source).read_text()
    assert "\n\n**Credentials**\n\n" in log and "\n**Setext**\n" in log and "\n## Credentials" not in log
    assert len(note.chunks) == 1 and note.chunks[0].content.endswith("**Setext**")
    memory.forget(note.to_dict()["id"])
    assert "tr0ub4dor" not in (workspace / note.source).read_text()


def test_remember_never_writes_under_an_editors_unsaved_buffer(workspace: Path, make_memory) -> None:
    """An editor holding today's log unsaved would drop a note written under it on its next save, and its
    buffer hides the note from search meanwhile: the note goes to the day's next file, both found."""
    memory = make_memory(workspace)
    today = "memory/2026-12-05.md"
    (workspace / today).write_text("# 2026-12-05\n")
    memory.index_text(today, "# 2026-12-05\n\n## 09:30\n\nUNSAVED walrus migration plan\n")
    note = memory.remember("The narwhal cluster moves to eu-west-3.", now=NOW)
    assert note.source == "memory/2026-12-05.2.md"
    assert (workspace / today).read_text() == "# 2026-12-05\n"
    assert note.to_dict()["id"] in {h.id for h in memory.search("narwhal cluster eu-west-3", top_k=3)}
    assert any("walrus" in h.snippet for h in memory.search("walrus migration plan", top_k=3))
    memory.index_text("memory/MEMORY.md", "# Long-term memory\n\nunsaved\n")
    with pytest.raises(NoteError, match="unsaved changes"):
        memory.remember("Deploys on Tuesdays", long_term=True)
    # a buffer only open (or just saved) is the file's own text: the note goes where it belongs, and can be forgotten
    memory.index_text(today, (workspace / today).read_text().replace("\n", "\r\n"))  # (as an editor on Windows)
    clean = memory.remember("The dugong report is due Friday.", now=NOW + dt.timedelta(minutes=5))
    assert clean.source == today and "dugong report" in (workspace / today).read_text()
    assert clean.to_dict()["id"] in {h.id for h in memory.search("dugong report due", top_k=3)}
    memory.index_text(today, (workspace / today).read_text())
    assert memory.forget(clean.to_dict()["id"]).removed and "dugong" not in (workspace / today).read_text()


def test_a_date_filter_that_leaves_a_few_notes_is_never_emptied_by_the_floor(
    tmp_path: Path, make_memory, embedder
) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    memory = make_memory(ws, min_score=0.99)  # a floor nothing passes
    memory.clock = lambda: NOW
    memory.remember("Decision: Postgres for billing.", now=NOW - dt.timedelta(days=30))
    memory.remember("Decision: Kafka for the event bus.", now=NOW - dt.timedelta(days=3))
    memory.remember("We decided to drop Python 3.8.", now=NOW - dt.timedelta(days=2))
    assert memory.search("what did we decide last week") == []
    hits = memory.search("what did we decide last week", since="7d", top_k=5)
    assert {h.source for h in hits} == {"memory/2026-12-02.md", "memory/2026-12-03.md"}
    assert all(h.heading != h.date for h in hits)  # never the empty `# 2026-12-03` title chunks
    # a floor the search asks for itself (`--min-score`) is kept: it was dropped with the configured one
    assert memory.search("what did we decide last week", since="7d", top_k=5, min_score=0.99) == []
    # a process following the owner, whose own settings set the floor, is answered the same (its floor travels with
    # each search, and was taken for one asked)
    with owner_serving(memory), memsearch_lsp.open_memory(ws, embedder=embedder) as client:
        assert client.remote
        client.reconfigure(replace(client.config, search=replace(client.config.search, min_score=0.99)))
        assert client.search("what did we decide last week") == []
        found = client.search("what did we decide last week", since="2026-11-28", top_k=5)  # (7d at NOW)
        assert {h.source for h in found} == {"memory/2026-12-02.md", "memory/2026-12-03.md"}


def test_a_fresh_workspace_answers_no_template_text(tmp_path: Path, make_memory) -> None:
    init_workspace(tmp_path / "fresh", today=NOW.date())
    memory = make_memory(tmp_path / "fresh")
    memory.index()
    assert memory.search("decisions", top_k=5, min_score=0) == []  # only empty sections: nothing to say
    assert {h.heading for h in memory.headings()} >= {"Decisions", "Preferences"}  # the outline keeps them


def test_the_user_memory_lives_in_the_data_folder_private_and_is_merged_by_relevance(
    tmp_path: Path, make_memory, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert user_root() == tmp_path / "data" / "memsearch-lsp" and open_user_memory() is None  # none yet
    root = make_user_root()
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700 and stat.S_IMODE(os.stat(root / "memory").st_mode) == 0o700
    user = open_user_memory(embedder=embedder)
    assert user is not None
    try:
        (tmp_path / "ws" / "memory").mkdir(parents=True)
        ws = make_memory(tmp_path / "ws")
        ws.remember("Kafka is the event bus.", now=NOW)
        note = user.remember("Commit messages in the imperative mood.", now=NOW)
        assert (root / note.source).is_file() and "imperative" not in (tmp_path / "ws" / note.source).read_text()
        both = search_scopes(ws, lambda: user, "commit messages imperative mood", 2)
        assert both[0].scope == "user" and {h.scope for h in both} == {"user", "workspace"}
        assert [h.scope for h in search_scopes(ws, lambda: user, "commit messages", 3, "workspace")] == ["workspace"]
        assert {h.scope for h in search_scopes(None, lambda: user, "commit messages", 3, "user")} == {"user"}
        with pytest.raises(ScopeError):
            search_scopes(ws, lambda: user, "x", 3, "everything")
        # a search in the user memory's own folder (an editor opened there): each of its notes once
        own = search_scopes(user, lambda: user, "commit messages imperative mood", 5)
        assert [h.id for h in own].count(note.chunks[0].id) == 1 and {h.scope for h in own} == {"user"}
    finally:
        user.close()


def test_the_python_api_says_a_user_note_is_the_users_and_its_search_takes_a_scope(
    tmp_path: Path, make_memory, embedder
) -> None:
    user = memsearch_lsp.open_user_memory(create=True, embedder=embedder)  # owned here
    assert user is not None and not user.remote
    with user:
        note = user.remember("Commit messages in the imperative mood.", now=NOW)
        assert note.scope == "user" and note.to_dict()["scope"] == "user"
        assert {h.scope for h in user.search("commit messages imperative mood")} == {"user"}
        assert {h.scope for h in user.search("commit messages imperative mood", scope="workspace")} == {"user"}
    init_workspace(tmp_path / "ws", today=NOW.date())
    owner = make_memory(user_root(), config=user_config())  # another process owns it, as `warm` would
    with owner_serving(owner):
        mine = memsearch_lsp.open_user_memory()
        assert mine is not None and mine.remote
        assert mine.remember("Tabs are four spaces wide.", now=NOW).scope == "user"
        assert {h.scope for h in mine.search("tabs four spaces")} == {"user"}
        with memsearch_lsp.open_memory(tmp_path / "ws", embedder=embedder) as ws:
            ws.remember("Kafka is the event bus.", now=NOW)
            query = "kafka event bus tabs four spaces"
            assert {h.scope for h in ws.search(query, top_k=5, scope="workspace")} == {"workspace"}
            assert {h.scope for h in ws.search(query, top_k=5, scope="user")} == {"user"}
            assert {h.scope for h in ws.search(query, top_k=5, scope="all")} == {"user", "workspace"}
            assert ws.search(query, top_k=5, scope="all") == memsearch_lsp.search(ws, query, 5, scope="all")
            assert asyncio.run(ws.asearch(query, 5, scope="user")) == ws.search(query, 5, scope="user")  # keywords too
            with pytest.raises(ScopeError, match="expected one of workspace, user, all"):
                ws.search(query, scope="everything")
    alone = make_memory(tmp_path / "ws")  # a Memory made directly cannot open the user memory: it says how
    assert {h.scope for h in alone.search("kafka event bus", scope="workspace")} == {"workspace"}
    with pytest.raises(ScopeError, match=r"memsearch_lsp\.search\(memory, query, scope='user'\)"):
        alone.search("kafka", scope="user")


def _hit(n: int, relevance: float, scope: str) -> Hit:
    return Hit(f"{scope}{n}", "m.md", "h", 1, 1, 9 - n, "", scope=scope, score=relevance)


def test_merge_keeps_each_lists_order_and_takes_the_more_relevant_head() -> None:
    workspace = [_hit(0, 0.5, "workspace"), _hit(1, 0.6, "workspace"), _hit(2, 0.2, "workspace")]
    user = [_hit(0, 0.55, "user"), _hit(1, 0.1, "user")]
    assert [h.id for h in merge([workspace, user], 4)] == ["user0", "workspace0", "workspace1", "workspace2"]
    assert [h.id for h in merge([workspace], 2)] == ["workspace0", "workspace1"]  # one list keeps its order


def test_the_notes_of_a_day_the_query_names_come_first_across_memories(
    tmp_path: Path, make_memory, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each memory gives the day's notes first, without the floor; merging by relevance put the user memory's better
    matches before them and left them out: the day's notes go first across memories too."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    make_user_root()
    user = open_user_memory(embedder=embedder)
    assert user is not None
    try:
        for n in range(3):
            user.remember(f"What happened at the {n}th standup: nothing on the 11th of any month.", now=NOW)
        (tmp_path / "ws" / "memory").mkdir(parents=True)
        (tmp_path / "ws" / "memory" / "2026-11-11.md").write_text(
            "# 2026-11-11\n\n## 10:00\n\nIncident INC-77: checkout 502s for 11 minutes.\n", encoding="utf-8"
        )
        ws = make_memory(tmp_path / "ws")
        ws.clock = lambda: dt.datetime(2026, 11, 20, 9, 0)
        ws.index()
        hits = search_scopes(ws, lambda: user, "what happened on 11 November", 3)
        assert hits and hits[0].source == "memory/2026-11-11.md" and hits[0].scope == "workspace", hits
    finally:
        user.close()


def test_a_user_memory_that_does_not_answer_leaves_the_workspaces_hits_and_one_warning(
    tmp_path: Path, make_memory, embedder, caplog: pytest.LogCaptureFixture
) -> None:
    """(audit H, 7) the user memory's owner stopped (or stuck): the default search (scope "all": MCP's
    memory_search, the CLI's search) failed in every workspace; it answers with the workspace's hits and says once
    that the user memory did not. Asked for alone, the user memory's failure is still the answer."""
    init_workspace(tmp_path / "ws", today=NOW.date())
    ws = make_memory(tmp_path / "ws")
    ws.remember("The nightly backup runs at 02:00.", now=NOW)
    mine = open_user_memory(create=True, embedder=embedder)
    assert mine is not None
    with mine:
        mine.remember("My laptop's nightly backup runs at noon.", now=NOW)
    with owner_process(user_root(), USER_OWNER) as owner:
        followed = open_user_memory(embedder=embedder)  # a client of its owner, as the MCP server's door is
        assert followed is not None and followed.remote
        assert {h.scope for h in search_scopes(ws, lambda: followed, "nightly backup", 5)} == {"workspace", "user"}
        os.kill(owner.pid, signal.SIGSTOP)

        def user() -> memsearch_lsp.MemoryApi | None:
            return followed

        with caplog.at_level(logging.WARNING, logger="memsearch_lsp.core.scopes"):
            hits = search_scopes(ws, user, "nightly backup", 5)
            assert search_scopes(ws, user, "nightly backup", 5, min_score=0.0) == hits  # the same search again
        assert hits and {h.scope for h in hits} == {"workspace"}
        said = [r.getMessage() for r in caplog.records if r.name == "memsearch_lsp.core.scopes"]
        assert len(said) == 1 and "user memory did not answer" in said[0], said  # once, not once a search
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="memsearch_lsp.core.scopes"):  # opened per search (the CLI)
            assert {h.scope for h in memsearch_lsp.search(ws, "nightly backup", 5)} == {"workspace"}
        assert not caplog.records  # (the same user memory: not asked again for a while, nor said again)
        with pytest.raises((OwnerGone, IndexBusy)):  # the user memory asked for alone: its failure is the answer
            search_scopes(ws, user, "nightly backup", 5, "user")


def test_an_id_prefix_of_a_note_in_each_memory_is_ambiguous_and_forgets_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """(audit I, 3) `forget 498a --yes` took out the workspace's note when the user meant the user memory's: a prefix
    found in the workspace was never looked for in the user memory. It is ambiguous, as a prefix of two chunks of one
    memory is, for `forget` and `expand`; a longer prefix or the whole id names one note."""
    monkeypatch.setattr("memsearch_lsp.core.workspace.create_embedder", lambda *a, **k: FakeEmbedder())
    now, ours, theirs, prefix = PREFIX_TWINS
    monkeypatch.setenv("MEMSEARCH_NOW", now)
    init_workspace(tmp_path)
    ws = ["-w", str(tmp_path), "--json"]

    def run(*args: str) -> tuple[int, dict[str, Any]]:
        code = cli.main([*args, *ws])
        out = capsys.readouterr().out
        return code, json.loads(out)

    mine = run("remember", "--heading", "pref", ours)[1]
    user = run("remember", "--user", "--heading", "pref", theirs)[1]
    assert mine["id"][:4] == user["id"][:4] == prefix and mine["id"][:5] != user["id"][:5]  # (the twins still are)
    log, user_log = tmp_path / mine["source"], user_root() / user["source"]
    for command in (("forget", prefix, "--yes"), ("expand", prefix)):
        code, said = run(*command)
        message = said["error"]["message"]
        assert code == 1 and mine["id"] in message and user["id"] in message and "give more of the id" in message
    assert ours in log.read_text() and theirs in user_log.read_text()  # nothing removed
    assert run("expand", mine["id"][:5])[1]["scope"] == "workspace"
    assert run("expand", user["id"][:5])[1]["scope"] == "user"
    gone = run("forget", user["id"], "--yes")[1]  # a whole id: the note it names
    assert gone["scope"] == "user" and theirs not in user_log.read_text() and ours in log.read_text()
    assert run("forget", prefix, "--yes")[1]["scope"] == "workspace"  # one note left that it starts
    assert ours not in log.read_text()
