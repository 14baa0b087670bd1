"""`doctor` sees every settings source (user file, workspace file, environment, VS Code settings), asks the endpoints
they configure, gives advice that fits the provider in use, and fails in the one JSON error shape."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memsearch_lsp.config import user_config_path
from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.onboard import init_workspace
from memsearch_lsp.doctor import run_doctor
from tests import helpers
from tests.fakes import FakeEmbedder
from tests.helpers import free_port


def user_file(text: str) -> Path:
    path = user_config_path()  # under the test's own XDG_CONFIG_HOME (conftest)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@contextlib.contextmanager
def endpoint(status: int, heard: list[dict[str, str]] | None = None, location: str = "") -> Iterator[str]:
    """An HTTP server answering every GET with `status` (and `location` as its Location), each request's path and
    headers kept in `heard`; yields its /v1 base URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if heard is not None:
                heard.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
            body = b'{"data": []}'
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            if location:
                self.send_header("Location", location)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def checks(root: Path) -> dict[str, object]:
    return {c.name: c for c in run_doctor(root, embedder=FakeEmbedder()).checks}


def test_doctor_names_the_user_file_and_its_keys_and_an_unreachable_summariser(tmp_path: Path) -> None:
    init_workspace(tmp_path)
    closed = f"http://127.0.0.1:{free_port()}/v1"
    path = user_file(f'[compact]\nsummarizer = "openai"\nbase_url = "{closed}"\n\n[search]\ntop_k = 5\n')
    report = run_doctor(tmp_path, embedder=FakeEmbedder())
    config = next(c for c in report.checks if c.name == "config")
    source = config.data["sources"][0]
    assert (source["origin"], source["path"]) == ("user file", str(path))
    assert source["keys"] == ["compact.summarizer", "compact.base_url", "search.top_k"]
    assert str(path) in config.detail and "compact.base_url" in config.detail
    assert report.problem is not None and report.problem.name == "endpoints"
    assert closed in report.problem.detail and "cannot reach" in report.problem.detail
    assert "compact.summarizer = 'extractive'" in report.problem.fix and "reset" not in report.problem.fix
    data = report.to_dict()
    assert data["error"]["message"].startswith("endpoints: summariser") and data["error"]["hint"]
    assert [c["name"] for c in data["checks"]][:5] == ["platform", "python", "packages", "mcp", "config"]


def test_an_endpoint_that_answers_is_ok_and_one_that_refuses_the_key_is_a_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    init_workspace(tmp_path)
    with endpoint(200) as up, endpoint(401) as refusing:
        user_file(
            f'[compact]\nsummarizer = "openai"\nbase_url = "{up}"\n'
            f'[embedding]\nprovider = "openai"\nbase_url = "{refusing}"\napi_key_env = "DOCTOR_TEST_KEY"\n'
        )
        monkeypatch.setenv("DOCTOR_TEST_KEY", "sk-test")
        found = checks(tmp_path)["endpoints"]
    assert found.status == "fail"  # type: ignore[attr-defined]
    assert found.data["summariser"]["status"] == "ok" and found.data["embeddings"]["status"] == "refused"  # type: ignore[attr-defined]
    assert "DOCTOR_TEST_KEY" in found.fix and "summariser" not in found.fix  # type: ignore[attr-defined]


def test_a_redirecting_endpoint_is_a_problem_and_the_key_does_not_follow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """doctor asked GET /models with urllib, which follows a redirect and sends the Authorization header along (to
    another host, or from https to http)."""
    init_workspace(tmp_path)
    elsewhere: list[dict[str, str]] = []
    asked: list[dict[str, str]] = []
    with endpoint(200, elsewhere) as other, endpoint(302, asked, location=f"{other}/models") as redirecting:
        user_file(f'[embedding]\nprovider = "openai"\nbase_url = "{redirecting}"\napi_key_env = "DOCTOR_TEST_KEY"\n')
        monkeypatch.setenv("DOCTOR_TEST_KEY", "sk-test")
        found = checks(tmp_path)["endpoints"]
    assert [h["authorization"] for h in asked] == ["Bearer sk-test"] and elsewhere == [], "the key stayed"
    assert found.status == "fail" and found.data["embeddings"]["status"] == "redirects"  # type: ignore[attr-defined]
    assert f"redirects to {other}/models" in found.detail  # type: ignore[attr-defined]
    assert "embedding.base_url" in found.fix and "redirects to" in found.fix  # type: ignore[attr-defined]


def test_an_endpoint_with_a_user_and_password_in_its_url_is_asked_as_the_embedder_asks(tmp_path: Path) -> None:
    """urllib takes no credentials in a URL: a reachable endpoint was said not to resolve ("Name or service not
    known"); the password is never said."""
    init_workspace(tmp_path)
    asked: list[dict[str, str]] = []
    with endpoint(200, asked) as up:
        with_user = up.replace("http://", "http://bob:hunter2@")
        user_file(f'[embedding]\nprovider = "openai"\nbase_url = "{with_user}"\napi_key_env = ""\n')
        found = checks(tmp_path)["endpoints"]
    assert found.status == "ok", found  # type: ignore[attr-defined]
    assert [h["path"] for h in asked] == ["/v1/models"]
    assert up.replace("http://", "http://bob:***@") in found.detail  # type: ignore[attr-defined]
    assert "hunter2" not in str(found.to_dict())  # type: ignore[attr-defined]


def test_every_source_is_listed_with_its_path_in_precedence_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    init_workspace(tmp_path)
    user_file("[search]\ntop_k = 4\n")
    (tmp_path / ".memsearch.toml").write_text('[watch]\ndebounce_ms = 500\n[milvus]\ncollection = "customers"\n')
    monkeypatch.setenv("MEMSEARCH_SEARCH_RANKER", "rrf")
    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".vscode" / "settings.json").write_text(
        '{\n  // the editor\'s own comment\n  "memsearch.search.topK": 7,\n  "memsearch": {"watch": {"debounceMs": 9}},'
        '\n  "editor.fontSize": 12, /* more */\n}\n'
    )
    sources = checks(tmp_path)["config"].data["sources"]  # type: ignore[attr-defined]
    assert [s["origin"] for s in sources] == [
        "user file",
        "workspace file",
        "environment",
        "VS Code workspace settings",
    ]
    assert sources[1] == {
        "origin": "workspace file",
        "path": str(tmp_path / ".memsearch.toml"),
        "keys": ["watch.debounce_ms", "milvus.collection"],
        "ignored": ["milvus.collection"],  # (a collection of the user's Milvus server is the user's to name)
        "note": "",
    }
    assert "MEMSEARCH_SEARCH_RANKER" in sources[2]["keys"]
    assert sources[3]["keys"] == ["memsearch.search.topK", "memsearch.watch"] and "not the CLI" in sources[3]["note"]


def test_vscode_endpoint_settings_count_from_the_user_settings_only(tmp_path: Path) -> None:
    """A workspace's .vscode/settings.json cannot choose an endpoint (VS Code reads them from the user's settings
    only): listed as ignored; the user's VS Code settings' endpoint is asked like the CLI's."""
    init_workspace(tmp_path)
    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".vscode" / "settings.json").write_text(
        '{"memsearch.compact.summarizer": "openai", "memsearch.compact.baseUrl": "http://127.0.0.1:9/v1",'
        ' "memsearch.search.topK": 3, "memsearch.milvus.collection": "customers"}'
    )
    found = checks(tmp_path)
    source = found["config"].data["sources"][-1]  # type: ignore[attr-defined]
    assert source["origin"] == "VS Code workspace settings"
    ignored = ["memsearch.compact.baseUrl", "memsearch.compact.summarizer", "memsearch.milvus.collection"]
    assert source["ignored"] == ignored, source
    assert "memsearch.compact.baseUrl (" in found["config"].detail  # type: ignore[attr-defined]
    assert found["endpoints"].status == "skip"  # type: ignore[attr-defined]
    closed = f"http://127.0.0.1:{free_port()}/v1"
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "Code" / "User" / "settings.json"
    user.parent.mkdir(parents=True)
    user.write_text(f'{{"memsearch": {{"compact": {{"summarizer": "openai", "baseUrl": "{closed}"}}}}}}')
    endpoints = checks(tmp_path)["endpoints"]
    assert endpoints.status == "fail", endpoints  # type: ignore[attr-defined]
    assert f"summariser (VS Code) {closed}: cannot reach" in endpoints.detail  # type: ignore[attr-defined]


def test_workspace_editor_paths_outside_the_workspace_are_listed_as_ignored(tmp_path: Path) -> None:
    """VS Code's extension sends a workspace's `compact.promptFile` / `embedding.model` only inside the workspace
    (trust.WORKSPACE_PATH_KEYS, as for `.memsearch.toml`): doctor says which it leaves out."""
    init_workspace(tmp_path)
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "p.md").write_text("Summarise.")
    (tmp_path / ".vscode").mkdir()
    settings = tmp_path / ".vscode" / "settings.json"
    settings.write_text('{"memsearch.compact.promptFile": "~/.aws/credentials", "memsearch.embedding.model": "../x"}')
    source = checks(tmp_path)["config"].data["sources"][-1]  # type: ignore[attr-defined]
    assert source["ignored"] == ["memsearch.compact.promptFile", "memsearch.embedding.model"], source
    settings.write_text(
        '{"memsearch.compact.promptFile": "prompts/p.md", "memsearch.embedding.model": "multilingual-e5-small"}'
    )
    assert checks(tmp_path)["config"].data["sources"][-1]["ignored"] == []  # type: ignore[attr-defined]


def test_a_broken_onnx_model_folder_gets_onnx_advice_not_a_reset(tmp_path: Path) -> None:
    """The README's `onnx` example with the folder not fetched yet."""
    init_workspace(tmp_path)
    (tmp_path / ".memsearch.toml").write_text('[embedding]\nprovider = "onnx"\nmodel = "models/multilingual-minilm"\n')
    report = run_doctor(tmp_path)
    assert report.problem is not None and report.problem.name == "model"
    assert "onnx" in report.problem.detail and "not a folder" in report.problem.detail
    assert "model.onnx" in report.problem.fix and "reset" not in report.problem.fix
    assert "runs only" not in report.problem.detail  # not the bundled provider's message
    index = next(c for c in report.checks if c.name == "index")
    assert index.status == "skip" and "reset" not in index.fix


def test_doctor_json_failure_is_the_error_shape_with_its_checks(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "memsearch_lsp", "doctor", "--json", "--workspace", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert result.returncode == 1 and result.stderr == ""
    data = json.loads(result.stdout)
    assert set(data["error"]) == {"message", "hint"} and "no memory here" in data["error"]["message"]
    assert {c["name"] for c in data["checks"]} >= {"config", "workspace", "model"} and data["ok"] is False


@pytest.mark.parametrize("broken", [".memsearch", ".memsearch/milvus.db"])
def test_an_index_folder_that_is_a_file_is_a_problem_not_no_index_yet(tmp_path: Path, broken: str) -> None:
    """Every command refuses such an index; doctor says so, with the fix, instead of "no index yet"."""
    init_workspace(tmp_path)
    (tmp_path / broken).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / broken).write_text("x")
    index = checks(tmp_path)["index"]
    assert index.status == "fail" and "not a folder" in index.detail and f"remove {tmp_path / broken}" in index.fix


def test_an_index_that_cannot_be_read_is_a_problem_and_an_empty_one_is_not_indexed_yet(
    workspace: Path, make_memory: Any
) -> None:
    """Doctor opened a damaged index as every command does (moved aside, an empty one made, a WARNING on stderr),
    then said "ok 0 chunks in 0 files" and "no problems found" (exit 0); `status` showed 0 files with no hint."""
    memory = make_memory(workspace)
    memory.index()
    memory.close()
    for path in (workspace / ".memsearch" / "milvus.db" / "collections").rglob("*"):
        if path.is_file():
            path.write_bytes(b"\xae\x00garbage" * 10)
    index = checks(workspace)["index"]
    (aside,) = [p.name for p in (workspace / ".memsearch").iterdir() if ".broken-" in p.name]
    assert index.status == "fail" and "cannot be read" in index.detail and aside in index.detail, index
    assert "memsearch-lsp index" in index.fix and "reset" not in index.fix, index
    again = checks(workspace)["index"]  # (the empty index made in its place, with 13 memory files to index)
    assert again.status == "ok" and "not indexed yet" in again.detail and "memsearch-lsp index" in again.detail, again
    refilled = make_memory(workspace)
    refilled.index()
    refilled.close()
    assert checks(workspace)["index"].detail.endswith("chunks in 13 files, not in use")


def test_an_index_of_another_model_moved_aside_is_no_problem(workspace: Path, make_memory: Any) -> None:
    """A model switch starts the index afresh (the copy before it kept as milvus.db.previous-*): said, not failed as
    damage; the next command or the editor rebuilds it."""
    memory = make_memory(workspace, FakeEmbedder(dim=32))
    memory.index()
    memory.close()
    index = checks(workspace)["index"]  # (FakeEmbedder's own dimension: another model)
    assert index.status == "ok" and "milvus.db.previous-" in index.detail and "32-d" in index.detail, index
    assert "memsearch-lsp index" in index.detail, index


def test_a_damaged_index_at_a_local_milvus_uri_is_a_problem_too(
    workspace: Path, make_memory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review found doctor saying "ok 0 chunks ... on remote Milvus at" a local folder named by milvus.uri after
    moving it aside as damaged (only the default .memsearch/milvus.db was checked)."""
    db = workspace.parent / "idx" / "mydb"
    monkeypatch.setenv("MEMSEARCH_MILVUS_URI", str(db))
    memory = make_memory(workspace)
    memory.index()
    memory.close()
    assert checks(workspace)["index"].detail.endswith(f"chunks in 13 files in the local index at {db}")
    for path in (db / "collections").rglob("*"):
        if path.is_file():
            path.write_bytes(b"\xae\x00garbage" * 10)
    index = checks(workspace)["index"]
    assert index.status == "fail" and "mydb.broken-" in index.detail and "remote" not in index.detail, index


def test_a_remote_index_that_does_not_answer_is_a_problem(tmp_path: Path) -> None:
    """milvus.uri (a user setting) is contacted as every command would, not reported as fine unseen."""
    init_workspace(tmp_path)
    user_file(f'[milvus]\nuri = "http://127.0.0.1:{free_port()}"\n')
    index = checks(tmp_path)["index"]
    assert index.status == "fail" and "cannot reach the index on remote Milvus" in index.detail
    assert "milvus.uri" in index.fix


def test_a_server_never_indexed_for_the_workspace_is_no_index_yet_and_doctor_makes_nothing(tmp_path: Path) -> None:
    """Audit U 3: doctor said "ok 0 chunks in 0 files" on a server the workspace was never indexed on, and made the
    index's two empty collections there by opening it."""
    from pymilvus import MilvusClient

    (tmp_path / "ws").mkdir()
    init_workspace(tmp_path / "ws")
    with helpers.milvus_lite_server(tmp_path / "server-data") as uri:
        user_file(f'[milvus]\nuri = "{uri}"\n')
        client = MilvusClient(uri=uri)
        try:
            index = checks(tmp_path / "ws")["index"]
            assert index.status == "ok" and index.detail.startswith("no index yet on the server"), index
            assert client.list_collections() == [], "doctor only reads"
            (tmp_path / "ws" / "memory" / "MEMORY.md").write_text("# Memory\n\n## Queue\n\nThe okapi queue drains.\n")
            with Memory(tmp_path / "ws", embedder=FakeEmbedder()) as memory:
                memory.index()
            made = sorted(client.list_collections())
            index = checks(tmp_path / "ws")["index"]
            assert index.status == "ok" and index.data["chunks"] > 0 and "on remote Milvus" in index.detail, index
            assert sorted(client.list_collections()) == made and len(made) == 2
        finally:
            client.close()


def test_a_read_only_index_folder_is_a_permissions_problem_not_damage(tmp_path: Path) -> None:
    """Every command failed with `OSError: [Errno 30] Read-only file system: 'memsearch.lock'` (the lock file, not
    its folder), and doctor advised a reset, which failed the same way."""
    init_workspace(tmp_path)
    (tmp_path / "memory" / "2026-02-03.md").write_text("# 2026-02-03\n\n## 10:00\n\nThe okapi queue drains at night.\n")
    helpers.cli(tmp_path, "index", check=True)
    (tmp_path / "memory" / "2026-02-03.md").write_text("# 2026-02-03\n\n## 10:00\n\nThe okapi queue drains at noon.\n")
    index = tmp_path / ".memsearch"
    before = helpers.tree_digest(index)
    with helpers.read_only(index) as prefix:
        for argv in (("search", "okapi queue"), ("reset", "--yes")):
            said = helpers.cli(tmp_path, *argv, prefix=prefix).stderr.strip()
            assert "\n" not in said and "memsearch.lock" not in said and "Error" not in said, said
            assert f"{index / 'milvus.db'} is " in said and "fix its permissions" in said, said
        doctor = json.loads(helpers.cli(tmp_path, "doctor", "--json", prefix=prefix).stdout)
    assert f"{index / 'milvus.db'} is " in doctor["error"]["message"] and "not damaged" in doctor["error"]["message"]
    assert "reset" not in doctor["error"]["hint"].replace("no reset needed", "")
    assert helpers.tree_digest(index) == before  # nothing lost, and the index opens again once writable
    assert "okapi" in helpers.cli(tmp_path, "search", "okapi queue", check=True).stdout


def test_a_read_only_workspace_with_no_index_yet_is_said_by_doctor_and_every_command(tmp_path: Path) -> None:
    """On a read-only workspace doctor said "no problems found" while every command failed with `OSError: [Errno 30]
    Read-only file system: '.../.memsearch'`, its hint sending the user to doctor."""
    init_workspace(tmp_path)
    (tmp_path / "memory" / "2026-02-03.md").write_text("# 2026-02-03\n\n## 10:00\n\nThe okapi queue drains at night.\n")
    before = helpers.tree_digest(tmp_path)
    with helpers.read_only(tmp_path) as prefix:
        for argv in (("search", "okapi queue"), ("status",), ("index",)):
            done = helpers.cli(tmp_path, *argv, prefix=prefix)
            said = done.stderr.strip()
            assert done.returncode == 1 and "\n" not in said and "Error" not in said, said
            assert f"{tmp_path} is " in said and "then run again" in said, said
        doctor = helpers.cli(tmp_path, "doctor", "--json", prefix=prefix)
    assert doctor.returncode == 1
    message = json.loads(doctor.stdout)["error"]["message"]
    assert f"{tmp_path} is " in message and "no index can be built" in message, message
    assert helpers.tree_digest(tmp_path) == before


def test_vscode_settings_values_are_checked_as_the_server_checks_them(tmp_path: Path) -> None:
    """doctor listed VS Code's settings but never read their values: an out-of-range minScore, an unknown ranker and
    a misspelt key were "no problems found" (exit 0) while the server rejects the values (Config.merged). Each bad
    key is named with why, beside its file; a workspace's key the extension does not send is not judged."""
    init_workspace(tmp_path)
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "Code" / "User" / "settings.json"
    user.parent.mkdir(parents=True)
    user.write_text(
        '{\n  "memsearch.search.minScore": 3,\n  "memsearch.search.ranker": "best",\n  "memsearch.search.topk": 5,\n'
        '  "memsearch.interpreter": ["python3"], // the extension\'s own\n  "memsearch.showNotifications": true\n}\n'
    )
    (tmp_path / ".vscode").mkdir()
    workspace = tmp_path / ".vscode" / "settings.json"
    workspace.write_text('{"memsearch": {"watch": {"debounceMs": "soon"}}, "memsearch.compact.summarizer": "gpt"}')
    result = helpers.cli(tmp_path, "doctor", "--json")
    assert result.returncode == 1, result.stderr
    error = json.loads(result.stdout)["error"]
    message = error["message"]
    assert message.startswith(f"config: VS Code user settings {user}: "), message
    assert "search.minScore: must be between 0 and 1" in message
    assert "search.ranker: expected one of ['learned', 'minmax', 'rrf', 'weighted'], got 'best'" in message
    assert "unknown setting 'search.topk'" in message
    assert f"VS Code workspace settings {workspace}: watch.debounceMs: expected int, got 'soon'" in message
    assert "summarizer" not in message and "interpreter" not in message and "showNotifications" not in message
    assert str(user) in error["hint"] and str(workspace) in error["hint"]
    user.write_text('{"memsearch.search.minScore": 0.4, "memsearch.search.ranker": "rrf", "memsearch.search.topK": 5}')
    workspace.write_text('{"memsearch": {"watch": {"debounceMs": 900}}, "memsearch.compact.summarizer": "gpt"}')
    config = checks(tmp_path)["config"]
    assert config.status == "ok", config  # type: ignore[attr-defined]
    assert "memsearch.search.minScore" in config.detail  # type: ignore[attr-defined]
    # (review N, 6) keys that hold together are judged together: dense only over the user file's BM25 only
    user_config = Path(os.environ["XDG_CONFIG_HOME"]) / "memsearch-lsp" / "config.toml"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text("[search]\nbm25_weight = 0\n")
    user.write_text('{"memsearch.search.vectorWeight": 0, "memsearch.search.bm25Weight": 1}')
    assert checks(tmp_path)["config"].status == "ok"  # type: ignore[attr-defined]


def test_settings_that_do_not_load_are_why_later_checks_skip(tmp_path: Path) -> None:
    """With a bad setting, the language and index checks said "no memory workspace" right under "ok workspace"."""
    init_workspace(tmp_path)
    (tmp_path / ".memsearch.toml").write_text("[search]\ntopk = 5\n")
    found = checks(tmp_path)
    assert found["config"].status == "fail" and found["workspace"].status == "ok"  # type: ignore[attr-defined]
    for name in ("endpoints", "language", "index"):
        assert found[name].status == "skip", found[name]  # type: ignore[attr-defined]
        assert "the settings do not load (see the config check)" in found[name].detail  # type: ignore[attr-defined]
        assert "no memory workspace" not in found[name].detail  # type: ignore[attr-defined]


def test_an_exclude_glob_that_cannot_be_read_is_a_config_failure_naming_the_file_and_key(tmp_path: Path) -> None:
    """(audit Z4, 3) `[z-a]` in memory.exclude: doctor said "cannot list the memory files ... check the folder
    permissions" and two more failures, each with re's bare message."""
    init_workspace(tmp_path)
    (tmp_path / ".memsearch.toml").write_text('[memory]\nexclude = ["memory/[z-a]*"]\n')
    found = checks(tmp_path)
    config, workspace = found["config"], found["workspace"]
    assert config.status == "fail" and workspace.status == "ok", found  # type: ignore[attr-defined]
    assert config.detail.startswith(  # type: ignore[attr-defined]
        f"{tmp_path / '.memsearch.toml'}: memory.exclude: the pattern 'memory/[z-a]*' is not a valid glob"
    )
    assert all(found[name].status == "skip" for name in ("language", "index"))  # type: ignore[attr-defined]


def test_the_clock_and_the_hooks_knobs_are_not_listed_as_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MEMSEARCH_NOW (the clock override) and the hooks' MEMSEARCH_HOOK_* were listed among the settings; the clock
    is said apart."""
    init_workspace(tmp_path)
    monkeypatch.setenv("MEMSEARCH_NOW", "2027-03-01T10:00")
    monkeypatch.setenv("MEMSEARCH_HOOK_HEADING", "Session")
    config = checks(tmp_path)["config"]
    assert config.status == "ok", config  # type: ignore[attr-defined]
    environment = next(s for s in config.data["sources"] if s["origin"] == "environment")  # type: ignore[attr-defined]
    assert environment["keys"] == ["MEMSEARCH_SEARCH_MIN_SCORE"]  # (conftest's), not the clock nor a hook's knob
    assert "environment: MEMSEARCH_SEARCH_MIN_SCORE;" in config.detail  # type: ignore[attr-defined]
    assert "the clock is set to 2027-03-01T10:00 by MEMSEARCH_NOW (not a setting" in config.detail  # type: ignore[attr-defined]
    assert config.data["clock"] == "2027-03-01T10:00"  # type: ignore[attr-defined]
