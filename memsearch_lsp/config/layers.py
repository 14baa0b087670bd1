"""Where settings come from, in order: defaults < the user file < `<workspace>/.memsearch.toml` (without what a
workspace may not set: trust.py) < `MEMSEARCH_*` environment variables < editor settings or API arguments."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from memsearch_lsp.config.model import SECTIONS, Config, _names, editor_key, spelled_twice
from memsearch_lsp.config.sections import CONFIG_FILE, ENV_NOT_SETTINGS, ENV_PREFIX, USER_CONFIG, ConfigError, tomllib
from memsearch_lsp.trust import LOCAL_PROVIDERS, PROVIDER_BOUND, untrusted

T = TypeVar("T")


def from_env(env: Mapping[str, str], errors: list[str] | None = None) -> dict[str, dict[str, str]]:
    """MEMSEARCH_SEARCH_TOP_K=5 -> {'search': {'top_k': '5'}}. Unknown names: one ConfigError naming them all, or,
    when `errors` is given (the language server, doctor), each left out and said there, the others kept."""
    out: dict[str, dict[str, str]] = {}
    unknown = []
    for key, value in env.items():
        if not key.startswith(ENV_PREFIX) or key.startswith(ENV_NOT_SETTINGS):
            continue
        rest = key[len(ENV_PREFIX) :].lower()
        section = next((s for s in SECTIONS if rest.startswith(s + "_")), None)
        name = rest[len(section) + 1 :] if section else ""
        if section is None or name not in _names(section):
            unknown.append(f"environment: unknown setting {key}")
            continue
        out.setdefault(section, {})[name] = value
    if unknown and errors is None:
        raise ConfigError("; ".join(sorted(unknown)))
    if unknown and errors is not None:
        errors.extend(sorted(unknown))
    return out


def user_config_path() -> Path:
    """`$XDG_CONFIG_HOME/memsearch-lsp/config.toml`, else `~/.config/memsearch-lsp/config.toml`."""
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return base / USER_CONFIG


def _read_toml(path: Path) -> dict[str, Any] | None:
    """A settings file's settings; None when there is none; ConfigError when it is not one (a folder) or does not
    parse. A UTF-8 byte order mark (Windows' Notepad writes one) is no part of the settings."""
    if path.is_dir():
        raise ConfigError(f"{path} is a directory, not a settings file")
    if not path.is_file():
        return None
    try:
        return tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc


_warned: set[tuple[str, tuple[str, ...]]] = set()


def flat_settings(data: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """A layer's settings as (dotted key as written, value): `[search] topK = 5` -> ("search.topK", 5)."""
    return [
        (f"{key}.{name}", item) if key in SECTIONS and isinstance(value, Mapping) else (str(key), value)
        for key, value in data.items()
        for name, item in (value.items() if key in SECTIONS and isinstance(value, Mapping) else [("", value)])
    ]


def _ignored(flat: Sequence[tuple[str, Any]], root: Path) -> tuple[str, ...]:
    ignored = {key for key, value in flat if untrusted(editor_key(key), value, root)}
    if any(editor_key(key) == "embedding.model" for key in ignored):  # (a provider without the model it was set with
        ignored |= {key for key, _ in flat if editor_key(key) == "embedding.provider"}  # would load another, or none)
    return tuple(sorted(ignored))


def ignored_workspace_keys(path: Path) -> tuple[str, ...]:
    """The keys of the workspace file `path` that are not applied (user-only, see USER_ONLY_KEYS), as
    `section.key`; () when the file is missing. ConfigError when it cannot be read."""
    data = _read_toml(path)
    return () if data is None else _ignored(flat_settings(data), path.parent)


def _within(path: Path, workspace: Path) -> bool:
    """The workspace file is the workspace's own: a link to a file outside it (a cloned repository's link to
    `~/.aws/...` or another project's settings) is never read; said once."""
    try:
        path.resolve().relative_to(workspace.resolve())
        return True
    except ValueError:
        if (str(path), ("link",)) not in _warned:
            _warned.add((str(path), ("link",)))
            logging.getLogger("memsearch_lsp").warning(
                "%s: ignored: it is a link to %s, outside the workspace", path, path.resolve()
            )
        return False
    except (OSError, RuntimeError):  # a looping link: nothing to read
        return False


def _workspace_settings(data: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """A workspace file's settings without the user-only ones (one warning names what was ignored)."""
    flat = flat_settings(data)
    ignored = _ignored(flat, path.parent)
    _warn_once(
        path,
        ignored,
        "ignoring %s: a workspace file may not set where data, secrets or files go; set them in %s, MEMSEARCH_* "
        "environment variables or editor settings",
    )
    return {key: value for key, value in flat if key not in ignored}


def _warn_once(path: Path, keys: tuple[str, ...], message: str) -> None:
    if keys and (str(path), keys) not in _warned:
        _warned.add((str(path), keys))
        logging.getLogger("memsearch_lsp").warning(f"%s: {message}", path, ", ".join(keys), user_config_path())


def merge_layer(config: Config, data: Mapping[str, Any], origin: str, errors: list[str] | None) -> Config:
    """`config` with one layer applied; leniently when `errors` is given (the language server, doctor): each bad
    key (unknown, of the wrong type, out of range) is left out and said, the others apply together; when what is
    wrong lies between them, the layer's keys of that rule (TIED) are left out and said. Else ConfigError names it."""
    try:
        return config.merged(data, origin)
    except ConfigError:
        if errors is None:
            raise
    flat = flat_settings(data)
    bad = {}
    for key, value in flat:
        try:
            Config().merged({key: value}, origin, between=False)
        except ConfigError as exc:
            bad[key] = str(exc)
    for keys in _same_setting(key for key, _ in flat):
        bad.update(dict.fromkeys(keys, spelled_twice(origin, *keys)))
    errors.extend(dict.fromkeys(bad.values()))
    rest = [(key, value) for key, value in flat if key not in bad]
    for n in range(len(TIED) + 1):
        tied = {editor_key(key) for group in TIED[:n] for key in group}
        try:
            merged = config.merged({key: value for key, value in rest if editor_key(key) not in tied}, origin)
        except ConfigError as exc:
            said = str(exc)
            continue
        if n:
            errors.append(f"{said} (left out: {', '.join(key for key, _ in rest if editor_key(key) in tied)})")
        return merged
    return config


def _same_setting(keys: Iterable[str]) -> list[list[str]]:
    """The keys of one layer that name one setting, each group as written (`search.top_k`, `search.topK`)."""
    groups: dict[str, list[str]] = {}
    for key in keys:
        groups.setdefault(editor_key(key), []).append(key)
    return [group for group in groups.values() if len(group) > 1]


# the settings a rule between settings ties (Config.merged): left out together, the least needed first
TIED = (("compact.archive_dir",), ("search.vector_weight", "search.bm25_weight"), ("memory.paths",))


def load_config(
    workspace: Path,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    errors: list[str] | None = None,
    origin: str = "settings",
) -> Config:
    """Defaults < user config file < `<workspace>/.memsearch.toml` (no user-only keys) < `MEMSEARCH_*` env <
    `overrides` (editor settings or API arguments, said as `origin`). `errors`: see `merge_layer` (a file that does not
    parse is left out whole). The workspace file's model is for a local provider only (trust.PROVIDER_BOUND_KEYS)."""
    user, path = user_config_path(), Path(workspace) / CONFIG_FILE
    mine = _lenient(errors, lambda: _read_toml(user))
    theirs = _lenient(errors, lambda: _read_toml(path) if _within(path, Path(workspace)) else None)
    layers: list[tuple[str, Mapping[str, Any]]] = [
        (str(user), mine or {}),
        (str(path), _workspace_settings(theirs, path) if theirs else {}),
        ("environment", from_env(os.environ if env is None else env, errors)),
        (origin, overrides or {}),
    ]
    config = _apply(layers, errors)
    bound = tuple(sorted(key for key in layers[1][1] if editor_key(key) in PROVIDER_BOUND))
    if bound and config.embedding.provider not in LOCAL_PROVIDERS:
        _warn_once(
            path, bound, f"ignoring %s: provider {config.embedding.provider!r} is the user's (%s), and so is its model"
        )
        layers[1] = (str(path), {k: v for k, v in layers[1][1].items() if k not in bound})
        config = _apply(layers, None if errors is None else [])
    return config


def _lenient(errors: list[str] | None, read: Callable[[], T | None]) -> T | None:
    """`read()`; when it raises ConfigError and `errors` is given, None and the message appended."""
    try:
        return read()
    except ConfigError as exc:
        if errors is None:
            raise
        errors.append(str(exc))
        return None


def _apply(layers: Sequence[tuple[str, Mapping[str, Any]]], errors: list[str] | None) -> Config:
    config = Config()
    for origin, data in layers:
        config = merge_layer(config, data, origin, errors) if data else config
    return config
