"""The `extractive` summariser: offline; keeps the sentences richest in facts that fit a character budget."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memsearch_lsp.core.chunks import normalize_newlines, outline
from memsearch_lsp.core.compact.summarize import LogText, Note
from memsearch_lsp.core.embedding.onnx import Embedder

_BULLET = re.compile(r"^([ \t]*)(?:[-*+]|\d{1,9}[.)])[ \t]+(.*)$")
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_COMMENT = re.compile(r"^\s*<!--.*-->\s*$")
_TABLE = re.compile(r"^\s*\|")
_KEY = re.compile(r"`[^`]+`|[^\s]*\d[^\s]*|\b[A-Z][\w.+-]*")
_NORM = re.compile(r"[\W_]+", re.UNICODE)


@dataclass
class _Item:
    topic: str
    kind: str  # bullet | para | block
    text: str
    depth: int
    line: int
    log: LogText
    anchor: int  # the line of its section's heading (or its own line, before any heading)
    order: int = 0  # its place among the items summarised together

    @property
    def key(self) -> str:
        return " ".join(_NORM.sub(" ", self.text.lower()).split()) if self.kind != "block" else self.text

    @property
    def names(self) -> set[str]:
        """Numbers, versions, names and code: what a near-duplicate may never lose."""
        return {_NORM.sub("", t.lower()) for t in _KEY.findall(self.text)} - {""}


def _topic(path: list[tuple[int, str]], date: str) -> str:
    titles = [t for lvl, t in path if not (lvl == 1 and date and date in t) and t]
    return " / ".join(titles) or "Notes"


def parse_log(log_text: LogText) -> list[_Item]:
    """Headings become topics; bullets, paragraphs, code blocks and tables become items."""
    lines = normalize_newlines(log_text.text).split("\n")
    headings, fences, body_start = outline(lines)  # the chunker's model: same headings, fences, front matter
    heading_at = {h.row: h for h in headings}
    fence_end = dict(fences)
    items: list[_Item] = []
    path: list[tuple[int, str]] = []
    anchor = 0
    current: _Item | None = None
    i = body_start

    def add(kind: str, text: str, depth: int, line: int) -> _Item:
        item = _Item(_topic(path, log_text.date), kind, text, depth, line, log_text, anchor or line)
        items.append(item)
        return item

    while i < len(lines):
        line, stripped = lines[i], lines[i].strip()
        if i in fence_end:
            end = fence_end[i]
            add("block", "\n".join(lines[i:end + 1]), 0, i + 1)
            current, i = None, end + 1
            continue
        heading = heading_at.get(i)
        if heading is not None:
            path = [(lvl, t) for lvl, t in path if lvl < heading.level] + [(heading.level, heading.title)]
            anchor = i + 1 if _topic(path, log_text.date) != "Notes" else 0
            current, i = None, heading.end_row + 1
            continue
        i += 1
        if not stripped or _RULE.match(line) or _COMMENT.match(line):
            current = None
            continue
        if _TABLE.match(line):
            end = i
            while end < len(lines) and _TABLE.match(lines[end]):
                end += 1
            add("block", "\n".join(lines[i - 1:end]), 0, i)
            current, i = None, end
            continue
        bullet = _BULLET.match(line)
        if bullet:
            depth = min(len(bullet.group(1).expandtabs(4)) // 2, 3)
            current = add("bullet", bullet.group(2).strip(), depth, i)
        elif current is not None:
            current.text += " " + stripped  # a continuation line of the bullet or paragraph
        else:
            current = add("para", stripped, 0, i)
    return items


# -- choosing what to keep ------------------------------------------------------------------------
_LABEL = re.compile(r"^((?:\S+ ){0,3}\S+?):\s+(?=\S)")  # "Dana: ...", "Decision: ..." (after emphasis is gone)
_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_SPLIT = re.compile(r"(?<=[.!?…])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_TOKEN = re.compile(r"`[^`]+`|[A-Za-z][\w'’-]*|\d[\d,.:%/-]*")
_STOP = frozenset(re.findall(r"\S+", """
    a an the and or but if so of to in on at by for with from as is are was were be been being am it its this that
    these those there here i me my we our you your he she his her they them their what which who whom when where why
    how do does did done have has had not no yes just really very too also much many more most some any all can could
    would should will shall may might must get got about into over than then out up down off again only own same such
    both each few other like well still even ever"""))
_CHATTER = frozenset(re.findall(r"\S+", """
    hey hi hello wow thanks thank haha lol congrats congratulations cool awesome great nice glad sounds aw aww oh
    yeah yes sure ok okay totally same amazing lovely bye cheers welcome omg"""))
_WHEN = re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b|\b(?:mon|tues|wednes|thurs|"
                   r"fri|satur|sun)day\b|\b(?:yesterday|tomorrow|today|tonight|last|next|ago|week|month|year|"
                   r"deadline|until|since)\b", re.I)
_DECISION = re.compile(r"\b(?:decid\w*|decision|chose|choose|agreed|agree|will|plan\w*|going to|switch\w*|mov\w*|"
                       r"start\w*|finish\w*|bought|buy|adopt\w*|won|join\w*|fix\w*|set|raised?|cut|releas\w*|"
                       r"deploy\w*|migrat\w*|because|must|never|always|instead|replac\w*|lost|got|signed|"
                       r"learn\w*|found|made|open\w*|clos\w*|stor\w*|use[sd]?)\b", re.I)
UNIT_OVERHEAD = 12  # "- ", " (L123)", a newline: what each kept line costs besides its words


@dataclass
class _Unit:
    """A sentence or clause of an item: what the extractive summary keeps or drops."""

    item: _Item
    start: int  # span in the item's cleaned text
    end: int
    text: str
    score: float = 0.0
    weak: bool = False  # a question, small talk or a fragment: never worth a line of the summary

    @property
    def density(self) -> float:
        return self.score / (len(self.text) + UNIT_OVERHEAD)


def _clean(item: _Item) -> tuple[str, str]:
    """(label, body): emphasis markers dropped, a leading 'Name:' label set apart."""
    text = _EMPHASIS.sub(r"\2", item.text) if item.kind != "block" else item.text
    label = _LABEL.match(text) if item.kind != "block" else None
    return (label.group(1), text[label.end():]) if label else ("", text)


def units_of(item: _Item) -> list[_Unit]:
    body = _clean(item)[1]
    if item.kind == "block":
        return [_Unit(item, 0, len(body), body)]
    out, start = [], 0
    for match in _SPLIT.finditer(body):
        if body[start:match.start()].strip():
            out.append(_Unit(item, start, match.start(), body[start:match.start()].strip()))
        start = match.end()
    if body[start:].strip():
        out.append(_Unit(item, start, len(body), body[start:].strip()))
    return out


def _score(units: Sequence[_Unit]) -> None:
    """Facts over chatter: rare words, numbers, names, code, dates and decisions; small talk is weak."""
    import math

    words = [{w.lower() for w in _TOKEN.findall(u.text) if w.lower() not in _STOP and len(w) > 2} for u in units]
    df: dict[str, int] = {}
    for bag in words:
        for w in bag:
            df[w] = df.get(w, 0) + 1
    n = len(units)
    for unit, bag in zip(units, words):
        tokens = _TOKEN.findall(unit.text)
        info = sum(math.log((1 + n) / (1 + df[w])) + 0.5 for w in bag)
        numbers = {t for t in tokens if t[0].isdigit()}
        code = {t for t in tokens if t.startswith("`")}
        names = {t for k, t in enumerate(tokens) if k and t[0].isupper() and t.lower() not in _STOP}
        names |= set(_LABEL.findall(unit.item.text[:60])) if unit.start == 0 else set()
        score = info + 2.5 * len(numbers) + 2.5 * len(code) + 1.5 * len(names)
        score += 2.0 * bool(_WHEN.search(unit.text)) + 3.0 * bool(_DECISION.search(unit.text))
        score += 3.0 * bool(_DECISION.search(f"{_clean(unit.item)[0]} {unit.item.topic}"))  # "Decision: ..."
        first = tokens[0].lower() if tokens else ""
        unit.weak = (unit.text.rstrip(" \"')").endswith("?") or (first in _CHATTER and len(unit.text) < 80)
                     or len(unit.text) < 20) and not numbers and not code
        unit.score = score


@dataclass
class _Choice:
    units: list[_Unit] = field(default_factory=list)

    def render(self) -> str:
        """`## topic` sections; each day's run opens with a link to the archived log, lines end with (L<n>)."""
        chosen = sorted(self.units, key=lambda u: (u.item.order, u.start))
        items: dict[int, list[_Unit]] = {}
        for unit in chosen:
            items.setdefault(id(unit.item), []).append(unit)
        topics: dict[str, list[_Item]] = {}
        for parts in items.values():
            topics.setdefault(parts[0].item.topic, []).append(parts[0].item)
        out: list[str] = []
        for topic, members in topics.items():
            out.append(f"## {topic}\n")
            previous: LogText | None = None
            for item in members:
                if item.log is not previous:
                    out.append(f"\nFrom {item.log.ref_day(item.anchor)}:\n")
                    previous = item.log
                out.append(_line(item, items[id(item)]))
            out.append("\n")
        return "".join(out).strip() + "\n" if out else ""


def _line(item: _Item, parts: Sequence[_Unit]) -> str:
    label, body = _clean(item)
    where = f"(L{item.log.line(item.line)})"
    if item.kind == "block":
        return f"\n{body}\n{where}\n\n"
    text, end = "", None
    for unit in parts:
        if end is None:
            text = unit.text
        else:
            gap = body[end:unit.start]
            text += (gap if not gap.strip() or gap.strip() == ";" else " … ") + unit.text
            text = text.replace("  ", " ")
        end = unit.end
    return f"- {label + ': ' if label else ''}{text} {where}\n"


def choose(items: Sequence[_Item], budget: int | None) -> str:
    """The Markdown of the items' best sentences that fits in `budget` characters (all of them when None)."""
    for order, item in enumerate(items):
        item.order = order
    units = [u for item in items for u in units_of(item)]
    if budget is None:
        return _Choice(units).render()
    _score(units)
    ranked = sorted((u for u in units if not u.weak), key=lambda u: (-u.density, u.item.order, u.start))
    choice = _Choice()
    used = 0
    seen_items: set[int] = set()
    seen_runs: set[tuple[str, str]] = set()
    seen_topics: set[str] = set()
    for unit in ranked:
        item = unit.item
        cost = len(unit.text) + (3 if id(item) in seen_items else UNIT_OVERHEAD + len(_clean(item)[0]) + 2)
        cost += 0 if (item.topic, item.log.source) in seen_runs else len(item.log.ref_day(item.anchor)) + 8
        cost += 0 if item.topic in seen_topics else len(item.topic) + 5
        if used + cost > budget:
            continue
        used += cost
        choice.units.append(unit)
        seen_items.add(id(item))
        seen_runs.add((item.topic, item.log.source))
        seen_topics.add(item.topic)
    text = choice.render()
    while choice.units and len(text) > budget:  # the estimate was short: drop the weakest until it fits
        choice.units.pop()
        text = choice.render()
    return text


class ExtractiveSummarizer:
    """Offline: keeps the sentences that carry decisions, numbers, names and dates, within a character budget.

    Exact duplicates go first; a line is a near-duplicate when its embedding is within `threshold`
    (cosine) of an earlier kept line and it names no number, version, name or code that line lacks.
    Then sentences are ranked by what they carry per character and kept, best first, while they fit.
    """

    name = "extractive"

    def __init__(self, embedder: Callable[[], Embedder], threshold: float):
        self._embedder, self.threshold = embedder, threshold

    def summarize(self, label: str, logs: Sequence[LogText], note: Note | None = None,
                  budget: int | None = None) -> str:
        items = [item for log_text in logs for item in parse_log(log_text)]
        if budget is not None and budget <= 0:
            return ""
        return choose(self.dedupe(items), budget)

    def dedupe(self, items: list[_Item]) -> list[_Item]:
        kept: list[_Item] = []
        keys: set[str] = set()
        for item in items:
            if item.key and item.key in keys:
                continue
            keys.add(item.key)
            kept.append(item)
        lines = [i for i in kept if i.kind != "block"]
        if len(lines) < 2 or self.threshold > 1:
            return kept
        import numpy as np

        vectors = np.asarray(self._embedder().embed([i.text for i in lines]), dtype=np.float32)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        similar = (vectors @ vectors.T) >= self.threshold
        dropped: set[int] = set()
        for n, item in enumerate(lines):
            if any(m not in dropped and similar[n, m] and item.names <= lines[m].names for m in range(n)):
                dropped.add(n)
        gone = {id(lines[n]) for n in dropped}
        return [i for i in kept if id(i) not in gone]
