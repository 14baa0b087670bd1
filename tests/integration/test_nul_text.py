"""A Markdown file with a stray NUL byte is text (issue 13, 2): it is indexed, found, remembered into, forgotten from
and compacted, its NULs read as U+FFFD by the parser (CommonMark) and kept byte for byte by every write; a binary
file (a PNG, a zip, UTF-16 text named .md) is still left out, with the reason."""

from __future__ import annotations

import datetime as dt
import zlib
from pathlib import Path

from memsearch_lsp.core.compact.plan import apply_plan, plan_compaction
from tests.helpers import FEB18

NINE = dt.datetime(2026, 12, 3, 9, 5)
LOG = "memory/2026-12-03.md"
NUL_LOG = b"# 2026-12-03\n\n## 08:00\n\nx\x00\n\n## 08:30\n\nsecond heading text about quokkas\n"


def test_a_file_with_a_stray_nul_is_indexed_and_found(workspace: Path, make_memory) -> None:
    (workspace / "memory" / "nul.md").write_bytes(b"# 0\nx\x00\n# 1\nsecond heading text about quokkas\n")
    memory = make_memory(workspace)
    stats = memory.index()
    assert "memory/nul.md" not in {s.source for s in [*stats.skipped, *stats.warnings]}
    hits = memory.search("quokkas", vector_weight=0.0)
    assert [(h.source, h.heading, h.start_line) for h in hits[:1]] == [("memory/nul.md", "1", 3)]
    first = next(h for h in memory.headings() if h.source == "memory/nul.md" and h.heading == "0")
    expanded = memory.expand(first.id)
    assert expanded is not None and expanded.content == "# 0\nx\x00"  # (the text as written: one character)


def _png() -> bytes:
    head = b"\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00"
    return b"\x89PNG\r\n\x1a\n" + head + zlib.crc32(head[4:]).to_bytes(4, "big") + zlib.compress(b"\x00\xff\x00\x00")


BINARY = {
    "png.md": _png(),
    "zip.md": b"PK\x03\x04\x14\x00\x00\x00\x08\x00"
    + zlib.compress(b"notes about quokkas" * 50)
    + b"PK\x05\x06"
    + bytes(18),
    "utf16.md": "# Quokkas\n\nnotes about quokkas in UTF-16\n".encode("utf-16-le"),
    "utf16-bom.md": "# Quokkas\n\nnotes about quokkas in UTF-16\n".encode("utf-16"),
    "utf32.md": "# Quokkas\n\nnotes about quokkas\n".encode("utf-32-le"),
    "zeros.md": bytes(4096),
    "small-ints.md": bytes(range(1, 9)) * 64 + b"\x00",
    "soh.md": b"\x00\x01 not text, though UTF-8",
    "utf16-cyrillic.md": "# \u041f\u0440\u0438\u0432\u0435\u0442\n".encode("utf-16-le"),
}


def test_a_binary_file_is_still_left_out_with_the_reason(workspace: Path, make_memory) -> None:
    for name, data in BINARY.items():
        (workspace / "memory" / name).write_bytes(data)
    memory = make_memory(workspace)
    stats = memory.index()
    reasons = {s.source: s.reason for s in stats.skipped}
    assert {name: reasons.get(f"memory/{name}") for name in BINARY} == dict.fromkeys(
        BINARY, "binary file (contains NUL bytes)"
    )
    assert not any(h.source.removeprefix("memory/") in BINARY for h in memory.search("quokkas", min_score=0.0))


def test_remember_and_forget_keep_a_nul_byte_for_byte(workspace: Path, make_memory) -> None:
    """The log took no note before (read as binary, the note went to the day's next file): now the note goes into
    it, and forgetting notes (the one with the NUL too) writes every other byte back as it was."""
    log = workspace / LOG
    log.write_bytes(NUL_LOG)
    memory = make_memory(workspace)
    memory.index()
    note = memory.remember("a fresh note about wombats", now=NINE)
    assert (note.source, log.read_bytes()) == (LOG, NUL_LOG + b"\n## 09:05\n\na fresh note about wombats\n")
    with_nul = next(h for h in memory.headings() if h.source == LOG and h.markdown_heading == "08:00")
    memory.forget(with_nul.id)
    assert log.read_bytes() == NUL_LOG.replace(b"## 08:00\n\nx\x00\n\n", b"") + (
        b"\n## 09:05\n\na fresh note about wombats\n"
    )
    memory.forget(note.to_dict()["id"])
    assert log.read_bytes() == NUL_LOG.replace(b"## 08:00\n\nx\x00\n\n", b"")


def test_a_fact_goes_into_a_memory_md_with_a_nul_and_out_again(workspace: Path, make_memory) -> None:
    """A section insertion rewrites the whole file: it did not take the fact (read as binary); now it writes the
    NUL back as the byte it was."""
    memory_md = workspace / "memory" / "MEMORY.md"
    before = b"# Long-term memory\n\n## Notes\n\n- keep \x00 me\n\n## People\n\n- Bob\n"
    memory_md.write_bytes(before)
    memory = make_memory(workspace)
    memory.index()
    fact = memory.remember("new fact banana", heading="Notes", long_term=True, now=NINE)
    assert fact.source == "memory/MEMORY.md"
    assert memory_md.read_bytes() == before.replace(b"me\n", b"me\n- new fact banana\n")
    memory.forget(fact.to_dict()["id"], line=fact.to_dict()["start_line"])
    assert memory_md.read_bytes() == before


def test_an_old_log_with_a_nul_is_compacted_and_archived_as_it_was(workspace: Path, make_memory) -> None:
    old = workspace / "memory" / "2026-02-08.md"
    old.write_bytes(b"# 2026-02-08\n\n## a\n\n- Decision: we keep the cache warm\x00 on Mondays\n")
    memory = make_memory(workspace)
    plan = plan_compaction(memory, today=FEB18)
    assert plan.skipped == ()
    move = next(m for m in plan.archive if m.src == "memory/2026-02-08.md")
    apply_plan(memory, plan)
    assert (
        workspace / move.dst
    ).read_bytes() == b"# 2026-02-08\n\n## a\n\n- Decision: we keep the cache warm\x00 on Mondays\n"
