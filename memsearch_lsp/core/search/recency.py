"""Newer first when it says so: a note that a later one restates (a value changed since) gives way to it.

Agent memory is full of "we moved from X to Y": the older note and the one that replaced it are about the same
thing, and which of them the fusion puts first is a coin toss on wording (the older one often repeats the
question's words). The ranking says nothing of time, so two rules put the newer one first:

- near-duplicates (`newer_first`): a hit moves up past the hits directly above it that are older (a note without a
  date, such as MEMORY.md, counts as older than any dated log), score within NEAR of it (fused score, relative) and
  are the same thing: their chunk vectors' cosine is at least SAME_VECTOR and they hold the same query terms
  (IDF-weighted Jaccard of the query terms each contains at least SAME_TERMS);
- a change said (`later_first`): a newer hit one of whose lines (a paragraph, a bullet, a turn) says a change
  (`says_change`: "raised from 24 h to 72 h", "moved to", "no longer", "ahora", "8000 → 12000") moves directly above an
  older hit when that line is about the older hit's subject, read in the older hit's sentence that holds most of
  the query's weight (not its whole section: a stale bullet of a long MEMORY.md section is one sentence of it):
  the line holds every query term of that sentence, and one of its values (a word with a digit: 24, Node 20, 44)
  or SAME_SUBJECT of its other content words. The newer hit must score within SUPERSEDE of the older one (fused)
  or be at least as relevant (`score`);
- a hit that moves takes the score of the hit it passes (so the order and the scores agree), and every relevance
  (`score`, what `min_score` compares) is left as it is.

Hits that are neither, or whose scores differ by more, keep their order; so do hits of the same day. The numbers
were chosen on a set of "what is the current value" questions over agent logs and checked on the development sets
(bench/README.md, "Recency"): looser near-duplicate rules (a wider margin, a lower cosine) also reorder
conversations whose older session holds the answer; a line that says a change and names the older sentence's
query terms and value does not (LoCoMo unchanged).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cached_property

import numpy as np

from memsearch_lsp.core.search.analyzer import Analyzer
from memsearch_lsp.core.search.bm25 import term_id
from memsearch_lsp.core.search.filters import source_date
from memsearch_lsp.core.search.function_words import function_terms
from memsearch_lsp.core.store import Store
from memsearch_lsp.core.store.schema import Row

NEAR = 0.05  # a newer hit scoring at least (1 - NEAR) x an older one above it may pass it
SAME_VECTOR = 0.75  # the two chunks' vectors: cosine at least this
SAME_TERMS = 0.8  # the query terms each holds (IDF-weighted): Jaccard at least this
SUPERSEDE = 0.2  # a newer hit that says a change, scoring at least (1 - SUPERSEDE) x an older one above it, passes it
SAME_SUBJECT = 0.6  # the share of the older hit's best sentence's content words the newer hit holds

# a note that says a value changed: "raised from 24 h to 72 h", "moved to", "no longer", "8000 → 12000", "ahora":
# its words (es, pt, de, fr after English), then its phrases, looked for only when one of their words is there
CHANGE_WORDS = frozenset(
    re.findall(
        r"\S+",
        """raised lowered bumped increased decreased reduced upgraded downgraded moved switched migrated changed
        replaced swapped now anymore   ahora cambiamos cambiado cambió   agora mudamos
        jetzt stattdessen umgestellt geändert erhöht gesenkt   maintenant désormais remplacé remplacée remplacés""",
    )
)
PHRASE_WORDS = frozenset(
    re.findall(
        r"\S+",
        "longer more instead place best forward ya lugar vez pasamos passamos mais não nao já ja mehr lieu "
        "passé passe passés from",
    )
)
CHANGE = re.compile(
    r"\b(?:no longer|any more|instead of|in place of|new best|going forward|ya no|en (?:lugar|vez) de|pasamos a|"
    r"n[aã]o mais|j[aá] n[aã]o|em vez de|passamos a|nicht mehr|au lieu de|pass[eé]s? [aà]|from \S+(?: \S+){0,3}? to)\b|"
    r"\d ?(?:→|->) ?\d",
    re.I,
)
WORD = re.compile(r"\w+")
SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")  # a sentence, a line (a bullet, a heading) ends here


def says_change(text: str) -> bool:
    """`text` says that something changed (CHANGE_WORDS, CHANGE)."""
    words = set(WORD.findall(text.lower()))
    if not words.isdisjoint(CHANGE_WORDS):
        return True
    maybe = not words.isdisjoint(PHRASE_WORDS) or "→" in text or "->" in text
    return maybe and CHANGE.search(text) is not None


def date_of(row: Row) -> str:
    """A row's day (YYYY-MM-DD) or "" (undated: MEMORY.md and other notes)."""
    return row.date or source_date(row.source) or ""


def newer(a: str, b: str) -> bool:
    """Day `a` is later than day `b` ("" = undated, earlier than any day)."""
    return bool(a) and a > b


def later_first(
    store: Store,
    analyzer: Analyzer,
    rows: Sequence[Row],
    scores: Mapping[str, float],
    relevant: Mapping[str, float],
    terms: Mapping[int, float],
) -> tuple[list[Row], dict[str, float]]:
    """`rows` (best first) reordered by both rules of the module docstring, with their fused `scores` (a hit that
    moves takes the score of the hit it passes): near-duplicates first (`newer_first`), then a newer hit that says
    a change (`says_change`) of the subject of an older hit above it (`_Read.restates`), within SUPERSEDE of its
    score or at least as relevant (`relevant`: each hit's `score`), moves directly above it. `terms`: the query's
    (term id -> IDF)."""
    rows, scores = newer_first(store, rows, scores, terms)
    days = {r.id: date_of(r) for r in rows}
    if len(rows) < 2 or len(set(days.values())) < 2:
        return list(rows), dict(scores)
    out, moved = list(rows), dict(scores)
    read: dict[str, _Read] = {}
    for row in rows:
        if not says_change(row.content):  # (the cheap test first)
            continue
        said = read.setdefault(row.id, _Read(analyzer, row.content, terms))
        if not any(held & terms.keys() for held in said.changes):  # no line that says a change holds a query term
            continue
        at = out.index(row)
        for n, older in enumerate(out[:at]):
            if not newer(days[row.id], days[older.id]) or not _close(row.id, older.id, scores, relevant):
                continue
            if said.restates(read.setdefault(older.id, _Read(analyzer, older.content, terms))):
                out.insert(n, out.pop(at))
                moved[row.id] = max(scores[row.id], moved[older.id])
                break
    return out, moved


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


def _close(a: str, b: str, scores: Mapping[str, float], relevant: Mapping[str, float]) -> bool:
    """Hit `a` scores at least (1 - SUPERSEDE) x hit `b` (fused), or is at least as relevant."""
    return scores[a] >= (1.0 - SUPERSEDE) * scores[b] or relevant.get(a, 0.0) >= relevant.get(b, 0.0) > 0


class _Read:
    """A hit's text as `later_first` reads it, each part when first asked: the terms of each line that says a change
    (`changes`), its sentence that holds most of the query's weight (`best`) and that sentence's other words
    (`beyond`; each word as its term ids)."""

    def __init__(self, analyzer: Analyzer, text: str, terms: Mapping[int, float]):
        self.analyzer, self.text, self.terms = analyzer, text, terms

    @cached_property
    def changes(self) -> list[set[int]]:
        lines = [line for line in self.text.splitlines() if says_change(line)]
        return [{term_id(t) for t in terms} for terms in self.analyzer.tokens_each(self.text, lines)]

    @cached_property
    def best(self) -> tuple[str, set[int]]:
        """The sentence that holds most of the query's weight, and the query terms it holds (none: "", none)."""
        sentences = SENTENCE.split(self.text)
        held = [{term_id(t) for t in ts} & self.terms.keys() for ts in self.analyzer.tokens_each(self.text, sentences)]
        weights = [sum(self.terms[t] for t in ids) for ids in held]
        at = max(range(len(sentences)), key=weights.__getitem__)
        return (sentences[at], held[at]) if weights[at] > 0 else ("", set())

    @cached_property
    def beyond(self) -> tuple[list[set[int]], list[set[int]]]:
        """The best sentence's content words beyond the query's: those with a digit (its values), and all of them."""
        sentence, asked = self.best
        function = function_terms(self.analyzer, sentence)
        content = [
            (word, ids)
            for word, ts in self.analyzer.query_words(sentence)
            if not set(ts) <= function and (ids := {term_id(t) for t in ts}) and not ids & asked
        ]
        return [ids for w, ids in content if any(c.isdigit() for c in w)], [ids for _, ids in content]

    def restates(self, older: _Read) -> bool:
        """One of this text's lines that say a change holds the query terms of `older`'s best sentence and either
        one of its values (a number, a version) or most of its other words."""
        asked = older.best[1]
        return bool(asked) and any(asked <= held and _restated(held, *older.beyond) for held in self.changes)


def _restated(held: set[int], values: list[set[int]], words: list[set[int]]) -> bool:
    """A line's terms `held` hold one of a sentence's `values` or most of its other `words`."""
    if any(ids & held for ids in values):
        return True
    return bool(words) and sum(bool(ids & held) for ids in words) >= SAME_SUBJECT * len(words)
