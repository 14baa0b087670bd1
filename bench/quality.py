"""Retrieval quality: recall@1/3/5/10, hit@5, chars@5 and MRR@10 of each ranking setting on labelled sets.

`--set DIR` (repeatable) adds folders of labelled workspaces (bench/labelled.py: memory/ + truth.json,
e.g. ../shared/eval/locomo-dev) to the same table, scored through `Memory.search` and `workspace/symbol`.

Sets: bench/queries/examples.json over examples/memory, and bench/queries/generated.json over a generated
memory (1k chunks; also 10k in the full run). An answer is a source file plus a heading ('*' = any chunk of
that file), so labels survive line changes. recall@k = share of a query's answers found in the top k (an
answer is found when any of its chunks is there), averaged over queries; MRR@10 = mean of 1/rank of the
first chunk that answers. Query vectors are memoised: every setting sees the same vector for a query.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import BENCH, RESULTS, ROOT, emit, log, table

QUERIES = BENCH / "queries"
K = 10
METRICS = ("r@1", "r@3", "r@5", "r@10", "hit@5", "chars@5")

# name -> Memory.search overrides ("default" = the shipped configuration)
SETTINGS: dict[str, dict[str, Any]] = {
    "default": {},
    "learned, no floor": {"min_score": 0.0},
    "dense": {"ranker": "minmax", "vector_weight": 1.0, "bm25_weight": 0.0, "min_score": 0.0},
    "bm25": {"ranker": "minmax", "vector_weight": 0.0, "bm25_weight": 1.0, "min_score": 0.0},
    "minmax 0.3/0.7 + confidence (previous default)": {
        "ranker": "minmax",
        "vector_weight": 0.3,
        "bm25_weight": 0.7,
        "min_score": 0.0,
    },
    "minmax 0.2/0.8 c30": {"ranker": "minmax", "vector_weight": 0.2, "bm25_weight": 0.8, "candidates": 30},
    "minmax 0.3/0.7 c30": {"ranker": "minmax", "vector_weight": 0.3, "bm25_weight": 0.7, "candidates": 30},
    "minmax 0.4/0.6 c30": {"ranker": "minmax", "vector_weight": 0.4, "bm25_weight": 0.6, "candidates": 30},
    "minmax 0.5/0.5 c30": {"ranker": "minmax", "vector_weight": 0.5, "bm25_weight": 0.5, "candidates": 30},
    "minmax 0.3/0.7 c10": {"ranker": "minmax", "vector_weight": 0.3, "bm25_weight": 0.7, "candidates": 10},
    "weighted 0.7/0.3 c30 (seed)": {
        "ranker": "weighted",
        "vector_weight": 0.7,
        "bm25_weight": 0.3,
        "candidates": 30,
        "min_score": 0.0,
    },
    "weighted 0.3/0.7 c10": {"ranker": "weighted", "vector_weight": 0.3, "bm25_weight": 0.7, "candidates": 10},
    "rrf c10": {"ranker": "rrf", "candidates": 10},
    "rrf c30": {"ranker": "rrf", "candidates": 30},
}
# every setting but the default runs without the relevance floor (it ranks what the legs find)
SETTINGS = {
    name: {"min_score": 0.0, **overrides} if name != "default" else overrides for name, overrides in SETTINGS.items()
}
QUICK = [
    "default",
    "learned, no floor",
    "dense",
    "bm25",
    "minmax 0.3/0.7 + confidence (previous default)",
    "weighted 0.7/0.3 c30 (seed)",
    "rrf c10",
]


class MemoEmbedder:
    """Wraps the real embedder; each distinct text is embedded once (query vectors reused across settings)."""

    def __init__(self, inner: Any):
        self.inner, self.model_name = inner, inner.model_name
        self.memo: dict[str, list[float]] = {}
        self.queries: dict[str, list[float]] = {}  # query vectors (the query form: a prefix, a query model)

    @property
    def dim(self) -> int:  # an endpoint's is known after its first answer
        return int(self.inner.dim)

    def __getattr__(self, name: str) -> Any:  # the rest of the Embedder protocol: the inner embedder's
        return getattr(self.inner, name)

    def embed_query(self, query: str) -> list[float]:
        from memsearch_lsp.core.embedding import query_vector

        if query not in self.queries:
            self.queries[query] = query_vector(self.inner, query)
        return self.queries[query]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if len(texts) > 1:  # indexing: no memo
            return self.inner.embed(texts)
        if texts[0] not in self.memo:
            self.memo[texts[0]] = self.inner.embed(texts)[0]
        return [self.memo[texts[0]]]


def load(name: str) -> list[dict[str, Any]]:
    return json.loads((QUERIES / f"{name}.json").read_text(encoding="utf-8"))["queries"]


def answered(hit: Any, answer: dict[str, str]) -> bool:
    return hit.source == answer["source"] and answer["heading"] in ("*", hit.heading)


def score(hits: Sequence[Any], answers: Sequence[dict[str, str]]) -> dict[str, float]:
    """recall@1/3/5/10, hit@5 and reciprocal rank for one query."""
    out: dict[str, float] = {}
    for k in (1, 3, 5, 10):
        found = sum(1 for a in answers if any(answered(h, a) for h in hits[:k]))
        out[f"r@{k}"] = found / len(answers)
    out["hit@5"] = float(out["r@5"] > 0)
    out["rr"] = next((1 / n for n, h in enumerate(hits[:K], 1) if any(answered(h, a) for a in answers)), 0.0)
    return out


def chars(memory: Any, hits: Sequence[Any]) -> float:
    """Characters spanned by the hits (their whole chunks)."""
    return float(sum(len(memory.expand(h.id).content) for h in hits))


def mean(rows: Sequence[dict[str, float]], key: str) -> float:
    return sum(r[key] for r in rows) / len(rows) if rows else 0.0


def evaluate(memory: Any, queries: list[dict[str, Any]], settings: dict[str, Any]) -> list[dict[str, Any]]:
    per_query = []
    for q in queries:
        hits = memory.search(q["query"], top_k=K, **settings)
        per_query.append(
            {
                "query": q["query"],
                "kind": q["kind"],
                **score(hits, q["answers"]),
                "chars@5": chars(memory, hits[:5]),
                "top": [f"{h.source}#{h.heading}" for h in hits[:3]],
            }
        )
    return per_query


def check_labels(memory: Any, queries: list[dict[str, Any]], name: str) -> None:
    """Every label must name a chunk that exists (a typo would silently lower every score)."""
    rows = list(memory.store.scan(["source", "heading"]))
    have = {(r["source"], r["heading"]) for r in rows} | {(r["source"], "*") for r in rows}
    missing = [(q["query"], a) for q in queries for a in q["answers"] if (a["source"], a["heading"]) not in have]
    if missing:
        raise SystemExit(f"{name}: labels that match no chunk: {missing}")


def run_set(
    memory: Any, set_name: str, queries: list[dict[str, Any]], names: list[str], details: dict[str, Any]
) -> list[dict[str, Any]]:
    check_labels(memory, queries, set_name)
    rows = []
    for name in names:
        per_query = evaluate(memory, queries, SETTINGS[name])
        details[f"{set_name}|{name}"] = per_query
        row = {
            "set": set_name,
            "setting": name,
            "model": memory.embedder.model_name,
            "queries": len(queries),
            **{k: mean(per_query, k) for k in METRICS},
            "mrr": mean(per_query, "rr"),
        }
        for kind in ("exact", "paraphrase", "date"):
            part = [p for p in per_query if p["kind"] == kind]
            if part:
                row[f"mrr_{kind}"] = mean(part, "rr")
                row[f"n_{kind}"] = len(part)
        rows.append(emit("quality", row))
    return rows


def combined(rows: list[dict[str, Any]], details: dict[str, Any], sets: list[str], names: list[str]) -> list[dict]:
    out = []
    for name in names:
        per_query = [p for s in sets for p in details[f"{s}|{name}"]]
        row = {
            "set": "all",
            "setting": name,
            "queries": len(per_query),
            **{k: mean(per_query, k) for k in METRICS},
            "mrr": mean(per_query, "rr"),
        }
        for kind in ("exact", "paraphrase", "date"):
            part = [p for p in per_query if p["kind"] == kind]
            row[f"mrr_{kind}"] = mean(part, "rr")
            row[f"n_{kind}"] = len(part)
        out.append(emit("quality", row))
    return out


def main(args: Any) -> None:
    from bench.common import bench_embedder, work_dir
    from bench.labelled import run_sets
    from bench.vector_cache import CachedEmbedder
    from bench.workspace import built, clone
    from memsearch_lsp.core.memory import Memory

    names = args.setting or (QUICK if args.quick else list(SETTINGS))
    unknown = [n for n in names if n not in SETTINGS]
    if unknown:
        raise SystemExit(f"unknown setting(s) {unknown}; known: {list(SETTINGS)}")
    embedder = MemoEmbedder(CachedEmbedder(bench_embedder(args), work_dir() / "vectors.sqlite"))
    details: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    sets: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-quality-") as tmp:
        ws = Path(tmp) / "examples"
        shutil.copytree(ROOT / "examples" / "memory", ws / "memory")
        with Memory(ws, embedder=embedder) as memory:
            memory.index()
            rows += run_set(memory, "examples", load("examples"), names, details)
            sets.append("examples")
        sizes = [args.chunks] if args.chunks else ([1000] if args.quick or args.set else [1000, 10000])
        for size in sizes:
            root, _ = built(size, args.seed, embedder=embedder.inner)
            work = clone(root, Path(tmp) / f"gen-{size}")  # a copy: Milvus Lite locks its folder
            with Memory(work, embedder=embedder) as memory:
                stats = memory.index()
                if stats.chunks_embedded:
                    log(f"quality: the cached index of {size} was stale ({stats})")
                rows += run_set(memory, f"generated-{size // 1000}k", load("generated"), names, details)
            sets.append(f"generated-{size // 1000}k")
    rows += combined(rows, details, sets, names)
    labelled = run_sets(
        [Path(d).expanduser().resolve() for d in args.set or []],
        embedder,
        {n: SETTINGS[n] for n in names},
        lsp=not args.no_lsp,
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "quality-details.json").write_text(json.dumps(details, indent=1))
    columns = [
        "set",
        "setting",
        "queries",
        "r@1",
        "r@3",
        "r@5",
        "r@10",
        "hit@1",
        "hit@3",
        "hit@5",
        "mrr@5",
        "chars@5",
        "mrr",
    ]
    table([*labelled, *rows], [*columns, "index_s", "p50_ms", "same_ranking"], "retrieval quality: every set")
    cats = sorted({k for r in labelled for k in r if k.startswith("r@5 cat")})
    if cats:
        table(labelled, ["set", "setting", *cats], "recall@5 per category (labelled workspaces)")
    table(
        [r for r in rows if r["set"] == "all"],
        ["setting", "mrr_exact", "mrr_paraphrase", "mrr_date"],
        "MRR per query kind (examples + generated)",
    )
