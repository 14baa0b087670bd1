"""Learned fusion: dump both legs' candidates of labelled sets once, then replay and train rankings offline.

`python -m bench fusion --set ../shared/eval/locomo-dev --set ../shared/eval/til-dev` indexes each
labelled workspace once (vectors from the SQLite cache, `vector_cache.py`), asks every question through the
store's two legs (`candidates` per leg, as `hybrid_search` does) and keeps, per candidate, what
`core/search/rank.py` sees: the dense cosine (best window), BM25, the share of the query's IDF mass the chunk
contains, the section and the span. The dump goes to `BENCH_WORK/fusion-<set>.json` and is reused until
deleted, so training and every variant below run in seconds without the model or Milvus.

It then prints every ranking variant on every set (the learned default, dense alone, BM25 alone, the
previous min-max default, the seed's weighted 0.7/0.3, RRF), the cross-validation of the learned fusion
(leave one workspace out, and one set out), and the weights to ship (`--fit` writes them to
`memsearch_lsp/core/search/rank.py`'s `LEARNED` line, which is what the product uses).
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import BENCH, ROOT, emit, log, table, work_dir

PER_LEG = 30
QUERIES = BENCH / "queries"


# -- dumping ------------------------------------------------------------------------------------
def dump_workspace(src: Path, tmp: Path, embedder: Any, per_leg: int = PER_LEG) -> list[dict[str, Any]]:
    """Index a private copy of `src` and return one record per labelled question, then one per unrelated
    query (bench/queries/unrelated.json; its `truth` is None)."""
    import shutil

    from bench.labelled import load_truth
    from memsearch_lsp.core.embedding import query_vector
    from memsearch_lsp.core.memory import Memory
    from memsearch_lsp.core.search.analyzer import Analyzer
    from memsearch_lsp.core.search.bm25 import query_terms, term_id
    from memsearch_lsp.core.search.hybrid import query_weights
    from memsearch_lsp.core.search.language import QUERY_SURE, candidate_languages, sure_language
    from memsearch_lsp.core.search.rank import Languages

    ws = tmp / src.name
    shutil.copytree(src / "memory", ws / "memory")
    truth = load_truth(ws, src)
    records = []
    with Memory(ws, embedder=embedder) as memory:
        memory.index()
        store = memory.store
        calibration = memory.embedder.calibration()
        asked = [(q["q"], truth.label(q)) for q in truth.questions] + [(u, None) for u in unrelated()]
        for text, label in asked:
            vector = query_vector(memory.embedder, text)
            analyzer = Analyzer(memory.config.search.language)
            terms = query_weights(store, text, analyzer)
            dense = store.dense_leg(vector, per_leg)
            sparse = store.sparse_leg(terms, per_leg)
            ids = list(dict.fromkeys([*dense, *sparse]))
            coverage = store.coverage(ids, terms)
            rows = {r.id: r for r in store.rows(ids)}
            langs = candidate_languages(analyzer, rows.values())
            sections = store.sections(ids)
            cands = {}
            for key in ids:
                row = rows[key]
                cands[key] = {
                    "source": row.source,
                    "start": row.start_line,
                    "end": row.end_line,
                    "section": list(sections.get(key, (row.source, ""))),
                    "cov": coverage.get(key, 0.0),
                    "lang": langs.get(key, ""),
                }
            n_terms = len({term_id(t) for t in query_terms(text)})
            records.append(
                {
                    "ws": src.name,
                    "q": text,
                    "dense": dense,
                    "sparse": sparse,
                    "cands": cands,
                    "idf": sorted(terms.values(), reverse=True),
                    "n_terms": n_terms,
                    "truth": label,
                    "calibration": [calibration.unrelated, calibration.related],
                    "reads": Languages(model=tuple(memory.embedder.languages)).reads(
                        analyzer.language_of(Analyzer.words(text), text)
                    ),
                    "lang": analyzer.language_of(Analyzer.words(text), text),
                    "lang_sure": sure_language(text, QUERY_SURE) == analyzer.language_of(Analyzer.words(text), text),
                    "languages": list(memory.embedder.languages),
                }
            )
        # chars of each candidate span, read once per source
        for rec in records:
            for c in rec["cands"].values():
                c["chars"] = truth.chars((c["source"], c["start"], c["end"]))
    memory.close()
    return records


def unrelated() -> list[str]:
    """Queries unrelated to every memory the benchmarks use (random words, off-topic questions)."""
    return list(json.loads((QUERIES / "unrelated.json").read_text(encoding="utf-8"))["queries"])


def dump(folder: Path, embedder: Any) -> list[dict[str, Any]]:
    """Every question of a labelled set with both legs' candidates (cached in BENCH_WORK)."""
    from bench.labelled import workspaces

    model = re.sub(r"\W+", "-", embedder.model_name)[-40:]
    path = work_dir() / f"fusion-v6-{folder.name}-{model}.json"
    if path.is_file():
        return list(json.loads(path.read_text()))
    records: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-fusion-") as tmp:
        for src in workspaces(folder):
            log(f"fusion: dumping {folder.name}/{src.name}")
            records += dump_workspace(src, Path(tmp), embedder)
    path.write_text(json.dumps(records))
    return records


# -- replay -------------------------------------------------------------------------------------
Ranker = Callable[[dict[str, Any]], list[str]]


def metrics(rec: dict[str, Any], order: Sequence[str]) -> dict[str, float]:
    """The set's own scoring (bench/labelled.py): recall@k and chars@5 for lines, MRR@5 for files."""
    from bench.labelled import score_spans

    spans = [(rec["cands"][k]["source"], rec["cands"][k]["start"], rec["cands"][k]["end"]) for k in order[:10]]
    out = score_spans(rec["truth"], spans)
    out["chars@5"] = float(sum(rec["cands"][k]["chars"] for k in order[:5]))
    return out


def evaluate(records: Sequence[dict[str, Any]], ranker: Ranker) -> dict[str, float]:
    rows = [metrics(r, ranker(r)) for r in records]
    keys = sorted({k for row in rows for k in row})
    return {k: sum(row.get(k, 0.0) for row in rows) / len(rows) for k in keys} if rows else {}


def product_ranker(**overrides: Any) -> Ranker:
    """The product's own ranking (core/search/rank.py `rank`, as `hybrid_search` calls it) with `overrides` of
    SearchConfig; a leg whose weight is 0 is not fetched, as in the product."""
    from dataclasses import replace

    from memsearch_lsp.config import SearchConfig
    from memsearch_lsp.core.search.rank import rank

    settings = replace(SearchConfig(), **overrides)
    rrf = settings.ranker == "rrf"

    def ranker(rec: dict[str, Any]) -> list[str]:
        cands = rec["cands"]
        dense = rec["dense"] if settings.vector_weight > 0 or rrf else {}
        sparse = rec["sparse"] if settings.bm25_weight > 0 or rrf or not dense else {}
        ids = list(dict.fromkeys([*dense, *sparse]))
        coverage = {k: cands[k]["cov"] for k in ids}
        sections = {k: tuple(cands[k]["section"]) for k in ids}
        ranked = rank(dense, sparse, coverage, lambda keys: sections, settings, calibration_of(rec), languages_of(rec))
        return [k for k, _ in ranked]

    return ranker


VARIANTS: dict[str, dict[str, Any]] = {
    "default: learned + min_score 0.25": {},
    "learned, no floor": {"min_score": 0.0},
    "dense only": {"ranker": "minmax", "vector_weight": 1.0, "bm25_weight": 0.0, "min_score": 0.0},
    "BM25 only": {"ranker": "minmax", "vector_weight": 0.0, "bm25_weight": 1.0, "min_score": 0.0},
    "minmax 0.3/0.7 + confidence (previous default)": {"ranker": "minmax", "min_score": 0.0},
    "minmax 0.7/0.3 + confidence": {"ranker": "minmax", "vector_weight": 0.7, "bm25_weight": 0.3, "min_score": 0.0},
    "weighted 0.7/0.3 (seed)": {"ranker": "weighted", "vector_weight": 0.7, "bm25_weight": 0.3, "min_score": 0.0},
    "rrf k=60": {"ranker": "rrf", "min_score": 0.0},
}


def languages_of(rec: dict[str, Any]) -> Any:
    """The languages of a record's query and candidates, and its model's (rank.Languages)."""
    from memsearch_lsp.core.search.rank import Languages

    model = tuple(rec.get("languages", ()))
    if "lang" not in rec:  # a dump before the languages were kept: the query's readability only
        return Languages(query="" if rec.get("reads", True) else "?", model=model or ("",))
    return Languages(rec["lang"], {k: c["lang"] for k, c in rec["cands"].items()}, model, rec.get("lang_sure", True))


def calibration_of(rec: dict[str, Any]) -> Any:
    """The calibration of the embedder a record was dumped with (the bundled model's scale when not recorded)."""
    from memsearch_lsp.core.embedding import REFERENCE, Calibration

    return Calibration(*rec["calibration"]) if "calibration" in rec else REFERENCE


# -- fitting ------------------------------------------------------------------------------------
GRID = {
    "t_dense": (0.03, 0.04, 0.05),
    "g_bm25": (0.3, 0.4, 0.5, 0.65),
    "t_bm25": (0.2, 0.25, 0.3),
    "c_coverage": (0.16, 0.2, 0.25, 0.3),
    "k_cover": (0.5, 0.6, 0.7, 0.8, 0.9),
}
SHORTFALL = 10.0  # fit: the cost of a point under a set's baseline, against 0.2 for a point gained
CHARS_BUDGET = 6450  # chars@5 on a line-labelled set above this costs the objective (target <= 6,500)


class Compiled:
    """One question as arrays for fast replays of the `learned` formula (numpy, no dicts)."""

    def __init__(self, rec: dict[str, Any]):
        from memsearch_lsp.core.search.rank import calibrated, confidence, minmax, top_coverage

        dense, sparse, cands = calibrated(rec["dense"], calibration_of(rec)), rec["sparse"], rec["cands"]
        self.ids = ids = list(dict.fromkeys([*dense, *sparse]))
        languages = languages_of(rec)
        readable = languages.readable(dense)
        # the language rules of rank.learned: BM25 alone (the model cannot read), the dense leg alone (its best is
        # in another language than the question), or the formula
        self.mode = (
            "bm25"
            if dense and (not readable or not languages.reads(languages.query))
            else "dense"
            if readable and languages.elsewhere(max(readable, key=lambda k: readable[k]))
            else "fused"
        )
        d, s = minmax(readable), minmax(sparse)
        self.dn = np.array([d.get(k, 0.0) for k in ids])
        self.bn = np.array([s.get(k, 0.0) for k in ids])
        self.cov = np.array([cands[k]["cov"] for k in ids])
        self.conf = (confidence(readable), confidence(sparse))
        self.top_cov = top_coverage(sparse, {k: cands[k]["cov"] for k in ids})
        sections: dict[Any, int] = {}
        self.section = np.array([sections.setdefault(tuple(cands[k]["section"]), len(sections)) for k in ids])
        self.n_sections = len(sections)
        self.chars = np.array([cands[k]["chars"] for k in ids], dtype=float)
        # tie-break as fuse(): BM25, then dense, then id
        self.tie = np.lexsort(
            (np.array(ids), -np.array([dense.get(k, -1e9) for k in ids]), -np.array([sparse.get(k, -1e9) for k in ids]))
        )
        truth = rec["truth"]
        self.files = "files" in truth
        if self.files:
            self.good = np.array(
                [
                    [any(cands[k]["source"] == f or cands[k]["source"].endswith("/" + f) for f in truth["files"])]
                    for k in ids
                ]
            )
        else:
            self.good = np.array(
                [
                    [
                        cands[k]["source"] == src and cands[k]["start"] <= line <= cands[k]["end"]
                        for src, line in truth["evidence"]
                    ]
                    for k in ids
                ]
            ).reshape(len(ids), -1)

    def score(self, weights: Sequence[float]) -> tuple[float, float]:
        """(the set's metric: MRR@5 or recall@5, chars@5) of the learned ranking with `weights`."""
        from memsearch_lsp.core.search.rank import MIN_WEIGHT, SECTION_SHARE

        t_dense, g_bm25, t_bm25, c_cov, k_cover = weights
        if self.mode == "fused":
            wd = max(MIN_WEIGHT, self.conf[0] - t_dense)
            wb = max(MIN_WEIGHT, g_bm25 * (self.conf[1] - t_bm25)) * min(1.0, self.top_cov / k_cover)
        else:
            wd, wb, c_cov = float(self.mode == "dense"), float(self.mode == "bm25"), 0.0
        fused = (wd * self.dn + (wb + c_cov * self.cov) * self.bn)[self.tie]
        best = np.full(self.n_sections, -np.inf)
        np.maximum.at(best, self.section[self.tie], fused)
        shared = (fused + SECTION_SHARE * best[self.section[self.tie]]) / (1 + SECTION_SHARE)
        top = self.tie[np.argsort(-shared, kind="stable")[:5]]
        good = self.good[top]
        if self.files:
            hits = np.flatnonzero(good[:, 0])
            return (1.0 / (hits[0] + 1) if hits.size else 0.0), float(self.chars[top].sum())
        return float(good.any(axis=0).sum() / max(good.shape[1], 1)), float(self.chars[top].sum())


def set_score(questions: Sequence[Compiled], weights: Sequence[float]) -> tuple[float, float]:
    scores = [q.score(weights) for q in questions]
    return float(np.mean([s for s, _ in scores])), float(np.mean([c for _, c in scores]))


def fit(train: dict[str, list[Compiled]], baselines: dict[str, float]) -> tuple[tuple[float, ...], float]:
    """The grid point (GRID) that maximises the summed shortfalls under each set's baseline (x SHORTFALL: a set
    where the fusion falls below its better leg costs far more than another gains; x sqrt(questions / 50): a
    shortfall on 1,152 questions is surer than one on 50), plus a fifth of the summed
    scores; every 500 chars@5 over CHARS_BUDGET on a line-labelled set costs 1.0. (The worse margin alone, the
    objective before, is held by a set no weighting moves: the English model's answers to Portuguese questions
    are BM25's whatever the weights.)"""
    import itertools

    best: tuple[float, tuple[float, ...]] = (-math.inf, ())
    for weights in itertools.product(*GRID.values()):
        margins, total, penalty = [], 0.0, 0.0
        for name, questions in train.items():
            value, chars = set_score(questions, weights)
            # a shortfall measured on many questions is surer than one on few: weighed by sqrt(questions / 50)
            margins.append(min(0.0, value - baselines[name]) * math.sqrt(len(questions) / 50))
            total += value
            if not questions[0].files:
                penalty += max(0.0, chars - CHARS_BUDGET) / 500
        objective = SHORTFALL * sum(margins) + 0.2 * total - penalty
        if objective > best[0]:
            best = (objective, weights)
    return best[1], best[0]


# The learned fusion as issue 24 shipped it (no coverage scaling: k_cover ~ 0), a baseline to hold.
ISSUE_24 = (0.05, 0.5, 0.25, 0.16, 1e-9)


def baseline(records: Sequence[dict[str, Any]]) -> float:
    """The figure a fusion must reach on a set: the best of dense alone, BM25 alone, the minmax default before
    and the learned fusion of issue 24."""
    key = "mrr@5" if "files" in records[0]["truth"] else "r@5"
    legs = (
        evaluate(records, product_ranker(**VARIANTS[name]))[key]
        for name in ("dense only", "BM25 only", "minmax 0.3/0.7 + confidence (previous default)")
    )
    return max(*legs, set_score([Compiled(r) for r in records], ISSUE_24)[0])


def cross_validate(sets: dict[str, list[dict[str, Any]]], folds_per_set: int = 5) -> list[dict[str, Any]]:
    """Leave one group out: a workspace (a conversation) where a set has several, else one of
    `folds_per_set` slices of its questions; the fit sees every other group of every set."""
    groups: list[tuple[str, str, list[int]]] = []
    for name, records in sets.items():
        spaces = sorted({r["ws"] for r in records})
        if len(spaces) > 1:
            groups += [(name, ws, [i for i, r in enumerate(records) if r["ws"] == ws]) for ws in spaces]
        else:
            groups += [
                (name, f"fold {k + 1}/{folds_per_set}", list(range(k, len(records), folds_per_set)))
                for k in range(folds_per_set)
            ]
    compiled = {name: [Compiled(r) for r in records] for name, records in sets.items()}
    rows = []
    for name, group, held in groups:
        keep = set(held)
        train_records = {n: [r for i, r in enumerate(recs) if n != name or i not in keep] for n, recs in sets.items()}
        train = {n: [c for i, c in enumerate(cs) if n != name or i not in keep] for n, cs in compiled.items()}
        weights, _ = fit(train, {n: baseline(rs) for n, rs in train_records.items()})
        test = [compiled[name][i] for i in held]
        value, chars = set_score(test, weights)
        rows.append(
            {
                "set": name,
                "held out": group,
                "queries": len(test),
                "weights": list(weights),
                "learned": value,
                "chars@5": chars,
                **{
                    v: evaluate([sets[name][i] for i in held], product_ranker(**VARIANTS[v]))[
                        "mrr@5" if test[0].files else "r@5"
                    ]
                    for v in ("dense only", "BM25 only", "minmax 0.3/0.7 + confidence (previous default)")
                },
            }
        )
        log(f"fusion cv: {name} {group}: {rows[-1]['learned']:.4f} with {weights}")
    return rows


def write_weights(weights: Sequence[float]) -> None:
    """Replace the `LEARNED = (...)` line of core/search/rank.py (the weights the product ships)."""
    path = ROOT / "memsearch_lsp" / "core" / "search" / "rank.py"
    text = path.read_text(encoding="utf-8")
    line = f"LEARNED = ({', '.join(f'{w:g}' for w in weights)})"
    path.write_text(re.sub(r"^LEARNED = \(.*\)$", line, text, count=1, flags=re.M), encoding="utf-8")
    log(f"fusion: wrote {line} to {path}")


def embedders(args: Any) -> list[Any]:
    """The embedder of the flags (the bundled model by default), then one per `--with-model` (the same settings,
    another embedding.model), each behind the benchmark's vector cache."""
    from dataclasses import replace

    from bench.common import bench_embedder, embedding_settings
    from bench.quality import MemoEmbedder
    from bench.vector_cache import CachedEmbedder
    from memsearch_lsp.core.embedding import create_embedder

    inner = [bench_embedder(args)]
    base = embedding_settings(args)
    inner += [create_embedder(replace(base, model=model), root=ROOT) for model in args.with_model or []]
    return [MemoEmbedder(CachedEmbedder(e, work_dir() / "vectors.sqlite")) for e in inner]


def short(embedder: Any) -> str:
    """A model's short name for the tables: the part after the last '/', before any '@' or '-q4'."""
    return str(embedder.model_name).rsplit("/", 1)[-1].split("@")[0].removesuffix("-q4")


def leave_one_set_out(groups: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each development set held out in turn (with every model's dump of it): the learned weights fitted on the
    other sets' groups (`set@model`), then scored on the held-out groups beside that group's legs alone."""
    compiled = {name: [Compiled(r) for r in records] for name, records in groups.items()}
    baselines = {name: baseline(records) for name, records in groups.items()}
    rows = []
    for held in sorted({name.split("@")[0] for name in groups}):
        train = {n: c for n, c in compiled.items() if n.split("@")[0] != held}
        weights, _ = fit(train, {n: baselines[n] for n in train})
        for name in (n for n in groups if n.split("@")[0] == held):
            value, chars = set_score(compiled[name], weights)
            key = "mrr@5" if compiled[name][0].files else "r@5"
            legs = {v: evaluate(groups[name], product_ranker(**VARIANTS[v]))[key] for v in ("dense only", "BM25 only")}
            rows.append({"held out": name, "weights": list(weights), "learned": value, "chars@5": chars, **legs})
            log(f"fusion loso: {name}: {value:.4f} with {weights} (legs {legs})")
    return rows


def main(args: Any) -> None:
    folders = [Path(d).expanduser().resolve() for d in args.set or []]
    if not folders:
        raise SystemExit("fusion: name the labelled sets with --set DIR (e.g. ../shared/eval/til-dev)")
    dumped = {f"{f.name}@{short(e)}": dump(f, e) for e in embedders(args) for f in folders}
    sets = {name: [r for r in records if r["truth"] is not None] for name, records in dumped.items()}
    if args.calibrate:
        from memsearch_lsp.core.embedding.calibration import score

        for e in embedders(args):
            log(f"fusion: {e.model_name} on the calibration probe: {score(e.embed, e.embed_query)}")
    if args.fit:
        compiled = {name: [Compiled(r) for r in records] for name, records in sets.items()}
        weights, objective = fit(compiled, {name: baseline(records) for name, records in sets.items()})
        log(f"fusion: fitted {weights} (objective {objective:.4f})")
        write_weights(weights)
        import importlib

        import memsearch_lsp.core.search.rank

        importlib.reload(memsearch_lsp.core.search.rank)
    rows = []
    for name, overrides in VARIANTS.items():
        for set_name, records in sets.items():
            unrelated_records = [r for r in dumped[set_name] if r["truth"] is None]
            ranker = product_ranker(**overrides)
            empty = sum(not ranker(r) for r in unrelated_records)
            rows.append(
                emit(
                    "fusion",
                    {
                        "setting": name,
                        "set": set_name,
                        "queries": len(records),
                        **evaluate(records, ranker),
                        "unrelated empty": f"{empty}/{len(unrelated_records)}",
                    },
                )
            )
    table(
        rows,
        ["set", "setting", "queries", "r@1", "r@5", "r@10", "hit@1", "hit@3", "mrr@5", "chars@5", "unrelated empty"],
        "fusion variants (offline replay of the product's legs)",
    )
    if args.cv:
        loso = [emit("fusion-loso", row) for row in leave_one_set_out(sets)]
        table(
            loso,
            ["held out", "weights", "learned", "dense only", "BM25 only", "chars@5"],
            "learned fusion, leave one set out (fitted on the other sets, every model)",
        )
        cv = [emit("fusion-cv", row) for row in cross_validate(sets)]
        table(
            cv,
            [
                "set",
                "held out",
                "queries",
                "weights",
                "learned",
                "dense only",
                "BM25 only",
                "minmax 0.3/0.7 + confidence (previous default)",
                "chars@5",
            ],
            "learned fusion, leave one group out (fitted without it)",
        )
        for name in sets:
            part = [r for r in cv if r["set"] == name]
            n = sum(r["queries"] for r in part)
            pooled = {
                k: sum(r[k] * r["queries"] for r in part) / n
                for k in (
                    "learned",
                    "dense only",
                    "BM25 only",
                    "minmax 0.3/0.7 + confidence (previous default)",
                    "chars@5",
                )
            }
            emit("fusion-cv-pooled", {"set": name, **pooled})
            log(f"fusion cv pooled {name}: " + ", ".join(f"{k} {v:.4f}" for k, v in pooled.items()))
