"""Config: defaults < .memsearch.toml < MEMSEARCH_* < editor settings; bad keys and values are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from memsearch_lsp.config import Config, ConfigError, kwargs_to_settings, load_config, settings_keys


def test_precedence(tmp_path: Path) -> None:
    (tmp_path / ".memsearch.toml").write_text('[search]\ntop_k = 5\nvector_weight = 0.5\n[memory]\npaths = ["notes"]\n')
    config = load_config(
        tmp_path,
        {"search": {"vectorWeight": 0.6}},
        env={"MEMSEARCH_SEARCH_TOP_K": "7", "MEMSEARCH_WATCH_DEBOUNCE_MS": "100"},
    )
    assert (config.search.top_k, config.search.vector_weight) == (7, 0.6)
    assert config.memory.paths == ("notes",) and config.watch.debounce_ms == 100
    assert config.search.bm25_weight == Config().search.bm25_weight


@pytest.mark.parametrize(
    ("toml", "needle"),
    [
        ("[search]\nbogus = 1\n", "search.bogus"),
        ("[search]\ntop_k = 'three'\n", "search.top_k"),
        ("[search]\nvector_weight = 1.5\n", "search.vector_weight"),
        ("[search]\nranker = 'magic'\n", "search.ranker"),
        ("[nonsense]\nx = 1\n", "nonsense"),
        ("[search\n", ".memsearch.toml"),
        ("[search]\nvector_weight = 0\nbm25_weight = 0\n", "both 0"),  # (no leg ranked: every hit scored 1.000)
        ("[embedding]\ntimeout_s = inf\n", "embedding.timeout_s: must be a finite number, got inf"),
        ("[compact]\nsimilarity_threshold = nan\n", "compact.similarity_threshold: must be a finite number"),
        ("[memory]\npaths = []\n", "memory.paths: names no folder"),
        ("[compact]\narchive_dir = ''\n", "archive_dir '' is the workspace itself"),
        ("[compact]\narchive_dir = './'\n", "is the workspace itself"),
        ("[compact]\narchive_dir = 'memory'\n", "is a memory folder or holds one"),
        ("[memory]\npaths = ['notes/daily']\n[compact]\narchive_dir = 'notes'\n", "is a memory folder or holds one"),
    ],
)
def test_bad_settings_name_the_key(tmp_path: Path, toml: str, needle: str) -> None:
    (tmp_path / ".memsearch.toml").write_text(toml)
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.")):
        load_config(tmp_path, env={})


@pytest.mark.parametrize(
    ("toml", "said"),
    [
        ('[memory]\nexclude = ["memory/[z-a]*"]\n', "memory.exclude: the pattern 'memory/[z-a]*' is not a valid glob"),
        ('[memory]\nexclude = ["ok/*", " [9-0].md"]\n', "memory.exclude: the pattern '[9-0].md' is not a valid glob"),
        ("[memory]\nexclude = ['a\\']\n", "memory.exclude: the pattern 'a\\\\' is not a valid gitignore-style glob"),
        ('[memory]\nexclude = ["*a*a*b"]\n', "memory.exclude: the pattern '*a*a*b' has 3 `*`"),
        ("[compact]\narchive_dir = 'memory/[z-a]'\n", "compact.archive_dir: the pattern 'memory/[z-a]' is not a valid"),
    ],
)
def test_a_glob_setting_that_cannot_be_read_is_refused_when_settings_load(tmp_path: Path, toml: str, said: str) -> None:
    """(audit Z4, 3) A range written backwards passed loading, then failed each command with re's bare error (doctor:
    "cannot list the memory files ... check the folder permissions"); `remember` wrote the note and could not index it.
    The file and the key are named, as for any bad value."""
    (tmp_path / ".memsearch.toml").write_text(toml)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, env={})
    assert str(caught.value).startswith(f"{tmp_path / '.memsearch.toml'}: {said}"), caught.value
    with pytest.raises(ConfigError, match=r"environment: memory\.exclude: the pattern '\[z-a\]' is not a valid glob"):
        load_config(tmp_path / "elsewhere", env={"MEMSEARCH_MEMORY_EXCLUDE": "[z-a]"})
    (tmp_path / ".memsearch.toml").write_text("[memory]\nexclude = ['memory/[a-z]*', 'x[!0-9]']\n")
    assert load_config(tmp_path, env={}).memory.exclude == ("memory/[a-z]*", "x[!0-9]")


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
        "search": {"top_k": 5},
        "milvus": {"uri": "http://x:19530"},
        "embedding": {"model": "m"},
    }
    with pytest.raises(ConfigError, match="ambiguous"):
        kwargs_to_settings({"model": "m"})


@pytest.mark.parametrize(
    ("settings", "needle"),
    [
        ({"search": {"topK": "three"}}, "editor: search.topK: expected int, got 'three'"),
        ({"search.topK": 2.5}, "editor: search.topK: expected int, got 2.5"),
        ({"search": {"top_k": True}}, "editor: search.top_k: expected int, got True"),
        ({"showNotifications": "maybe"}, "editor: showNotifications: expected bool, got 'maybe'"),
        ({"memory": {"paths": ["memory", 7]}}, "editor: memory.paths: expected a list of strings, got ['memory', 7]"),
        ({"embedding": {"model": 5}}, "editor: embedding.model: expected str, got 5"),
        ({"search": {"vectorWeight": -0.5}}, "editor: search.vectorWeight: must be between 0 and 1, got -0.5"),
        ({"search": {"bogusKey": 1}}, "editor: unknown setting 'search.bogusKey'"),
        ({"bogus.key": 1}, "editor: unknown setting 'bogus.key'"),
        ({"search": 3}, "editor: search: expected a table of settings, got 3"),
    ],
)
def test_a_wrong_type_or_name_is_named_as_written_with_its_value(settings: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        Config().merged(settings, origin="editor")
    assert needle in str(info.value)


def test_every_problem_is_reported_at_once_and_nothing_changes() -> None:
    config = Config()
    with pytest.raises(ConfigError) as info:
        config.merged({"search": {"topK": 0, "ranker": "magic"}, "watch": {"debounce_ms": -1}})
    message = str(info.value)
    for part in (
        "search.topK: must be at least 1, got 0",
        "search.ranker: expected one of",
        "'magic'",
        "watch.debounce_ms: must not be negative, got -1",
    ):
        assert part in message
    assert config == Config()


def test_environment_text_becomes_typed_values(tmp_path: Path) -> None:
    config = load_config(
        tmp_path,
        env={
            "MEMSEARCH_SEARCH_VECTOR_WEIGHT": "0.3",
            "MEMSEARCH_SEARCH_BM25_WEIGHT": "1",
            "MEMSEARCH_SEARCH_TOP_K": " 5 ",
            "MEMSEARCH_LSP_SHOW_NOTIFICATIONS": "false",
            "MEMSEARCH_COMPACT_INDEX_ARCHIVE": "TRUE",
            "MEMSEARCH_MEMORY_PATHS": "memory, notes",
            "MEMSEARCH_EMBEDDING_TIMEOUT_S": "2.5",
        },
    )
    assert (config.search.vector_weight, config.search.bm25_weight, config.search.top_k) == (0.3, 1.0, 5)
    assert config.lsp.show_notifications is False and config.compact.index_archive is True
    assert config.memory.paths == ("memory", "notes") and config.embedding.timeout_s == 2.5
    for name, value, needle in [
        ("MEMSEARCH_LSP_SHOW_NOTIFICATIONS", "perhaps", "expected bool, got 'perhaps'"),
        ("MEMSEARCH_SEARCH_TOP_K", "5.0", "expected int, got '5.0'"),
        ("MEMSEARCH_SEARCH_VECTOR_WEIGHT", "heavy", "expected float, got 'heavy'"),
    ]:
        with pytest.raises(ConfigError, match="environment: .*" + needle.replace(".", r"\.")):
            load_config(tmp_path, env={name: value})


def test_editor_camel_case_and_file_snake_case_reach_the_same_fields(tmp_path: Path) -> None:
    editor = {
        "search": {"vectorWeight": 0.4, "bm25Weight": 0.6, "rrfK": 10, "symbolLimit": 7},
        "embedding": {"batchSize": 8, "maxTokens": 128},
        "compact": {"olderThanDays": 3, "indexArchive": False},
        "watch.debounceMs": 250,
        "showNotifications": False,
    }
    (tmp_path / ".memsearch.toml").write_text(
        "[search]\nvector_weight = 0.4\nbm25_weight = 0.6\nrrf_k = 10\nsymbol_limit = 7\n"
        "[embedding]\nbatch_size = 8\nmax_tokens = 128\n[compact]\nolder_than_days = 3\nindex_archive = false\n"
        "[watch]\ndebounce_ms = 250\n[lsp]\nshow_notifications = false\n"
    )
    from_editor = Config().merged(editor)
    assert from_editor == load_config(tmp_path, env={})
    assert (from_editor.search.rrf_k, from_editor.embedding.max_tokens, from_editor.watch.debounce_ms) == (10, 128, 250)
    assert from_editor.merged({}) == from_editor  # merging nothing changes nothing


def test_the_rules_sit_on_their_fields() -> None:
    """Choices are the fields' `Literal` types and ranges their metadata (config.ranged), not tables apart."""
    import dataclasses

    from memsearch_lsp.config import SearchConfig, choices

    assert choices("search", "ranker") == ("learned", "minmax", "weighted", "rrf")
    assert (
        choices("embedding", "provider") == ("bundled", "onnx", "openai", "fastembed")
        and choices("search", "top_k") is None
    )
    ranges = {f.name: f.metadata.get("range") for f in dataclasses.fields(SearchConfig)}
    assert ranges["top_k"] == (1, None) and ranges["vector_weight"] == (0, 1) and ranges["min_score"] == (0, 1)
    with pytest.raises(ConfigError, match=r"search\.minScore: must be between 0 and 1, got 1\.5"):
        Config().merged({"search.minScore": 1.5})
    with pytest.raises(ConfigError, match=r"search\.rrfK: must not be negative, got -1"):
        Config().merged({"search.rrfK": -1})


def test_a_workspace_file_is_judged_by_the_trust_rules(tmp_path: Path) -> None:
    from memsearch_lsp.trust import untrusted

    assert untrusted("embedding.baseUrl", "http://evil", tmp_path)
    assert untrusted("compact.summarizer", " OpenAI ", tmp_path) and not untrusted(
        "compact.summarizer", "extractive", tmp_path
    )
    assert untrusted("compact.promptFile", "../outside.md", tmp_path)
    assert not untrusted("compact.promptFile", "prompts/mine.md", tmp_path)


def test_a_workspace_settings_file_linked_outside_the_workspace_is_never_read(tmp_path: Path, caplog) -> None:
    """A cloned repository's `.memsearch.toml` that links to a file elsewhere (another project's settings, a file of
    secrets whose values errors would echo) is ignored with one warning; a link inside the workspace is read."""
    outside = tmp_path / "private.toml"
    outside.write_text('[search]\ntop_k = "s3cr3t-value-from-outside"\n')
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".memsearch.toml").symlink_to(outside)
    assert load_config(ws).search.top_k == Config().search.top_k
    load_config(ws)
    assert sum("outside the workspace" in r.getMessage() for r in caplog.records) == 1
    (ws / "settings").mkdir()
    (ws / "settings" / "memsearch.toml").write_text("[search]\ntop_k = 7\n")
    (ws / ".memsearch.toml").unlink()
    (ws / ".memsearch.toml").symlink_to(ws / "settings" / "memsearch.toml")
    assert load_config(ws).search.top_k == 7


def test_an_infinite_or_empty_setting_from_the_environment_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"environment: embedding\.timeout_s: must be a finite number, got nan"):
        load_config(tmp_path, env={"MEMSEARCH_EMBEDDING_TIMEOUT_S": "nan"})
    with pytest.raises(ConfigError, match=r"environment: memory\.paths: names no folder"):
        load_config(tmp_path, env={"MEMSEARCH_MEMORY_PATHS": ""})
    assert (
        load_config(tmp_path, env={"MEMSEARCH_COMPACT_ARCHIVE_DIR": "memory/old"}).compact.archive_dir == "memory/old"
    )


def user_config(text: str) -> None:
    from memsearch_lsp.config import user_config_path

    user_config_path().parent.mkdir(parents=True, exist_ok=True)
    user_config_path().write_text(text)


def test_leniently_only_the_bad_keys_are_left_out_and_each_is_said(tmp_path: Path) -> None:
    """The language server's way (`errors`): a bad editor setting or a typo in `.memsearch.toml` leaves out that key
    alone; the user's file, the workspace file's other keys and the editor's other settings all apply."""
    user_config('[memory]\nexclude = ["memory/private/**"]\n')
    (tmp_path / ".memsearch.toml").write_text("[search]\ntopk = 2\ntop_k = 4\n")
    editor = {"search": {"minScore": 0.5, "snippetChars": 0}}
    with pytest.raises(ConfigError, match=r"search\.topk"):
        load_config(tmp_path, editor, env={})
    errors: list[str] = []
    config = load_config(tmp_path, editor, env={}, errors=errors, origin="editor settings")
    assert config.memory.exclude == ("memory/private/**",)
    assert (config.search.top_k, config.search.min_score) == (4, 0.5)
    assert config.search.snippet_chars == Config().search.snippet_chars
    assert len(errors) == 2 and "unknown setting 'search.topk'" in errors[0] and ".memsearch.toml" in errors[0]
    assert errors[1].startswith("editor settings: search.snippetChars: must be at least 1")
    (tmp_path / ".memsearch.toml").write_text("[search\n")  # (a file that does not parse: left out whole)
    errors.clear()
    assert load_config(tmp_path, editor, env={}, errors=errors).memory.exclude == ("memory/private/**",)
    assert len(errors) == 2 and ".memsearch.toml" in errors[0]


def test_a_workspace_file_picks_the_model_of_a_local_provider_only(tmp_path: Path, caplog) -> None:
    """A cloned repository's `.memsearch.toml` may choose among the bundled models; with the user's own `openai` or
    `fastembed` provider its model (what the endpoint charges for, what fastembed downloads) is the user's. The
    summariser's model is the user's always."""
    (tmp_path / ".memsearch.toml").write_text(
        '[embedding]\nmodel = "text-embedding-3-large"\nquery_model = "x"\ndimensions = 3072\n'
        '[compact]\nmodel = "gpt-4.5-preview"\n'
    )
    user_config('[embedding]\nprovider = "openai"\nmodel = "text-embedding-3-small"\n')
    config = load_config(tmp_path, env={})
    assert (config.embedding.model, config.embedding.query_model, config.embedding.dimensions) == (
        "text-embedding-3-small",
        "",
        0,
    )
    assert config.compact.model == Config().compact.model
    said = [r.getMessage() for r in caplog.records if "provider 'openai' is the user's" in r.getMessage()]
    assert len(said) == 1 and "embedding.dimensions, embedding.model, embedding.query_model" in said[0]
    user_config("")
    (tmp_path / ".memsearch.toml").write_text('[embedding]\nmodel = "multilingual-e5-small"\n')
    assert load_config(tmp_path, env={}).embedding.model == "multilingual-e5-small"
    user_config('[embedding]\nprovider = "fastembed"\nmodel = "BAAI/bge-small-en-v1.5"\n')
    assert load_config(tmp_path, env={}).embedding.model == "BAAI/bge-small-en-v1.5"


def test_a_workspace_s_model_folder_outside_it_is_ignored_with_its_provider(tmp_path: Path, caplog) -> None:
    """An `onnx` model folder outside the workspace was ignored but its provider kept: every command then failed on
    "'sentence-transformers/all-MiniLM-L6-v2' is not a folder", a model the user never wrote. Both go, said once."""
    (tmp_path / ".memsearch.toml").write_text('[embedding]\nprovider = "onnx"\nmodel = "/opt/elsewhere/model"\n')
    config = load_config(tmp_path, env={})
    assert (config.embedding.provider, config.embedding.model) == (
        Config().embedding.provider,
        Config().embedding.model,
    )
    said = [r.getMessage() for r in caplog.records if "ignoring" in r.getMessage()]
    assert len(said) == 1 and "embedding.model, embedding.provider" in said[0]
    (tmp_path / ".memsearch.toml").write_text('[embedding]\nprovider = "onnx"\nmodel = "models/mine"\n')
    assert load_config(tmp_path, env={}).embedding.provider == "onnx"  # (a folder inside: the workspace's to choose)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("cannot open the index at http://root:Secr3t@127.0.0.1:9: refused", "http://root:***@127.0.0.1:9: refused"),
        ("endpoint https://bob:Secr3t@ss@host/v1/embeddings", "https://bob:***@host/v1/embeddings"),
        ("https://u:" + "Secr3t" * 60 + "@host/x", "https://u:***@host/x"),  # (a long token as the password)
        ("GET https://registry.npmjs.org:443/@types/node", "GET https://registry.npmjs.org:443/@types/node"),
        ("http://localhost:8080/users/@alice and ?email=a@b.com", "http://localhost:8080/users/@alice and ?email"),
        ("postgres://app:Tr0ub4dor&3xK@db/x and https://api.openai.com/v1", "postgres://app:***@db/x and https://api"),
        ("http://host:8080/path and no password", "http://host:8080/path and no password"),
        # a credential in the query (audit Z3, 7): the value of a name that says one, other values kept
        ("POST http://h:1/v1/embeddings?api_key=Secr3t&model=x 500", "/v1/embeddings?api_key=***&model=x 500"),
        ("https://acct.blob.core.windows.net/c?sv=2020&sig=Secr3t%2F&se=1", "/c?sv=2020&sig=***&se=1"),
        ("http://h/v1?access_token=Secr3t, http://h/?page=2&q=tokenizer", "=***, http://h/?page=2&q=tokenizer"),
        ("https://x/a?X-Amz-Signature=Secr3t&X-Amz-Credential=AKIA/x", "?X-Amz-Signature=***&X-Amz-Credential=***"),
        # (review R2: a camelCase name, a fragment's, a comma inside the value)
        ("https://h/v1?accessToken=Secr3t&authToken=Secr3t&x=1", "?accessToken=***&authToken=***&x=1"),
        ("https://h/cb#access_token=Secr3t&state=ok", "#access_token=***&state=ok"),
        ("https://h/v1?api_key=abc,Secr3t and more", "?api_key=*** and more"),
    ],
)
def test_a_urls_password_is_never_shown(text: str, shown: str) -> None:
    from memsearch_lsp.trust import hide_credentials

    assert shown in hide_credentials(text) and "Secr3t" not in hide_credentials(text)


def test_leniently_the_good_keys_of_a_layer_apply_together(tmp_path: Path) -> None:
    """(review N, 5) Key by key, a good key that holds only beside another of its layer (vectorWeight 0 beside
    bm25Weight 1 over a user file's bm25_weight 0) was dropped without a word."""
    user_config("[search]\nbm25_weight = 0\n")
    errors: list[str] = []
    editor = {"search": {"vectorWeight": 0, "bm25Weight": 1, "snippetChars": 0}}
    config = load_config(tmp_path, editor, env={}, errors=errors, origin="editor settings")
    assert (config.search.vector_weight, config.search.bm25_weight) == (0.0, 1.0) and len(errors) == 1
    user_config("")
    (tmp_path / ".memsearch.toml").write_text(
        '[compact]\narchive_dir = "memory"\n[memory]\npaths = ["notes"]\n[search]\ntop_k = "five"\n'
    )
    errors.clear()
    config = load_config(tmp_path, env={}, errors=errors)
    assert (config.compact.archive_dir, config.memory.paths) == ("memory", ("notes",))
    assert len(errors) == 1 and "search.top_k: expected int" in errors[0]
    (tmp_path / ".memsearch.toml").write_text("[search]\nvector_weight = 0\nbm25_weight = 0\ntop_k = 4\n")
    errors.clear()
    config = load_config(tmp_path, env={}, errors=errors)  # (wrong between its keys: those keys left out, said)
    assert (config.search.vector_weight, config.search.bm25_weight, config.search.top_k) == (0.3, 0.7, 4)
    assert (
        len(errors) == 1
        and "both 0" in errors[0]
        and "(left out: search.vector_weight, search.bm25_weight)" in errors[0]
    )
    editor = {
        "embedding": {"model": "multilingual-e5-small"},
        "memory": {"paths": ["notes"]},
        "compact.archiveDir": "notes",
    }
    errors.clear()  # (review P, 5: the archive's clash took the model and the memory folder with it)
    config = load_config(tmp_path, editor, env={}, errors=errors)
    assert (config.embedding.model, config.memory.paths, config.compact.archive_dir) == (
        "multilingual-e5-small",
        ("notes",),
        "memory/archive",
    )
    assert len(errors) == 2 and "(left out: compact.archiveDir)" in errors[1]


@pytest.mark.parametrize(
    ("uri", "needle"),
    [
        (
            "127.0.0.1:19999",
            r"'127\.0\.0\.1:19999' is a server's address without a scheme: write http://127\.0\.0\.1:19999",
        ),
        ("localhost:19555", r"write http://localhost:19555"),
        ("[::1]:19530", r"write http://\[::1\]:19530"),
        ("mydb/milvus.db", r"'mydb/milvus\.db' is a relative path: write an absolute path \(or ~/\.\.\.\)"),
    ],
)
def test_a_milvus_uri_that_is_no_server_uri_nor_absolute_folder_is_refused_in_every_layer(
    tmp_path: Path, uri: str, needle: str
) -> None:
    """Audit U 1: a server's address without `http://`, or a relative folder, was taken for a folder relative to
    each process's current folder (the read model in the CWD, Milvus Lite's data under `/`)."""
    with pytest.raises(ConfigError, match=rf"environment: milvus\.uri: .*{needle}"):
        load_config(tmp_path, env={"MEMSEARCH_MILVUS_URI": uri})
    user_config(f'[milvus]\nuri = "{uri}"\n')
    with pytest.raises(ConfigError, match=rf"milvus\.uri: .*{needle}"):
        load_config(tmp_path, env={})
    user_config("")
    with pytest.raises(ConfigError, match=rf"editor settings: milvus\.uri: .*{needle}"):
        load_config(tmp_path, {"milvus": {"uri": uri}}, env={}, origin="editor settings")


def test_a_milvus_uri_under_home_is_expanded_and_an_unchecked_relative_one_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memsearch_lsp.config import MilvusConfig
    from memsearch_lsp.core.workspace import index_uri

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for uri in ("~/mydb/milvus.db", "/srv/index", "http://localhost:19530", "https://x.zillizcloud.com"):
        assert load_config(tmp_path, env={"MEMSEARCH_MILVUS_URI": uri}).milvus.uri == uri
    config = load_config(tmp_path, env={"MEMSEARCH_MILVUS_URI": "~/mydb/milvus.db"})
    assert index_uri(tmp_path, config) == str(tmp_path / "home" / "mydb" / "milvus.db")
    assert index_uri(tmp_path, Config()) == str(tmp_path / ".memsearch" / "milvus.db")
    made_in_code = Config(milvus=MilvusConfig(uri="localhost:19530"))  # (not read as settings are: still refused)
    with pytest.raises(ConfigError, match=r"milvus\.uri: .*write http://localhost:19530"):
        index_uri(tmp_path, made_in_code)
