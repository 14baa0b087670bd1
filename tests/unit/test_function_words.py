"""What a query's relevance leaves out: function words of any language, question words with or without accents,
and Chinese function characters and the characters of a query's pairs (core/search/function_words.py)."""

from __future__ import annotations

import pytest

from memsearch_lsp.core.search.analyzer import Analyzer
from memsearch_lsp.core.search.function_words import characters, function_terms

AUTO = Analyzer()


def said(text: str, analyzer: Analyzer = AUTO) -> set[str]:
    """The query's terms its relevance counts."""
    terms = {t for _, found in analyzer.query_words(text) for t in found}
    return terms - function_terms(analyzer, text)


@pytest.mark.parametrize(
    ("query", "pairs", "single", "alone"),
    [
        ("天气怎么样", {"天气"}, {"天", "气"}, set()),  # not 怎么 / 么样; 天 is one of the characters
        ("柠檬蛋糕的做法", {"柠檬", "檬蛋", "蛋糕", "做法"}, set("柠檬蛋糕做法"), set()),  # 的 splits the pairs
        ("周末去爬山吗", {"周末", "末去", "去爬", "爬山"}, set("周末去爬山"), set()),
        ("我的猫", set(), set(), {"猫"}),  # a word of one character counts as any word does
        ("的", set(), set(), set()),
    ],
)
def test_chinese_counts_pairs_of_content_characters(
    query: str, pairs: set[str], single: set[str], alone: set[str]
) -> None:
    """Pairs holding a function character are left out; the characters of longer words count only beyond one
    (core/search/hybrid.py said_share), a word of one character as a word."""
    counted = said(query)
    assert {t for t in counted if len(t) == 2} == pairs
    assert {t for t in counted if len(t) == 1} == single | alone
    assert characters(AUTO, query) == single


@pytest.mark.parametrize(
    ("query", "counted"),
    [
        # question words are function words with their accents or without them
        ("¿Cuándo es el cumpleaños de mi abuela?", {"cumplean", "cumpleano", "abuel", "abuela"}),
        ("cuando es el cumpleanos de mi abuela", {"cumplean", "cumpleano", "abuel", "abuela"}),
        ("Quando é o aniversário da minha avó?", {"aniversari", "aniversario", "avo"}),
        ("Où est la gare la plus proche ?", {"gar", "gare", "proch"}),
        # too short to tell its language from: a function word of any language is left out
        ("Reise nach Berlin", {"reis", "berlin"}),
        ("receta de pastel de limón", {"recet", "receta", "pastel", "limon"}),
        ("Wann läuft das Backup der Datenbank?", {"lauft", "backup", "datenbank"}),
    ],
)
def test_function_words_of_every_language_are_left_out(query: str, counted: set[str]) -> None:
    assert said(query) == counted


def test_a_sure_language_keeps_words_that_are_function_words_only_elsewhere() -> None:
    """A question surely in English keeps "die" and "van" (German and Dutch function words); the same words in a
    sentence too short to be told English from are left out; a keyword of one or two words keeps them."""
    assert {"die", "van"} <= said("What did the team say about the van and the die casting?")
    assert said("die casting van") == {"cast", "casting"}  # read as Dutch, not surely English
    assert said("the") == set() and said("the nach") == {"nach"}  # a keyword: only English's are left out
    for keyword in ("son", "comment", "van", "nach"):  # English words too ("my son", "a comment", "rented a van")
        assert said(keyword) == {keyword} and said(f"my {keyword}") == {keyword}
    assert said("Is the NAS in the EU under MIT terms") >= {"nas", "eu", "mit"}  # in capitals: names
    for query, counted in (("la receta", {"receta"}), ("nach Berlin", {"berlin"}), ("die Migration", {"migrat"})):
        assert said(query) == counted  # two words: the article or preposition is one
    assert said("Reise nach Berlin", Analyzer("en")) == {"reis", "nach", "berlin"}  # search.language decides
    assert said("recipe for lemon cake") == {"recip", "lemon", "cake"}
