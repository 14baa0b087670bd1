"""The `extractive` summariser: offline; keeps the sentences richest in facts that fit a character budget."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memsearch_lsp.core.compact.blocks import block_score, glued
from memsearch_lsp.core.compact.facts import (
    FACT_SCORE,
    always_kept,
    announces,
    classify,
    label_kept,
    people_line,
    without_roles,
)
from memsearch_lsp.core.compact.languages import STOPWORDS, with_colon
from memsearch_lsp.core.compact.languages import words as word_count
from memsearch_lsp.core.compact.parse import (
    ANSWERED,
    ASKED,
    EMPHASIS,
    NORM,
    NOTES,
    SHORT_BLOCK,
    Item,
    contained,
    labelled,
    parse_log,
)
from memsearch_lsp.core.compact.summarize import LogText, Note
from memsearch_lsp.core.compact.units import (
    UNIT_OVERHEAD,
    Unit,
    clean,
    first_line_end,
    inner_labels,
    units_of,
)
from memsearch_lsp.core.embedding import Embedder

_TOKEN = re.compile(r"`[^`]+`|[A-Za-z][\w'’-]*|\d[\d,.:%/-]*")
MIN_SCORE = FACT_SCORE  # a sentence scoring less carries no fact worth a line
STRONG_SCORE = 7.0  # sentences scoring this much go before weaker ones, whatever their length
VERDICT = 40  # a dead end this short ("No effect.") is a verdict on the sentence before it
PEOPLE_SHARE = 0.15  # the People line takes at most this share of the budget (the first people named)
_LEFT_OUT = re.compile(
    r"^\((?:an? )?[^()]{0,60}\bleft out\)\.?$"
)  # "(a code block of 202 lines left out)": a capture's mark
SPEAKERS = frozenset({"assistant", "agent", "claude", "ai", "bot", "me", "human", "you"})  # who says a turn
MIN_WORDS = 2  # a shorter unit ("No.", "Done", "好的。") says nothing on its own


def _dead_end_sentences(units: Sequence[Unit]) -> set[int]:
    """The units (by id) that a dead end ("no effect", "didn't help") speaks of: its own sentence, and the
    sentence before it when the dead end opens a sentence ("Tried a bigger pool. No effect."); never the
    rest of a paragraph, whose other lines may carry facts."""
    sentences: list[list[Unit]] = []
    for n, unit in enumerate(units):
        previous = units[n - 1] if n else None
        if (
            previous is None
            or previous.item is not unit.item
            or previous.text.rstrip(" \"')]").endswith((".", "!", "?", "…", "。", "！", "？"))
        ):
            sentences.append([])
        sentences[-1].append(unit)
    out: set[int] = set()
    for n, sentence in enumerate(sentences):
        if any("dead_end" in classify(u.text).noise for u in sentence):
            out.update(id(u) for u in sentence)
            # a verdict ("No effect.", "Reverted.") speaks of the sentence before it; a longer one of itself
            opens = "dead_end" in classify(sentence[0].text).noise and len(sentence[0].text) <= VERDICT
            if opens and n and sentences[n - 1][0].item is sentence[0].item:
                out.update(id(u) for u in sentences[n - 1])
    return out


def _score(units: Sequence[Unit], named: bool = False) -> None:
    """Facts over noise: the fact classes a sentence carries (compact_facts), a little for rare words;
    labelled lines are always kept, narration, status, dead ends and small talk are weak."""
    import math

    words = [{w.lower() for w in _TOKEN.findall(u.text) if w.lower() not in STOPWORDS and len(w) > 2} for u in units]
    df: dict[str, int] = {}
    for bag in words:
        for w in bag:
            df[w] = df.get(w, 0) + 1
    n = len(units)
    dead_ends = _dead_end_sentences(units)
    # each item's label and body, and where its labelled first line or sentence ends: once an item, not once a unit
    items = {id(u.item): u.item for u in units}
    cleaned = {key: clean(item) for key, item in items.items()}
    line_ends = {key: first_line_end(item) for key, item in items.items()}
    own: dict[int, list[Unit]] = {}  # each item's units
    for unit in units:
        own.setdefault(id(unit.item), []).append(unit)
    labels = {key: inner_labels(items[key], parts) for key, parts in own.items()}
    for unit, bag in zip(units, words):
        label = cleaned[id(unit.item)][0]
        info = 0.5 * sum(math.log((1 + n) / (1 + df[w])) for w in bag) / max(len(bag), 1)
        if unit.item.whole_block:
            score, factual = block_score(unit.item.text)
            unit.score = score + info
            unit.weak = not factual or unit.score < MIN_SCORE
            continue
        # (an answer leans on the question before it, and still opens its line)
        first = unit.lean is None or unit.lean.item is not unit.item
        facts = classify(without_roles(unit.text) if named else unit.text, first=first)
        # what the line is said to be: "Decision: ...", "## Rollback plan", a "Follow-ups:" line before it
        context = classify(f"{label} {unit.item.lead} {unit.item.topic}", first=False)
        unit.score = facts.score + info + 0.5 * min(context.score, 4.0)
        dead = id(unit) in dead_ends  # a dead end's numbers are no facts of what is in place
        # a labelled line is kept whole, but not the narration an agent wrote on the lines after it
        said = cleaned[id(unit.item)][1][unit.start : unit.end]  # (before the trims took a lead-in away)
        unit.must = always_kept(label, unit.item.text) or labelled(said)
        unit.must = unit.must and unit.start < line_ends[id(unit.item)]
        # ... but a captured turn's answer ("Outcome: Let me look at the CI config.", "Outcome: Here it is:") only
        # when it says more than narration or an announcement ("TODO: let me ask ..." stays: a TODO is what it says)
        said_only = ("narration" in facts.noise and not facts.factual) or announces(unit.text)
        unit.must = unit.must and not (said_only and label.strip("*_ ").lower() in ANSWERED)
        # a labelled sentence inside a paragraph ("... is not atomic. Fix: a lock; the queue retries."): whole
        unit.must = unit.must or any(a <= unit.start < b for a, b in labels[id(unit.item)])
        # "In `prj.conf` / `bms_limits.h`:" says what comes next, and nothing itself unless it names a value
        unit.weak = not unit.must and (
            not facts.factual
            or unit.score < MIN_SCORE
            or word_count(unit.text) < MIN_WORDS
            or dead
            or announces(unit.text)
            or bool(_LEFT_OUT.match(unit.text))
        )


# -- the summary's shape ----------------------------------------------------------------------------
def log_heading(log: LogText, level: int = 2) -> str:
    """A log's section in the summary: its date, linked to the archived original (its one provenance link)."""
    return f"{'#' * level} {log.ref_log()}\n\n"


def topic_heading(topic: str, level: int = 3) -> str:
    return f"{'#' * level} {topic}\n\n"


def titled(topic: str, kept: int, first: str = "") -> bool:
    """A named section of a log gets a heading in the summary when its title says a fact ("Release v2.3.0")
    or it groups several kept lines; else its line joins the log's section (a heading costs what a fact does).
    Never when its first kept line (`first`) says the title again ("Decision: Kafka over RabbitMQ ...")."""
    if topic == NOTES or set(_key(topic).split()) <= set(_key(first).split()):
        return False
    facts = classify(topic, first=False)
    return kept > 1 or (facts.factual and facts.score >= FACT_SCORE)


def _key(text: str) -> str:
    return " ".join(NORM.sub(" ", text.lower()).split())


@dataclass
class _Choice:
    units: list[Unit] = field(default_factory=list)

    def render(self, level: int = 2) -> str:
        """One section per log, its heading the date linked to the archived original (the only provenance
        link: the budget goes to facts); under it the lines of untitled sections, then the titled ones."""
        chosen = sorted(self.units, key=lambda u: (u.item.order, u.start))
        items: dict[int, list[Unit]] = {}
        for unit in chosen:
            items.setdefault(id(unit.item), []).append(unit)
        logs: dict[str, dict[str, list[Item]]] = {}
        for parts in items.values():
            item = parts[0].item
            logs.setdefault(item.log.source, {}).setdefault(item.topic, []).append(item)
        out: list[str] = []
        for topics in logs.values():
            first = next(iter(topics.values()))[0]
            out.append(log_heading(first.log, level))
            lines = {id(i): _line(i, items[id(i)]) for members in topics.values() for i in members}
            heads = {t: titled(t, len(members), lines[id(members[0])]) for t, members in topics.items()}
            plain = [i for t, members in topics.items() if not heads[t] for i in members]
            out.extend(lines[id(item)] for item in plain)
            out.append("\n" if plain else "")
            for topic, members in topics.items():
                if heads[topic]:
                    out.append(topic_heading(topic, level + 1))
                    out.extend(lines[id(item)] for item in members)
                    out.append("\n")
        return glued(out).strip() + "\n" if out else ""


def _shown(label: str, first: Unit) -> str:
    """The label a kept line shows before its `first` kept unit: a speaker's ("Assistant:"), one kept always
    ("Decision:"), one that says a fact ("Noor's convention:"), a one-word one on its own line ("Config:"), or any
    before the sentence it opens; never a lead-in that says nothing ("Hit a weird bug:") before a later sentence,
    nor a one-word label before a later line ("States: a -> b" names its own line only)."""
    if first.start > 0 and labelled(first.text):  # "Problem: Cause: ...": the sentence says what it is itself
        return ""
    if first.start == 0 or label_kept(label) or classify(label, first=False).factual:
        return label
    word = len(label.split()) <= 1
    speaker = label.strip("*_ ").lower() in ASKED | ANSWERED | SPEAKERS
    return label if word and (speaker or first.start < first_line_end(first.item)) else ""


def _line(item: Item, parts: Sequence[Unit]) -> str:
    label, body = clean(item)
    label = _shown(label, parts[0])
    if item.kind == "block" and len(item.text) <= SHORT_BLOCK:
        return f"\n{body}\n\n"
    text, end = "", None
    for unit in parts:
        if end is None:
            text = unit.text
        else:
            gap = body[end : unit.start]
            text += (gap if not gap.strip() or gap.strip() in {";", ","} else " … ") + unit.text
            text = text.replace("  ", " ")
        end = unit.end
    return f"- {with_colon(label)}{text}\n"


def _drop_repeats(units: Sequence[Unit]) -> None:
    """A sentence said again, whole, inside a longer one ("Error rate 0.2%." and later "Error rate 0.2%, p99
    205 ms.") or word for word after its first time (a standing line each day's log repeats) is weak: the longer one,
    or the first, carries it. Sentences only, not lines: `dedupe` compares whole lines."""
    keys = [f" {' '.join(NORM.sub(' ', u.text.lower()).split())} " for u in units]
    for n, unit in enumerate(units):
        if unit.weak or len(keys[n]) < 10 or (unit.must and keys[n] not in keys[:n]):
            continue
        unit.weak = any(
            m != n and keys[n] in keys[m] and (len(keys[m]) > len(keys[n]) or m < n) and not units[m].weak
            for m in range(len(units))
        )
        unit.must = unit.must and not unit.weak  # (a labelled line said again: its first time stays)


@dataclass
class _Spend:
    """What the chosen units cost so far in the rendered summary (estimated: render() is the truth)."""

    used: int = 0
    items: dict[int, int] = field(default_factory=dict)  # lines kept per item
    logs: set[str] = field(default_factory=set)
    topics: dict[tuple[str, str], int] = field(default_factory=dict)  # items kept per section

    def cost(self, unit: Unit) -> int:
        item = unit.item
        cost = len(unit.text) + (3 if id(item) in self.items else UNIT_OVERHEAD + len(_shown(clean(item)[0], unit)) + 2)
        cost += 0 if item.log.source in self.logs else len(log_heading(item.log)) + 1
        kept = self.topics.get((item.log.source, item.topic), 0) + (id(item) not in self.items)
        if titled(item.topic, kept) and not titled(item.topic, kept - 1):
            cost += len(topic_heading(item.topic)) + 1
        return cost

    def copy(self) -> _Spend:
        return _Spend(self.used, dict(self.items), set(self.logs), dict(self.topics))

    def priced(self, group: Sequence[Unit]) -> _Spend:
        """A copy that took `group` too."""
        trial = self.copy()
        for part in group:
            trial.take(part, trial.cost(part))
        return trial

    def take(self, unit: Unit, cost: int) -> None:
        item = unit.item
        self.used += cost
        key = (item.log.source, item.topic)
        self.topics[key] = self.topics.get(key, 0) + (id(item) not in self.items)
        self.items[id(item)] = self.items.get(id(item), 0) + 1
        self.logs.add(item.log.source)


QUESTION_CHARS = 160  # a longer question is a task's whole brief: its answer is kept without it


def _with_questions(units: Sequence[Unit]) -> None:
    """A captured turn's answer ("Outcome: Rotate them in Vault ...") is taken with the question before it ("Asked:
    How do we rotate the signing keys?"): without it the answer says what, but not of what."""
    for before, unit in itertools.pairwise(units):
        if (  # (the cheap tests first: a unit that opens the line after a short question)
            before.item is not unit.item
            and before.item.log is unit.item.log
            and unit.start == 0
            and len(before.item.text) <= QUESTION_CHARS
            and before.text.rstrip().endswith(("?", "？"))
            and clean(before.item)[0].lower() in ASKED
            and clean(unit.item)[0].lower() in ANSWERED
        ):
            unit.lean = unit.lean or before


def choose(items: Sequence[Item], budget: int | None) -> str:
    """The Markdown of the items' best sentences that fits in `budget` characters (all of them when None).

    Labelled lines come first and always stay; then each log's best sentence, so no day goes missing;
    then the rest by what they carry per character. A clause that leans on the one before it (it opens in
    lower case: "...; on for internal tenants only") is taken with it. Never empty while the items hold text.
    """
    for order, item in enumerate(items):
        item.order = order
    units = [u for item in items for u in units_of(item)]
    _with_questions(units)
    if budget is None:
        return _Choice(units).render()
    whole, texts = budget, [item.text for item in items]
    crew = people_line(texts, int(budget * PEOPLE_SHARE))
    budget -= len(crew)
    _score(units, named=bool(crew))  # (the People line says who is who)
    _drop_repeats(units)
    ranked = sorted((u for u in units if not u.weak and not u.must), key=lambda u: (-u.density, u.item.order, u.start))
    by_log: dict[str, list[Unit]] = {}  # each log's units, best first; the logs in the order of their best
    for unit in ranked:
        by_log.setdefault(unit.item.log.source, []).append(unit)
    choice, spend, chosen = _Choice(), _Spend(), set[int]()

    def take(unit: Unit, anyway: bool = False) -> bool:
        nonlocal spend
        if id(unit) in chosen:
            return False
        group = [unit]
        while group[0].lean is not None and id(group[0].lean) not in chosen:
            group.insert(0, group[0].lean)
        if unit.must or anyway:  # kept whatever it costs: its own clauses; the question it answers later, if it fits
            group = [part for part in group if part.item is unit.item]
        trial = spend.priced(group)
        if trial.used > budget and not (unit.must or anyway):
            return False
        spend = trial
        choice.units.extend(group)
        chosen.update(id(part) for part in group)
        return True

    for unit in (u for u in units if u.must):
        take(unit)
    daily = set[int]()
    for source, candidates in by_log.items():  # a day with no line yet: its best sentence that still fits, else its
        if source not in spend.logs and candidates:  # best one anyway (no day goes missing)
            best = next((u for u in candidates if take(u)), None)
            if best is None and take(candidates[0], anyway=True):
                best = candidates[0]
            while best is not None:  # (with the clauses it leans on: none is trimmed away from it)
                daily.add(id(best))
                best = best.lean
    for unit in list(choice.units):  # the questions the answers kept anyway answer, while they fit
        if unit.lean is not None and unit.lean.item is not unit.item:
            take(unit.lean)
    for unit in [u for u in ranked if u.score >= STRONG_SCORE] + [u for u in ranked if u.score < STRONG_SCORE]:
        take(unit)
    if not choice.units and units:  # never empty: the best of what there is
        choice.units.append(max(units, key=lambda u: (not u.weak, u.score, -u.item.order)))
    text = choice.render()
    while len(text) > budget:  # the estimate was short: drop the last chosen until it fits (labelled lines stay)
        optional = [n for n, u in enumerate(choice.units) if not u.must and id(u) not in daily]
        if len(choice.units) <= 1 or not optional:
            break
        choice.units.pop(optional[-1])
        text = choice.render()
    if len(crew) + len(text) > whole:  # the lines kept always took more: the People line names fewer
        crew = people_line(texts, whole - len(text))
    return crew + text


VERBATIM_TOPIC = "Kept word for word"  # where restore_labelled puts the labelled lines a model dropped


def restore_labelled(summary: str, logs: Sequence[LogText]) -> str:
    """`summary` (another summariser's) with every labelled line of the logs it lacks appended word for word.

    A labelled line (`Decision:`, `Root cause:`, `TODO` ...) is lacking when its text, compared without
    case, emphasis, punctuation or spacing, is nowhere in the summary. The lines appended take the
    extractive summary's shape under a `## Kept word for word` section: one linked date per log.
    """
    have = " ".join(NORM.sub(" ", EMPHASIS.sub(r"\2", summary).lower()).split())
    lacking: list[Unit] = []
    for order, item in enumerate(i for log_text in logs for i in parse_log(log_text) if i.kind != "block"):
        label, body = clean(item)
        item.topic, item.order = NOTES, order
        spans = [(0, len(body))] if always_kept(label, item.text) else inner_labels(item, units_of(item))
        said = [Unit(item, a, b, body[a:b].strip()) for a, b in spans]
        lacking.extend(u for u in said if " ".join(NORM.sub(" ", u.text.lower()).split()) not in have)
    if not lacking:
        return summary
    kept = _Choice(lacking).render(level=3)
    kept = f"## {VERBATIM_TOPIC}\n\n{kept}"
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

    def dedupe(self, items: list[Item]) -> list[Item]:
        kept: list[Item] = []
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
        gone = contained(item for item in kept if item.kind != "block" and len(item.key) >= 12)
        kept = [i for i in kept if id(i) not in gone]
        lines = [i for i in kept if i.kind != "block"]
        if len(lines) < 2:
            return kept
        import numpy as np

        vectors = np.asarray(self._embedder().embed([i.text for i in lines]), dtype=np.float32)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        earlier: dict[int, list[int]] = {}  # each line's earlier lines within the threshold (a block of rows at once:
        for top in range(0, len(lines), SIMILAR_ROWS):  # a long log's square matrix would not fit in memory)
            block = vectors[top : top + SIMILAR_ROWS] @ vectors.T
            rows, cols = np.nonzero(
                np.tri(block.shape[0], block.shape[1], top - 1, dtype=bool) & (block >= self.threshold)
            )
            for n, m in zip((rows + top).tolist(), cols.tolist()):
                earlier.setdefault(n, []).append(m)
        dropped: set[int] = set()
        for n in sorted(earlier):
            if any(m not in dropped and lines[n].names <= lines[m].names for m in earlier[n]):
                dropped.add(n)
        gone = {id(lines[n]) for n in dropped}
        return [i for i in kept if id(i) not in gone]


SIMILAR_ROWS = 512  # lines compared with all the others at once by dedupe (512 x 10,000 floats: 20 MB)
