"""Hybrid search over the store: hits with snippets, expand a chunk, related memories."""

from __future__ import annotations

import logging
import re
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from functools import lru_cache

from typing_extensions import TypedDict

from memsearch_lsp.config import SearchConfig
from memsearch_lsp.config.globs import glob_match
from memsearch_lsp.core.chunks import body_of, empty_section, valid_unicode
from memsearch_lsp.core.embedding import REFERENCE, Calibration, Embedder, EmbeddingError, query_vector
from memsearch_lsp.core.search.analyzer import STOP_WORDS, Analyzer, loose_numbers, other_forms
from memsearch_lsp.core.search.bm25 import term_id
from memsearch_lsp.core.search.filters import MAX_QUERY_CHARS, day_first, source_date
from memsearch_lsp.core.search.function_words import characters, function_terms
from memsearch_lsp.core.search.headings import display_heading
from memsearch_lsp.core.search.language import QUERY_SURE, candidate_languages, query_language, sure_language
from memsearch_lsp.core.search.rank import Languages, Scores, rank, relevance
from memsearch_lsp.core.search.screen import boundary, columns, fit
from memsearch_lsp.core.store import Store
from memsearch_lsp.core.store.schema import Row, cut_short, idf

log = logging.getLogger(__name__)
_WORD = re.compile(r"\w+", re.UNICODE)


class HitData(TypedDict):
    """A search hit as the CLI (`--json`), the language server (`memsearch.search`) and MCP send it."""

    id: str
    """chunk id (16 hex characters), for expand"""
    source: str
    """file, relative to the workspace"""
    heading: str
    start_line: int
    """1-based, inclusive"""
    end_line: int
    """1-based, inclusive"""
    score: float
    """relevance, 0..1, comparable across queries: the number search's min_score takes"""
    rank_score: float
    """the fused ranking score that orders the hits of one search (not comparable across queries)"""
    snippet: str
    date: str | None
    """YYYY-MM-DD for daily logs, the period's first day for summaries, null for other files"""
    archived: bool
    """from a compacted log in the archive folder"""
    scope: str
    """workspace or user: whose memory it is from"""


class ChunkData(TypedDict):
    """A whole chunk (expand) as it is sent."""

    id: str
    source: str
    heading: str
    heading_path: str
    start_line: int
    end_line: int
    content: str
    """the section's exact Markdown"""
    date: str | None
    """YYYY-MM-DD for daily logs, the period's first day for summaries, null for other files"""
    archived: bool
    """from a compacted log in the archive folder"""
    scope: str
    """workspace or user: whose memory it is from (its source is relative to that memory's folder)"""


# pydantic (the MCP SDK's schemas) reads the field docstrings above as descriptions
HitData.__pydantic_config__ = ChunkData.__pydantic_config__ = {"use_attribute_docstrings": True}  # type: ignore[attr-defined]


class AmbiguousId(ValueError):
    """An id prefix that more than one chunk id starts with."""


@dataclass(frozen=True)
class Hit:
    """One search result; lines are 1-based and inclusive, `source` relative to the workspace."""

    id: str
    source: str
    heading: str  # as every surface shows it (display_heading): a bare `## HH:MM` named by its note's first line
    start_line: int
    end_line: int
    rank_score: float  # the fused ranking score: orders the hits of one search
    snippet: str
    date: str | None = None  # YYYY-MM-DD of a daily log or a summary's first day; None for other files
    heading_path: str = ""
    archived: bool = False  # from a compacted log in the archive folder
    # The chunk's last line as indexed (an editor's range ends after it); None when not known or stored cut short.
    last_line: str | None = field(default=None, compare=False, repr=False)
    scope: str = "workspace"  # whose memory: "workspace" or "user" (core/scopes.py)
    # rank.relevance, 0..1: comparable across searches and indexes (rank_score is relative to one search); what
    # search.min_score compares: "score" wherever a hit is sent (CLI, MCP, the language server), as here
    score: float = field(default=0.0, compare=False, repr=False)
    markdown_heading: str = field(default="", compare=False, repr=False)  # the heading as written ("21:18")

    def to_dict(self) -> HitData:
        return {
            "id": self.id,
            "source": self.source,
            "heading": self.heading,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "score": round(self.score, 4),
            "rank_score": round(self.rank_score, 6),
            "snippet": self.snippet,
            "date": self.date or None,
            "archived": self.archived,
            "scope": self.scope,
        }


@dataclass(frozen=True)
class Expanded:
    """A whole chunk, for `expand`, hover and definition."""

    id: str
    source: str
    heading: str  # as a hit on it shows it (display_heading)
    heading_path: str
    start_line: int
    end_line: int
    content: str
    date: str | None = None  # YYYY-MM-DD of a daily log or a summary's first day; None for other files
    archived: bool = False  # from a compacted log in the archive folder
    scope: str = "workspace"  # whose memory: "workspace" or "user" (core/scopes.py)
    markdown_heading: str = field(default="", compare=False, repr=False)  # the heading as written ("21:18")

    def to_dict(self) -> ChunkData:
        return {
            "id": self.id,
            "source": self.source,
            "heading": self.heading,
            "heading_path": self.heading_path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "content": self.content,
            "date": self.date or None,
            "archived": self.archived,
            "scope": self.scope,
        }


_OPENINGS = (". ", "; ", " - ", "! ", "? ", "。")  # where a sentence or a list item (its lines joined) begins


def snippet(content: str, query: str, width: int = 200) -> str:
    """`width` columns of the body where it holds the most of the query's words: its content words (not "in", "the"
    nor a word inside another: "in" of "Naming"), each counted once, matched at a word's start ("deploy" meets
    "deployed") or by their terms as the analyzer reads them (core/search/analyzer.py: "clinica" meets "clínica", a
    Chinese question by its pairs of characters); the earliest such place, from the start of the sentence or
    item of its first match (a little before that match at most)."""
    text = body_of(content) or " ".join(content.split())
    if len(text) <= width // 2 or (len(text) <= 2 * width and columns(text) <= width):  # (a character takes 2 at most)
        return text
    lowered = text.lower()
    words = {w.lower() for w in _WORD.findall(query) if len(w) > 1}
    words = {w for w in words if w not in STOP_WORDS} or words
    found = sorted(
        {
            (m.start(), w)
            for w in words
            for m in re.finditer(("(?<!\\w)" if w[0] < "\u2e80" else "") + re.escape(w), lowered)
        }
        | (set() if text.isascii() and query.isascii() else _term_matches(text, query))  # (accents, CJK, NFKC)
    )
    sample = text[: 8 * width]  # characters a column: 1/2 in Chinese, whose characters take two
    scale = len(sample) / max(columns(sample), 1)
    lead, best, first, shown, end = round(width // 4 * scale), 0, 0, dict[str, int](), 0
    span = max(round((width - width // 4 - 2) * scale), 1)  # (a window holds its own first match: snippetChars 1 too)
    for at, word in found:  # each match as the first of a window: the distinct words the window shows
        while end < len(found) and found[end][0] < at + span:
            shown[found[end][1]] = shown.get(found[end][1], 0) + 1
            end += 1
        if len(shown) > best:
            best, first = len(shown), at
        shown[word] -= 1
        if not shown[word]:
            del shown[word]
    start = max(0, first - lead)
    opening = max(text.rfind(mark, start, first) + len(mark) for mark in _OPENINGS)  # its sentence's or item's start
    if first - lead > 0 and opening > start:
        start = opening
    elif start:
        space = text.find(" ", start)
        start = space + 1 if 0 <= space < start + 20 else start
    start = boundary(text, start) if width > 2 else 0  # (under 3 columns no room for a "…" on each side: the start)
    piece = fit(text[start : start + width], width - (1 if start else 0) - 1).rstrip()  # (columns: CJK takes two)
    return ("…" if start else "") + piece + ("…" if start + len(piece) < len(text) else "")


def _term_matches(text: str, query: str) -> set[tuple[int, str]]:
    """Where `text` holds the query's terms as its analysis reads both (in the text's language: accents folded,
    stems, CJK pairs), each as (offset, what a window counts once: the query's word, a CJK pair). A CJK character
    counts alone only as a query's word (one shared 的 is chance, and would draw the window off its sentence); words
    written in ASCII on both sides are left to the match at a word's start, as English snippets always were."""
    lang, placed = Analyzer().placed_terms(text)
    asked = {
        term: term if word[0] >= "\u2e80" else word
        for word, terms in Analyzer(lang).query_words(query)
        for term in terms
        if ((len(term) == 2 or len(word) == 1) if word[0] >= "\u2e80" else len(word) > 1)
    }
    return {(at, asked[t]) for at, word, t in placed if t in asked and not (word.isascii() and asked[t].isascii())}


def to_hit(row: Row, query: str, width: int) -> Hit:
    return Hit(
        id=row.id,
        source=row.source,
        heading=display_heading(row.heading, row.content),
        start_line=row.start_line,
        end_line=row.end_line,
        rank_score=row.score,
        snippet=snippet(row.content, query, width),
        date=row.date or source_date(row.source),
        heading_path=row.heading_path,
        last_line=None if cut_short(row.content) else row.content.rsplit("\n", 1)[-1],  # (else read from the file)
        markdown_heading=row.heading,
    )


def to_expanded(row: Row, archive_dir: str = "") -> Expanded:
    return Expanded(
        id=row.id,
        source=row.source,
        heading=display_heading(row.heading, row.content),
        heading_path=row.heading_path,
        start_line=row.start_line,
        end_line=row.end_line,
        content=row.content,
        date=row.date or source_date(row.source),
        archived=bool(archive_dir) and glob_match(archive_dir, row.source),
        markdown_heading=row.heading,
    )


def bounded(query: str) -> str:
    """`query`, or its first MAX_QUERY_CHARS characters (to a word's end) when it is longer: said in the log."""
    if len(query) <= MAX_QUERY_CHARS:
        return query
    cut = query[:MAX_QUERY_CHARS]
    space = cut.rfind(" ", MAX_QUERY_CHARS // 2)
    cut = cut[:space] if space > 0 else cut
    _said_long(query, len(cut))
    return cut


@lru_cache(maxsize=8)
def _said_long(query: str, searched: int) -> None:
    """The warning for a long query, once for the same query (the CLI asks again for what the floor hid)."""
    log.warning("the query is %s characters long: its first %s are searched", f"{len(query):,}", f"{searched:,}")


def hybrid_search(
    store: Store,
    embedder: Embedder,
    query: str,
    settings: SearchConfig,
    top_k: int,
    exclude_source: str = "",
    archive_dir: str = "",
    only: Collection[str] | None = None,
    archived: bool = False,
    dated: Collection[str] | None = None,
) -> list[Hit]:
    """Dense and BM25 candidates (`settings.candidates` per leg, at least `top_k`) fused by the
    configured ranker (core/search/rank.py), best first, hits under `settings.min_score` (rank.relevance) left
    out; archived hits marked and demoted (demote_archived). When the query cannot be embedded (an
    endpoint busy or down) the BM25 leg answers alone and the reason is logged.
    `only`: a search filter's sources (core/search/filters.py); both legs take their candidates from them alone.
    An archived original whose summary holds the same match gives way to it (core/search/archive.py): the
    summary comes first, and the original is left out unless `archived`.
    `dated`: the files of a day the query names (filters.sources_of_day): their notes come first, ranked among
    themselves without the floor (the day says they are wanted), then the best of the rest (filters.day_first)."""
    query = valid_unicode(bounded(query))
    if not query.strip() or top_k <= 0:
        return []
    if dated:
        day = hybrid_search(
            store,
            embedder,
            query,
            replace(settings, min_score=0.0),
            top_k,
            exclude_source,
            archive_dir,
            dated,
            archived,
        )
        rest = hybrid_search(store, embedder, query, settings, top_k, exclude_source, archive_dir, only, archived)
        return day_first(day, rest, top_k)
    rrf = settings.ranker == "rrf"
    per_leg = max(settings.candidates, top_k)
    dense: dict[str, float] = {}
    sparse: dict[str, float] = {}
    analyzer = Analyzer(settings.language)
    terms = query_weights(store, query, analyzer)
    # the dense leg's cosines tell every hit's relevance, so `score` (what min_score compares) is the same whatever the
    # fusion weights; it ranks only when weighted (vector_weight 0: BM25 ranks alone)
    cosines = _dense_leg(store, embedder, query, per_leg, exclude_source, only)
    if settings.vector_weight > 0 or rrf:
        dense = cosines
    if settings.bm25_weight > 0 or rrf or not dense:
        sparse = store.sparse_leg(terms, per_leg, exclude_source, only)
    ids = list(dict.fromkeys([*dense, *sparse]))
    coverage = store.coverage(ids, terms) if ids else {}
    said = said_share(store, analyzer, query, terms, ids, coverage)
    limit = top_k + ARCHIVE_EXTRA if archive_dir else top_k
    calibration = calibration_of(embedder) if cosines else REFERENCE
    found = {r.id: r for r in store.rows(ids)} if ids else {}
    languages = _languages(analyzer, query, embedder, dense, found, said)
    every = rank(dense, sparse, coverage, store.sections, settings, calibration, languages, said, cosines)
    # relevance: comparable across indexes and models (the dense cosines read through the model's calibration)
    score, relevant = dict(every), relevance(cosines, said, calibration, languages)
    rows = [r for r in (found[k] for k, _ in every if k in found) if not empty_section(r.content)][:limit]
    if archive_dir:
        from memsearch_lsp.core.search.archive import summaries_first

        moved = [glob_match(archive_dir, r.source) for r in rows]
        rows, score, relevant = summaries_first(store, rows, score, every, terms, moved, archived, relevant)
    hits = [
        replace(
            to_hit(replace(r, score=score[r.id]), query, settings.snippet_chars),
            score=min(1.0, max(0.0, relevant.get(r.id, 0.0))),
        )
        for r in rows
    ]
    hits = demote_archived(hits, archive_dir)[:top_k]
    log.debug(
        "search %r: %d hits of %d candidates (dense %d, BM25 %d)",
        query[:80],
        *[len(c) for c in (hits, ids, dense, sparse)],
    )
    from memsearch_lsp.core.search.spelling import corrected  # (numpy: imported at a search, not at start-up)

    if hits or not settings.min_score or (typed := corrected(store, analyzer, query, terms)) == query:
        return hits
    # nothing relevant enough, and words the index holds in no form: searched again as the index's nearest words
    return hybrid_search(store, embedder, typed, settings, top_k, exclude_source, archive_dir, only, archived)


def said_share(
    store: Store, analyzer: Analyzer, query: str, terms: dict[int, float], ids: list[str], coverage: Scores
) -> Scores:
    """The share of the query's IDF mass each candidate holds that the relevance counts (`coverage`: of every term):
    the query's words that say something ("receta de pastel" is not relevant to a note by its "de": function_words.py;
    "1.0.0" to a note by its "1" and "0": analyzer.py loose_numbers),
    and the characters of its Chinese words beyond the heaviest one (one shared 天 is chance, several a paraphrase)."""
    function = {term_id(t) for t in function_terms(analyzer, query) | loose_numbers(query)}
    content = {t: w for t, w in terms.items() if t not in function}
    single = {t: w for t in (term_id(c) for c in characters(analyzer, query)) if (w := content.get(t))}
    if not ids or (len(content) == len(terms) and not single):
        return coverage
    said = store.coverage(ids, content) if content else dict.fromkeys(ids, 0.0)
    if not single:
        return said
    total, heaviest, held = sum(content.values()), max(single.values()), store.coverage(ids, single)
    mass = sum(single.values())
    return {k: max(0.0, v - min(held.get(k, 0.0) * mass, heaviest) / total) for k, v in said.items()}


def query_weights(store: Store, query: str, analyzer: Analyzer) -> dict[int, float]:
    """The query's BM25 terms (term id -> IDF). A word the index holds in none of its own forms is looked up in its
    forms in every language instead (core/search/analyzer.py other_forms), and those the index holds stand in for it:
    a short query whose language cannot be told from it ("quand déployer") still meets "Les déploiements". A word
    found in none of them keeps its own terms, as before."""
    words = [(word, [term_id(t) for t in terms]) for word, terms in analyzer.query_words(query)]
    weights = store.idf(t for _, ids in words for t in ids)
    unseen = idf(max(store.count(), 1), 0)  # what a term no chunk holds weighs
    lost = {word: ids for word, ids in words if ids and all(weights[t] >= unseen for t in ids)}
    others = {word: [term_id(f) for f in other_forms(word)] for word in lost}
    found = store.idf(t for ids in others.values() for t in ids) if any(others.values()) else {}
    for word, ids in lost.items():
        held = {t: found[t] for t in others[word] if found[t] < unseen}
        if held:
            for t in ids:
                weights.pop(t, None)
            weights.update(held)
    return weights


def _languages(
    analyzer: Analyzer, query: str, embedder: Embedder, dense: dict[str, float], rows: dict[str, Row], said: Scores
) -> Languages:
    """The query's language (or its words': language.query_language), the candidates', and the model's, for the
    fusion's language rules (rank.Languages). A model that reads every language needs only its best candidate's
    (does the dense leg decide?); one that reads some needs every candidate's (whose cosines are noise)."""
    spoken = analyzer.language_of(analyzer.words(query), query)
    if embedder.languages:
        needed = list(rows.values())
    else:
        needed = [rows[best]] if dense and (best := max(dense, key=lambda k: dense[k])) in rows else []
    sure = analyzer.language != "auto" or sure_language(query, QUERY_SURE) == spoken
    of, model = candidate_languages(analyzer, needed), tuple(embedder.languages)
    return Languages(query_language(spoken, sure, model, of, said), of, model, sure)


def calibration_of(embedder: Embedder) -> Calibration:
    """The embedder's calibration (measured once per model); the reference scale when it cannot be measured now
    (an endpoint busy: the next search tries again)."""
    try:
        return embedder.calibration()
    except EmbeddingError as exc:
        log.warning("cannot calibrate %s now (%s); reading its cosines as they are", embedder.model_name, exc)
        return REFERENCE


def _dense_leg(
    store: Store,
    embedder: Embedder,
    query: str,
    limit: int,
    exclude_source: str,
    only: Collection[str] | None = None,
) -> dict[str, float]:
    """The dense leg; {} when the query cannot be embedded (an endpoint busy, down or refusing): BM25
    then answers alone, and the log (the editor's output panel, the CLI's stderr) says so and why."""
    try:
        vector = query_vector(embedder, query)
    except EmbeddingError as exc:
        log.warning("search %r: BM25 alone, the query could not be embedded: %s", query[:80], exc)
        return {}
    return store.dense_leg(vector, limit, exclude_source, only)


ARCHIVE_WEIGHT = 0.99  # an archived original scores this share of a live chunk as relevant
ARCHIVE_EXTRA = 5  # candidates fetched beyond top_k, so live hits can overtake demoted archived ones


def demote_archived(hits: list[Hit], archive_dir: str) -> list[Hit]:
    """Mark hits from the archive folder and rank them below live memory at equal relevance (after fusion)."""
    if not archive_dir:
        return hits
    marked = [
        replace(h, archived=True, rank_score=h.rank_score * ARCHIVE_WEIGHT) if glob_match(archive_dir, h.source) else h
        for h in hits
    ]
    return sorted(marked, key=lambda h: -h.rank_score)
