"""Fusion of the dense and BM25 legs into one ranking, and the relevance floor (pure: scores in, ids out).

Each leg gives its best candidates as `{id: score}`: cosine similarity for the dense leg (a chunk's
best window), BM25 for the other; `coverage` gives each candidate's share of the query's IDF mass (the
query terms it contains, weighted by IDF: 1.0 = every term). Rankers (`search.ranker`):

- `learned` (default): which leg to trust depends on the query. A question in a person's own words
  about a note ("move my commit to a new branch") shares few terms with it: the dense leg picks one
  chunk clearly and BM25 is flat; a question about a conversation ("What did Nate say about his
  dog?") names its terms and BM25 is sure. So each leg's weight is how far that leg's own confidence
  (the relative gap between its best score and the one five places below, `confidence`) rises above a
  threshold; BM25's weight shrinks when its best candidate holds little of the query (`top_coverage`: a
  question in other words than the note's, or in another language, matches a few common words at best)
  and grows per candidate with how much of the query that candidate covers:

      score = max(m, conf_dense - T_DENSE) x dense'
              + (max(m, G_BM25 x (conf_bm25 - T_BM25)) x min(1, top_coverage / K) + C x coverage) x bm25'

  where dense' and bm25' are each leg's scores rescaled to 0..1 over its candidates (0 where a
  candidate is missing from a leg) and m = MIN_WEIGHT keeps a weak leg as a tie-breaker. The dense leg's
  cosines are first read on the bundled model's scale (`calibrated`, the embedder's Calibration), so its
  confidence means the same for every model. Three rules on languages (`Languages`: the query's and each
  candidate's, as core/search/analyzer.py detects them, and the ones the model reads) come first:
  a model that cannot read the query's language (the English bundled model asked in Portuguese) gets no say,
  and BM25 ranks alone; nor has it a say on a candidate written in a language it cannot read (its cosine
  with a Portuguese note is noise); and when a model's best candidate is written in another language than the
  query, the dense leg ranks alone, since BM25 matches words and cannot see a note in another language (a
  question in Spanish about a Portuguese note finds only the Spanish notes that share some of its words). The
  five numbers in
  `LEARNED` (T_DENSE, G_BM25, T_BM25, C, K) were fitted by `python -m bench fusion --fit` on three labelled
  development sets of different styles (conversations, where BM25 alone beats dense alone; notes asked about
  in a user's words, where dense alone wins; a memory in Portuguese, Spanish, German and Chinese asked in
  those languages) with the bundled model, and the multilingual set with multilingual-e5-small too: a grid
  search that charges every point a set falls under its best baseline (either leg alone, the previous
  defaults) ten times what a point gained earns, checked by leaving each set out of the fit in turn;
  bench/README.md ("Issue 36") has the figures. Five numbers, every one with a meaning, so the fit cannot
  learn a set's layout: the features are the legs' scores, their confidence and term coverage only.
  `search.vector_weight` / `search.bm25_weight` only switch a leg on (> 0) or off here.
- `minmax` (the default before): each leg rescaled to 0..1 over its candidates, then weighted, each
  weight grown by its leg's confidence (x (1 + gain x confidence), `DENSE_GAIN`, `BM25_GAIN`).
- `weighted`: what Milvus' `WeightedRanker` does: cosine as (1 + c) / 2, BM25 as 0.5 + atan(s) / pi,
  weighted; the seed design's 0.7 / 0.3 is this ranker.
- `rrf`: reciprocal rank fusion, sum of 1 / (k + rank) over the legs a candidate is in.

With `learned` and `minmax` a heading section longer than a chunk is cut into pieces: they are one unit of
meaning, so each piece also gets a share of its section's best score (`share_sections`), and the rest
of a section whose best piece matched is not left behind.

The fused scores order the hits of one search and say nothing about relevance across queries (the best
hit of an unrelated query can score as high as any). What does is `relevance`, 0..1: (2 x the candidate's
dense cosine on the bundled model's scale + its term coverage) / 3, both absolute, a function of the
candidates and the embedder's calibration only, never of the ranker or the legs' weights (a cosine the model
cannot read counts as UNKNOWN, halfway between its unrelated and related levels: the terms decide);
`search.min_score` (0.25) drops hits below it,
so a query that matches nothing in the memory returns nothing with any model (bench/README.md, "Issue 36": the
unrelated queries of bench/queries/unrelated.json over each development set, with either model).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memsearch_lsp.core.embedding.base import REFERENCE, Calibration

if TYPE_CHECKING:
    from memsearch_lsp.config import SearchConfig

RANKERS = ("learned", "minmax", "weighted", "rrf")
Scores = Mapping[str, float]
DENSE_GAIN = 3.0  # minmax: a leg's weight x (1 + gain x its confidence); see bench/README.md
BM25_GAIN = 1.0
CONFIDENCE_RANK = 5  # the gap is measured from the best score to the one this many places below
SECTION_SHARE = 0.3  # a piece of a split section also gets this share of the section's best score
# learned: (T_DENSE, G_BM25, T_BM25, C, K), written by `python -m bench fusion --fit` (bench/README.md)
LEARNED = (0.04, 0.5, 0.25, 0.2, 0.9)
MIN_WEIGHT = 0.02  # learned: the least weight a leg keeps (a tie-breaker when the other leg is sure)
# relevance: the cosine of a text the model cannot read, on the bundled model's scale: neither level
UNKNOWN = (REFERENCE.unrelated + REFERENCE.related) / 2


@dataclass(frozen=True)
class Languages:
    """What the fusion knows of languages (core/search/analyzer.py detects them): the query's, each candidate's
    (`of`), and the ones the embedding model reads (`model`; () = every language). The default knows nothing and
    changes nothing."""

    query: str = ""
    of: Mapping[str, str] = field(default_factory=dict)
    model: tuple[str, ...] = ()
    sure: bool = True  # the query's language is sure (a question, not a few keywords that say nothing of it)

    def reads(self, language: str) -> bool:
        """Whether the model reads text in `language` ("": not known, read)."""
        return not self.model or not language or language in self.model

    def readable(self, dense: Scores) -> dict[str, float]:
        """The dense leg without the candidates written in a language the model cannot read (their cosines are
        noise: an English model's with a Portuguese note)."""
        return {k: v for k, v in dense.items() if self.reads(self.of.get(k, ""))}

    def elsewhere(self, key: str) -> bool:
        """Whether candidate `key` is written in another language than the query (BM25 cannot match it)."""
        found = self.of.get(key, "")
        return bool(self.sure and self.query and found and found != self.query)


NOWHERE = Languages()


def minmax(scores: Scores) -> dict[str, float]:
    """Scores rescaled to 0..1 over the candidates (all 1 when they are equal)."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    span = high - low
    return {k: (v - low) / span if span > 0 else 1.0 for k, v in scores.items()}


def confidence(scores: Scores, rank: int = CONFIDENCE_RANK) -> float:
    """How far the best score stands above the one `rank` places below (or the last), relative to the
    best: 0 (a flat leg) .. 1."""
    ordered = sorted(scores.values(), reverse=True)
    if len(ordered) < 2 or ordered[0] <= 0:
        return 0.0
    other = ordered[min(rank, len(ordered) - 1)]
    return min(1.0, max(0.0, (ordered[0] - other) / ordered[0]))


def ranks(scores: Scores) -> dict[str, int]:
    """1-based rank of each candidate, best first (ties keep the leg's order)."""
    order = sorted(scores, key=lambda k: -scores[k])
    return {k: n for n, k in enumerate(order, 1)}


def _weighted(
    dense: Scores,
    sparse: Scores,
    vector_weight: float,
    bm25_weight: float,
    norm_dense: Callable[[float], float],
    norm_sparse: Callable[[float], float],
) -> dict[str, float]:
    fused: dict[str, float] = {}
    for scores, weight, norm in ((dense, vector_weight, norm_dense), (sparse, bm25_weight, norm_sparse)):
        for key, value in scores.items():
            fused[key] = fused.get(key, 0.0) + weight * norm(value)
    return fused


def learned(
    dense: Scores,
    sparse: Scores,
    coverage: Scores,
    weights: tuple[float, float, float, float, float] = LEARNED,
    languages: Languages = NOWHERE,
) -> dict[str, float]:
    """The `learned` fused score of every candidate of both legs (see the module docstring). `languages`: a model
    that cannot read the query's language (an English model asked in Portuguese) leaves the order to BM25 (the
    dense leg only breaks its ties); nor a candidate's (`Languages.readable`); when the dense leg's best candidate
    is written in another language than the query, BM25 (which matches words) cannot see it and keeps its least
    weight: the dense leg decides."""
    readable = languages.readable(dense)
    if dense and (not readable or not languages.reads(languages.query)):
        return {**dict.fromkeys(dense, 0.0), **minmax(sparse)}
    if readable and languages.elsewhere(max(readable, key=lambda k: readable[k])):
        return {**dict.fromkeys(sparse, 0.0), **dict.fromkeys(dense, 0.0), **minmax(readable)}
    t_dense, g_bm25, t_bm25, c_coverage, k_cover = weights
    dense_weight = max(MIN_WEIGHT, confidence(readable) - t_dense)
    covered = min(1.0, top_coverage(sparse, coverage) / k_cover) if coverage else 1.0  # (not given: no say)
    bm25_weight = max(MIN_WEIGHT, g_bm25 * (confidence(sparse) - t_bm25)) * covered
    d, s = minmax(readable), minmax(sparse)
    return {
        key: dense_weight * d.get(key, 0.0) + (bm25_weight + c_coverage * coverage.get(key, 0.0)) * s.get(key, 0.0)
        for key in {**dense, **s}
    }


def top_coverage(sparse: Scores, coverage: Scores) -> float:
    """The share of the query's IDF mass that BM25's best candidate contains (0 without one)."""
    return coverage.get(max(sparse, key=lambda k: sparse[k]), 0.0) if sparse else 0.0


def calibrated(dense: Scores, calibration: Calibration = REFERENCE) -> dict[str, float]:
    """The dense leg's cosines read on the bundled model's scale (core/embedding/base.py Calibration), so the
    confidences and the relevance below mean the same for every model."""
    if calibration == REFERENCE:
        return dict(dense)
    return {key: calibration(value) for key, value in dense.items()}


def relevance(
    dense: Scores, coverage: Scores, calibration: Calibration = REFERENCE, languages: Languages = NOWHERE
) -> dict[str, float]:
    """An absolute relevance of each candidate, 0..1: (2 x its dense cosine on the bundled model's scale + its
    term coverage) / 3: 0.05-0.25 for the best chunk of an unrelated query, 0.3-0.8 for what answers a question.
    `dense`: the leg's raw cosines, read through the embedder's `calibration`. A candidate the dense leg did not
    return gets that leg's lowest cosine (its own is no higher); with no dense leg (the query could not be embedded:
    a leg weighted 0 still gives its cosines here) the coverage alone decides. Where the model cannot read the query
    or the candidate (`languages`), its cosine says nothing either way: it counts as UNKNOWN, halfway between the
    calibration's unrelated and related levels, and the terms the candidate shares with the query decide."""
    if not dense:
        return {key: min(1.0, max(0.0, value)) for key, value in coverage.items()}
    scaled = calibrated(dense, calibration)
    floor = min(scaled.values())
    blind = not languages.reads(languages.query)

    def cosine(key: str) -> float:
        return UNKNOWN if blind or not languages.reads(languages.of.get(key, "")) else scaled.get(key, floor)

    return {
        key: min(1.0, max(0.0, (2.0 * cosine(key) + coverage.get(key, 0.0)) / 3.0)) for key in {**scaled, **coverage}
    }


def fuse(
    dense: Scores,
    sparse: Scores,
    ranker: str = "learned",
    vector_weight: float = 0.5,
    bm25_weight: float = 0.5,
    rrf_k: int = 60,
    coverage: Scores | None = None,
    languages: Languages = NOWHERE,
) -> list[tuple[str, float]]:
    """All candidates of both legs, best first, with their fused score (`coverage`, `languages`: for `learned`)."""
    fused: dict[str, float]
    if ranker == "learned":
        fused = learned(dense, sparse, coverage or {}, languages=languages)
    elif ranker == "rrf":
        fused = {}
        for leg in (dense, sparse):
            for key, rank in ranks(leg).items():
                fused[key] = fused.get(key, 0.0) + 1.0 / (rrf_k + rank)
    elif ranker == "weighted":
        fused = _weighted(
            dense, sparse, vector_weight, bm25_weight, lambda c: (1.0 + c) * 0.5, lambda s: 0.5 + math.atan(s) / math.pi
        )
    elif ranker == "minmax":
        d, s = minmax(dense), minmax(sparse)
        dense_weight = vector_weight * (1.0 + DENSE_GAIN * confidence(dense))
        sparse_weight = bm25_weight * (1.0 + BM25_GAIN * confidence(sparse))
        # Rescaled to the configured weights' sum, so a fused score stays within 0..(vector + bm25 weight).
        total = dense_weight + sparse_weight
        scale = (vector_weight + bm25_weight) / total if total > 0 else 1.0
        fused = _weighted(d, s, dense_weight * scale, sparse_weight * scale, float, float)
    else:
        raise ValueError(f"unknown ranker {ranker!r}; expected one of {', '.join(RANKERS)}")
    # Best first; ties go to the chunk that is better in BM25, then dense, then by id (deterministic).
    return sorted(
        fused.items(), key=lambda kv: (-kv[1], -sparse.get(kv[0], -math.inf), -dense.get(kv[0], -math.inf), kv[0])
    )


def share_sections(
    ranked: Sequence[tuple[str, float]], section: Mapping[str, Hashable], share: float = SECTION_SHARE
) -> list[tuple[str, float]]:
    """Pieces of one section (`section`: candidate -> its source and heading path) also score `share` of
    the section's best piece: (score + share x best) / (1 + share), so a chunk that is its section's best
    (or a whole section) keeps its score and the order of whole sections is unchanged. Best first; ties
    keep `ranked`'s order."""
    best: dict[Hashable, float] = {}
    for key, score in ranked:
        unit = section.get(key, key)
        best[unit] = max(best.get(unit, score), score)
    shared = [(key, (score + share * best[section.get(key, key)]) / (1.0 + share)) for key, score in ranked]
    order = {key: n for n, (key, _) in enumerate(ranked)}
    return sorted(shared, key=lambda kv: (-kv[1], order[kv[0]]))


def rank(
    dense: Scores,
    sparse: Scores,
    coverage: Scores,
    sections: Callable[[list[str]], Mapping[str, Hashable]],
    settings: SearchConfig,
    calibration: Calibration = REFERENCE,
    languages: Languages = NOWHERE,
    said: Scores | None = None,
    cosines: Scores | None = None,
) -> list[tuple[str, float]]:
    """What a search ranks: both legs fused by `settings.ranker` (the dense leg's cosines read through the
    embedder's `calibration`), split sections sharing their best score (`learned`, `minmax`; `sections` looks up
    the candidates' section), hits under `settings.min_score` (`relevance` of the coverage `said`, `coverage` when
    None, and of the dense leg's `cosines`, `dense` when None: a leg weighted 0 ranks nothing and still tells the
    relevance) left out. Best first. `languages`: the query's and the candidates' languages, and the model's
    (`learned`)."""
    raw, dense = dense, calibrated(dense, calibration)
    ranked = fuse(
        dense,
        sparse,
        settings.ranker,
        settings.vector_weight,
        settings.bm25_weight,
        settings.rrf_k,
        coverage,
        languages,
    )
    if settings.ranker in ("learned", "minmax") and len(ranked) > 1:
        ranked = share_sections(ranked, sections([k for k, _ in ranked]))
    if settings.min_score > 0:
        relevant = relevance(
            raw if cosines is None else cosines, coverage if said is None else said, calibration, languages
        )
        ranked = [(k, v) for k, v in ranked if relevant.get(k, 0.0) >= settings.min_score]
    return ranked
