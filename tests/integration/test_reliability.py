"""Reliability in-process: owner sockets, stale records, broken indexes, path safety, fuzzed positions."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from memsearch_lsp.core.files import PathError
from memsearch_lsp.core.process.door import open_memory
from memsearch_lsp.core.process.owner import OwnerServer, RemoteMemory, find_owner, record_path
from memsearch_lsp.core.search.hybrid import Hit
from memsearch_lsp.core.store import IndexBusy, StoreError
from memsearch_lsp.core.store.folder import locked_by_other, mark, move_aside
from memsearch_lsp.core.store.local import LocalStore
from memsearch_lsp.lsp import convert
from tests.fakes import FakeEmbedder
from tests.helpers import cli, owner_process, owner_serving, tree_digest, wait_until


def test_a_second_process_uses_the_owner_socket(workspace: Path, make_memory) -> None:
    owner = make_memory(workspace)
    owner.index()
    server = OwnerServer(owner)
    server.start()
    try:
        mode = os.stat(server.socket).st_mode & 0o777
        assert mode == 0o600
        client = open_memory(workspace, embedder=FakeEmbedder())
        assert isinstance(client, RemoteMemory)
        assert [h.id for h in client.search("Redis cache config")] == [h.id for h in owner.search("Redis cache config")]
        hit = client.search("Kafka over RabbitMQ", top_k=1)[0]
        assert client.expand(hit.id) == owner.expand(hit.id)
        assert client.index().chunks_embedded == 0 and client.status()["chunks"] == owner.status()["chunks"]
        assert client.index_text("memory/MEMORY.md", "# Only\n\nzebra\n").files_modified == 1
        assert client.has_overlay("memory/MEMORY.md") and owner.has_overlay("memory/MEMORY.md")
        with pytest.raises(RuntimeError, match="unknown operation"):
            client.ask("rm_rf", {})
    finally:
        server.close()
    assert not record_path(workspace).exists()


def test_a_stale_record_and_socket_are_cleaned_up(workspace: Path, make_memory) -> None:
    folder = workspace / ".memsearch"
    folder.mkdir(mode=0o700)
    dead = folder / "server.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(str(dead))  # a socket file nobody listens on, as a killed server leaves it
    record_path(workspace).write_text(json.dumps({"pid": 2**22 + 12345, "socket": str(dead)}))
    record_path(workspace).chmod(0o600)
    assert find_owner(workspace) is None
    assert not dead.exists() and not record_path(workspace).exists()
    memory = open_memory(workspace, embedder=FakeEmbedder())
    assert not memory.remote
    assert memory.index().files_added == 13
    memory.close()


def test_a_broken_index_is_moved_aside_and_rebuilt(workspace: Path, make_memory, caplog) -> None:
    memory = make_memory(workspace)
    memory.index()
    memory.close()
    before = tree_digest(workspace / "memory")
    db = workspace / ".memsearch/milvus.db"
    for path in db.rglob("*"):
        if path.is_file() and path.name != "LOCK":
            path.write_bytes(b"\x00garbage from another version\xff" * 10)
    (db / "collections").mkdir(exist_ok=True)
    (db / "collections" / "manifest.json").write_text("{not json")
    again = make_memory(workspace)
    stats = again.index()
    assert stats.chunks_total > 30
    assert again.search("Redis cache config", vector_weight=0.0)[0].heading == "Redis Caching"
    assert [p.name for p in (workspace / ".memsearch").iterdir() if ".broken-" in p.name]
    assert sum("moved to" in r.getMessage() for r in caplog.records) == 1
    assert tree_digest(workspace / "memory") == before  # indexing never touches memory/
    # the copy holds what was indexed (a note forgotten since, too): reset removes it with the index, never a folder
    # that is not one of ours
    (workspace / ".memsearch/milvus.db.broken-mine").mkdir()
    again.reset()
    assert sorted(p.name for p in (workspace / ".memsearch").iterdir() if ".broken-" in p.name) == [
        "milvus.db.broken-mine"
    ]


def test_a_file_in_place_of_the_index_folder_is_moved_aside_and_rebuilt(workspace: Path, make_memory) -> None:
    """A file at `.memsearch/milvus.db` (our own place; garbage from a copy or a tool) made every request fail with
    "it is not a folder (left as it is)" until it was removed by hand; a file the user put elsewhere is still left."""
    memory = make_memory(workspace)
    memory.index()
    memory.close()
    db = workspace / ".memsearch/milvus.db"
    shutil.rmtree(db)
    db.write_bytes(b"\x00garbage" * 50)
    again = make_memory(workspace)
    assert again.index().chunks_total > 30
    assert again.search("Redis cache config", vector_weight=0.0)[0].heading == "Redis Caching"
    aside = [p for p in (workspace / ".memsearch").iterdir() if ".broken-" in p.name]
    assert [p.read_bytes()[:8] for p in aside] == [b"\x00garbage"[:8]]  # kept, for inspection
    again.close()


def test_an_engine_file_gone_is_damage_moved_aside_and_reset_deletes_an_index_that_cannot_open(
    workspace: Path, make_memory, monkeypatch
) -> None:
    """A collection's folder without its schema (a file deleted by hand) made every read fail with "please report
    this", and so did `reset`, the fix doctor names: it is damage, moved aside and rebuilt; and reset deletes an
    index that cannot be opened for any reason but another process holding it."""
    memory = make_memory(workspace)
    memory.index()
    memory.close()
    db = workspace / ".memsearch/milvus.db"
    next(db.glob("collections/*/schema.json")).unlink()
    shutil.rmtree(db / "read-model")
    again = make_memory(workspace)
    assert again.index().chunks_total > 30
    assert again.search("Redis cache config", vector_weight=0.0)[0].heading == "Redis Caching"
    assert [p.name for p in (workspace / ".memsearch").iterdir() if ".broken-" in p.name]
    again.close()

    def cannot_open(self) -> None:
        raise StoreError("writing the index failed (an engine error); please report this")

    monkeypatch.setattr(LocalStore, "open", cannot_open)
    third = make_memory(workspace)
    third.reset()
    assert not db.exists()
    monkeypatch.undo()
    assert third.search("Redis cache config", vector_weight=0.0)[0].heading == "Redis Caching"


def test_an_index_deleted_while_in_use_is_started_afresh_and_filled_again(workspace: Path, make_memory) -> None:
    """`rm -rf .memsearch` under a running server ("delete it and it is rebuilt"): its next writes failed with
    "please report this" at every try, and every process after it too. The store starts afresh at the failed
    write, and the next read fills it again from the Markdown."""
    memory = make_memory(workspace)
    memory.index()
    memory.store.flush(wait=True)
    shutil.rmtree(workspace / ".memsearch")
    (workspace / "memory" / "2026-10-11.md").write_text("# 2026-10-11\n\n## Cache\n\nRedis TTL is 300 seconds.\n")
    memory.index_file("memory/2026-10-11.md")
    memory.store.flush(wait=True)
    assert memory.search("Redis TTL 300 seconds", vector_weight=0.0)[0].source == "memory/2026-10-11.md"
    assert memory.search("Redis cache config", vector_weight=0.0)[0].heading == "Redis Caching"
    memory.close()
    again = make_memory(workspace)
    assert again.search("Redis cache config", vector_weight=0.0)[0].heading == "Redis Caching"


def aside(workspace: Path) -> list[str]:
    return sorted(p.name for p in (workspace / ".memsearch").iterdir() if p.name.startswith("milvus.db."))


def test_another_embedding_dimension_is_moved_aside_once_as_a_model_switch(
    workspace: Path, make_memory, caplog
) -> None:
    """Each switch between models of two dimensions left a whole copy `milvus.db.broken-*`, kept forever, with a
    warning calling the index "built by another version ... or for another embedding dimension". The index is a
    cache of the Markdown: the one copy before the last switch is kept, named for what it is."""
    for dim in (64, 32, 64, 32):
        memory = make_memory(workspace, FakeEmbedder(dim=dim))
        stats = memory.index()
        assert stats.chunks_embedded == stats.chunks_total > 30
        memory.close()
    assert [name.split("-")[0] for name in aside(workspace)] == ["milvus.db.previous"]
    switches = [r.getMessage() for r in caplog.records if "rebuilding" in r.getMessage()]
    assert len(switches) == 3 and all("broken" not in m and "another version" not in m for m in switches)
    assert switches[-1].endswith(
        "because it was built for 64-d vectors and the model now gives 32-d; rebuilding it from the Markdown"
    )
    make_memory(workspace, FakeEmbedder(dim=32)).reset()
    assert aside(workspace) == []  # reset deletes it with the index


def test_pruning_copies_moved_aside_deletes_only_the_oldest_stamped_copies_of_this_index(tmp_path: Path) -> None:
    """A review found a model switch of `idx/db` deleting `idx/db.previous-b`, another workspace's live index (any
    signed folder named like a copy was pruned), and a copy left by a failed reset taking a slot as the newest."""

    def signed(path: Path) -> Path:
        path.mkdir(parents=True)
        mark(path)
        return path

    live, other = signed(tmp_path / "db"), signed(tmp_path / "db.previous-b")
    old = [signed(tmp_path / f"db.broken-{n}") for n in ("20240101-120000", "20240101-120000-2", "20240102-090000")]
    reset = signed(tmp_path / "db.broken-reset-123-456")
    move_aside(live, "it was built for 64-d vectors and the model now gives 384-d", "previous")
    assert other.exists()
    for _ in range(2):
        move_aside(signed(live), "it cannot be read")
    kept = sorted(p.name for p in tmp_path.glob("db.broken-*"))
    assert not old[0].exists() and not old[1].exists() and old[2].exists() and reset.exists(), kept
    assert len(kept) == 4 and other.exists()  # the newest 3 stamped copies, and the reset's left for reset


def test_damaged_copies_moved_aside_are_kept_newest_three(workspace: Path, make_memory) -> None:
    for _ in range(5):
        memory = make_memory(workspace)
        memory.index()
        memory.close()
        shutil.rmtree(workspace / ".memsearch/milvus.db/read-model")
        for schema in (workspace / ".memsearch/milvus.db").glob("collections/*/schema.json"):
            schema.write_text("{not json")
    make_memory(workspace).index()
    assert [name.split("-")[0] for name in aside(workspace)] == ["milvus.db.broken"] * 3


def test_paths_never_leave_the_workspace(workspace: Path, make_memory, tmp_path: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\nplatypus password\n")
    (workspace / "memory" / "link.md").symlink_to(outside)
    (workspace / "memory" / "dirlink").symlink_to(tmp_path)
    memory = make_memory(workspace)
    stats = memory.index()
    assert any(s.source == "link.md" or "outside" in s.reason for s in stats.skipped)
    assert all("platypus" not in h.snippet for h in memory.search("platypus password", top_k=10))
    for bad in ("../secret.md", str(outside), "memory/link.md", "memory/../../secret.md"):
        with pytest.raises(PathError):
            memory.path_of(bad)


def units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


@given(
    st.lists(st.text(max_size=30).map(lambda s: s.replace("\n", " ").replace("\r", " ")), min_size=1, max_size=5),
    st.sampled_from(["utf-8", "utf-16", "utf-32"]),
    st.integers(min_value=1, max_value=50),
)
def test_chunk_ranges_cover_whole_lines_in_every_position_encoding(rows: list[str], encoding: str, start: int) -> None:
    """Our ranges (convert.py), not pygls's codec: a chunk's range ends after its last character,
    counted in the negotiated unit, and a hit's range from the file's lines is the chunk's range."""
    codec = PositionCodec(encoding=types.PositionEncodingKind(encoding))
    content = "\n".join(rows)
    end = start + len(rows) - 1
    rng = convert.chunk_range(codec, start, end, convert.last_line(content))
    assert (rng.start.line, rng.start.character, rng.end.line) == (start - 1, 0, end - 1)
    assert rng.end.character == units(rows[-1], encoding)
    lines = ["before"] * (start - 1) + rows + ["after"]
    hit = Hit(id="0" * 16, source="m.md", heading="", start_line=start, end_line=end, rank_score=0.0, snippet="")
    assert convert.hit_range(codec, hit, lines) == rng
    assert convert.hit_range(codec, hit, None).end == types.Position(line=end, character=0)


@given(st.text(max_size=20), st.text(max_size=20), st.integers(min_value=0, max_value=15))
def test_chunk_id_is_found_under_the_cursor_whatever_surrounds_it(before: str, after: str, offset: int) -> None:
    chunk = "0123456789abcdef"
    line = f"{before} {chunk} {after}"
    assert convert.id_at(line, len(before) + 1 + offset) == chunk


def test_a_chunk_id_glued_to_chinese_text_is_found_and_one_inside_a_longer_word_is_not() -> None:
    """Chinese is written without spaces: `详见<id>。` got no hover nor definition, as its letters count as a word's for
    `\\b` (audit Z2, 5)."""
    chunk = "bb29a87d6ca301db"
    for before, after in (
        ("详见", "。"),
        ("見て", "を"),
        ("참고", "를"),
        ("🔥", "✅"),
        ("«", "»"),
        ("(", ")"),
        ("é", "à"),
    ):
        line = f"{before}{chunk}{after}"
        assert [convert.id_at(line, len(before) + n) for n in (0, 16)] == [chunk, chunk], line
    for glued in (f"a{chunk}", f"{chunk}0", f"x_{chunk}", f"{chunk}Z", f"0x{chunk}"):
        assert convert.id_at(glued, glued.index(chunk) + 3) is None, glued


def test_secrets_are_never_logged_or_written_to_the_index(workspace: Path) -> None:
    import subprocess
    import sys

    secret, key = "milvus-token-5e3f9a7c", "sk-test-2b8d6e1f4a"
    env = dict(os.environ, MEMSEARCH_MILVUS_TOKEN=secret, OPENAI_API_KEY=key)
    outputs = []
    for args in (["index", "--json"], ["status", "--json"], ["search", "redis", "--json"], ["-v", "index", "--force"]):
        verbose = args[0] == "-v"
        command = (
            [sys.executable, "-m", "memsearch_lsp", *args[verbose:]]
            if not verbose
            else [sys.executable, "-m", "memsearch_lsp", "-v", *args[1:]]
        )
        result = subprocess.run(
            [*command, "--workspace", str(workspace)], capture_output=True, text=True, env=env, timeout=300
        )
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout + result.stderr)
    assert not [o for o in outputs if secret in o or key in o]
    for path in (workspace / ".memsearch").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert secret.encode() not in data and key.encode() not in data, path


def test_symbol_ranges_read_a_file_again_only_when_it_changed(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from memsearch_lsp.lsp.features.symbols import _disk_lines, lines_of

    (tmp_path / "memory").mkdir()
    log = tmp_path / "memory" / "2026-01-02.md"
    log.write_text("# 2026-01-02\n\n## Ops\n\nfirst\n")
    ls, root = SimpleNamespace(open_text=lambda uri: None), SimpleNamespace(path=tmp_path)
    assert list(lines_of(ls, root, "memory/2026-01-02.md") or [])[4] == "first"
    hits = _disk_lines.cache_info().hits
    lines_of(ls, root, "memory/2026-01-02.md")
    assert _disk_lines.cache_info().hits == hits + 1, "an unchanged file is not read again"
    log.write_text("# 2026-01-02\n\n## Ops\n\nsecond, longer\n")  # an agent rewrites it outside the editor
    assert list(lines_of(ls, root, "memory/2026-01-02.md") or [])[4] == "second, longer"
    log.unlink()
    assert lines_of(ls, root, "memory/2026-01-02.md") is None
    ls.open_text = lambda uri: "# buffer\nunsaved"  # an open buffer wins over the disk
    assert list(lines_of(ls, root, "memory/2026-01-02.md") or []) == ["# buffer", "unsaved"]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_symbol_ranges_from_the_index_equal_ranges_from_the_disk(workspace: Path, make_memory, encoding: str) -> None:
    """workspace/symbol ranges a hit by the chunk's last line as indexed instead of reading its file."""
    from pygls.workspace import PositionCodec

    text = "# 2026-02-01\n\n## Zoo 🦘\n\nthe kangaroo café opened 🦘🦘\n\n## Later\nnaïve wombat\n"
    (workspace / "memory" / "2026-02-01.md").write_bytes(text.replace("\n", "\r\n").encode())
    memory = make_memory(workspace)
    memory.index()
    codec = PositionCodec(types.PositionEncodingKind(encoding))
    seen = 0
    for query in ("kangaroo café", "wombat", "deploy", "redis cache", "release", "budget"):
        for hit in memory.search(query, top_k=20):
            disk = (workspace / hit.source).read_text(encoding="utf-8").replace("\r\n", "\n").split("\n")
            assert hit.last_line is not None
            got = convert.hit_range(codec, hit, None)
            assert got == convert.hit_range(codec, hit, disk), (hit.source, hit.start_line, hit.end_line)
            seen += 1
    assert seen > 20


def test_a_script_that_never_closes_its_memory_leaves_what_it_wrote_found(workspace: Path) -> None:
    """The README's agent loop never calls close(): the note it remembered is searchable by the next process (its
    last writes reached the index when the process ended), and the process ends without a traceback."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    opened = (
        "from tests.fakes import FakeEmbedder\nfrom memsearch_lsp import Memory\n"
        f"m = Memory({str(workspace)!r}, embedder=FakeEmbedder())\n"
    )
    wrote = subprocess.run(
        [
            sys.executable,
            "-c",
            opened + "m.search('warm up')\nm.remember('The flux capacitor needs 1.21 gigawatts.')\n",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert wrote.returncode == 0 and "Traceback" not in wrote.stderr, wrote.stderr
    found = subprocess.run(
        [sys.executable, "-c", opened + "print(len(m.search('flux capacitor gigawatts')))\nm.close()\n"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert found.stdout.strip() == "1", found.stderr


HOLDER = """
import sys
import threading
from memsearch_lsp.core.memory import Memory
from tests.fakes import FakeEmbedder
Memory(sys.argv[1], embedder=FakeEmbedder()).claim()
print("ready", flush=True)
sys.stdin.read()
"""


def test_an_index_held_by_another_process_names_its_pid(workspace: Path) -> None:
    """The README's Troubleshooting says the pid of the process holding the index is in the IndexBusy message."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(workspace)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(IndexBusy, match=rf"another process \(pid {holder.pid}\) holds the index"):
            open_memory(workspace, wait_s=0.5, embedder=FakeEmbedder())
    finally:
        holder.communicate("")


def test_an_owner_that_answers_a_ping_late_is_followed_not_reported_busy(workspace: Path) -> None:
    """A second `index` started while the first one (an owner) was starting on a loaded machine failed at once with
    IndexBusy when the owner's first ping came late (2 s); the other commands waited. It is asked again for a while."""
    with owner_process(workspace) as owner:
        os.kill(owner.pid, signal.SIGSTOP)  # (as busy as a process can be: it answers once it runs again)
        resume = threading.Timer(3.0, os.kill, (owner.pid, signal.SIGCONT))
        resume.start()
        try:
            with open_memory(workspace, embedder=FakeEmbedder()) as followed:
                assert isinstance(followed, RemoteMemory)
                assert followed.status()["chunks"] > 0
        finally:
            resume.join()


def test_an_owner_whose_index_folder_is_deleted_serves_the_others_again(workspace: Path, make_memory) -> None:
    """`rm -rf .memsearch` (or `git clean -xfd`) beside a running editor: its record and socket were gone for good, so
    the CLI, hooks and other windows each waited 30 s and failed with IndexBusy (or opened a second index in the
    same folder) until the editor restarted. The owner takes its folder's lock again and publishes both again."""
    owner = make_memory(workspace)
    owner.index()
    with owner_serving(owner):
        shutil.rmtree(workspace / ".memsearch")
        wait_until(lambda: record_path(workspace).exists(), "the owner's record to be written again", timeout=30)
        assert locked_by_other(Path(owner.uri))  # held again: no other process opens a second index there
        status = cli(workspace, "status", "--json", timeout=120)
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["served_by_pid"] == os.getpid()
        found = cli(workspace, "search", "Redis cache config", "--json", timeout=120)
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout)["hits"][0]["heading"] == "Redis Caching"  # refilled from the Markdown
