"""Queries with typos (core/search/spelling.py): a word the index holds in no form is read as the index's nearest word
when the query as typed finds nothing relevant enough; a word it holds is never changed."""

from __future__ import annotations

from pathlib import Path

from memsearch_lsp.config import SearchConfig
from memsearch_lsp.core.search.analyzer import Analyzer
from memsearch_lsp.core.search.hybrid import query_weights
from memsearch_lsp.core.search.spelling import Vocabulary, corrected, distance, vocabulary
from tests.fakes import FakeEmbedder

NOTES = {
    "MEMORY.md": "# Memory\n\n## Redis Caching\n\nWe use Redis for the L1 cache with a 5min TTL; the cache config "
    "lives in redis.conf.\n\n## Authentication\n\nAuthentication tokens are rotated every 30 days by the gateway.\n",
    "2026-01-05.md": "# 2026-01-05\n\n## Garden\n\nWatered the tomatoes and mended the fence post.\n",
}


def _memory(tmp_path: Path, make_memory):
    mem = tmp_path / "ws" / "memory"
    mem.mkdir(parents=True)
    for name, text in NOTES.items():
        (mem / name).write_text(text, encoding="utf-8")
    memory = make_memory(tmp_path / "ws", FakeEmbedder(), search={"min_score": SearchConfig().min_score})
    memory.index()
    return memory


def test_the_nearest_word_within_a_small_distance_the_most_frequent_of_equals() -> None:
    words = Vocabulary({"cache": 5, "redis": 2, "config": 3, "authentication": 1, "caches": 1, "fence": 1, "cat": 9})
    assert distance("cahce", "cache", 2) == 1 and distance("abcdef", "badcfe", 5) == 3
    assert words.nearest("cahce") == "cache"  # a swap of two letters is one edit
    assert words.nearest("reddis") == "redis" and words.nearest("confg") == "config"
    assert words.nearest("authentcation") == "authentication" and words.nearest("autentcation") == "authentication"
    assert words.nearest("cachs") == "cache"  # one edit from "cache" (5 chunks) and from "caches" (1): the first
    assert Vocabulary({"cache": 1, "caches": 5}).nearest("cachs") == "caches"
    assert words.nearest("cash") is None  # 4 letters: one edit at most, and "cache" is two away
    assert words.nearest("cay") is None  # too short to be corrected ("cat" is one edit away)
    assert words.nearest("cache") is None and words.nearest("fencing") is None
    accented = Vocabulary.of(["A clínica abriu.", "Clínica nova"])
    assert accented.nearest("clinca") == "clínica"  # compared without accents, given back as the notes write it
    counted = Vocabulary.of(["two notes", "notes again", "v2 a_b"])
    assert dict(zip(counted.words, counted.held.tolist(), strict=True)) == {"two": 1, "notes": 2, "again": 1}


def test_a_query_with_typos_finds_what_the_right_spelling_finds(tmp_path: Path, make_memory) -> None:
    memory = _memory(tmp_path, make_memory)
    right = memory.search("Redis cache config", top_k=3)
    assert right and right[0].heading == "Redis Caching"
    typed = memory.search("Reddis cahce confg", top_k=3)
    assert [h.id for h in typed] == [h.id for h in right]
    tokens = memory.search("authentcation tokns", top_k=3)
    assert tokens and tokens[0].heading == "Authentication"
    assert memory.search("flibber wonk grizzle snorp", top_k=3) == []  # nothing near: still nothing


def test_only_words_the_index_holds_in_no_form_are_corrected(tmp_path: Path, make_memory) -> None:
    memory = _memory(tmp_path, make_memory)
    analyzer = Analyzer()

    def fixed(query: str) -> str:
        return corrected(memory.store, analyzer, query, query_weights(memory.store, query, analyzer))

    assert fixed("Reddis cahce") == "Redis cache"  # as typed: capitals kept
    assert fixed("caching fences") == "caching fences"  # held in other forms (stems): never changed
    assert fixed("redis.conff 5mim") == "redis.conff 5mim"  # identifiers and numbers are as typed
    assert fixed("cahce_size the gardn") == "cahce_size the garden"
    assert fixed("rdis") == "redis" and fixed("rds") == "rds"  # four letters take one edit; three none


def test_the_vocabulary_follows_the_notes(tmp_path: Path, make_memory) -> None:
    """Read once and kept while the rows are the same; read again when a note is written."""
    memory = _memory(tmp_path, make_memory)
    first = vocabulary(memory.store)
    assert vocabulary(memory.store) is first and first.nearest("kangaro") is None
    assert memory.search("kangaro padock", top_k=3) == []
    (tmp_path / "ws" / "memory" / "2026-01-06.md").write_text("# 2026-01-06\n\n## Zoo\n\nA kangaroo paddock.\n")
    memory.index()
    assert vocabulary(memory.store) is not first and vocabulary(memory.store).nearest("kangaro") == "kangaroo"
    hits = memory.search("kangaro padock", top_k=3)
    assert hits and hits[0].source == "memory/2026-01-06.md"
