"""BM25 with global statistics: an analyzer, document term weights and the document-frequency table.

Milvus Lite scores its built-in BM25 function with per-segment statistics, so a chunk written after
the first bulk index lands in a tiny segment whose IDF is near zero and ranks below far weaker
matches. We therefore weight terms ourselves: each row stores BM25 document weights
tf*(k1+1)/(tf + k1*(1-b+b*dl/avgdl)) as a sparse vector, the query carries IDF weights from a
collection-wide document-frequency table, and Milvus' inner product of the two is exactly BM25.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import secrets
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

K1 = 1.2
B = 0.75
AVGDL = 80.0  # tokens in a typical chunk; fixed so stored weights never go stale
ANALYZER = "words-lower-snowball-en-v1"
_TOKEN = re.compile(r"\w+", re.UNICODE)
# English function words dropped from queries (not from documents): in a question such as "What did
# Nate say about his dog?" they match nearly every chunk of a conversation and drown the content words.
# bench/README.md: recall@5 0.772 -> 0.805 for BM25 alone on conversational memory.
STOP_WORDS = frozenset(
    {
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "of",
        "at",
        "by",
        "for",
        "with",
        "about",
        "to",
        "from",
        "in",
        "on",
        "into",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "do",
        "does",
        "did",
        "done",
        "have",
        "has",
        "had",
        "having",
        "i",
        "me",
        "my",
        "you",
        "your",
        "he",
        "him",
        "his",
        "she",
        "her",
        "it",
        "its",
        "we",
        "us",
        "our",
        "they",
        "them",
        "their",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "this",
        "that",
        "these",
        "those",
        "am",
        "will",
        "would",
        "can",
        "could",
        "should",
        "shall",
        "may",
        "might",
        "must",
        "not",
        "no",
        "so",
        "than",
        "too",
        "very",
        "just",
        "also",
        "there",
        "here",
        "then",
    }
)


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    try:
        from py_rust_stemmers import SnowballStemmer  # ships with fastembed

        return SnowballStemmer("english")
    except ImportError:  # pragma: no cover - fastembed always brings it
        return None


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    stemmer = _stemmer()
    return str(stemmer.stem_word(word)) if stemmer is not None and word.isalpha() else word


def tokens(text: str) -> list[str]:
    """Lower-cased words and numbers, English words stemmed ("Caching" and "cache" meet)."""
    return [_stem(w) for w in _TOKEN.findall(text.lower()) if len(w) < 64]


def query_terms(text: str) -> list[str]:
    """The query's terms without stop words; all of them when the query is nothing but stop words."""
    words = [w for w in _TOKEN.findall(text.lower()) if len(w) < 64]
    kept = [w for w in words if w not in STOP_WORDS] or words
    return [_stem(w) for w in kept]


@lru_cache(maxsize=65536)
def term_id(term: str) -> int:
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest(), "big") & 0x7FFFFFFF


def doc_vector(text: str) -> dict[int, float]:
    """BM25 document-side weights of one chunk (never empty: Milvus rejects empty sparse rows)."""
    counts = Counter(term_id(t) for t in tokens(text))
    length = sum(counts.values())
    norm = K1 * (1 - B + B * length / AVGDL)
    vector = {tid: tf * (K1 + 1) / (tf + norm) for tid, tf in counts.items()}
    return vector or {0: 1e-9}


def idf(n_docs: int, df: int) -> float:
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


class DfTable:
    """How many stored chunks contain each term, persisted beside the index.

    Crash safety: `begin()` writes a marker (`*.pending.json`) before the store changes and `save()`
    removes it once the table matches the store again; a table found with its marker is recounted
    from the store, so the statistics always equal a clean build's.

    A save writes only what changed since the last one, as a line appended to a journal beside the table
    (`*.journal`, each line naming the table it applies to), so saving after each file written costs what
    the file changed, not the whole vocabulary; the table is written whole (and the journal dropped) when
    the journal has grown as large as the table, or after a reset. Loading replays the journal's lines
    for the table read; lines for another table (left by a crash between writing a new table and
    dropping the old journal) are skipped.
    """

    JOURNAL_MIN = 64 * 1024  # bytes the journal may reach before the table is rewritten, however small

    def __init__(self, path: Path | None):
        self.path = path
        self.docs = 0
        self.df: Counter[int] = Counter()
        self._lock = threading.Lock()
        self.dirty = False
        self._pending = False
        self._generation: str | None = None  # the saved table's, named by journal lines; None: save it whole
        self._changes: Counter[int] = Counter()  # since the last save (already in `df`)
        self._changed_docs = 0
        self._table_size = self._journal_size = 0

    @property
    def marker(self) -> Path | None:
        return self.path.with_suffix(".pending.json") if self.path is not None else None

    @property
    def journal(self) -> Path | None:
        return self.path.with_suffix(".journal") if self.path is not None else None

    def begin(self) -> None:
        """Say (on disk, once per pass) that the store is about to change under the saved table."""
        if self.marker is None or self._pending:
            return
        self.marker.parent.mkdir(parents=True, exist_ok=True)
        with self.marker.open("w") as handle:
            handle.write("{}")
            handle.flush()
            os.fsync(handle.fileno())
        self._pending = self.dirty = True

    def add(self, vectors: Iterable[Mapping[int, float]], sign: int = 1) -> None:
        with self._lock:
            changes = self._changes
            for vector in vectors:
                self.docs += sign
                self._changed_docs += sign
                for tid in vector:
                    self.df[tid] += sign
                    changes[tid] += sign
                    if self.df[tid] <= 0:
                        del self.df[tid]
            self.dirty = True

    def query_vector(self, text: str) -> dict[int, float]:
        """IDF weights of the query's terms, stop words left out (unless nothing else is left)."""
        terms = query_terms(text)
        with self._lock:
            n = max(self.docs, 1)
            return {tid: idf(n, self.df.get(tid, 0)) for tid in {term_id(t) for t in terms}}

    def reset(self) -> None:
        with self._lock:
            self.docs, self.df, self.dirty = 0, Counter(), True
            self._generation, self._changes, self._changed_docs = None, Counter(), 0

    def load(self, expected_docs: int) -> bool:
        """Read the saved table and replay its journal; False when it is missing or does not match the store."""
        if self.path is None or not self.path.is_file():
            return False
        if self.marker is not None and self.marker.exists():
            log.info("the last index pass did not finish; recounting the BM25 statistics from the index")
            return False
        try:
            text = self.path.read_text()
            data = json.loads(text)
            if data.get("analyzer") != ANALYZER:
                return False
            docs = int(data["docs"])
            df = Counter({int(k): int(v) for k, v in data["df"].items()})
            generation = data.get("journal")
            journal = self._replay(str(generation), docs, df) if isinstance(generation, str) else (docs, 0)
            if journal is None:
                return False
            docs, journal_size = journal
        except (OSError, ValueError, TypeError, AttributeError, KeyError) as exc:
            log.warning("BM25 statistics %s unreadable (%s); rebuilding them", self.path.name, exc)
            return False
        if docs != expected_docs:
            return False
        with self._lock:
            self.docs, self.df = docs, df
            self.dirty = False
            self._generation = generation if isinstance(generation, str) else None
            self._changes, self._changed_docs = Counter(), 0
            self._table_size, self._journal_size = len(text), journal_size
        return True

    def _replay(self, generation: str, docs: int, df: Counter[int]) -> tuple[int, int] | None:
        """Apply the journal's lines for `generation` to `docs` and `df` (in place): (docs, journal bytes);
        None when a count would go below zero (the journal does not belong to this table)."""
        assert self.journal is not None
        try:
            lines = self.journal.read_text()
        except FileNotFoundError:
            return docs, 0
        for line in lines.splitlines():
            entry = json.loads(line)
            if entry.get("journal") != generation:
                continue
            docs += int(entry["docs"])
            for key, change in entry["df"].items():
                df[int(key)] += int(change)
        if docs < 0 or any(v < 0 for v in df.values()):
            log.warning("BM25 statistics journal %s does not match its table; rebuilding them", self.journal.name)
            return None
        for key in [k for k, v in df.items() if v == 0]:
            del df[key]
        return docs, len(lines.encode())

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        assert self.journal is not None
        with self._lock:
            line = ""
            changes = {str(k): v for k, v in self._changes.items() if v}
            if self._generation is not None and (changes or self._changed_docs):
                line = (
                    json.dumps(
                        {"journal": self._generation, "docs": self._changed_docs, "df": changes}, separators=(",", ":")
                    )
                    + "\n"
                )
            whole = self._generation is None or self._journal_size + len(line) > max(self.JOURNAL_MIN, self._table_size)
            if whole:
                generation = secrets.token_hex(8)
                payload = json.dumps(
                    {
                        "analyzer": ANALYZER,
                        "docs": self.docs,
                        "journal": generation,
                        "df": {str(k): v for k, v in self.df.items()},
                    },
                    separators=(",", ":"),
                )
                self._generation, self._table_size, self._journal_size = generation, len(payload), 0
            else:
                self._journal_size += len(line)
            self._changes, self._changed_docs = Counter(), 0
            self.dirty = False
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if whole:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(payload)
            os.replace(tmp, self.path)
            self.journal.unlink(missing_ok=True)  # its lines name the old table: skipped if this is not reached
        elif line:
            with self.journal.open("a") as handle:
                handle.write(line)
        if self.marker is not None:
            self.marker.unlink(missing_ok=True)
        self._pending = False
