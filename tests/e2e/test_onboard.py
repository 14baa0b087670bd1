"""First run: `init`, `doctor`, memory workspaces only, and the platform guard (fast: no model)."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memsearch_lsp import cli
from memsearch_lsp.config import CONFIG_FILE, Config, load_config, tomllib, user_config_path
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.onboard import config_template, init_workspace, is_memory_workspace
from memsearch_lsp.core.process.owner import OwnerServer
from memsearch_lsp.doctor import run_doctor
from tests import helpers
from tests.fakes import FakeEmbedder
from tests.helpers import ROOT

DAY = dt.date(2026, 3, 4)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return helpers.run_cli(*args, cwd=cwd, env={}, timeout=120)  # no MEMSEARCH_* setting of this process


# -- init --------------------------------------------------------------------------------------
def test_init_creates_a_memory_and_is_idempotent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMSEARCH_SEARCH_MIN_SCORE")  # conftest's setting for the fake embedder: none here
    root = tmp_path / "project"
    first = init_workspace(root, today=DAY)
    assert first.created == (CONFIG_FILE, "memory/MEMORY.md", "memory/2026-03-04.md", ".gitignore")
    assert (root / ".gitignore").read_text() == ".memsearch/\n"
    assert (root / "memory/2026-03-04.md").read_text().startswith("# 2026-03-04\n")
    assert (root / "memory/MEMORY.md").read_text().startswith("# Memory\n")
    assert load_config(root) == Config()  # the template changes nothing until lines are uncommented
    assert is_memory_workspace(root)
    (root / "memory/MEMORY.md").write_text("# Mine\n")
    before = tree(root)
    again = init_workspace(root, today=DAY)
    assert again.created == () and again.updated == ()
    assert set(again.existing) == set(first.created)
    assert tree(root) == before  # never overwrites


def test_init_appends_to_an_existing_gitignore_once(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("node_modules/\n*.log")  # no final newline
    result = init_workspace(tmp_path, today=DAY)
    assert result.updated == (".gitignore",) and ".gitignore" not in result.created
    assert (tmp_path / ".gitignore").read_text() == "node_modules/\n*.log\n.memsearch/\n"
    assert init_workspace(tmp_path, today=DAY).updated == ()
    (tmp_path / ".gitignore").write_text("/.memsearch\n")
    assert init_workspace(tmp_path, today=DAY).updated == ()


@pytest.mark.parametrize(
    ("lines", "covered"),
    [
        ("  .memsearch/", False),  # (git keeps the leading spaces: the pattern is "  .memsearch/")
        (".memsearch/\n!.memsearch/", False),  # (the later negation un-ignores it)
        ("# .memsearch/", False),
        ("**/.memsearch/", True),
        ("/.memsearch/", True),
        (".memsearch/*", True),
        (".memsearch/\n!.memsearch/\n.memsearch", True),
    ],
)
def test_init_reads_gitignore_as_git_does(tmp_path: Path, lines: str, covered: bool) -> None:
    """`init` said `.gitignore` already covered `.memsearch/` where git disagreed (leading spaces, a negation after
    it), and the index's files showed up in `git status`; a line that covers it gets no second one."""
    (tmp_path / ".gitignore").write_text(lines + "\n")
    result = init_workspace(tmp_path, today=DAY)
    assert (".gitignore" in result.existing) is covered and (".gitignore" in result.updated) is not covered
    assert (tmp_path / ".gitignore").read_text() == lines + "\n" + ("" if covered else ".memsearch/\n")
    if shutil.which("git"):  # (git's own answer, where git is installed)
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
        (tmp_path / ".memsearch" / "milvus.db").mkdir(parents=True)
        asked = subprocess.run(["git", "-C", str(tmp_path), "check-ignore", "-q", ".memsearch/milvus.db/x"])
        assert asked.returncode == 0, (tmp_path / ".gitignore").read_text()


def test_init_uses_the_configured_memory_folder(tmp_path: Path) -> None:
    (tmp_path / CONFIG_FILE).write_text('[memory]\npaths = ["notes"]\n')
    result = init_workspace(tmp_path, today=DAY)
    assert "notes/MEMORY.md" in result.created and not (tmp_path / "memory").exists()
    assert (tmp_path / CONFIG_FILE).read_text() == '[memory]\npaths = ["notes"]\n'


def test_config_template_uncommented_gives_the_defaults() -> None:
    text = config_template()
    assert all(not line or line.startswith("#") for line in text.splitlines())
    body = "\n".join(
        line[2:]
        for line in text.splitlines()
        if line.startswith(("# [", "# ")) and (line.startswith("# [") or " = " in line)
    )
    data = tomllib.loads(body)
    assert set(data) == set(Config().to_dict())
    assert Config().merged(data) == Config()


def test_init_cli_json(tmp_path: Path) -> None:
    result = run_cli("init", "new", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["root"] == str((tmp_path / "new").resolve())
    assert data["created"][:2] == [CONFIG_FILE, "memory/MEMORY.md"] and ".gitignore" in data["created"]
    assert json.loads(run_cli("init", "--json", cwd=tmp_path / "new").stdout)["created"] == []


# -- only memory workspaces --------------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ["search", "redis"],
        ["index"],
        ["status"],
        ["expand", "0123456789abcdef"],
        ["compact", "--dry-run"],
        ["reset", "--yes"],
    ],
)
def test_cli_outside_a_memory_workspace_exits_1_and_writes_nothing(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "README.md").write_text("# not memory\n")
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 1
    assert "no memory here: run `memsearch-lsp init`" in result.stderr
    assert result.stdout == "" and len(result.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md"]


def test_no_memory_here_names_the_configured_memory_folders(tmp_path: Path) -> None:
    """With `[memory] paths = ["notes"]` in the user's file, a folder holding `memory/` was told it had "no memory/ and
    no .memsearch.toml" (the default folder, not the one that counts); doctor said "notes" already."""
    user = user_config_path()  # (under the test's own XDG_CONFIG_HOME: conftest)
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('[memory]\npaths = ["notes"]\n')
    (tmp_path / "memory").mkdir()
    said = run_cli("search", "redis", cwd=tmp_path).stderr
    assert "no memory here" in said and "no notes/ and no .memsearch.toml" in said and "memory/" not in said, said
    user.write_text('[memory]\npaths = ["notes/", "TODO.md", "J.markdown", "N.MD"]\n')  # (folder with its slash, files)
    said = run_cli("search", "redis", cwd=tmp_path).stderr
    assert "no notes/ or TODO.md or J.markdown or N.MD and no .memsearch.toml" in said, said


def test_memory_workspace_markers(tmp_path: Path) -> None:
    assert not is_memory_workspace(tmp_path)
    (tmp_path / "notes").mkdir()
    assert not is_memory_workspace(tmp_path)
    assert is_memory_workspace(tmp_path, Config().merged({"memory": {"paths": ["notes"]}}))
    (tmp_path / CONFIG_FILE).write_text("")
    assert is_memory_workspace(tmp_path)
    (tmp_path / CONFIG_FILE).unlink()
    (tmp_path / "memory").mkdir()
    assert is_memory_workspace(tmp_path)


# -- platforms ---------------------------------------------------------------------------------
def test_windows_stops_at_once_with_one_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "memory").mkdir()
    monkeypatch.setattr(sys, "platform", "win32")
    for argv in (["search", "x", "-w", str(tmp_path)], ["serve"], ["init", str(tmp_path / "x")]):
        assert cli.main(argv) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Windows is not supported" in err and "Linux and macOS" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory"]


# -- doctor ------------------------------------------------------------------------------------
def test_doctor_on_a_fresh_memory_is_ok_and_says_there_is_no_index(tmp_path: Path) -> None:
    init_workspace(tmp_path, today=DAY)
    report = run_doctor(tmp_path, embedder=FakeEmbedder())
    checks = {c.name: c for c in report.checks}
    assert report.ok, report.describe()
    assert list(checks) == [
        "platform",
        "python",
        "packages",
        "mcp",
        "config",
        "endpoints",
        "workspace",
        "model",
        "language",
        "index",
    ]
    assert checks["endpoints"].status == "skip"  # none configured
    assert checks["mcp"].status == "ok" and checks["mcp"].data["installed"] is True  # the dev install has the extra
    assert checks["packages"].data["versions"]["memsearch-lsp"]
    assert "pygls" in checks["packages"].data["versions"]
    assert checks["workspace"].data["files"] == 2
    assert checks["model"].data["sha256"] and checks["model"].data["dim"] == 64
    assert "no index yet" in checks["index"].detail
    sources = checks["config"].data["sources"]
    assert sources[0]["origin"] == "workspace file" and sources[0]["keys"] == []
    assert not (tmp_path / ".memsearch").exists()  # doctor writes nothing


def test_doctor_outside_memory_fails_with_init_as_the_fix(tmp_path: Path) -> None:
    report = run_doctor(tmp_path, embedder=FakeEmbedder())
    assert not report.ok and report.problem is not None
    assert report.problem.name == "workspace" and report.problem.fix.startswith("memsearch-lsp init")
    data = report.to_dict()  # the one error shape of every command, beside the checks
    assert data["error"]["message"].startswith("workspace: no memory here")
    assert data["error"]["hint"].startswith("memsearch-lsp init") and data["checks"] and not data["ok"]
    assert report.describe().splitlines()[-1].startswith("fix: memsearch-lsp init")
    assert list(tmp_path.iterdir()) == []


def test_doctor_reports_a_bad_setting_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "memory").mkdir()
    (tmp_path / CONFIG_FILE).write_text("[search]\ntop_k = 'lots'\n")
    monkeypatch.delenv("MEMSEARCH_SEARCH_MIN_SCORE")  # conftest's setting for the fake embedder: none here
    monkeypatch.setenv("MEMSEARCH_SEARCH_RANKER", "rrf")
    report = run_doctor(tmp_path, embedder=FakeEmbedder())
    assert report.problem is not None and report.problem.name == "config" and "search.top_k" in report.problem.detail
    sources = next(c for c in report.checks if c.name == "config").data["sources"]
    assert [s["origin"] for s in sources] == ["workspace file", "environment"]
    assert sources[0]["keys"] == ["search.top_k"] and sources[1]["keys"] == ["MEMSEARCH_SEARCH_RANKER"]


def test_doctor_counts_chunks_locally_and_through_the_owner(workspace: Path) -> None:
    embedder = FakeEmbedder()
    with Memory(workspace, embedder=embedder) as memory:
        chunks = memory.index().chunks_total
    local = {c.name: c for c in run_doctor(workspace, embedder=embedder).checks}["index"]
    assert local.status == "ok" and local.data["chunks"] == chunks and "not in use" in local.detail
    memory = Memory(workspace, embedder=embedder)
    owner = OwnerServer(memory)
    owner.start()
    try:
        served = {c.name: c for c in run_doctor(workspace, embedder=embedder).checks}["index"]
        assert served.status == "ok" and served.data["chunks"] == chunks
        assert served.data["owner_pid"] == os.getpid() and served.data["socket"] == str(owner.socket)
    finally:
        owner.close()
        memory.close()


# -- install instructions ----------------------------------------------------------------------
INSTRUCTIONS = [
    "README.md",
    "vscode-extension/README.md",
    "nvim/README.md",
    "nvim/doc/memsearch.txt",
    "nvim/lua/memsearch/health.lua",
    "vscode-extension/src/common/python.ts",
    "docs/protocol.md",
]


@pytest.mark.parametrize("name", INSTRUCTIONS)
def test_install_instructions_work_today(name: str) -> None:
    """memsearch-lsp is not on a registry yet: `pip/pipx install memsearch-lsp` may only appear as
    what comes after a release, and every file that tells how to install gives a checkout command."""
    lines = (ROOT / name).read_text().splitlines()
    registry = re.compile(r"install (memsearch-lsp|\$\{PIP_PACKAGE\})(?![\w./-])")
    for n, line in enumerate(lines):
        if registry.search(line):
            around = " ".join(lines[max(0, n - 1) : n + 2])
            assert "release" in around, f"{name}:{n + 1}: a registry install that does not work yet: {line.strip()}"
    text = "\n".join(lines)
    if "install" in text and name != "docs/protocol.md":
        assert re.search(r"(pipx|pip) install (\.|<checkout|/path/to/memsearch-lsp|dist/)|installCommand", text), name


def test_json_output_stays_utf_8_for_a_path_of_bytes_that_are_not(tmp_path: Path) -> None:
    """A folder named with bytes that are not UTF-8: `--json` escapes them, so strict parsers read the output."""
    folder = os.fsencode(tmp_path) + b"/notes-\xff\xfe"
    result = subprocess.run(
        [sys.executable, "-m", "memsearch_lsp", "--json", "init", folder], capture_output=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout.decode("utf-8"))  # strict: no stray bytes on stdout
    assert os.fsencode(data["root"]) == folder and os.path.isdir(folder + b"/memory")


def test_init_refuses_the_file_systems_root() -> None:
    """Run as root, `init --workspace /` made `/` a memory that every folder below took for its own."""
    from memsearch_lsp.core.onboard import NotAProject

    with pytest.raises(NotAProject, match="root"):
        init_workspace(Path("/"))
    assert not Path("/.memsearch.toml").exists()


def test_init_names_todays_log_by_the_clock_the_other_commands_read(tmp_path: Path) -> None:
    """MEMSEARCH_NOW (tests, replays) named `remember`'s log but not `init`'s."""
    env = {**os.environ, "MEMSEARCH_NOW": "2031-07-09T10:00"}
    done = subprocess.run(
        [sys.executable, "-m", "memsearch_lsp", "init", str(tmp_path / "ws")], capture_output=True, env=env, timeout=120
    )
    assert done.returncode == 0 and (tmp_path / "ws" / "memory" / "2031-07-09.md").is_file()


def test_init_where_memory_is_a_file_creates_nothing_and_says_what_to_move(tmp_path: Path) -> None:
    (tmp_path / "memory").write_text("not a folder\n")
    done = run_cli("init", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"{tmp_path / 'memory'} is a file, not a folder; move it away" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory"]  # no .memsearch.toml: not half a workspace
