"""Finding memory files: what a walk over a tree of notes, links and odd entries returns."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from memsearch_lsp.config import Config, MemoryConfig
from memsearch_lsp.core.files import find_memory_files, read_text


def test_the_walk_checks_links_and_keeps_plain_files(tmp_path: Path) -> None:
    """Plain files are taken by name; each link is resolved and kept only inside the workspace; symlinked
    folders are not followed; what is not a regular file is reported."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "memory" / "deep" / "deeper").mkdir(parents=True)
    (ws / "notes-real").mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n")
    (ws / "notes-real" / "kept.md").write_text("# Kept\n")
    (ws / "memory" / "a.md").write_text("# A\n")
    (ws / "memory" / "deep" / "deeper" / "b.markdown").write_text("# B\n")
    (ws / "memory" / "skip.txt").write_text("not markdown")
    (ws / "memory" / "inside-link.md").symlink_to(ws / "notes-real" / "kept.md")
    (ws / "memory" / "outside-link.md").symlink_to(outside / "secret.md")
    (ws / "memory" / "outside-link.txt").symlink_to(outside / "secret.md")
    (ws / "memory" / "broken.md").symlink_to(ws / "missing.md")
    (ws / "memory" / "folder-link").symlink_to(outside, target_is_directory=True)
    (ws / "memory" / "loop").symlink_to(ws / "memory", target_is_directory=True)
    os.mkfifo(ws / "memory" / "pipe.md")
    (ws / "MEMORY.md").symlink_to(ws / "notes-real" / "kept.md")

    found, skipped = find_memory_files(ws, Config(memory=MemoryConfig(paths=("memory", "MEMORY.md"))))
    assert [(f.source, f.path) for f in found] == [
        ("MEMORY.md", ws.resolve() / "MEMORY.md"),
        ("memory/a.md", ws.resolve() / "memory" / "a.md"),
        ("memory/deep/deeper/b.markdown", ws.resolve() / "memory" / "deep" / "deeper" / "b.markdown"),
        ("memory/inside-link.md", ws.resolve() / "memory" / "inside-link.md"),
    ]
    reasons = {s.source: s.reason for s in skipped}
    # (a .txt is no memory file; each skipped file named by its path in the workspace, as `index --json` shows it)
    assert set(reasons) == {"memory/outside-link.md", "memory/broken.md", "memory/pipe.md"}
    assert "resolves outside the workspace" in reasons["memory/outside-link.md"]
    assert "not a regular file" in reasons["memory/broken.md"] and "not a regular file" in reasons["memory/pipe.md"]


def test_a_memory_folder_reached_through_a_link_inside_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "real").mkdir(parents=True)
    (ws / "real" / "n.md").write_text("# N\n")
    (ws / "memory").symlink_to(ws / "real", target_is_directory=True)
    found, skipped = find_memory_files(ws, Config())
    assert [f.source for f in found] == ["memory/n.md"] and skipped == []

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.md").write_text("# X\n")
    (ws / "memory").unlink()
    (ws / "memory").symlink_to(elsewhere, target_is_directory=True)
    found, skipped = find_memory_files(ws, Config())
    assert found == [] and skipped and "outside the workspace" in skipped[0].reason


def test_a_memory_folder_that_cannot_be_listed_or_is_a_file_is_said_never_taken_for_empty(
    tmp_path: Path, monkeypatch
) -> None:
    """`chmod 000 memory` emptied the index without a word (search: no hits, exit 0), and a `memory` that is a
    plain file gave silence: both are skipped with a reason the index pass reports. (Root lists any folder: the
    refusal is simulated.)"""
    (tmp_path / "memory" / "private").mkdir(parents=True)
    (tmp_path / "memory" / "private" / "2026-01-01.md").write_text("# 2026-01-01\n")
    (tmp_path / "memory" / "2026-01-02.md").write_text("# 2026-01-02\n")
    real = os.scandir

    def refused(path: Any = ".") -> Any:
        if str(path).endswith("private"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", refused)
    files, skipped = find_memory_files(tmp_path, Config())
    assert [f.source for f in files] == ["memory/2026-01-02.md"]
    assert [(s.source, s.reason) for s in skipped] == [
        ("memory/private", "its files cannot be listed (Permission denied)")
    ]
    monkeypatch.undo()
    shutil.rmtree(tmp_path / "memory")
    (tmp_path / "memory").write_text("not a folder")
    files, skipped = find_memory_files(tmp_path, Config())
    assert files == [] and [s.source for s in skipped] == ["memory"] and "not a folder" in skipped[0].reason


def test_a_memory_path_that_is_not_there_is_said(tmp_path: Path) -> None:
    """MEMSEARCH_MEMORY_PATHS='["memory"]' (a comma list is wanted) indexed nothing, without a word, and every file
    indexed before left the index."""
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "a.md").write_text("# A\n")
    found, skipped = find_memory_files(tmp_path, Config(memory=MemoryConfig(paths=("memory", '["memory"]'))))
    assert [f.source for f in found] == ["memory/a.md"]
    assert [(s.source, s.reason) for s in skipped] == [('["memory"]', "not found (memory.paths names it)")]


def test_a_file_decoded_with_replacement_keeps_no_byte_order_mark(tmp_path: Path) -> None:
    """(audit R, 7) utf-8-sig drops the mark; the replacement decoding of a file with a byte that is not UTF-8 kept
    it."""
    path = tmp_path / "bom.md"
    path.write_bytes(b"\xef\xbb\xbf# Caf\xe9 notes\n")
    assert read_text(path) == ("# Caf\ufffd notes\n", "invalid UTF-8 at byte 5, decoded with replacement")


@pytest.mark.parametrize(
    "data",
    [
        b"# Notes\n\nplain\x00text\n",
        b"\xef\xbb\xbf# Notes\n\nplain\x00text\n",  # a byte order mark
        b"# N\nx\x00\n" + b"x" * 8184 + "\u65e5\u672c\n".encode(),  # its first 8 KiB end inside a character
        b"## a\nx\x00y\n\x1b[1mbold\x1b[0m\f\n",  # with ESC and a form feed, as text may hold
    ],
)
def test_text_with_a_stray_nul_reads_as_text(tmp_path: Path, data: bytes) -> None:
    """(issue 13, 2) a NUL in a file's first 8 KiB made it binary, left out of the index: text with a stray NUL is
    read as it is (the parser reads U+0000 as U+FFFD); tests/integration/test_nul_text.py has the binary files."""
    path = tmp_path / "n.md"
    path.write_bytes(data)
    assert read_text(path) == (data.decode("utf-8-sig"), "")
