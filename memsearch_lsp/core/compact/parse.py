"""A daily log read as the summarisers see it: items (bullets, paragraphs, code blocks, tables) under topics."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from memsearch_lsp.core.chunks import Heading, normalize_newlines, outline
from memsearch_lsp.core.compact.facts import always_kept, label_kept
from memsearch_lsp.core.compact.rules import short_runs
from memsearch_lsp.core.compact.summarize import LogText

_BULLET = re.compile(r"^([ \t]*)(?:[-*+]|\d{1,9}[.)])[ \t]+(.*)$")
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_COMMENT = re.compile(r"^\s*<!--.*-->\s*$")
TABLE = re.compile(r"^\s*\|")
_KEY = re.compile(r"`[^`]+`|[^\s]*\d[^\s]*|\b[A-Z][\w.+-]*")
NORM = re.compile(r"[\W_]+", re.UNICODE)
# "Dana: ...", "Decision: ..." (after emphasis is gone); never across a sentence's end ("is not atomic. Fix: ...")
# (or a short one before a full-width colon, with or without a space: "根本原因：", "用户：")
# (French sets a space before the colon: "Décision : ...", a no-break one too)
_LABEL = re.compile(
    r"^((?:\S+(?<![.!?]) ){0,3}[^\s.!?]+?)[ \u00a0\u202f]?:\s+(?=\S)|^([^\s.!?。！？：:]{1,12})：\s*(?=\S)"
)
_LEAD_IN = re.compile(r"^([^:`()\n]{3,60}):\s+(?=\S)")  # "Rule from the user after this: ..."
EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_STAMP = re.compile(r"^\W*(?:\d{4}-\d{2}-\d{2}[T ]?)?\d{1,2}:\d{2}(?::\d{2})?(?:\s?(?:[AaPp][Mm]|UTC|Z))?\W*")
# a line that opens someone's turn: "**Assistant:** ...", "__Dana__: ...", or "Dana: ..." after a sentence's end
_TURN = re.compile(
    r"^(?:(?:\*\*|__)[^\s*_:：][^*_:：]{0,30}?(?:[:：](?:\*\*|__)|(?:\*\*|__)[:：])\s?|[A-Z][\w'’-]{1,30}:\s|[^\W\d_]{1,6}：)"
)
_LEAD = re.compile(r"^(?:\*\*|__)?([^*_:]{2,40}?)(?::(?:\*\*|__)?|(?:\*\*|__):?)$")  # a short line ending ":" or bold
# a log's date in words, in the memory's languages: its months (abbreviated too), then weekdays and the small words
# between ("Thursday, the 6th of May 2027", "Donnerstag, 6. Mai", "6 de maio de 2027", "2027年5月6日 星期四")
_MONTHS = [
    re.compile(rf"(?i:{m})\.?")
    for m in (
        r"jan(?:uary|eiro|uar)?|enero|janvier",
        r"feb(?:ruary|rero|ruar)?|fevereiro|février",
        r"mar(?:ch|ço|zo|s)?|märz",
        r"apr(?:il)?|abril|avril",
        r"ma[iy]|maio|mayo",
        r"jun(?:e|ho|io|i)?|juin",
        r"jul(?:y|ho|io|i)?|juillet",
        r"aug(?:ust)?|agosto|août",
        r"sep(?:t|tember|tiembre|tembre)?\.?|setembro",
        r"oct(?:ober|ubre|obre)?|outubro|okt(?:ober)?",
        r"nov(?:ember|embro|iembre|embre)?",
        r"dec(?:ember)?|dezembro|diciembre|dez(?:ember)?|décembre",
    )
]
_DAY_WORD = re.compile(  # a weekday, whole ("Mon", "Thurs.", "Monday": never "Monorepo", "Frieda")
    r"(?i:(?:mon|tues?|wed|weds|thu|thur|thurs|fri|sat|sun)\.?|(?:mon|tues|wednes|thurs|fri|satur|sun)day|"
    r"(?:segunda|terça|quarta|quinta|sexta)(?:-feira)?|sábado|domingo|"
    r"lunes|martes|miércoles|jueves|viernes|montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonntag|lundi|mardi|"
    r"mercredi|jeudi|vendredi|samedi|dimanche)|(?:星期|礼拜|周)[一二三四五六日天]"
)
_SMALL_WORD = re.compile(r"(?i:the|of|de|del|den|der|du|le|on)")  # between a date's words ("the 3rd of May")
_DATE_TOKEN = re.compile(r"[\s,./·|—–-]*(?:(\d{1,4})(?:st|nd|rd|th|º|ª|\.|[年月日号])?|([^\W\d_]+(?:-feira)?\.?))")
NOTES = "Notes"  # the topic of text under no heading but the log's date title or a time stamp
ASKED = frozenset({"asked", "question", "q", "user"})  # the label of a captured turn's question (lower case)
ANSWERED = frozenset({"outcome", "answer", "result", "response", "reply"})  # what a turn said back, not a fact's kind
SHORT_BLOCK = 240  # a code block or table up to this many characters is kept whole; a longer one by its gist


@dataclass
class Item:
    """A bullet, a paragraph or a block of a log, with the topic (headings) it sits under."""

    topic: str
    kind: str  # bullet | para | block
    text: str
    depth: int
    line: int
    log: LogText
    anchor: int  # the line of its section's heading (or its own line, before any heading)
    order: int = 0  # its place among the items summarised together
    first: str = ""  # its first line (a labelled line is kept whole; the lines joined to it are not)
    lead: str = ""  # the lead-in it follows ("Decisions:", "**Follow-ups**"): what it is, like a heading

    @functools.cached_property
    def key(self) -> str:  # (asked many times of each item by dedupe: its text never changes)
        return " ".join(NORM.sub(" ", self.text.lower()).split()) if self.kind != "block" else self.text

    @functools.cached_property
    def names(self) -> set[str]:
        """Numbers, versions, names and code: what a near-duplicate may never lose."""
        return {NORM.sub("", t.lower()) for t in _KEY.findall(short_runs(self.text))} - {""}

    @property
    def whole_block(self) -> bool:
        """A block kept as it is (a short one), or said by one gist line (a long code block): one unit."""
        return self.kind == "block" and (len(self.text) <= SHORT_BLOCK or not TABLE.match(self.text))


def split_label(item: Item) -> tuple[str, str]:
    """(label, body) of a bullet or paragraph: emphasis markers dropped, a leading 'Name:' label set apart."""
    text = EMPHASIS.sub(r"\2", item.text)
    label = _LABEL.match(text)
    return (label.group(1) or label.group(2), text[label.end() :]) if label else ("", text)


def opens_turn(line: str, before: str) -> bool:
    """`line` opens another speaker's turn (its own item, never a continuation of the line `before` it): an emphasised
    label, or a one-word label after a sentence's end."""
    match = _TURN.match(line)
    return match is not None and (match.group()[0] in "*_" or _ended(before))


def _ended(line: str) -> bool:
    """`line` ends a sentence: what follows it may open an item of its own."""
    return line.rstrip().endswith((".", "!", "?", ")", '"', "。", "！", "？", "）"))


def labelled(line: str) -> bool:
    """A line that opens with a label kept always ('Decision: ...', 'TODO ...'), or with a lead-in whose first word
    is one ('Rule from the user after this: ...'): its own item, never a continuation."""
    text = EMPHASIS.sub(r"\2", line)
    label = _LABEL.match(text)
    if always_kept((label.group(1) or label.group(2)) if label else "", text):
        return True
    lead = _LEAD_IN.match(text)
    return lead is not None and label_kept(lead.group(1).split()[0])


def undated(title: str, date: str) -> str | None:
    """`title` without the log's own date at its start, in whatever words ("mon 3 may 2027 — lab meeting" ->
    "lab meeting", "2027-05-03" -> ""); None when it does not open with that date (its day, and its month or year)."""
    if not date:
        return None
    year, month, day = (int(x) for x in date.split("-"))
    numbers, named, small, pos, end = [], False, False, 0, 0  # (end: after the last date word, not a small word;
    # small: a small word stood between two of its words)
    if title.startswith(date):
        numbers, pos = [day, month], len(date)
        end = pos
    while (token := _DATE_TOKEN.match(title, pos)) and token.end() > pos:
        word = token.group(2)
        if token.group(1):
            numbers.append(int(token.group(1)))
        elif _MONTHS[month - 1].fullmatch(word):
            named = True
        elif _SMALL_WORD.fullmatch(word):
            pos = token.end()
            continue
        elif not _DAY_WORD.fullmatch(word):
            break
        small = small or pos > end > 0
        pos = end = token.end()
    others = set(numbers) - {day} if numbers.count(day) == 1 else set(numbers)
    # numbers alone make a date only side by side ("3/5", "03.05.2027"), never "3 of 5 replicas"
    if day not in numbers or not (named or ({month, year, year % 100} & others and not small)):
        return None
    pos = end
    return title[pos:].strip(" \t,.:;/·|—–-")


def _topic(path: list[tuple[int, str]], date: str) -> str:
    """The section's headings without the log's date title or a time-stamped note's heading: a note under
    `## HH:MM` or `## HH:MM — deploy` (`remember`'s notes) goes to "Notes", so a day's notes share one
    section in the summary instead of a section each (the title mostly repeats the note's first words)."""
    titles = [_untitled(lvl, t, date) for lvl, t in path if not _STAMP.match(t)]
    return " / ".join(t for t in titles if t) or NOTES


def _untitled(level: int, title: str, date: str) -> str:
    """A heading's title as a topic, without the log's date it restates ("Daily log 2027-05-03", "Mon 3 May: x")."""
    rest = undated(title.strip(), date)
    return "" if level == 1 and date and date in title else title.strip() if rest is None else rest


def parse_log(log_text: LogText) -> list[Item]:
    """Headings become topics; bullets, paragraphs, code blocks and tables become items."""
    lines = normalize_newlines(log_text.text).split("\n")
    headings, fences, body_start = outline(lines)  # the chunker's model: same headings, fences, front matter
    heading_at = {h.row: h for h in headings}
    fence_end = dict(fences)
    items: list[Item] = []
    path: list[tuple[int, str]] = []
    anchor = 0
    current: Item | None = None
    i = body_start

    lead = ""

    def add(kind: str, text: str, depth: int, line: int) -> Item:
        topic = _topic(path, log_text.date)
        item = Item(topic, kind, text, depth, line, log_text, anchor or line, first=text, lead=lead)
        items.append(item)
        return item

    bare: tuple[Heading, list[tuple[int, str]], int] | None = None  # the last heading, its parents, items before it

    def said_by_its_title(level: int) -> None:
        """A heading with nothing under it ("## Switched the queue to SQS") says its fact in its title; one word of
        letters ("## TODO", "## Blockers": a template's section never filled in) says none."""
        nonlocal path
        if bare is None or len(items) > bare[2] or bare[0].level < level:
            return
        heading, parents, _ = bare
        title = _untitled(heading.level, _STAMP.sub("", heading.title), log_text.date)
        one_word = title.isalpha() and not any("\u3400" <= c <= "\u9fff" for c in title)  # (a Chinese title is one)
        if title and not one_word:
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
            lead = ""
            said_by_its_title(heading.level)
            bare = (heading, [(lvl, t) for lvl, t in path if lvl < heading.level], len(items))
            path = [(lvl, t) for lvl, t in path if lvl < heading.level] + [(heading.level, heading.title)]
            anchor = i + 1 if _topic(path, log_text.date) != NOTES else 0
            current, i = None, heading.end_row + 1
            continue
        i += 1
        if not stripped or _RULE.match(line) or _COMMENT.match(line):
            current = None
            continue
        if TABLE.match(line):
            end = i
            while end < len(lines) and TABLE.match(lines[end]):
                end += 1
            add("block", "\n".join(lines[i - 1 : end]), 0, i)
            current, i = None, end
            continue
        bullet = _BULLET.match(line)
        opens = _LEAD.match(stripped)
        if opens and not bullet and current is None:  # "Decisions:", "**Timeline**": a heading in all but name
            lead, current = opens.group(1).strip(), None
            continue
        if bullet:
            depth = min(len(bullet.group(1).expandtabs(4)) // 2, 3)
            current = add("bullet", bullet.group(2).strip(), depth, i)
        elif (
            current is not None
            and not (labelled(stripped) and _ended(lines[i - 2]))
            and not opens_turn(stripped, lines[i - 2])
        ):  # a continuation line of the bullet or paragraph ("... so the standing\nrule is now: never ...")
            current.text += " " + stripped
        else:
            current = add("para", stripped, 0, i)
    said_by_its_title(0)
    return items


def contained(lines: Iterable[Item]) -> set[int]:
    """The items (by id) said again inside a longer one ("Error rate 0.2%." and "Error rate 0.2%, p99 205 ms."):
    the shorter, unless the longer adds no number or name (then the longer is the repeat). Only the lines sharing the
    shorter one's rarest word are compared (a long log's every pair would take minutes)."""
    lines = list(lines)
    holding: dict[str, list[Item]] = {}
    for item in lines:
        for word in set(item.key.split()):
            holding.setdefault(word, []).append(item)
    gone: set[int] = set()
    for short in lines:
        rarest = min(set(short.key.split()), key=lambda word: len(holding[word]))
        for long in holding[rarest]:
            if len(long.key) > len(short.key) and f" {short.key} " in f" {long.key} ":
                gone.add(id(short) if long.names > short.names else id(long))
    return gone
