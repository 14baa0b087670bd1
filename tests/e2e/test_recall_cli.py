"""`recent` (the last days' notes, MEMORY.md and the newest summary first for a session) and `warm` (an index
owner kept for later commands, gone after its idle time): the CLI side of the agent loop (issue 25)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memsearch_lsp.core.process.owner import pid_alive, read_record
from memsearch_lsp.core.recall import RECENT_CHARS


def cli(ws: Path, *args: str, now: str = "2026-02-17T18:00") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSEARCH_")}
    env["MEMSEARCH_NOW"] = now
    return subprocess.run(
        [sys.executable, "-m", "memsearch_lsp", *args, "--workspace", str(ws)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_recent_gives_the_last_days_notes_newest_first(workspace: Path) -> None:
    done = cli(workspace, "recent", "--days", "2", "--json")
    assert done.returncode == 0, done.stderr
    notes = json.loads(done.stdout)["notes"]
    assert {n["source"] for n in notes} == {"memory/2026-02-17.md", "memory/2026-02-16.md"}
    assert notes[0]["source"] == "memory/2026-02-17.md" and notes[-1]["source"] == "memory/2026-02-16.md"
    assert set(notes[0]) == {"id", "source", "heading", "start_line", "end_line", "date", "kind", "content"}
    assert all(n["kind"] == "daily" and n["date"] in ("2026-02-16", "2026-02-17") for n in notes)
    text = (workspace / notes[0]["source"]).read_text().split("\n")
    assert "\n".join(text[notes[0]["start_line"] - 1 : notes[0]["end_line"]]) == notes[0]["content"]


def test_recent_for_a_session_puts_memory_md_and_the_newest_summary_first(workspace: Path) -> None:
    (workspace / "memory" / "summary-2026-W05.md").write_text("# Summary 2026-W05\n\n- old\n")
    (workspace / "memory" / "summary-2026-W06.md").write_text("# Summary 2026-W06\n\n- Decision: newest\n")
    notes = json.loads(cli(workspace, "recent", "--session", "--json").stdout)["notes"]
    kinds = [n["kind"] for n in notes]
    assert kinds == sorted(kinds, key=["long-term", "summary", "daily"].index)
    summaries = [n["content"] for n in notes if n["kind"] == "summary"]
    assert summaries == ["# Summary 2026-W06\n\n- Decision: newest"]
    assert [n["date"] for n in notes if n["kind"] == "summary"] == ["2026-02-02"]  # its period's first day
    assert notes[0]["source"] == "memory/MEMORY.md" and notes[0]["date"] is None
    small = json.loads(cli(workspace, "recent", "--session", "--chars", "400", "--json").stdout)["notes"]
    assert sum(len(n["content"]) for n in small) <= 400 and small[0]["source"] == "memory/MEMORY.md"
    many = "\n\n".join(f"## {n}\n\n" + "a long captured turn; " * 100 for n in range(20))  # (audit B, 10)
    (workspace / "memory" / "2026-02-15.md").write_text(f"# 2026-02-15\n\n{many}\n")
    bounded = json.loads(cli(workspace, "recent", "--days", "400", "--json").stdout)["notes"]
    assert 0 < sum(len(n["content"]) for n in bounded) <= RECENT_CHARS < len(many)  # the bound MCP's is by default
    bad = cli(workspace, "recent", "--days", "0")
    assert bad.returncode == 1 and "at least 1" in bad.stderr
    # a heading alone (an empty section) says nothing: never a note, however small the budget
    with (workspace / "memory" / "2026-02-17.md").open("a") as log:
        log.write("\n## Later\n")
    every = json.loads(cli(workspace, "recent", "--session", "--json").stdout)["notes"]
    assert not [n for n in every if n["content"].strip() == "## Later"]


def test_recent_within_a_budget_never_gives_an_older_note_while_a_newer_one_is_left_out(workspace: Path) -> None:
    """(audit J, 7) `--chars` skipped a newer note that did not fit and went on to older ones: an agent shown the
    morning's note without the afternoon's took it for the current state. The first day's note that does not fit
    ends the list (a MEMORY.md section left out still lets the next have its turn)."""
    (workspace / "memory" / "2026-02-18.md").write_text(
        "# 2026-02-18\n\n## 09:00 Morning\n\nThe import job uses the v1 API.\n\n"
        f"## 13:00 Migration\n\n{'Moved the import job to the v2 API, table by table. ' * 20}\n\n"
        "## 17:00 Evening\n\nThe v2 import job ran green overnight.\n"
    )
    now = "2026-02-18T18:00"
    every = json.loads(cli(workspace, "recent", "--days", "1", "--json", now=now).stdout)["notes"]
    assert [n["heading"] for n in every] == ["17:00 Evening", "13:00 Migration", "09:00 Morning"]
    small = json.loads(cli(workspace, "recent", "--days", "1", "--chars", "300", "--json", now=now).stdout)["notes"]
    assert [n["heading"] for n in small] == ["17:00 Evening"]  # not the morning's v1 without the migration
    (workspace / "memory" / "MEMORY.md").write_text(
        f"# Project Memory\n\n## Team\n\nDana leads the backend.\n\n## History\n\n{'A long story. ' * 40}\n\n"
        "## Conventions\n\nUse UTC everywhere.\n"
    )
    session = cli(workspace, "recent", "--session", "--days", "1", "--chars", "300", "--json", now=now)
    assert [n["heading"] for n in json.loads(session.stdout)["notes"]] == ["Team", "Conventions", "17:00 Evening"]


def test_a_first_note_over_the_budget_is_cut_at_a_word_when_its_paragraph_is_one_line(workspace: Path) -> None:
    """(audit H, 6) The first note over `--chars` was cut at a line end, so a section whose paragraph is one long
    line was given as its heading alone; and nothing else was given after a cut note, however much room it left."""
    now = "2026-02-18T18:00"
    (workspace / "memory" / "2026-02-18.md").write_text("# 2026-02-18\n\n## 17:00 Evening\n\nThe v2 import ran.\n")
    story = "The orders service talks to Kafka topic orders.v2 through the outbox relay. " * 60  # one line
    (workspace / "memory" / "MEMORY.md").write_text(f"# Project Memory\n\n## Architecture\n\n{story}\n")
    notes = json.loads(
        cli(workspace, "recent", "--session", "--days", "1", "--chars", "1000", "--json", now=now).stdout
    )
    (first,) = notes["notes"]
    assert first["content"].startswith("## Architecture\n\nThe orders service talks to Kafka"), first
    assert first["content"].endswith("…") and 900 <= len(first["content"]) <= 1000, first
    history = "A line of the history of the project, kept as it was written. " * 5  # 315 characters
    (workspace / "memory" / "MEMORY.md").write_text(
        f"# Project Memory\n\n## History\n\n{history}\n{story[:400]}\n\n## Conventions\n\nUse UTC everywhere.\n"
    )
    session = cli(workspace, "recent", "--session", "--days", "1", "--chars", "600", "--json", now=now)
    given = json.loads(session.stdout)["notes"]
    assert [n["heading"] for n in given] == ["History", "Conventions", "17:00 Evening"], given
    assert given[0]["content"] == f"## History\n\n{history}\n…"


def test_a_day_split_over_two_parts_is_given_by_the_time_of_its_notes(workspace: Path) -> None:
    """(audit M1, 2) `remember` goes on in `YYYY-MM-DD.2.md` while the day's log is full or open unsaved, and back
    after: the day's notes interleave over two files, and `recent` gave the part's 09:00 note before the log's 17:00
    one (and `--chars` the 09:00 one alone)."""
    (workspace / "memory" / "2026-02-18.md").write_text(
        "# 2026-02-18\n\n## 08:00\n\nFirst note of the day.\n\n## Pasted\n\nA paste.\n\n## 17:00\n\nThe newest note.\n"
    )
    (workspace / "memory" / "2026-02-18.2.md").write_text(
        "# 2026-02-18\n\n## 09:00\n\nA note while the log was full.\n"
    )
    now = "2026-02-18T18:00"
    every = json.loads(cli(workspace, "recent", "--days", "1", "--json", now=now).stdout)["notes"]
    assert [(n["source"][-7:], n["heading"]) for n in every] == [
        ("2-18.md", "The newest note. (17:00)"),  # (a bare time named by its first line, as a search hit)
        ("18.2.md", "A note while the log was full. (09:00)"),
        ("2-18.md", "Pasted"),
        ("2-18.md", "First note of the day. (08:00)"),
    ]
    small = json.loads(cli(workspace, "recent", "--days", "1", "--chars", "60", "--json", now=now).stdout)["notes"]
    assert [n["heading"] for n in small] == ["The newest note. (17:00)"]
    # (review N, 7) `remember --heading` writes no time: first in its part, it goes with the next note there; and a
    # file keeps its own order (a 12-hour time after a 24-hour one)
    (workspace / "memory" / "2026-02-18.md").write_text("# 2026-02-18\n\n## 09:00\n\nA.\n\n## 11:00\n\nB.\n")
    (workspace / "memory" / "2026-02-18.2.md").write_text(
        "# 2026-02-18\n\n## Kafka decision\n\nKafka it is.\n\n## 1:30 PM standup\n\nC.\n"
    )
    every = json.loads(cli(workspace, "recent", "--days", "1", "--json", now=now).stdout)["notes"]
    assert [n["heading"] for n in every] == ["1:30 PM standup", "Kafka decision", "B. (11:00)", "A. (09:00)"]
    (workspace / "memory" / "2026-02-18.2.md").unlink()  # (review P, 4) a log written newest first stays so
    (workspace / "memory" / "2026-02-18.md").write_text(
        "# 2026-02-18\n\n## 17:00 wrap-up\n\nA.\n\n## 09:00 standup\n\nB.\n"
    )
    every = json.loads(cli(workspace, "recent", "--days", "1", "--json", now=now).stdout)["notes"]
    assert [n["heading"] for n in every] == ["17:00 wrap-up", "09:00 standup"]


@pytest.mark.model
def test_warm_serves_later_commands_then_leaves_when_idle(workspace: Path) -> None:
    started = cli(workspace, "warm", "--detach", "--idle", "4", "--json")
    assert started.returncode == 0, started.stderr
    pid = json.loads(started.stdout)["pid"]
    deadline = time.monotonic() + 120
    while (read_record(workspace.resolve()) or {}).get("pid") != pid:
        assert time.monotonic() < deadline and pid_alive(pid), "the warm owner never served"
        time.sleep(0.1)
    status = cli(workspace, "status", "--json")
    assert json.loads(status.stdout)["served_by_pid"] == pid
    again = cli(workspace, "warm", "--idle", "4", "--json")  # an owner runs: a second one leaves at once
    assert json.loads(again.stdout) == {"served": False}
    detached = cli(workspace, "warm", "--detach", "--idle", "4", "--json")  # ... and none is started: says who serves
    assert json.loads(detached.stdout) == {"pid": pid, "idle_s": 4.0, "running": True}
    deadline = time.monotonic() + 60
    while pid_alive(pid):
        assert time.monotonic() < deadline, "the warm owner did not leave when idle"
        time.sleep(0.2)
    assert read_record(workspace.resolve()) is None


@pytest.mark.model
def test_a_warm_owner_sent_sigterm_cleans_up_and_its_idle_time_is_a_setting(workspace: Path) -> None:
    (workspace / ".memsearch.toml").write_text("[warm]\nidle_s = 900\n")
    started = cli(workspace, "warm", "--detach", "--json")  # no --idle: the setting's
    assert started.returncode == 0, started.stderr
    answer = json.loads(started.stdout)
    pid = answer["pid"]
    assert answer["idle_s"] == 900
    record, sock = workspace / ".memsearch" / "server.json", workspace / ".memsearch" / "server.sock"
    deadline = time.monotonic() + 120
    while (read_record(workspace.resolve()) or {}).get("pid") != pid:
        assert time.monotonic() < deadline and pid_alive(pid), "the warm owner never served"
        time.sleep(0.1)
    assert record.exists() and sock.exists()
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while pid_alive(pid):
        assert time.monotonic() < deadline, "the warm owner did not leave on SIGTERM"
        time.sleep(0.1)
    assert not record.exists() and not sock.exists()


def test_a_sigterm_that_lands_while_the_owner_waits_never_hangs_it(workspace: Path) -> None:
    """The handler set a threading.Event that the interrupted main thread was waiting on, holding its lock: a
    SIGTERM landing then hung `warm` for good (seen once in CI). Polled without pause, the old loop held that lock
    nearly all the time; the owner still leaves at once."""
    assert cli(workspace, "index").returncode == 0
    code = (
        "import sys; from memsearch_lsp.core.process.door import serve_until_idle; "
        "serve_until_idle(sys.argv[1], 600, poll_s=0)"
    )
    owner = subprocess.Popen([sys.executable, "-c", code, str(workspace)], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while (read_record(workspace.resolve()) or {}).get("pid") != owner.pid:
            assert time.monotonic() < deadline and owner.poll() is None, "the owner never served"
            time.sleep(0.1)
        time.sleep(0.5)
        owner.send_signal(signal.SIGTERM)
        assert owner.wait(30) == 0
        assert not (workspace / ".memsearch" / "server.json").exists()
    finally:
        owner.kill()
        owner.wait()


@pytest.mark.parametrize("chars", [60, 150, 200])
def test_a_first_note_over_a_small_budget_is_cut_not_left_out(workspace: Path, chars: int) -> None:
    """(audit Z4, 7) `--chars` under ~200 gave no note at all, though a first note longer than N is cut."""
    note = "Rollback finished; the root cause was a bad migration in the orders table, fixed in PR 812. " * 3
    (workspace / "memory" / "2026-02-18.md").write_text(f"# 2026-02-18\n\n## 17:00\n\n{note}\n")
    done = cli(workspace, "recent", "--days", "1", "--chars", str(chars), "--json", now="2026-02-18T18:00")
    (first,) = json.loads(done.stdout)["notes"]
    assert first["content"].startswith("## 17:00\n\nRollback finished;") and first["content"].endswith("…"), first
    assert len(first["content"]) <= chars
