"""Short queries: every labelled question asked as a few keywords, as people type in an editor's symbol search.

    python -m bench short_queries --set ../shared/eval/multilingual-dev --set ../shared/eval/til-dev

Each question becomes its N longest words that are no function word of any language the analyzer knows (N = 1, 2,
3; a Chinese, Japanese or Korean question is asked whole): too short for its language to be told, so the BM25 leg
reads it as English. Asked through `Memory.search` with the product's defaults (the floor included) on a fresh index
of each workspace, with the bundled model unless `--provider`/`--model` say otherwise; scored as the set is (MRR@5
by file, recall@5 by line), beside the questions answered with nothing and the unrelated queries
(bench/queries/unrelated.json) answered with nothing (the floor: 14 of 14 is best).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench.common import bench_embedder, emit, log, table

WORDS = (1, 2, 3)


def keywords(question: str, n: int) -> str:
    """The question's `n` longest words that are no function word (a CJK question whole)."""
    from memsearch_lsp.core.search.analyzer import STOP_WORDS, Analyzer
    from memsearch_lsp.core.search.detection import _WORDS, is_cjk

    words = Analyzer.words(question)
    if any(is_cjk(w) for w in words):
        return question
    content = [w for w in words if w not in _WORDS and w not in STOP_WORDS] or words
    return " ".join(sorted(content, key=len, reverse=True)[:n])


def run_set(folder: Path, embedder: Any) -> list[dict[str, Any]]:
    from bench.fusion import unrelated
    from bench.labelled import load_truth, workspaces
    from memsearch_lsp.core.memory import Memory

    scores: dict[int, list[float]] = {n: [] for n in WORDS}
    empty = dict.fromkeys(WORDS, 0)
    floor = asked = 0
    key = ""
    with tempfile.TemporaryDirectory(prefix="bench-short-") as tmp:
        for src in workspaces(folder):
            ws = Path(tmp) / src.name
            shutil.copytree(src / "memory", ws / "memory")
            truth = load_truth(ws, src)
            with Memory(ws, embedder=embedder) as memory:
                memory.index()
                for n in WORDS:
                    for q in truth.questions:
                        hits = memory.search(keywords(q["q"], n), top_k=5)
                        score = truth.score(q, [(h.source, h.start_line, h.end_line) for h in hits])
                        key = "mrr@5" if "mrr@5" in score else "r@5"
                        scores[n].append(score[key])
                        empty[n] += not hits
                for query in unrelated():
                    floor += not memory.search(query, top_k=5)
                    asked += 1
    return [
        {
            "set": folder.name,
            "keywords": n,
            key: sum(scores[n]) / len(scores[n]),
            "no answer": empty[n],
            "questions": len(scores[n]),
            "unrelated empty": f"{floor}/{asked}",
        }
        for n in WORDS
    ]


def main(args: Any) -> None:
    folders = [Path(d).expanduser().resolve() for d in args.set or []]
    if not folders:
        raise SystemExit("short_queries: name the labelled sets with --set DIR (e.g. ../shared/eval/multilingual-dev)")
    embedder = bench_embedder(args)
    rows = []
    for folder in folders:
        log(f"short_queries: {folder.name}")
        rows += [emit("short_queries", row) for row in run_set(folder, embedder)]
    columns = ["set", "keywords", "mrr@5", "r@5", "no answer", "questions", "unrelated empty"]
    table(rows, columns, "Labelled questions asked as keywords (the product's defaults, fresh index)")
