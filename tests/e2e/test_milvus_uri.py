"""`milvus.uri` as a user writes it, through the CLI: a server's address without its scheme is refused before anything
is written, and `~/...` is the home folder's; nothing lands in the current folder or under `/` (audit U 1)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests import helpers
from tests.helpers import make_workspace

pytestmark = pytest.mark.model


def listing(folder: Path) -> set[str]:
    return set(os.listdir(folder))


def test_a_server_address_without_a_scheme_is_refused_and_said_by_doctor(tmp_path: Path) -> None:
    ws, cwd = make_workspace(tmp_path / "ws"), tmp_path / "cwd"
    cwd.mkdir()
    env = {"MEMSEARCH_MILVUS_URI": "127.0.0.1:19999"}
    at_root = listing(Path("/"))
    done = helpers.cli(ws, "index", cwd=cwd, env=env)
    assert done.returncode != 0
    assert "milvus.uri" in done.stderr and "write http://127.0.0.1:19999" in done.stderr, done.stderr
    doctor = helpers.cli(ws, "doctor", "--json", cwd=cwd, env=env)
    assert doctor.returncode != 0
    failed = [c for c in json.loads(doctor.stdout)["checks"] if c["status"] == "fail"]
    assert failed and "write http://127.0.0.1:19999" in failed[0]["detail"], failed
    assert listing(cwd) == set() and listing(Path("/")) - at_root == set()
    assert not (ws / ".memsearch" / "milvus.db").exists(), "no index was made elsewhere instead"


def test_a_milvus_uri_under_home_is_the_home_folders(tmp_path: Path) -> None:
    ws, cwd, home = make_workspace(tmp_path / "ws"), tmp_path / "cwd", tmp_path / "home"
    cwd.mkdir()
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "memsearch-lsp" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[milvus]\nuri = "~/mydb/milvus.db"\n')
    env = {"HOME": str(home), "XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"]}
    at_root = listing(Path("/"))
    try:
        first = json.loads(helpers.cli(ws, "index", "--json", cwd=cwd, env=env, check=True).stdout)
        again = json.loads(helpers.cli(ws, "index", "--json", cwd=cwd, env=env, check=True).stdout)
        status = json.loads(helpers.cli(ws, "status", "--json", cwd=cwd, env=env, check=True).stdout)
    finally:
        config.unlink()
    assert first["chunks_embedded"] > 0 and again["chunks_embedded"] == 0 and again["files_added"] == 0
    assert status["uri"] == str(home / "mydb" / "milvus.db") and status["files"] == first["files_added"]
    assert (home / "mydb" / "milvus.db" / "read-model").is_dir()
    assert listing(cwd) == set() and listing(Path("/")) - at_root == set()
