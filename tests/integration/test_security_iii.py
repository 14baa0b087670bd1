"""Security and robustness III, in process: the index folder is private and really ours, `init` and `reset`
stay inside what this program owns, a cloned repository cannot turn on the OpenAI summariser, endpoint answers
are validated, and Milvus Lite drift fails loudly instead of passing for a corrupt index."""

from __future__ import annotations

import logging
import os
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memsearch_lsp.config import load_config, tomllib, user_config_path
from memsearch_lsp.core.embedding import EmbeddingError
from memsearch_lsp.core.embedding.openai import max_response_bytes
from memsearch_lsp.core.files import PathError, UnsafeFolder, private_folder
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.onboard import init_workspace
from memsearch_lsp.core.process.owner import OwnerServer
from memsearch_lsp.core.store import engine as lite
from memsearch_lsp.core.store.folder import MARKER, StoreError
from tests.fakes import EmbeddingServer
from tests.helpers import ROOT, cli, tree_digest


def modes(folder: Path) -> dict[str, int]:
    """The permission bits of `folder` and everything under it (links not followed), by relative path."""
    found = {".": stat.S_IMODE(folder.lstat().st_mode)}
    for path in folder.rglob("*"):
        found[path.relative_to(folder).as_posix()] = stat.S_IMODE(path.lstat().st_mode)
    return found


# -- 1. a pre-existing .memsearch/ is made private ------------------------------------------------
def test_an_existing_open_index_folder_is_tightened(workspace: Path, make_memory: Callable[..., Memory]) -> None:
    index = workspace / ".memsearch"
    index.mkdir(mode=0o755)
    os.chmod(index, 0o755)  # as `mkdir -m 755` leaves it, whatever the umask
    memory = make_memory(workspace)
    memory.index()
    memory.close()
    # an index written by an older version under a loose umask: files 0644, folders 0755
    for path in index.rglob("*"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    os.chmod(index, 0o755)

    again = make_memory(workspace)
    assert again.search("Redis cache config", vector_weight=0.0)
    found = modes(index)
    assert found["."] == 0o700
    assert {p: m for p, m in found.items() if m & 0o077} == {}, "nothing under .memsearch is open to others"
    files = [p for p in index.rglob("*") if p.is_file() and not p.is_symlink()]
    assert files and all(stat.S_IMODE(p.lstat().st_mode) == 0o600 for p in files)


def test_an_index_folder_of_another_user_is_refused(workspace: Path, make_memory: Callable[..., Memory]) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give a folder to another user")
    index = workspace / ".memsearch"
    index.mkdir(mode=0o755)
    os.chown(index, 65534, 65534)
    with pytest.raises(UnsafeFolder, match="belongs to uid 65534"):
        make_memory(workspace).index()
    assert list(index.iterdir()) == [], "nothing was written into it"


# -- 2. .memsearch must be a real folder; reset deletes only a signed index ------------------------
def test_a_linked_index_folder_is_refused_and_reset_deletes_nothing_outside(
    workspace: Path, tmp_path: Path, make_memory: Callable[..., Memory]
) -> None:
    outside = tmp_path / "outside"
    (outside / "milvus.db" / "data").mkdir(parents=True)
    (outside / "milvus.db" / "data" / "thesis.tex").write_text("years of work")
    (workspace / ".memsearch").symlink_to(outside, target_is_directory=True)
    before = tree_digest(outside)

    memory = make_memory(workspace)
    with pytest.raises(UnsafeFolder, match="not a link"):
        memory.index()
    with pytest.raises(UnsafeFolder):  # the editor's server: no socket or record through the link either
        OwnerServer(memory).start()
    result = cli(workspace, "reset", "--yes")
    assert result.returncode == 1
    assert "must be a real folder" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    result = cli(workspace, "index")
    assert result.returncode == 1 and "must be a real folder" in result.stderr
    assert tree_digest(outside) == before
    assert sorted(p.name for p in outside.iterdir()) == ["milvus.db"]


def test_reset_refuses_an_index_folder_that_is_a_file_naming_it_and_why(workspace: Path) -> None:
    """A file named `.memsearch` may be the user's: reset leaves it, and says which path it is and why."""
    (workspace / ".memsearch").write_text("my notes, not an index")
    result = cli(workspace, "reset", "--yes")
    said = result.stderr.strip()
    assert result.returncode == 1 and len(said.splitlines()) == 1
    assert f"refusing {workspace / '.memsearch'}: it is a file, and it must be a real folder" in said
    assert "left as it is" in said and (workspace / ".memsearch").read_text() == "my notes, not an index"


def test_private_folder_never_follows_a_link_or_takes_a_file(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir(mode=0o755)
    os.chmod(target, 0o755)
    (tmp_path / "link").symlink_to(target)
    (tmp_path / "file").write_text("x")
    for name in ("link", "file"):
        with pytest.raises(UnsafeFolder):
            private_folder(tmp_path / name)
    assert stat.S_IMODE(target.stat().st_mode) == 0o755, "the link's target keeps its mode"
    made = private_folder(tmp_path / "new")
    assert stat.S_IMODE(made.lstat().st_mode) == 0o700


def test_reset_deletes_only_an_index_that_carries_the_marker(
    workspace: Path, make_memory: Callable[..., Memory]
) -> None:
    memory = make_memory(workspace)
    memory.index()
    db = Path(memory.uri)
    assert (db / MARKER).is_file()
    memory.reset()
    assert not db.exists(), "a signed index is deleted"
    assert memory.index().chunks_total > 30

    # A folder at the index's place that is not an index this program made (no marker, no collection of
    # ours): reset keeps it and says why.
    memory.close()
    (db / MARKER).unlink()
    (db / "collections").rename(db / "theirs")
    (db / "theirs" / "keep.txt").write_text("theirs")
    with pytest.raises(StoreError, match="left as it is"):
        make_memory(workspace).reset()
    assert (db / "theirs" / "keep.txt").read_text() == "theirs"


def test_an_index_built_before_the_marker_is_signed_when_opened_then_reset(
    workspace: Path, make_memory: Callable[..., Memory]
) -> None:
    memory = make_memory(workspace)
    total = memory.index().chunks_total
    memory.close()
    db = Path(memory.uri)
    (db / MARKER).unlink()  # as an index built by a version before the marker existed
    again = make_memory(workspace)
    assert again.index().chunks_embedded == 0, "an old index of our schema is kept, not rebuilt"
    assert (db / MARKER).is_file()
    again.reset()
    assert not db.exists()
    assert again.index().chunks_total == total


def test_a_memory_path_under_the_home_folder_is_outside_the_workspace_for_remember_as_for_index(tmp_path: Path) -> None:
    """`memory.paths = ["~/notes", ...]` in a cloned repository's .memsearch.toml: `remember` created a folder named
    `~` in the workspace and wrote there (audit Z3). Like `index`, it reads `~` as the home folder: outside."""
    ws, home = tmp_path / "ws", tmp_path / "home"
    (ws / "memory").mkdir(parents=True)
    (home / "notes").mkdir(parents=True)
    (ws / ".memsearch.toml").write_text('[memory]\npaths = ["~/notes", "memory"]\n', encoding="utf-8")
    said = cli(ws, "remember", "probe note", env={"HOME": str(home)})
    assert said.returncode == 1 and f"{home / 'notes'}/" in said.stderr and "is outside the workspace" in said.stderr
    indexed = cli(ws, "index", env={"HOME": str(home)}, check=True)
    assert f"skipped ~/notes: memory path {home / 'notes'} is outside the workspace" in indexed.stdout + indexed.stderr
    assert not (ws / "~").exists() and list((home / "notes").iterdir()) == []


# -- 3. init never creates anything through a link that leaves the workspace -------------------------
def test_init_through_a_memory_link_outside_creates_nothing(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (ws / "memory").symlink_to(outside, target_is_directory=True)
    with pytest.raises(PathError, match="outside the workspace"):
        init_workspace(ws)
    result = cli(ws, "init")
    assert result.returncode == 1 and "outside the workspace" in result.stderr
    assert list(outside.iterdir()) == []
    assert sorted(p.name for p in ws.iterdir()) == ["memory"], "nothing was created in the workspace either"

    (ws / ".gitignore").symlink_to(outside / "their.gitignore")
    (ws / "memory").unlink()
    with pytest.raises(PathError, match=r"\.gitignore"):
        init_workspace(ws)
    assert list(outside.iterdir()) == []
    assert init_workspace(tmp_path / "fresh").created  # an ordinary folder still works


# -- 4. the OpenAI summariser is the user's choice only --------------------------------------------
def test_a_workspace_file_cannot_turn_on_the_openai_summarizer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ws = tmp_path / "cloned"
    ws.mkdir()
    (ws / ".memsearch.toml").write_text('[compact]\nsummarizer = "openai"\nolder_than_days = 3\n')
    with caplog.at_level(logging.WARNING):
        config = load_config(ws)
        load_config(ws)
    assert config.compact.summarizer == "extractive"
    assert config.compact.older_than_days == 3  # harmless keys still apply
    warnings = [r.getMessage() for r in caplog.records if "compact.summarizer" in r.getMessage()]
    assert len(warnings) == 1 and "ignoring" in warnings[0]

    user = user_config_path()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('[compact]\nsummarizer = "openai"\n')
    assert load_config(ws).compact.summarizer == "openai", "the user may choose it"
    assert load_config(ws, env={"MEMSEARCH_COMPACT_SUMMARIZER": "openai"}).compact.summarizer == "openai"


# -- 5. endpoint answers are validated and capped --------------------------------------------------
class BadEndpoint(EmbeddingServer):
    """/v1/embeddings whose answers go wrong in the way `mode` names, until `mode` is set to ""."""

    def __init__(self) -> None:
        self.mode = ""
        super().__init__()

    def reply(self, body: dict[str, Any], step: str | float | None) -> Any:
        status, data, headers = super().reply(body, step)
        if status == 200 and self.mode in ("nan", "zero"):
            for item in data["data"]:
                item["embedding"] = (
                    [float("nan")] * len(item["embedding"]) if self.mode == "nan" else [0.0] * len(item["embedding"])
                )
        if status == 200 and self.mode == "huge":
            data["padding"] = "x" * (max_response_bytes(len(body["input"])) + 1)
        return status, data, headers


@pytest.fixture
def bad() -> Iterator[BadEndpoint]:
    server = BadEndpoint()
    yield server
    server.close()


@pytest.mark.parametrize("mode", ["nan", "zero"])
def test_non_finite_and_zero_vectors_are_refused_and_never_cached(bad: BadEndpoint, workspace: Path, mode: str) -> None:
    settings = {"provider": "openai", "base_url": bad.url, "model": "fake-a", "api_key_env": ""}
    with Memory(workspace, embedding=settings) as memory:
        memory.embedder.embed(["dimension probe"])  # learn the dimension from a good answer
        bad.mode = mode
        with pytest.raises(EmbeddingError, match=f"{bad.url}/embeddings.*(NaN|all zeros)"):
            memory.index()
        bad.mode = ""
        stats = memory.index()
        assert stats.chunks_embedded == stats.chunks_total > 30, "nothing bad was stored or reused"
        hits = memory.search("Redis cache TTL")
        assert hits and hits[0].heading == "Redis Caching"


def test_a_huge_or_malformed_answer_is_refused_naming_the_endpoint(bad: BadEndpoint, workspace: Path) -> None:
    settings = {"provider": "openai", "base_url": bad.url, "model": "fake-a", "api_key_env": "", "max_retries": 0}
    with Memory(workspace, embedding=settings) as memory:
        bad.mode = "huge"
        with pytest.raises(EmbeddingError, match=f"{bad.url}/embeddings sent .* bytes .* more than"):
            memory.embedder.embed(["one text"])
        for garbage, why in (
            (b"{not json", "not an embeddings list"),
            (b'{"data": 3}', "not an embeddings list"),
            (b'{"data": [{"index": 0, "embedding": ["a"]}]}', "not a list of numbers"),
        ):
            with pytest.raises(EmbeddingError, match=f"{bad.url}/embeddings.*{why}"):
                memory.embedder._vectors(garbage, 1)  # type: ignore[attr-defined]


# -- 8. Milvus Lite drift stops with one message; only corrupt data moves aside ------------------------
def test_pyproject_pins_the_supported_milvus_lite() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert f"{lite.PACKAGE}{lite.SUPPORTED}" in deps
    assert lite.supported(lite.engine_version()), "the installed milvus-lite is the tested one"


def _broken_aside(workspace: Path) -> list[str]:
    return [p.name for p in (workspace / ".memsearch").iterdir() if ".broken-" in p.name]


def engine_changed(monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    """The engine's process of this test runs `change` first (Python: a release that moved or broke something)."""
    from memsearch_lsp.core.store import writer

    script = f"{change}\nfrom memsearch_lsp.core.store.writer import main\nmain()\n"
    monkeypatch.setattr(writer, "command", lambda: [sys.executable, "-c", script])


def test_a_renamed_engine_internal_stops_with_one_message_and_moves_nothing(
    workspace: Path, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = make_memory(workspace)
    first.index()
    first.close()
    db = workspace / ".memsearch" / "milvus.db"
    before = tree_digest(db / "collections")
    engine_changed(monkeypatch, "from milvus_lite.db import MilvusLite\ndel MilvusLite.get_collection")
    # A new note: the index must open the engine (an unchanged one is answered from its saved read model alone).
    (workspace / "memory" / "new.md").write_text("# New\n\nA note written after the index.\n")
    memory = make_memory(workspace)
    with pytest.raises(lite.EngineDrift) as info:
        memory.index()  # the pass ends when the engine has its writes: it meets the drift
    assert memory.search("a note written after the index", top_k=1)[0].source == "memory/new.md"  # searchable
    monkeypatch.undo()
    message = str(info.value)
    assert "milvus-lite" in message and lite.engine_version() in message and lite.SUPPORTED in message
    assert "AttributeError" in message and "\n" not in message
    assert _broken_aside(workspace) == []
    assert tree_digest(db / "collections") == before, "the index is left as it is"


def test_drift_in_a_write_is_reported_as_drift(
    workspace: Path, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = make_memory(workspace)
    memory.index()
    memory.close()
    memory = make_memory(workspace)
    engine_changed(
        monkeypatch,
        "from milvus_lite.engine.collection import Collection\n"
        "def upsert(self, records, partition_name, new_argument):\n    raise AssertionError('never called')\n"
        "Collection.upsert = upsert",
    )
    (workspace / "memory" / "new.md").write_text("# New\n\nA note written after the index.\n")
    with pytest.raises(lite.EngineDrift, match="TypeError"):
        memory.index()
    with pytest.raises(lite.EngineDrift, match="TypeError"):  # and said again when the memory closes
        memory.close()
    monkeypatch.undo()
    assert _broken_aside(workspace) == []


def test_an_unexpected_engine_error_is_not_taken_for_corruption(
    workspace: Path, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = make_memory(workspace)
    first.index()
    first.close()
    engine_changed(
        monkeypatch,
        "from milvus_lite.db import MilvusLite\n"
        "def has_collection(self, name, database_name='default'):\n    raise RuntimeError('something new went wrong')\n"
        "MilvusLite.has_collection = has_collection",
    )
    (workspace / "memory" / "new.md").write_text("# New\n\nA note written after the index.\n")  # opens the engine
    memory = make_memory(workspace)
    with pytest.raises(StoreError, match="left as it is") as info:
        memory.index()
    assert "RuntimeError: something new went wrong" in str(info.value)
    monkeypatch.undo()
    assert _broken_aside(workspace) == []


def test_an_untested_milvus_lite_is_named_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(lite, "engine_version", lambda: "3.3.0")
    lite.check_engine.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger="memsearch_lsp"):
            lite.check_engine()
            lite.check_engine()
    finally:
        lite.check_engine.cache_clear()
    said = [r.getMessage() for r in caplog.records if "milvus-lite 3.3.0" in r.getMessage()]
    assert len(said) == 1 and lite.SUPPORTED in said[0]
