"""Config: defaults < .memsearch.toml < MEMSEARCH_* < editor settings; bad keys and values are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from memsearch_lsp.config import Config, ConfigError, kwargs_to_settings, load_config, settings_keys


def test_precedence(tmp_path: Path) -> None:
    (tmp_path / ".memsearch.toml").write_text('[search]\ntop_k = 5\nvector_weight = 0.5\n[memory]\npaths = ["notes"]\n')
    config = load_config(tmp_path, {"search": {"vectorWeight": 0.6}},
                         env={"MEMSEARCH_SEARCH_TOP_K": "7", "MEMSEARCH_WATCH_DEBOUNCE_MS": "100"})
    assert (config.search.top_k, config.search.vector_weight) == (7, 0.6)
    assert config.memory.paths == ("notes",) and config.watch.debounce_ms == 100
    assert config.search.bm25_weight == Config().search.bm25_weight


@pytest.mark.parametrize(("toml", "needle"), [
    ("[search]\nbogus = 1\n", "search.bogus"),
    ("[search]\ntop_k = 'three'\n", "search.top_k"),
    ("[search]\nvector_weight = 1.5\n", "search.vector_weight"),
    ("[search]\nranker = 'magic'\n", "search.ranker"),
    ("[nonsense]\nx = 1\n", "nonsense"),
    ("[search\n", ".memsearch.toml"),
])
def test_bad_settings_name_the_key(tmp_path: Path, toml: str, needle: str) -> None:
    (tmp_path / ".memsearch.toml").write_text(toml)
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.")):
        load_config(tmp_path, env={})


def test_bad_env_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="MEMSEARCH_SEARCH_NOPE"):
        load_config(tmp_path, env={"MEMSEARCH_SEARCH_NOPE": "1"})


def test_editor_keys_round_trip() -> None:
    keys = settings_keys()
    assert "search.vectorWeight" in keys and "showNotifications" in keys and "milvus.uri" in keys
    flat = {key: None for key in keys}
    assert len(flat) == len(keys)
    config = Config().merged({"search.topK": 9, "showNotifications": False, "interpreter": "/usr/bin/python3"})
    assert config.search.top_k == 9 and config.lsp.show_notifications is False


def test_api_keyword_settings() -> None:
    assert kwargs_to_settings({"top_k": 5, "milvus_uri": "http://x:19530", "embedding_model": "m"}) == {
        "search": {"top_k": 5}, "milvus": {"uri": "http://x:19530"}, "embedding": {"model": "m"}}
    with pytest.raises(ConfigError, match="ambiguous"):
        kwargs_to_settings({"model": "m"})
