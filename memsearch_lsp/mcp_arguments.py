"""What an MCP tool's arguments may be, said in one sentence with a hint: the names and JSON types of its input
schema, checked before the SDK reads them (its pydantic reading is lax: `"yes"` is true, `"3"` is 3, an unknown name
is dropped), and pydantic's own complaints (ranges, lengths, choices) in the same words."""

from __future__ import annotations

import difflib
from typing import Any

from pydantic import ValidationError

_PROBLEMS = {
    "missing": lambda e: "is required",
    "greater_than_equal": lambda e: f"must be at least {e['ctx']['ge']} (got {e['input']!r})",
    "less_than_equal": lambda e: f"must be at most {e['ctx']['le']} (got {e['input']!r})",
    "string_too_short": lambda e: "must not be empty",
    "string_too_long": lambda e: f"must be at most {e['ctx']['max_length']} characters",
    "int_parsing": lambda e: f"must be a whole number (got {e['input']!r})",
    "int_from_float": lambda e: f"must be a whole number (got {e['input']!r})",
    "int_type": lambda e: f"must be a whole number (got {e['input']!r})",
    "bool_parsing": lambda e: f"must be true or false (got {e['input']!r})",
    "bool_type": lambda e: f"must be true or false (got {e['input']!r})",
    "string_type": lambda e: f"must be text (got {e['input']!r})",
    "literal_error": lambda e: f"must be one of {e['ctx']['expected']} (got {e['input']!r})",
}
# a JSON type as the messages name it, and the Python values json.loads gives for it (a bool is no number)
_KINDS: dict[str, tuple[str, tuple[type, ...]]] = {
    "string": ("text", (str,)),
    "integer": ("a whole number", (int,)),
    "number": ("a number", (int, float)),
    "boolean": ("true or false", (bool,)),
    "array": ("a list", (list,)),
    "object": ("an object", (dict,)),
    "null": ("null", (type(None),)),
}


def argument_error(tool: str, error: ValidationError) -> str:
    """pydantic's validation error as one sentence naming each argument and what it must be (no pydantic type
    names, no links)."""
    said: dict[str, str] = {}
    for item in error.errors():
        name = str(item["loc"][0]) if item["loc"] else "the arguments"
        explain = _PROBLEMS.get(item["type"])
        problem = explain(item) if explain else str(item["msg"]).lower().replace("input should", "should")
        said.setdefault(name, f"{name} {problem}")  # a union's several complaints: the first one
    return f"{tool}: {'; '.join(said.values())}"


def unexpected(tool: str, schema: dict[str, Any], arguments: dict[str, Any]) -> str:
    """What is wrong with `arguments` by the tool's input `schema`, in one sentence ("" when nothing): a required one
    missing, a value of another JSON type (`true` for a number, `"true"` for true or false), a name it does not take
    (with the closest one it takes)."""
    properties: dict[str, Any] = schema.get("properties", {})
    said = [
        f"{name} is required"
        if name not in arguments
        else f"{name} must be {_kind(spec)} (got {_shown(arguments[name])})"
        for name, spec in properties.items()
        if (name in arguments and not _fits(arguments[name], spec))
        or (name not in arguments and name in schema.get("required", ()))
    ]
    for name in arguments:
        if name not in properties:
            close = difflib.get_close_matches(name, properties, n=1, cutoff=0) or [""]
            said.append(
                f"there is no argument {name}" + (f" (did you mean {close[0]}?)" if close[0] else ": it takes none")
            )
    return f"{tool}: {'; '.join(said)}" if said else ""


def _shown(value: Any) -> str:
    """A value as a message shows it: its repr, a long one cut."""
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _fits(value: Any, spec: dict[str, Any]) -> bool:
    if "anyOf" in spec:
        return any(_fits(value, option) for option in spec["anyOf"])
    kind = spec.get("type")
    if kind not in _KINDS:  # (no type said: any value)
        return True
    if isinstance(value, bool) and kind != "boolean":
        return False
    if kind == "integer" and isinstance(value, float):  # (JSON has one number type: 3.0 is a whole number)
        return value.is_integer()
    if isinstance(value, list):
        return kind == "array" and all(_fits(item, spec.get("items", {})) for item in value)
    return isinstance(value, _KINDS[kind][1])


def _kind(spec: dict[str, Any]) -> str:
    if "anyOf" in spec:
        kinds = [_kind(option) for option in spec["anyOf"]]
        return ", ".join(kinds[:-1]) + f" or {kinds[-1]}" if len(kinds) > 1 else kinds[0]
    kind = spec.get("type", "")
    items = spec.get("items", {}).get("type") if kind == "array" else None
    return f"a list of {_KINDS[items][0]}" if items in _KINDS else _KINDS.get(kind, (kind, ()))[0]


def hint(tool: str, schema: dict[str, Any]) -> str:
    """A bad argument's hint: the tool's arguments, with their defaults."""
    required = set(schema.get("required", []))
    arguments = [
        name if name in required else f"{name}={json_default(spec)}"
        for name, spec in schema.get("properties", {}).items()
    ]
    return f"Hint: call {tool}({', '.join(arguments)}); the tool's input schema says more."


def json_default(spec: dict[str, Any]) -> str:
    default = spec.get("default")
    return "null" if default is None else repr(default) if isinstance(default, str) else str(default).lower()
