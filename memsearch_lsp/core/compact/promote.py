"""Lasting facts of the logs being compacted (preferences, conventions, decisions still in force), proposed as
additions to MEMORY.md under its sections, each with its source: one more edit of the same reviewed plan."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import quote

from memsearch_lsp.core.chunks import CONFLICTED, merge_conflict, outline
from memsearch_lsp.core.compact.apply import sha256
from memsearch_lsp.core.compact.facts import announces, classify, label_kept
from memsearch_lsp.core.compact.languages import cues, with_colon, words
from memsearch_lsp.core.compact.parse import ASKED, EMPHASIS, NORM, labelled, parse_log, split_label
from memsearch_lsp.core.compact.rules import DECISION_TOLD, WISH, short_runs
from memsearch_lsp.core.compact.summarize import CompactError, LogText
from memsearch_lsp.core.compact.types import MemoryEdit, Promotion
from memsearch_lsp.core.compact.units import sentences_of
from memsearch_lsp.core.files import read_text

if TYPE_CHECKING:
    from memsearch_lsp.core.api import MemoryApi

MEMORY_FILE = "MEMORY.md"
NEW_FILE = "# Long-term memory\n\n"
MAX_PROMOTED = 10  # per plan: a proposal to review, not a copy of the week
MAX_CHARS = 240  # a longer sentence is a story, not a lasting fact
MIN_WORDS = 3  # a shorter one says nothing on its own
# the sections a promoted fact goes under, the first one MEMORY.md has (in its language), else a new `## <first>`
SECTIONS = {
    "preference": (
        *("Preferences", "Conventions", "Rules", "Preferências", "Convenções", "Regras", "Preferencias"),
        *("Convenciones", "Reglas", "Präferenzen", "Konventionen", "Regeln", "Préférences", "Règles"),
        *("偏好", "约定", "规则"),
    ),
    "decision": ("Decisions", "Decisões", "Decisiones", "Entscheidungen", "Décisions", "决定", "决策"),
}

# what a person wants kept, said as such (a wish with a deadline is a task: _TIME_BOUND)
_LASTING_WISH = re.compile(
    r"\b(?:prefers?|preferred|would rather|(?:'d|’d) rather|would prefer|(?:'d|’d) prefer|wants?|likes?|hates?|"
    r"insists?|convention|please|don't want|doesn't want|asked (?:me|us|everyone|the team) to|told (?:me|us) to|"
    r"reminded (?:me|us))\b",
    re.I,
)
# a standing rule, said as one ("only" alone is too weak: "start only the core services")
_STANDING = re.compile(
    r"\b(?:always|never|must(?:n't| not)?|no (?:\w+ ){1,3}without|without asking|from now on|going forward|"
    r"(?:make|made) (?:that|it|this) a rule|as a rule|lessons?:|convention|not allowed|mandatory)\b|" + cues("rule"),
    re.I,
)
_TIME_BOUND = re.compile(
    r"\b(?:today|tonight|tomorrow|yesterday|this (?:week|morning|afternoon|evening|sprint)|for now|"
    r"for (?:another|one more|the next) \w+|until|till|by (?:\w+day|tomorrow|EOD|EOW|the end|end of|next)|"
    r"next (?:week|sprint|month|release)|deadline|due|\d{4}-\d{2}-\d{2})\b|" + cues("time-bound"),
    re.I,
)
# a later sentence that undoes an earlier decision: "reverted", "switched back", "no longer", "replaced by"
_REVERSAL = re.compile(
    r"\b(?:revert\w*|rolled back|roll back|switched back|went back|no longer|undid|undo\w*|reversed|overturned|"
    r"changed (?:our|my|the) mind|replaced|dropped|instead)\b",
    re.I,
)
_TASK = re.compile(r"^(?:[A-Z][\w'’-]+|I|We) (?:to|will|should|needs? to|plans? to|is going to) [a-z]+\b")
# a wish for one thing to be done ("asked me to look into ...", "wants to upgrade Django"), not a way of working
_ONE_OFF = re.compile(
    r"\b(?:wants?|wanted|would like|asked (?:me|us|everyone|the team)) to "
    r"(?!(?:always|never|not|keep|stop|avoid|use|follow|make sure|be|have)\b)[a-z]+\b",
    re.I,
)
_PRONOUN = re.compile(r"^(?:She|He)\b(?= (?:also |really |still )?\w+)")
_PERSON = re.compile(
    r"^(?!(?:She|He|They|It|We|This|That)\b)([A-Z][a-z]+)(?: \([^)]{1,30}\))? (?:also |really |still )?"
    r"(?:wants|prefers|likes|hates|insists|asked|said|"
    r"told|reminded|would|'d|thinks|owns|leads)\b"
)
# a rule that points at the sentence before it ("Noting that as a rule.", "make that a rule"): that sentence is the
# fact (a decision not taken, "nothing decided", is status: facts.classify)
_POINTS_BACK = re.compile(r"\b(?:that|this|it) (?:as |into )?a rule\b", re.I)
# a label that names a decision ("Decision:", "Decisão:", "决定："), and one that may ("Outcome:")
_DECIDED = re.compile(r"\b(?:decisions?|decided|agreed|agreement)\b|" + cues("decision-label"), re.I)
_DECISION_LABEL = re.compile(r"\boutcome\b|" + _DECIDED.pattern, re.I)
# a sentence that opens by naming a failure's cause, in its label, its list's lead or its first words ("Root cause of
# the leak: the cache was never cleared", "Causa raíz: ...", "根本原因是 ..."): what happened, not a rule or a decision
_CAUSE_SAID = re.compile(
    r"^(?:(?:the|a|our|one) )?(?:real |actual |underlying |likely |probable |main )?(?:root[- ]causes?|causes?|culprit)"
    r"\b|^(?:" + cues("cause-label") + ")",
    re.I,
)
# a question asking how things are or are done (not what to do: "should we", "which ... should"): the outcome that
# answers it is knowledge, not a decision ("Asked: How do we rotate the keys?" "Outcome: Rotate them in Vault ...")
_HOW_TO = re.compile(
    r"^[¿¡\s]*(?:how|what|where|why|when|who|como|cómo|qu[eé]|o que|por ?qu[eé]|d[oó]nde|wie|was|wo|warum|comment|"
    r"pourquoi|o[uù])\b(?!.*\b(?:should|sollen|sollten|soll|deber[ií]amos|debemos|dev[eo]mos|devrions)\b)|如何|怎么|怎样|为什么",
    re.I,
)
# a rule as an answer says it ("Always squash-merge."), not a word inside a description ("0 never retries")
_RULE_SAID = re.compile(r"^(?:always|never|don't|do not|must|only ever)\b", re.I)
_RULE_LABEL = re.compile(r"\b(?:preferences?|rules?|conventions?|lessons?)\b|" + cues("rule-label"), re.I)
_WORD = re.compile(r"`[^`]+`|[\w.-]*\d[\w.-]*|[A-Za-z][\w-]{3,}")


_Found = tuple[str, str, LogText, int]  # (kind, text, log, line)


def durable_facts(logs: Sequence[LogText]) -> list[_Found]:
    """The lasting facts of `logs`, in order: a person's wish or a standing rule with no deadline; a decision
    (labelled, or told as one) with no deadline that no later sentence of the logs undoes."""
    found: list[tuple[int, _Found]] = []
    sentences: list[str] = []  # every sentence of the logs, in order: what may undo a decision comes later
    for log in logs:
        person = ""  # who "She" and "He" are: the last person named with a wish or a saying
        asked = ""  # the question of the line before, when it is one ("Asked: How do we ...?")
        for item in parse_log(log):
            if item.kind == "block":
                continue
            label, body = split_label(item)
            question, asked = asked, body if label.lower() in ASKED else ""
            for start, text in sentences_of(item):
                sentences.append(f"{with_colon(label)}{text}" if start == 0 else text)
                named = _PERSON.match(text)
                person = named.group(1) if named else label if re.fullmatch(r"[A-Z][a-z]+", label) else person
                own = label if start == 0 else ""
                said = re.split(r"[:：]\s*", text, maxsplit=1) if start and labelled(text) else []
                if len(said) == 2:  # "... on POS. Decision: stay on Square; ...": as at a line's start
                    own, text = said
                kind = _kind(own, text, item.topic, item.lead, answers=question)
                if kind is None:
                    continue
                if person and _PRONOUN.match(text):
                    text = _PRONOUN.sub(person, text)
                elif label and start == 0 and not label_kept(label):
                    text = f"{with_colon(label)}{text}"  # "Ines: please ..." keeps who said it
                found.append((len(sentences), (kind, text, log, _line_of(log, item.line, text))))
    return [f for n, f in found if f[0] != "decision" or not _undone(f[1], sentences[n:])]


def _line_of(log: LogText, first: int, sentence: str) -> int:
    """The line of the log where `sentence` starts (a paragraph's later line), from its item's first line."""
    lines = log.text.split("\n")
    start = EMPHASIS.sub(r"\2", sentence)[:24]
    for n in range(first - 1, min(first + 40, len(lines))):
        if start in EMPHASIS.sub(r"\2", lines[n]):
            return n + 1
    return first


def _kind(label: str, text: str, topic: str, lead: str, answers: str = "") -> str | None:
    """'preference', 'decision' or None for a sentence of a log (`label`: its item's label, when it opens it;
    `answers`: the question its item answers, when the line before asked one)."""
    facts = classify(text)
    said = f"{label} {lead}"  # "Decision: ...", or a line under "Decisions:"
    if answers and _HOW_TO.search(answers) and not _DECIDED.search(said) and not DECISION_TOLD.search(text):
        # an answer to "how do we ...?" says how things are done: no decision, and a rule only when it says one
        lasting = (WISH.search(text) and _LASTING_WISH.search(text)) or _RULE_SAID.match(text)
        return "preference" if lasting and not facts.noise & {"narration", "status", "dead_end"} else None
    # a decision labelled as one is a fact by its label ("Decisão: usamos Stripe ..."), when it says enough on its own
    decided = bool(_DECIDED.search(said)) and words(text) >= MIN_WORDS
    if len(text) > MAX_CHARS or text.endswith("?") or _TIME_BOUND.search(text) or not (facts.factual or decided):
        return None
    if any(_CAUSE_SAID.match(head) for head in (label, lead, text) if head):
        return None  # what caused a failure, even told with "never", is neither a rule nor a decision
    if facts.noise & {"narration", "status", "dead_end", "hedge", "question", "chatter"}:
        return None
    if _POINTS_BACK.search(text) or announces(text):
        return None  # (a line before a table says what follows, not the decision)
    if words(text) < MIN_WORDS and not label_kept(label):
        return None  # "Agreed.", "Sounds right.": a reply that leans on what was said before it (not "Decision: X")
    if text[:1].islower() and not label:
        return None  # a fragment: what it speaks of was said before it
    if _TASK.match(text) or (_ONE_OFF.search(text) and not _STANDING.search(text)):
        return None  # "Dana to write the naming convention", "asked me to look into ...": a task, done once
    if _DECISION_LABEL.search(said) or DECISION_TOLD.search(text) or _DECISION_LABEL.fullmatch(topic):
        return "decision"
    if _RULE_LABEL.search(said):
        return "preference"
    if (WISH.search(text) and _LASTING_WISH.search(text)) or _STANDING.search(text):
        return "preference"
    return None


def _undone(text: str, later: Sequence[str]) -> bool:
    """A later sentence undoes the decision when it says so ("reverted", "instead") and speaks of the same thing:
    it shares half the words of the shorter of the two, two at least."""
    named = {w.lower() for w in _WORD.findall(short_runs(text))}
    for sentence in (t for t in later if _REVERSAL.search(t)):
        theirs = {w.lower() for w in _WORD.findall(short_runs(sentence))}
        if len(named & theirs) >= max(2, min(len(named), len(theirs)) / 2):
            return True
    return False


def _key(text: str) -> str:
    return " ".join(NORM.sub(" ", EMPHASIS.sub(r"\2", text).lower()).split())


def promote(memory: MemoryApi, logs: Sequence[LogText], texts: Mapping[str, str] | None = None) -> MemoryEdit | None:
    """The durable facts of `logs` as an edit of MEMORY.md (an open buffer's text first); None when there are
    none, or when MEMORY.md holds them all already; CompactError when it is mid-merge (the plan would write into one
    side of its conflict)."""
    path = memory.memory_folder() / MEMORY_FILE
    source = memory.source_of(path)
    current = texts.get(source) if texts else None
    exists = current is not None or path.is_file()
    if current is None and exists:
        current, problem = read_text(path)
        if problem or path.read_bytes() != current.encode("utf-8"):
            return None  # not plain UTF-8 text (a BOM, bad bytes): left for a person to edit
    before = current or ""
    if "\r" in before:
        return None  # CRLF line ends: the edit's offsets would not be the editor's
    have = _key(before)
    folder = posixpath.dirname(source)
    additions: dict[str, list[Promotion]] = {}
    seen: set[str] = set()
    for kind, text, log, line in durable_facts(logs):
        key = _key(text)
        if key in have or key in seen or len(seen) >= MAX_PROMOTED:
            continue
        seen.add(key)
        link = quote(posixpath.relpath(log.archived, folder or "."), safe="/")
        words = EMPHASIS.sub(r"\2", text).rstrip()
        bullet = f"{words} ([{log.date}]({link}#L{line}))"
        section = _section(before, kind)
        additions.setdefault(section, []).append(Promotion(section, bullet, log.source, line, kind))
    if not additions:
        return None
    if merge_conflict(before):
        raise CompactError(f"{source}: {CONFLICTED}")
    inserts = insertions(before if exists else NEW_FILE, {s: [p.text for p in ps] for s, ps in additions.items()})
    base = before if exists else NEW_FILE
    content = applied(base, inserts)
    if not exists:
        inserts = [(0, content)]
    promotions = tuple(p for ps in additions.values() for p in ps)
    if exists:
        return MemoryEdit(source, "insert", content, tuple(inserts), promotions, sha256(before.encode("utf-8")))
    return MemoryEdit(source, "create", content, tuple(inserts), promotions)


def _section(text: str, kind: str) -> str:
    """The section of MEMORY.md a fact of `kind` goes under: the first of its names the file has, else the first."""
    titles = {h.title.strip().casefold() for h in outline(text.split("\n"))[0]} if text else set()
    return next((name for name in SECTIONS[kind] if name.casefold() in titles), SECTIONS[kind][0])


def applied(text: str, inserts: Sequence[tuple[int, str]]) -> str:
    """`text` with `inserts` made, as an editor makes a workspace edit's inserts: those at one offset in their order
    (a section's last bullet, then a new section after it)."""
    for _, (offset, added) in sorted(enumerate(inserts), key=lambda e: (e[1][0], e[0]), reverse=True):
        text = text[:offset] + added + text[offset:]
    return text


def insertions(text: str, sections: Mapping[str, Sequence[str]]) -> list[tuple[int, str]]:
    """(offset in `text`, text to insert) that add `sections`' bullets at the end of the first section of each
    name (any level, case ignored), or under a new `## name` at the end; every character of `text` stays."""
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    headings = outline(lines)[0]
    out: list[tuple[int, str]] = []
    tail: list[str] = []
    for name, bullets in sections.items():
        body = "".join(f"- {b}\n" for b in bullets)
        found = next((h for h in headings if h.title.strip().casefold() == name.casefold()), None)
        if found is None:
            tail.append(f"## {name}\n\n{body}")
            continue
        stop = next((h.row for h in headings if h.row > found.row and h.level <= found.level), len(lines))
        end = stop
        while end > found.end_row + 1 and not lines[end - 1].strip():
            end -= 1
        listed = end > found.end_row + 1 and re.match(r"^\s{0,3}[-*+]\s", lines[end - 1])
        if end >= len(lines):  # the section ends the file (no newline after its last line)
            lead = "\n" if text and not text.endswith("\n") else ""
            out.append((len(text), lead + ("" if listed else "\n") + body))
        else:
            out.append((starts[end], ("" if listed else "\n") + body + ("\n" if end == stop else "")))
    if tail:
        lead = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        out.append((len(text), lead + "\n".join(tail)))
    return out
