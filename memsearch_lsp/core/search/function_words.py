"""The words of a query that say nothing of what it asks about: the relevance floor's term share leaves them out.

The relevance of a hit (core/search/rank.py `relevance`) counts the share of the query's IDF mass the hit holds.
Function words match nearly every note written in their language, so they rank (BM25 still sees them) but make no
note relevant (`function_terms`, used by core/search/hybrid.py):

- Latin-script words: each language's function words (the detection lists of core/search/analyzer.py, English's
  stop words) and its question words and possessives ("cuándo", "qué", "wann", "pourquoi", "mi"), matched with
  their accents folded ("Cuándo" and "cuando" alike). When the query's language is sure (a question holding two of
  its function words, a Chinese question, or `search.language` set), that language's list decides; otherwise
  English's, and in a query of two words or more besides English function words a word that is a function word in
  any language: such a query cannot be told German from English by its words ("Reise nach Berlin", "la receta" are
  read as English), and a German "nach" must not make a note relevant; a query of one word besides them is a
  keyword ("son", "my comment", "van" are English words too). A word in capitals ("EU", "MIT") is a name, never a
  function word.
- Chinese and Japanese text is analysed as characters and pairs of characters, with no word boundaries: function
  characters (的 了 吗 什 么 の は ...) and the pairs that hold one count for nothing, and the characters of the
  query's longer words (`characters`) count only beyond its heaviest one (core/search/hybrid.py said_share): one
  shared character is chance ("天气怎么样", how is the weather, and the 天 of "日志保留 14 天"; "柠檬蛋糕的做法" and
  any note's 的), several are a question put in other words than its note's. A word of one character between
  function characters (猫 of "我的猫") counts as any word does.

A query that holds nothing else is not relevant by its terms at all (its cosine alone decides).
"""

from __future__ import annotations

import re
from functools import cache

from memsearch_lsp.core.search.analyzer import STOP_WORDS, Analyzer, fold, other_forms
from memsearch_lsp.core.search.detection import FUNCTION_WORDS
from memsearch_lsp.core.search.language import QUERY_SURE, sure_language

# Relevance only (detection does not use them: they are rare in notes): question words and possessives.
_ASKING = {
    "en": " ".join(sorted(STOP_WORDS)),
    "pt": "como onde quando quem qual quais quanto quanta quantos quantas porque porquê por quê meu minha meus minhas "
    "seu sua eu você nós",
    "es": "cómo dónde cuándo quién quiénes cuál cuáles cuánto cuánta cuántos cuántas qué por porqué mi mis tu tus "
    "yo nos nuestro nuestra",
    "de": "wann wie was wo wer warum welche welcher welches welchen wieso weshalb woher wohin mein meine meinen "
    "meinem meiner dein deine unser unsere",
    "fr": "quand comment pourquoi quoi qui que où quel quelle quels quelles combien mon ma mes ton ta tes notre nos "
    "je tu",
    "it": "quando come dove chi che cosa quale quali perché quanto mio mia miei mie",
    "nl": "wanneer hoe wat waar wie waarom welke mijn ons onze",
    "sv": "när hur vad var vem varför vilken vilket vilka min mitt mina vår",
}
# Chinese function characters (particles, pronouns, question words, the copula, frequent adverbs and measure words)
# and Japanese particles; characters that begin content words as often (上线, 地址, 过期, 不同) are not among them
FUNCTION_CHARACTERS = frozenset(
    "的了吗呢吧啊呀哦嘛啦么是在和与及或也都就还又很我你您他她它们这那哪什怎谁样个把被给该请のはがをにへでともやかなねよ"
)
_CJK_RUN = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")


@cache
def _languages_of() -> dict[str, frozenset[str]]:
    """A function word with its accents folded -> the languages it is a function word of."""
    found: dict[str, set[str]] = {}
    for lists in (FUNCTION_WORDS, _ASKING):
        for lang, words in lists.items():
            for word in words.split():
                found.setdefault(fold(word), set()).add(lang)
    return {word: frozenset(langs) for word, langs in found.items()}


def function_terms(analyzer: Analyzer, text: str) -> set[str]:
    """The terms of the query `text` that its relevance does not count (see the module's docstring): its function
    words' terms (and their forms in other languages, which may stand in for them: core/search/hybrid.py
    query_weights) and, in Chinese or Japanese text, the function characters and the pairs that hold one, less any
    term a content word of the query also gives."""
    lang = analyzer.language if analyzer.language != "auto" else sure_language(text, QUERY_SURE)
    of = _languages_of()
    left, kept = set(), set()
    words = analyzer.query_words(text)
    latin = [fold(word) for word, _ in words if not _CJK_RUN.match(word)]
    sentence = len([w for w in latin if "en" not in of.get(w, ())]) > 1  # a keyword ("son", "my son") is one word
    names = {fold(w) for w in re.findall(r"\b[A-Z]{2,}\b", text)}  # EU, MIT, NAS: names, not function words
    for word, terms in words:
        if _CJK_RUN.match(word):
            content = _cjk_content(word)
            kept |= content
            left |= set(terms) - content
            continue
        langs = of.get(fold(word), frozenset()) if fold(word) not in names else frozenset()
        if lang in langs or (not lang and ("en" in langs or (langs and sentence))):
            left |= {*terms, *other_forms(word)}
        else:
            kept |= set(terms)
    return left - kept


def characters(analyzer: Analyzer, text: str) -> set[str]:
    """The content characters of the query's Chinese or Japanese words of two characters or more: a note that holds
    one of them alone (the 天 of "14 天" for "天气怎么样") holds nothing of what the query asks; one that holds several
    (a question in other words than its note's) does. The relevance counts their share beyond the query's heaviest
    character (core/search/hybrid.py)."""
    found: set[str] = set()
    for word, _ in analyzer.query_words(text):
        if _CJK_RUN.match(word):
            found |= {c for c in _cjk_content(word) if len(c) == 1} - _alone(word)
    return found


def _cjk_content(run: str) -> set[str]:
    """The terms of a CJK run that say something: its content characters and its pairs of two content characters."""
    pairs = {run[i : i + 2] for i in range(len(run) - 1)}
    content = {p for p in pairs if p[0] not in FUNCTION_CHARACTERS and p[1] not in FUNCTION_CHARACTERS}
    return content | {c for c in run if c not in FUNCTION_CHARACTERS}


def _alone(run: str) -> set[str]:
    """The content characters of a CJK run in no pair of content characters: a word of one character (猫 of
    "我的猫"), which counts as any word does."""
    paired = {c for p in _cjk_content(run) if len(p) == 2 for c in p}
    return {c for c in run if c not in FUNCTION_CHARACTERS and c not in paired}
