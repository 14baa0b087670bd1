"""A local index opened from its saved mirror without opening Milvus Lite's engine (issue 31): the folder's lock
is taken at once, the engine (its segment load) only on the first write or a read the mirror cannot answer, and
the saved copy is trusted only while the engine's files stand as they did at its save."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memsearch_lsp.config import DEFAULT_MODEL
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.store import lite, snapshot
from memsearch_lsp.core.store.milvus import MilvusStore
from tests.fakes import FakeEmbedder
from tests.helpers import LONG, ROOT, through_the_engine

QUERIES = ["deploy", "kangaroo paddock fence ranger", "database migration rollback", "koala wombat zoo", "error"]


@pytest.fixture
def closed(workspace: Path, make_memory: Callable[..., Memory]) -> Path:
    """A workspace indexed by a process that has closed it (its mirror saved, its files stamped)."""
    (workspace / "memory" / "2026-01-05.md").write_text(LONG)
    memory = make_memory(workspace)
    memory.index()
    memory.close()
    return workspace


def _results(memory: Memory) -> list[list[Any]]:
    return [
        [(h.id, h.source, h.start_line, h.snippet, round(h.score, 6)) for h in memory.search(q, top_k=10)]
        for q in QUERIES
    ]


def _through_the_engine(workspace: Path) -> list[list[Any]]:
    return through_the_engine(workspace, _results)


def _no_engine(*args: object, **kwargs: object) -> Any:
    raise AssertionError("the engine was opened or read although the saved mirror is valid")


def test_an_unchanged_index_is_searched_without_opening_its_engine(
    closed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    want = _through_the_engine(closed)
    memory = Memory(closed, embedder=FakeEmbedder())
    try:
        with monkeypatch.context() as patched:
            patched.setattr(lite, "open_folder", _no_engine)
            patched.setattr(MilvusStore, "_read_mirror", _no_engine)
            memory.index()  # nothing changed: the manifest comes from the saved rows
            assert _results(memory) == want
            hit = memory.search("kangaroo paddock fence ranger")[0]
            expanded = memory.expand(hit.id)
            assert expanded is not None and (expanded.source, expanded.start_line) == (hit.source, hit.start_line)
            assert memory.headings(), "the heading list comes from the saved rows too"
            status = memory.status()
        uri = memory.store.uri
        assert not memory.store.engine_open and not lite.engine_open(uri)
        assert str(Path(uri).resolve()) in lite.opened(), "the folder is held all the same"
        assert (status["files"], status["chunks"]) == (
            len(memory.indexer.manifest()),
            sum(len(s.ids) for s in memory.indexer.manifest().values()),
        )
    finally:
        memory.close()


HOLDER = """
import sys
from milvus_lite.db import MilvusLite
from milvus_lite.exceptions import DataDirLockedError
try:
    MilvusLite(sys.argv[1]).close()
except DataDirLockedError:
    print("locked")
else:
    print("opened")
"""


CLAIM = """
import sys
from pathlib import Path
from tests.fakes import FakeEmbedder
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.store.milvus import IndexBusy
memory = Memory(Path(sys.argv[1]).parents[1], embedder=FakeEmbedder())
try:
    memory.claim()
except IndexBusy:
    print("busy")
else:
    print("claimed")
finally:
    memory.close()
"""


def _other_process_opens(uri: str, code: str = HOLDER) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), uri], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_the_folder_is_held_before_the_engine_opens_and_after_it_closes(closed: Path) -> None:
    memory = Memory(closed, embedder=FakeEmbedder())
    try:
        memory.claim()
        uri = memory.store.uri
        assert not memory.store.engine_open
        assert _other_process_opens(uri) == "locked", "Milvus Lite in another process is kept out"
        assert _other_process_opens(uri, CLAIM) == "busy", "and so is another memsearch-lsp"
        _ = memory.store.client  # the engine opens under the same lock
        assert memory.store.engine_open
        lite.open_folder(uri).close()  # the engine closed, the folder still held
        assert _other_process_opens(uri) == "locked"
    finally:
        memory.close()
    assert _other_process_opens(uri) == "opened", "released at close"


def test_a_write_opens_the_engine_and_keeps_the_saved_mirror(closed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = Memory(closed, embedder=FakeEmbedder())
    try:
        memory.search("deploy")
        assert not memory.store.engine_open
        monkeypatch.setattr(MilvusStore, "_read_mirror", _no_engine)  # the saved mirror is updated, not re-read
        memory.remember("rotated the platypus certificates on the edge proxies")
        assert memory.store.engine_open
        assert memory.search("platypus certificates")[0].source.startswith("memory/20")
        monkeypatch.undo()
    finally:
        memory.close()
    meta = json.loads((Path(memory.store.uri) / snapshot.FOLDER / snapshot.META).read_text())
    assert meta["engine"] == snapshot.fingerprint(memory.store.uri), "stamped after the engine closed"
    again = Memory(closed, embedder=FakeEmbedder())
    try:
        hits = again.search("platypus certificates")
        assert hits and "platypus" in hits[0].snippet and not again.store.engine_open
    finally:
        again.close()
    assert _results(Memory(closed, embedder=FakeEmbedder())) == _through_the_engine(closed)


WRITER = """
import sys
from milvus_lite.db import MilvusLite
db = MilvusLite(sys.argv[1])
col = db.get_collection(sys.argv[2])
col.load()
col.delete([sys.argv[3]])
db.close()
"""


def test_a_write_by_a_process_that_does_not_know_the_copy_is_seen(closed: Path) -> None:
    """Milvus Lite opened by hand (or an older memsearch-lsp) deletes a row: its WAL changes the files, so the
    copy is not trusted without the engine, and the engine's write sequence then rejects it."""
    memory = Memory(closed, embedder=FakeEmbedder())
    try:
        gone = memory.search("kangaroo paddock fence ranger")[0]
        uri, collection = memory.store.uri, memory.store.collection
    finally:
        memory.close()
    before = snapshot.fingerprint(uri)
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(WRITER), uri, collection, gone.id],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    assert snapshot.fingerprint(uri) != before
    assert (Path(uri) / snapshot.FOLDER / snapshot.META).is_file(), "the writer left the copy as it was"
    again = Memory(closed, embedder=FakeEmbedder())
    try:
        again.store.open()
        assert again.store.engine_open and again.store.mirrors.current is None, "not read: the store moved on"
        assert gone.id not in {h.id for q in QUERIES for h in again.search(q, top_k=50)}
        assert again.expand(gone.id) is None
    finally:
        again.close()


def test_a_copy_that_the_engine_disowns_is_dropped_when_it_opens(
    closed: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Files as saved but a `meta.json` naming another write sequence (a copy put back by hand): read without the
    engine, it is dropped once the engine opens and says otherwise, and the engine's rows are searched."""
    want = _through_the_engine(closed)
    uri = str(closed / ".memsearch" / "milvus.db")
    path = Path(uri) / snapshot.FOLDER / snapshot.META
    meta = json.loads(path.read_text())
    meta["generation"] = [g + 7 for g in meta["generation"]]
    path.write_text(json.dumps(meta))
    memory = Memory(closed, embedder=FakeEmbedder())
    try:
        memory.store.open()
        assert memory.store.mirrors.current is not None and not memory.store.engine_open
        _ = memory.store.client
        assert memory.store.mirrors.current is None and not path.exists()
        assert "does not match" in caplog.text
        memory.store.mirror()
        assert _results(memory) == want
    finally:
        memory.close()


PROBE = """
import sys
from memsearch_lsp.cli import main
code = main(["status", "--json"])
heavy = [m for m in ("numpy", "milvus_lite", "pyarrow", "onnxruntime") if m in sys.modules]
print("HEAVY=" + ",".join(heavy), file=sys.stderr)
sys.exit(code)
"""


def test_status_reads_the_saved_record_alone(workspace: Path) -> None:
    """`memsearch-lsp status` on an index at rest: the counts from the saved copy's record, equal to the manifest's,
    with neither numpy, the engine nor the model imported (it stays well under 0.3 s; bench/coldstart.py)."""
    bundled = FakeEmbedder(dim=384, model_name=DEFAULT_MODEL)  # what the CLI's configuration names
    memory = Memory(workspace, embedder=bundled)
    memory.index()
    memory.close()
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PROBE)], capture_output=True, text=True, timeout=120, cwd=workspace
    )
    assert out.returncode == 0, out.stderr
    status = json.loads(out.stdout)
    memory = Memory(workspace, embedder=bundled)
    try:
        manifest = memory.indexer.manifest()
        assert (status["files"], status["chunks"]) == (len(manifest), sum(len(s.ids) for s in manifest.values()))
    finally:
        memory.close()
    assert "HEAVY=\n" in out.stderr + "\n", out.stderr


def test_an_engine_found_unreadable_at_the_first_write_is_rebuilt_whole(closed: Path) -> None:
    """Damage that leaves the files' sizes and times as they were (bit rot) is only seen when a write opens the
    engine: the index is moved aside and rebuilt, and every file is indexed again, not only the one written."""
    memory = Memory(closed, embedder=FakeEmbedder())
    try:
        total = memory.status()["chunks"]
    finally:
        memory.close()
    data = sorted((Path(memory.store.uri) / "collections" / memory.store.collection).rglob("*.parquet"))
    assert data
    for path in data:
        info = path.stat()
        path.write_bytes(b"\0" * info.st_size)  # same size, same time, same file
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    again = Memory(closed, embedder=FakeEmbedder())
    try:
        assert again.search("kangaroo paddock fence ranger"), "searched from the saved mirror, engine unopened"
        again.remember("rotated the platypus certificates on the edge proxies")
        assert any(".broken-" in p.name for p in (closed / ".memsearch").iterdir()), "moved aside"
        count = again.status()["chunks"]
        assert count > total and count == again.index(force=True).chunks_total, "every file indexed again"
        assert again.search("platypus certificates")[0].source.startswith("memory/20")
        assert again.search("kangaroo paddock fence ranger")
    finally:
        again.close()
