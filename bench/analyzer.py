"""BM25 analysis replay: BM25 alone over the product's own chunks, in memory, for each analyzer variant.

`python -m bench analyzer --set ../shared/eval/multilingual-dev --set ../shared/eval/til-dev` chunks every
labelled workspace as the indexer does (core/chunks.py), weighs each chunk with `doc_vector` and each question
with the product's IDF under every variant below, ranks every chunk by BM25 (what the BM25 leg returns) and
scores the ranking as the set is scored (bench/labelled.py: MRR@5 by file, recall@5 by line); a multilingual
set is also scored per question language, for the cross-lingual questions, and counts the questions BM25
answers with nothing. No model, no store: a minute for the three development sets.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import emit, log, table

Variant = Callable[[], Any]


def variants() -> dict[str, Any]:
    from memsearch_lsp.core.search import analyzer as a

    class EnglishOnly(a.Analyzer):
        """The analysis before issue 36: English stems, no folding, CJK runs as one word."""

        def tokens(self, text: str) -> list[str]:
            return [a.stem(w, "en") if not a._is_cjk(w) else w for w in self._old_words(text)]

        def query_terms(self, text: str) -> list[str]:
            words = self._old_words(text)
            kept = [w for w in words if w not in a.STOP_WORDS] or words
            return [a.stem(w, "en") if not a._is_cjk(w) else w for w in kept]

        @staticmethod
        def _old_words(text: str) -> list[str]:
            import re

            return [w for w in re.findall(r"\w+", text.lower()) if len(w) < 64]

    class OwnStemOnly(a.Analyzer):
        """Each text stemmed in its language alone (no English form beside)."""

        def tokens(self, text: str) -> list[str]:
            words = self.words(text)
            lang = self.language_of(words, text)
            return [t for w in words for t in _own(w, lang)]

        def query_terms(self, text: str) -> list[str]:
            words = self.words(text)
            kept = [w for w in words if w not in a.STOP_WORDS] or words
            lang = self.language_of(words, text)
            return [t for w in kept for t in _own(w, lang)]

    def _own(word: str, lang: str) -> list[str]:
        """The word's terms in the text's language alone (CJK: all its characters and pairs)."""
        terms = a._terms([word], lang)
        return terms if a._is_cjk(word) else terms[:1]

    return {
        "before (English stems, no folding, no CJK)": EnglishOnly("en"),
        "language = en (folding + CJK)": a.Analyzer("en"),
        "auto, own stem only": OwnStemOnly("auto"),
        "auto (default: own + English stem)": a.Analyzer("auto"),
    }


def workspace_chunks(src: Path) -> list[Any]:
    from memsearch_lsp.core.chunks import MAX_CHARS, chunk_markdown

    chunks = []
    for path in sorted((src / "memory").rglob("*.md")):
        source = path.relative_to(src).as_posix()
        chunks += chunk_markdown(path.read_text(encoding="utf-8"), source, model="replay", max_chars=MAX_CHARS)
    return chunks


def replay(src: Path, analyzer: Any) -> list[dict[str, Any]]:
    """Per question: its scores under BM25 alone with `analyzer` (top 10 chunks)."""
    from bench.labelled import load_truth
    from memsearch_lsp.core.search.bm25 import doc_vector, term_id
    from memsearch_lsp.core.store.schema import idf

    chunks = workspace_chunks(src)
    vectors = [doc_vector(c.embed_text, analyzer) for c in chunks]
    df: Counter[int] = Counter(t for v in vectors for t in v)
    truth = load_truth(src, src)
    about = _about(src)
    out = []
    for q in truth.questions:
        terms = {term_id(t) for t in analyzer.query_terms(q["q"])}
        weights = {t: idf(len(chunks), df.get(t, 0)) for t in terms}
        scored = [(sum(w * v.get(t, 0.0) for t, w in weights.items()), n) for n, v in enumerate(vectors)]
        top = [n for s, n in sorted(scored, key=lambda x: (-x[0], x[1])) if s > 0][:10]
        spans = [(chunks[n].source, chunks[n].start_line, chunks[n].end_line) for n in top]
        row = {**truth.score(q, spans), "empty": float(not top)}
        row.update(about.get(q["q"], {}))
        out.append(row)
    return out


def _about(src: Path) -> dict[str, dict[str, Any]]:
    """A multilingual set's question languages (questions.json `lang`, `doc_lang`)."""
    path = src / "questions.json"
    if not path.is_file():
        return {}
    qa = json.loads(path.read_text(encoding="utf-8"))["qa"]
    return {q["q"]: {"lang": q["lang"], "cross": q["lang"] != q["doc_lang"]} for q in qa if "lang" in q}


def mean(rows: list[dict[str, Any]], key: str) -> float:
    return sum(r[key] for r in rows) / len(rows) if rows else math.nan


def main(args: Any) -> None:
    from bench.labelled import workspaces

    folders = [Path(d).expanduser().resolve() for d in args.set or []]
    if not folders:
        raise SystemExit("analyzer: name the labelled sets with --set DIR (e.g. ../shared/eval/multilingual-dev)")
    rows = []
    for name, analyzer in variants().items():
        for folder in folders:
            per_query: list[dict[str, Any]] = []
            for src in workspaces(folder):
                per_query += replay(src, analyzer)
            key = "mrr@5" if "mrr@5" in per_query[0] else "r@5"
            row: dict[str, Any] = {"set": folder.name, "analysis": name, key: mean(per_query, key)}
            row["chars@5"] = mean(per_query, "chars@5") if key == "r@5" else None
            row["no answer"] = int(sum(r["empty"] for r in per_query))
            for lang in sorted({r["lang"] for r in per_query if "lang" in r}):
                row[lang] = mean([r for r in per_query if r.get("lang") == lang], key)
            if any(r.get("cross") for r in per_query):
                row["cross"] = mean([r for r in per_query if r.get("cross")], key)
            rows.append(emit("analyzer", row))
            log(f"analyzer: {folder.name} / {name}: {row[key]:.3f}")
    columns = ["set", "analysis", "mrr@5", "r@5", "chars@5", "pt", "es", "de", "zh", "en", "cross", "no answer"]
    table(rows, columns, "BM25 alone, per analysis (offline replay over the product's chunks)")
