"""BM25 with global statistics: document and query term weights (the store counts document frequencies); the
analysis of each text is core/search/analyzer.py's.

Milvus Lite scores its built-in BM25 function with per-segment statistics, so a chunk written after
the first bulk index lands in a tiny segment whose IDF is near zero and ranks below far weaker
matches. We therefore weight terms ourselves: each row stores BM25 document weights
tf*(k1+1)/(tf + k1*(1-b+b*dl/avgdl)) as a sparse vector, the query carries IDF weights from a
collection-wide document-frequency table, and Milvus' inner product of the two is exactly BM25.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from functools import lru_cache

from memsearch_lsp.core.search.analyzer import Analyzer

log = logging.getLogger(__name__)

K1 = 1.2
B = 0.75
AVGDL = 80.0  # tokens in a typical chunk; fixed so stored weights never go stale
DEFAULT = Analyzer()  # search.language = "auto"


def tokens(text: str, analyzer: Analyzer | None = None) -> list[str]:
    """A document's terms (core/search/analyzer.py; the language detected unless `analyzer` fixes it)."""
    return (analyzer or DEFAULT).tokens(text)


def query_terms(text: str, analyzer: Analyzer | None = None) -> list[str]:
    """The query's terms without English stop words; all of them when the query is nothing but stop words."""
    return (analyzer or DEFAULT).query_terms(text)


def query_ids(text: str, analyzer: Analyzer | None = None) -> list[int]:
    """The term ids of a query (`query_terms`), for the store's IDF weights (Store.idf)."""
    return [term_id(t) for t in query_terms(text, analyzer)]


@lru_cache(maxsize=65536)
def term_id(term: str) -> int:
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest(), "big") & 0x7FFFFFFF


def doc_vector(text: str, analyzer: Analyzer | None = None) -> dict[int, float]:
    """BM25 document-side weights of one chunk (never empty: Milvus rejects empty sparse rows)."""
    counts = Counter(term_id(t) for t in tokens(text, analyzer))
    length = sum(counts.values())
    norm = K1 * (1 - B + B * length / AVGDL)
    vector = {tid: tf * (K1 + 1) / (tf + norm) for tid, tf in counts.items()}
    return vector or {0: 1e-9}
