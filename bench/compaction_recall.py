"""Does compaction lose anything to search? recall@5 on the LoCoMo dev split before and after compacting.

    nice python -m bench.compaction_recall [--eval ../shared/eval/locomo-dev] [--keep 5] [--conv conv-42 ...]

For each conversation: a fresh workspace with a copy of its logs (in a temporary folder, never in the
repository), indexed with the product's defaults; every question asked as is, top 10. Then every log
but the last `--keep` sessions is compacted with the extractive summariser (the product's defaults:
archive indexed) and the questions are asked again. A hit covers an evidence turn when the turn's line
lies in the hit's range, in its log or in the log's archived copy (byte for byte the same), or when the
hit is a summary range that cites the turn: a `(L<n>)` under a `From [date](archive/...)` line, or a
link `](archive/...#L<n>)`.
"""

from __future__ import annotations

import argparse
import json
import posixpath
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, emit

EVAL = ROOT.parent / "shared" / "eval" / "locomo-dev"
_RUN = re.compile(r"^From \[[^\]]*\]\(([^)#]+)(?:#L\d+)?\):\s*$")
_REF = re.compile(r"\(L(\d+)\)\s*$")
_LINK = re.compile(r"\]\(([^)#\s]+)#L(\d+)\)")


def cited(ws: Path, source: str, start: int, end: int) -> set[tuple[str, int]]:
    """(archived source, line) pairs cited by lines start..end of a summary file."""
    lines = (ws / source).read_text(encoding="utf-8").splitlines()
    folder = posixpath.dirname(source)
    out: set[tuple[str, int]] = set()
    run = ""
    for n, line in enumerate(lines, 1):
        match = _RUN.match(line)
        if match:
            run = posixpath.normpath(posixpath.join(folder, match.group(1)))
        if n < start or n > end:
            continue
        ref = _REF.search(line)
        if ref and run:
            out.add((run, int(ref.group(1))))
        for link, ln in _LINK.findall(line):
            out.add((posixpath.normpath(posixpath.join(folder, link)), int(ln)))
    return out


def covered(ws: Path, hits: list[Any], where: dict[str, tuple[str, int]], evidence: list[str], k: int) -> set[str]:
    """The evidence turns covered by the first k hits."""
    found: set[str] = set()
    for hit in hits[:k]:
        base = hit.source.replace("/archive/", "/")
        refs = cited(ws, hit.source, hit.start_line, hit.end_line) if "/summary-" in hit.source else set()
        refs = {(s.replace("/archive/", "/"), n) for s, n in refs}
        for turn in evidence:
            if turn not in where:
                continue
            src, line = where[turn]
            if (src == base and hit.start_line <= line <= hit.end_line) or (src, line) in refs:
                found.add(turn)
    return found


def score(ws: Path, memory: Any, qa: list[dict[str, Any]], where: dict[str, tuple[str, int]]) -> dict[str, Any]:
    recalls, hits5, chars, archived, summary = [], [], [], 0, 0
    for item in qa:
        evidence = [e for e in item["evidence"] if e in where]
        if not evidence:
            continue
        hits = memory.search(item["q"], top_k=10)
        got = covered(ws, hits, where, evidence, 5)
        recalls.append(len(got) / len(evidence))
        hits5.append(1.0 if got else 0.0)
        chars.append(sum(len(h.snippet) for h in hits[:5]))
        archived += sum(h.archived for h in hits[:5])
        summary += sum("/summary-" in h.source for h in hits[:5])
    return {
        "questions": len(recalls),
        "recall@5": statistics.fmean(recalls),
        "hit@5": statistics.fmean(hits5),
        "archived_hits@5": archived,
        "summary_hits@5": summary,
    }


def run_conversation(conv: Path, keep: int) -> dict[str, Any]:
    from memsearch_lsp.core.compact.plan import apply_plan, plan_compaction
    from memsearch_lsp.core.memory import Memory

    truth = json.loads((conv / "truth.json").read_text(encoding="utf-8"))
    where = {turn: (source, int(line)) for source, lines in truth["lines"].items() for line, turn in lines.items()}
    with tempfile.TemporaryDirectory(prefix="memsearch-compaction-") as tmp:
        ws = Path(tmp)
        shutil.copytree(conv / "memory", ws / "memory")
        with Memory(ws) as memory:
            memory.index()
            before = score(ws, memory, truth["qa"], where)
            logs = sorted(p.name for p in (ws / "memory").glob("*.md"))
            started = time.perf_counter()
            plan = plan_compaction(memory, files=[f"memory/{name}" for name in logs[:-keep]])
            apply_plan(memory, plan)
            seconds = time.perf_counter() - started
            after = score(ws, memory, truth["qa"], where)
    return {
        "conv": conv.name,
        "logs": len(logs),
        "compacted": len(plan.archive),
        "summaries": len(plan.summaries),
        "chars_before": plan.chars_before,
        "chars_after": plan.chars_after,
        "ratio": plan.chars_after / plan.chars_before,
        "compact_s": round(seconds, 1),
        "recall@5_before": before["recall@5"],
        "recall@5_after": after["recall@5"],
        "hit@5_before": before["hit@5"],
        "hit@5_after": after["hit@5"],
        "questions": before["questions"],
        "archived_hits@5": after["archived_hits@5"],
        "summary_hits@5": after["summary_hits@5"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compaction_recall", description=__doc__.split("\n")[0])
    parser.add_argument("--eval", type=Path, default=EVAL, help="folder of conversations (default: %(default)s)")
    parser.add_argument("--keep", type=int, default=5, help="most recent sessions left uncompacted")
    parser.add_argument("--conv", nargs="*", help="only these conversations")
    parser.add_argument("--archive-weight", type=float, default=None, help="experiment: demotion of archived hits")
    args = parser.parse_args(argv)
    if args.archive_weight is not None:
        from memsearch_lsp.core.search import hybrid as search

        search.ARCHIVE_WEIGHT = args.archive_weight
    convs = [
        c
        for c in sorted(args.eval.iterdir())
        if (c / "truth.json").is_file() and (not args.conv or c.name in args.conv)
    ]
    rows = []
    for conv in convs:
        row = dict(run_conversation(conv, args.keep), archive_weight=args.archive_weight)
        emit("compaction", row)
        rows.append(row)
    weights = [r["questions"] for r in rows]

    def mean(key: str) -> float:
        return sum(r[key] * w for r, w in zip(rows, weights)) / sum(weights)

    total = {
        "conv": "all",
        "questions": sum(weights),
        "ratio": sum(r["chars_after"] for r in rows) / sum(r["chars_before"] for r in rows),
        "recall@5_before": mean("recall@5_before"),
        "recall@5_after": mean("recall@5_after"),
        "hit@5_before": mean("hit@5_before"),
        "hit@5_after": mean("hit@5_after"),
    }
    emit("compaction", total)
    print("\n| conversation | logs compacted | chars before -> after | ratio | recall@5 before | after | delta |")
    print("|---|---|---|---|---|---|---|")
    for r in [*rows, total]:
        shape = f"{r['compacted']}/{r['logs']}" if "logs" in r else ""
        chars = f"{r['chars_before']:,} -> {r['chars_after']:,}" if "chars_before" in r else ""
        print(
            f"| {r['conv']} | {shape} | {chars} | {r['ratio']:.3f} | {r['recall@5_before']:.3f} | "
            f"{r['recall@5_after']:.3f} | {r['recall@5_after'] - r['recall@5_before']:+.3f} |"
        )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
