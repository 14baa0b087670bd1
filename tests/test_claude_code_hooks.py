"""The Claude Code plugin: hooks.json names real scripts; the hook script fed recorded hook inputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "integrations" / "claude-code"
SCRIPT = PLUGIN / "scripts" / "memsearch_hook.py"
RECORDED = Path(__file__).resolve().parent / "data" / "claude-code"
CLI = f"{sys.executable} -m memsearch_lsp"


def recorded(name: str, ws: Path, **changes: Any) -> str:
    event = json.loads((RECORDED / name).read_text())
    event["cwd"] = str(ws)
    event.update(changes)
    return json.dumps(event)


def hook(name: str, stdin: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSEARCH_", "CLAUDE_"))}
    environ.update({"MEMSEARCH_HOOK_CLI": CLI, "MEMSEARCH_NOW": "2026-12-03T09:41"}, **env)
    return subprocess.run([sys.executable, str(SCRIPT), name], input=stdin, capture_output=True, text=True,
                          timeout=300, env=environ)


def test_the_plugin_layout_and_hooks_json() -> None:
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "memsearch"
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "Stop"}
    names = {"SessionStart": "session-start", "UserPromptSubmit": "user-prompt-submit", "Stop": "stop"}
    for event, groups in hooks.items():
        (command,) = [h for g in groups for h in g["hooks"]]
        assert command["type"] == "command" and command["timeout"] <= 60
        assert command["command"] == f'python3 "${{CLAUDE_PLUGIN_ROOT}}/scripts/memsearch_hook.py" {names[event]}'
    assert SCRIPT.is_file()


def test_session_start_adds_memory_and_recent_log_headings(workspace: Path) -> None:
    result = hook("session-start", recorded("session-start.json", workspace), MEMSEARCH_HOOK_DAYS="2")
    assert result.returncode == 0 and result.stderr == ""
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    text = output["additionalContext"]
    assert "memory/MEMORY.md:\n- Project Memory\n  - Team\n  - Redis Caching" in text
    assert "memory/2026-02-17.md:" in text and "memory/2026-02-16.md:" in text
    assert "memory/2026-02-13.md:" not in text  # only the last 2 days
    bounded = hook("session-start", recorded("session-start.json", workspace), MEMSEARCH_HOOK_CONTEXT_CHARS="120")
    short = json.loads(bounded.stdout)["hookSpecificOutput"]["additionalContext"]
    assert 100 < len(short) <= 120 and short.endswith("…")


def test_hooks_never_block_on_bad_input_or_a_missing_cli(tmp_path: Path) -> None:
    for name, stdin in (("session-start", "not json"), ("user-prompt-submit", "[1, 2]"), ("nonsense", "{}")):
        result = hook(name, stdin)
        assert (result.returncode, result.stdout) == (0, "") and "memsearch hook: skipped" in result.stderr
    broken = hook("user-prompt-submit", recorded("user-prompt-submit.json", tmp_path),
                  MEMSEARCH_HOOK_CLI=str(tmp_path / "no-such-cli"))
    assert (broken.returncode, broken.stdout) == (0, "") and "no-such-cli" in broken.stderr
    empty = hook("session-start", recorded("session-start.json", tmp_path))  # no memory folder: no context
    assert (empty.returncode, empty.stdout, empty.stderr) == (0, "", "")


@pytest.mark.model
def test_prompt_context_and_stop_capture_through_the_cli(workspace: Path) -> None:
    result = hook("user-prompt-submit", recorded("user-prompt-submit.json", workspace),
                  MEMSEARCH_HOOK_CONTEXT_CHARS="400")
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "UserPromptSubmit"
    text = output["additionalContext"]
    assert len(text) <= 400 and "memory/MEMORY.md:" in text and "Redis Caching" in text

    transcript = workspace.parent / "transcript.jsonl"
    transcript.write_text((RECORDED / "transcript.jsonl").read_text())
    stop = hook("stop", recorded("stop.json", workspace, transcript_path=str(transcript)))
    assert (stop.returncode, stop.stdout) == (0, ""), stop.stderr
    log = (workspace / "memory" / "2026-12-03.md").read_text()
    assert log == ("# 2026-12-03\n\n## 09:41\n\n**User:** What TTL do we use for the Redis cache?\n\n"
                   "**Assistant:** The Redis cache uses a 5 minute TTL (300 s), set in config/cache.py.\n")
    again = hook("stop", recorded("stop.json", workspace, transcript_path=str(transcript), stop_hook_active=True))
    assert again.returncode == 0 and (workspace / "memory" / "2026-12-03.md").read_text() == log

    newer = hook("stop", recorded("stop.json", workspace, transcript_path=str(transcript),
                                  last_assistant_message="x" * 5000), MEMSEARCH_HOOK_TURN_CHARS="100")
    assert newer.returncode == 0, newer.stderr
    assert (workspace / "memory" / "2026-12-03.md").read_text().endswith("**Assistant:** " + "x" * 99 + "…\n")
