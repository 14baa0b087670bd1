"""What a summary keeps or drops: the sentences and clauses of a log's items (`Unit`), each with the clause it
leans on, split where a reader would (never inside code, a parenthesis, a title or an abbreviation)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memsearch_lsp.core.compact.blocks import block_gist
from memsearch_lsp.core.compact.parse import EMPHASIS, SHORT_BLOCK, Item, labelled, split_label
from memsearch_lsp.core.compact.trim import trim, without_asides

# sentences (one may open with `code` or a lower-case name such as holds-service or pool_size), and clauses at "; "
# and before ", so" / ", but" / ", which" (never after a title or an abbreviation: "Prof. Lindqvist", "e.g. Kafka";
# never before a reason: German writes "fehlgeschlagen, weil ...", and a failure's cause is one sentence);
# Chinese ends a sentence at 。！？ and a clause at ；, with no space after them
_ABBREV = "".join(
    f"(?<!\\b{a}\\.)" for a in ("Prof", "Dr", "Mr", "Mrs", "Ms", "St", "vs", "approx", "e\\.g", "i\\.e", "cf")
)
_SPLIT = re.compile(
    _ABBREV
    + r"(?<=[.!?…])[\"')\]]*\s+(?=[\"'(\[]?[A-ZÀ-ÖØ-Þ0-9\u3400-\u9fff`]|[a-z]\w*[-_][a-z0-9])"
    + r"|(?<=[。！？])\s*(?=\S)|;\s+|；\s*(?=\S)|,\s+(?!(?:because|weil|porque|parce que|parce qu'|puisque|pois)\b)"
)
_CLAUSE = re.compile(r"(?:so|but|which|then)\s")  # a clause after ", so": leans like one after ";"
_SHIELD = re.compile(r"`[^`]+`|\([^()]*\)")  # never split inside code or a parenthesis
_ASIDES = re.compile(r"\([^()]*\)")
UNIT_OVERHEAD = 3  # "- " and a newline: what each kept line costs besides its words
MIN_COST = 40  # a short sentence is charged as this many characters: what it says is rarely whole
# a German ordinal is a number with a dot ("am 30. Juni", "im 2. Stock", "das 3. Quartal"): no sentence ends there
_ORDINAL_BEFORE = re.compile(r"(?:^|\s)\d{1,2}\.$")
_ORDINAL_AFTER = re.compile(
    r"(?:Januar|Jänner|Februar|März|April|Mai|Juni|Juli|August|September|Oktober|November|Dezember|Jan|Feb|Mär|Apr|"
    r"Jun|Jul|Aug|Sep|Sept|Okt|Nov|Dez|Quartal|Stock|Stockwerk|Etage|Obergeschoss|OG|Platz|Woche|Tag|Mal|Sprint|"
    r"Runde|Version|Lauf|Versuch)\b"
)
MIN_CLAUSE = 30  # a clause after a comma shorter than this is part of the one before it (a list, an aside)


@dataclass
class Unit:
    """A sentence or clause of an item (or a whole block, or a block's gist): what the summary keeps or drops."""

    item: Item
    start: int  # span in the item's cleaned text
    end: int
    text: str
    score: float = 0.0
    weak: bool = False  # a question, small talk, narration or a fragment: never worth a line of the summary
    must: bool = False  # a labelled line (Decision:, Root cause:, TODO ...): always kept
    lean: Unit | None = None  # the clause it needs beside it (its sentence's first clause)

    @property
    def density(self) -> float:
        """What it carries per character (the budget buys facts), taken with the clauses it leans on: they come
        with it, so "the SDK throws on Android 12 only" costs its long first clause too."""
        group = [self]
        while group[-1].lean is not None:
            group.append(group[-1].lean)
        return sum(max(u.score, 0) for u in group) / sum(max(len(u.text), MIN_COST) + UNIT_OVERHEAD for u in group)


def clean(item: Item) -> tuple[str, str]:
    """(label, body): emphasis markers dropped, a leading 'Name:' label set apart; a long block's gist."""
    if item.kind == "block":
        return "", item.text if len(item.text) <= SHORT_BLOCK else block_gist(item.text)
    return split_label(item)


def _pieces(body: str) -> list[tuple[int, int, str]]:
    """(start, end, what comes before it) of each sentence and clause of `body`: "." opens a sentence, ";" a clause
    after `;` or `, so`, "," one after a comma. Never split inside `code` or (a parenthesis); a comma piece
    shorter than MIN_CLAUSE (a list's item: "cart, pricing and payment") stays with the piece before it."""
    shielded = [m.span() for m in _SHIELD.finditer(body)]
    out: list[tuple[int, int, str]] = []
    start, kind, comma = 0, ".", False
    for match in [*_SPLIT.finditer(body), None]:
        if match is not None and (any(a < match.start() < b for a, b in shielded) or _ordinal(body, match)):
            continue
        end = match.start() if match else len(body)
        if body[start:end].strip():
            # (measured without asides: ", 14 warnings (mostly fast travel)" is a list's item too)
            short = comma and out and min(_said(body[start:end]), _said(body[out[-1][0] : out[-1][1]])) < MIN_CLAUSE
            if short:  # (the piece before keeps its start and its kind)
                first, _, was = out.pop()
                out.append((first, end, was))
            else:
                out.append((start, end, kind))
        if match is None:
            break
        sep = match.group().strip().replace("；", ";")[:1] or "."
        start, kind = match.end(), ";" if sep == "," and _CLAUSE.match(body, match.end()) else sep
        comma = sep == ","  # ", then Glacier" is as short after "then" as after any comma
    return out


def _said(piece: str) -> int:
    """How long a piece is without its asides in parentheses."""
    return len(_ASIDES.sub("", piece).strip())


def _ordinal(body: str, match: re.Match[str]) -> bool:
    """The split `match` follows a German ordinal ("30." before "Juni"), not a sentence's end."""
    return bool(_ORDINAL_BEFORE.search(body, 0, match.start())) and bool(_ORDINAL_AFTER.match(body, match.end()))


def units_of(item: Item) -> list[Unit]:
    """The item's sentences and clauses; a clause after a comma leans on its sentence's first clause, one after
    `;` or `, so` does when it opens in lower case (`lean`: what it is taken with)."""
    body = clean(item)[1]
    if item.whole_block:
        return [Unit(item, 0, len(body), body)]  # a short block, or a long code block's gist: one unit
    out: list[Unit] = []
    head: Unit | None = None
    for start, end, kind in _pieces(body):
        text = body[start:end]
        said = without_asides(text.strip())
        unit = Unit(item, start + len(text) - len(text.lstrip()), end, said if item.kind == "block" else trim(said))
        if (kind == "," or item.kind == "block") and head is not None:
            unit.lean = head  # (a table's row leans on the first, which names the columns)
        elif kind == ";" and out and unit.text[:1].islower():
            unit.lean = head or out[-1]
        head = head if (kind == "," or item.kind == "block") and head is not None else unit
        out.append(unit)
    return out


def sentences_of(item: Item) -> list[tuple[int, str]]:
    """(start, text) of each whole sentence of a bullet or paragraph."""
    body = clean(item)[1]
    out: list[tuple[int, str]] = []
    for start, end, kind in _pieces(body):
        if kind == "." or not out:
            out.append((start, body[start:end].strip()))
        else:
            out[-1] = (out[-1][0], body[out[-1][0] : end].strip())
    return out


def inner_labels(item: Item, units: Sequence[Unit]) -> list[tuple[int, int]]:
    """The spans of the labelled sentences inside a bullet or paragraph (`units`: its own), each from its label to its
    sentence's end ("... is not atomic. Fix: a lock; the queue retries." -> "Fix: a lock; the queue retries.")."""
    body, out = clean(item)[1], list[tuple[int, int]]()
    for unit in units:
        if unit.start > 0 and labelled(body[unit.start : unit.end]):
            out.extend((unit.start, s + len(t)) for s, t in sentences_of(item) if s <= unit.start < s + len(t))
    return out


def first_line_end(item: Item) -> int:
    """Where the item's first line ends in its cleaned text, or its first sentence when that goes on (a labelled
    line wrapped mid-sentence is kept to its sentence's end: ", replacing the 21-day rule" is the decision's)."""
    sentences = sentences_of(item)
    sentence = sentences[0][0] + len(sentences[0][1]) if sentences else 0
    return max(_line_end(item), sentence)


def _line_end(item: Item) -> int:
    label = clean(item)[0]
    first = EMPHASIS.sub(r"\2", item.first)
    return max(len(first) - (len(label) + 2 if label else 0), 1)
