"""Finding the workspace as git does, `init` refusing nested memories, JSON errors, help, doctor's ignored
keys and the Python API's `Memory(...)` (fast: no model)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from memsearch_lsp import cli
from memsearch_lsp.config import CONFIG_FILE
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.onboard import NestedWorkspace, NoMemoryHere, find_workspace, init_workspace
from memsearch_lsp.core.search.hybrid import AmbiguousId
from memsearch_lsp.doctor import run_doctor
from tests.fakes import FakeEmbedder


def tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def run_cli(*args: str, cwd: Path, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSEARCH_")}
    if home is not None:
        env["HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "memsearch_lsp", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


# -- discovery -----------------------------------------------------------------------------------
def test_the_workspace_is_found_from_a_subfolder_up_to_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    project = home / "code" / "project"
    (project / "src" / "pkg").mkdir(parents=True)
    init_workspace(project)
    assert find_workspace(project / "src" / "pkg") == project.resolve()
    assert find_workspace(project / "memory") == project.resolve()  # the memory folder is no workspace itself
    assert find_workspace(project) == project.resolve()
    (home / "memory").mkdir()  # a memory in the home folder is never found from below it
    monkeypatch.setenv("HOME", str(home))
    assert find_workspace(home / "code") is None
    assert find_workspace(home) == home.resolve()  # run in the home folder itself, it is looked at
    assert init_workspace(home / "code" / "new").created  # a memory in home does not enclose its subfolders
    other = tmp_path / "elsewhere"
    other.mkdir()
    (tmp_path / "memory").mkdir()  # above home's parent: found (the walk stops at home only on its own path)
    assert find_workspace(other) == tmp_path.resolve()


def test_commands_in_a_subfolder_use_the_workspace(tmp_path: Path) -> None:
    project = tmp_path / "project"
    init_workspace(project)
    inner = project / "src" / "pkg"
    inner.mkdir(parents=True)
    recent = run_cli("recent", "--days", "400", "--json", cwd=inner)
    assert recent.returncode == 0, recent.stderr
    assert isinstance(json.loads(recent.stdout)["notes"], list)
    doctor = run_cli("doctor", "--json", cwd=inner)
    assert json.loads(doctor.stdout)["root"] == str(project.resolve())
    assert tree(inner) == []  # nothing is written where the command ran


def test_no_workspace_anywhere_up_is_the_init_error(tmp_path: Path) -> None:
    lone = tmp_path / "lone" / "deep"
    lone.mkdir(parents=True)
    result = run_cli("recent", cwd=lone, home=tmp_path)
    assert result.returncode == 1 and "no memory here" in result.stderr and "parent folders" in result.stderr
    assert tree(tmp_path / "lone") == ["deep"]


@pytest.mark.parametrize("where", ["memory", "memory/archive", "src"])
def test_init_refuses_inside_a_workspace_and_names_it(tmp_path: Path, where: str) -> None:
    project = tmp_path / "project"
    init_workspace(project)
    target = project / where
    target.mkdir(parents=True, exist_ok=True)
    before = tree(project)
    with pytest.raises(NestedWorkspace, match=str(project.resolve())):
        init_workspace(target)
    result = run_cli("init", "--json", cwd=target)
    assert result.returncode == 1 and result.stderr == ""
    error = json.loads(result.stdout)["error"]
    assert str(project.resolve()) in error["message"] and error["hint"]
    assert ("memory folder" in error["message"]) == where.startswith("memory")
    assert tree(project) == before  # no memory/memory/MEMORY.md, no second .memsearch.toml or .gitignore
    assert init_workspace(project).created == ()  # the workspace itself: idempotent as before


# -- one shape for errors and help ---------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ["expand", "nope"],
        ["search"],
        ["search", "x", "-k", "0"],
        ["search", "x", "--since", "last week"],
        ["frobnicate"],
        ["reset"],
    ],
)
def test_every_json_error_is_an_object_on_stdout(tmp_path: Path, args: list[str]) -> None:
    init_workspace(tmp_path / "ws")
    result = run_cli(*args, "--json", cwd=tmp_path / "ws")
    assert result.returncode == 1
    assert result.stderr == ""  # nothing but the answer
    error = json.loads(result.stdout)["error"]
    assert set(error) == {"message", "hint"} and error["message"] and error["hint"]
    plain = run_cli(*args, cwd=tmp_path / "ws")
    assert plain.returncode == 1 and plain.stdout == "" and len(plain.stderr.strip().splitlines()) == 1


def test_a_bad_setting_is_named_not_taken_for_a_missing_memory(tmp_path: Path) -> None:
    """A workspace of a memory folder alone (no .memsearch.toml, as the examples): a bad value in the environment or
    a typo in the user's file kept it from being found, and every command said "no memory here: run init"."""
    from tests.helpers import run_cli as run

    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "MEMORY.md").write_text("# Memory\n\nWe use Kafka.\n")
    bad_env = run("search", "kafka", "--json", cwd=ws, env={"MEMSEARCH_SEARCH_TOP_K": "abc", "HOME": str(tmp_path)})
    error = json.loads(bad_env.stdout)["error"]
    assert bad_env.returncode == 1 and "search.top_k" in error["message"] and "no memory" not in error["message"]
    user = tmp_path / "config" / "memsearch-lsp" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("[search]\ntopk = 3\n")
    typo = run("status", cwd=ws, env={"XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path)})
    assert typo.returncode == 1 and "search.topk" in typo.stderr and "no memory" not in typo.stderr, typo.stderr


def test_no_memory_here_under_json(tmp_path: Path) -> None:
    result = run_cli("search", "x", "--json", cwd=tmp_path, home=tmp_path)
    error = json.loads(result.stdout)["error"]
    assert result.returncode == 1 and "no memory here" in error["message"] and "init" in error["hint"]


def test_every_argument_is_explained_with_an_example_per_command() -> None:
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices  # type: ignore[union-attr]
    assert set(commands) == set(cli.COMMANDS)
    for name, sub in commands.items():
        text = sub.format_help()
        assert "example: memsearch-lsp " in text or "example: claude mcp add" in text, name
        for action in sub._actions:
            assert action.help, f"{name}: {action.dest} has no help"
    search = commands["search"].format_help()
    for words in ("QUERY", "what to look for", "--ranker", "reciprocal rank fusion", "--since", "7d", "--source"):
        assert words in search
    assert "older than DAYS" in commands["compact"].format_help()


# -- doctor ------------------------------------------------------------------------------------------
def test_doctor_lists_ignored_workspace_keys(tmp_path: Path) -> None:
    init_workspace(tmp_path)
    (tmp_path / CONFIG_FILE).write_text(
        '[milvus]\nuri = "http://example.invalid:19530"\n'
        '[compact]\nbase_url = "http://example.invalid"\n[search]\ntop_k = 5\n'
    )
    report = run_doctor(tmp_path, embedder=FakeEmbedder())
    config = next(c for c in report.checks if c.name == "config")
    source = config.data["sources"][0]
    assert source["ignored"] == ["compact.base_url", "milvus.uri"]
    assert config.data["ignored"] == ["compact.base_url", "milvus.uri"]
    assert "ignored" in config.detail and "milvus.uri" in config.detail and "compact.base_url" in config.detail
    in_effect = config.detail.split("; ignored")[0]
    assert "search.top_k" in in_effect and "milvus.uri" not in in_effect
    assert "milvus.uri" in report.describe()
    index = next(c for c in report.checks if c.name == "index")
    assert "remote Milvus" not in index.detail  # the ignored uri is not in effect


# -- the Python API ----------------------------------------------------------------------------------
def test_a_hits_fields_are_those_it_is_sent_with(tmp_path: Path) -> None:
    """`hit.score` was the ranking score while the CLI, MCP and the language server send the relevance as score."""
    init_workspace(tmp_path)
    (tmp_path / "memory" / "MEMORY.md").write_text("# Memory\n\n## Cache\n\nWe use Redis with a 5 min TTL.\n")
    with Memory(tmp_path, embedder=FakeEmbedder()) as memory:
        memory.index()
        hits = memory.search("Redis TTL")
    assert hits
    for hit in hits:
        sent = hit.to_dict()
        assert (sent["score"], sent["rank_score"]) == (round(hit.score, 4), round(hit.rank_score, 6))
        assert 0.0 < hit.score <= 1.0


def test_public_memory_expands_home_and_refuses_a_non_memory_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memsearch_lsp import open_memory

    monkeypatch.setenv("HOME", str(tmp_path))
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(NoMemoryHere, match="no memory here"):
        open_memory("~/plain")
    assert tree(plain) == []  # no .memsearch/ created
    import memsearch_lsp

    with pytest.raises(memsearch_lsp.NoMemoryHere, match="run `memsearch-lsp init`"):  # not there yet: the same
        open_memory("~/my-agent")
    assert memsearch_lsp.NoteError.__name__ == "NoteError" and issubclass(memsearch_lsp.IndexBusy, Exception)
    init_workspace(tmp_path / "my-agent")
    with open_memory("~/my-agent", embedder=FakeEmbedder()) as memory:
        assert memory.root == (tmp_path / "my-agent").resolve()


def test_memory_of_a_plain_folder_refuses_at_first_use_and_creates_nothing(tmp_path: Path) -> None:
    """Constructed, it wrote nothing, but its first search created `.memsearch/` where the CLI refuses."""
    plain = tmp_path / "plain"
    plain.mkdir()
    memory = Memory(plain, embedder=FakeEmbedder())
    with pytest.raises(NoMemoryHere, match="run `memsearch-lsp init`"):
        memory.search("anything")
    with pytest.raises(NoMemoryHere):
        memory.index()
    memory.close()
    assert tree(plain) == []


def test_expand_takes_a_unique_prefix_and_hits_have_one_shape(
    workspace: Path, make_memory: Callable[..., Memory]
) -> None:
    memory = make_memory(workspace)
    memory.index()
    hit = memory.search("Redis cache config", top_k=1)[0]
    assert hit.source == "memory/MEMORY.md" and hit.date is None and hit.to_dict()["date"] is None
    assert memory.expand(hit.id[:6]) == memory.expand(hit.id)
    assert memory.expand(hit.id[:6].upper()) is not None
    with pytest.raises(ValueError, match="a prefix needs 4 characters"):  # too short to be an id prefix
        memory.expand(hit.id[:3])
    chunk = memory.expand(hit.id)
    assert chunk is not None and chunk.archived is False and chunk.date is None
    dated = memory.search("Kafka RabbitMQ event bus", top_k=1)[0]
    assert dated.date == "2026-02-05" and dated.archived is False


def test_an_ambiguous_prefix_says_so(tmp_path: Path, make_memory: Callable[..., Memory]) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "many.md").write_text("".join(f"## Note {n}\n\nnote number {n}\n\n" for n in range(400)))
    memory = make_memory(ws)
    memory.index()
    ids = sorted(i for s in memory.indexer.manifest() for i in memory.indexer.ids(s))
    shared = next(a[:4] for a, b in itertools.pairwise(ids) if a[:4] == b[:4])  # 400 ids: some share 4 characters
    with pytest.raises(AmbiguousId, match=f"'{shared}' matches"):
        memory.expand(shared)
