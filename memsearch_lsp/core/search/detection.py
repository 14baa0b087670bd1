"""A text's language, told from its function words and letters (detection only: nothing here changes a term)."""

from __future__ import annotations

import re
from collections import Counter

_KANA = re.compile("[\u3040-\u30ff]")
_HANGUL = re.compile("[\uac00-\ud7af]")

# Detection only (never removed): each language's most frequent function words, and letters it alone uses.
FUNCTION_WORDS = {
    "en": "the and of to is in that it for was on are with as be this have from at by not but what which you "
    "they we there been would will can could should about how when who did does",
    "pt": "de que não uma um para com os as do da dos das em no na nos nas ao pelo pela foi são está estão mas "
    "como mais também porque quando ele ela isso esse essa este esta já só sem sobre pra é às então ainda o a e "
    "qual quais quem onde quanto quantos ficou vai tem",
    "es": "de el la los las del y en es un una por con para que se no lo al pero como más está están fue son este "
    "esta ese esa muy también porque cuando hay ya sin sobre le les su sus qué cuál cuáles quién dónde cuántos",
    "de": "der die das und ist nicht ein eine einen dem den des zu mit auf für von im sich auch es wir ich sie er "
    "aber oder wenn wie noch nach bei aus dass nur um werden wird sind hat haben kein was wer wo warum welche",
    "fr": "le la les et est un une des du de en que qui pour pas dans sur avec ce cette il elle nous vous ils "
    "sont au aux par plus mais ou ne se quel quelle où",
    "it": "il lo la gli le di del della che è e un una per non con sono nel nella alla al ma come anche più "
    "questo questa perché chi dove quale",
    "nl": "de het een en van ik je dat die niet is op te met voor zijn maar ook als bij wat er nog naar hebben "
    "heeft wie waar",
    "sv": "och att det som en ett är på för med inte av till den har jag de om var men från vad vem",
}
# Detection only: the words of one list that other languages (English too) use as often, and tokens of any note ("e"
# of "e.g.", "com" of a web address). A word counts for each language it is written in, so only the words one language
# alone uses tell it from another: terse English notes ("a", "as", "no", "do") were read as Portuguese.
_SHARED = """en a no do so e per plus come men till met son non com
pt por se ou
es a o se nos
fr a on se son je
it a o in se so quando quanto
de in als
nl in om"""  # a language a line: its code, then the words
_WORDS: dict[str, tuple[str, ...]] = {}  # a word -> the languages it counts for
for _lang, _list in [*FUNCTION_WORDS.items(), *(line.split(" ", 1) for line in _SHARED.splitlines())]:
    for _word in _list.split():
        _WORDS[_word] = tuple(dict.fromkeys((*_WORDS.get(_word, ()), _lang)))
# a language's letters (each counts for every language that has it: ä and ö are German and Swedish)
_LETTERS = {"pt": "ãõ", "es": "ñ¿¡", "de": "ßäöü", "fr": "èëœ", "it": "èìò", "sv": "åäö", "nl": "ë"}
_OWN_LETTER = {c: tuple(lang for lang, letters in _LETTERS.items() if c in letters) for c in "".join(_LETTERS.values())}
_SPECIAL = re.compile(f"[{''.join(_OWN_LETTER)}]")
DETECT_WORDS = 400  # a text's language is told from its first words (a chunk is about 250)
_LETTER_WEIGHT = 2  # a language's own letter counts as two of its function words


def detect(words: list[str], text: str = "", cjk: bool = True) -> str:
    """The language of a text from its lower-cased words (and `text`, for its letters): CJK when a fifth of
    the words are CJK runs, else the Latin-script language whose function words and letters score highest
    when it beats English by a clear margin, else English. A word or letter of several languages counts for each."""
    if not words:
        return "en"
    runs = [w for w in words if is_cjk(w)] if cjk else []  # (cjk=False: the caller knows there is none)
    if runs and len(runs) * 5 >= len(words):
        joined = "".join(runs)
        return "ja" if _KANA.search(joined) else "ko" if _HANGUL.search(joined) else "zh"
    scores: Counter[str] = Counter()
    for word, count in Counter(words[:DETECT_WORDS]).items():
        for lang in _WORDS.get(word, ()):
            scores[lang] += count
    for letter in _SPECIAL.findall(text[: DETECT_WORDS * 8]):
        for lang in _OWN_LETTER[letter]:
            scores[lang] += _LETTER_WEIGHT
    best, score = max(scores.items(), key=lambda kv: (kv[1], kv[0] == "en"), default=("en", 0))
    return best if best != "en" and score >= max(2, scores["en"] + 1) else "en"


def evidence(words: list[str], lang: str) -> int:
    """How many different function words of `lang` (detection's lists) are among the first words of a text: a
    paragraph in that language holds many; a table or a code block that `detect` calls Portuguese for its "não"
    holds one or two."""
    return sum(1 for word in set(words[:DETECT_WORDS]) if lang in _WORDS.get(word, ()))


def is_cjk(word: str) -> bool:
    """A word of CJK letters (the analyzer's runs of Chinese, Japanese or Korean characters)."""
    return "\u3040" <= word[0] <= "\ud7af" or "\uf900" <= word[0] <= "\ufaff"
