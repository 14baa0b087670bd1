"""The agent's memory loop through the real Claude Code hook script (`python -m bench loop`).

Recall: each conversation of a labelled set (default `../shared/eval/locomo-dev`) is replayed as agent turns
into an empty memory: one day per session (MEMSEARCH_NOW = the session's date and time), SessionStart once,
then Stop per exchange (two consecutive turns: the first as the user's prompt, the second as the agent's
answer, in a transcript file as Claude Code writes it). Every question is then asked through
UserPromptSubmit. Reported: the share of questions with evidence text in the injected context (any
evidence turn, and the mean share of evidence turns), the context's size, and the hooks' latencies.

Latency: `--chunks N` (default 10,000; 1,000 with --quick) builds a memory of that many chunks with
`bench.hashed` (hash vectors under the bundled model's name, so the real model answers the queries), then
times SessionStart, the first and later UserPromptSubmit calls (through the warm owner SessionStart
starts) and Stop, p50/p95.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import emit, log, percentile, table, work_dir

ROOT = Path(__file__).resolve().parent.parent
HOOK = ROOT / "integrations" / "claude-code" / "scripts" / "memsearch_hook.py"
DEFAULT_SET = ROOT.parent / "shared" / "eval" / "locomo-dev"
TURN = re.compile(r"^\s*- \*\*(?P<who>[^*]+)\*\*: (?P<text>.*)$")
TIME = re.compile(r"^## (\d{1,2}:\d{2})")


def environment(now: str, idle: int = 60) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSEARCH_", "CLAUDE_"))}
    env.update(
        {
            "XDG_DATA_HOME": str(Path(tempfile.gettempdir()) / "bench-loop-user-data"),  # not the user's memory
            "MEMSEARCH_HOOK_CLI": f"{sys.executable} -m memsearch_lsp",
            "MEMSEARCH_NOW": now,
            "MEMSEARCH_HOOK_WARM_IDLE": str(idle),
            "MEMSEARCH_HOOK_TIMEOUT": "120",
        }
    )
    return env


def hook(name: str, event: dict[str, Any], env: dict[str, str]) -> tuple[float, dict[str, Any] | None]:
    """(seconds, the hook's JSON output or None)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(HOOK), name], input=json.dumps(event), capture_output=True, text=True, timeout=300, env=env
    )
    seconds = time.perf_counter() - start
    if done.stderr.strip():
        log(f"{name}: {done.stderr.strip()[:200]}")
    return seconds, (json.loads(done.stdout) if done.stdout.strip() else None)


def captures_running() -> int:
    done = subprocess.run(["pgrep", "-f", f"{HOOK} capture"], capture_output=True, text=True, check=False)
    return len(done.stdout.split())


def wait_for_captures(timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while captures_running() and time.monotonic() < deadline:
        time.sleep(0.05)


def stop_owner(ws: Path) -> None:
    try:
        pid = int(json.loads((ws / ".memsearch" / "server.json").read_text())["pid"])
        os.kill(pid, 15)
        for _ in range(100):
            os.kill(pid, 0)
            time.sleep(0.1)
    except (OSError, ValueError, KeyError):
        pass


def sessions(src: Path) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """(ISO start time, [(speaker, text, raw line)]) per session file, in date order."""
    out = []
    for path in sorted((src / "memory").glob("*.md")):
        day, clock, turns = path.stem, "12:00", []
        for line in path.read_text(encoding="utf-8").split("\n"):
            if (found := TIME.match(line)) and clock == "12:00":
                clock = found.group(1).zfill(5)
            elif found := TURN.match(line):
                turns.append((found.group("who"), found.group("text"), line))
        if turns:
            out.append((f"{day}T{clock}", turns))
    return out


def evidence_texts(src: Path) -> tuple[dict[str, str], list[dict[str, Any]]]:
    truth = json.loads((src / "truth.json").read_text(encoding="utf-8"))
    texts: dict[str, str] = {}
    for source, lines in truth["lines"].items():
        file_lines = (src / source).read_text(encoding="utf-8").split("\n")
        for number, label in lines.items():
            found = TURN.match(file_lines[int(number) - 1])
            if found:
                texts[label] = found.group("text")
    return texts, [q for q in truth["qa"] if any(e in texts for e in q["evidence"])]


def normal(text: str) -> str:
    return " ".join(re.sub(r"[*_`]", "", text).lower().split())


def found_in(context: str, evidence: str) -> bool:
    """The evidence turn's text (its first 60 characters, normalised) is in the context."""
    return normal(evidence)[:60] in normal(context)


def replay(src: Path, tmp: Path, questions: int) -> dict[str, Any]:
    ws = tmp / src.name
    (ws / "memory").mkdir(parents=True)
    stops: list[float] = []
    first_now = sessions(src)[0][0]
    hook("session-start", {"cwd": str(ws), "hook_event_name": "SessionStart"}, environment(first_now))
    for session, (when, turns) in enumerate(sessions(src)):
        env = environment(when)
        for n in range(0, len(turns) - 1, 2):
            transcript = tmp / "transcript.jsonl"
            entries = [
                {"type": "user", "message": {"role": "user", "content": turns[n][1]}},
                {
                    "type": "assistant",
                    "message": {"role": "assistant", "content": [{"type": "text", "text": turns[n + 1][1]}]},
                },
            ]
            transcript.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
            seconds, _ = hook(
                "stop",
                {
                    "cwd": str(ws),
                    "transcript_path": str(transcript),
                    "hook_event_name": "Stop",
                    "stop_hook_active": False,
                    "session_id": f"{src.name}-{session}",
                },
                env,
            )
            stops.append(seconds)
            wait_for_captures()
    texts, qa = evidence_texts(src)
    qa = qa[:questions] if questions else qa
    env = environment(sessions(src)[-1][0])
    prompts: list[float] = []
    any_found, share, sizes = 0, 0.0, []
    for q in qa:
        seconds, output = hook(
            "user-prompt-submit", {"cwd": str(ws), "prompt": q["q"], "hook_event_name": "UserPromptSubmit"}, env
        )
        prompts.append(seconds)
        context = (output or {}).get("hookSpecificOutput", {}).get("additionalContext", "")
        sizes.append(len(context))
        hits = [found_in(context, texts[e]) for e in q["evidence"] if e in texts]
        any_found += any(hits)
        share += sum(hits) / len(hits)
    stop_owner(ws)
    notes = sum(p.read_text().count("\n## ") for p in (ws / "memory").glob("*.md"))
    return {
        "set": src.name,
        "exchanges": len(stops),
        "notes": notes,
        "questions": len(qa),
        "evidence_any": round(any_found / max(len(qa), 1), 3),
        "evidence_share": round(share / max(len(qa), 1), 3),
        "context_chars_p50": percentile(sizes, 50),
        "stop_p50_s": round(percentile(stops, 50), 3),
        "stop_p95_s": round(percentile(stops, 95), 3),
        "prompt_p50_s": round(percentile(prompts, 50), 3),
        "prompt_p95_s": round(percentile(prompts, 95), 3),
    }


def latency(chunks: int, prompts: int, tmp: Path) -> dict[str, Any]:
    from bench import hashed

    base = work_dir() / f"loop-hashed-{chunks}"
    if not (base / ".memsearch").is_dir():
        shutil.rmtree(base, ignore_errors=True)
        hashed.main(chunks, base)
    ws = tmp / "latency"
    shutil.copytree(base, ws, ignore=shutil.ignore_patterns("*.sock", "server.json"))
    env = environment("2026-02-27T18:00", idle=120)
    queries = [q["query"] for q in json.loads((ROOT / "bench" / "queries" / "generated.json").read_text())["queries"]]
    start_s, _ = hook("session-start", {"cwd": str(ws)}, env)
    times = []
    for n in range(prompts):
        seconds, _ = hook("user-prompt-submit", {"cwd": str(ws), "prompt": queries[n % len(queries)]}, env)
        times.append(seconds)
    transcript = tmp / "t.jsonl"
    transcript.write_text(
        json.dumps({"type": "user", "message": {"content": "How do we deploy the cart service?"}})
        + "\n"
        + json.dumps({"type": "assistant", "message": {"content": "Blue-green, canary 5%."}})
    )
    stops = []
    for _ in range(10):
        seconds, _ = hook("stop", {"cwd": str(ws), "transcript_path": str(transcript)}, env)
        stops.append(seconds)
        wait_for_captures()
    stop_owner(ws)
    later = times[1:]
    return {
        "chunks": chunks,
        "session_start_s": round(start_s, 3),
        "first_prompt_s": round(times[0], 3),
        "later_prompt_p50_s": round(percentile(later, 50), 3),
        "later_prompt_p95_s": round(percentile(later, 95), 3),
        "stop_p50_s": round(percentile(stops, 50), 3),
        "stop_p95_s": round(percentile(stops, 95), 3),
    }


def redaction_false_positives(root: Path = DEFAULT_SET.parent) -> dict[str, Any]:
    """What the redaction rules (core/redact.py) would take out of the development sets' text (memory files and
    questions), where there is no secret to find: every one is a false positive."""
    from memsearch_lsp.core.redact import find_secrets, without_private

    files = found = chars = 0
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".md", ".json") and p.is_file()):
        text = path.read_text(encoding="utf-8", errors="replace")
        files, chars = files + 1, chars + len(text)
        found += len(find_secrets(text)) + (without_private(text) != text)
        for secret in find_secrets(text):
            log(f"redacted in {path.relative_to(root)}: {text[secret.start : secret.end][:60]!r} ({secret.kind})")
    return {
        "sets": ", ".join(sorted(p.name for p in root.iterdir() if p.is_dir())),
        "files": files,
        "chars": chars,
        "false_positives": found,
    }


def main(args: Any) -> None:
    sets = [Path(s) for s in (args.set or [str(DEFAULT_SET)])]
    folders = [
        p
        for s in sets
        for p in ([s] if (s / "truth.json").is_file() else sorted(s.iterdir()))
        if (p / "truth.json").is_file()
    ]
    folders = folders[: args.conversations or (1 if args.quick else len(folders))]
    questions = 60 if args.quick else 0
    fp = emit("loop-redaction", redaction_false_positives())
    print(table([fp], list(fp), "redaction false positives on the development sets"))
    with tempfile.TemporaryDirectory(prefix="bench-loop-") as tmp:
        rows = []
        for folder in folders:
            log(f"replaying {folder.name} through the hooks")
            rows.append(emit("loop", replay(folder, Path(tmp), questions)))
        if rows:
            print(
                table(
                    rows,
                    [
                        "set",
                        "exchanges",
                        "notes",
                        "questions",
                        "evidence_any",
                        "evidence_share",
                        "context_chars_p50",
                        "stop_p50_s",
                        "stop_p95_s",
                        "prompt_p50_s",
                        "prompt_p95_s",
                    ],
                    "the loop through the hooks",
                )
            )
        chunks = args.chunks or (1000 if args.quick else 10000)
        record = emit("loop-latency", latency(chunks, 10 if args.quick else 40, Path(tmp)))
        print(table([record], list(record), f"hook latency at {chunks} chunks"))
    print(f"# {dt.datetime.now():%Y-%m-%d %H:%M}")
