"""The BM25 analysis of a text in its own language (told by detection.py): words, folding, stemming, CJK characters.

A chunk and a query go through the same steps (`Analyzer.tokens`, `Analyzer.query_terms`):

1. A text is read in Unicode's compatibility form first (NFKC: an accent typed as a letter and a combining mark, as
   macOS file names and some pastes have it, is one letter; full-width `ＪＳＯＮ ８０８０` are `JSON 8080`), and
   lower-cased (Turkish `İ` is `i`). Words are runs of letters, digits and their marks (Tamil's vowel signs);
   Chinese, Japanese and Korean text (no spaces between words) becomes its characters plus each pair of
   neighbouring characters ("预约系统" -> 预 约 系 统 预约 约系 系统), so a question meets a note that shares a
   word with it without a dictionary. A symbol ("🔥", "✅"; not a box drawing's lines) is a term of its own, and a
   dotted or colon-joined identifier is also one term whole (`identifiers`: "v2.3.1" as "2.3.1", "10.0.3.17",
   "cache.internal:6380"), its words kept, so "20.11.1" is told from "20.1.11".
2. The language of the text is detected (`detect`: function words and letters of each language, English when
   nothing else stands out) or fixed by `search.language`. Latin-script words are stemmed in that language;
   in a text that is not English each word also keeps its English stem, so the English technical words of a
   Portuguese note ("deploy", "caching") still meet an English or Portuguese question that names them (the
   replay in bench/README.md: stemming as Portuguese alone cost them). Cyrillic, Greek, Arabic and Tamil
   words are stemmed in their script's language whatever the text's.
3. Accents are folded after stemming (clínica, clinica -> clinic), Latin, Greek and Cyrillic letters only; a
   Portuguese plural in -ões (or -oes) is read as its singular in -ão first, which Snowball keeps apart.
4. A query word that the index holds in none of its own forms is looked for in its forms of every language
   (`other_forms`; core/search/hybrid.py query_weights): a query too short to tell its language from is read as
   English, and "quand déployer" would otherwise never meet "Les déploiements".

Stop words are not removed per language (the replay: a minority language's function words filter usefully);
a query drops the English ones (`STOP_WORDS`), as it always did, and its relevance (the floor) does not count
the others (core/search/function_words.py). An English text is analysed as before plus
folding and CJK characters, so English rankings are unchanged.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import cache, lru_cache
from typing import Any

from memsearch_lsp.config import SEARCH_LANGUAGES
from memsearch_lsp.core.search.detection import detect, is_cjk

VERSION = "v8"  # bump when any step changes: stored BM25 weights are rewritten (core/index.py)
# search.language: a code, or "auto" (detect each text's). The stemmer each code uses (py_rust_stemmers).
STEMMERS = {
    "en": "english",
    "pt": "portuguese",
    "es": "spanish",
    "de": "german",
    "fr": "french",
    "it": "italian",
    "nl": "dutch",
    "sv": "swedish",
    "no": "norwegian",
    "da": "danish",
    "fi": "finnish",
    "hu": "hungarian",
    "ro": "romanian",
    "tr": "turkish",
    "ru": "russian",
    "el": "greek",
    "ar": "arabic",
    "ta": "tamil",
}
NO_STEMMER = ("zh", "ja", "ko")  # CJK: characters and their pairs, no stemming
LANGUAGES = SEARCH_LANGUAGES  # "auto", then every code of STEMMERS and NO_STEMMER

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
# the marks of the alphabetic scripts (Unicode category M: Tamil's and Devanagari's vowel signs and virama, combining
# accents NFKC leaves alone): part of the word they are in, as `\w` alone would cut "தமிழ்" into "தம", "ழ"
_MARKS = (
    "\u0300-\u036f\u0483-\u0489\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7\u0610-\u061a\u064b-\u065f"
    "\u0670\u06d6-\u06dc\u06df-\u06e4\u06e7\u06e8\u06ea-\u06ed\u0900-\u0903\u093a-\u094f\u0951-\u0957\u0962"
    "\u0963\u0981-\u0983\u09bc-\u09d7\u0a01-\u0a03\u0a3c-\u0a51\u0a81-\u0a83\u0abc-\u0acd\u0b01-\u0b03"
    "\u0b3c-\u0b57\u0b82\u0bbe-\u0bcd\u0bd7\u0c00-\u0c04\u0c3e-\u0c56\u0c81-\u0c83\u0cbc-\u0cd6\u0d00-\u0d03"
    "\u0d3b-\u0d57\u0e31\u0e34-\u0e3a\u0e47-\u0e4e\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
)

# the blocks whose symbols (Unicode category So) are terms of their own ("🔥", "✅", "⚠"): arrows, technical, dingbats,
# emoji; not box drawing nor block elements (a tree's or a chart's lines)
_SYMBOL_BLOCKS = ((0x2190, 0x2500), (0x25A0, 0x2C00), (0x1F000, 0x1FB00))


def _symbols() -> str:
    """The symbols of _SYMBOL_BLOCKS as a character class's ranges."""
    runs: list[list[int]] = []
    for code in (c for low, high in _SYMBOL_BLOCKS for c in range(low, high)):
        if unicodedata.category(chr(code)) != "So":
            continue
        if runs and runs[-1][1] == code - 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    return "".join(f"{chr(low)}-{chr(high)}" for low, high in runs)


_TOKEN = f"[{_CJK}]+|(?:[^\\W{_CJK}]|[{_MARKS}])+"
_WORD = f"(?:\\w|[{_MARKS}])+"  # the same where a text has no CJK letter (most), and faster
# (cjk, symbols) -> the pattern of a text's words: a symbol's class is slow to test, so only where one may be
_PATTERNS = {
    (cjk, symbols): re.compile(f"{_TOKEN if cjk else _WORD}|[{_symbols()}]" if symbols else _TOKEN if cjk else _WORD)
    for cjk in (False, True)
    for symbols in (False, True)
}
_MAY_SYMBOL = re.compile("[\u2190-\u2bff\U0001f000-\U0001faff]")  # the span of _SYMBOL_BLOCKS: one quick test
_HAS_CJK = re.compile(f"[{_CJK}]")
# Words of another script are stemmed in that script's language (first letter decides).
_SCRIPTS = ((0x0370, 0x0400, "el"), (0x0400, 0x0530, "ru"), (0x0600, 0x0700, "ar"), (0x0B80, 0x0C00, "ta"))


def _folds(code: int) -> bool:
    """Latin, Greek and Cyrillic letters (and Latin Extended Additional: Vietnamese), whose accents fold."""
    return code < 0x0530 or 0x1E00 <= code < 0x2000


# English function words dropped from queries (not from documents): in a question such as "What did Nate
# say about his dog?" they match nearly every chunk of a conversation and drown the content words.
# bench/README.md: recall@5 0.772 -> 0.805 for BM25 alone on conversational memory.
_STOP = (
    "a an the and or but if of at by for with about to from in on into is are was were be been being do does "
    "did done have has had having i me my you your he him his she her it its we us our they them their what "
    "which who whom whose when where why how this that these those am will would can could should shall may "
    "might must not no so than too very just also there here then"
)
STOP_WORDS = frozenset(_STOP.split())

# a shorter stem of another language meets unrelated words: "plug" of "plugh", "wo" of "wonk", "lem" of "lemon"
MIN_FORM = 5


def normalized(text: str) -> str:
    """`text` as analysis reads it: its compatibility form (NFKC), lower-cased (Turkish "İ" as "i")."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", text).lower().replace("i\u0307", "i")


# the letters Unicode does not decompose into a letter and an accent, as a reader types them without it
_PLAIN = str.maketrans({**dict(zip("øØłŁđĐıðÐ", "oOlLdDidD")), "œ": "oe", "Œ": "OE", "æ": "ae", "Æ": "AE", "ß": "ss"})


def fold(word: str) -> str:
    """The word without accents (é -> e, ß -> ss, œ -> oe, ł -> l), for Latin, Greek and Cyrillic letters only."""
    if word.isascii():
        return word
    out = []
    for char in word:
        if not _folds(ord(char)):
            out.append(char)
            continue
        decomposed = unicodedata.normalize("NFKD", char)
        out.append("".join(c for c in decomposed if not unicodedata.combining(c)))
    return "".join(out).translate(_PLAIN)


@cache
def _stemmer(name: str) -> Any:
    try:
        from py_rust_stemmers import SnowballStemmer  # ships with fastembed

        return SnowballStemmer(name)
    except ImportError:  # pragma: no cover - fastembed always brings it
        return None


# English words the stemmer keeps apart from the verb they name, by their stems: a noun in -sion of a verb in -de or
# -t ("the decision" is what "we decided"), "agreement", and the forms of "choose"
_ENGLISH_FAMILIES = {
    "decis": "decid",
    "conclus": "conclud",
    "inclus": "includ",
    "exclus": "exclud",
    "collis": "collid",
    "explos": "explod",
    "persuas": "persuad",
    "invas": "invad",
    "expans": "expand",
    "admiss": "admit",
    "omiss": "omit",
    "submiss": "submit",
    "transmiss": "transmit",
    "emiss": "emit",
    "agreement": "agre",
    "chose": "choos",
    "chosen": "choos",
    "choic": "choos",
}
_PT_PLURAL = re.compile(r"(?:ões|oes)$")  # a Portuguese plural of -ão, accents or none (migrações, migracoes)


@lru_cache(maxsize=131072)
def stem(word: str, lang: str) -> str:
    """`word` stemmed in `lang` (or in its script's language) and folded; numbers and mixed words as they are."""
    if not word.isalpha():
        return fold(word)
    code = ord(word[0])
    lang = next((script for low, high, script in _SCRIPTS if low <= code < high), lang)
    if lang == "pt":  # Snowball keeps "migraçõ" of migrações apart from "migraçã" of migração: one stem for both
        word = _PT_PLURAL.sub(lambda m: "ão" if m.group()[0] == "õ" else "ao", word)
    stemmer = _stemmer(STEMMERS[lang]) if lang in STEMMERS else None
    stemmed = fold(str(stemmer.stem_word(word)) if stemmer is not None else word)
    return _ENGLISH_FAMILIES.get(stemmed, stemmed) if lang == "en" else stemmed


@lru_cache(maxsize=131072)
def _english(word: str) -> str:
    return stem(word, "en")


def _terms(words: list[str], lang: str, cjk: bool = True) -> list[str]:
    english = lang == "en" or lang in NO_STEMMER
    if english and not cjk:  # most text: one cached lookup a word
        return [_english(w) for w in words]
    out: list[str] = []
    for word in words:
        if is_cjk(word):
            out += word if len(word) == 1 else [*word, *(word[i : i + 2] for i in range(len(word) - 1))]
            continue
        own = stem(word, "en" if english else lang)
        out.append(own)
        if not english and (other := stem(word, "en")) != own:
            out.append(other)
    return out


class Analyzer:
    """The analysis of every text of one index (`language`: a code of LANGUAGES, "auto" to detect)."""

    def __init__(self, language: str = "auto"):
        if language not in LANGUAGES:
            raise ValueError(f"search.language: expected one of {', '.join(LANGUAGES)}, got {language!r}")
        self.language = language
        # Stored with the BM25 statistics: a different name means the index's weights are rewritten.
        self.name = f"words-fold-cjk-stem-{VERSION}:{language}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Analyzer) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"Analyzer({self.language!r})"

    @staticmethod
    def words(text: str) -> list[str]:
        """Lower-cased words and CJK runs (longer than 63 characters: left out)."""
        return _words(normalized(text), bool(_HAS_CJK.search(text)))

    def language_of(self, words: list[str], text: str = "") -> str:
        return detect(words, normalized(text)) if self.language == "auto" else self.language

    def tokens(self, text: str) -> list[str]:
        """A document's terms, in order (a word may give two: its own stem and its English one)."""
        lowered, cjk = normalized(text), bool(_HAS_CJK.search(text))
        words = _words(lowered, cjk)
        lang = detect(words, lowered, cjk) if self.language == "auto" else self.language
        terms = _terms(words, lang, cjk)
        if "_" in lowered or "-" in lowered:  # "ack_wait" is also found as "ack" and "wait", "on-call" as "oncall"
            terms += _terms(compound_forms(lowered, words), lang, cjk)
        if "." in lowered or ":" in lowered:  # "v2.3.1" is also found whole: "2.3.1" (its parts 3 and 1 as before)
            terms += _terms(identifiers(lowered), lang, cjk)
        return terms

    def query_terms(self, text: str) -> list[str]:
        """The query's terms without English stop words; all of them when nothing else is left."""
        return [term for _, terms in self.query_words(text) for term in terms]

    def query_words(self, text: str) -> list[tuple[str, list[str]]]:
        """Each word of the query (English stop words left out, unless nothing else is left) with its terms, then its
        hyphenated words written as one and its dotted identifiers whole (as a document's terms hold them)."""
        lowered, cjk = normalized(text), bool(_HAS_CJK.search(text))
        words = _words(lowered, cjk)
        kept = [w for w in words if w not in STOP_WORDS] or words
        lang = detect(words, lowered, cjk) if self.language == "auto" else self.language
        whole = identifiers(lowered) if "." in lowered or ":" in lowered else []
        joined = joined_forms(lowered) if "-" in lowered else []  # "on-call" also as "oncall", as documents hold it
        extra = [word for word in dict.fromkeys(joined + whole) if word not in kept]
        return [(word, _terms([word], lang, cjk)) for word in [*kept, *extra]]

    def placed_terms(self, text: str) -> tuple[str, list[tuple[int, str, str]]]:
        """The language of `text` and its terms (as `tokens` gives them, less the compound and dotted forms), each with
        its word (as `words` reads it) at that word's offset in `text`, a CJK run's character and pair at the
        character's: where a text holds a query's terms, for a search's snippet."""
        cjk = bool(_HAS_CJK.search(text))
        pattern = _PATTERNS[cjk, not text.isascii() and _MAY_SYMBOL.search(text) is not None]
        found = [(m.start(), normalized(m.group())) for m in pattern.finditer(text) if len(m.group()) < 64]
        lang = self.language_of([word for _, word in found], text)
        placed: list[tuple[int, str, str]] = []
        for at, word in found:
            terms, run = _terms([word], lang, cjk), len(word) if cjk and is_cjk(word) else 0
            placed += [(at + (n if n < run else n - run if run else 0), word, term) for n, term in enumerate(terms)]
        return lang, placed  # (a run's terms are its characters, then the pairs from each: _terms)


def other_forms(word: str) -> list[str]:
    """`word` stemmed in every language of STEMMERS, each form once: where a query word that the index holds in
    none of its own forms may be found (a one-word French query "déployer" meets "déploiements" by its French stem,
    though the query alone is read as English). Forms shorter than MIN_FORM are left out; none for a CJK run or a
    number."""
    if not word.isalpha() or is_cjk(word):
        return []
    return [form for form in dict.fromkeys(stem(word, lang) for lang in STEMMERS) if len(form) >= MIN_FORM]


# a word of two to four parts joined by hyphens, whole: not a part of a longer one ("a-b-c-d-e"), but after a dash
# or two ("--dry-run")
_HYPHENATED = re.compile(r"(?<!\w)(?<!\w-)\w+(?:-\w+){1,3}(?!-?\w)")


def compound_forms(lowered: str, words: list[str]) -> list[str]:
    """The other forms a reader types of a document's compound words: each part of an identifier joined by
    underscores ("nccl_p2p_disable": nccl, p2p, disable) and a hyphenated word written as one ("on-call": oncall,
    "e-mail": email). A query finds them as it finds any word: "NCCL", "ack wait", "oncall"."""
    parts = [part for word in words if "_" in word for part in word.split("_") if part]
    return [form for form in parts if len(form) < 64 and not form.isdigit()] + joined_forms(lowered)


def joined_forms(lowered: str) -> list[str]:
    """The hyphenated words of a text written as one ("on-call": oncall, "e-mail": email), dates ("2026-11-11") left
    out: a document's (compound_forms) and a query's, so "on-call" meets "oncall" and the notes that say "on-call"
    rather than the ones that say "called" (its "on" is an English stop word)."""
    joined = [  # (the pattern run on each piece with a hyphen between spaces: a third of the time of the whole text)
        match.replace("-", "")
        for piece in lowered.split()
        if "-" in piece and len(piece) > 2
        for match in _HYPHENATED.findall(piece)
    ]
    return [form for form in joined if len(form) < 64 and not form.isdigit()]


def _words(lowered: str, cjk: bool) -> list[str]:
    symbols = not lowered.isascii() and _MAY_SYMBOL.search(lowered) is not None
    return [w for w in _PATTERNS[cjk, symbols].findall(lowered) if len(w) < 64]


_WORD_CHAR = f"[^\\W{_CJK}]"  # a word's character (CJK's are words of their own)
_PART = f"{_WORD_CHAR}++(?:-{_WORD_CHAR}++)*+"  # a word, or words joined by hyphens (2.0.0-beta.1, my-app.conf)
# begun at a word's first character only (not after "x-"), and never given back (possessive): no match begins or ends
# inside a hyphen chain, so each character is tried once ("x.y!a-a-a-…" was tried from each "a" to the end: quadratic)
_IDENTIFIER = re.compile(f"(?<!{_WORD_CHAR})(?<!{_WORD_CHAR}-){_PART}(?:[./:]{_PART})++")
_JOINED = re.compile(r"[.:]\w")  # where one may be: the identifier's pattern is slow to try at every letter of a text
_SPACE = re.compile(r"\s")
_VERSION = re.compile(r"v\d+(?:\.\d+)+")
_SEPARATORS = re.compile(r"[./:-]")
_INITIALS = re.compile(r"[^\W\d](?:[.:][^\W\d])+")  # e.g, i.e, p.m, j.k: an abbreviation, no identifier


def identifiers(lowered: str) -> list[str]:
    """The dotted and colon-joined identifiers of a text, whole, as a reader types them: a version ("v2.3.1" as
    "2.3.1"), an address ("10.0.3.17", "cache.internal:6380", with its host "cache.internal"), a path with a file
    name ("/etc/app/conf.d/main.toml", with "conf.d" and "main.toml"), an image ("python:3.11.4", with "3.11.4").
    Their words are terms as before ("numpy 2" meets "numpy 2.0"); the whole one tells "20.11.1" from "20.1.11" and
    is missing from every note when the version or address asked for is (the floor, core/search/rank.py). A sentence's
    last dot is no part ("in v2.3.1." is "2.3.1"); words joined by slashes alone ("client/server") and initials
    ("e.g.", "p.m.") are none."""
    found: list[str] = []
    for match in _matches(lowered):
        forms = [match]
        for piece in match.split("/"):
            if piece != match and ("." in piece or ":" in piece):
                forms.append(piece)
            forms += [part for part in piece.split(":") if part != piece and "." in part]
        found += [form[1:] if _VERSION.fullmatch(form) else form for form in dict.fromkeys(forms) if len(form) < 64]
    return found


def loose_numbers(text: str) -> set[str]:
    """The numbers a query names only as parts of its identifiers ("1" and "0" of "1.0.0", "9" of "10.9.9.9"): a note
    that holds them and not the identifier holds nothing the query names, so the relevance (the floor) does not count
    them (core/search/hybrid.py said_share); the identifier counts, and "numpy 2" keeps its "2"."""
    lowered = normalized(text)
    if "." not in lowered and ":" not in lowered:
        return set()
    parts = Counter(part for match in _matches(lowered) for part in _SEPARATORS.split(match) if part.isdigit())
    words = Counter(_words(lowered, bool(_HAS_CJK.search(lowered))))
    return {number for number, count in parts.items() if words[number] <= count}


def _matches(lowered: str) -> list[str]:
    return [
        match
        for piece in _pieces(lowered)
        for match in _IDENTIFIER.findall(piece)
        if ("." in match or ":" in match) and not _INITIALS.fullmatch(match)
    ]


def _pieces(lowered: str) -> list[str]:
    """The pieces of a text between spaces (at most 128 characters before the join) that join words by a dot or a
    colon."""
    out, end = [], 0
    for hit in _JOINED.finditer(lowered):
        at = hit.start()
        if at < end:
            continue
        low = max(0, at - 128)
        start = max(lowered.rfind(" ", low, at), lowered.rfind("\n", low, at))
        space = _SPACE.search(lowered, at)
        end = space.start() if space else len(lowered)
        out.append(lowered[start + 1 if start >= 0 else low : end])
    return out
