"""Settings: frozen dataclasses, merged as defaults < .memsearch.toml < env MEMSEARCH_* < editor/API."""

from __future__ import annotations

import dataclasses
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
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

#: Editor settings that belong to a client only (they never reach the server's config).
CLIENT_ONLY_SETTINGS = frozenset({"interpreter", "trace.server"})


class ConfigError(ValueError):
    """A setting has an unknown name or a value of the wrong type; the message names it."""


@dataclass(frozen=True)
class MemoryConfig:
    paths: tuple[str, ...] = ("memory",)
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True)
class EmbeddingConfig:
    model: str = DEFAULT_MODEL
    batch_size: int = 16
    threads: int = 0


@dataclass(frozen=True)
class MilvusConfig:
    uri: str = ""
    token: str = ""
    collection: str = "memsearch"


@dataclass(frozen=True)
class SearchConfig:
    top_k: int = 3
    vector_weight: float = 0.7
    bm25_weight: float = 0.3
    ranker: str = "weighted"
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
    index_archive: bool = False
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
        updates: dict[str, dict[str, Any]] = {}
        for section, key, value in _flatten(overrides, origin):
            updates.setdefault(section, {})[key] = value
        return _apply(self, updates, origin)

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
        if dotted in CLIENT_ONLY_SETTINGS or dotted.split(".")[0] == "trace":
            continue
        if isinstance(value, Mapping) and not prefix and key in SECTIONS:
            out.extend(_flatten(value, origin, dotted))
        else:
            section, name = _locate(dotted, origin)
            out.append((section, name, value))
    return out


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


_CHOICES = {("search", "ranker"): {"weighted", "rrf"}, ("compact", "group_by"): {"week", "month", "day"},
            ("compact", "summarizer"): {"extractive", "openai"}}


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
        if not key.startswith(ENV_PREFIX):
            continue
        rest = key[len(ENV_PREFIX):].lower()
        section = next((s for s in SECTIONS if rest.startswith(s + "_")), None)
        name = rest[len(section) + 1:] if section else ""
        if section is None or name not in _field_types(SECTIONS[section]):
            raise ConfigError(f"environment: unknown setting {key}")
        out.setdefault(section, {})[name] = value
    return out


def load_config(workspace: Path, overrides: Mapping[str, Any] | None = None,
                env: Mapping[str, str] | None = None) -> Config:
    """Defaults < `<workspace>/.memsearch.toml` < `MEMSEARCH_*` env < `overrides`."""
    config = Config()
    path = Path(workspace) / CONFIG_FILE
    if path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: {exc}") from exc
        config = config.merged(data, origin=str(path))
    config = config.merged(from_env(os.environ if env is None else env), origin="environment")
    if overrides:
        config = config.merged(overrides)
    return config
