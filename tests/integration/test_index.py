"""Indexer and search on a real Milvus Lite in tmp_path, with the deterministic fake embedder."""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path

from memsearch_lsp.core.chunks import chunk_markdown
from memsearch_lsp.core.embedding import EmbeddingError
from memsearch_lsp.core.index import MAX_FILE_CHUNKS
from tests.fakes import FakeEmbedder
from tests.helpers import document_frequencies, script_section


def test_example_memory_search_ranks_the_right_chunks(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    stats = memory.index()
    assert stats.files_added == 13 and stats.chunks_embedded == stats.chunks_total > 30
    hits = memory.search("Redis cache config")
    assert hits[0].heading == "Redis Caching" and hits[0].source == "memory/MEMORY.md"
    text = (workspace / "memory/MEMORY.md").read_text().split("\n")
    assert text[hits[0].start_line - 1] == "## Redis Caching"
    assert len(hits) == 3 and len(hits[0].snippet) <= 200
    pg = memory.search("PostgreSQL 16", top_k=10)
    ranks = {h.source: i for i, h in enumerate(pg)}
    assert ranks["memory/MEMORY.md"] < ranks["memory/2026-02-04.md"]  # 16 above the log about 15


def test_unchanged_reindex_embeds_nothing(workspace: Path, make_memory, embedder: FakeEmbedder) -> None:
    memory = make_memory(workspace)
    memory.index()
    before = embedder.embedded
    stats = memory.index()
    assert embedder.embedded == before and stats.chunks_embedded == 0 and not stats.changed
    fresh = make_memory(workspace)  # a new process sees the same: nothing to do
    assert fresh.index().chunks_embedded == 0


def test_editing_one_line_in_200_files_reembeds_only_that_chunk(
    tmp_path: Path, make_memory, embedder: FakeEmbedder
) -> None:
    mem = tmp_path / "memory"
    mem.mkdir()
    for i in range(200):
        (mem / f"note-{i:03d}.md").write_text(
            f"# Note {i}\n\nintro {i}\n\n## Alpha\n\nalpha fact {i}\n\n## Beta\n\nbeta fact {i}\n"
        )
    memory = make_memory(tmp_path)
    assert memory.index().chunks_embedded == 600
    path = mem / "note-042.md"
    path.write_text(path.read_text().replace("beta fact 42", "beta fact changed"))
    stats = memory.index()
    assert (stats.files_modified, stats.chunks_embedded, stats.chunks_reused) == (1, 1, 2)
    assert memory.search("changed", top_k=1, vector_weight=0.0)[0].source == "memory/note-042.md"


def test_a_same_size_edit_with_its_mtime_put_back_is_read_again(tmp_path: Path, make_memory) -> None:
    """`cp -p`, `rsync -a`, `touch -r`, a backup restore: the size and mtime are as they were, the ctime is not;
    the next pass (a new process here: the start-up reconcile) reads the file, and only its changed chunk."""
    (tmp_path / "memory").mkdir()
    path = tmp_path / "memory/MEMORY.md"
    path.write_text("# Pets\n\nThe cat is named zorblax.\n\n## Plants\n\nThe fern is green.\n")
    os.utime(path, ns=(1_704_067_200 * 10**9,) * 2)
    time.sleep(1.1)  # (a file changed in the last second is read again anyway)
    assert make_memory(tmp_path).index().files_added == 1
    before = path.stat()
    path.write_text(path.read_text().replace("zorblax", "quimbee"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    memory = make_memory(tmp_path)
    stats = memory.index()
    assert (stats.files_modified, stats.chunks_embedded) == (1, 1)
    assert [h.source for h in memory.search("zorblax", vector_weight=0.0)] == []
    assert memory.search("quimbee", top_k=1, vector_weight=0.0)[0].source == "memory/MEMORY.md"


def test_inserting_a_line_on_top_reuses_moved_chunks(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    memory.index()
    path = workspace / "memory/MEMORY.md"
    path.write_text("# Project Memory\n\nA new first line.\n" + path.read_text().split("\n", 1)[1])
    stats = memory.index()
    assert stats.chunks_embedded == 1 and stats.chunks_reused > 5
    hit = memory.search("Redis cache config", top_k=1)[0]
    assert path.read_text().split("\n")[hit.start_line - 1] == "## Redis Caching"
    fresh = chunk_markdown(path.read_text(), "memory/MEMORY.md", model=memory.embedder.model_name)
    stored = {(c.start_line, c.end_line) for c in fresh}
    assert (hit.start_line, hit.end_line) in stored


def test_deleting_the_index_gives_the_same_results(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    memory.index()
    before = [(h.id, h.source) for h in memory.search("Kafka RabbitMQ decision", top_k=5)]
    memory.close()
    shutil.rmtree(workspace / ".memsearch")
    again = make_memory(workspace)
    again.index()
    assert [(h.id, h.source) for h in again.search("Kafka RabbitMQ decision", top_k=5)] == before


def test_rename_moves_chunks_and_delete_removes_them(workspace: Path, make_memory, embedder: FakeEmbedder) -> None:
    memory = make_memory(workspace)
    memory.index()
    before = embedder.embedded
    (workspace / "memory/2026-02-05.md").rename(workspace / "memory/2026-02-05-kafka.md")
    stats = memory.index()
    assert (stats.files_added, stats.files_removed, embedder.embedded - before) == (1, 1, 0)
    assert {h.source for h in memory.search("Kafka over RabbitMQ", top_k=5)} >= {"memory/2026-02-05-kafka.md"}
    assert "memory/2026-02-05.md" not in {h.source for h in memory.search("Kafka over RabbitMQ", top_k=10)}
    (workspace / "memory/2026-02-05-kafka.md").unlink()
    memory.index()
    after = memory.search("Kafka over RabbitMQ", top_k=10)
    assert after and all("kafka" not in h.source for h in after)  # other notes still answer
    assert memory.status()["files"] == 12
    assert memory.status()["provider"] == "bundled"  # the provider as set (doctor's word), not the embedder's class


def test_model_change_reembeds_everything_without_reset(workspace: Path, make_memory) -> None:
    first = make_memory(workspace, FakeEmbedder(model_name="fake-a"))
    total = first.index().chunks_total
    first.close()
    other = FakeEmbedder(model_name="fake-b")
    second = make_memory(workspace, other)
    stats = second.index()
    assert stats.files_modified == 13 and stats.chunks_embedded == total == other.embedded
    assert second.status()["chunks"] == total


def test_bad_input_never_stops_index(workspace: Path, make_memory) -> None:
    mem = workspace / "memory"
    (mem / "latin1.md").write_bytes("# Caf\xe9\n\nna\xefve caf\xe9 notes\n".encode("latin-1"))
    (mem / "binary.md").write_bytes(b"\x00\x01\x02PNG\x00" * 100)
    (mem / "empty.md").write_text("")
    (mem / "huge.md").write_text(("# H\n" + "x" * 1000 + "\n") * 21000)
    (mem / "headings.md").write_text("".join(f"# Heading {i}\nline {i}\n" for i in range(10000)))
    os.symlink(mem, mem / "loop")
    memory = make_memory(workspace)
    stats = memory.index()
    reasons = {s.source: s.reason for s in stats.skipped}
    assert "binary" in reasons["memory/binary.md"] and "MiB" in reasons["memory/huge.md"]
    assert "UTF-8" in {w.source: w.reason for w in stats.warnings}["memory/latin1.md"]
    assert memory.search("Heading 9999", top_k=1)[0].source == "memory/headings.md"
    assert memory.search("caf", top_k=3)
    assert stats.files_total == 13 + 2  # latin1 + headings; nothing else lost
    assert memory.search("Redis cache config", top_k=1, vector_weight=0.0)[0].heading == "Redis Caching"
    assert "loop" not in str(stats.skipped)  # a symlinked folder is not followed at all


def test_unsaved_buffer_overlays_the_disk(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    memory.index()
    path = workspace / "memory/MEMORY.md"
    memory.index_text("memory/MEMORY.md", path.read_text() + "\n## Zebra notes\n\nzebra crossing\n")
    assert memory.search("zebra crossing", top_k=1)[0].heading == "Zebra notes"
    assert memory.index().chunks_embedded == 0  # reconcile keeps the buffer, not the disk
    memory.index_file("memory/MEMORY.md")  # the buffer closed without saving
    after = memory.search("zebra crossing", top_k=3)
    assert after and all(h.heading != "Zebra notes" for h in after)


def test_expand_returns_the_whole_chunk(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    memory.index()
    hit = memory.search("Kafka over RabbitMQ", top_k=1)[0]
    chunk = memory.expand(hit.id)
    assert chunk is not None and chunk.content.startswith("## Decision: Kafka over RabbitMQ")
    assert memory.expand("0123456789abcdef") is None


def test_exclude_globs_and_archive_are_not_indexed(workspace: Path, make_memory) -> None:
    (workspace / "memory/archive").mkdir()
    (workspace / "memory/archive/old.md").write_text("# Old\n\narchived walrus\n")
    (workspace / "memory/drafts").mkdir()
    (workspace / "memory/drafts/x.md").write_text("# Draft\n\ndraft walrus\n")
    memory = make_memory(workspace, memory={"exclude": ["memory/drafts/**"]}, compact={"index_archive": False})
    memory.index()
    assert not [h for h in memory.search("walrus", top_k=5) if "walrus" in h.snippet]
    memory.close()
    indexed = make_memory(workspace, memory={"exclude": ["memory/drafts/**"]})  # by default the archive is indexed
    indexed.index()
    assert [(h.source, h.archived) for h in indexed.search("walrus", top_k=5) if "walrus" in h.snippet] == [
        ("memory/archive/old.md", True)
    ]


# -- many small files (issue 31, part 4): no per-file work that grows with the index -----------------
def test_indexing_one_file_at_a_time_keeps_the_bm25_statistics_of_a_clean_build(
    workspace: Path, make_memory, tmp_path: Path
) -> None:
    """Each index_file() updates the document frequencies in place (no recount); a new process reads them with the
    saved read model and embeds nothing."""
    memory = make_memory(workspace)
    memory.index()
    for n in range(5):
        note = workspace / "memory" / f"note-{n}.md"
        note.write_text(f"# Note {n}\n\nwombat number {n} lives in a burrow\n")
        memory.index_file(f"memory/{note.name}")
    (workspace / "memory/note-0.md").unlink()
    memory.index_file("memory/note-0.md")
    main = workspace / "memory/MEMORY.md"
    main.write_text(main.read_text() + "\n## Wombats\n\nsquare droppings\n")
    memory.index_file("memory/MEMORY.md")
    memory.close()
    again = make_memory(workspace)
    assert again.index().chunks_embedded == 0
    clean_ws = tmp_path / "clean"
    shutil.copytree(workspace / "memory", clean_ws / "memory")
    clean = make_memory(clean_ws)
    clean.index()
    assert document_frequencies(again) == document_frequencies(clean)


def test_index_totals_follow_every_write(workspace: Path, make_memory) -> None:
    """The files and chunks totals are kept as rows change (not counted over every file per write)."""
    memory = make_memory(workspace)

    def check(stats) -> None:
        ids = {source: memory.indexer.ids(source) for source in memory.indexer.manifest()}
        assert stats.files_total == sum(1 for found in ids.values() if found)
        assert stats.chunks_total == sum(len(found) for found in ids.values()) == memory.status()["chunks"]

    check(memory.index())
    log = workspace / "memory/2026-02-04.md"
    check(memory.index_text("memory/2026-02-04.md", log.read_text() + "\n## More\n\none\n\n## Again\n\ntwo\n"))
    check(memory.index_text("memory/2026-02-04.md", "# Short now\n"))
    check(memory.index_text("memory/new.md", "# New\n\nfresh\n"))
    check(memory.index_text("memory/empty.md", ""))
    check(memory.remove("memory/new.md"))
    check(memory.index_file("memory/2026-02-04.md"))  # back to the disk
    log.unlink()
    (workspace / "memory/MEMORY.md").unlink()
    stats = memory.index()
    check(stats)
    assert stats.files_removed == 2
    check(memory.index(force=True))


def test_a_buffer_with_half_an_emoji_is_indexed_whole(tmp_path: Path, make_memory) -> None:
    """An editor's JSON may carry a lone surrogate (a paste cut in the middle of an emoji): the whole buffer failed
    to index ("TextEncodeInput must be ..."). It is read as "?", one character for one, so its lines stay."""
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    memory = make_memory(ws)
    text = "# 2026-01-21\n\n## Emoji\n\nhalf an emoji \ud83d here\n\n## Deploy\n\nWe deploy with ArgoCD on Fridays.\n"
    memory.index_text("memory/2026-01-21.md", text)
    memory.close()
    again = make_memory(ws)
    hits = again.search("ArgoCD deploy Fridays", vector_weight=0.0)
    assert (hits[0].heading, hits[0].start_line) == ("Deploy", 7)
    assert again.expand(again.search("half an emoji", vector_weight=0.0)[0].id).content.count("?") == 1


def test_a_skipped_file_is_warned_about_once_while_it_stays_as_it_is(tmp_path: Path, make_memory, caplog) -> None:
    """Every pass (a save, a poll) logged the same unchanged binary file again: the index pass reports it in its
    stats each time, and logs it once until what is wrong with it changes."""
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-01-06.md").write_bytes(b"## a\nx\x00\xffy\n")  # NUL and a byte not UTF-8
    memory = make_memory(ws)
    for n in range(3):
        (ws / "memory" / "2026-11-01.md").write_text(f"# 2026-11-01\n\n## N\n\nnote number {n}\n")
        assert [s.source for s in memory.index().skipped] == ["memory/2026-01-06.md"]
    assert sum("NUL" in r.getMessage() for r in caplog.records) == 1
    (ws / "memory" / "2026-01-06.md").write_bytes(b"\x00" + b"y" * (2 * 1024 * 1024))
    memory.index()
    assert sum("2026-01-06.md" in r.getMessage() for r in caplog.records) == 2  # a new reason: said again


def test_expand_gives_the_whole_of_a_section_stored_cut_short(tmp_path: Path, make_memory) -> None:
    """A 90 KB line (pasted minified JSON) is one chunk, stored cut at 60,000 bytes: search found a word at its end,
    and expand showed the cut text without it. Expand reads such a chunk whole from its file."""
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    line = " ".join(f"item{n}" for n in range(12000)) + " zanzibarword"
    (ws / "memory" / "2026-01-07.md").write_text(f"# 2026-01-07\n\n## Dump\n\n{line}\n")
    memory = make_memory(ws)
    memory.index()
    hit = memory.search("zanzibarword", vector_weight=0.0, min_score=0.0)[0]
    expanded = memory.expand(hit.id)
    assert expanded is not None and expanded.content.endswith("zanzibarword")


def test_a_file_of_thousands_of_sections_is_indexed_up_to_the_cap(tmp_path: Path, make_memory, caplog) -> None:
    """A file of 20,000 one-line sections (`# h1`, `# h2`, ...) was 20,000 chunks: two minutes of embedding and
    650 MB for one file a cloned repository can hold. The first MAX_FILE_CHUNKS are indexed, and it is said."""
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "headings.md").write_text(
        "".join(f"# h{n}\n\nword{n}\n\n" for n in range(MAX_FILE_CHUNKS + 50))
    )
    with caplog.at_level(logging.WARNING):
        stats = make_memory(tmp_path).index()
    assert stats.chunks_total == MAX_FILE_CHUNKS and f"the first {MAX_FILE_CHUNKS} are indexed" in caplog.text
    # and in the pass's warnings, which `index --json` and memsearch.reindex report (they were [])
    cut = f"{MAX_FILE_CHUNKS + 50} sections; the first {MAX_FILE_CHUNKS} are indexed"
    assert [(w.source, w.reason) for w in stats.warnings] == [("memory/headings.md", cut)]
    assert caplog.text.count(cut) == 1


def test_a_word_written_as_one_or_part_of_an_identifier_finds_its_note(tmp_path: Path, make_memory) -> None:
    """A note says `NCCL_P2P_DISABLE=1` and "on-call"; a reader asks for "NCCL", "ack wait" and "oncall"."""
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "2026-11-24.md").write_text(
        "# 2026-11-24\n\n## GPU node\n\nNeeded `NCCL_P2P_DISABLE=1` for the shared node.\n\n"
        "## Rota\n\nOn-call this week: Lucia primary, Marco secondary.\n\n"
        "## Mail\n\nThe consumer's `ack_wait` of 30 s is too short when SMTP is slow.\n",
        encoding="utf-8",
    )
    memory = make_memory(tmp_path)
    memory.index()
    for query, heading in (("NCCL", "GPU node"), ("oncall", "Rota"), ("ack wait", "Mail")):
        hits = memory.search(query, vector_weight=0.0)
        assert hits and hits[0].heading == heading, (query, hits)


class Busy(FakeEmbedder):
    """An endpoint that cannot embed queries now: the relevance (the floor) rests on the terms a note holds."""

    def embed_query(self, query: str) -> list[float]:
        raise EmbeddingError("busy")


def test_a_version_is_found_whole_and_an_absent_one_finds_nothing(tmp_path: Path, make_memory) -> None:
    """Two logs differ only in the order of a version's parts, a third names an address: each version asked for
    ranks its own note first (their words were the same bag: 20, 11, 1), and a version or address no note holds is
    answered with nothing (its numbers alone passed the floor)."""
    (tmp_path / "memory").mkdir()
    for day, version in (("2026-03-07", "20.11.1"), ("2026-03-08", "20.1.11")):
        (tmp_path / "memory" / f"{day}.md").write_text(
            f"# {day}\n\n## 10:00\nNode is pinned to {version} in .nvmrc on the build agents.\n", encoding="utf-8"
        )
    (tmp_path / "memory" / "MEMORY.md").write_text(
        "# Memory\n\n## Infrastructure\n- The primary replica is at 10.0.3.17; numpy is pinned to 1.26.\n",
        encoding="utf-8",
    )
    memory = make_memory(tmp_path, Busy())
    memory.index()
    for version, day in (("20.11.1", "2026-03-07"), ("20.1.11", "2026-03-08"), ("node 20.11.1", "2026-03-07")):
        hits = memory.search(version, vector_weight=0.0)
        assert hits and hits[0].source == f"memory/{day}.md" and hits[0].score > hits[1].score, (version, hits)
    assert memory.search("10.0.3.17", min_score=0.25)[0].heading == "Infrastructure"
    for absent in ("1.0.0", "10.9.9.9", "v20.1.1", "1.26.3"):
        assert memory.search(absent, min_score=0.25) == [], absent


def test_every_heading_lists_a_long_section_cut_inside_its_code_block_once(tmp_path: Path, make_memory) -> None:
    """The empty query's listing merged a long section's pieces but took one opening on a script's `# step 27`
    comment for a repeated heading: `Setup script` was listed three times."""
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "MEMORY.md").write_text(script_section())
    memory = make_memory(tmp_path)
    memory.index()
    assert [h.heading for h in memory.headings()] == ["Notes", "Setup script", "Other"]
