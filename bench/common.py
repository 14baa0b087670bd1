"""Shared helpers: results as JSON lines, readable tables, timing statistics, machine facts, RSS."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"


def work_dir() -> Path:
    """Where generated corpora and their indexes live (BENCH_WORK, default bench/results/work)."""
    path = Path(os.environ.get("BENCH_WORK", RESULTS / "work"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def machine() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = 0
    try:
        mem = int(Path("/proc/meminfo").read_text().split()[1]) // 1024
    except (OSError, IndexError, ValueError):
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "mem_mib": mem,
        "python": platform.python_version(),
        "os": platform.platform(terse=True),
    }


def git_rev() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=5
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def emit(bench: str, record: dict[str, Any]) -> dict[str, Any]:
    """Print one result as a JSON line and append it to bench/results/<bench>.jsonl."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    full = {"bench": bench, "time": dt.datetime.now().isoformat(timespec="seconds"), "rev": git_rev(), **record}
    line = json.dumps(full, ensure_ascii=False, default=str)
    with (RESULTS / f"{bench}.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")
    print(line, flush=True)
    return full


def table(rows: Sequence[dict[str, Any]], columns: Sequence[str], title: str = "") -> str:
    """A GitHub-flavoured Markdown table (readable in a terminal, pasteable in the README)."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
        return "" if value is None else str(value)

    body = [[cell(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(b[i]) for b in body)) if body else len(c) for i, c in enumerate(columns)]
    lines = [f"\n{title}" if title else ""]
    lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(columns, widths)) + " |")
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    lines += ["| " + " | ".join(v.ljust(w) for v, w in zip(b, widths)) + " |" for b in body]
    text = "\n".join(lines)
    print(text, flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    with (RESULTS / "tables.md").open("a", encoding="utf-8") as handle:  # the latest tables, for the README
        handle.write(f"<!-- {dt.datetime.now().isoformat(timespec='seconds')} {git_rev()} -->{text}\n")
    return text


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100]."""
    if not values:
        return float("nan")
    data = sorted(values)
    pos = (len(data) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def summary(values: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "median": statistics.median(values),
        "p95": percentile(values, 95),
        "min": min(values),
        "max": max(values),
    }


def timed(fn: Callable[[], Any], repeat: int) -> list[float]:
    """Wall seconds of `repeat` calls."""
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def rss_mib(pid: int | None = None) -> tuple[float, float]:
    """(current RSS, peak RSS) in MiB of a process (this one by default), from /proc."""
    status = Path(f"/proc/{pid or 'self'}/status").read_text()
    values = {}
    for line in status.splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            key, value = line.split(":", 1)
            values[key] = int(value.split()[0]) / 1024
    return values.get("VmRSS", 0.0), values.get("VmHWM", 0.0)


def dir_size_mib(path: Path) -> float:
    total = 0
    for folder, _, names in os.walk(path):
        for name in names:
            try:
                total += (Path(folder) / name).lstat().st_size
            except OSError:
                pass
    return total / (1024 * 1024)


def log(message: str) -> None:
    print(f"# {message}", file=sys.stderr, flush=True)


def chunk_sizes(quick: bool, full: Iterable[int] = (1000, 10000, 100000)) -> list[int]:
    return [1000] if quick else list(full)


def embedding_settings(args: Any) -> Any:
    """EmbeddingConfig from MEMSEARCH_EMBEDDING_* and the --provider/--model/... flags."""
    from memsearch_lsp.config import Config, from_env

    env = {k: v for k, v in os.environ.items() if k.startswith("MEMSEARCH_EMBEDDING_")}
    flags = {
        name: getattr(args, name, None)
        for name in (
            "provider",
            "model",
            "base_url",
            "api_key_env",
            "dimensions",
            "max_tokens",
            "batch_size",
            "document_prefix",
            "query_prefix",
            "query_model",
        )
    }
    return (
        Config()
        .merged(from_env(env))
        .merged({"embedding": {k: v for k, v in flags.items() if v is not None}}, origin="bench flags")
        .embedding
    )


def bench_embedder(args: Any) -> Any:
    """The embedder to measure: the configured provider (the bundled model by default)."""
    from memsearch_lsp.core.embedding import create_embedder

    embedder = create_embedder(embedding_settings(args), root=ROOT)
    log(f"embedding: {getattr(embedder, 'provider', '?')} {embedder.model_name}")
    return embedder
