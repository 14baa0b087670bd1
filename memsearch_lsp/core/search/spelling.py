"""Typed queries with typos ("Reddis cahce confg"): a query word the index holds in none of its forms, read as the
index's own word nearest to it.

A word is corrected only when no chunk holds any of its terms (hybrid.query_weights: its own stems and its forms in
every language): a word the index holds is never changed. Its correction is a word of the indexed text within a small
Damerau-Levenshtein distance (optimal string alignment), the nearest, then the one the most chunks hold: 1 for words of
4 to 7 letters, 2 for longer ones; none for shorter words, numbers, CJK, nor the parts of an identifier (digits,
dots, underscores). Words are compared as the analyzer reads them (lower-cased, NFKC) and without accents (fold), so
"clinca" meets "clínica".

The index's words (the vocabulary) are read from its rows once, when a query first needs them, and kept with the
store until its rows change (its `epoch`, `writes` and row count). A lookup narrows the vocabulary by length and by a
count of letters (an edit changes at most two of the counts by one each) with numpy, then measures the few words
left: a few milliseconds at 50k words.
"""

from __future__ import annotations

import logging
import re
import threading
import weakref
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from memsearch_lsp.core.search.analyzer import Analyzer, fold, normalized
from memsearch_lsp.core.search.bm25 import term_id
from memsearch_lsp.core.search.detection import is_cjk
from memsearch_lsp.core.store.schema import idf

log = logging.getLogger(__name__)
MIN_LETTERS = 4  # shorter words are never corrected (too many neighbours: "cat" is one edit from "car", "cut")
LONG = 8  # from this many letters a word may be two edits from its correction
BUCKETS = 32  # letters counted by code point modulo this (a-z each in its own)
_GUARDED = re.compile(r"[\d._]")  # a piece of the query holding one of these is an identifier or a number
_EDGES = ".,;:!?()[]{}\"'`"  # a sentence's punctuation around a word, not a part of it


def distance(a: str, b: str, limit: int) -> int:
    """The optimal string alignment distance of `a` and `b` (an adjacent swap is one edit); `limit + 1` once it is
    known to be more than `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:  # (what both begin and end with costs nothing)
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    a, b = a[start : len(a) - end], b[start : len(b) - end]
    if len(a) <= 1 and len(b) <= 1:
        return len(a) | len(b)
    if limit == 1:  # (one edit leaves one letter at most on each side, or two swapped)
        return 1 if len(a) == len(b) == 2 and a == b[::-1] else 2
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        before, row = row, current
    return min(row[-1], limit + 1)


def allowed(word: str) -> int:
    """The edits a correction of `word` may take: 0 for a short word, 1 up to 7 letters, 2 beyond."""
    return 0 if len(word) < MIN_LETTERS else 1 if len(word) < LONG else 2


def correctable(word: str) -> bool:
    return word.isalpha() and not is_cjk(word) and allowed(word) > 0


def _letters(words: list[str]) -> np.ndarray:
    """Each word's count of letters by code point modulo BUCKETS (one row a word)."""
    lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    codes = np.frombuffer("".join(words).encode("utf-32-le"), dtype=np.uint32).astype(np.int64) % BUCKETS
    owner = np.repeat(np.arange(len(words)), lengths)
    return np.bincount(owner * BUCKETS + codes, minlength=len(words) * BUCKETS).reshape(-1, BUCKETS).astype(np.int16)


_BITS = np.asarray([bin(n).count("1") for n in range(256)], dtype=np.int8)


def _masks(letters: np.ndarray) -> np.ndarray:
    """Which buckets of letters each word holds, as the bits of one number."""
    return ((letters > 0).astype(np.int64) << np.arange(BUCKETS)).sum(axis=1).astype(np.uint32)


class Vocabulary:
    """The words of an index's text (folded: their most frequent written form kept), with how many chunks hold each."""

    def __init__(self, held: Mapping[str, int], written: Mapping[str, str] | None = None) -> None:
        self.words = sorted(held, key=len)
        self.held = np.fromiter((held[w] for w in self.words), dtype=np.int64, count=len(self.words))
        self.written = dict(written or {})
        self.lengths = np.fromiter(map(len, self.words), dtype=np.int64, count=len(self.words))
        self.letters = _letters(self.words) if self.words else np.zeros((0, BUCKETS), dtype=np.int16)
        self.masks = _masks(self.letters)

    @classmethod
    def of(cls, texts: Iterable[str]) -> Vocabulary:
        """The vocabulary of `texts` (each counted once a word: how many chunks hold it)."""
        held: Counter[str] = Counter()
        forms: dict[str, Counter[str]] = {}
        for text in texts:
            for word in set(Analyzer.words(text)):
                if word.isalpha() and not is_cjk(word) and len(word) >= MIN_LETTERS - 1:
                    key = fold(word)
                    held[key] += 1
                    if key != word:
                        forms.setdefault(key, Counter())[word] += 1
        written = {key: max(counts, key=lambda w: (counts[w], w)) for key, counts in forms.items()}
        return cls(held, {k: w for k, w in written.items() if forms[k][w] * 2 > held[k]})

    def nearest(self, word: str) -> str | None:
        """The vocabulary's word nearest to `word` (folded) within `allowed(word)` edits, the one the most chunks hold
        of those as near; None when there is none (or `word` is itself one)."""
        key, limit = fold(word), allowed(word)
        if not limit or not self.words:
            return None
        lo, hi = np.searchsorted(self.lengths, [len(key) - limit, len(key) + limit + 1])
        own = _letters([key])
        # one edit changes at most two buckets' counts, by one each (and so which buckets a word holds: two bits)
        changed = _BITS[(self.masks[lo:hi] ^ _masks(own)[0]).view(np.uint8)].reshape(-1, 4).sum(axis=1)
        near = np.flatnonzero(changed <= 2 * limit) + lo
        near = near[np.abs(self.letters[near] - own[0]).sum(axis=1) <= 2 * limit]
        best: tuple[int, int, str] | None = None
        for slot in near.tolist():
            found = self.words[slot]
            if found == key:
                return None
            edits = distance(key, found, limit)
            if edits <= limit and (best is None or (edits, -int(self.held[slot]), found) < best):
                best = (edits, -int(self.held[slot]), found)
        return None if best is None else self.written.get(best[2], best[2])


_KEPT: weakref.WeakKeyDictionary[Any, tuple[tuple[int, int, int], Vocabulary]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def vocabulary(store: Any) -> Vocabulary:
    """The store's vocabulary, read from its rows (heading paths and contents) when they changed since it was read."""
    stamp = (getattr(store, "epoch", 0), getattr(store, "writes", 0), store.count())
    with _LOCK:
        kept = _KEPT.get(store)
        if kept is not None and kept[0] == stamp:
            return kept[1]
    rows = store.scan(["heading_path", "content"])
    made = Vocabulary.of(f"{r.get('heading_path') or ''}\n{r.get('content') or ''}" for r in rows)
    with _LOCK:
        _KEPT[store] = (stamp, made)
    return made


def guarded(query: str) -> set[str]:
    """The words of the query's identifiers and numbers (a piece holding a digit, a dot or an underscore)."""
    pieces = (piece.strip(_EDGES) for piece in query.split())
    return {word for piece in pieces if _GUARDED.search(piece) for word in Analyzer.words(piece)}


def corrected(store: Any, analyzer: Analyzer, query: str, weights: Mapping[int, float]) -> str:
    """`query` with each word the index holds in no form (`weights`: the query's terms, hybrid.query_weights, where
    such a word keeps its own terms, at the weight of a term no chunk holds) replaced by its nearest word of the
    index; `query` itself when none is."""
    unseen = idf(max(store.count(), 1), 0)
    lost = [
        word
        for word, terms in analyzer.query_words(query)
        if terms and correctable(word) and all(weights.get(term_id(t), 0.0) >= unseen for t in terms)
    ]
    lost = [word for word in lost if word not in guarded(query)]
    if not lost:
        return query
    found = vocabulary(store)
    fixes = {word: fix for word in lost if (fix := found.nearest(word)) is not None}
    if not fixes:
        return query
    pattern = re.compile("|".join(rf"(?<!\w){re.escape(w)}(?!\w)" for w in sorted(fixes, key=len, reverse=True)), re.I)
    log.info("search %r: words the index does not hold read as %s", query[:80], fixes)
    if not pattern.search(query):  # (a word the analysis reads otherwise than it is written: NFKC)
        query = normalized(query)
    return pattern.sub(lambda m: _cased(fixes.get(normalized(m.group()), m.group()), m.group()), query)


def _cased(fix: str, typed: str) -> str:
    """`fix` capitalised as the word typed was ("Reddis": "Redis")."""
    return fix[:1].upper() + fix[1:] if typed[:1].isupper() else fix
