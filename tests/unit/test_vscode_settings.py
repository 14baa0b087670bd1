"""The VS Code settings schema (vscode-extension/package.json) matches memsearch_lsp.config."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Literal, get_origin, get_type_hints

import pytest

from memsearch_lsp import config
from tests.helpers import ROOT

PACKAGE_JSON = ROOT / "vscode-extension" / "package.json"
PREFIX = "memsearch."

#: JSON-schema type of each Python field type of the config dataclasses.
SCHEMA_TYPES: dict[Any, str] = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    tuple[str, ...]: "array",
}


@dataclasses.dataclass(frozen=True)
class Field:
    key: str  # editor key without the prefix, e.g. "search.vectorWeight"
    section: str
    name: str
    type: Any
    default: Any


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def config_fields() -> dict[str, Field]:
    """Every field of the config dataclasses under its editor key (lsp.* sits at the top level)."""
    defaults = config.Config().to_dict()
    out: dict[str, Field] = {}
    for section, cls in config.SECTIONS.items():
        hints = get_type_hints(cls)
        for f in dataclasses.fields(cls):
            key = _camel(f.name) if section == "lsp" else f"{section}.{_camel(f.name)}"
            typ = str if get_origin(hints[f.name]) is Literal else hints[f.name]  # a choice: a string
            out[key] = Field(key, section, f.name, typ, defaults[section][f.name])
    return out


def package_properties(path: Path = PACKAGE_JSON) -> dict[str, dict[str, Any]]:
    """`contributes.configuration` properties, from one object or a list of categories."""
    configuration = json.loads(path.read_text(encoding="utf-8"))["contributes"]["configuration"]
    blocks = configuration if isinstance(configuration, list) else [configuration]
    props: dict[str, dict[str, Any]] = {}
    for block in blocks:
        for key, schema in block.get("properties", {}).items():
            assert key not in props, f"{key} is contributed twice"
            props[key] = schema
    return props


def expected_keys() -> set[str]:
    return {PREFIX + key for key in config.settings_keys()} | {PREFIX + key for key in config.CLIENT_ONLY_SETTINGS}


def key_differences(package_keys: set[str], wanted: set[str]) -> tuple[set[str], set[str]]:
    """(in package.json but not in config.py, in config.py but not in package.json)."""
    return package_keys - wanted, wanted - package_keys


PROPS = package_properties()
FIELDS = config_fields()


def test_field_mapping_matches_settings_keys() -> None:
    # The camelCase mapping used below is the one config.py uses.
    assert sorted(FIELDS) == sorted(config.settings_keys())


def test_every_package_setting_exists_in_config() -> None:
    extra, _ = key_differences(set(PROPS), expected_keys())
    assert not extra, f"in package.json but not in memsearch_lsp/config.py: {sorted(extra)}"


def test_every_config_setting_is_in_package_json() -> None:
    _, missing = key_differences(set(PROPS), expected_keys())
    assert not missing, f"in memsearch_lsp/config.py but not in vscode-extension/package.json: {sorted(missing)}"


def test_the_key_check_notices_an_added_key() -> None:
    wanted, added = expected_keys(), "memsearch.search.newThing"
    assert key_differences(wanted, wanted) == (set(), set())
    assert key_differences(wanted | {added}, wanted) == ({added}, set())
    assert key_differences(wanted, wanted | {added}) == (set(), {added})


@pytest.mark.parametrize("key", sorted(FIELDS))
def test_default_and_type_match_dataclass(key: str) -> None:
    field, schema = FIELDS[key], PROPS[PREFIX + key]
    assert schema.get("type") == SCHEMA_TYPES[field.type], f"{key}: type"
    default = schema.get("default")
    if field.type is bool:
        assert isinstance(default, bool)
    elif field.type is int:
        assert isinstance(default, int) and not isinstance(default, bool)
    elif field.type is float:
        assert isinstance(default, (int, float)) and not isinstance(default, bool)
    elif field.type is str:
        assert isinstance(default, str)
    else:
        assert schema.get("items") == {"type": "string"}, f"{key}: items"
        assert isinstance(default, list)
        default = tuple(default)
    assert default == field.default, f"{key}: package.json default {default!r} != config.py {field.default!r}"


@pytest.mark.parametrize("key", sorted(FIELDS))
def test_enums_match_config_choices(key: str) -> None:
    field, schema = FIELDS[key], PROPS[PREFIX + key]
    choices = config.choices(field.section, field.name)
    if choices is None:
        assert "enum" not in schema, f"{key}: enum in package.json but free in config.py"
        return
    assert set(schema.get("enum", [])) == set(choices), f"{key}: enum"
    for value in schema["enum"]:
        config.Config().merged({key: value})  # the server accepts every choice the editor offers
    with pytest.raises(config.ConfigError):
        config.Config().merged({key: "not-a-choice"})


@pytest.mark.parametrize("key", sorted(k for k in FIELDS if FIELDS[k].type in (int, float)))
def test_numeric_bounds_match_server_checks(key: str) -> None:
    schema = PROPS[PREFIX + key]
    step = 1 if FIELDS[key].type is int else 0.5
    if "minimum" in schema:
        config.Config().merged({key: schema["minimum"]})
        with pytest.raises(config.ConfigError):
            config.Config().merged({key: schema["minimum"] - step})
    if "maximum" in schema:
        config.Config().merged({key: schema["maximum"]})
        with pytest.raises(config.ConfigError):
            config.Config().merged({key: schema["maximum"] + step})


def test_package_defaults_as_initialization_options_give_default_config() -> None:
    """The extension sends a nested object ({"search": {"topK": 3}, "showNotifications": true})."""
    nested: dict[str, Any] = {}
    for key, schema in PROPS.items():
        name = key[len(PREFIX) :]
        if name in config.CLIENT_ONLY_SETTINGS:
            continue
        *groups, leaf = name.split(".")
        node = nested
        for group in groups:
            node = node.setdefault(group, {})
        node[leaf] = schema["default"]
    assert config.Config().merged(nested) == config.Config()


def test_client_only_settings_are_ignored_by_the_server() -> None:
    sent = {
        "interpreter": ["/venv/bin/python"],
        "trace": {"server": "verbose"},
        "mcp": {"enable": False},
        "search": {"topK": 5},
    }
    assert config.Config().merged(sent) == config.Config().merged({"search.topK": 5})
    for key in config.CLIENT_ONLY_SETTINGS:
        assert PREFIX + key in PROPS


def test_settings_that_send_data_or_choose_a_key_are_user_settings_only() -> None:
    """What a workspace file may not set (trust.USER_ONLY_KEYS, the keys of USER_ONLY_VALUES) a workspace's
    `.vscode/settings.json` may not set either: `machine` scope, and the extension reads only the user's value."""
    user_only = {_camel(key) for key in config.USER_ONLY_KEYS} | {_camel(key) for key, _ in config.USER_ONLY_VALUES}
    scopes = {key: PROPS[PREFIX + key].get("scope") for key in user_only}
    assert {key for key, scope in scopes.items() if scope != "machine"} == set(), scopes
    settings_ts = (ROOT / "vscode-extension" / "src" / "common" / "settings.ts").read_text(encoding="utf-8")
    block = settings_ts.split("USER_ONLY_SETTINGS: ReadonlySet<string> = new Set([", 1)[1].split("]", 1)[0]
    assert {part.strip().strip("'") for part in block.split(",") if part.strip()} == user_only


def test_path_settings_of_a_workspace_are_checked_by_the_extension() -> None:
    """The server cannot tell a workspace's editor value from the user's, so the extension sends a workspace's value of
    trust.WORKSPACE_PATH_KEYS only inside the workspace: its list is that one."""
    settings_ts = (ROOT / "vscode-extension" / "src" / "common" / "settings.ts").read_text(encoding="utf-8")
    block = settings_ts.split("WORKSPACE_PATH_SETTINGS: ReadonlySet<string> = new Set([", 1)[1].split("]", 1)[0]
    listed = {part.strip().strip("'") for part in block.split(",") if part.strip()}
    assert listed == {_camel(key) for key in config.WORKSPACE_PATH_KEYS}
