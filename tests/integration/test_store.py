"""The local store: its read model answers as Milvus Lite's own rows would, follows every write, is saved as checked
plain data, and a saved copy that is damaged, forged, linked or stale is never served (rebuilt, said once)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memsearch_lsp.core.embedding import query_vector
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.store import local, saved
from memsearch_lsp.core.store.schema import sparse_dict
from memsearch_lsp.doctor import run_doctor
from tests.helpers import LONG, document_frequencies, engine_rows, long_workspace, owner_serving, query_idf

QUERIES = ("Redis cache config", "which message broker did we pick", "deploy the database", "kangaroo fence")


def reference(memory: Memory, query: str, limit: int = 10) -> tuple[dict[str, float], dict[str, float]]:
    """Both legs computed by brute force from the rows Milvus Lite itself holds (the memory is closed)."""
    vector = np.asarray(query_vector(memory.embedder, query), dtype=np.float32)
    terms = query_idf(memory, query)
    chunks, windows = engine_rows(memory), engine_rows(memory, windows=True)
    dense = {r["id"]: float(np.asarray(r["dense"], dtype=np.float32) @ vector) for r in chunks}
    for w in windows:
        dense[w["chunk_id"]] = max(dense[w["chunk_id"]], float(np.asarray(w["dense"], dtype=np.float32) @ vector))
    bm25 = {r["id"]: sum(float(np.float32(w)) * weights.get(t, 0.0) for t, w in terms.items())
            for r in chunks if (weights := sparse_dict(r["sparse"]))}  # fmt: skip
    best = sorted(dense, key=lambda k: -dense[k])[:limit]
    hit = sorted((k for k, v in bm25.items() if v > 0), key=lambda k: -bm25[k])[:limit]
    return {k: dense[k] for k in best}, {k: bm25[k] for k in hit}


def test_the_read_model_answers_as_the_engines_rows_would(tmp_path: Path, make_memory: Callable[..., Memory]) -> None:
    ws = long_workspace(tmp_path)
    shutil.copytree(Path(__file__).parents[2] / "examples" / "memory", ws / "memory", dirs_exist_ok=True)
    memory = make_memory(ws)
    memory.index()
    answered = {}
    for query in QUERIES:
        vector = query_vector(memory.embedder, query)
        answered[query] = (memory.store.dense_leg(vector, 10), memory.store.sparse_leg(query_idf(memory, query), 10))
    for query in QUERIES:
        dense, bm25 = reference(memory, query)
        got_dense, got_bm25 = answered[query]
        assert list(got_dense) == list(dense) and list(got_bm25) == list(bm25), query
        assert all(got_dense[k] == pytest.approx(v, abs=1e-5) for k, v in dense.items())
        assert all(got_bm25[k] == pytest.approx(v, rel=1e-5) for k, v in bm25.items())


def test_the_read_model_follows_every_write_and_a_reopened_index_reads_it_without_the_engine(
    tmp_path: Path, workspace: Path, make_memory: Callable[..., Memory]
) -> None:
    memory = make_memory(workspace)
    memory.index()
    log = workspace / "memory" / "2026-02-05.md"
    log.write_text(log.read_text() + "\n## Quokka\n\nthe quokka rollout starts on Monday\n")
    (workspace / "memory" / "2026-02-06.md").unlink()
    memory.index()
    memory.index_text("memory/draft.md", "# Draft\n\nan unsaved buffer about wombats\n")
    memory.remove("memory/draft.md")
    before = {q: [(h.id, round(h.rank_score, 6)) for h in memory.search(q, top_k=5)] for q in QUERIES}
    frequencies = document_frequencies(memory)
    memory.close()

    again = make_memory(workspace)  # a new process: the saved copy, checked, answers without the engine
    assert {q: [(h.id, round(h.rank_score, 6)) for h in again.search(q, top_k=5)] for q in QUERIES} == before
    assert document_frequencies(again) == frequencies
    assert not again.store.engine.opened  # type: ignore[attr-defined]
    assert again.index().chunks_embedded == 0
    again.close()

    saved.invalidate(again.uri)  # rebuilt from the engine's own rows: the same answers
    rebuilt = make_memory(workspace)
    assert {q: [(h.id, round(h.rank_score, 6)) for h in rebuilt.search(q, top_k=5)] for q in QUERIES} == before
    assert document_frequencies(rebuilt) == frequencies


def test_a_write_is_searchable_at_once_and_the_engine_closes_when_idle(
    workspace: Path, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local, "ENGINE_IDLE_S", 0.2)
    memory = make_memory(workspace)
    memory.index()
    store = memory.store
    store.sync()  # type: ignore[attr-defined]
    memory.index_text("memory/2026-02-20.md", "# 2026-02-20\n\n## Quokka\n\nthe quokka rollout starts Monday\n")
    assert memory.search("quokka rollout", top_k=1)[0].source == "memory/2026-02-20.md"  # before the engine has it
    deadline = time.monotonic() + 30
    while store.engine.opened or store._writer is not None:  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, "the engine stays open"
        time.sleep(0.05)
    assert any(r["source"] == "memory/2026-02-20.md" for r in engine_rows(memory))


def test_a_process_killed_before_its_writes_reached_the_engine_serves_nothing_stale(
    workspace: Path, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = make_memory(workspace)
    memory.index()
    memory.close()
    log = workspace / "memory" / "2026-02-05.md"
    log.write_text(log.read_text().replace("Kafka", "Pulsar"))
    killed = make_memory(workspace)
    monkeypatch.setattr(local.LocalStore, "flush", lambda self, wait=False: None)  # the writer never runs
    killed.index_file("memory/2026-02-05.md")  # the read model has the edit; the saved copy was made invalid before it
    assert killed.search("Pulsar event bus", top_k=1, vector_weight=0.0)[0].source == "memory/2026-02-05.md"
    monkeypatch.undo()
    store = killed.store
    store.engine.close()  # type: ignore[attr-defined]
    store._release()  # type: ignore[attr-defined]  # killed: the queue never drained, nothing saved
    again = make_memory(workspace)
    assert not (Path(again.uri) / saved.FOLDER / saved.META).exists()
    stats = again.index()
    assert stats.files_modified == 1 and stats.chunks_embedded >= 1
    hit = again.search("Pulsar event bus", top_k=1, vector_weight=0.0)[0]
    assert hit.source == "memory/2026-02-05.md" and "Pulsar" in (again.expand(hit.id) or hit).content  # type: ignore[union-attr]


def test_a_write_by_a_process_that_does_not_know_the_saved_copy_is_seen(
    workspace: Path, make_memory: Callable[..., Memory]
) -> None:
    from milvus_lite import MilvusLite

    memory = make_memory(workspace)
    memory.index()
    total = memory.status()["chunks"]
    ids = [r["id"] for r in engine_rows(memory)][:5]
    db = MilvusLite(memory.uri)  # another program writes to the engine behind the saved copy's back
    db.get_collection(memory.collection).delete(ids)
    db.close()
    again = make_memory(workspace)
    assert again.status()["chunks"] == total - 5  # read from the engine, not the stale copy
    assert again.index().files_modified >= 1


def _files(folder: Path) -> dict[str, Path]:
    return {p.name: p for p in (folder / saved.FOLDER).iterdir()}


def damage_same_size(folder: Path) -> None:
    vecs = _files(folder)["chunk_vecs.bin"]
    data = bytearray(vecs.read_bytes())
    data[100:140] = bytes(reversed(data[100:140]))
    vecs.write_bytes(bytes(data))


def forge_bounds(folder: Path) -> None:
    """An index out of bounds, with checksums recomputed: only the bounds check can tell."""
    files = _files(folder)
    meta = json.loads(files[saved.META].read_bytes())
    source = np.frombuffer(files["chunk_source.bin"].read_bytes(), dtype=np.int32).copy()
    source[3] = 10_000
    files["chunk_source.bin"].write_bytes(source.tobytes())
    meta["arrays"]["chunk_source"]["crc32"] = zlib.crc32(source.tobytes())
    files[saved.META].write_text(json.dumps(meta))


def truncate(folder: Path) -> None:
    path = _files(folder)["post_slots.bin"]
    path.write_bytes(path.read_bytes()[:-4])


def pickle_dtype(folder: Path) -> None:
    files = _files(folder)
    meta = json.loads(files[saved.META].read_bytes())
    meta["arrays"]["ints"]["dtype"] = "|O"
    files[saved.META].write_text(json.dumps(meta))


def garbage_meta(folder: Path) -> None:
    _files(folder)[saved.META].write_bytes(b"\x00\xff not json")


def old_marshal_rows(folder: Path) -> None:
    """The saved mirror of earlier versions, with the crafted 77-byte rows.marshal that crashed them."""
    old = folder / saved.OLD_FOLDER
    old.mkdir()
    (old / "rows.marshal").write_bytes(b"\xdb" + b"\xff" * 76)
    (old / "meta.json").write_text('{"format": 1}')


@pytest.mark.parametrize(
    "damage", [damage_same_size, forge_bounds, truncate, pickle_dtype, garbage_meta, old_marshal_rows]
)
def test_a_damaged_or_forged_saved_copy_is_rebuilt_from_the_engine_with_one_warning(
    workspace: Path,
    make_memory: Callable[..., Memory],
    caplog: pytest.LogCaptureFixture,
    damage: Callable[[Path], None],
) -> None:
    memory = make_memory(workspace)
    memory.index()
    expected = {q: [h.id for h in memory.search(q, top_k=5)] for q in QUERIES}
    memory.close()
    damage(Path(memory.uri))
    with caplog.at_level(logging.WARNING, logger="memsearch_lsp"):
        again = make_memory(workspace)
        assert {q: [h.id for h in again.search(q, top_k=5)] for q in QUERIES} == expected
        assert again.index().chunks_embedded == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) <= 1, warnings
    assert not (Path(memory.uri) / saved.OLD_FOLDER).exists()


def test_links_inside_the_index_folder_are_never_followed(
    workspace: Path, tmp_path: Path, make_memory: Callable[..., Memory]
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("precious")
    memory = make_memory(workspace)
    memory.index()
    memory.close()
    folder = Path(memory.uri)
    shutil.rmtree(folder / saved.FOLDER)
    (folder / saved.FOLDER).symlink_to(outside, target_is_directory=True)  # the saved copy's folder is a link
    again = make_memory(workspace)
    assert again.search("Redis cache config")
    (workspace / "memory" / "new.md").write_text("# New\n\na note\n")
    again.index()
    again.close()
    assert (
        sorted(p.name for p in outside.iterdir()) == ["keep.txt"] and (outside / "keep.txt").read_text() == "precious"
    )

    # A file of the saved copy replaced by a link: not read through (rebuilt), not written through.
    assert (folder / saved.FOLDER).is_dir() and not (folder / saved.FOLDER).is_symlink()  # saved anew, for real
    (folder / saved.FOLDER / "content.blob.bin").unlink()
    (folder / saved.FOLDER / "content.blob.bin").symlink_to(outside / "keep.txt")
    fourth = make_memory(workspace)
    assert fourth.search("Redis cache config")
    (workspace / "memory" / "newer.md").write_text("# Newer\n\nanother note\n")
    fourth.index()
    fourth.close()
    assert (outside / "keep.txt").read_text() == "precious"

    # The engine's own folders: a link there is never opened; the index is moved aside and rebuilt.
    shutil.rmtree(folder / saved.FOLDER)
    collections = folder / "collections"
    shutil.move(str(collections), str(outside / "collections"))
    collections.symlink_to(outside / "collections", target_is_directory=True)
    before = sorted(p.name for p in (outside / "collections").rglob("*"))
    fifth = make_memory(workspace)
    assert fifth.index().files_added > 0
    assert sorted(p.name for p in (outside / "collections").rglob("*")) == before
    assert [p for p in folder.parent.iterdir() if ".broken-" in p.name]


def test_nothing_saved_beside_the_index_is_code(workspace: Path, make_memory: Callable[..., Memory]) -> None:
    memory = make_memory(workspace)
    memory.index()
    memory.close()
    folder = Path(memory.uri) / saved.FOLDER
    meta = json.loads((folder / saved.META).read_bytes())
    assert {np.dtype(spec["dtype"]).kind for spec in meta["arrays"].values() if "dtype" in spec} <= set("biuf")
    assert {p.suffix for p in folder.iterdir()} <= {".bin", ".json"}
    package = Path(__file__).parents[2] / "memsearch_lsp"
    for path in package.rglob("*.py"):
        text = path.read_text()
        assert "import marshal" not in text and "import pickle" not in text, path


def test_two_memories_of_one_workspace_in_a_process_share_its_store(
    workspace: Path, make_memory: Callable[..., Memory]
) -> None:
    first = make_memory(workspace)
    first.index()
    second = make_memory(workspace)
    assert second.store is first.store and second.index().chunks_embedded == 0
    second.index_text("memory/2026-02-21.md", "# 2026-02-21\n\n## Otter\n\notters everywhere\n")
    assert first.is_indexed("memory/2026-02-21.md")  # the other memory's indexer sees the write
    second.close()
    assert first.search("otters everywhere", top_k=1)[0].source == "memory/2026-02-21.md"


def test_long_sections_keep_their_windows_through_a_save(tmp_path: Path, make_memory: Callable[..., Memory]) -> None:
    ws = long_workspace(tmp_path)
    memory = make_memory(ws)
    memory.index()
    query = "kangaroo paddock fence ranger"
    vector = query_vector(memory.embedder, query)
    leg = memory.store.dense_leg(vector, 5)
    memory.close()
    assert LONG.count("\n") > 10
    again = make_memory(ws)
    assert again.store.dense_leg(vector, 5) == pytest.approx(leg)
    assert os.path.isdir(Path(again.uri) / saved.FOLDER)


def test_a_damaged_vector_in_the_engine_is_left_out_of_searches_said_once_and_mended_by_a_forced_index(
    workspace: Path, make_memory: Callable[..., Memory], caplog: pytest.LogCaptureFixture
) -> None:
    """A value changed in place in the engine's files (audit K: one `dense` of norm 5e37) gave one note at 1.000 for
    every query, and `index --force` reused it; a vector merely scaled (x2) doubled its cosine and ranked first. Both
    are left out, said once, counted by `status` and `doctor` (alone and through an owner), and embedded again by a
    forced index."""
    from memsearch_lsp.core.store.engine import Engine
    from memsearch_lsp.core.store.schema import WINDOW_SUFFIX

    memory = make_memory(workspace)
    memory.index()
    expected = {q: [h.id for h in memory.search(q, top_k=3)] for q in QUERIES}
    rows = engine_rows(memory)  # (closes the memory)
    firsts = {ids[0] for ids in expected.values() if ids}
    victims = [r for r in rows if r["id"] not in firsts][:2]
    damaged = [[5e37] * len(victims[0]["dense"]), [2.0 * x for x in victims[1]["dense"]]]
    engine = Engine(memory.uri, (memory.collection, memory.collection + WINDOW_SUFFIX), memory.embedder.dim)
    engine.open()
    try:
        engine.write(
            [dict(v, dense=d, sparse=sparse_dict(v["sparse"])) for v, d in zip(victims, damaged, strict=True)],
            [],
            [],
            [],
        )
    finally:
        engine.close()
    with caplog.at_level(logging.WARNING, logger="memsearch_lsp"):
        again = make_memory(workspace)
        for query in QUERIES:
            hits = again.search(query, top_k=3)
            assert not {v["id"] for v in victims} & {h.id for h in hits}, (query, hits)
        for victim in victims:  # (its own words: the dense leg leaves it out, BM25 still finds the text)
            dense = again.store.dense_leg(query_vector(again.embedder, victim["content"]), 10)
            assert victim["id"] not in dense and all(v <= 1.0 + 1e-3 for v in dense.values()), dense
    said = [r.getMessage() for r in caplog.records if "damaged vector" in r.getMessage()]
    assert len(said) == 1 and "holds 2 damaged" in said[0] and "index --force" in said[0], said
    assert again.status()["damaged_vectors"] == 2

    def index_check() -> Any:
        (check,) = [c for c in run_doctor(workspace, embedder=again.embedder).checks if c.name == "index"]
        return check

    with owner_serving(again):  # (an editor's server owns the index: doctor asks it)
        check = index_check()
        assert check.failed and "2 stored vector(s) damaged" in check.detail and "index --force" in check.fix, check
    again.close()
    check = index_check()
    assert check.failed and "2 stored vector(s) damaged" in check.detail, check
    again = make_memory(workspace)
    assert again.index(force=True).chunks_embedded >= 2  # (their text embedded again, not the damaged vectors reused)
    assert again.status()["damaged_vectors"] == 0
    assert {q: [h.id for h in again.search(q, top_k=3)] for q in QUERIES} == expected


def _edited_log(i: int) -> str:
    """A daily log of seven short sections and one long one (several windows), every section's text new at edit `i`."""
    short = "".join(
        f"\n## Section {j}\n\nEdit {i} of section {j}: the budget is {i * j} ms, said the ranger.\n" for j in range(7)
    )
    return f"# 2026-03-01\n{short}\n## Long\n\n" + "".join(
        f"- item {k}: review {i} of the quarterly budget spreadsheet from finance\n" for k in range(18)
    )


def _answers(memory: Memory) -> dict[str, Any]:
    """Each query's hits (id, score) and both legs (id -> score), as the read model answers them."""
    out: dict[str, Any] = {}
    for query in (*QUERIES, "budget said the ranger", "quarterly budget spreadsheet", "kangaroo paddock fence"):
        vector = query_vector(memory.embedder, query)
        hits = [(h.id, round(h.rank_score, 6)) for h in memory.search(query, top_k=8)]
        legs = memory.store.dense_leg(vector, 10), memory.store.sparse_leg(query_idf(memory, query), 10)
        out[query] = (hits, *({k: round(v, 5) for k, v in leg.items()} for leg in legs))  # (BLAS: the last bit moves)
    return out


def test_edits_reclaim_the_slots_of_deleted_rows_and_answer_as_a_fresh_index(
    tmp_path: Path, workspace: Path, make_memory: Callable[..., Memory]
) -> None:
    """Audit M1: every re-indexed section kept its old slot (a zeroed 1.5 KB vector, its id, ints and strings) in
    memory and in the saved read model, for good (one 8-section log edited 400 times: 9 live chunks in 3,205 saved
    slots). The slots of deleted rows are dropped, in memory once they outnumber the live rows, in a saved copy
    always; the answers are those of a fresh index of the same Markdown, and of the copy reopened."""
    memory = make_memory(workspace)
    memory.index()
    log = workspace / "memory" / "2026-03-01.md"
    for i in range(1, 121):
        log.write_text(_edited_log(i))
        memory.index_file("memory/2026-03-01.md")
    store = memory.store
    with store._lock:  # type: ignore[attr-defined]  # (the writer, idle, may save and reload the model meanwhile)
        model = store.model  # type: ignore[attr-defined]
        chunks, windows = model.docs, len(model.windows.slot)
        assert windows > 0 and model.chunks.n + model.windows.n <= 2 * (chunks + windows) + 128, model.chunks.n
    with_dead = _answers(memory)
    with store._lock:  # type: ignore[attr-defined]
        model = store.model  # type: ignore[attr-defined]
        model.compact()  # (every slot of a deleted row dropped: the same answers)
        assert (model.chunks.n, model.windows.n) == (chunks, windows)
    assert _answers(memory) == with_dead
    log.write_text(_edited_log(121))  # (deleted rows again, too few to compact: the save drops them)
    memory.index_file("memory/2026-03-01.md")
    edited = _answers(memory)
    memory.close()

    saved_arrays = json.loads((Path(memory.uri) / saved.FOLDER / saved.META).read_bytes())["arrays"]
    assert saved_arrays["chunk_vecs"]["shape"] == [chunks, memory.embedder.dim]
    assert saved_arrays["window_vecs"]["shape"] == [windows, memory.embedder.dim]
    again = make_memory(workspace)  # (opened as by a new process: the saved copy answers as the model did)
    assert _answers(again) == edited
    assert not again.store.engine.opened  # type: ignore[attr-defined]
    order = list(again.store.model.chunks.ids)  # type: ignore[attr-defined]
    again.close()

    fresh_ws = shutil.copytree(workspace, tmp_path / "fresh", ignore=shutil.ignore_patterns(".memsearch", log.name))
    fresh = make_memory(fresh_ws)  # the same Markdown indexed as the first time (ties fall to the earlier row)
    fresh.index()
    (fresh_ws / "memory" / log.name).write_text(log.read_text())
    fresh.index_file("memory/2026-03-01.md")
    assert _answers(fresh) == edited
    assert fresh.store.model.chunks.ids == order  # type: ignore[attr-defined]  # (slot for slot)


def test_the_engines_process_leaves_quietly_when_its_owner_is_gone() -> None:
    """(audit Q, 1) After kill -9 of the language server, its engine's process wrote a BrokenPipeError traceback into
    the editor's output (the reply it was writing had nobody to read it): it ends with nothing said."""
    import subprocess

    from memsearch_lsp.core import launch
    from memsearch_lsp.core.store import writer

    child = subprocess.Popen(
        writer.command(),
        cwd=launch.ROOT_FOLDER,
        env=launch.environment(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdin is not None and child.stdout is not None
    child.stdout.close()  # the owner is gone: nobody reads the replies
    ask = {"jsonrpc": "2.0", "id": 1, "method": "write", "params": {}}
    child.stdin.write((json.dumps(ask) + "\n").encode() * 3)
    child.stdin.close()
    assert child.stderr is not None
    said = child.stderr.read()
    child.wait(timeout=60)
    assert b"Traceback" not in said and b"BrokenPipe" not in said, said.decode()
