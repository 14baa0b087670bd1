"""remember() and forget() keep every byte a person wrote: a byte order mark, CR or CRLF line ends, blank and
white-space lines at the end, a last line without a line end; forget after remember gives the file back as it was
(README: "what is there stays as written", "every other line of the file is written back byte for byte"); a note
that is not UTF-8 is refused, never written with `?` for its bytes."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

NINE = dt.datetime(2026, 12, 3, 9, 5)
LOG = "memory/2026-12-03.md"
BOM = b"\xef\xbb\xbf"
MEMORY = b"# Long-term memory\n\n## Notes\n\n- keep me\n\n## People\n\n- Bob\n"


def test_a_fact_in_a_middle_section_keeps_the_byte_order_mark(workspace: Path, make_memory) -> None:
    memory_md = workspace / "memory" / "MEMORY.md"
    memory_md.write_bytes(BOM + MEMORY)
    memory = make_memory(workspace)
    fact = memory.remember("new fact banana", heading="Notes", long_term=True, now=NINE)
    assert memory_md.read_bytes() == BOM + MEMORY.replace(b"- keep me\n", b"- keep me\n- new fact banana\n")
    assert fact.chunks[0].heading == "Notes"


@pytest.mark.parametrize("end", ["\r", "\r\n"])
def test_files_of_cr_or_crlf_lines_take_notes_with_their_own_line_ends(workspace: Path, make_memory, end: str) -> None:
    memory_md, log = workspace / "memory" / "MEMORY.md", workspace / LOG
    memory_md.write_bytes(MEMORY.replace(b"\n", end.encode()))
    log.write_bytes(f"# 2026-12-03{end}{end}## 08:00{end}{end}First note.{end}".encode())
    memory = make_memory(workspace)
    fact = memory.remember("a fact\non two lines", heading="Notes", long_term=True, now=NINE)
    note = memory.remember("a note of the day", now=NINE)
    expected = "# Long-term memory\n\n## Notes\n\n- keep me\n\na fact\non two lines\n\n## People\n\n- Bob\n"
    assert memory_md.read_bytes() == expected.replace("\n", end).encode()
    assert log.read_bytes().endswith(f"First note.{end}{end}## 09:05{end}{end}a note of the day{end}".encode())
    assert (fact.chunks[0].heading, note.source, note.chunks[0].heading) == ("Notes", LOG, "09:05")


LOGS = {  # how a person may have left the day's log
    "ends without a line end": b"# 2026-12-03\n\n## 09:00\n\nFirst note.",
    "crlf without a line end": b"# 2026-12-03\r\n\r\n## 09:00\r\n\r\nFirst note.",
    "blank lines at the end": b"# 2026-12-03\n\n## 09:00\n\nFirst note.\n\n\n\n",
    "a white-space line at the end": b"# 2026-12-03\n\n## 09:00\n\nFirst note.\n   \n",
    "cr lines": b"# 2026-12-03\r\r## 09:00\r\rFirst note.\r",
    "a byte order mark": BOM + b"# 2026-12-03\n\n## 09:00\n\nFirst note.\n",
    "only its title, no line end": b"# 2026-12-03",
    "a paragraph without a line end": b"# 2026-12-03\n\n## 09:00\n\nlast para line",
    "empty": b"",
}


def test_forget_after_remember_gives_the_log_back_byte_for_byte(workspace: Path, make_memory) -> None:
    log = workspace / LOG
    log.write_bytes(b"# 2026-12-03\n")
    memory = make_memory(workspace)
    changed = {}
    for name, before in LOGS.items():
        log.write_bytes(before)
        memory.index()
        note = memory.remember("A remembered note about zebras.", heading="zebras", now=NINE)
        assert note.source == LOG, name
        memory.forget(note.to_dict()["id"])
        if log.read_bytes() != before:
            changed[name] = log.read_bytes()
    assert changed == {}


def test_forget_of_a_note_in_the_middle_keeps_the_end_of_the_file(workspace: Path, make_memory) -> None:
    log = workspace / LOG
    log.write_bytes(b"# 2026-12-03\n\n## 09:00\n\nFirst.\n\n## 10:00\n\nSecond.\n\n\n")
    memory = make_memory(workspace)
    memory.index()
    first = next(h for h in memory.headings() if h.markdown_heading == "09:00")
    memory.forget(first.id)
    assert log.read_bytes() == b"# 2026-12-03\n\n## 10:00\n\nSecond.\n\n\n"


def remember_bytes(ws: Path, *args: str | bytes, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """`memsearch-lsp remember ARGS` with bytes as they come from a pipe or a shell (not UTF-8 ones too)."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MEMSEARCH_")},
        "MEMSEARCH_NOW": "2026-12-03T09:05",
    }
    argv = [sys.executable, "-m", "memsearch_lsp", "remember", *args, "--workspace", str(ws)]
    return subprocess.run(argv, input=stdin, capture_output=True, env=env, timeout=300)


def test_a_note_that_is_not_utf8_is_refused_naming_the_byte_and_nothing_is_written(workspace: Path) -> None:
    log = workspace / LOG
    latin1 = "Meeting with René at the café\n".encode("latin-1")
    piped = remember_bytes(workspace, "-", stdin=latin1)
    assert piped.returncode == 1 and b"byte 16 (0xe9)" in piped.stderr and b"UTF-8" in piped.stderr, piped.stderr
    as_json = remember_bytes(workspace, "-", "--json", stdin=latin1)
    error = json.loads(as_json.stdout)["error"]
    assert as_json.returncode == 1 and "byte 16 (0xe9)" in error["message"] and "iconv" in error["message"]
    argument = remember_bytes(workspace, b"caf\xe9 au lait")
    assert argument.returncode == 1 and b"byte 3 (0xe9)" in argument.stderr
    heading = remember_bytes(workspace, "t", "--heading", b"caf\xe9")  # (review H, 3: it was written as "## caf?")
    assert heading.returncode == 1 and b"the heading is not UTF-8 text: byte 3 (0xe9)" in heading.stderr
    assert not log.exists()
    done = remember_bytes(workspace, "-", stdin="Meeting with René at the café\n".encode())
    assert done.returncode == 0 and "René at the café" in log.read_text()
