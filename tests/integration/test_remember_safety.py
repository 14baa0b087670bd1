"""remember() cannot break the log: fences, control characters, sizes, non-regular logs, same-minute headings,
long-term facts in MEMORY.md, and the CLI's exit codes (issue 25, part 1)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from pathlib import Path

import pytest

from memsearch_lsp.core.chunks import MAX_FILE_CHUNKS, chunk_markdown, log_date
from memsearch_lsp.core.files import MAX_FILE_BYTES, read_text
from memsearch_lsp.core.notes import MAX_NOTE_BYTES, NoteError, clean_note, open_fence
from tests.helpers import cli

NINE = dt.datetime(2026, 12, 3, 9, 5)
LOG = "memory/2026-12-03.md"


def cut_answer() -> str:
    """An assistant answer trimmed inside a code fence (what a 1,500-character trim does)."""
    return "Here is the fix:\n\n```python\ndef retry(n):\n    for i in range(n):\n        # try\n        pass"


def test_an_unclosed_fence_never_breaks_later_notes(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    first = memory.remember(cut_answer(), now=NINE)
    later = [
        memory.remember(f"note {n}: the orders consumer retries {n} times", now=NINE.replace(minute=10 + n))
        for n in range(3)
    ]
    text = (workspace / LOG).read_text()
    assert open_fence(text) == ""
    for note in (first, *later):
        assert note.chunks and memory.expand(note.to_dict()["id"]).content.startswith(f"## {note.chunks[0].heading}")
    headings = [h.markdown_heading for h in memory.headings() if h.source == LOG]
    assert headings == ["2026-12-03", "09:05", "09:10", "09:11", "09:12"]


def test_a_log_left_with_an_open_fence_by_hand_is_closed_before_the_note(workspace: Path, make_memory) -> None:
    log = workspace / LOG
    log.write_text("# 2026-12-03\n\n## 08:00\n\n~~~~sh\nls -la\n")
    memory = make_memory(workspace)
    note = memory.remember("after the fence", now=NINE)
    text = log.read_text()
    assert text.startswith("# 2026-12-03\n\n## 08:00\n\n~~~~sh\nls -la\n~~~~\n\n## 09:05\n\nafter the fence\n")
    assert note.chunks[0].heading == "09:05"


def test_control_characters_are_removed_and_the_day_stays_searchable(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    memory.remember("Deploy runbook: blue green with a canary", heading="Deploy runbook", now=NINE)
    note = memory.remember("bell\x07 nul\x00 escape\x1b[31m tab\tkept\r\nline two", now=NINE.replace(minute=30))
    text, problem = read_text(workspace / LOG)
    assert problem == "" and "\x00" not in text and "\x07" not in text and "\x1b" not in text
    assert "tab\tkept\nline two" in text
    assert memory.search("deploy runbook canary", top_k=1)[0].heading == "Deploy runbook"
    assert "nul" in memory.expand(note.to_dict()["id"]).content


def test_a_note_over_the_cap_is_refused_and_nothing_is_written(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    with pytest.raises(NoteError, match="64 KiB"):
        memory.remember("x" * (MAX_NOTE_BYTES + 1), now=NINE)
    assert not (workspace / LOG).exists()
    clean_note("é" * (MAX_NOTE_BYTES // 2))  # counted in bytes: exactly the cap is fine


def test_a_full_log_continues_in_the_days_next_file(workspace: Path, make_memory) -> None:
    log = workspace / LOG
    log.write_text(
        "# 2026-12-03\n\n## 08:00\n\nearlier note about kafka\n\n"
        + ("filler line\n" * 20)
        + "## big\n\n"
        + ("y" * 80 + "\n") * ((MAX_FILE_BYTES - 4000) // 81)
    )
    memory = make_memory(workspace)
    memory.index()
    note = memory.remember("z" * 60_000, now=NINE)
    assert note.source == "memory/2026-12-03.2.md" and log_date(note.source) == "2026-12-03"
    assert log.stat().st_size <= MAX_FILE_BYTES
    assert memory.expand(note.to_dict()["id"]) is not None
    assert memory.search("earlier note about kafka", top_k=1)[0].source == LOG  # the first file stays indexed


def test_notes_of_a_minute_in_the_days_two_files_have_distinct_headings_and_recent_order(
    workspace: Path, make_memory
) -> None:
    """Audit RC: the note after one that overflowed to `.2.md` went back to the first log under the same `## 09:05`
    heading, and `recent` gave the earlier note first. Headings are distinct across the day's files, and `recent`
    gives the last note first."""
    from memsearch_lsp.core.recall import recent_notes

    log = workspace / LOG
    log.write_text("# 2026-12-03\n\n## 09:05\n\nfirst note\n\n## big\n\n" + ("y" * 80 + "\n") * 12_900)
    memory = make_memory(workspace)
    memory.index()
    before = log.read_bytes()
    over = memory.remember("w" * 30_000, now=NINE)  # (does not fit: 1 MiB)
    after = memory.remember("the last note of the morning", now=NINE)  # (fits: the day's log again)
    assert (over.source, after.source) == ("memory/2026-12-03.2.md", LOG)
    more = (workspace / "memory" / "2026-12-03.2.md").read_text()
    assert [line for line in more.split("\n") if line.startswith("## ")] == ["## 09:05 (2)"], more[:300]
    assert log.read_bytes().startswith(before) and "\n## 09:05 (3)\n" in log.read_text()
    notes = recent_notes(memory, days=1, today=NINE.date())
    assert notes[0].content.endswith("the last note of the morning"), [n.content[:30] for n in notes]


def test_a_log_with_as_many_sections_as_are_indexed_continues_in_the_days_next_file(
    workspace: Path, make_memory
) -> None:
    """Audit K, 1: a log of short notes reaches MAX_FILE_CHUNKS sections long before 1 MiB; the indexer keeps only
    that many of a file, so a note written after them got an id that nothing could find, expand or forget."""
    log = workspace / LOG
    notes = (f"## 08:{n % 60:02d} ({n})\n\ntool call {n} ok\n\n" for n in range(MAX_FILE_CHUNKS - 1))
    text = "# 2026-12-03\n\n" + "".join(notes)  # the day's heading is a section too
    log.write_text(text)
    assert len(chunk_markdown(text, LOG)) == MAX_FILE_CHUNKS and len(text) < MAX_FILE_BYTES // 2
    memory = make_memory(workspace)
    memory.index()
    note = memory.remember("the prod database password rotates on fridays, owner is dana", now=NINE)
    assert note.source == "memory/2026-12-03.2.md" and log.read_text() == text
    assert "owner is dana" in memory.expand(note.to_dict()["id"]).content
    assert memory.search("prod database password rotates", top_k=1)[0].source == note.source


def test_a_log_that_reads_as_binary_is_left_alone(workspace: Path, make_memory) -> None:
    log = workspace / LOG
    log.write_bytes(b"# 2026-12-03\n\n## 08:00\n\nold \x00\xff note\n")
    memory = make_memory(workspace)
    note = memory.remember("a fresh note", now=NINE)
    assert note.source == "memory/2026-12-03.2.md"
    assert log.read_bytes() == b"# 2026-12-03\n\n## 08:00\n\nold \x00\xff note\n"


def test_a_log_that_cannot_be_read_continues_in_the_days_next_file(workspace: Path, make_memory, monkeypatch) -> None:
    """As the README says for a full log: a log this user may not read (mode 000, another user's) got the raw
    PermissionError and no note; MEMORY.md refuses the note, naming why. (Root reads any file: the refusal is
    simulated.)"""
    (workspace / LOG).write_text("# 2026-12-03\n\n## 08:00\n\nsomeone else's note\n")
    real = read_text

    def refused(path: Path) -> tuple[str, str]:
        if path.name in ("2026-12-03.md", "MEMORY.md"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr("memsearch_lsp.core.notes.read_text", refused)
    memory = make_memory(workspace)
    assert memory.remember("We chose Kafka for the event bus", now=NINE).source == "memory/2026-12-03.2.md"
    with pytest.raises(NoteError, match="cannot be read"):
        memory.remember("Always use UTC in logs", now=NINE, long_term=True)


def test_a_fifo_as_todays_log_is_refused_at_once(workspace: Path, make_memory) -> None:
    os.mkfifo(workspace / LOG)
    memory = make_memory(workspace)
    with pytest.raises(NoteError, match="not a regular file"):
        memory.remember("hello", now=NINE)
    assert not (workspace / "memory" / "2026-12-03.2.md").exists()


def test_notes_in_the_same_minute_get_distinct_headings(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    ids = [memory.remember(f"note {n}", now=NINE) for n in range(3)]
    assert [n.chunks[0].heading for n in ids] == ["09:05", "09:05 (2)", "09:05 (3)"]
    assert [n.to_dict()["heading"] for n in ids] == ["note 0 (09:05)", "note 1 (09:05)", "note 2 (09:05)"]
    assert len({n.to_dict()["id"] for n in ids}) == 3


def test_long_term_facts_go_to_their_section_of_memory_md(workspace: Path, make_memory) -> None:
    memory_md = workspace / "memory" / "MEMORY.md"
    original = memory_md.read_text()
    memory = make_memory(workspace)
    first = memory.remember("Alice owns the release train", heading="Release rules", long_term=True, now=NINE)
    second = memory.remember("Bob reviews every migration", heading="release RULES", long_term=True, now=NINE)
    assert "Bob reviews" in memory.expand(second.to_dict()["id"]).content
    bullet = memory.remember("Carol prefers squash merges", heading="Preferences", long_term=True, now=NINE)
    text = memory_md.read_text()
    assert text.startswith(original.rstrip("\n"))  # what a human wrote stays as written
    assert text.count("## Release rules") == 1 and text.count("## Preferences") == 1
    assert "## Release rules\n\nAlice owns the release train\n\nBob reviews every migration\n" in text
    assert "\n- Carol prefers squash merges\n" in text  # a one-line fact joins a bullet list as a bullet
    assert bullet.chunks[0].heading == "Preferences"
    assert first.source == second.source == "memory/MEMORY.md"
    assert "Carol prefers" in memory.expand(bullet.to_dict()["id"]).content


def test_a_long_term_fact_joins_an_existing_section_in_the_middle(workspace: Path, make_memory) -> None:
    memory_md = workspace / "memory" / "MEMORY.md"
    memory_md.write_text("# Memory\n\n## Team\n\n- Alice: backend\n- Bob: infra\n\n## Redis\n\nTTL 300 s\n")
    memory = make_memory(workspace)
    note = memory.remember("Carol: frontend", heading="Team", long_term=True, now=NINE)
    assert memory_md.read_text() == (
        "# Memory\n\n## Team\n\n- Alice: backend\n- Bob: infra\n- Carol: frontend\n\n## Redis\n\nTTL 300 s\n"
    )
    assert "Carol" in memory.expand(note.to_dict()["id"]).content


def run_cli(ws: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`memsearch-lsp remember ARGS` at 09:05 on 2026-12-03."""
    return cli(ws, "remember", *args, stdin=stdin, env={"MEMSEARCH_NOW": "2026-12-03T09:05"})


def test_the_cli_refuses_a_huge_note_with_exit_1_and_writes_nothing(workspace: Path) -> None:
    done = run_cli(workspace, "-", "--json", stdin="x" * (MAX_NOTE_BYTES + 10))
    assert done.returncode == 1 and "64 KiB" in json.loads(done.stdout)["error"]["message"]  # --json: on stdout
    assert not (workspace / LOG).exists()


def test_the_cli_remembers_after_a_cut_fence_and_records_long_term_facts(workspace: Path) -> None:
    first = run_cli(workspace, "-", "--json", stdin=cut_answer())
    second = run_cli(workspace, "--json", "second", "note")
    fact = run_cli(workspace, "--json", "--long-term", "--heading", "Deploys", "deploys freeze on Fridays")
    assert (first.returncode, second.returncode, fact.returncode) == (0, 0, 0), second.stderr + fact.stderr
    assert json.loads(second.stdout)["heading"] == "second note (09:05)"  # (`## 09:05 (2)`, shown as a hit shows it)
    assert "## 09:05 (2)\n\nsecond note\n" in (workspace / LOG).read_text()
    assert json.loads(fact.stdout)["source"] == "memory/MEMORY.md"
    assert "## Deploys\n\ndeploys freeze on Fridays\n" in (workspace / "memory" / "MEMORY.md").read_text()


def test_a_note_the_disk_cannot_take_leaves_nothing_behind_and_names_the_file(workspace: Path) -> None:
    """A full disk (here a file size limit, the same failure on write: EFBIG as ENOSPC) left a new log empty, or a
    note cut in half, and said only `OSError: [Errno 28]`: the next note lost the day's title. A failed write now
    leaves the log as it was (a file it created is removed) and the message names the file and the cause."""
    limit = ("sh", "-c", 'ulimit -f 1; trap "" XFSZ; exec "$@"', "sh")  # files stop at 512 bytes
    note = "fullword " * 80
    for before in (None, "# 2026-12-03\n\n## 08:00\n\nfirst note\n"):
        if before is not None:
            (workspace / LOG).write_text(before)
        done = cli(workspace, "remember", note, prefix=limit, env={"MEMSEARCH_NOW": "2026-12-03T09:05"})
        assert done.returncode == 1 and f"cannot write {workspace / LOG}" in done.stderr, done.stderr
        assert "file size limit" in done.stderr and "nothing was written" in done.stderr, done.stderr
        assert (workspace / LOG).read_text() == before if before else not (workspace / LOG).exists()
    assert run_cli(workspace, "a note once there is room").returncode == 0
    assert (workspace / LOG).read_text().startswith("# 2026-12-03\n\n## 08:00\n\nfirst note\n\n## 09:05")


def test_a_memory_folder_that_is_a_file_refuses_the_note_naming_it(tmp_path: Path, make_memory) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".memsearch.toml").write_text("")
    (ws / "memory").write_text("not a folder")
    memory = make_memory(ws)
    for long_term in (False, True):
        with pytest.raises(NoteError, match="memory is not a folder"):
            memory.remember("We chose Kafka", now=NINE, long_term=long_term)
    assert (ws / "memory").read_text() == "not a folder"
