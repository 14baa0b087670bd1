"""Settings: frozen dataclasses (config/sections.py) in one `Config` (config/model.py), merged as defaults < user
file < .memsearch.toml < env MEMSEARCH_* < editor/API (config/layers.py) through one cattrs converter."""

from __future__ import annotations

from memsearch_lsp.config.layers import from_env, ignored_workspace_keys, load_config, merge_layer, user_config_path
from memsearch_lsp.config.model import (
    SECTIONS,
    CompactConfig,
    Config,
    EmbeddingConfig,
    LspConfig,
    MemoryConfig,
    MilvusConfig,
    SearchConfig,
    WarmConfig,
    WatchConfig,
    archive_clash,
    archive_folder,
    choices,
    editor_key,
    kwargs_to_settings,
    settings_keys,
)
from memsearch_lsp.config.sections import (
    CLIENT_ONLY_SETTINGS,
    CONFIG_FILE,
    DEFAULT_MODEL,
    E5_MODEL,
    EMBEDDING_PROVIDERS,
    ENV_NOT_SETTINGS,
    ENV_PREFIX,
    SEARCH_LANGUAGES,
    ConfigError,
    tomllib,
)
from memsearch_lsp.trust import USER_ONLY_KEYS, USER_ONLY_VALUES, WORKSPACE_PATH_KEYS

__all__ = [
    "CLIENT_ONLY_SETTINGS",
    "CONFIG_FILE",
    "DEFAULT_MODEL",
    "E5_MODEL",
    "EMBEDDING_PROVIDERS",
    "ENV_NOT_SETTINGS",
    "ENV_PREFIX",
    "SEARCH_LANGUAGES",
    "SECTIONS",
    "USER_ONLY_KEYS",
    "USER_ONLY_VALUES",
    "WORKSPACE_PATH_KEYS",
    "CompactConfig",
    "Config",
    "ConfigError",
    "EmbeddingConfig",
    "LspConfig",
    "MemoryConfig",
    "MilvusConfig",
    "SearchConfig",
    "WarmConfig",
    "WatchConfig",
    "archive_clash",
    "archive_folder",
    "choices",
    "editor_key",
    "from_env",
    "ignored_workspace_keys",
    "kwargs_to_settings",
    "load_config",
    "merge_layer",
    "settings_keys",
    "tomllib",
    "user_config_path",
]
