"""The README runs: its TOML blocks and `init`'s template load as settings, and its table of JSON answers
lists exactly the fields each command prints (the CLI in process, with the real bundled model)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from memsearch_lsp import cli
from memsearch_lsp.config import USER_ONLY_KEYS, Config, tomllib
from memsearch_lsp.core.onboard import config_template
from tests.helpers import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_toml_block_in_the_readme_is_valid_settings() -> None:
    blocks = re.findall(r"```toml\n(.*?)```", README, re.S)
    assert blocks
    for block in blocks:
        if block.startswith("# ~/.codex/"):  # another program's settings (tests/e2e/test_agents.py starts it)
            continue
        data = tomllib.loads(block)  # a repeated key (the old [embedding] block) fails here
        Config().merged(data, origin="README")  # and every key and value is a real setting


def test_init_template_uncommented_is_valid_and_has_no_user_only_keys() -> None:
    lines = [line[2:] for line in config_template().splitlines() if re.match(r"# (\[\w+\]|\w+ = )", line)]
    data = tomllib.loads("\n".join(lines))
    assert Config().merged(data, origin="template") == Config()  # every line is at its default
    keys = {f"{section}.{key}" for section, values in data.items() for key in values}
    assert keys and not keys & USER_ONLY_KEYS


def _table() -> dict[str, tuple[set[str], set[str]]]:
    """answer -> (fields always present, fields present in some answers) from the README's table."""
    part = README.split("### JSON answers", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, tuple[set[str], set[str]]] = {}
    for line in part.splitlines():
        match = re.match(r"\| `([\w.\[\]]+)` \| (.*) \|$", line)
        if match:
            names = re.findall(r"`(\w+)(\??)`", match.group(2))
            rows[match.group(1)] = ({n for n, opt in names if not opt}, {n for n, opt in names if opt})
    return rows


def run(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> Any:
    assert cli.main([*args, "--json"]) == code
    return json.loads(capsys.readouterr().out)


@pytest.mark.model
def test_the_json_answers_table_matches_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    table = _table()
    seen: dict[str, Any] = {}
    ws = tmp_path / "ws"
    shutil.copytree(ROOT / "examples" / "memory", ws / "memory")
    (ws / "memory" / "broken.md").write_bytes(b"\xff\xfe\x00 not text")
    monkeypatch.setenv("MEMSEARCH_NOW", "2026-02-20T10:00")
    w = ["--workspace", str(ws)]
    seen["index"] = run(capsys, "index", *w)
    sample_search_answers_as_the_readme_shows(ws, capsys)
    seen["search"] = run(capsys, "search", "message broker", *w)
    seen["expand"] = run(capsys, "expand", seen["search"]["hits"][0]["id"][:6], *w)
    seen["status"] = run(capsys, "status", *w)
    seen["remember"] = run(capsys, "remember", "Okapi deploys on Thursdays", *w)
    seen["recent"] = run(capsys, "recent", *w)
    seen["forget"] = run(capsys, "forget", seen["remember"]["id"], "--yes", *w)
    seen["compact"] = run(capsys, "compact", "--dry-run", "--older-than", "3", *w)
    small = run(capsys, "compact", "--dry-run", "memory/2026-02-16.md", *w)  # one small log: nothing to gain
    seen["warm"] = run(capsys, "warm", "--idle", "0.2", *w)  # (before reset: nothing to embed again)
    seen["reset"] = run(capsys, "reset", "--yes", *w)
    seen["init"] = run(capsys, "init", str(tmp_path / "other"))
    seen["doctor"] = run(capsys, "doctor", "--workspace", str(tmp_path / "other"))
    seen["error"] = run(capsys, "expand", "nope", *w, code=1)

    def check(name: str, value: Any) -> None:
        items = value if name.endswith("[]") else [value]
        assert items, f"no {name} to check"
        required, optional = table[name]
        for item in items:
            assert required <= set(item) <= required | optional, (name, sorted(item))
        for key in required | optional:
            nested = f"{name.removesuffix('[]')}.{key}"
            for candidate in (nested, nested + "[]"):
                if candidate in table and any(item.get(key) for item in items):
                    inner = [x for item in items for x in (item[key] if isinstance(item[key], list) else [item[key]])]
                    check(candidate, inner if candidate.endswith("[]") else inner[0])
                    checked.add(candidate)

    checked: set[str] = set()
    for name, value in seen.items():
        check(name, value)
        checked.add(name)
    check("compact", small)
    doctor = run(capsys, "doctor", "--workspace", str(tmp_path), code=1)  # no memory here: a problem
    check("doctor", doctor)
    check("doctor.error", doctor["error"])
    checked.add("doctor.error")
    assert checked == set(table), sorted(set(table) - checked)


def sample_search_answers_as_the_readme_shows(ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's sample `search` (text output) on a copy of the example memory: the same lines, the score to
    within 0.02."""
    block = README.split("```sh\n$ memsearch-lsp search ", 1)[1].split("```", 1)[0]
    command, *shown = block.rstrip("\n").split("\n")
    args = [a.strip('"') for a in re.findall(r'"[^"]*"|\S+', command)]
    assert args[-2:] == ["--workspace", "examples"]
    assert cli.main(["search", *args[:-2], "--workspace", str(ws)]) == 0
    printed = capsys.readouterr().out.rstrip("\n").split("\n")
    score = re.compile(r"score=(\d\.\d+)")
    assert [score.sub("score=", line) for line in printed] == [score.sub("score=", line) for line in shown]
    assert abs(float(score.findall(printed[0])[0]) - float(score.findall(shown[0])[0])) <= 0.02


def test_the_python_api_example_recalls_a_note_on_its_first_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's agent loop, as written, on a memory never indexed: its first search found nothing."""
    from memsearch_lsp.core.onboard import init_workspace

    code = re.search(r"## Python API for agents\n\n```python\n(.*?)```", README, re.S)
    assert code is not None
    monkeypatch.setenv("HOME", str(tmp_path))
    init_workspace(tmp_path / "my-agent")
    (tmp_path / "my-agent" / "memory" / "MEMORY.md").write_text(
        "# Memory\n\n## Cache\n\nWe use Redis with a 5 min TTL.\n"
    )
    scope: dict[str, Any] = {}
    exec(compile(code.group(1), "README.md", "exec"), scope)
    prompts: list[str] = []
    try:
        scope["turn"]("How long do cached entries live in Redis?", lambda prompt: prompts.append(prompt) or "5 min")
    finally:
        scope["memory"].close()
    assert "5 min TTL" in prompts[0]


def test_the_readme_lists_what_a_workspace_file_may_not_set() -> None:
    """The README's list of what `.memsearch.toml` cannot set left out `compact.model` (trust.USER_ONLY_KEYS)."""
    from memsearch_lsp.config import USER_ONLY_VALUES, WORKSPACE_PATH_KEYS

    part = README.split("A workspace file cannot set", 1)[1].split("it ignores them", 1)[0]
    named = set(re.findall(r"`([\w.]+)`", part))
    values = {(key, value) for key, value in re.findall(r'`([\w.]+) = "(\w+)"`', part)}
    assert named >= USER_ONLY_KEYS | WORKSPACE_PATH_KEYS, sorted((USER_ONLY_KEYS | WORKSPACE_PATH_KEYS) - named)
    assert values >= USER_ONLY_VALUES, sorted(USER_ONLY_VALUES - values)
