"""Settings sources as the CLI reads them: the environment, the user file, `.memsearch.toml` (audit Y)."""

from __future__ import annotations

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
