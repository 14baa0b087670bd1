"""The doctor's settings checks: every place settings come from (the user file, the workspace file, MEMSEARCH_*
variables, the editor settings it can read), each with its path and keys (VS Code's values checked as the server
checks the settings an editor sends), and the endpoints they configure (the summariser's, the embeddings'), asked
once with a short timeout. To report another source, add it to `config_sources`."""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memsearch_lsp.config import (
    CONFIG_FILE,
    ENV_NOT_SETTINGS,
    ENV_PREFIX,
    USER_ONLY_KEYS,
    USER_ONLY_VALUES,
    Config,
    ConfigError,
    editor_key,
    from_env,
    ignored_workspace_keys,
    load_config,
    merge_layer,
    tomllib,
    user_config_path,
)
from memsearch_lsp.core import clock
from memsearch_lsp.core.endpoint import models_answer
from memsearch_lsp.doctor.report import NOT_LOADED, Check, Context
from memsearch_lsp.trust import hide_credentials, untrusted

ENDPOINT_TIMEOUT_S = 3.0  # how long doctor waits for a configured endpoint
EDITOR_PREFIX = "memsearch."
#: The editor settings that send the memory or a key somewhere: VS Code takes them from the user's settings only
#: (`machine` scope), never from a workspace's `.vscode/settings.json` (trust.py's rule for `.memsearch.toml`).
EDITOR_USER_ONLY = frozenset(editor_key(k) for k in USER_ONLY_KEYS) | frozenset(
    editor_key(k) for k, _ in USER_ONLY_VALUES
)


@dataclass(frozen=True)
class ConfigSource:
    """One place settings come from, in order of precedence (later wins)."""

    origin: str  # "user file", "workspace file", "environment", "VS Code workspace settings", ...
    path: str  # a file, or "" for the environment
    keys: tuple[str, ...]
    ignored: tuple[str, ...] = ()  # keys present but not applied (e.g. untrusted in a workspace file)
    note: str = ""  # where it applies, when not everywhere

    def to_dict(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "path": self.path,
            "keys": list(self.keys),
            "ignored": list(self.ignored),
            "note": self.note,
        }

    def describe(self) -> str:
        keys = ", ".join(k for k in self.keys if k not in self.ignored) or "no settings"
        where = f"{self.origin} {self.path}" if self.path else self.origin
        return f"{where}{f' ({self.note})' if self.note else ''}: {keys}"


def config_sources(root: Path, env: dict[str, str] | None = None) -> list[ConfigSource]:
    """Where settings come from for `root`, lowest precedence first (defaults are not listed): the files and
    variables the CLI reads, then the editor settings found on disk (they apply in that editor's server)."""
    sources = []
    user = user_config_path()
    if user.is_file():
        sources.append(ConfigSource("user file", str(user), _toml_keys(user)))
    path = root / CONFIG_FILE
    for origin, folder in (("user file", user), ("workspace file", path)):
        if folder.is_dir():  # (check_config says so: the settings do not load)
            sources.append(ConfigSource(origin, str(folder), (), note="a directory, not a settings file"))
    if path.is_file():
        try:
            ignored = ignored_workspace_keys(path)
        except ConfigError:  # reported by check_config when the settings load
            ignored = ()
        sources.append(ConfigSource("workspace file", str(path), _toml_keys(path), ignored))
    environ = os.environ if env is None else env
    names = tuple(sorted(k for k in environ if k.startswith(ENV_PREFIX) and not k.startswith(ENV_NOT_SETTINGS)))
    if names:
        sources.append(ConfigSource("environment", "", names))
    for origin, settings in _vscode_settings(root):
        keys = _editor_keys(settings)
        ignored = _workspace_ignored(settings, keys, root) if origin == _WORKSPACE else ()
        if keys:
            sources.append(
                ConfigSource(origin, str(settings), keys, ignored, note="VS Code's server only, not the CLI")
            )
    return sources


def in_effect(config: Config, sources: list[ConfigSource]) -> dict[str, dict[str, Any]]:
    """Each setting the CLI's sources set (the files, MEMSEARCH_* variables), dotted in snake_case: the value in effect
    and the source it comes from, the last that sets it (a secret shown as ***). Editor settings apply in that editor's
    server only: not here."""
    out: dict[str, dict[str, Any]] = {}
    for source in sources:
        if source.note:  # (VS Code's settings, a directory)
            continue
        for key in source.keys:
            if key in source.ignored:
                continue
            named = from_env({key: ""}, []) if not source.path else _nested(key)
            for section, names in named.items():
                for name in names:
                    value = getattr(getattr(config, section, None), name, _UNSET)
                    if value is not _UNSET:
                        origin = f"{source.origin} {source.path}".strip()
                        out[f"{section}.{name}"] = {"value": _shown(name, value), "from": origin}
    return out


def _shown(name: str, value: Any) -> Any:
    """A setting's value as doctor may show it (its output is pasted into bug reports): a token as ***, a URL without
    its password or query (`?api_key=...`), a `*_env` that is no variable's name (a key pasted there) as ***."""
    if not isinstance(value, str):
        return value
    if name in _SECRETS or (name.endswith("_env") and not _VARIABLE.fullmatch(value)):
        return "***"
    shown = hide_credentials(value)
    return re.sub(r"([?#]).*", r"\1***", shown) if "://" in shown else shown


def _nested(key: str) -> dict[str, list[str]]:
    """A file's dotted key ('search.topK') as from_env gives a variable's: {'search': ['top_k']}."""
    section, _, name = key.partition(".")
    return {section: [re.sub(r"[A-Z]", lambda m: "_" + m.group().lower(), name)]} if name else {}


_UNSET = object()
_SECRETS = frozenset({"token"})  # milvus.token: said as set, never shown
#: What a variable's name looks like (`OPENAI_API_KEY`): upper case, words joined by `_`; a value of another shape in
#: `*_key_env` is taken for a key pasted there (`jina_4f3a...`, 40 letters and digits) and never shown.
_VARIABLE = re.compile(r"(?=.{1,64}$)[A-Z][A-Z0-9]{0,15}(?:_[A-Z0-9]{1,15})*")


def _workspace_ignored(path: Path, keys: tuple[str, ...], root: Path) -> tuple[str, ...]:
    """The keys of a workspace's `.vscode/settings.json` that VS Code's extension does not send: those only the user
    sets, and paths outside the workspace (trust.WORKSPACE_PATH_KEYS)."""
    data = _editor_file(path)
    return tuple(
        k
        for k in keys
        if k.removeprefix(EDITOR_PREFIX) in EDITOR_USER_ONLY
        or untrusted(k.removeprefix(EDITOR_PREFIX), data.get(k), root)
    )


def _toml_keys(path: Path) -> tuple[str, ...]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):
        return ()
    keys: list[str] = []
    for key, value in data.items():
        keys.extend(f"{key}.{k}" for k in value) if isinstance(value, dict) else keys.append(key)
    return tuple(keys)


_USER, _WORKSPACE = "VS Code user settings", "VS Code workspace settings"


def _vscode_settings(root: Path) -> list[tuple[str, Path]]:
    """VS Code's user settings file (Code, VSCodium) and the workspace's `.vscode/settings.json`, those that exist."""
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        xdg = os.environ.get("XDG_CONFIG_HOME", "")
        base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    found = [(_USER, base / app / "User" / "settings.json") for app in ("Code", "VSCodium")]
    found.append((_WORKSPACE, root / ".vscode" / "settings.json"))
    return [(origin, path) for origin, path in found if path.is_file()]


_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.S)  # strings kept, comments dropped
_TRAILING = re.compile(r'"(?:\\.|[^"\\])*"|,(?=\s*[}\]])')  # strings kept, a comma before } or ] dropped


def _jsonc(text: str) -> Any:
    def keep_strings(match: re.Match[str]) -> str:
        return match.group(0) if match.group(0).startswith('"') else ""

    return json.loads(_TRAILING.sub(keep_strings, _COMMENT.sub(keep_strings, text)))


def _editor_file(path: Path) -> dict[str, Any]:
    """A VS Code settings file (JSON with comments and trailing commas); {} when it does not read."""
    try:
        data = _jsonc(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _editor_values(path: Path) -> dict[str, Any]:
    """The `memsearch.*` settings of a VS Code settings file, by key without the prefix (`search.topK`, or a
    section's table when the file nests it: `"memsearch": {"watch": {...}}`)."""
    values: dict[str, Any] = {}
    for key, value in _editor_file(path).items():
        if key == "memsearch" and isinstance(value, dict):
            values.update((str(k), v) for k, v in value.items())
        elif key.startswith(EDITOR_PREFIX):
            values[key.removeprefix(EDITOR_PREFIX)] = value
    return values


def _editor_keys(path: Path) -> tuple[str, ...]:
    """The `memsearch.*` keys of a VS Code settings file."""
    return tuple(sorted(EDITOR_PREFIX + k for k in _editor_values(path)))


_ORIGIN = "\0"  # a ConfigError's origin while one editor setting is checked, taken out of its message


def _rejected(base: Config, values: dict[str, Any]) -> list[str]:
    """What the server says of editor settings `values` applied on `base` (config.merge_layer, as it applies the
    settings an editor sends), one message per bad key: an unknown name, a wrong type, a value out of range, or
    what is wrong between them."""
    problems: list[str] = []
    merge_layer(base, values, _ORIGIN, problems)
    return [problem.replace(f"{_ORIGIN}: ", "") for problem in problems]


def _editor_problems(sources: list[ConfigSource], base: Config) -> dict[str, list[str]]:
    """The VS Code settings files whose `memsearch.*` values the server would reject, with what it would say of
    each; the settings the extension does not send from a workspace (`ignored`) are left out."""
    found = {}
    for source in sources:
        if source.origin not in (_USER, _WORKSPACE):
            continue
        values = _editor_values(Path(source.path))
        sent = {k: v for k, v in values.items() if EDITOR_PREFIX + k not in source.ignored}
        if problems := _rejected(base, sent):
            found[source.path] = problems
    return found


def check_config(ctx: Context) -> Check:
    sources = config_sources(ctx.root)
    data: dict[str, Any] = {"sources": [s.to_dict() for s in sources], "user_file": str(user_config_path())}
    failures = []
    try:
        ctx.config = load_config(ctx.root)
    except ConfigError as exc:
        failures.append(str(exc))
    editor = _editor_problems(sources, ctx.config or Config())
    if editor:
        data["editor_problems"] = editor
        origins = {s.path: s.origin for s in sources}
        failures += [f"{origins[path]} {path}: {'; '.join(said)}" for path, said in editor.items()]
    if failures:
        where = f" (in {' and '.join(editor)})" if editor else ""
        return Check("config", "fail", "; ".join(failures), f"correct or remove that setting{where}", data)
    parts = [s.describe() for s in sources]
    ignored = [f"{k} ({s.path or s.origin})" for s in sources for k in s.ignored]
    if ignored:
        parts.append(
            "ignored (a workspace file may not set where data, secrets or files go; set them in the user "
            "config file, MEMSEARCH_* variables or editor settings): " + ", ".join(ignored)
        )
    data["ignored"] = [k for s in sources for k in s.ignored]
    if ctx.config is not None and (effective := in_effect(ctx.config, sources)):
        data["in_effect"] = effective
        parts.append("in effect: " + ", ".join(f"{k} = {v['value']!r} ({v['from']})" for k, v in effective.items()))
    default = f"defaults (no user file at {user_config_path()}, no {CONFIG_FILE}, no MEMSEARCH_* variables)"
    detail = "; ".join(parts) or default
    if clock_now := os.environ.get(clock.ENV, "").strip():  # (a test's or a replay's fixed time; not a setting)
        data["clock"] = clock_now
        detail += f"; the clock is set to {clock_now} by {clock.ENV} (not a setting: it dates notes and logs)"
    return Check("config", "ok", detail, data=data)


def _endpoints(config: Config, where: str = "") -> list[tuple[str, str, str, str]]:
    """(section, role, base_url, api_key_env) of each OpenAI-compatible endpoint `config` uses; `where` is added to
    the role ("summariser (VS Code)")."""
    wanted = []
    if config.embedding.provider == "openai":
        wanted.append(("embedding", "embeddings" + where, config.embedding.base_url, config.embedding.api_key_env))
    if config.compact.summarizer == "openai":
        wanted.append(("compact", "summariser" + where, config.compact.base_url, config.compact.api_key_env))
    return wanted


def _vscode_endpoints(config: Config, root: Path) -> list[tuple[str, str, str, str]]:
    """The endpoints VS Code's server uses beyond the CLI's: the settings above with the endpoint settings of VS
    Code's user settings on top (the only ones VS Code sends for them)."""
    found = []
    for origin, path in _vscode_settings(root):
        data = _editor_file(path)
        own = {k: data.get(EDITOR_PREFIX + k, _at(data.get("memsearch"), k)) for k in EDITOR_USER_ONLY}
        own = {k: v for k, v in own.items() if v is not None}
        if origin != _USER or not own:
            continue
        try:
            found.extend(_endpoints(config.merged(own, origin), " (VS Code)"))
        except ConfigError:
            continue  # (the server reports a bad setting itself)
    return found


def _at(data: Any, key: str) -> Any:
    """The value at dotted `key` of nested settings, or None."""
    node: Any = data
    for part in key.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def check_endpoints(ctx: Context) -> Check:
    """The OpenAI-compatible endpoints the settings use (embeddings, summariser), the CLI's and VS Code's server's:
    each asked for its model list."""
    config = ctx.config
    if config is None:
        return Check("endpoints", "skip", f"not asked: {NOT_LOADED}")
    wanted = _endpoints(config)
    wanted += [e for e in _vscode_endpoints(config, ctx.root) if e[::2] not in {w[::2] for w in wanted}]
    if not wanted:
        return Check(
            "endpoints", "skip", "none configured (embedding.provider is not 'openai', compact.summarizer not 'openai')"
        )
    lines, data, problems = [], {}, []
    for section, role, base_url, key_env in wanted:
        status, detail = probe(base_url, os.environ.get(key_env, "") if key_env else "")
        data[role] = {"base_url": base_url, "status": status, "detail": detail, "api_key_env": key_env}
        lines.append(f"{role} {base_url}: {detail}")
        if status != "ok":
            if not role.endswith(" (VS Code)"):
                ctx.unreachable.add(section)
            problems.append(_endpoint_fix(section, role, status, key_env))
    if problems:
        return Check("endpoints", "fail", "; ".join(lines), "; ".join(problems), data)
    return Check("endpoints", "ok", "; ".join(lines), data=data)


def probe(base_url: str, key: str, timeout: float = ENDPOINT_TIMEOUT_S) -> tuple[str, str]:
    """("ok" | "refused" | "redirects" | "unreachable", what happened) for GET {base_url}/models, asked as the
    embedder and the summariser ask (core/endpoint.py: a user and password in the URL too): any answer but 401 / 403
    means the endpoint is there; a redirect is not followed (the API key would go with it)."""
    status, said = models_answer(base_url, key, timeout)
    if not status:
        return "unreachable", f"cannot reach it within {timeout:g} s ({said})"
    if status in (401, 403):
        return "refused", f"refuses the request (HTTP {status}{'' if key else ', no API key set'})"
    if 300 <= status < 400:
        return "redirects", f"redirects to {said} (not followed: the API key goes only where base_url points)"
    return "ok", f"answers (HTTP {status}{' for /models' if status >= 400 else ''})"


def _endpoint_fix(section: str, role: str, status: str, key_env: str) -> str:
    if status == "refused":
        return f"put the {role} endpoint's API key in the environment variable {key_env} ({section}.api_key_env)"
    if status == "redirects":
        return f"set {section}.base_url to the address the {role} endpoint redirects to, if you trust it"
    switch = (
        "compact.summarizer = 'extractive' (no endpoint)"
        if section == "compact"
        else "embedding.provider = 'bundled' (the offline model; re-embeds)"
    )
    return f"start the {role} endpoint or correct {section}.base_url in your user settings, or set {switch}"
