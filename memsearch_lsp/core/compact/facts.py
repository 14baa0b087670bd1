"""What a sentence of a log carries: the fact kinds its rules find (core/compact/rules.py), its noise (the
agent narrating, status, dead ends, small talk) and the labels whose lines a summary always keeps."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from memsearch_lsp.core.compact.languages import HAN, NOISE, STOPWORDS, cues
from memsearch_lsp.core.compact.rules import NAME, NUMBER, PEOPLE, RULES, SPELLED_NUMBER, short_runs

# Labels whose lines a summary always keeps ("Decision: ...", "Root cause: ...", "TODO: ..."): a label is
# the text before the first colon of a line; it counts when one of its words is one of these.
_KEEP_LABEL = re.compile(
    r"\b(?:decisions?|decided|reasons?|rationale|why|root[- ]causes?|causes?|fix(?:es|ed)?|resolution|workaround|"
    r"mitigation|todos?|fixme|action(?: items?)?|follow[- ]?ups?|next steps?|deadlines?|due|preferences?|prefers|"
    r"rules?|blockers?|blocked|risks?|rollback|lessons?(?: learned)?|learned|outcome|agreed|agreement|requirements?|"
    r"constraints?|important|warning|caveat|gotcha)\b|"
    + "|".join(cues(kind) for kind in ("decision-label", "rule-label", "label")),  # ... and in other languages
    re.I,
)
_TODO = re.compile(r"^(?:\[ \]\s*)?(?:TODO|FIXME|XXX)\b|^\[ \]\s")  # unlabelled open items, a checklist's open box

_NARRATION = re.compile(
    r"^(?:let me|let's(?! (?:go with|use|keep|stick|not|never|switch|move|stay|drop|pin|ship|always|only))|"
    r"i'll|i will|i am|i'm|(?:now|ok(?:ay)?|so|hmm+|right|alright|great|good|fine|yes|no|done)(?=[,.!…]|\s*$)|"
    r"now (?:i|let|to)|ok(?:ay)?|hmm+|alright|ran|running|re-?ran|re-?running|running|checked|checking|"
    r"looked|looking|reading|read|opened|opening|"
    r"started|starting|picking up|picked up|back to|wrapping up|writing|trying to|going to|quick|session|"
    r"morning|good morning|end of|nothing|all green|tests? (?:pass|green)|watching|still|waiting|implementing|"
    r"continuing|working on|done for|see you|thanks|thank you|have a)\b",
    re.I,
)
_STATUS = re.compile(
    r"^(?:status|progress|update|wip)\b|\bwaiting (?:for|on)\b|"
    # a pull request's progress is the workflow's status: "Opened PR #212", "PR #219 approved and merged"
    r"\b(?:PR|MR|pull request) #?\d+\b.{0,40}\b(?:opened|merged|approved|reviewed|closed)\b|"
    r"\b(?:opened|merged|approved|closed|reviewed) (?:a |the )?(?:PR|MR|pull request) #?\d+|"
    r"\b(?:still (?:green|red|waiting|watching|working|failing|"
    r"looking)|nothing (?:new|else|blocking|to report)|all green|no new (?:errors?|issues?|alerts?|pages?|news|"
    r"failures?|reports?|messages?)|as before|same as "
    r"yesterday|looks? (?:fine|good|the same))\b",
    re.I,
)
# a decision not (yet) taken: "nothing really decided", "have not decided yet", "before anyone agreed"
_UNDECIDED = re.compile(
    r"\b(?:nothing (?:\w+ ){0,2}(?:decided|agreed)|not (?:\w+ )?(?:decided|agreed)|undecided|no decision|"
    r"(?:before|until) (?:anyone|anybody|everyone|we|they) (?:\w+ )?(?:agreed|decided)|"
    r"(?:no one|nobody|could(?:n't|n’t| not)|did(?:n't|n’t| not)|failed to) (?:\w+ )?(?:agree|decide))\b|"
    + cues("undecided"),  # ... and in other languages: "nada decidido", "nichts entschieden", "没有结论"
    re.I,
)
_DEAD_END = re.compile(
    r"\b(?:no (?:real |visible )?(?:effect|gain|change|luck|difference)|didn't help|did not help|"
    r"(?:spent|wasted|lost) (?:an hour|a while|half an hour|the (?:morning|afternoon|day)|\w+ hours?) (?:trying|on|"
    r"looking|thinking)|"
    r"dead end|false alarm|never mind|not a problem after all|was wrong|wasn't it|so not that|not that either|"
    r"far too much|dropped the idea|reverted|park(?:ed|ing) (?:this|it|that|the idea)|shelved|gave up on)\b",
    re.I,
)
_HEDGE = re.compile(
    r"^(?:looks like|it looks|seems|it seems|maybe|perhaps|probably|i think|i guess|i wonder|"
    r"i wondered|not sure|might be|(?:(?:first|my|our|initial) )?(?:guess|suspicion|hunch|theory) (?:was|is)|"
    r"(?:i|we) suspect(?:ed)?|suspected)\b",
    re.I,
)
_ANAPHOR = re.compile(
    r"^(?:it|this|that|these|those|they|above that|below that|then|also|but|and|which)\b|(?-i:^(?:He|She)\b)", re.I
)
_CHATTER = frozenset(
    re.findall(
        r"\S+",
        """
    hey hi hello wow thanks thank haha lol congrats congratulations cool awesome great nice glad sounds aw aww oh
    yeah yes sure ok okay totally same amazing lovely bye cheers welcome omg morning""",
    )
)

# the agent's intention, never a fact by itself: "Let me look at ...", "I'll check ...", "Going to try ..."
_INTENT = re.compile(
    r"^(?:let me|let's (?:see|look|check|try)|i'll|i will|i'm going to|going to|time to|next,? i)\b", re.I
)


@dataclass(frozen=True)
class Facts:
    """The fact classes a sentence carries and what it has of noise; `score` weighs them."""

    kinds: frozenset[str]
    score: float
    noise: frozenset[str]

    @property
    def factual(self) -> bool:
        return bool(self.kinds)


def announces(text: str) -> bool:
    """A line that only says what comes next ("In `prj.conf`:", a table's lead-in): nothing itself, unless it names a
    value."""
    return text.rstrip().endswith(":") and not any(c.isdigit() for c in text)


def label_kept(label: str) -> bool:
    """A label that marks a line every summary keeps ('Decision', 'Root cause', 'TODO', 'Rollback plan')."""
    return bool(label) and len(label) <= 40 and bool(_KEEP_LABEL.search(label))


def always_kept(label: str, text: str) -> bool:
    """A line every summary keeps: a kept label, a TODO or an open checklist item (what is still to do, whatever
    its section is called)."""
    return label_kept(label) or bool(_TODO.match(text))


_WEIGHTS = {
    "place": 3.0,
    "limit": 2.0,
    "role": 3.0,
    "definition": 3.0,
    "decision": 4.0,
    "reason": 2.0,
    "cause": 4.0,
    "fix": 3.0,
    "preference": 4.0,
    "todo": 3.0,
    "date": 2.0,
    "version": 2.5,
    "number": 2.5,
    "setting": 2.5,
    "name": 1.0,
}


def rules_for(text: str) -> list[str]:
    """The names of the rules (core/compact/rules.py) that find a fact in `text`: why a sentence was kept."""
    text = short_runs(text)
    return [rule.name for rule in RULES if rule.pattern.search(text)]


def classify(text: str, first: bool = True) -> Facts:
    """Fact classes by content: numbers with units or settings, versions, dates, names, decisions and
    their reasons, causes and fixes, preferences, open items; noise: narration, status, dead ends, chatter."""
    text = short_runs(text)
    kinds: dict[str, int] = {}
    numeric = bool(NUMBER.search(text) or SPELLED_NUMBER.search(text))
    for rule in RULES:
        if rule.kind == "limit" and not numeric:
            continue  # a bound needs its number
        n = len(rule.pattern.findall(text)) if rule.each else bool(rule.pattern.search(text))
        if n:
            kinds[rule.kind] = kinds.get(rule.kind, 0) + n
    if _UNDECIDED.search(text):  # "Some talk about the offsite, nothing decided.": the workflow's status
        kinds.pop("decision", None)
    names = {n for n in NAME.findall(text) if not n.isupper() or len(n) > 1}
    if names:
        kinds["name"] = len(names)
    score = sum(_WEIGHTS[k] * min(n, 3) for k, n in kinds.items())
    if "number" not in kinds and "version" not in kinds and "date" not in kinds and NUMBER.search(text):
        score += 1.0  # a bare number
    noise = set()
    stripped = text.strip().lstrip("-*> ").strip()
    words = re.findall(r"[a-z']+", stripped.lower())
    if first and _NARRATION.match(stripped):
        noise.add("narration")
    if _STATUS.search(stripped) or _UNDECIDED.search(stripped):
        noise.add("status")
    if first and _HEDGE.match(stripped):
        noise.add("hedge")
    if _ANAPHOR.match(stripped):
        noise.add("anaphor")
    if _DEAD_END.search(stripped):
        noise.add("dead_end")
    for name, said in NOISE.items():  # the same in the other languages
        if said.search(stripped) and (first or name != "narration") and len(stripped) < 200:
            noise.add(name)
    if stripped.rstrip(" \"')").endswith(("?", "？")):
        noise.add("question")
    if words and words[0] in _CHATTER and len(stripped) < 80:
        noise.add("chatter")
    score -= 3.0 * ("narration" in noise) + 5.0 * ("status" in noise) + 6.0 * ("dead_end" in noise)
    score -= 3.0 * ("question" in noise) + 4.0 * ("chatter" in noise) + 3.0 * ("hedge" in noise)
    score -= 2.0 * ("anaphor" in noise)  # leans on the sentence before it
    told = "narration" in noise and kinds.keys() <= {"name", "place", "setting", "date"}  # "Read `a.py`."
    # an intention ("Let me re-read what Carol asked for.") says nothing done unless it names a value
    told = told or (bool(_INTENT.match(stripped)) and not kinds.keys() & {"number", "version", "setting"})
    score -= 3.0 * told
    score -= 3.0 * ("anaphor" in noise and len(stripped) < 25)  # a fragment: "then 10 min."
    # the weak classes alone (a name, a bare date) do not make a fact
    strong = {k for k in kinds if k not in {"name", "reason", "date"}}
    facts = frozenset(kinds) if (strong or len(kinds) >= 2) and not told else frozenset()
    return Facts(facts, score, frozenset(noise))


def people(texts: Iterable[str]) -> dict[str, str]:
    """The people the texts name with a role, {name: role} (the first role said of each): "Carol (product)",
    "Dmitri is the engineering manager", "Marta = tech lead"."""
    found: dict[str, str] = {}
    texts = [
        short_runs(text) for text in texts
    ]  # (a pasted run without spaces is read by its start: no name is longer)
    for text in texts:
        for pattern in PEOPLE:
            for match in pattern.finditer(text):
                found.setdefault(match["name"], match["role"])
    return _in_full(found, texts)


_ROMANCE = {"de", "da", "di", "del", "du", "dos", "das", "le"}
_CALENDAR = re.compile(
    r"(?i:(?:mon|tues|wednes|thurs|fri|satur|sun)day|jan\w*|feb\w*|march|april|may|june|july|aug\w*|sept?\w*|oct\w*|"
    r"nov\w*|dec\w*|today|tomorrow|tonight|yesterday)"
)
# each pair of capitalised words, overlapping ("Ping Lena Hoffmann": "Ping Lena" and "Lena Hoffmann")
_FULL_NAME = re.compile(r"\b(?=([A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ][\w'’-]*) ([A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ][\w'’-]+)\b)")


def _in_full(found: dict[str, str], texts: list[str]) -> dict[str, str]:
    """Each person by their full name: "Lena (MSc)" is "Lena Hoffmann (MSc)" when the logs name one Lena in
    full; a name with "de", "da", "di" ... ("Notas de Carmen") is one person only when its first word is said alone
    elsewhere, as people are ("Bram de Vries" ... "ask Bram"), else it is its last word ("Carmen"): in Portuguese,
    Spanish or Italian text a capitalised word before "de" is as often a heading's ("Notas", "Reunión")."""
    whole = "\n".join(texts)
    surnames: dict[str, set[str]] = {}
    for first, last in _FULL_NAME.findall(whole):
        if last.lower() not in STOPWORDS and not _CALENDAR.fullmatch(last):
            surnames.setdefault(first, set()).add(last)
    out: dict[str, str] = {}
    for name, role in found.items():
        words = name.split()
        if (
            len(words) == 3
            and words[1] in _ROMANCE
            and not re.search(rf"\b{re.escape(words[0])}\b", whole.replace(name, ""))
        ):
            name = words[2]  # ("Notas de Carmen (SRE)": Carmen's notes)
        elif len(words) == 1 and len(surnames.get(name, ())) == 1:
            name = f"{name} {next(iter(surnames[name]))}"
        out.setdefault(name, role)
    return out


def people_line(texts: Iterable[str], room: int) -> str:
    """The summary's first line: the people the logs name with their role ("People: Carol (product), Jonas
    (DBA)."), a teammate's first question, for a few characters each: as many as `room` holds, in order."""
    named = [f"{name}（{role}）" if HAN.match(name) else f"{name} ({role})" for name, role in people(texts).items()]
    while named and len(line := f"People: {', '.join(named)}.\n\n") > room:
        named.pop()
    return line if named else ""


def without_roles(text: str) -> str:
    """`text` with each person's role taken out ("Carol (product) wants ..." -> "Carol wants ..."): what it says
    besides who is who."""
    text = short_runs(text)
    for pattern in PEOPLE:
        text = pattern.sub(lambda m: m["name"] if m.start("name") < m.start("role") else m.group(), text)
    return text


FACT_SCORE = 2.5  # a sentence (or a line of a block) scoring less carries no fact
