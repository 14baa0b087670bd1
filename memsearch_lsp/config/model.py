"""The settings as one frozen `Config` and the cattrs converter that merges a layer of them into it: strict types,
camelCase or snake_case names, ranges; a bad key is a ConfigError that names it."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args, get_origin, get_type_hints

from cattrs import Converter, transform_error
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from memsearch_lsp.config.globs import check_glob
from memsearch_lsp.config.sections import (
    CLIENT_ONLY_SETTINGS,
    CompactConfig,
    ConfigError,
    EmbeddingConfig,
    LspConfig,
    MemoryConfig,
    MilvusConfig,
    SearchConfig,
    WarmConfig,
    WatchConfig,
    milvus_uri_problem,
)
from memsearch_lsp.trust import editor_key


@dataclass(frozen=True)
class Config:
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    milvus: MilvusConfig = field(default_factory=MilvusConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    watch: WatchConfig = field(default_factory=WatchConfig)
    compact: CompactConfig = field(default_factory=CompactConfig)
    lsp: LspConfig = field(default_factory=LspConfig)
    warm: WarmConfig = field(default_factory=WarmConfig)

    def merged(self, overrides: Mapping[str, Any], origin: str = "settings", between: bool = True) -> Config:
        """A copy with `overrides` applied: nested {section: {key: v}} or dotted 'section.key', keys in
        snake_case (files, environment, API) or camelCase (editors); ConfigError names a bad one. `between`: the
        rules between settings too (not both weights 0, an archive folder of its own)."""
        data = CONVERTER.unstructure(self)
        written: dict[tuple[str, str], str] = {}  # (section, camelCase key) -> the key as the user wrote it
        for section, values in _nest(overrides, origin, written).items():
            for key, value in values.items():
                data[section][editor_key(key)] = value
        try:
            config = CONVERTER.structure(data, Config)
        except ClassValidationError as exc:
            raise ConfigError("; ".join(_messages(exc, origin, written))) from None
        if not between:
            return config
        if not (config.search.vector_weight or config.search.bm25_weight):  # (every hit scored 1.000)
            raise ConfigError(f"{origin}: search.vector_weight and search.bm25_weight are both 0: set one above 0")
        clash = archive_clash(config.compact.archive_dir, config.memory.paths)
        if clash:
            raise ConfigError(f"{origin}: compact.archive_dir {config.compact.archive_dir!r} {clash}")
        return config

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return {s.name: dataclasses.asdict(getattr(self, s.name)) for s in fields(self)}


def archive_clash(archive_dir: str, paths: Sequence[str]) -> str:
    """What is wrong with an archive folder (workspace-relative) beside the memory folders `paths`, or "": it must
    be a folder of its own, not the workspace (the logs would leave memory/) nor a memory folder or one above it
    (every note there would count as archived). An absolute one is checked once it is made relative (compaction)."""
    archive = posixpath.normpath(archive_dir.strip() or ".")
    folders = {posixpath.normpath(p) for p in paths}
    if archive == "." or archive == "/":
        return "is the workspace itself: the archived logs would leave the memory folder; name a folder inside it"
    if archive in folders or any(p.startswith(archive + "/") for p in folders if not posixpath.isabs(archive)):
        return "is a memory folder or holds one: every note there would count as archived; name a folder inside it"
    return ""


def archive_folder(config: Config) -> str:
    """Where compaction archives: `compact.archive_dir`, but left at its default while `memory/` is no memory folder,
    `archive/` in the first one (`memory.paths = ["notes"]`: notes/archive): the originals stay in a memory folder,
    and so in search. Read where it is used, so it follows the settings in force."""
    folders = [posixpath.normpath(p) for p in config.memory.paths]
    if config.compact.archive_dir != CompactConfig.archive_dir or not folders or {".", "memory"} & set(folders):
        return config.compact.archive_dir
    return posixpath.join(folders[0], "archive")


SECTIONS: dict[str, type[Any]] = {f.name: f.default_factory for f in fields(Config)}  # type: ignore[misc]
_SECTION_OF = {cls: name for name, cls in SECTIONS.items()}
_RANGES = {
    (name, f.name): f.metadata["range"] for name, cls in SECTIONS.items() for f in fields(cls) if "range" in f.metadata
}
_ALIASES = {"lsp": ""}  # lsp.show_notifications is "showNotifications" at the top level of editors


def settings_keys() -> list[str]:
    """Every setting as an editor names it (camelCase, dotted), e.g. `search.vectorWeight`."""
    keys = []
    for section, cls in SECTIONS.items():
        prefix = _ALIASES.get(section, section)
        for f in fields(cls):
            keys.append(f"{prefix}.{editor_key(f.name)}" if prefix else editor_key(f.name))
    return keys


def _nest(
    data: Mapping[str, Any], origin: str, written: dict[tuple[str, str], str] | None = None
) -> dict[str, dict[str, Any]]:
    """Any accepted shape -> {section: {key: value}}: tables, dotted keys ('search.topK'), an editor's
    top-level lsp keys ('showNotifications'); settings that belong to a client only are dropped.
    `written` collects each key as the user wrote it, for messages."""
    out: dict[str, dict[str, Any]] = {}
    seen = {} if written is None else written
    lsp_keys = {editor_key(f.name) for f in fields(LspConfig)}
    for key, value in data.items():
        key = str(key)
        section, dot, name = key.partition(".")
        if key in CLIENT_ONLY_SETTINGS or section in ("trace", "mcp"):
            continue
        if section in SECTIONS and not dot:
            if not isinstance(value, Mapping):
                raise ConfigError(f"{origin}: {key}: expected a table of settings, got {value!r}")
            for inner, item in value.items():
                _once(seen, (section, editor_key(str(inner))), f"{section}.{inner}", origin)
                out.setdefault(section, {})[str(inner)] = item
        elif section in SECTIONS:
            _once(seen, (section, editor_key(name)), key, origin)
            out.setdefault(section, {})[name] = value
        elif editor_key(key) in lsp_keys:
            _once(seen, ("lsp", editor_key(key)), key, origin)
            out.setdefault("lsp", {})[key] = value
        else:
            raise ConfigError(f"{origin}: unknown setting '{key}'")
    return out


def _once(seen: dict[tuple[str, str], str], setting: tuple[str, str], written: str, origin: str) -> None:
    """Note how `setting` is written; ConfigError when the layer wrote it already in another spelling."""
    if setting in seen and seen[setting] != written:
        raise ConfigError(spelled_twice(origin, seen[setting], written))
    seen[setting] = written


def spelled_twice(origin: str, *keys: str) -> str:
    """The message for one setting written twice in one layer (`top_k` and `topK`): which one was meant is not
    known, so neither applies."""
    return f"{origin}: {' and '.join(keys)} are one setting, written twice: keep one"


# -- the converter: strict scalar hooks (text forms for environment variables), camelCase names, checks
_TRUE, _FALSE = frozenset({"1", "true", "yes", "on"}), frozenset({"0", "false", "no", "off"})


def _wrong(expected: str, value: Any) -> ValueError:
    return ValueError(f"expected {expected}, got {value!r}")


def _to_bool(value: Any, _: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = value.strip().lower() if isinstance(value, str) else ""
    if text in _TRUE | _FALSE:
        return text in _TRUE
    raise _wrong("bool", value)


def _to_int(value: Any, _: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    raise _wrong("int", value)


def _to_float(value: Any, _: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return float(value)
    raise _wrong("float", value)


def _to_str(value: Any, _: Any) -> str:
    if isinstance(value, str):
        return value
    raise _wrong("str", value)


def _to_strings(value: Any, _: Any) -> tuple[str, ...]:
    if isinstance(value, str):  # MEMSEARCH_MEMORY_PATHS=memory,notes
        return tuple(part.strip() for part in value.split(",") if part.strip())
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise _wrong("a list of strings", value)


def choices(section: str, name: str) -> tuple[str, ...] | None:
    """The values a choice setting takes (its `Literal[...]` type), else None."""
    typ = get_type_hints(SECTIONS[section])[name]
    return get_args(typ) if get_origin(typ) is Literal else None


def _to_choice(value: Any, typ: Any) -> str:
    if isinstance(value, str) and value in get_args(typ):
        return value
    raise ValueError(f"expected one of {sorted(get_args(typ))}, got {value!r}")


# Milvus: letters, digits and underscores, not starting with a digit, at most 255 characters; the index adds
# "_windows" (core/store/schema.py WINDOW_SUFFIX) for its second collection, so a name keeps 8 for that.
_COLLECTION = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,246}")
_GLOBS = {("memory", "exclude"), ("compact", "archive_dir")}  # settings read as globs (config/globs.py)


def _check(section: str, name: str, value: Any) -> None:
    """The range on the field (`ranged`; every number is finite and at least 0), run on each value after it is
    structured; the Milvus collection's name as Milvus takes it, and its URI (sections.py milvus_uri_problem); at
    least one memory folder; globs that can be read."""
    if (section, name) == ("milvus", "collection") and not _COLLECTION.fullmatch(value):
        raise ValueError(
            "must be 1 to 247 letters, digits or underscores, not starting with a digit "
            f"(a Milvus collection name), got {value!r}"
        )
    if (section, name) == ("milvus", "uri") and (problem := milvus_uri_problem(value)):
        raise ValueError(problem)
    if (section, name) == ("memory", "paths") and not value:
        raise ValueError('names no folder: give at least one (the default is ["memory"])')
    if (section, name) in _GLOBS:  # (matched as gitignore patterns: one that cannot be read would fail each search)
        for glob in (value,) if isinstance(value, str) else value:
            check_glob(glob.strip())
    if isinstance(value, float) and not math.isfinite(value):  # (nan passes every comparison; inf any upper bound)
        raise ValueError(f"must be a finite number, got {value!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        low, high = _RANGES.get((section, name), (0, None))
        if high is not None and not low <= value <= high:
            raise ValueError(f"must be between {low} and {high}, got {value!r}")
        if low >= 1 and value < low:
            raise ValueError(f"must be at least {low}, got {value!r}")
        if value < low:
            raise ValueError(f"must not be negative, got {value!r}")


def _checked(converter: Converter, section: str, name: str, typ: Any) -> Callable[[Any, Any], Any]:
    structure = converter.get_structure_hook(typ)

    def hook(value: Any, cls: Any) -> Any:
        result = structure(value, cls)
        _check(section, name, result)
        return result

    return hook


def _structure_section(cls: type[Any], converter: Converter) -> Callable[[Any, Any], Any]:
    """A section from camelCase keys (as jedi-language-server's initialization options), every value checked."""
    section, types = _SECTION_OF[cls], get_type_hints(cls)
    renamed: dict[str, Any] = {
        f.name: override(rename=editor_key(f.name), struct_hook=_checked(converter, section, f.name, types[f.name]))
        for f in fields(cls)
    }
    return make_dict_structure_fn(cls, converter, _cattrs_forbid_extra_keys=True, **renamed)


def _unstructure_section(cls: type[Any], converter: Converter) -> Callable[[Any], dict[str, Any]]:
    renamed: dict[str, Any] = {f.name: override(rename=editor_key(f.name)) for f in fields(cls)}
    return make_dict_unstructure_fn(cls, converter, **renamed)


CONVERTER = Converter(forbid_extra_keys=True)
for _type, _hook in ((bool, _to_bool), (int, _to_int), (float, _to_float), (str, _to_str)):
    CONVERTER.register_structure_hook(_type, _hook)
CONVERTER.register_structure_hook_func(lambda t: t == tuple[str, ...], _to_strings)
CONVERTER.register_structure_hook_func(lambda t: get_origin(t) is Literal, _to_choice)
CONVERTER.register_structure_hook_factory(lambda t: t in _SECTION_OF, _structure_section)
CONVERTER.register_unstructure_hook_factory(lambda t: t in _SECTION_OF, _unstructure_section)


def _messages(exc: ClassValidationError, origin: str, written: Mapping[tuple[str, str], str]) -> list[str]:
    """cattrs' nested errors (`transform_error`), one line per key as the user wrote it."""
    lines = []
    for line in transform_error(exc, path="$", format_exception=_format):
        text, _, path = line.rpartition(" @ ")
        section, _, name = path.removeprefix("$").strip(".").partition(".")
        if text.startswith(_EXTRA):
            lines += [
                f"{origin}: unknown setting '{written.get((section, key), f'{section}.{key}'.strip('.'))}'"
                for key in sorted(text.removeprefix(_EXTRA).split(","))
            ]
        else:
            key = written.get((section, editor_key(name)), f"{section}.{name}") if name else section
            lines.append(f"{origin}: {key}: {text}")
    return lines


_EXTRA = "\0extra:"


def _format(exc: BaseException, _: Any) -> str:
    if isinstance(exc, ForbiddenExtraKeysError):
        return _EXTRA + ",".join(exc.extra_fields)
    return str(exc)


def _names(section: str) -> set[str]:
    return {f.name for f in fields(SECTIONS[section])}


def kwargs_to_settings(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Memory(ws, top_k=5, vector_weight=0.5, milvus_uri=...) -> nested overrides for Config."""
    nested: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in SECTIONS and isinstance(value, dict):
            nested.setdefault(key, {}).update(value)
            continue
        section = next((s for s in SECTIONS if key.startswith(s + "_") and key[len(s) + 1 :] in _names(s)), None)
        if section:
            nested.setdefault(section, {})[key[len(section) + 1 :]] = value
            continue
        owners = [s for s in SECTIONS if key in _names(s)]
        if len(owners) != 1:
            hint = f" (say {' or '.join(f'{s}_{key}' for s in owners)})" if owners else ""
            raise ConfigError(f"settings: unknown or ambiguous setting '{key}'{hint}")
        nested.setdefault(owners[0], {})[key] = value
    return nested
