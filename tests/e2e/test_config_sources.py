"""Settings sources as the CLI reads them: the environment, the user file, `.memsearch.toml` (audit Y)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import cli, make_workspace


def test_the_cli_names_every_unknown_environment_variable(tmp_path: Path) -> None:
    """The CLI stops on a typo in a variable's name (as in a settings file) but said only the first one."""
    ws = make_workspace(tmp_path)
    env = {"MEMSEARCH_SEARCH_SNIPPETCHARS": "20", "MEMSEARCH_SEARCH_TOPK": "3", "MEMSEARCH_SEARCH_TOP_K": "2"}
    result = cli(ws, "status", env=env)
    assert result.returncode == 1
    assert "MEMSEARCH_SEARCH_SNIPPETCHARS" in result.stderr and "MEMSEARCH_SEARCH_TOPK" in result.stderr, result.stderr
    assert "MEMSEARCH_SEARCH_TOP_K" not in result.stderr


def test_a_settings_file_that_is_a_directory_is_said_and_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """A user config.toml that is a directory was skipped silently (doctor: "no user file"); a `.memsearch.toml`
    starting with a UTF-8 byte order mark failed with "Invalid statement (at line 1, column 1)"."""
    ws = make_workspace(tmp_path)
    xdg = tmp_path / "xdg"
    (xdg / "memsearch-lsp" / "config.toml").mkdir(parents=True)
    env = {"XDG_CONFIG_HOME": str(xdg)}
    status = cli(ws, "status", env=env)
    assert status.returncode == 1 and "config.toml is a directory, not a settings file" in status.stderr
    doctor = cli(ws, "doctor", "--json", env=env)
    (config,) = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "config"]
    assert config["status"] == "fail" and "is a directory, not a settings file" in config["detail"], config
    assert any("a directory" in s["note"] for s in config["data"]["sources"])
    (xdg / "memsearch-lsp" / "config.toml").rmdir()
    (ws / ".memsearch.toml").write_bytes("\ufeff[search]\ntop_k = 2\n".encode())
    found = cli(ws, "search", "Redis cache config", "--json", env=env)
    assert found.returncode == 0, found.stderr
    assert len(json.loads(found.stdout)["hits"]) == 2


def test_one_setting_written_twice_in_a_file_is_an_error_naming_both(tmp_path: Path) -> None:
    """`top_k` and `topK` in one file: the later one won, silently."""
    ws = make_workspace(tmp_path)
    (ws / ".memsearch.toml").write_text("[search]\ntop_k = 2\ntopK = 4\n")
    result = cli(ws, "search", "Redis cache config", env={})
    assert result.returncode == 1
    assert ".memsearch.toml: search.top_k and search.topK are one setting" in result.stderr, result.stderr


def test_doctor_says_each_settings_value_in_effect_and_where_it_comes_from(tmp_path: Path) -> None:
    """(audit Y, 8) doctor listed `search.top_k` under each source that set it, never the value in effect or which
    source wins (the README: "doctor shows every setting and where it comes from"); a secret is said as set only."""
    ws = make_workspace(tmp_path)
    xdg = tmp_path / "xdg"
    (xdg / "memsearch-lsp").mkdir(parents=True)
    (xdg / "memsearch-lsp" / "config.toml").write_text('[search]\ntop_k = 6\n[milvus]\ntoken = "s3cr3t-token"\n')
    (ws / ".memsearch.toml").write_text("[search]\ntopK = 2\nvector_weight = 0.6\n")
    env = {"XDG_CONFIG_HOME": str(xdg), "MEMSEARCH_SEARCH_TOP_K": "4"}
    doctor = cli(ws, "doctor", "--json", env=env)
    (config,) = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "config"]
    assert config["data"]["in_effect"] == {
        "search.top_k": {"value": 4, "from": "environment"},
        "milvus.token": {"value": "***", "from": f"user file {xdg / 'memsearch-lsp' / 'config.toml'}"},
        "search.vector_weight": {"value": 0.6, "from": f"workspace file {ws / '.memsearch.toml'}"},
    }
    text = cli(ws, "doctor", env=env).stdout
    assert "in effect: search.top_k = 4 (environment)" in text and "s3cr3t" not in text + doctor.stdout


def test_doctor_never_shows_a_key_in_a_url_query_or_pasted_where_a_variables_name_goes(tmp_path: Path) -> None:
    """(review G, 2) `in_effect` hid a URL's password and milvus.token, but printed `base_url = ...?api_key=sk-...`
    and a key pasted into `api_key_env` (where the name of a variable goes) whole."""
    ws = make_workspace(tmp_path)
    xdg = tmp_path / "xdg"
    (xdg / "memsearch-lsp").mkdir(parents=True)
    (xdg / "memsearch-lsp" / "config.toml").write_text(
        '[compact]\nbase_url = "https://proxy.example/v1?api_key=sk-live-QUERYSECRET"\n'
        'api_key_env = "sk-proj-PASTEDKEYINSTEAD"\n[embedding]\napi_key_env = "MY_EMBED_KEY"\n'
    )
    env = {"XDG_CONFIG_HOME": str(xdg), "MEMSEARCH_MILVUS_URI": "http://root:hunter2@milvus.example:19530"}
    for pasted in (
        "jina_4f3a9c0b1d2e4f5a6b7c8d9e0f1a2b3cXyZ",
        "AbCdEfGh1234567890AbCdEfGh1234567890AbCd",
        "ABCDEF1234567890ABCDEF1234567890",
    ):
        said = cli(ws, "doctor", "--json", env={**env, "MEMSEARCH_EMBEDDING_API_KEY_ENV": pasted}).stdout
        (config,) = [c for c in json.loads(said)["checks"] if c["name"] == "config"]
        assert pasted not in said and config["data"]["in_effect"]["embedding.api_key_env"]["value"] == "***"
    env = {"XDG_CONFIG_HOME": str(xdg), "MEMSEARCH_MILVUS_URI": "http://root:hunter2@milvus.example:19530"}
    answer, text = cli(ws, "doctor", "--json", env=env).stdout, cli(ws, "doctor", env=env).stdout
    for secret in ("QUERYSECRET", "PASTEDKEYINSTEAD", "hunter2"):
        assert secret not in answer + text
    (config,) = [c for c in json.loads(answer)["checks"] if c["name"] == "config"]
    effect = config["data"]["in_effect"]
    assert effect["compact.base_url"]["value"] == "https://proxy.example/v1?***"
    assert (
        effect["compact.api_key_env"]["value"] == "***" and effect["embedding.api_key_env"]["value"] == "MY_EMBED_KEY"
    )
    assert effect["milvus.uri"]["value"] == "http://root:***@milvus.example:19530"


def test_a_memory_paths_typo_set_outside_the_workspace_file_is_not_blamed_on_it(tmp_path: Path) -> None:
    """(audit Y, 4) `MEMSEARCH_MEMORY_PATHS=memroy` (or the editor's setting) was answered "fix it in .memsearch.toml"
    in a workspace whose file sets no paths: the message names every place it may be set and how to tell which."""
    ws = make_workspace(tmp_path)
    (ws / ".memsearch.toml").write_text("[search]\ntop_k = 3\n")  # (it sets no paths)
    assert cli(ws, "index").returncode == 0
    result = cli(ws, "search", "redis", env={"MEMSEARCH_MEMORY_PATHS": "memroy"})
    assert result.returncode == 1 and "none of memroy is in" in result.stderr, result.stderr
    assert "MEMSEARCH_MEMORY_PATHS" in result.stderr and "`doctor` says which" in result.stderr
    assert "a typo in .memsearch.toml" not in result.stderr and "fix it in .memsearch.toml" not in result.stderr
    doctor = json.loads(cli(ws, "doctor", "--json", env={"MEMSEARCH_MEMORY_PATHS": "memroy"}).stdout)
    (config,) = [c for c in doctor["checks"] if c["name"] == "config"]
    assert config["data"]["in_effect"]["memory.paths"] == {"value": ["memroy"], "from": "environment"}
