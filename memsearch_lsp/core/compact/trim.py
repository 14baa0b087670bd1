"""The trims that shorten a kept sentence without touching its facts (TRIMS, each stated in one line; asides)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from memsearch_lsp.core.compact.facts import classify, label_kept

# code, a parenthesis and a quotation are never trimmed inside
_SHIELD = re.compile(r"`[^`]*`|\([^()]*\)|\"[^\"]*\"|“[^”]*”")
_FILLER = re.compile(
    # never "just" ("not just the email") or "currently" ("currently 5"): they can carry the fact
    r"(?<![\w'’-])(?:really|actually|basically|simply|quite|very|obviously|of course|anyway|as usual),? (?=\S)",
    re.I,
)
_OPENER = re.compile(
    r"^(?:so|also|and|but|then|now|ok(?:ay)?|anyway|in the end|at the end|after that|"
    r"first(?:ly)?|finally|turns out|as it turns out)\b[,:]?\s+(?=\S)",
    re.I,
)
_LEAD = re.compile(r"^([^:`()]{3,60}):\s+(?=\S)")  # "Found it: ...", "Looked at the backpressure tab: ..."
_WORDY = (
    (re.compile(r"\bin order to\b", re.I), "to"),
    (re.compile(r"\bas well as\b", re.I), "and"),
    (re.compile(r"\ba lot of\b", re.I), "many"),
    (re.compile(r"\bis able to\b", re.I), "can"),
    (re.compile(r"\bdue to the fact that\b", re.I), "because"),
)


@dataclass(frozen=True)
class Trim:
    """A rewrite of a kept sentence that keeps every fact in it."""

    name: str
    apply: Callable[[str], str]
    says: str


def _outside(pattern: re.Pattern[str], repl: str) -> Callable[[str], str]:
    """`pattern` replaced by `repl` everywhere but inside code, a parenthesis or a quotation."""

    def apply(text: str) -> str:
        out, at = [], 0
        for match in _SHIELD.finditer(text):
            out.append(pattern.sub(repl, text[at : match.start()]))
            out.append(match.group())
            at = match.end()
        out.append(pattern.sub(repl, text[at:]))
        return "".join(out)

    return apply


def _opener(text: str) -> str:
    rest = text
    for _ in range(3):  # "Okay, so it is ...": each connective in turn
        shorter = _OPENER.sub("", rest, count=1)
        if shorter == rest:
            break
        rest = shorter
    return rest[:1].upper() + rest[1:] if rest != text and text[:1].isupper() else rest


def _lead(text: str) -> str:
    match = _LEAD.match(text)
    if match is None or label_kept(match.group(1)) or classify(match.group(1), first=False).factual:
        return text  # ("Cause: ...", "Fix: ..." say what the sentence is)
    rest = text[match.end() :]
    # (nor before a value, which says nothing without what it is of: "Eastfield depot: 38 buses")
    if not classify(rest, first=False).factual or rest[:1].isdigit():
        return text
    return rest[:1].upper() + rest[1:] if text[:1].isupper() else rest


def _wordy(text: str) -> str:
    for pattern, short in _WORDY:
        text = _outside(pattern, short)(text)
    return text


TRIMS: tuple[Trim, ...] = (
    Trim(
        "lead",
        _lead,
        "a lead-in before a colon that says no fact and is no label: 'Found it: the cache' -> 'The cache'",
    ),
    Trim("opener", _opener, "a connective that opens a sentence: so, also, then, in the end, anyway"),
    Trim("filler", _outside(_FILLER, ""), "a word that adds nothing: really, actually, basically, simply, very"),
    Trim("wordy", _wordy, "a long phrase for a short one: in order to -> to, as well as -> and"),
)


def trim(text: str) -> str:
    """`text` with every trim of TRIMS applied (never inside code, a parenthesis or a quotation)."""
    for rule in TRIMS:
        text = rule.apply(text)
    return re.sub(r" {2,}", " ", text).strip()


_NEGATION = re.compile(r"\b(?:not|no|never|nicht|kein\w*|nie|nunca|jamais|pas|sem|sin|ohne)\b", re.I)
_ASIDE = re.compile(r"\s\(([^()]{3,80})\)(?=[\s.,;:!?]|$)")


def without_asides(text: str) -> str:
    """`text` without its asides in parentheses that carry no fact ("(not important)", "(newer versions queue
    the call)"); one that names a number, code, a name or a role stays ("(about 12 MB)", "Carol (product)")."""

    def keep(match: re.Match[str]) -> str:
        inner = match.group(1)
        before = text[: match.start()].split()
        named = bool(before) and before[-1][:1].isupper()  # "Carol (product)": a person and a role
        said = named or re.search(r"[\d`A-Z/_=]", inner) or classify(inner, first=False).factual
        said = said or bool(_NEGATION.search(inner))  # "keep it disabled (not deleted)": the point itself
        return match.group(0) if said else ""

    return _ASIDE.sub(keep, text)
