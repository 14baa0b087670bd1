"""Fusion of the dense and BM25 legs into one ranking (pure: scores in, ranked ids out).

Each leg gives its best candidates as `{id: score}`: cosine similarity for the dense leg (a chunk's
best window), BM25 for the other. Rankers:

- `minmax` (default): each leg is rescaled over its own candidates so its best is 1 and its worst 0,
  then the two are weighted; a candidate missing from a leg gets 0 there. BM25's margin survives
  (a chunk far ahead of the rest stays far ahead) and neither leg dominates by its scale. Rescaling
  also hides how sure a leg is, so each leg's weight grows with its own confidence: the relative gap
  between its best score and the one five places below (`confidence`), times `DENSE_GAIN` or
  `BM25_GAIN`. A query whose meaning picks one chunk clearly (a paraphrase) leans on dense; a flat
  dense leg (chatty text where every chunk looks alike) leaves the ranking to BM25.
  A heading section longer than a chunk is cut into pieces: they are one unit of meaning, so each piece
  also gets a share of its section's best score (`share_sections`), and the rest of a section whose
  best piece matched is not left behind.
- `weighted`: what Milvus' `WeightedRanker` does: cosine as (1 + c) / 2, BM25 as 0.5 + atan(s) / pi,
  weighted; the seed design's 0.7 / 0.3 is this ranker.
- `rrf`: reciprocal rank fusion, sum of 1 / (k + rank) over the legs a candidate is in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence

RANKERS = ("minmax", "weighted", "rrf")
Scores = Mapping[str, float]
DENSE_GAIN = 3.0  # minmax: a leg's weight x (1 + gain x its confidence); see bench/README.md
BM25_GAIN = 1.0
CONFIDENCE_RANK = 5  # the gap is measured from the best score to the one this many places below
SECTION_SHARE = 0.3  # minmax: a piece of a split section also gets this share of the section's best score


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


def _weighted(dense: Scores, sparse: Scores, vector_weight: float, bm25_weight: float,
              norm_dense: Callable[[float], float], norm_sparse: Callable[[float], float],
              ) -> dict[str, float]:
    fused: dict[str, float] = {}
    for scores, weight, norm in ((dense, vector_weight, norm_dense), (sparse, bm25_weight, norm_sparse)):
        for key, value in scores.items():
            fused[key] = fused.get(key, 0.0) + weight * norm(value)
    return fused


def fuse(dense: Scores, sparse: Scores, ranker: str = "minmax", vector_weight: float = 0.5,
         bm25_weight: float = 0.5, rrf_k: int = 60) -> list[tuple[str, float]]:
    """All candidates of both legs, best first, with their fused score."""
    if ranker == "rrf":
        fused: dict[str, float] = {}
        for leg in (dense, sparse):
            for key, rank in ranks(leg).items():
                fused[key] = fused.get(key, 0.0) + 1.0 / (rrf_k + rank)
    elif ranker == "weighted":
        fused = _weighted(dense, sparse, vector_weight, bm25_weight,
                          lambda c: (1.0 + c) * 0.5, lambda s: 0.5 + math.atan(s) / math.pi)
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
    return sorted(fused.items(), key=lambda kv: (-kv[1], -sparse.get(kv[0], -math.inf),
                                                  -dense.get(kv[0], -math.inf), kv[0]))


def share_sections(ranked: Sequence[tuple[str, float]], section: Mapping[str, Hashable],
                   share: float = SECTION_SHARE) -> list[tuple[str, float]]:
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
