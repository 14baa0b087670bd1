#!/usr/bin/env python3
"""Claude Code hooks for memsearch-lsp: `session-start`, `user-prompt-submit` and `stop`.

Each reads the hook's JSON on stdin and prints what Claude Code expects on stdout:
- session-start: MEMORY.md's headings and the last days' log headings as `additionalContext`;
- user-prompt-submit: the top hits for the prompt (`memsearch-lsp search --json`) as `additionalContext`;
- stop: appends the turn (the user's prompt, the assistant's last message) to today's log
  (`memsearch-lsp remember -`) and prints nothing.
A hook never blocks the agent: on any failure it prints nothing, notes why on stderr and exits 0.
Standard library only, so any `python3` runs it; the CLI does the memory work.

Settings (environment):
  MEMSEARCH_HOOK_CLI            the command to run (default: memsearch-lsp)
  MEMSEARCH_HOOK_CONTEXT_CHARS  at most this many characters of context per hook (default 2000)
  MEMSEARCH_HOOK_TOP_K          hits per prompt (default 3)
  MEMSEARCH_HOOK_DAYS           daily logs shown at session start (default 3)
  MEMSEARCH_HOOK_TURN_CHARS     at most this many characters of prompt and of answer kept per turn (default 1500)
  MEMSEARCH_HOOK_MEMORY_DIR     the memory folder, relative to the project (default memory)
  MEMSEARCH_HOOK_TIMEOUT        seconds the CLI may take (default 50)
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

DAILY = re.compile(r"^\d{4}-\d{2}-\d{2}\.md$")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


class HookError(Exception):
    """A reason to skip this hook (noted on stderr; the agent goes on)."""


def setting(name: str, default: int) -> int:
    value = os.environ.get(f"MEMSEARCH_HOOK_{name}", "").strip()
    try:
        return max(1, int(value)) if value else default
    except ValueError as exc:
        raise HookError(f"MEMSEARCH_HOOK_{name}={value!r} is not a number") from exc


def project(event: dict[str, Any]) -> Path:
    return Path(os.environ.get("CLAUDE_PROJECT_DIR") or event.get("cwd") or os.getcwd())


def cli(event: dict[str, Any], subcommand: str, *args: str, stdin: str | None = None) -> str:
    command = [*shlex.split(os.environ.get("MEMSEARCH_HOOK_CLI", "memsearch-lsp")), subcommand,
               "--workspace", str(project(event)), *args]
    try:
        done = subprocess.run(command, input=stdin, capture_output=True, text=True,
                              timeout=setting("TIMEOUT", 50), check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HookError(f"{command[0]} failed: {exc}") from exc
    if done.returncode != 0:
        raise HookError(done.stderr.strip() or f"{command[0]} exited with {done.returncode}")
    return done.stdout


def bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


def context(event_name: str, text: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event_name,
                                   "additionalContext": bounded(text, setting("CONTEXT_CHARS", 2000))}}


def headings(path: Path) -> list[str]:
    """ATX headings outside code fences, indented by level."""
    out, fence = [], ""
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        opened = FENCE.match(line)
        if opened and (not fence or (opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence))):
            fence = "" if fence else opened.group(1)
        elif not fence and (match := HEADING.match(line)):
            out.append("  " * (len(match.group(1)) - 1) + "- " + match.group(2))
    return out


def session_start(event: dict[str, Any]) -> dict[str, Any] | None:
    folder = project(event) / os.environ.get("MEMSEARCH_HOOK_MEMORY_DIR", "memory")
    if not folder.is_dir():
        return None
    logs = sorted((p for p in folder.iterdir() if DAILY.match(p.name) and p.is_file()), reverse=True)
    parts = []
    for path in [folder / "MEMORY.md", *logs[: setting("DAYS", 3)]]:
        if path.is_file() and (found := headings(path)):
            parts.append(f"{path.relative_to(project(event)).as_posix()}:\n" + "\n".join(found))
    if not parts:
        return None
    intro = ("Long-term memory of this project (memsearch): the headings of its notes. "
             "Search them with `memsearch-lsp search QUERY` or the memory_search MCP tool.\n\n")
    return context("SessionStart", intro + "\n\n".join(parts))


def user_prompt_submit(event: dict[str, Any]) -> dict[str, Any] | None:
    prompt = str(event.get("prompt") or "").strip()
    if len(prompt) < 3 or prompt.startswith("/"):
        return None
    hits = json.loads(cli(event, "search", "-k", str(setting("TOP_K", 3)), "--json", "--", bounded(prompt, 1000)))
    if not hits:
        return None
    lines = ["Possibly relevant memories (memsearch; `memsearch-lsp expand ID` shows a whole section):"]
    lines += [f"- {h['source']}:{h['start_line']}-{h['end_line']} {h['heading']} (id {h['id']}): {h['snippet']}"
              for h in hits]
    return context("UserPromptSubmit", "\n".join(lines))


def text_of(message: Any) -> str:
    """The text of a transcript message's content (a string or a list of blocks; tool blocks ignored)."""
    content = message.get("content") if isinstance(message, dict) else message
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def last_turn(transcript: Path) -> tuple[str, str]:
    """The last prompt the user typed and the assistant's last text after it, from the JSONL transcript."""
    prompt, answer = "", ""
    for line in transcript.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or entry.get("isMeta"):
            continue
        text = text_of(entry.get("message") or {}).strip()
        if entry.get("type") == "user" and text:
            prompt, answer = text, ""
        elif entry.get("type") == "assistant" and text:
            answer = text
    return prompt, answer


def stop(event: dict[str, Any]) -> dict[str, Any] | None:
    if event.get("stop_hook_active"):
        return None  # a continuation forced by another Stop hook: the turn is recorded once
    prompt, answer = "", str(event.get("last_assistant_message") or "")
    transcript = Path(str(event.get("transcript_path") or ""))
    if event.get("transcript_path") and transcript.is_file():
        prompt, recorded = last_turn(transcript)
        answer = answer or recorded
    if not prompt.strip() and not answer.strip():
        return None
    limit = setting("TURN_CHARS", 1500)
    note = f"**User:** {bounded(prompt.strip(), limit)}\n\n**Assistant:** {bounded(answer.strip(), limit)}"
    cli(event, "remember", "-", stdin=note)
    return None


HOOKS = {"session-start": session_start, "user-prompt-submit": user_prompt_submit, "stop": stop}


def main(argv: list[str]) -> int:
    try:
        if len(argv) != 1 or argv[0] not in HOOKS:
            raise HookError(f"usage: memsearch_hook.py {{{'|'.join(HOOKS)}}}")
        event = json.loads(sys.stdin.read() or "{}")
        if not isinstance(event, dict):
            raise HookError("the hook input is not a JSON object")
        output = HOOKS[argv[0]](event)
        if output:
            sys.stdout.write(json.dumps(output, ensure_ascii=False) + "\n")
    except Exception as exc:  # never block the agent: note it and go on
        sys.stderr.write(f"memsearch hook: skipped: {exc}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
