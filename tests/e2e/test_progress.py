"""Progress on long work as a person at a terminal sees it (a pseudo-terminal), and nothing of it for scripts:
`memsearch-lsp index` of 150 notes with the real model draws a bar that moves (chunks done / total, rate,
time left); with --json, or with its output piped, it prints the result alone."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.model

NOTES = 150
QUIET = 60  # notes for the quiet runs: a bar would show (after 0.2 s: the model loads first) were they not quiet
BAR = re.compile(r"indexing:\s+\d+%\|.*?\|\s*(\d+)/(\d+) \[[^\]]*chunk/s")


def notes(base: Path, count: int = NOTES) -> Path:
    """A workspace of `count` notes, one chunk each."""
    memory = base / "memory"
    memory.mkdir(parents=True)
    topics = ["kafka retention", "redis ttl", "postgres replicas", "deploy windows", "on-call rota", "api limits"]
    for n in range(count):
        topic = topics[n % len(topics)]
        body = " ".join(f"We discussed {topic} (item {n}, part {k}), agreed on step {(n + k) % 7}." for k in range(8))
        (memory / f"note-{n:03d}.md").write_text(f"## Note {n}\n\n{body}\n")  # ~130 tokens, as notes go
    return base


def on_a_terminal(args: list[str], stdout_too: bool = True) -> tuple[int, str, str]:
    """Run the CLI with stderr (and stdout, unless `stdout_too` is False: then a pipe) on a pseudo-terminal:
    (exit status, what the terminal showed, what the pipe got)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "memsearch_lsp", *args],
        stdin=subprocess.DEVNULL,
        stdout=follower if stdout_too else subprocess.PIPE,
        stderr=follower,
        env={**os.environ, "COLUMNS": "120", "TERM": "xterm"},
    )
    os.close(follower)
    shown = b""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                data = os.read(leader, 65536)
            except OSError:  # the follower closed: the process is gone
                break
            if not data:
                break
            shown += data
        elif process.poll() is not None:
            break
    os.close(leader)
    piped = process.stdout.read().decode() if process.stdout else ""
    return process.wait(timeout=60), shown.decode(errors="replace"), piped


def test_index_on_a_terminal_shows_a_moving_bar_and_scripts_get_the_result_alone(tmp_path: Path) -> None:
    ws = notes(tmp_path / "a")
    code, shown, _ = on_a_terminal(["index", "--workspace", str(ws)])
    assert code == 0, shown
    bars = [tuple(map(int, m)) for m in BAR.findall(shown)]
    done = sorted({d for d, _ in bars})
    assert len(done) >= 3 and done[0] < done[-1], shown  # at least three updates, moving forward
    assert {total for _, total in bars} == {NOTES}  # chunks done / the pass's chunks
    assert shown.rstrip("\r\n").rsplit("\r", 1)[-1].startswith(f"+{NOTES} added"), shown  # the bar gone, the result

    # work that takes long enough for a bar (a second or two: the model loads), with --json: the answer alone
    ws = notes(tmp_path / "b", QUIET)
    code, shown, _ = on_a_terminal(["index", "--json", "--workspace", str(ws)])
    assert code == 0 and "chunk/s" not in shown and "\r" not in shown.rstrip("\r\n"), shown
    assert json.loads(shown)["chunks_total"] == QUIET

    # and with its output piped (stderr still a terminal): the result alone on the pipe, no bar anywhere
    ws = notes(tmp_path / "c", QUIET)
    code, shown, piped = on_a_terminal(["index", "--workspace", str(ws)], stdout_too=False)
    assert code == 0 and "chunk/s" not in shown and "chunk/s" not in piped, (shown, piped)
    assert piped.count("\n") == 1 and piped.startswith(f"+{QUIET} added")
