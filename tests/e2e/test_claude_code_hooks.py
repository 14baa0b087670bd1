"""The Claude Code plugin: its files (hooks, marketplace, MCP, skill), and the hook script fed recorded hook
inputs: session context through the CLI, prompt recall that keeps curated notes first, a detached capture."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT, make_workspace, wait_until

PLUGIN = ROOT / "integrations" / "claude-code"
SCRIPT = PLUGIN / "scripts" / "memsearch_hook.py"
RECORDED = ROOT / "tests" / "data" / "claude-code"
CLI = f"{sys.executable} -m memsearch_lsp"


def recorded(name: str, ws: Path, **changes: Any) -> str:
    event = json.loads((RECORDED / name).read_text())
    event["cwd"] = str(ws)
    event.update(changes)
    return json.dumps(event)


def hook(name: str, stdin: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSEARCH_", "CLAUDE_"))}
    # (a budget of 60 s: what these tests ask is what the hooks do, not how fast on a busy machine; the tests of the
    # budget set their own)
    fixed = {"MEMSEARCH_HOOK_CLI": CLI, "MEMSEARCH_NOW": "2026-12-03T09:41", "MEMSEARCH_HOOK_WARM_IDLE": "3"}
    environ.update({**fixed, "MEMSEARCH_HOOK_TIMEOUT": "60"}, **env)
    return subprocess.run(
        [sys.executable, str(SCRIPT), name], input=stdin, capture_output=True, text=True, timeout=300, env=environ
    )


@pytest.fixture(autouse=True)
def no_warm_owner_left(tmp_path: Path) -> Iterator[None]:
    """A warm owner started by a hook exits after MEMSEARCH_HOOK_WARM_IDLE; one still there at the end is ended."""
    yield
    for record in tmp_path.rglob(".memsearch/server.json"):
        with contextlib.suppress(OSError, ValueError, KeyError):
            os.kill(int(json.loads(record.read_text())["pid"]), signal.SIGTERM)


def test_the_plugin_layout_and_hooks_json() -> None:
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "memsearch"
    market = json.loads((PLUGIN / ".claude-plugin" / "marketplace.json").read_text())
    (entry,) = market["plugins"]
    assert entry["name"] == "memsearch" and entry["source"] == "./" and market["owner"]["name"]
    servers = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]
    assert servers["memsearch"]["command"] == "memsearch-lsp" and servers["memsearch"]["args"][0] == "mcp"
    skill = (PLUGIN / "skills" / "memory-recall" / "SKILL.md").read_text()
    assert skill.startswith("---\nname: memory-recall\ndescription: ") and "memory_expand" in skill
    assert 'scope="user"' in skill and "memory_forget(id)" in skill  # (audit B, 9) the user memory and forget
    readme = (PLUGIN / "README.md").read_text()
    assert "/plugin marketplace add" in readme and "/plugin install memsearch@memsearch" in readme
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "Stop"}
    names = {"SessionStart": "session-start", "UserPromptSubmit": "user-prompt-submit", "Stop": "stop"}
    for event, groups in hooks.items():
        (command,) = [h for g in groups for h in g["hooks"]]
        assert command["type"] == "command" and command["timeout"] <= 60
        assert command["command"] == f'python3 "${{CLAUDE_PLUGIN_ROOT}}/scripts/memsearch_hook.py" {names[event]}'
    assert SCRIPT.is_file()


def test_session_start_gives_memory_md_then_the_summary_then_recent_notes(workspace: Path) -> None:
    (workspace / "memory" / "summary-2026-W48.md").write_text("# Summary 2026-W48\n\n- Decision: Kafka for events\n")
    result = hook(
        "session-start",
        recorded("session-start.json", workspace),
        MEMSEARCH_HOOK_DAYS="400",
        MEMSEARCH_HOOK_SESSION_CHARS="3000",
    )
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    text = output["additionalContext"]
    memory, summary = text.index("Dana Whitfield leads the backend"), text.index("Decision: Kafka for events")
    assert memory < summary  # content, not headings: MEMORY.md first, then the newest summary
    assert "id=" in text and "memory/MEMORY.md:" in text
    assert len(text) <= 3000  # the intro counts too (it went over by its length)
    bounded = hook("session-start", recorded("session-start.json", workspace), MEMSEARCH_HOOK_SESSION_CHARS="500")
    short = json.loads(bounded.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Project Memory" in short and "Decision: Kafka" not in short and len(short) <= 500


def test_session_start_never_reads_a_memory_md_linked_outside(workspace: Path, tmp_path: Path) -> None:
    secret = tmp_path / "outside.md"
    secret.write_text("# Secret\n\nthe launch codes are 0000\n")
    (workspace / "memory" / "MEMORY.md").unlink()
    (workspace / "memory" / "MEMORY.md").symlink_to(secret)
    result = hook("session-start", recorded("session-start.json", workspace), MEMSEARCH_HOOK_DAYS="400")
    assert result.returncode == 0 and "launch codes" not in result.stdout


def test_hooks_never_block_on_bad_input_or_a_missing_cli(tmp_path: Path) -> None:
    for name, stdin in (("session-start", "not json"), ("user-prompt-submit", "[1, 2]"), ("nonsense", "{}")):
        result = hook(name, stdin)
        assert (result.returncode, result.stdout) == (0, "") and "memsearch hook: skipped" in result.stderr
    broken = hook(
        "user-prompt-submit",
        recorded("user-prompt-submit.json", make_workspace(tmp_path)),
        MEMSEARCH_HOOK_CLI=str(tmp_path / "no-such-cli"),
    )
    assert (broken.returncode, broken.stdout) == (0, "") and "no-such-cli" in broken.stderr


def write_transcript(folder: Path, prompt: str, answer: str) -> Path:
    transcript = folder / "transcript.jsonl"
    entries = [
        {"type": "user", "message": {"role": "user", "content": prompt}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]}},
    ]
    transcript.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    return transcript


def test_stop_returns_before_the_detached_capture_writes(workspace: Path, tmp_path: Path) -> None:
    slow = tmp_path / "slow-cli"
    slow.write_text(f'#!/bin/sh\nsleep 2\nexec {CLI} "$@"\n')
    slow.chmod(0o755)
    transcript = write_transcript(
        tmp_path,
        "Why does the orders consumer retry five times?",
        "Decision: the orders consumer retries 5 times with exponential backoff, "
        "because the payment API flaps during deploys.",
    )
    log = workspace / "memory" / "2026-12-03.md"
    stop = hook("stop", recorded("stop.json", workspace, transcript_path=str(transcript)), MEMSEARCH_HOOK_CLI=str(slow))
    assert (stop.returncode, stop.stdout, stop.stderr) == (0, "", "")
    assert not log.exists()  # the capture runs on after the hook returned
    wait_until(log.exists, "the hook log", timeout=120)
    wait_until(lambda: "exponential backoff" in log.read_text(), "the backoff in the log", timeout=120)
    text = log.read_text()
    assert "## 09:41 Why does the orders consumer retry five times\n" in text
    assert "**Asked:** Why does the orders consumer retry five times?" in text and "**Outcome:** Decision:" in text


def capture(ws: Path, tmp: Path, prompt: str, answer: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The detached part of `stop`, run in the foreground."""
    transcript = write_transcript(tmp, prompt, answer)
    return hook("capture", recorded("stop.json", ws, transcript_path=str(transcript)), **env)


def test_capture_skips_acknowledgements_and_trims_outside_code_fences(workspace: Path, tmp_path: Path) -> None:
    log = workspace / "memory" / "2026-12-03.md"
    for prompt, answer in (("thanks!", "You're welcome. Anything else?"), ("ok", "Done."), ("Deploy it", "")):
        assert capture(workspace, tmp_path, prompt, answer).returncode == 0
    assert not log.exists()
    answer = (
        "We switched the cache to Redis 7.2. It cut p99 latency from 80 ms to 12 ms.\n\n"
        "```python\n"
        + "\n".join(f"line_{n} = {n}" for n in range(80))
        + "\n```\n\n"
        + "Next we should also look at the connection pool. " * 3
    )
    done = capture(workspace, tmp_path, "How did the cache migration go?", answer, MEMSEARCH_HOOK_TURN_CHARS="400")
    assert done.returncode == 0, done.stderr
    text = log.read_text()
    assert "Redis 7.2" in text and "line_79" not in text and "(a code block of 82 lines left out)" in text
    assert text.count("```") == 0 and "## 09:41 How did the cache migration go\n" in text


def test_capture_keeps_the_work_a_go_ahead_led_to(workspace: Path, tmp_path: Path) -> None:
    """ "ok" -> "Done: merged PR 482 and deployed v2.3.1" was dropped as an acknowledgement: a go-ahead is skipped
    only when its answer is courtesy (short, no number, path or name), and the heading says what was done."""
    log = workspace / "memory" / "2026-12-03.md"
    done = "Done: I merged PR 482 and deployed v2.3.1 to production; the migration added the orders.region column."
    assert capture(workspace, tmp_path, "ok", done).returncode == 0
    assert (
        capture(workspace, tmp_path, "thanks", "You're welcome! Let me know if you need anything else.").returncode == 0
    )
    fixed = "I fixed the race in the scheduler by taking a lock around the queue access."  # (a short task's answer)
    assert capture(workspace, tmp_path, "Fix the bug", fixed).returncode == 0
    text = log.read_text()
    assert "**Outcome:** Done: I merged PR 482 and deployed v2.3.1" in text and "welcome" not in text
    assert "## 09:41 Done: I merged PR 482 and deployed v2.3.1" in text
    assert "## 09:41 Fix the bug\n" in text and fixed in text


def test_the_hooks_serve_the_workspace_above_a_subfolder_claude_code_started_in(
    workspace: Path, tmp_path: Path
) -> None:
    """Claude Code started in `src/pkg` of a workspace: recall and capture used that folder and found no memory
    (SessionStart even advised an `init` that refuses there); the CLI and the MCP server given it as --workspace
    refused it too. They all find the workspace above it, as the CLI does from the current folder."""
    sub = workspace / "src" / "pkg"
    sub.mkdir(parents=True)
    transcript = write_transcript(tmp_path, "Which retry policy for payments?", "Exponential backoff, 5 retries.")
    event = recorded("stop.json", sub, transcript_path=str(transcript))
    assert hook("capture", event, CLAUDE_PROJECT_DIR=str(sub)).returncode == 0
    assert "Exponential backoff, 5 retries." in (workspace / "memory" / "2026-12-03.md").read_text()
    recall = hook("user-prompt-submit", recorded("user-prompt-submit.json", sub, prompt="retry policy for payments"))
    assert "Exponential backoff" in recall.stdout, recall
    found = subprocess.run(
        [*CLI.split(), "search", "retry policy for payments", "--workspace", str(sub), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert json.loads(found.stdout)["hits"][0]["source"] == "memory/2026-12-03.md"
    assert not (sub / "memory").exists() and not (sub / ".memsearch").exists()


def test_capture_keeps_a_secret_out_of_the_heading_and_private_text_out_of_the_answer(
    workspace: Path, tmp_path: Path
) -> None:
    """The heading is made from the prompt's first line: its Markdown marks went first, so `DB_PASSWORD=...` lost
    its underscore and the CLI's redaction no longer knew it; and a private value the answer repeated was kept."""
    prompt = "DB_PASSWORD=Kq9zz81LmWx fails with psql, why? <private>SSN 078-05-1120</private>"
    answer = "The password Kq9zz81LmWx has a quote in it; escape it. I will not repeat SSN 078-05-1120 anywhere."
    done = capture(workspace, tmp_path, prompt, answer)
    assert done.returncode == 0, done.stderr
    text = (workspace / "memory" / "2026-12-03.md").read_text()
    assert "Kq9zz81LmWx" not in text.split("\n## 09:41", 1)[1].split("\n", 1)[0]  # the heading
    assert "DB_PASSWORD=[redacted: secret]" in text and "078-05-1120" not in text
    # a value of a private span repeated on its own (the span's other words are not): never written either
    done = capture(
        workspace,
        tmp_path,
        "Update my profile <private>My SSN is 219-09-9999 and DOB 1984-03-02</private>",
        "Done: I updated the profile with SSN 219-09-9999 and date of birth 1984-03-02.",
    )
    text = (workspace / "memory" / "2026-12-03.md").read_text()
    assert done.returncode == 0 and "219-09-9999" not in text and "1984-03-02" not in text and "updated the" in text
    # a heading whose first word (a connection string) is longer than the heading: kept whole, so it is known
    url = "postgres://admin:Tr0ub4dor-and-3-horses@db-primary-replica.orders.internal.example.com:5432/orders"
    done = capture(workspace, tmp_path, f"{url} refuses connections since the failover", "Use the new primary.")
    text = (workspace / "memory" / "2026-12-03.md").read_text()
    assert done.returncode == 0 and "Tr0ub4dor" not in text and "[redacted: url-password]" in text
    # what a private span said, repeated in the answer's own words: a name, a diagnosis
    done = capture(
        workspace,
        tmp_path,
        "Draft the referral <private>The patient is Maria Gonzalez, diagnosed with multiple sclerosis.</private>",
        "Drafted the referral for Maria Gonzalez: she was diagnosed with multiple sclerosis in 2019. Sent to Dr. Lee.",
    )
    text = (workspace / "memory" / "2026-12-03.md").read_text()
    assert done.returncode == 0 and "Gonzalez" not in text and "sclerosis" not in text and "Dr. Lee" in text
    # an answer cut to its budget is cut at a word: a key cut short ("sk-ant-ap") is too short to be known
    long = "word " * 290 + "sk-ant-api03-" + "Q" * 60 + " and more"
    done = capture(workspace, tmp_path, "Which key does the staging job use?", long, MEMSEARCH_HOOK_TURN_CHARS="1460")
    assert done.returncode == 0 and "sk-ant" not in (workspace / "memory" / "2026-12-03.md").read_text()


def test_capture_reads_past_odd_entries_and_never_records_a_subagents_turn(workspace: Path, tmp_path: Path) -> None:
    """A text block of null stopped every later capture of the session; a subagent's turn (isSidechain) was
    recorded as the user's."""
    transcript = tmp_path / "transcript.jsonl"
    entries = [
        {"type": "user", "message": {"content": "How did the okapi rollout go?"}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": None}]}},
        {
            "type": "assistant",
            "message": {"content": [{"type": "text", "text": "The okapi rollout reached 100% at 14:00."}]},
        },
        {"type": "user", "isSidechain": True, "message": {"content": "Subagent: list the files"}},
        {"type": "assistant", "isSidechain": True, "message": {"content": [{"type": "text", "text": "a.py b.py"}]}},
    ]
    transcript.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    done = hook("capture", recorded("stop.json", workspace, transcript_path=str(transcript)))
    assert done.returncode == 0 and "skipped" not in done.stderr, done.stderr
    text = (workspace / "memory" / "2026-12-03.md").read_text()
    assert "okapi rollout reached 100%" in text and "Subagent" not in text and "a.py" not in text


def summarised_capture(
    workspace: Path, tmp_path: Path, server: Any, settings: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    """The turn "Why five retries?" captured with `server` (a ChatServer) as the configured summariser."""
    config = tmp_path / "xdg" / "memsearch-lsp"
    config.mkdir(parents=True)
    config.joinpath("config.toml").write_text(
        f'[compact]\nsummarizer = "openai"\nbase_url = "{server.url}"\napi_key_env = ""\n{settings}'
    )
    try:
        answer = "Because the payment API flaps during deploys."
        return capture(workspace, tmp_path, "Why five retries?", answer, XDG_CONFIG_HOME=str(tmp_path / "xdg"), **env)
    finally:
        server.close()


def test_capture_is_summarised_by_a_configured_endpoint(workspace: Path, tmp_path: Path) -> None:
    from tests.fakes import ChatServer

    server = ChatServer()
    server.answer = lambda messages: "- Decision: retries 5 with backoff (payment API flaps)\n"
    done = summarised_capture(workspace, tmp_path, server, "max_retries = 0\n")
    assert done.returncode == 0, done.stderr
    text = (workspace / "memory" / "2026-12-03.md").read_text()
    assert "- Decision: retries 5 with backoff (payment API flaps)" in text and "**Asked:**" not in text
    assert "payment API flaps during deploys" in server.user_messages()[0]


def test_a_summariser_that_hangs_leaves_the_capture_the_time_to_keep_the_raw_turn(
    workspace: Path, tmp_path: Path
) -> None:
    """`remember --summarize` waited compact.timeout_s x (1 + max_retries) (3 minutes by default) before it kept the
    raw turn; the capture was killed at 2: the turn was lost. The capture bounds the endpoint's time by its own."""
    from tests.fakes import ChatServer

    server = ChatServer()
    server.script = [600.0] * 5  # every request hangs
    # (36 s for a capture: the endpoint gets 3 tries of 5 s)
    done = summarised_capture(workspace, tmp_path, server, MEMSEARCH_HOOK_TIMEOUT="3")
    assert done.returncode == 0, done.stderr
    assert "payment API flaps during deploys" in (workspace / "memory" / "2026-12-03.md").read_text()


@pytest.mark.model
def test_prompt_recall_keeps_the_curated_note_above_the_turn_that_repeats_it(workspace: Path, tmp_path: Path) -> None:
    for n in range(3):
        done = capture(
            workspace,
            tmp_path,
            f"What TTL do we use for the Redis cache? ({n})",
            "We use Redis for L1 cache with 5min TTL, and the connection pool allows max 100 connections.",
        )
        assert done.returncode == 0, done.stderr
    result = hook(
        "user-prompt-submit",
        recorded(
            "user-prompt-submit.json", workspace, prompt="What TTL and connection pool size does the Redis cache use?"
        ),
    )
    assert result.returncode == 0, result.stderr
    text = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    lines = text.split("\n")[1:]
    assert lines[0].startswith("- memory/MEMORY.md:12-16 Redis Caching (id ")
    assert sum("2026-12-03.md" in line for line in lines) == 0  # the turns that repeat it are left out
    later = hook(
        "user-prompt-submit", recorded("user-prompt-submit.json", workspace), MEMSEARCH_HOOK_CONTEXT_CHARS="300"
    )
    assert len(json.loads(later.stdout)["hookSpecificOutput"]["additionalContext"]) <= 300


def load_hook_module() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("memsearch_hook", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_captured_turn_ranked_above_the_memory_md_decision_it_repeats_gives_way_to_it() -> None:
    """(audit H, 5) A turn that says a MEMORY.md decision again, ranked above it by more than twice, was shown above
    the decision, and with MEMSEARCH_HOOK_TOP_K=1 instead of it: only a daily hit repeating a curated hit already
    chosen gave way."""
    module = load_hook_module()
    decision = "Production deploys go through ArgoCD, only on Tuesdays, after the canary passes."

    def hit(source: str, score: float, snippet: str) -> dict[str, Any]:
        return {"id": source, "source": source, "score": score, "rank_score": score, "snippet": snippet}

    turn = hit("memory/2026-12-03.md", 0.9, f"**Asked:** How do we deploy to production? **Outcome:** {decision}")
    other = hit("memory/2026-12-02.md", 0.5, "The staging cluster moved to eu-west-2 on Monday.")
    memory_md = hit("memory/MEMORY.md", 0.3, decision)
    hits = [turn, other, memory_md]
    assert module.choose(hits, 3) == [memory_md, other]
    assert module.choose(hits, 1) == [memory_md]


def test_the_hook_names_the_owners_socket_as_the_core_does(tmp_path: Path) -> None:
    from memsearch_lsp.core.process.owner import socket_path_for

    module = load_hook_module()
    for root in (tmp_path / "short", tmp_path / ("long-" + "x" * 120)):
        (root / ".memsearch").mkdir(parents=True)
        expected = socket_path_for(root.resolve())
        assert module.owner_socket({"cwd": str(root)}) is None  # nothing there yet
        with contextlib.closing(socket.socket(socket.AF_UNIX)) as server:
            server.bind(str(expected))
            expected.chmod(0o600)
            assert module.owner_socket({"cwd": str(root)}) == str(expected)
        expected.unlink()


@pytest.mark.model
def test_prompt_recall_goes_straight_to_a_warm_owner(workspace: Path, tmp_path: Path) -> None:
    warm = subprocess.run(
        [*CLI.split(), "warm", "--detach", "--idle", "20", "--workspace", str(workspace)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert warm.returncode == 0, warm.stderr
    module = load_hook_module()
    wait_until(lambda: module.owner_socket({"cwd": str(workspace)}) is not None, "a warm owner", timeout=120)
    result = hook(
        "user-prompt-submit",
        recorded("user-prompt-submit.json", workspace),
        MEMSEARCH_HOOK_CLI=str(tmp_path / "no-such-cli"),
    )  # no CLI: only the owner can answer
    assert result.returncode == 0 and result.stderr == "", result.stderr
    text = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "memory/MEMORY.md:12-16 Redis Caching" in text
    assert "session data never goes to the cache" in text  # the section itself, not only a snippet


@pytest.mark.model
def test_prompt_recall_during_a_first_index_answers_at_once_and_says_it_is_still_indexing(tmp_path: Path) -> None:
    """(audit H, 4) During the first index of a large memory every prompt waited the hook's whole 10 s for the
    owner's `index` pass, then said "memory recall skipped": the hook waits a moment, then searches what the owner
    has indexed so far (as MCP and the editor answer), and says once that it is still indexing."""
    ws = make_workspace(tmp_path, examples=False)
    (ws / "memory" / "MEMORY.md").write_text("# Project Memory\n\n## Decisions\n\n- Kafka for events.\n")
    for month, day in ((m, d) for m in (10, 11) for d in range(1, 11)):  # 1,200 notes: a first index of a minute
        notes = "".join(
            f"## {n // 6:02d}:{n % 6 * 10:02d} Note {day}-{n}\n\nThe canary rollout of service {n} on day {day} "
            f"checked latency, retries and the cache budget; marker{month}x{day}x{n}.\n\n"
            for n in range(60)
        )
        (ws / "memory" / f"2026-{month}-{day:02d}.md").write_text(f"# 2026-{month}-{day:02d}\n\n{notes}")
    warm = [*CLI.split(), "warm", "--detach", "--idle", "30", "--workspace", str(ws)]
    assert subprocess.run(warm, capture_output=True, text=True, timeout=60).returncode == 0
    module = load_hook_module()
    wait_until(lambda: module.owner_socket({"cwd": str(ws)}) is not None, "a warm owner", timeout=120)
    said = []
    for n in range(2):
        started = time.monotonic()
        result = hook("user-prompt-submit", recorded("user-prompt-submit.json", ws, prompt=f"canary rollout {n}"))
        assert result.returncode == 0 and "skipped" not in result.stderr + result.stdout, result
        assert time.monotonic() - started < 8, result  # (INDEX_WAIT_S, and EMPTY_WAIT_S while no hit is indexed)
        said.append(result.stdout)
    assert "still indexing" in said[0] and "still indexing" not in said[1], said  # (said once)
    os.kill(json.loads((ws / ".memsearch" / "server.json").read_text())["pid"], signal.SIGTERM)


def test_prompt_recall_asks_the_user_memory_that_has_no_owner_beside_a_project_owner(
    workspace: Path, tmp_path: Path
) -> None:
    """With the project's index served (an editor, the session's warm owner) and the user memory's warm owner gone
    idle, recall left the user memory out and started no owner for it."""
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    note = "User preference: answer in British English, with metric units."
    subprocess.run([*CLI.split(), "remember", "--user", note], check=True, capture_output=True, env=env, timeout=120)
    warm = [*CLI.split(), "warm", "--detach", "--idle", "20", "--workspace", str(workspace)]
    assert subprocess.run(warm, capture_output=True, text=True, timeout=60).returncode == 0
    module = load_hook_module()
    wait_until(lambda: module.owner_socket({"cwd": str(workspace)}) is not None, "a warm owner", timeout=120)
    result = hook(
        "user-prompt-submit",
        recorded("user-prompt-submit.json", workspace, prompt="which spelling and units should answers use?"),
        XDG_DATA_HOME=str(tmp_path / "data"),
    )
    assert result.returncode == 0, result.stderr
    assert "British English" in json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


def test_prompt_recall_in_a_project_without_memory_gives_the_user_memory(tmp_path: Path) -> None:
    """(audit B, 9) In a project that never ran `init`, recall gave nothing ("no memory here" on stderr): the user's
    own preferences, shared by every project, were out of reach there."""
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    note = "User preference: commit messages in the imperative mood, under 72 characters."
    subprocess.run([*CLI.split(), "remember", "--user", note], check=True, capture_output=True, env=env, timeout=120)
    plain = tmp_path / "plain"
    plain.mkdir()
    prompt = "write the commit message for this change, imperative mood"
    result = hook(
        "user-prompt-submit",
        recorded("user-prompt-submit.json", plain, prompt=prompt),
        XDG_DATA_HOME=str(tmp_path / "data"),
        CLAUDE_PROJECT_DIR=str(plain),
    )
    assert result.returncode == 0 and "no memory here" not in result.stderr, result.stderr
    text = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "user:memory/" in text and "imperative mood" in text
    assert not (plain / "memory").exists() and not (plain / ".memsearch").exists()


def test_the_hooks_leave_a_code_package_named_memory_alone(tmp_path: Path) -> None:
    """(audit H, 10) In a project whose Python package is named `memory/` (no `init`), SessionStart indexed it
    (`.memsearch/` made) and Stop wrote the turn into the package as `memory/2026-12-03.md`. The hooks act in a
    workspace holding a memory only: a `.memsearch.toml` (what `init` writes), an index, or a `memory/` holding
    MEMORY.md or a daily log."""
    code = tmp_path / "codeproj"
    (code / "memory").mkdir(parents=True)
    (code / "memory" / "__init__.py").write_text("def alloc():\n    pass\n")
    started = hook("session-start", recorded("session-start.json", code), CLAUDE_PROJECT_DIR=str(code))
    assert started.returncode == 0 and "memsearch-lsp init" in started.stdout, started
    recall = hook("user-prompt-submit", recorded("user-prompt-submit.json", code), CLAUDE_PROJECT_DIR=str(code))
    assert recall.returncode == 0, recall
    answer = "Because realloc in alloc() never frees the old block when it moves; I fixed it in memory/__init__.py."
    done = capture(code, tmp_path, "Why does the allocator leak on realloc?", answer, CLAUDE_PROJECT_DIR=str(code))
    assert done.returncode == 0, done
    assert sorted(p.name for p in code.iterdir()) == ["memory"] and os.listdir(code / "memory") == ["__init__.py"]
    (code / ".memsearch.toml").write_text("")  # opted in (`init` writes it): the turn is recorded
    done = capture(code, tmp_path, "Why does the allocator leak on realloc?", answer, CLAUDE_PROJECT_DIR=str(code))
    assert done.returncode == 0 and "realloc in alloc()" in (code / "memory" / "2026-12-03.md").read_text(), done


def test_prompt_recall_keeps_the_prompt_off_command_lines_and_takes_half_an_emoji(
    workspace: Path, tmp_path: Path
) -> None:
    """With no warm owner the hook asked the CLI with the whole prompt as an argument, secrets and all, readable by
    any local user with `ps`: it goes over stdin now (`search -`). A lone surrogate (half an emoji a JSON escape
    left) made recall and capture give up: it is read as U+FFFD."""
    argv = tmp_path / "argv.log"
    logging_cli = tmp_path / "cli.sh"
    logging_cli.write_text(f'#!/bin/sh\necho "$@" >> {argv}\nexec {CLI} "$@"\n')
    logging_cli.chmod(0o755)
    prompt = "which message broker did we pick \ud83d? the db password is Xk29fjQpL0wzv8Q"
    event = json.dumps(dict(json.loads(recorded("user-prompt-submit.json", workspace)), prompt=prompt))
    recall = hook("user-prompt-submit", event, MEMSEARCH_HOOK_CLI=str(logging_cli))
    assert recall.returncode == 0 and "Kafka" in recall.stdout, recall
    assert "Xk29fjQpL0wzv8Q" not in argv.read_text() and "search" in argv.read_text()
    done = capture(
        workspace,
        tmp_path,
        "Why does webhook A fail on emoji names?",
        "It was cut mid-emoji \ud83d; fixed.",
        MEMSEARCH_HOOK_CLI=str(logging_cli),
    )
    assert done.returncode == 0, done.stderr
    assert "remember" in argv.read_text() and "webhook" not in argv.read_text()  # (the heading: not in argv)
    assert "## 09:41 Why does webhook A fail on emoji names" in (workspace / "memory" / "2026-12-03.md").read_text()
    assert "cut mid-emoji \ufffd; fixed." in (workspace / "memory" / "2026-12-03.md").read_text()


def test_a_capture_the_cli_could_not_write_is_asked_again_and_never_marked_done(
    workspace: Path, tmp_path: Path
) -> None:
    """An owner that stalled a few seconds (the CLI: "does not answer") lost the turn, and a second Stop of the same
    turn wrote nothing either: it had been marked recorded. The capture asks again while it has time; when it runs
    out, the turn is left for the next Stop."""
    failures = tmp_path / "failures"
    flaky = tmp_path / "flaky-cli"
    flaky.write_text(
        f'#!/bin/sh\nif [ -s {failures} ]; then sed -i 1d {failures}; echo "the index owner does not answer" >&2; '
        f'exit 1; fi\nexec {CLI} "$@"\n'
    )
    flaky.chmod(0o755)
    log = workspace / "memory" / "2026-12-03.md"
    failures.write_text("1\n2\n")
    done = capture(
        workspace, tmp_path, "Inventory API timeouts?", "2.5 s connect, 10 s read.", MEMSEARCH_HOOK_CLI=str(flaky)
    )
    assert done.returncode == 0 and log.read_text().count("2.5 s connect, 10 s read.") == 1
    failures.write_text("1\n" * 50)
    stuck = capture(
        workspace,
        tmp_path,
        "Payments API timeouts?",
        "4 s connect.",
        MEMSEARCH_HOOK_CLI=str(flaky),
        MEMSEARCH_HOOK_TIMEOUT="1",
    )
    assert "4 s connect." not in log.read_text() and "does not answer" in stuck.stderr
    failures.write_text("")
    assert capture(workspace, tmp_path, "Payments API timeouts?", "4 s connect.").returncode == 0
    assert log.read_text().count("4 s connect.") == 1
    # a refusal is said once, not asked again every 2 s until the capture's time is up
    refused = tmp_path / "refusing-cli"
    calls = tmp_path / "calls"
    refused.write_text(f'#!/bin/sh\necho x >> {calls}\necho "memory/2026-12-03.md is not a regular file" >&2\nexit 1\n')
    refused.chmod(0o755)
    done = capture(workspace, tmp_path, "Queue sizes?", "512 per worker.", MEMSEARCH_HOOK_CLI=str(refused))
    assert "not a regular file" in done.stderr and calls.read_text().count("x") == 1


def test_a_capture_the_cli_never_answered_says_how_long_it_waited(workspace: Path, tmp_path: Path) -> None:
    """(audit Y2, F8) a capture that waited 120 s for the CLI said it "did not answer within 10 s": the prompt
    hooks' time, not the capture's (12 times it)."""
    hung = tmp_path / "hung-cli"
    hung.write_text("#!/bin/sh\nexec sleep 60\n")
    hung.chmod(0o755)
    begin = time.monotonic()
    done = capture(
        workspace, tmp_path, "Staging gateway port?", "8443.", MEMSEARCH_HOOK_CLI=str(hung), MEMSEARCH_HOOK_TIMEOUT="1"
    )
    waited = re.search(r"did not answer within (\d+) s \(this hook's calls get 12 s\)", done.stderr)
    assert done.returncode == 0 and waited is not None, done.stderr
    assert 10 <= int(waited.group(1)) <= 12 and time.monotonic() - begin < 30


def test_a_second_go_ahead_of_a_session_that_led_to_other_work_is_another_turn(workspace: Path, tmp_path: Path) -> None:
    """One note per turn was keyed by session and prompt: a second "go ahead" whose answer reported other work was
    taken for the first one captured again, and lost."""
    log = workspace / "memory" / "2026-12-03.md"
    first = "Done: canary at 10% on prod-eu-1, error rate 0.02% after 20 min."
    second = "Done: canary at 50% on prod-eu-1 and prod-us-2, p99 at 180 ms."
    for answer in (first, first, second):  # (the first turn's Stop fires twice)
        assert capture(workspace, tmp_path, "go ahead", answer).returncode == 0
    outcomes = log.read_text().count("**Outcome:** Done: canary at 10%"), log.read_text().count("Done: canary at 50%")
    assert outcomes == (1, 2)  # (the second in its heading and its outcome)


def test_a_prompt_that_is_only_a_pasted_image_is_a_turn_of_its_own(workspace: Path, tmp_path: Path) -> None:
    """(audit H, 9) A prompt of a pasted image alone started no turn: its Stop recorded the previous turn again, the
    new answer under the old question ("Why is the login page slow? (2)")."""
    transcript = tmp_path / "transcript.jsonl"
    first = [
        {"type": "user", "message": {"role": "user", "content": "Why is the login page slow?"}},
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "The bcrypt cost is 14; I set 12."}]}},
    ]
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    then = [
        {"type": "user", "message": {"role": "user", "content": [image]}},
        {
            "type": "assistant",
            "message": {
                "content": [
                    {
                        "type": "text",
                        "text": "The screenshot shows a 500 from the billing widget: "
                        "its API key expired, so I rotated it in Vault.",
                    }
                ]
            },
        },
    ]
    for entries in (first, first + then):
        transcript.write_text("".join(json.dumps(e) + "\n" for e in entries))
        done = hook("capture", recorded("stop.json", workspace, transcript_path=str(transcript)))
        assert done.returncode == 0, done.stderr
    text = (workspace / "memory" / "2026-12-03.md").read_text()
    assert text.count("Why is the login page slow") == 2 and "(2)" not in text, text  # (its heading and question)
    assert "## 09:41 (image)\n\n**Asked:** (image)\n\n**Outcome:** The screenshot shows a 500" in text, text


def test_capture_keeps_what_the_assistant_said_before_its_tool_calls(workspace: Path, tmp_path: Path) -> None:
    """Only the assistant's last text block was kept ("Done. All 188 tests pass."): the cause and the fix it said
    before its edits and test runs were lost. The turn's text blocks are kept in order; tool output is not."""
    transcript = tmp_path / "transcript.jsonl"
    entries = [
        {"type": "user", "message": {"content": "Orders over 10,000 EUR fail with a 422. Find the cause and fix it."}},
        {
            "type": "assistant",
            "message": {
                "content": [
                    {"type": "text", "text": "Found the cause: orders.amount_cents has a CHECK below 1000000."},
                    {"type": "tool_use", "id": "t1", "name": "Edit", "input": {"file_path": "migrations/0043.py"}},
                ]
            },
        },
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "edited"}]}},
        {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t2", "name": "Bash"}]}},
        {
            "type": "user",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t2", "content": "188 passed TOOLOUT"}]},
        },
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "Done. All 188 tests pass."}]}},
    ]
    transcript.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    event = recorded(
        "stop.json", workspace, transcript_path=str(transcript), last_assistant_message="Done. All 188 tests pass."
    )
    done = hook("capture", event)
    assert done.returncode == 0 and "skipped" not in done.stderr, done.stderr
    text = (workspace / "memory" / "2026-12-03.md").read_text()
    assert "CHECK below 1000000" in text and "All 188 tests pass" in text and "TOOLOUT" not in text
    assert text.index("CHECK below") < text.index("All 188 tests pass") and text.count("All 188 tests pass") == 1


def test_what_an_earlier_prompt_of_the_session_said_in_private_stays_out_of_a_later_turn(
    workspace: Path, tmp_path: Path
) -> None:
    """Only the last prompt's `<private>` spans were kept out of the answer: a task run over a "go ahead" wrote the
    name and email the first prompt marked private, the name in the heading too."""
    transcript = tmp_path / "transcript.jsonl"
    entries = [
        {
            "type": "user",
            "message": {
                "content": "Draft the refund email for order 99812. "
                "The customer is <private>Maria Gonzalez, maria.g@example.com</private>."
            },
        },
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "Drafted it. Shall I send it?"}]}},
        {"type": "user", "message": {"content": "go ahead"}},
        {
            "type": "assistant",
            "message": {
                "content": [
                    {
                        "type": "text",
                        "text": "Done: sent the refund email for order 99812 to Maria Gonzalez <maria.g@example.com> "
                        "and logged it in ticket SUP-311.",
                    }
                ]
            },
        },
    ]
    transcript.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    done = hook("capture", recorded("stop.json", workspace, transcript_path=str(transcript)))
    assert done.returncode == 0 and "skipped" not in done.stderr, done.stderr
    text = (workspace / "memory" / "2026-12-03.md").read_text()
    assert "SUP-311" in text and "## 09:41 Done: sent the refund email for order 99812 to private\n" in text
    assert "Gonzalez" not in text and "maria.g@" not in text


def captured_session(workspace: Path, tmp_path: Path, said: list[tuple[str, str]]) -> str:
    """The day's log after the capture of a session's messages (who, text), in order."""
    transcript = tmp_path / "transcript.jsonl"
    entries = [{"type": who, "message": {"content": [{"type": "text", "text": text}]}} for who, text in said]
    transcript.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    done = hook("capture", recorded("stop.json", workspace, transcript_path=str(transcript)))
    assert done.returncode == 0 and "skipped" not in done.stderr, done.stderr
    return (workspace / "memory" / "2026-12-03.md").read_text()


def test_the_assistant_naming_the_private_tag_marks_nothing_private(workspace: Path, tmp_path: Path) -> None:
    """Spans were taken from every message of the session: an answer explaining "wrap it in a `<private>` tag" (a tag
    never closed) made the rest of it private, and a later turn's answer was written as "[private] pins [private]"."""
    said = [
        ("user", "How do I keep something out of the memory?"),
        ("assistant", "Wrap it in a `<private>` tag: the Postgres 15.4 upgrade notes in config/prod.yaml stay out."),
        ("user", "Which Postgres version does config/prod.yaml pin?"),
        ("assistant", "config/prod.yaml pins Postgres 15.4 for the billing database."),
    ]
    text = captured_session(workspace, tmp_path, said)
    assert "config/prod.yaml pins Postgres 15.4 for the billing database." in text, text


def test_an_answer_that_opens_with_a_heading_is_captured_with_it_as_a_bold_line(
    workspace: Path, tmp_path: Path
) -> None:
    """(audit Z4) An answer opening with a heading was written `**Outcome:** ## Summary`: a literal `##` in the log."""
    said = [
        ("user", "Why did the nightly export fail?"),
        ("assistant", "## Summary\n\nThe export failed because the S3 token expired; rotated it in Vault."),
    ]
    text = captured_session(workspace, tmp_path, said)
    assert "## Summary" not in text and "**Outcome:**\n\n**Summary**" in text, text
    assert "The export failed because the S3 token expired; rotated it in Vault." in text


def test_a_password_holding_markdown_marks_never_reaches_the_heading(workspace: Path, tmp_path: Path) -> None:
    """(audit Z3, 1) The heading's topic drops Markdown's marks (`*`, `[`, `]`, an underscore at a word's edge): a
    password holding one, said on the prompt's first line, no longer read as the value the turn names as a password
    (`DB_PASSWORD=Wq7*Rt5...`), and was written in the heading while the note's body redacted it."""
    secrets = ("Wq7*Rt5Yu3Io1Pa9Sd", "[Kx9]Lm2Pq7Rs4Tv8", "_Gh6_Jk7_Lm8_", "[Ab3]_Cd4*Ef5", "*Hb4Nm8Jk2*")
    for n, secret in enumerate(secrets):
        prompt = f"login fails with {secret} on staging {n}\nDB_PASSWORD={secret} in .env, why?"
        done = capture(workspace, tmp_path, prompt, f"The staging DB user {n} was locked; I unlocked it.")
        assert done.returncode == 0, done.stderr
    text = (workspace / "memory" / "2026-12-03.md").read_text()
    headings = [line for line in text.split("\n") if line.startswith("## ")]
    assert len(headings) == len(secrets) and all("[redacted: secret]" in h for h in headings), headings
    for secret in secrets:
        for part in re.findall(r"[A-Za-z0-9]{3,}", secret):
            assert part not in text, (part, text)


def test_the_tag_the_assistant_writes_neither_cuts_its_answer_nor_hides_its_words(
    workspace: Path, tmp_path: Path
) -> None:
    """(audit Z3, 3) An answer that only named the tag ("wrap it in a `<private>` tag. Also we fixed ...") was cut
    there: the capture read the tag, left open, as a private span to the end of the answer. What the user's prompt
    said in private stays out of the answer still."""
    answers = (
        "To keep text out of memory, wrap it in a `<private>` tag. Also we fixed the login bug by resetting the "
        "session cache (cause: stale TTL).",
        "Close it with `</private>` after `<private class=x>`: the cron job runs at 02:00 UTC since the change.",
        "A `<\x01private>` tag the CLI reads as one; the 3 api pods were restarted after the rotation.",
    )
    for answer in answers:
        done = capture(workspace, tmp_path, "how do I keep things out of memory, and what changed?", answer)
        assert done.returncode == 0, done.stderr
    done = capture(
        workspace,
        tmp_path,
        "Why was the card declined? <private>card 4111 1111 1111 1111</private>",
        "The card 4111 1111 1111 1111 was declined by the issuer; in a `<private>` span it stays out of the notes.",
    )
    assert done.returncode == 0, done.stderr
    text = (workspace / "memory" / "2026-12-03.md").read_text()
    for kept in ("resetting the session cache (cause: stale TTL)", "runs at 02:00 UTC", "3 api pods were restarted"):
        assert kept in text, text
    assert "declined by the issuer" in text and "4111" not in text and "stays out of the notes" in text, text


def test_a_private_date_is_kept_out_of_the_answer_in_its_other_written_forms(workspace: Path, tmp_path: Path) -> None:
    """(audit Z3, 8) A date of birth said in private ("born 7 March 1984") and repeated by the answer in another
    form was written in part: "DOB [private]-03-07". A date the span did not say stays."""
    said = [
        ("user", "Patient is <private>Jon Smyth, born 7 March 1984, phone 555 0199</private>"),
        ("assistant", "ok"),
        ("user", "go ahead and book"),
        (
            "assistant",
            "Booked the appointment for 2026-12-10 for Jon Smyth, DOB 1984-03-07 (03/07/1984, March 7th, 1984, "
            "7.3.1984; review: 07-Mar-1984, 19840307, 07/03/84, 1984年3月7日), phone 555-0199.",
        ),
    ]
    text = captured_session(workspace, tmp_path, said)
    assert "Booked the appointment for 2026-12-10" in text, text
    for leaked in ("03-07", "03/07", "March 7", "7.3", "1984", "Smyth", "0199", "Mar-", "0307", "84", "3月7日"):
        assert leaked not in text, (leaked, text)


def test_capture_skips_acknowledgements_of_several_words_in_each_language_and_keeps_short_requests(
    workspace: Path, tmp_path: Path
) -> None:
    """ "great, thanks!", "thanks a lot", "muito obrigado pela ajuda" were each captured as a note (only a prompt
    that was one known acknowledgement whole was skipped); a short request that begins with thanks is still kept."""
    log = workspace / "memory" / "2026-12-03.md"
    for prompt in (
        "great, thanks!",
        "perfect, thank you",
        "thanks a lot",
        "nice work",
        "Thank you so much, that's great",
        "muito obrigado pela ajuda",
        "Muchas gracias por la ayuda",
        "Vielen Dank für die Hilfe!",
        "Merci beaucoup, très bien",
        "好的，非常感谢！",
    ):
        assert (
            capture(workspace, tmp_path, prompt, "Glad it helped! Let me know if you need anything else.").returncode
            == 0
        )
    assert not log.exists()
    for prompt in (
        "great, now add a test for it",
        "thanks, deploy it",
        "obrigado, agora corrija o teste",
        "谢谢，请部署",
        "is that right?",  # a question is no acknowledgement: its answer is what was asked
        "¿está bien?",
    ):
        done = capture(workspace, tmp_path, prompt, "Glad to: it is done and everything looks fine now.")
        assert done.returncode == 0 and "skipped" not in done.stderr, done.stderr
    text = log.read_text()
    assert "## 09:41 great, now add a test for it\n" in text and "## 09:41 thanks, deploy it\n" in text
    assert "obrigado, agora corrija o teste" in text and "谢谢，请部署" in text
    assert "## 09:41 is that right\n" in text and "¿está bien" in text


def test_session_start_gives_the_days_newest_notes_first_and_never_cuts_a_line(workspace: Path) -> None:
    """Within a day the notes came oldest first, so once a day's log was over the budget its newest work (where the
    last session stopped) was left out, and the hook cut the last note shown in the middle of a line."""
    (workspace / "memory" / "MEMORY.md").write_text("# Project Memory\n\n## Team\n\nDana leads the backend.\n")
    steps = "".join(
        f"## {9 + n // 6:02d}:{n % 6 * 10:02d} Step {n}\n\nStep {n} of the migration: moved tables and checked the "
        f"replication lag; {'row counts match, ' * 12}done.\n\n"
        for n in range(1, 13)
    )
    latest = (
        "## 17:30 Where we stopped\n\nWe stopped before step 13: the orders table needs its foreign keys. Resume.\n"
    )
    log = workspace / "memory" / "2026-12-03.md"
    log.write_text(f"# 2026-12-03\n\n{steps}{latest}")
    result = hook("session-start", recorded("session-start.json", workspace), MEMSEARCH_HOOK_SESSION_CHARS="1500")
    text = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Resume." in text and "Dana leads" in text and "Step 12 of" in text and "Step 1 of" not in text
    assert text.index("Where we stopped") < text.index("Step 12 of") < text.index("Step 11 of")
    lines = set(log.read_text().split("\n")) | set((workspace / "memory" / "MEMORY.md").read_text().split("\n"))
    notes = text.split("\n\n", 1)[1].split("\n")
    assert all(line in lines or line.startswith("<!-- memory/") for line in notes), text


def test_session_start_gives_the_beginning_of_a_memory_md_paragraph_written_on_one_long_line(workspace: Path) -> None:
    """(audit H, 6) A MEMORY.md section whose paragraph is one line longer than the budget was given as its heading
    and an ellipsis: the CLI and the hook cut notes at line ends only."""
    story = "The orders service talks to Kafka topic orders.v2 through the outbox relay. " * 65  # 4,900 characters
    (workspace / "memory" / "MEMORY.md").write_text(f"# Project Memory\n\n## Architecture\n\n{story}\n")
    result = hook("session-start", recorded("session-start.json", workspace))
    text = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "## Architecture\n\nThe orders service talks to Kafka" in text and len(text) <= 4000, text
    assert text.count("outbox relay") >= 30 and text.endswith("…"), text
    cut = load_hook_module().at_a_line(f"<!-- memory/MEMORY.md:3-5 -->\n## Architecture\n\n{story}", 300)
    assert cut.startswith("<!-- memory/MEMORY.md:3-5 -->\n## Architecture\n\nThe orders") and len(cut) <= 300, cut


def test_a_secret_redacted_in_the_prompt_is_redacted_where_the_answer_repeats_it(
    workspace: Path, tmp_path: Path
) -> None:
    """The prompt's URL password was redacted, and the answer's "The password Tr0ub4dor&3xK contains an &" and
    "connects with password `Tr0ub4dor`" were written to memory as they were."""
    done = capture(
        workspace,
        tmp_path,
        "Staging cannot connect. DATABASE_URL=postgres://shop_admin:Tr0ub4dor&3xK@db.staging.internal:5432/shop",
        "Since Tr0ub4dor&3xK holds an &, the shell cut the command there, so psql connects with `Tr0ub4dor`. "
        "Quote the URL in .env.staging.",
    )
    assert done.returncode == 0, done.stderr
    text = (workspace / "memory" / "2026-12-03.md").read_text()
    assert "Tr0ub4dor" not in text and "3xK" not in text and "Quote the URL in .env.staging" in text


def test_a_secret_the_trim_left_out_or_the_heading_repeats_is_redacted(workspace: Path, tmp_path: Path) -> None:
    """The hook kept the first 1,500 characters of a long prompt, so the CLI never saw `DB_PASSWORD=...` and the
    answer's "now holds Kw4nBv8TqPz1" was written; a heading that repeats the password was written as it was."""
    prose = "We are moving the service configuration to the new secret store this week. " * 28  # past 1,500
    done = capture(
        workspace,
        tmp_path,
        prose + "The env line was DB_PASSWORD=Kw4nBv8TqPz1",
        "Migrated the config; the new secret store now holds Kw4nBv8TqPz1 under db/main.",
    )
    assert done.returncode == 0, done.stderr
    done = capture(
        workspace,
        tmp_path,
        "Rotate Kx9vQ2mZ7pLw3 now because it leaked. The env line was DB_PASSWORD=Kx9vQ2mZ7pLw3",
        "Rotated the database password in Vault and restarted the 3 api pods.",
    )
    assert done.returncode == 0, done.stderr
    for closing in ("</priv</private>ate>", "</priv\x01ate>"):  # a close tag made inside the span wrote its rest
        done = capture(workspace, tmp_path, prose + f"{closing} Tail{closing[-4:-1]} said last.", "Moved it.")
        assert done.returncode == 0, done.stderr
    text = (workspace / "memory" / "2026-12-03.md").read_text()
    assert "Kw4nBv8TqPz1" not in text and "Kx9vQ2mZ7pLw3" not in text and "private" not in text, text
    assert "said last" not in text and text.count("We are moving the service") <= 3 * 20, text
    assert "under db/main" in text and "## 09:41 Rotate [redacted: secret] now because it leaked" in text, text


def test_a_heading_cut_inside_a_quoted_pass_phrase_keeps_none_of_it(workspace: Path, tmp_path: Path) -> None:
    """(audit H, 1) The heading was cut at 72 characters inside `password = "correct horse battery staple ..."`:
    the CLI's redaction, seeing an open quote, knew no secret there, and the start of the pass phrase was written in
    the heading (the note's body was redacted); a sentence end inside the quotes or `backticks` did the same."""
    for prompt in (
        'Configure staging admin with password = "correct horse battery staple plus more words" now',
        "Configure staging admin with password = `correct horse battery staple plus more words` now",
        'Set the pass phrase to "correct horse. Battery staple plus more words" for the admin',
    ):
        done = capture(workspace, tmp_path, prompt, "Configured the staging admin account; the login works.")
        assert done.returncode == 0, done.stderr
    text = (workspace / "memory" / "2026-12-03.md").read_text()
    headings = [line for line in text.split("\n") if line.startswith("## ")]
    assert len(headings) == 3 and not any("horse" in h or "correct" in h for h in headings), headings
    assert "## 09:41 Configure staging admin with password…" in headings
    assert 'password = "[redacted: secret]" now' in text, text


def test_a_heading_keeps_a_quote_that_names_no_secret(workspace: Path, tmp_path: Path) -> None:
    """(review D, 6) A heading was cut back to any quote it left open: a prompt that is one long quoted question was
    headed "…" alone, `My 27" monitor ...` "My 27…", and `Explain this error: "ConnectionResetError ..."` lost the
    error. Only a quote after a word that names a secret is left out."""
    module = load_hook_module()
    long_question = (
        '"Why does the deploy fail on staging when the migration runs before the cache warmup finishes and the pods '
        'restart?"'
    )
    assert module.topic(long_question).startswith('"Why does the deploy fail on staging when the migration')
    assert module.topic(
        'My 27" monitor flickers at 144 Hz over DisplayPort but not over HDMI, what setting in the driver causes that?'
    ).startswith('My 27" monitor flickers at 144 Hz')
    error = 'Explain this error: "ConnectionResetError: [Errno 104] Connection reset by peer while reading the body'
    assert "ConnectionResetError" in module.topic(error)
    for said, heading in (
        (
            'Use the token "correct horse battery staple plus more words and more and more" for the bot',
            "Use the token…",
        ),
        (
            'Das Passwort ist "correct horse battery staple plus more words und mehr und mehr" für den Admin',
            "Das Passwort ist…",
        ),
        (
            "Set the credentials to 'correct horse battery staple plus more words and more and more' now",
            "Set the credentials to…",
        ),
        ('密码是 "correct horse battery staple plus more words and more and more and more" 对吧', "密码是…"),
    ):
        assert module.topic(said) == heading, said
    done = capture(workspace, tmp_path, long_question, "The warmup now runs before the migration; staging deploys.")
    assert done.returncode == 0, done.stderr
    text = (workspace / "memory" / "2026-12-03.md").read_text()
    assert '## 09:41 "Why does the deploy fail on staging when the' in text, text


@pytest.mark.parametrize(
    "line",
    [
        "2026-12-07T04:{minute:02d}:00 INFO step {n} ok",
        # (review D, 5) an access log whose lines carry `session=...`: what may name a secret went beside the note in
        # the turn's order, cut at 8,000 bytes, so the session ids pushed out the `DB_PASSWORD=...` at its end
        "2026-12-07T04:{minute:02d}:00 GET /api/orders session={n:08x}aa ok",
    ],
)
def test_a_secret_at_the_end_of_a_prompt_over_60_kb_is_redacted_where_the_answer_repeats_it(
    workspace: Path, tmp_path: Path, line: str
) -> None:
    """(audit H, 3) Of a pasted prompt over 60 KB only its first 60 KB went beside the note for redaction, so the
    `DB_PASSWORD=...` at its end was never seen and the answer's "I put Zq8vLm42pRtXX back" was written."""
    log = "\n".join(line.format(minute=n % 60, n=n) for n in range(4000))
    done = capture(
        workspace,
        tmp_path,
        f"Here is the failing deploy log, what is wrong?\n{log}\nThe config line is DB_PASSWORD=Zq8vLm42pRtXX",
        "The deploy fails at the migration step because the database rejects the login; I put Zq8vLm42pRtXX back "
        "into the secret store and the migration now passes.",
    )
    assert done.returncode == 0, done.stderr
    text = (workspace / "memory" / "2026-12-03.md").read_text()
    assert "Zq8vLm42pRtXX" not in text and "back into the secret store" in text, text[-600:]


def test_what_may_name_a_secret_beside_a_long_turn_keeps_the_strongest_each_once_and_some_of_the_end() -> None:
    """(review D, 5) Beside a turn too long to send whole: a value said again and again, or weak ones (session ids),
    filled the 8,000 bytes before a password; and many of one kind kept only the first of them."""
    module = load_hook_module()
    room = 20000
    repeated = "\n".join("retry with token=Tk4q9WzR2mXb8 failed" for _ in range(2000))
    weak = "\n".join(f"GET /orders session={n:08x}aa ok" for n in range(3000))
    keys = "\n".join(f"rotated api_key=K{n:07d}xQ9vLm2pR" for n in range(3000))
    for prompt in (
        f"{repeated}\nDB_PASSWORD=Zq8vLm42pRtXX",
        f"{weak}\nThe login is postgres://shop:Pw7rT2kQ9zX@db.internal/shop",
        f"{keys}\nthe last one: api_key=K9999999zLast42",
    ):
        start = time.monotonic()
        beside = module.left_out(prompt, "Done.", room)
        assert time.monotonic() - start < 2 and len(beside.encode("utf-8")) <= room + 40
        named = beside.removeprefix("\n\n<private>").split("\n\n", 1)[0]
        assert named.count("Tk4q9WzR2mXb8") <= 1, named[:300]
        assert "Zq8vLm42pRtXX" in named or "Pw7rT2kQ9zX" in named or "K9999999zLast42" in named, named[-300:]
    assert "K0000000xQ9vLm2pR" in beside  # (the beginning still goes too)


def agentic_transcript(folder: Path, prompt: str, narration: list[str], conclusion: str) -> Path:
    """A turn as Claude Code writes it: a text block before each tool call (its result in a user entry), then the
    answer."""
    entries: list[dict[str, Any]] = [{"type": "user", "message": {"content": prompt}}]
    for n, text in enumerate(narration):
        call = {"type": "tool_use", "id": f"t{n}", "name": "Read", "input": {"file_path": f"src/f{n}.py"}}
        entries.append({"type": "assistant", "message": {"content": [{"type": "text", "text": text}, call]}})
        result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": "output " * 40}
        entries.append({"type": "user", "message": {"content": [result]}})
    entries.append({"type": "assistant", "message": {"content": [{"type": "text", "text": conclusion}]}})
    transcript = folder / "transcript.jsonl"
    transcript.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    return transcript


def test_a_long_agentic_turn_keeps_its_conclusion_and_drops_the_narration_first(
    workspace: Path, tmp_path: Path
) -> None:
    """(audit J, 1) The turn's text blocks were joined and trimmed from the front: 24 "Let me look at ..." lines
    filled the 1500 characters and the root cause and fix at the end were lost. The answer is kept, and the
    messages just before it while they fit; the narration of the first steps goes."""
    narration = [
        f"{step} the {thing} to see how the tests run there ({n})."
        for n, (step, thing) in enumerate(
            (s, t)
            for s in ("Let me look at", "Now I'll check", "Next, let me inspect")
            for t in ("CI configuration", "test fixtures", "database setup script", "docker-compose file",
                      "pytest configuration", "git history", "CI logs", "runner image")
        )
    ]  # fmt: skip
    cause = "Found it: the fixtures build order dates in local time, and CI runs with TZ=UTC."
    conclusion = (
        "Root cause found: CI runs with TZ=UTC while the fixtures build order dates in local time, so orders "
        "created after 23:00 UTC fall on the next day. Fix: the fixtures now use datetime.now(timezone.utc); "
        "CI is green."
    )
    transcript = agentic_transcript(
        tmp_path, "Why do the payment webhook tests fail on CI but pass locally?", [*narration, cause], conclusion
    )
    assert len("\n\n".join([*narration, cause, conclusion])) > 1500
    done = hook("capture", recorded("stop.json", workspace, transcript_path=str(transcript)))
    assert done.returncode == 0 and "skipped" not in done.stderr, done.stderr
    text = (workspace / "memory" / "2026-12-03.md").read_text()
    outcome = text.split("**Outcome:** ", 1)[1]
    assert "Root cause found: CI runs with TZ=UTC" in outcome and "CI is green." in outcome
    assert cause in outcome and outcome.index(cause) < outcome.index("Root cause found")  # (in the order said)
    assert "Let me look at the CI configuration" not in outcome  # the first steps went first
    assert len(outcome.strip()) <= 1500 and "output output" not in text
    assert "## 09:41 Why do the payment webhook tests fail on CI but pass locally\n" in text


IDE_FILE = (
    "<ide_opened_file>The user opened the file /home/dev/shop/src/consumer.py in the IDE. This may or may not be "
    "related to the current task.</ide_opened_file>"
)
IDE_SELECTION = (
    "<ide_selection>The user selected the lines 10 to 12 from /home/dev/shop/src/consumer.py:\ndef poll(self):\n"
    "    batch = self.c.poll(timeout=1.0)\n\nThis may or may not be related to the current task.</ide_selection>"
)


def test_what_the_ide_and_claude_code_put_in_a_message_is_no_part_of_the_note(workspace: Path, tmp_path: Path) -> None:
    """(audit J, 2) In VS Code and JetBrains the user's message opens with <ide_opened_file> and <ide_selection>: they
    became the note's heading and its Asked text, and every IDE turn shared their words. Those blocks (and reminders)
    go; a tag the user typed stays, and a message of injected blocks alone is no prompt."""
    question = "why is the kafka consumer lagging behind on partition 3? see <config>max.poll=500</config>"
    reminder = "<system-reminder>The TodoWrite tool has not been used recently.</system-reminder>"
    text = lambda t: {"type": "text", "text": t}  # noqa: E731
    entries = [
        {"type": "user", "message": {"content": [text(IDE_FILE), text(IDE_SELECTION), text(question)]}},
        {
            "type": "assistant",
            "message": {"content": [text("The lag comes from a synchronous HTTP call per message.")]},
        },
        {"type": "user", "message": {"content": [text(reminder)]}},  # (mid-turn: no new prompt)
        {"type": "assistant", "message": {"content": [text("Batching 50 calls per request cut the lag to 200.")]}},
    ]
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    done = hook("capture", recorded("stop.json", workspace, transcript_path=str(transcript)))
    assert done.returncode == 0 and "skipped" not in done.stderr, done.stderr
    log = (workspace / "memory" / "2026-12-03.md").read_text()
    assert "## 09:41 why is the kafka consumer lagging behind on partition 3\n" in log
    assert f"**Asked:** {question}" in log and "synchronous HTTP call" in log and "cut the lag to 200" in log
    assert "ide_" not in log and "The user opened" not in log and "def poll" not in log and "TodoWrite" not in log


def test_prompt_recall_reads_the_prompt_without_what_the_ide_put_before_it(workspace: Path, tmp_path: Path) -> None:
    """(audit J, 2) The IDE's blocks were the recall query (every captured IDE turn matched them), and a slash command
    typed in the IDE (`<ide_opened_file>...\\n/compact`) got past the `/` check. The query is what the user typed."""
    calls, queries = tmp_path / "calls.log", tmp_path / "queries.log"
    logging_cli = tmp_path / "cli.sh"
    logging_cli.write_text(
        f'#!/bin/sh\necho "$@" >> {calls}\nif [ "$1" = search ]; then tee -a {queries} | {CLI} "$@"; exit $?; fi\n'
        f'exec {CLI} "$@"\n'
    )
    logging_cli.chmod(0o755)
    for prompt in (f"{IDE_FILE}\n/compact", f"{IDE_FILE}{IDE_SELECTION}"):
        skipped = hook(
            "user-prompt-submit",
            recorded("user-prompt-submit.json", workspace, prompt=prompt),
            MEMSEARCH_HOOK_CLI=str(logging_cli),
        )
        assert (skipped.returncode, skipped.stdout) == (0, "") and not calls.exists(), skipped.stderr
    event = recorded("user-prompt-submit.json", workspace, prompt=f"{IDE_FILE}\nwhich message broker did we pick?")
    recall = hook("user-prompt-submit", event, MEMSEARCH_HOOK_CLI=str(logging_cli))
    assert recall.returncode == 0 and "Kafka" in recall.stdout, recall
    assert queries.read_text().strip() == "which message broker did we pick?"


def test_session_start_never_gives_an_older_note_after_a_newer_one_it_left_out(workspace: Path) -> None:
    """(audit J, 7) A note that did not fit with its source line was skipped and older ones were given after it: the
    morning's "v1 API" note without the migration to v2 that followed. The first day's note that does not fit ends
    the notes given."""
    (workspace / "memory" / "MEMORY.md").write_text("# Project Memory\n\n## Team\n\nDana leads the backend.\n")
    checks = "".join(f"## 17:{n}0 Check {n}\n\nThe v2 import job check {n} ran green.\n\n" for n in range(1, 5))
    (workspace / "memory" / "2026-12-03.md").write_text(
        "# 2026-12-03\n\n## 09:00 Morning\n\nThe import job uses the v1 API.\n\n"
        f"## 13:00 Migration\n\nMoved the import job to the v2 API{', table by table' * 58}.\n\n{checks}"
    )
    asked = subprocess.run(  # what the hook is given: the migration fits the CLI's budget (note text alone)
        [*CLI.split(), "recent", "--session", "--chars", str(1500 - 80), "--json", "--workspace", str(workspace)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "MEMSEARCH_NOW": "2026-12-03T18:00"},
    )
    headings = [n["heading"] for n in json.loads(asked.stdout)["notes"]]
    assert headings[-2:] == ["13:00 Migration", "09:00 Morning"], headings
    result = hook("session-start", recorded("session-start.json", workspace), MEMSEARCH_HOOK_SESSION_CHARS="1500")
    text = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Dana leads" in text and "check 4 ran green" in text and "check 1 ran green" in text
    assert "table by table" not in text  # (with its source line it does not fit the hook's budget)
    assert "v1 API" not in text


def test_the_injected_blocks_go_and_a_typed_or_unclosed_tag_stays() -> None:
    """Each opening tag of a known name takes the first closing tag of its name after it, with the blank after it; a
    tag the user typed, an opening with no closing tag, a closing tag of another name and a tag inside a block taken
    stay as they were (or go with the block)."""
    typed = load_hook_module().typed
    reminder = "<system-reminder>Remember the todo list.</system-reminder>"
    assert typed(f"{IDE_FILE}\n{IDE_SELECTION}  fix the <config>retry</config> loop\n{reminder}") == (
        "fix the <config>retry</config> loop"
    )
    assert typed("<ide_selection a=1>x <system-reminder>y</ide_selection> z") == "z"  # an inner opening goes with it
    assert typed("<ide_a>x</ide_b> keep") == "<ide_a>x</ide_b> keep"  # another name's close
    assert (
        typed("<system-reminder> left open, then <ide_x>gone</ide_x >\t done")
        == "<system-reminder> left open, then done"
    )
    assert typed("<bash-input>ls</bash-input>\n<bash-stdout>a b</bash-stdout>") == ""
    assert typed("a <ide_x>1</ide_x>b<ide_x>2</ide_x>c") == "a bc"
    assert typed("<system-reminder x<y>z</system-reminder>") == "<system-reminder x<y>z</system-reminder>"


@pytest.mark.timeout(300)
def test_a_prompt_of_unclosed_tags_is_read_in_time_in_proportion_to_its_length() -> None:
    """(review 13, 5) Each opening tag with no closing tag was read on to the end of the prompt: 288 KB of them took
    24 s before the prompt hook asked anything, and the user waited. Ten times the text takes about ten times as long
    (a hundred times before); timed against a smaller text of the same kind, never a fixed number of seconds."""
    import time

    typed = load_hook_module().typed
    unit = "<system-reminder> <ide_selection x=1> <ide_a> </ide_b> text "

    def seconds(size: int, tries: int) -> float:
        text = (unit * (size // len(unit) + 1))[:size]
        best = float("inf")
        for _ in range(tries):
            started = time.perf_counter()
            assert typed(text) == text.strip()
            best = min(best, time.perf_counter() - started)
        return best

    small, larger = seconds(30_000, tries=3), seconds(300_000, tries=2)
    assert larger < 30 * small + 0.2, f"{small:.3f} s for 30 KB, {larger:.3f} s for 300 KB"


def test_a_capture_writes_to_the_day_of_its_heading_however_long_it_takes(workspace: Path, tmp_path: Path) -> None:
    """The heading's time was stamped before `remember --summarize` ran, the log's day after it: a turn captured at
    23:59 whose summary took a minute went into the next day's log under "23:59". The CLI is given the moment."""
    fake = tmp_path / "fake_cli.py"
    seen = tmp_path / "seen.json"
    fake.write_text(
        "import json, os, sys\n"
        f"open({str(seen)!r}, 'w').write(json.dumps({{k: os.environ.get(k) for k in"
        " ('MEMSEARCH_NOW', 'MEMSEARCH_HOOK_HEADING')}))\n"
    )
    answer = "We switched the cache to Redis 7.2."
    done = capture(
        workspace,
        tmp_path,
        "How did the cache go?",
        answer,
        MEMSEARCH_NOW="",
        MEMSEARCH_HOOK_CLI=f"{sys.executable} {fake}",
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(seen.read_text())
    moment = dt.datetime.fromisoformat(said["MEMSEARCH_NOW"])  # the real clock's moment, not a fixed one
    assert abs((dt.datetime.now() - moment).total_seconds()) < 120
    assert said["MEMSEARCH_HOOK_HEADING"].startswith(f"{moment:%H:%M} ")
