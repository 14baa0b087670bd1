"""Labelled workspaces: `python -m bench quality --set DIR` scores ranked search on any folder of them.

A labelled workspace is a folder with `memory/` (the Markdown) and `truth.json`:
`{"lines": {"memory/x.md": {"5": "a", ...}}, "qa": [{"q": "...", "evidence": ["a"], "cat": 1}]}`.
`lines` names the turns (or any labelled lines) by 1-based line; `evidence` lists the lines that answer a
question. DIR is one such workspace or a folder of them (each scored on a fresh index, then pooled).

Scoring (the same as ../shared/eval/README.md): each question is asked as it is, top 10. A hit covers every
evidence line inside its range (start..end, inclusive). recall@k = share of a question's evidence lines
covered by the first k hits, averaged over questions; hit@5 = share of questions with one covered in the top
5; chars@5 = characters spanned by the first 5 hits, averaged. Through `Memory.search` for every setting,
and through the real server's `workspace/symbol` for the default setting, whose ranking must be the same.

A notes-style workspace has `questions.json` instead: `{"qa": [{"q": "...", "files": ["note.md", ...]}]}`,
`files` naming (relative to `memory/`) every note that answers. It is scored at file level: a question is
answered at rank r when the r-th hit comes from one of its files; hit@1, hit@3, hit@5 and MRR@5 (1/r of the
first answering hit in the top 5, else 0).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import emit, log, percentile

K = 10


LABELS = ("truth.json", "questions.json")


def labelled(folder: Path) -> bool:
    return (folder / "memory").is_dir() and any((folder / name).is_file() for name in LABELS)


def workspaces(folder: Path) -> list[Path]:
    """`folder` itself when it is a labelled workspace, else its labelled sub-folders, sorted."""
    if labelled(folder):
        return [folder]
    found = sorted(p for p in folder.iterdir() if p.is_dir() and labelled(p))
    if not found:
        raise SystemExit(f"{folder}: no labelled workspace (memory/ + truth.json or questions.json) in it")
    return found


def load_truth(root: Path, src: Path) -> Truth | FileTruth:
    """The labels of workspace `src` (copied to `root`): lines (truth.json) or files (questions.json)."""
    if (src / "truth.json").is_file():
        return Truth(root, src / "truth.json")
    return FileTruth(root, src / "questions.json")


class Truth:
    """Questions of one workspace and where their evidence lies (`labels`: the truth.json file)."""

    def __init__(self, root: Path, labels: Path):
        data = json.loads(labels.read_text(encoding="utf-8"))
        self.where = {
            label: (source, int(line)) for source, lines in data["lines"].items() for line, label in lines.items()
        }
        self.questions = [q for q in data["qa"] if any(e in self.where for e in q["evidence"])]
        self.texts: dict[str, list[str]] = {}
        self.root = root

    def lines(self, source: str) -> list[str]:
        if source not in self.texts:
            path = self.root / source
            text = path.read_text(encoding="utf-8") if path.is_file() else ""
            self.texts[source] = text.replace("\r\n", "\n").split("\n")
        return self.texts[source]

    def chars(self, span: tuple[str, int, int]) -> int:
        source, start, end = span
        return len("\n".join(self.lines(source)[start - 1 : end]))

    def label(self, question: dict[str, Any]) -> dict[str, Any]:
        return {
            "evidence": [list(self.where[e]) for e in question["evidence"] if e in self.where],
            "cat": question.get("cat", 0),
        }

    def score(self, question: dict[str, Any], spans: Sequence[tuple[str, int, int]]) -> dict[str, float]:
        """spans: (source, start_line, end_line) of the ranked hits, best first."""
        out = score_spans(self.label(question), spans)
        out["chars@5"] = float(sum(self.chars(s) for s in spans[:5]))
        return out


class FileTruth(Truth):
    """Questions answered by whole notes (`questions.json`: {"qa": [{"q", "files"}]}), scored by file."""

    def __init__(self, root: Path, labels: Path):
        data = json.loads(labels.read_text(encoding="utf-8"))
        self.questions = [q for q in data["qa"] if q.get("files")]
        self.texts = {}
        self.root = root

    def label(self, question: dict[str, Any]) -> dict[str, Any]:
        return {"files": list(question["files"])}


def score_spans(label: dict[str, Any], spans: Sequence[tuple[str, int, int]]) -> dict[str, float]:
    """A question's scores for ranked spans (source, start, end): recall@k (lines) or MRR@5 (files)."""
    if "files" in label:
        files = label["files"]
        first = next(
            (n for n, (src, _, _) in enumerate(spans[:5], 1) if any(src == f or src.endswith("/" + f) for f in files)),
            0,
        )
        return {
            "hit@1": float(first == 1),
            "hit@3": float(0 < first <= 3),
            "hit@5": float(first > 0),
            "mrr@5": 1.0 / first if first else 0.0,
        }
    evidence = label["evidence"]

    def recall(k: int) -> float:
        top = spans[:k]
        return sum(any(s == src and a <= line <= b for s, a, b in top) for src, line in evidence) / len(evidence)

    out = {f"r@{k}": recall(k) for k in (1, 3, 5, 10)}
    out["hit@5"] = float(out["r@5"] > 0)
    out["cat"] = label.get("cat", 0)
    return out


def summary(per_query: Sequence[dict[str, float]]) -> dict[str, Any]:
    def mean(key: str, rows: Sequence[dict[str, float]] = per_query) -> float:
        return sum(r[key] for r in rows) / len(rows) if rows else 0.0

    keys = ("r@1", "r@3", "r@5", "r@10", "hit@1", "hit@3", "hit@5", "mrr@5", "chars@5")
    row: dict[str, Any] = {"queries": len(per_query), **{k: mean(k) for k in keys if per_query and k in per_query[0]}}
    for cat in sorted({int(r["cat"]) for r in per_query if r.get("cat")}):
        row[f"r@5 cat{cat}"] = mean("r@5", [r for r in per_query if int(r["cat"]) == cat])
    return row


def over_lsp(root: Path, questions: Sequence[dict[str, Any]]) -> tuple[list[list[tuple[str, int, int]]], list[float]]:
    """Every question as `workspace/symbol` to a fresh server on `root` (top K): spans and latencies."""
    from bench.lsp_client import LspClient

    settings = {"search": {"symbolLimit": K}}
    spans, times = [], []
    base = root.resolve().as_uri().rstrip("/") + "/"
    with LspClient(cwd=root) as client:
        client.settings = settings
        client.initialize(root, {"memsearch": settings})
        client.wait_notification("memsearch/indexed", timeout=3600)
        for q in questions:
            start = time.perf_counter()
            result = client.request("workspace/symbol", {"query": q["q"]}) or []
            times.append(time.perf_counter() - start)
            found = []
            for symbol in result:
                rng = symbol["location"]["range"]
                end = rng["end"]["line"] + (1 if rng["end"]["character"] > 0 else 0)
                found.append((symbol["location"]["uri"].removeprefix(base), rng["start"]["line"] + 1, end))
            spans.append(found)
    return spans, times


def run_workspace(
    src: Path, tmp: Path, embedder: Any, settings: dict[str, dict[str, Any]], lsp: bool
) -> tuple[dict[str, list[dict[str, float]]], dict[str, Any]]:
    """Index a private copy of `src`, ask every question under every setting (and over LSP)."""
    from memsearch_lsp.core.memory import Memory

    ws = tmp / src.name
    shutil.copytree(src / "memory", ws / "memory")
    truth = load_truth(ws, src)
    results: dict[str, list[dict[str, float]]] = {}
    facts: dict[str, Any] = {"workspace": src.name, "questions": len(truth.questions)}
    model_runs = getattr(getattr(embedder, "inner", embedder), "fresh", None)
    fresh = model_runs or 0
    with Memory(ws, embedder=embedder) as memory:
        memory.store  # noqa: B018 - opening Milvus Lite is start-up, not indexing
        start = time.perf_counter()
        stats = memory.index()
        facts.update(
            index_s=time.perf_counter() - start,
            chunks=stats.chunks_total,
            embedded_by_model=getattr(getattr(embedder, "inner", embedder), "fresh", 0) - fresh,
        )
        default_spans = []
        for name, overrides in settings.items():
            rows, times = [], []
            for q in truth.questions:
                begin = time.perf_counter()
                hits = memory.search(q["q"], top_k=K, **overrides)
                times.append(time.perf_counter() - begin)
                spans = [(h.source, h.start_line, h.end_line) for h in hits]
                rows.append({**truth.score(q, spans), "ms": 1000 * (time.perf_counter() - begin)})
                if name == "default":
                    default_spans.append(spans)
            results[name] = rows
            facts[f"p50_ms|{name}"] = 1000 * percentile(times, 50)
    memory.close()
    if lsp:
        spans_lsp, times = over_lsp(ws, truth.questions)
        results["default via workspace/symbol"] = [truth.score(q, s) for q, s in zip(truth.questions, spans_lsp)]
        facts["p50_ms|default via workspace/symbol"] = 1000 * percentile(times, 50)
        same = sum(a == b for a, b in zip(default_spans, spans_lsp))
        facts["lsp_same_ranking"] = same / max(len(default_spans), 1)
        if same != len(default_spans):
            log(f"{src.name}: workspace/symbol ranked {len(default_spans) - same} questions differently")
    return results, facts


def run_sets(
    folders: Sequence[Path], embedder: Any, settings: dict[str, dict[str, Any]], lsp: bool = True
) -> list[dict[str, Any]]:
    """One row per (set, setting): pooled over the set's workspaces."""
    rows = []
    for folder in folders:
        pooled: dict[str, list[dict[str, float]]] = {}
        facts: list[dict[str, Any]] = []
        with tempfile.TemporaryDirectory(prefix="bench-labelled-") as tmp:
            for src in workspaces(folder):
                log(f"quality: {folder.name}/{src.name}")
                results, fact = run_workspace(src, Path(tmp), embedder, settings, lsp)
                emit("quality-workspace", {"set": folder.name, **fact})
                facts.append(fact)
                for name, per_query in results.items():
                    pooled.setdefault(name, []).extend(per_query)
        index_s = sum(f["index_s"] for f in facts)
        for name, per_query in pooled.items():
            p50 = sorted(f.get(f"p50_ms|{name}", 0.0) for f in facts)[len(facts) // 2]
            row = {"set": folder.name, "setting": name, **summary(per_query), "index_s": index_s, "p50_ms": p50}
            if name.endswith("workspace/symbol"):
                row["same_ranking"] = min(f["lsp_same_ranking"] for f in facts)
            rows.append(emit("quality", row))
    return rows
