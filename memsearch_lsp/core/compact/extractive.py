"""The `extractive` summariser: offline; keeps the sentences richest in facts that fit a character budget."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memsearch_lsp.core.chunks import Heading, normalize_newlines, outline
from memsearch_lsp.core.compact.facts import FACT_SCORE, always_kept, block_gist, block_score, classify
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
    first: str = ""  # its first line (a labelled line is kept whole; the lines joined to it are not)

    @property
    def key(self) -> str:
        return " ".join(_NORM.sub(" ", self.text.lower()).split()) if self.kind != "block" else self.text

    @property
    def names(self) -> set[str]:
        """Numbers, versions, names and code: what a near-duplicate may never lose."""
        return {_NORM.sub("", t.lower()) for t in _KEY.findall(self.text)} - {""}


_STAMP = re.compile(r"^\W*(?:\d{4}-\d{2}-\d{2}[T ]?)?\d{1,2}:\d{2}(?::\d{2})?(?:\s?(?:[AaPp][Mm]|UTC|Z))?\W*")


def _topic(path: list[tuple[int, str]], date: str) -> str:
    """The section's headings without the log's date title or a time-stamped note's heading: a note under
    `## HH:MM` or `## HH:MM — deploy` (`remember`'s notes) goes to "Notes", so a day's notes share one
    link in the summary instead of a section each (the title mostly repeats the note's first words)."""
    titles = [t.strip() for lvl, t in path if not (lvl == 1 and date and date in t) and not _STAMP.match(t)]
    return " / ".join(t for t in titles if t) or "Notes"


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
        item = _Item(_topic(path, log_text.date), kind, text, depth, line, log_text, anchor or line, first=text)
        items.append(item)
        return item

    bare: tuple[Heading, list[tuple[int, str]], int] | None = None  # the last heading, its parents, items before it

    def said_by_its_title(level: int) -> None:
        """A heading with nothing under it ("## Switched the queue to SQS") says its fact in its title."""
        nonlocal path
        if bare is None or len(items) > bare[2] or bare[0].level < level:
            return
        heading, parents, _ = bare
        title = _STAMP.sub("", heading.title).strip()
        if title and not (heading.level == 1 and log_text.date and log_text.date in title):
            path, kept = parents, path
            add("para", title, 0, heading.row + 1)
            path = kept

    while i < len(lines):
        line, stripped = lines[i], lines[i].strip()
        if i in fence_end:
            end = fence_end[i]
            add("block", "\n".join(lines[i : end + 1]), 0, i + 1)
            current, i = None, end + 1
            continue
        heading = heading_at.get(i)
        if heading is not None:
            said_by_its_title(heading.level)
            bare = (heading, [(lvl, t) for lvl, t in path if lvl < heading.level], len(items))
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
            add("block", "\n".join(lines[i - 1 : end]), 0, i)
            current, i = None, end
            continue
        bullet = _BULLET.match(line)
        if bullet:
            depth = min(len(bullet.group(1).expandtabs(4)) // 2, 3)
            current = add("bullet", bullet.group(2).strip(), depth, i)
        elif current is not None and not _labelled(stripped):
            current.text += " " + stripped  # a continuation line of the bullet or paragraph
        else:
            current = add("para", stripped, 0, i)
    said_by_its_title(0)
    return items


# -- choosing what to keep ------------------------------------------------------------------------
_LABEL = re.compile(r"^((?:\S+ ){0,3}\S+?):\s+(?=\S)")  # "Dana: ...", "Decision: ..." (after emphasis is gone)
_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
# sentences, and clauses at "; " and before ", so" / ", but" / ", which": the summary may keep one and not the other
_SPLIT = re.compile(r"(?<=[.!?…])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|;\s+|,\s+(?=(?:so|but|which|then)\s)")
_TOKEN = re.compile(r"`[^`]+`|[A-Za-z][\w'’-]*|\d[\d,.:%/-]*")
_STOP = frozenset(
    re.findall(
        r"\S+",
        """
    a an the and or but if so of to in on at by for with from as is are was were be been being am it its this that
    these those there here i me my we our you your he she his her they them their what which who whom when where why
    how do does did done have has had not no yes just really very too also much many more most some any all can could
    would should will shall may might must get got about into over than then out up down off again only own same such
    both each few other like well still even ever""",
    )
)
UNIT_OVERHEAD = 12  # "- ", " (L123)", a newline: what each kept line costs besides its words
SHORT_BLOCK = 240  # a code block or table up to this many characters is kept whole; a longer one by its gist
MIN_SCORE = FACT_SCORE  # a sentence scoring less carries no fact worth a line
COST_POWER = 0.75  # what a sentence carries over its length to this power: long sentences of facts not starved
STRONG_SCORE = 7.0  # sentences scoring this much go before weaker ones, whatever their length
MIN_COST = 40  # a short sentence is charged as this many characters: what it says is rarely whole


@dataclass
class _Unit:
    """A sentence or clause of an item (or a whole block, or a block's gist): what the summary keeps or drops."""

    item: _Item
    start: int  # span in the item's cleaned text
    end: int
    text: str
    score: float = 0.0
    weak: bool = False  # a question, small talk, narration or a fragment: never worth a line of the summary
    must: bool = False  # a labelled line (Decision:, Root cause:, TODO ...): always kept

    @property
    def density(self) -> float:
        return self.score / (max(len(self.text), MIN_COST) + UNIT_OVERHEAD) ** COST_POWER


def _clean(item: _Item) -> tuple[str, str]:
    """(label, body): emphasis markers dropped, a leading 'Name:' label set apart; a long block's gist."""
    if item.kind == "block":
        return "", item.text if len(item.text) <= SHORT_BLOCK else block_gist(item.text)
    text = _EMPHASIS.sub(r"\2", item.text)
    label = _LABEL.match(text)
    return (label.group(1), text[label.end() :]) if label else ("", text)


def units_of(item: _Item) -> list[_Unit]:
    body = _clean(item)[1]
    if item.kind == "block" and (len(item.text) <= SHORT_BLOCK or not _TABLE.match(item.text)):
        return [_Unit(item, 0, len(body), body)]  # a short block, or a long code block's gist: one unit
    out, start = [], 0
    for match in _SPLIT.finditer(body):
        if body[start : match.start()].strip():
            out.append(_Unit(item, start, match.start(), body[start : match.start()].strip()))
        start = match.end()
    if body[start:].strip():
        out.append(_Unit(item, start, len(body), body[start:].strip()))
    return out


def _labelled(line: str) -> bool:
    """A line that opens with a label kept always ('Decision: ...', 'TODO ...'): its own item, never a continuation."""
    text = _EMPHASIS.sub(r"\2", line)
    label = _LABEL.match(text)
    return always_kept(label.group(1) if label else "", text)


def _first_line_end(item: _Item) -> int:
    """Where the item's first line ends in its cleaned text."""
    label = _clean(item)[0]
    first = _EMPHASIS.sub(r"\2", item.first)
    return max(len(first) - (len(label) + 2 if label else 0), 1)


def _dead_end_sentences(units: Sequence[_Unit]) -> set[int]:
    """The units (by id) that a dead end ("no effect", "didn't help") speaks of: its own sentence, and the
    sentence before it when the dead end opens a sentence ("Tried a bigger pool. No effect."); never the
    rest of a paragraph, whose other lines may carry facts."""
    sentences: list[list[_Unit]] = []
    for n, unit in enumerate(units):
        previous = units[n - 1] if n else None
        if (
            previous is None
            or previous.item is not unit.item
            or previous.text.rstrip(" \"')]").endswith((".", "!", "?", "…"))
        ):
            sentences.append([])
        sentences[-1].append(unit)
    out: set[int] = set()
    for n, sentence in enumerate(sentences):
        if any("dead_end" in classify(u.text).noise for u in sentence):
            out.update(id(u) for u in sentence)
            opens = "dead_end" in classify(sentence[0].text).noise
            if opens and n and sentences[n - 1][0].item is sentence[0].item:
                out.update(id(u) for u in sentences[n - 1])
    return out


def _score(units: Sequence[_Unit]) -> None:
    """Facts over noise: the fact classes a sentence carries (compact_facts), a little for rare words;
    labelled lines are always kept, narration, status, dead ends and small talk are weak."""
    import math

    words = [{w.lower() for w in _TOKEN.findall(u.text) if w.lower() not in _STOP and len(w) > 2} for u in units]
    df: dict[str, int] = {}
    for bag in words:
        for w in bag:
            df[w] = df.get(w, 0) + 1
    n = len(units)
    dead_ends = _dead_end_sentences(units)
    for unit, bag in zip(units, words):
        label = _clean(unit.item)[0]
        info = 0.5 * sum(math.log((1 + n) / (1 + df[w])) for w in bag) / max(len(bag), 1)
        if unit.item.kind == "block" and (len(unit.item.text) <= SHORT_BLOCK or not _TABLE.match(unit.item.text)):
            score, factual = block_score(unit.item.text)
            unit.score = score + info
            unit.weak = not factual or unit.score < MIN_SCORE
            continue
        facts = classify(unit.text, first=unit.start == 0)
        context = classify(f"{label} {unit.item.topic}", first=False)  # "Decision: ...", "## Rollback plan"
        unit.score = facts.score + info + 0.5 * min(context.score, 4.0)
        unit.score -= 6.0 * (id(unit) in dead_ends and "dead_end" not in facts.noise)
        # a labelled line is kept whole, but not the narration an agent wrote on the lines after it
        unit.must = always_kept(label, unit.item.text) and unit.start < _first_line_end(unit.item)
        unit.weak = not unit.must and (not facts.factual or unit.score < MIN_SCORE or len(unit.text) < 12)


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
    if item.kind == "block" and len(item.text) <= SHORT_BLOCK:
        return f"\n{body}\n{where}\n\n"
    text, end = "", None
    for unit in parts:
        if end is None:
            text = unit.text
        else:
            gap = body[end : unit.start]
            text += (gap if not gap.strip() or gap.strip() in {";", ","} else " … ") + unit.text
            text = text.replace("  ", " ")
        end = unit.end
    return f"- {label + ': ' if label else ''}{text} {where}\n"


def _drop_repeats(units: Sequence[_Unit]) -> None:
    """A sentence said again, whole, inside a longer one ("Error rate 0.2%." and later "Error rate 0.2%, p99
    205 ms.") is weak: the longer one carries it. Sentences only, not lines: `dedupe` compares whole lines."""
    keys = [f" {' '.join(_NORM.sub(' ', u.text.lower()).split())} " for u in units]
    for n, unit in enumerate(units):
        if unit.weak or unit.must or len(keys[n]) < 10:
            continue
        unit.weak = any(
            m != n and len(keys[m]) > len(keys[n]) and keys[n] in keys[m] and not units[m].weak
            for m in range(len(units))
        )


def choose(items: Sequence[_Item], budget: int | None) -> str:
    """The Markdown of the items' best sentences that fits in `budget` characters (all of them when None).

    Labelled lines come first and always stay; then each log's best sentence, so no day goes missing;
    then the rest by what they carry per character. Never empty while the items hold text.
    """
    for order, item in enumerate(items):
        item.order = order
    units = [u for item in items for u in units_of(item)]
    if budget is None:
        return _Choice(units).render()
    _score(units)
    _drop_repeats(units)
    ranked = sorted((u for u in units if not u.weak and not u.must), key=lambda u: (-u.density, u.item.order, u.start))
    firsts: dict[str, _Unit] = {}
    for unit in ranked:
        firsts.setdefault(unit.item.log.source, unit)
    rest = [u for u in ranked if firsts.get(u.item.log.source) is not u]
    queue = (
        [u for u in units if u.must]
        + list(firsts.values())
        + [u for u in rest if u.score >= STRONG_SCORE]
        + [u for u in rest if u.score < STRONG_SCORE]
    )
    choice = _Choice()
    used = 0
    seen_items: set[int] = set()
    seen_runs: set[tuple[str, str]] = set()
    seen_topics: set[str] = set()
    for unit in queue:
        item = unit.item
        cost = len(unit.text) + (3 if id(item) in seen_items else UNIT_OVERHEAD + len(_clean(item)[0]) + 2)
        cost += 0 if (item.topic, item.log.source) in seen_runs else len(item.log.ref_day(item.anchor)) + 8
        cost += 0 if item.topic in seen_topics else len(item.topic) + 5
        if used + cost > budget and not unit.must:
            continue
        used += cost
        choice.units.append(unit)
        seen_items.add(id(item))
        seen_runs.add((item.topic, item.log.source))
        seen_topics.add(item.topic)
    if not choice.units and units:  # never empty: the best of what there is
        choice.units.append(max(units, key=lambda u: (not u.weak, u.score, -u.item.order)))
    text = choice.render()
    while len(text) > budget:  # the estimate was short: drop the last chosen until it fits (labelled lines stay)
        optional = [n for n, u in enumerate(choice.units) if not u.must]
        if len(choice.units) <= 1 or not optional:
            break
        choice.units.pop(optional[-1])
        text = choice.render()
    return text


VERBATIM_TOPIC = "Kept word for word"  # where restore_labelled puts the labelled lines a model dropped


def restore_labelled(summary: str, logs: Sequence[LogText]) -> str:
    """`summary` (another summariser's) with every labelled line of the logs it lacks appended word for word.

    A labelled line (`Decision:`, `Root cause:`, `TODO` ...) is lacking when its text, compared without
    case, emphasis, punctuation or spacing, is nowhere in the summary. The lines appended take the
    extractive summary's shape: a `## Kept word for word` section, a dated link per log, `(L<n>)` per line.
    """
    have = " ".join(_NORM.sub(" ", _EMPHASIS.sub(r"\2", summary).lower()).split())
    lacking = []
    for log_text in logs:
        for item in parse_log(log_text):
            label, body = _clean(item)
            if item.kind == "block" or not always_kept(label, item.text):
                continue
            if " ".join(_NORM.sub(" ", body.lower()).split()) not in have:
                item.topic = VERBATIM_TOPIC
                lacking.append(item)
    if not lacking:
        return summary
    for order, item in enumerate(lacking):
        item.order = order
    kept = _Choice([_Unit(i, 0, len(_clean(i)[1]), _clean(i)[1]) for i in lacking]).render()
    return f"{summary.rstrip()}\n\n{kept}" if summary.strip() else kept


class ExtractiveSummarizer:
    """Offline: keeps the sentences that carry decisions, numbers, names and dates, within a character budget.

    Exact duplicates go first; a line is a near-duplicate when its embedding is within `threshold`
    (cosine) of an earlier kept line and it names no number, version, name or code that line lacks.
    Then sentences are ranked by what they carry per character and kept, best first, while they fit.
    """

    name = "extractive"

    def __init__(self, embedder: Callable[[], Embedder], threshold: float):
        self._embedder, self.threshold = embedder, threshold

    def summarize(
        self, label: str, logs: Sequence[LogText], note: Note | None = None, budget: int | None = None
    ) -> str:
        items = [item for log_text in logs for item in parse_log(log_text)]
        return choose(self.dedupe(items), budget)

    def dedupe(self, items: list[_Item]) -> list[_Item]:
        kept: list[_Item] = []
        keys: set[str] = set()
        for item in items:
            if item.key and item.key in keys:
                continue
            keys.add(item.key)
            kept.append(item)
        if self.threshold > 1:
            return kept
        # a line repeated inside a longer one ("Error rate 0.2%." and "Error rate 0.2%, p99 205 ms."): the longer stays
        # (and when the longer one adds no number or name, it is the repeat: the shorter stays)
        lines = [i for i in kept if i.kind != "block" and len(i.key) >= 12]
        gone: set[int] = set()
        for short in lines:
            for long in lines:
                if len(long.key) > len(short.key) and f" {short.key} " in f" {long.key} ":
                    gone.add(id(short) if long.names > short.names else id(long))
        kept = [i for i in kept if id(i) not in gone]
        lines = [i for i in kept if i.kind != "block"]
        if len(lines) < 2:
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
