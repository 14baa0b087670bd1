"""What a line (or a block) of a log carries, by its content: fact classes (decisions, settings, names ...),
noise, and a long block's gist."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Labels whose lines a summary always keeps ("Decision: ...", "Root cause: ...", "TODO: ..."): a label is
# the text before the first colon of a line; it counts when one of its words is one of these.
_KEEP_LABEL = re.compile(
    r"\b(?:decisions?|decided|root[- ]causes?|causes?|fix(?:es|ed)?|resolution|workaround|mitigation|todos?|"
    r"fixme|action(?: items?)?|follow[- ]?ups?|next steps?|deadlines?|due|preferences?|prefers|rules?|"
    r"blockers?|blocked|risks?|rollback|lessons?(?: learned)?|learned|outcome|agreed|agreement|requirements?|"
    r"constraints?|important|warning|caveat|gotcha)\b",
    re.I,
)
_TODO = re.compile(r"^(?:\[ \]\s*)?(?:TODO|FIXME|XXX)\b|^\[ \]\s")  # unlabelled open items

_DECISION = re.compile(
    r"\b(?:decid\w*|decision|chose|choos\w*|chosen|opted|settled on|went with|go(?:ing)? with|"
    r"(?:switch|mov)(?:e?d|ing|es)?(?: [\w.-]+){0,3}? (?:from|to|back)|migrat\w*|adopt\w*|agreed|"
    r"we (?:keep|stay|use|will)|keep (?:using|it|the)|stay(?:s)? on|instead of|rather than|"
    r"(?:not|never) going to|won't|will not|do not|don't|no longer|pinned|pin to|ruled out|rejected|"
    r"replac\w*|deprecat\w*|drop(?:ped)? (?:support|the)|default(?:s)? to|"
    # commitments and switches in prose: "we'll keep", "let's go with", "from now on", "swapped X over to Y"
    r"we(?:'ll|’ll| shall|'re going to|’re going to| are going to| settled| picked| kept| stick)|"
    r"let(?:'s|’s| us) (?!see|look|check|try|run|start|get|think|figure|find)\w+|from now on|going forward|"
    r"for now|for the time being|stick(?:s|ing)? with|(?:stays?|remains?) (?:on|with|at|as|in|the|under)|"
    r"(?:swapp?|chang|port|convert|flipp?|turn)(?:e?d|ing|s)?(?: [\w.#/-]+){0,4}? (?:from|over to|to)|"
    r"in favou?r of|(?:pushed|postponed|deferred|slips?|slipped|moved) (?:back |out )?to|"
    r"\w+ it is\b)\b",
    re.I,
)
# a decision told as one: "we went with X", "settled on", "let's go with", "from now on", "X it is"
_DECISION_STRONG = re.compile(
    r"\b(?:went with|go(?:ing)? with|settled on|chose|opted for|decided|agreed|from now on|going forward|"
    r"we(?:'ll|’ll| will| are going to|'re going to|’re going to) (?:keep|use|stay|go|switch|move|stick|reprocess|"
    r"store|run|ship|drop|pin|only)|\w+ it is\b)",
    re.I,
)
_REASON = re.compile(r"\b(?:because|since|so that|due to|in order to|as the|the reason|which is why|otherwise)\b", re.I)
_CAUSE = re.compile(
    r"\b(?:root cause|caused by|the cause|real cause|because of|culprit|the problem was|"
    r"the issue was|turned out|regression|leak\w*|exhaust\w*|race condition|deadlock|due to|"
    r"caus(?:es|ed|ing)|led to|leads to|triggered by|stems? from|comes? from|came from|"
    r"(?:was|were|is|are)(?:n't|’t| not) (?:idempotent|thread-safe|atomic|closed|released|set)|"
    r"breaks|broke|the (?:real |actual |underlying )?(?:reason|problem|issue|bug) (?:is|was)|"
    r"explains? (?:the|why)|assumed|expected .{1,40} but)\b",
    re.I,
)
_FIX = re.compile(
    r"\b(?:fix(?:ed|es)?|resolved|workaround|mitigat\w*|rolled back|roll back|rollback|"
    r"patch(?:ed)?|hotfix|now uses|by (?:creating|adding|setting|using|moving|wrapping))\b",
    re.I,
)
# a fix told as one: "fixed by ...", "the fix was ...", "sorted it out by ...", "works again"
_FIX_STRONG = re.compile(
    r"\b(?:(?:fix|resolv|solv|sort|address|mitigat|handl|cur)\w*(?: it| this| that| the \w+)?(?: out)? (?:by|with)|"
    r"worked around|work around|the (?:fix|solution|remedy|workaround) (?:is|was)|to fix (?:it|this|that)|"
    r"(?:works?|match(?:es)?|pass(?:es)?) again|no longer (?:fails|happens|crashes|breaks))\b",
    re.I,
)
_PREFERENCE = re.compile(
    r"\b(?:prefers?|preferred|preference|would rather|'d rather|wants?|wanted|likes|liked|"
    r"(?:I|we|they|he|she) like|dislikes?|hates?|"
    r"please|always|never|for the record|don't want|doesn't want|insists?|convention|style|"
    r"would like|(?:'d|’d) like|would prefer|(?:'d|’d) prefer|asked (?:that|for)|"
    r"asked (?:us|me|everyone|the team) to (?:always|never|not|keep|use|stop|avoid)|"
    r"can we|could we|let(?:'s|’s) not|make sure|not allowed|(?:is|are) against|no \w+ without)\b",
    re.I,
)
# a named person and their wish: "Dana wants ...", "Omar would like ...", "Lee asked that ..."
_WISH = re.compile(
    r"\b(?:[A-Z][a-z]+|I|we|We)(?:'s)? (?:(?:also|really|still) )?"
    r"(?:wants?(?! to (?:look|see|check|know|talk|discuss|review|think|hear|understand|try|go|wait))|"
    r"would (?:like|prefer|rather)|"
    r"(?:'d|’d) (?:like|prefer|rather)|asked (?:that|for)|prefers|insists|suggested|proposed|requested|"
    r"expects|likes|hates)\b"
)
_ROLE = re.compile(
    r"\b(?:owns?|owner|on[- ]call|responsible for|maintains?|maintainer|reviewers?|assigned to|"
    r"in charge of|on leave|out of office|OOO|joins?|joined|left the team|from the \w+ team)\b",
    re.I,
)
_TODO_TEXT = re.compile(
    r"\b(?:[A-Z][\w'’-]+ (?:to|will|should|must) [a-z]+|need(?:s)? to|must|remember to|"
    r"todo|follow[- ]?up|blocked|is due|due (?:on|by)|deadline|(?:has|have) to be|"
    r"(?:it's|it is|is) due|due (?:\w+day|tomorrow|next|this|end|before)|"
    r"(?:by|before|until) (?:\w+day|tomorrow|tonight|EOD|EOW|next \w+|the end of|end of)|"
    r"in place by|ready by|done by|live by|(?:I'm|I am|we're|we are) (?:writing|doing|taking))\b"
)
_DATE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d{1,2}\b|"
    r"\b\d{1,2} (?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\b|"
    r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\bweek \d{1,2}\b|\bQ[1-4]\b|"
    r"\b\d{1,2}:\d{2}\s?(?:UTC|CET|CEST|GMT|[AP]M|[A-Z]{2,4}T)\b|\b(?:deadline|due|until|before|by end of)\b|"
    # dates and deadlines in words: "October 9th", "next sprint", "end of the month", "tomorrow"
    r"\b(?:january|february|march|april|june|july|august|september|october|november|december)\b|"
    r"\b\d{1,2}(?:st|nd|rd|th)\b|\b(?:next|this|coming|following) (?:week|sprint|month|quarter|release|year|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day)\b|\bend of (?:the )?(?:day|week|month|quarter|sprint|year)\b|"
    r"\b(?:tomorrow|tonight|EOD|EOW|EOM)\b|\b(?:first|second|third|last) (?:working |business )?day\b",
    re.I,
)
_VERSION = re.compile(
    r"\bv\d+(?:\.\d+)+\b|\b[A-Za-z][\w.+-]* v?\d+(?:\.\d+)+\b|\b(?:version|release) \S*\d|"
    # a major version: "iOS 16", "Android 10", "Python 3", "expo-sqlite 14"
    r"\b(?:[A-Z][A-Za-z]*[a-z][A-Za-z]*|i[A-Z]\w*|[a-z]+(?:-[a-z]+)+) \d{1,3}\b(?![:.,]?\d|\s?%)"
    r"(?!\s?(?:ms|s|sec\w*|min\w*|h|hours?|days?|weeks?|"
    r"[kKMGT]i?B|x|times|rows|lines|users|requests|msg)\b)"
)
_SPELLED = (
    r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|"
    r"hundred|thousand|a dozen|a couple of|a few)"
)
_UNIT = re.compile(
    r"(?:\d[\d,.]*|\b" + _SPELLED + r"(?:[- ](?:hundred|thousand))?)\s?"
    r"(?:%|ms\b|s\b|sec\w*|min\w*|h\b|hours?|days?|weeks?|months?|years?|[kKMGT]i?B\b|[kmgt]b\b|"
    r"msg/s|r(?:eq)?/s|rps|qps|ops\b|requests?|connections?|times|retries|partitions|replicas|workers|"
    r"threads|rows|lines|nodes|brokers|items|operations|messages|users|vCPUs?|cores|EUR|USD|GBP|€|\$|x\b)",
    re.I,
)
_ARROW = re.compile(r"\d\S*\s*(?:->|→|=>)\s*\d|\bfrom \S*\d\S* to \S*\d", re.I)
_IDENT = re.compile(
    r"`[^`]+`|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b|"
    r"\b[\w-]+(?:\.[\w-]+)+:\d+\b|"
    r"(?:^|\s)[\w.-]*/[\w./-]+|\b[\w.-]+\s?=\s?\S+"
)
_NAME = re.compile(
    r"(?<![.!?:]\s)(?<!^)\b[A-Z][\w'’.+-]*[\w]|\b[a-z0-9]+(?:-[a-z0-9]+)+\b|\b[A-Z][a-z]+[A-Z]\w*\b|"
    r"\b[a-z]+(?:\.[a-z]+)+\b"
)
_NUMBER = re.compile(r"\d")
_SPELLED_NUMBER = re.compile(r"\b" + _SPELLED + r"\b", re.I)
_PLACE = re.compile(
    r"\b[\w-]+(?:\.[\w-]+)+:\d+\b|\bhttps?://\S+|`[^`]*[./:][^`]*`|\b(?:is at|lives in|lives at|"
    r"runs on|hosted on|located|goes to|sent to|stored in|kept in)\b",
    re.I,
)
_LIMIT = re.compile(
    r"\b(?:exceeds?|above|below|over|under|at least|at most|more than|less than|up to|threshold|"
    r"limit|max(?:imum)?|min(?:imum)?|cap(?:ped|s)?|allows?|no more than|not more than|"
    r"no fewer than|fewer than|not exceed|never more than|within|quota|budget|ceiling|"
    r"per (?:second|minute|hour|day|account|user))\b",
    re.I,
)

# Noise: the agent narrating its own steps, status repeated, small talk, dead ends, questions.
_NARRATION = re.compile(
    r"^(?:let me|let's(?! (?:go with|use|keep|stick|not|never|switch|move|stay|drop|pin|ship|always|only))|"
    r"i'll|i will|i am|i'm|now|ok(?:ay)?|so|hmm+|right|alright|great|good|fine|yes|no|done|"
    r"ran|running|re-?ran|re-?running|running|checked|checking|looked|looking|reading|read|opened|opening|"
    r"started|starting|picking up|picked up|back to|wrapping up|writing|trying to|going to|quick|session|"
    r"morning|good morning|end of|nothing|all green|tests? (?:pass|green)|watching|still|waiting|implementing|"
    r"continuing|working on|done for|see you|thanks|thank you|have a)\b",
    re.I,
)
_STATUS = re.compile(
    r"^(?:status|progress|update|wip)\b|\bwaiting (?:for|on)\b|"
    r"\b(?:still (?:green|red|waiting|watching|working|failing|"
    r"looking)|nothing (?:new|else|blocking|to report)|all green|no new|as before|same as "
    r"yesterday|looks? (?:fine|good|the same))\b",
    re.I,
)
_DEAD_END = re.compile(
    r"\b(?:no (?:real |visible )?(?:effect|gain|change|luck|difference)|didn't help|did not help|"
    r"dead end|false alarm|never mind|not a problem after all|was wrong|wasn't it|"
    r"far too much|dropped the idea|reverted)\b",
    re.I,
)
_HEDGE = re.compile(
    r"^(?:looks like|it looks|seems|it seems|maybe|perhaps|probably|i think|i guess|i wonder|"
    r"i wondered|not sure|might be)\b",
    re.I,
)
_ANAPHOR = re.compile(r"^(?:it|this|that|these|those|they|above that|below that|then|also|but|and|which)\b", re.I)
_CHATTER = frozenset(
    re.findall(
        r"\S+",
        """
    hey hi hello wow thanks thank haha lol congrats congratulations cool awesome great nice glad sounds aw aww oh
    yeah yes sure ok okay totally same amazing lovely bye cheers welcome omg morning""",
    )
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


def label_kept(label: str) -> bool:
    """A label that marks a line every summary keeps ('Decision', 'Root cause', 'TODO', 'Rollback plan')."""
    return bool(label) and len(label) <= 40 and bool(_KEEP_LABEL.search(label))


def always_kept(label: str, text: str) -> bool:
    return label_kept(label) or bool(_TODO.match(text))


_WEIGHTS = {
    "place": 3.0,
    "limit": 2.0,
    "role": 3.0,
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


def classify(text: str, first: bool = True) -> Facts:
    """Fact classes by content: numbers with units or settings, versions, dates, names, decisions and
    their reasons, causes and fixes, preferences, open items; noise: narration, status, dead ends, chatter."""
    kinds: dict[str, int] = {}

    def count(kind: str, n: int) -> None:
        if n:
            kinds[kind] = n

    count("decision", bool(_DECISION.search(text)) + bool(_DECISION_STRONG.search(text)))
    count("reason", bool(_REASON.search(text)))
    count("cause", bool(_CAUSE.search(text)))
    count("fix", bool(_FIX.search(text)) + bool(_FIX_STRONG.search(text)))
    count("preference", bool(_PREFERENCE.search(text)) + bool(_WISH.search(text)))
    count("role", bool(_ROLE.search(text)))
    count("place", bool(_PLACE.search(text)))
    count("limit", bool(_LIMIT.search(text)) and bool(_NUMBER.search(text) or _SPELLED_NUMBER.search(text)))
    count("todo", bool(_TODO_TEXT.search(text)))
    count("date", len(_DATE.findall(text)))
    count("version", len(_VERSION.findall(text)))
    count("number", len(_UNIT.findall(text)) + len(_ARROW.findall(text)))
    count("setting", len(_IDENT.findall(text)))
    names = {n for n in _NAME.findall(text) if not n.isupper() or len(n) > 1}
    count("name", len(names))
    score = sum(_WEIGHTS[k] * min(n, 3) for k, n in kinds.items())
    if "number" not in kinds and "version" not in kinds and "date" not in kinds and _NUMBER.search(text):
        score += 1.0  # a bare number
    noise = set()
    stripped = text.strip().lstrip("-*> ").strip()
    words = re.findall(r"[a-z']+", stripped.lower())
    if first and _NARRATION.match(stripped):
        noise.add("narration")
    if _STATUS.search(stripped):
        noise.add("status")
    if first and _HEDGE.match(stripped):
        noise.add("hedge")
    if _ANAPHOR.match(stripped):
        noise.add("anaphor")
    if _DEAD_END.search(stripped):
        noise.add("dead_end")
    if stripped.rstrip(" \"')").endswith("?"):
        noise.add("question")
    if words and words[0] in _CHATTER and len(stripped) < 80:
        noise.add("chatter")
    score -= 3.0 * ("narration" in noise) + 5.0 * ("status" in noise) + 6.0 * ("dead_end" in noise)
    score -= 3.0 * ("question" in noise) + 4.0 * ("chatter" in noise) + 3.0 * ("hedge" in noise)
    score -= 2.0 * ("anaphor" in noise)  # leans on the sentence before it
    told = "narration" in noise and kinds.keys() <= {"name", "place", "setting", "date"}  # "Read `a.py`."
    score -= 3.0 * told
    score -= 3.0 * ("anaphor" in noise and len(stripped) < 25)  # a fragment: "then 10 min."
    # the weak classes alone (a name, a bare date) do not make a fact
    strong = {k for k in kinds if k not in {"name", "reason", "date"}}
    facts = frozenset(kinds) if (strong or len(kinds) >= 2) and not told else frozenset()
    return Facts(facts, score, frozenset(noise))


# -- blocks ------------------------------------------------------------------------------------------
FACT_SCORE = 2.5  # a sentence (or a line of a block) scoring less carries no fact
GIST_LINES = 2  # lines of a long code block quoted in its gist
_FENCE_OPEN = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+-]*)")
_SETTING_LINE = re.compile(r"^\s*[\w.-]+\s*(?:=|:)\s*\S")
_ERROR_LINE = re.compile(r"\b\w*(?:Error|Exception|FAILED|Fatal|panic)\b")
_PROMPT = re.compile(r"^\s*(?:\$|>|PS>|›)\s")
_LOG_LINE = re.compile(r"^\s*(?:\S*\d{2}:\d{2}\S*\s+)?(?:\S+\s+)?(?:INFO|DEBUG|WARN(?:ING)?|TRACE)\b")
_FRAME = re.compile(r"^\s*(?:File \"|at [\w$.]+\(|Traceback \(|\.\.\.)")  # a stack frame: never the gist


def block_gist(block: str) -> str:
    """What a long code block or table says, in one line: never a block cut in the middle.

    A table: its rows as clauses named by the header ("service: orders, p99: 120 ms; service: ..."), each
    one the summary may keep or drop. Code: its kind and size and the lines that carry most (settings,
    errors, names, numbers), quoted whole; never a prompt, a log line or a stack frame.
    """
    lines = block.split("\n")
    if lines and lines[0].lstrip().startswith("|"):
        rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
        rows = [r for r in rows if not all(re.fullmatch(r":?-{2,}:?", c) or not c for c in r)]
        head, body = (rows[0], rows[1:]) if len(rows) > 1 else ([], rows)
        return "; ".join(
            ", ".join(f"{h}: {c}" if h else c for h, c in zip([*head, *[""] * len(r)], r) if c) for r in body
        )
    opening = _FENCE_OPEN.match(lines[0]) if lines else None
    lang = opening.group(2) if opening else ""
    inner = lines[1:-1] if opening and len(lines) > 1 else lines
    scored = []
    for n, line in enumerate(inner):
        text = line.strip()
        if not text or len(text) > 160 or _PROMPT.match(line) or _LOG_LINE.match(line) or _FRAME.match(line):
            continue
        value = (
            classify(text, first=False).score
            + 3.0 * bool(_SETTING_LINE.match(line))
            + 3.0 * bool(_ERROR_LINE.search(text))
        )
        scored.append((value, n, text))
    best = sorted(sorted(scored, reverse=True)[:GIST_LINES], key=lambda x: x[1])
    kind = "traceback" if any(_ERROR_LINE.search(t) for _, _, t in best) else "code"
    quoted = "; ".join(f"`{t.replace('`', chr(39))}`" for _, _, t in best)
    return f"{kind} ({lang + ', ' if lang else ''}{len(inner)} lines){': ' + quoted if quoted else ''}"


def block_score(text: str) -> tuple[float, bool]:
    """(score, factual) of a block or its gist: its best line and a little for each other line with a fact;
    a shell session or a program's log output is command noise."""
    lines = [x for x in text.split("\n") if x.strip() and not _FENCE_OPEN.match(x)]
    session = any(_PROMPT.match(x) or _LOG_LINE.match(x) for x in lines)
    facts = [
        classify(x.strip(), first=False)
        for x in lines
        if not _PROMPT.match(x) and not _LOG_LINE.match(x) and not _FRAME.match(x)
    ]
    settings = sum(bool(_SETTING_LINE.match(x)) for x in lines)
    scores = sorted((f.score for f in facts), reverse=True)
    score = (scores[0] if scores else 0.0) + sum(1.0 for s in scores[1:] if s >= FACT_SCORE) + 1.5 * min(settings, 4)
    return score, not session and (any(f.factual for f in facts) or settings > 0)
