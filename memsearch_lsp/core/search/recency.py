"""Newer first among near-duplicates: a note that a later one restates (a value changed since) gives way to it.

Agent memory is full of "we moved from X to Y": the older note and the one that replaced it are about the same
thing, and which of them the fusion puts first is a coin toss on wording (the older one often repeats the
question's words). The ranking says nothing of time, so among hits that are near-duplicates of each other with
near-equal scores, the newer one comes first:

- a hit moves up past the hits directly above it that are older (a note without a date, such as MEMORY.md, counts
  as older than any dated log), score within NEAR of it (fused score, relative) and are the same thing: their
  chunk vectors' cosine is at least SAME_VECTOR and they hold the same query terms (IDF-weighted Jaccard of the
  query terms each contains at least SAME_TERMS);
- it takes the score of the hit it passes (so the order and the scores agree), and every relevance (`score`, what
  `min_score` compares) is left as it is.

Hits that are not near-duplicates, or whose scores differ by more, keep their order; so do hits of the same day.
The three numbers were chosen on a set of "what is the current value" questions over agent logs and checked on the
development sets (bench/README.md, "Recency"): looser ones (a wider margin, a lower cosine) also reorder
conversations whose older session holds the answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from memsearch_lsp.core.search.filters import source_date
from memsearch_lsp.core.store import Store
from memsearch_lsp.core.store.schema import Row

NEAR = 0.05  # a newer hit scoring at least (1 - NEAR) x an older one above it may pass it
SAME_VECTOR = 0.75  # the two chunks' vectors: cosine at least this
SAME_TERMS = 0.8  # the query terms each holds (IDF-weighted): Jaccard at least this


def date_of(row: Row) -> str:
    """A row's day (YYYY-MM-DD) or "" (undated: MEMORY.md and other notes)."""
    return row.date or source_date(row.source) or ""


def newer(a: str, b: str) -> bool:
    """Day `a` is later than day `b` ("" = undated, earlier than any day)."""
    return bool(a) and a > b


def newer_first(
    store: Store, rows: Sequence[Row], scores: Mapping[str, float], terms: Mapping[int, float]
) -> tuple[list[Row], dict[str, float]]:
    """`rows` (best first, with their fused `scores`) where each row that is a newer near-duplicate of the rows
    directly above it, within NEAR of their scores, is moved above them (module docstring). `terms`: the query's
    terms (term id -> IDF). The rows and the scores, as given when nothing moves."""
    days = {r.id: date_of(r) for r in rows}
    if len(rows) < 2 or len(set(days.values())) < 2:
        return list(rows), dict(scores)
    close = [
        (r, o)
        for n, r in enumerate(rows)
        for o in rows[:n]
        if newer(days[r.id], days[o.id]) and scores[r.id] >= (1.0 - NEAR) * scores[o.id]
    ]
    if not close:
        return list(rows), dict(scores)
    same = _same(store, close, terms)
    out: list[Row] = []
    moved = dict(scores)
    for row in rows:
        at = len(out)
        while at > 0 and (row.id, out[at - 1].id) in same:
            at -= 1
        if at < len(out):
            moved[row.id] = max(scores[row.id], moved[out[at].id])
        out.insert(at, row)
    return out, moved


def _same(store: Store, pairs: Sequence[tuple[Row, Row]], terms: Mapping[int, float]) -> set[tuple[str, str]]:
    """The pairs (ids) that are the same thing: their chunk vectors close, then the same query terms held."""
    vectors = _vectors(store, list({r.id: r for pair in pairs for r in pair}.values()))
    near = [
        (a.id, b.id)
        for a, b in pairs
        if a.id in vectors and b.id in vectors and float(vectors[a.id] @ vectors[b.id]) >= SAME_VECTOR
    ]
    if not near:
        return set()
    held = _held(store, list({key for pair in near for key in pair}), terms)
    found = set()
    for a, b in near:
        both, either = held[a] & held[b], held[a] | held[b]
        total = sum(terms[t] for t in either)
        if total > 0 and sum(terms[t] for t in both) >= SAME_TERMS * total:
            found.add((a, b))
    return found


def _held(store: Store, ids: list[str], terms: Mapping[int, float]) -> dict[str, set[int]]:
    """The query terms each chunk of `ids` contains."""
    held: dict[str, set[int]] = {key: set() for key in ids}
    for term, weight in terms.items():
        for key, share in store.coverage(ids, {term: weight}).items():
            if share > 0:
                held[key].add(term)
    return held


def _vectors(store: Store, rows: list[Row]) -> dict[str, np.ndarray]:
    """Each row's own vector (its first; the windows' follow), unit length; rows of another model are left out."""
    found = store.vectors_for([r.embed_hash for r in rows], rows[0].model) if rows else {}
    out = {}
    for row in rows:
        stored = found.get(row.embed_hash)
        if stored and row.model == rows[0].model:
            vector = np.asarray(stored[0], dtype=np.float64)
            norm = float(np.linalg.norm(vector))
            if norm > 0:
                out[row.id] = vector / norm
    return out
