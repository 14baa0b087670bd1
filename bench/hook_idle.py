"""What the Claude Code hooks need from a warm index owner (`warm.idle_s`): a prompt's recall through the owner vs
after it left (the hook searches through the CLI and starts a new owner), and what the owner holds meanwhile.

`python -m bench.hook_idle [--rounds 3]` copies examples/memory, runs the session-start hook (it starts the owner),
then each round asks four prompts through the user-prompt-submit hook, sends the owner SIGTERM and asks one prompt
without it. Prints the medians and the owner's RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "integrations" / "claude-code" / "scripts" / "memsearch_hook.py"
PROMPTS = [
    "which message broker did we pick",
    "how long do cached values live",
    "who is on call on mondays",
    "what went wrong with checkout",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hook_idle", description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="memsearch-hook-idle-"))
    ws = tmp / "ws"
    shutil.copytree(ROOT / "examples" / "memory", ws / "memory")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSEARCH_", "CLAUDE_"))}
    env.update(MEMSEARCH_HOOK_CLI=f"{sys.executable} -m memsearch_lsp", XDG_CACHE_HOME=str(tmp / "cache"))
    record = ws / ".memsearch" / "server.json"

    def hook(name: str, **event: Any) -> float:
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, str(SCRIPT), name],
            input=json.dumps({"cwd": str(ws), "session_id": "bench", **event}),
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=True,
        )
        return time.perf_counter() - started

    def owner() -> int | None:
        try:
            return int(json.loads(record.read_text())["pid"])
        except (OSError, ValueError, KeyError):
            return None

    def served() -> int:
        for _ in range(1200):
            pid = owner()
            if pid:
                time.sleep(2)  # its first pass done
                return pid
            time.sleep(0.1)
        raise SystemExit("no warm owner started")

    def rss_mib(pid: int) -> int:
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith("VmRSS"))

    try:
        hook("session-start", hook_event_name="SessionStart", source="startup")
        pid = served()
        warm, cold, rss = [], [], [rss_mib(pid)]
        for n in range(args.rounds):
            warm += [hook("user-prompt-submit", hook_event_name="UserPromptSubmit", prompt=p) for p in PROMPTS]
            rss.append(rss_mib(pid))
            os.kill(pid, signal.SIGTERM)
            while owner():
                time.sleep(0.1)
            cold.append(hook("user-prompt-submit", hook_event_name="UserPromptSubmit", prompt=PROMPTS[n % 4]))
            pid = served()
        print(
            json.dumps(
                {
                    "prompt_with_owner_s": {"median": round(statistics.median(warm), 2), "max": round(max(warm), 2)},
                    "prompt_after_owner_left_s": [round(c, 2) for c in cold],
                    "owner_rss_mib": rss,
                },
                indent=2,
            )
        )
        os.kill(pid, signal.SIGTERM)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
