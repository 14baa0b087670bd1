"""The rules that find a fact by what a sentence says, each stated in one line (RULES): numbers with their unit,
names with their role, dates and deadlines, causes and fixes, preferences, decisions and what they replaced."""

from __future__ import annotations

import re
from dataclasses import dataclass

from memsearch_lsp.core.compact.languages import ZH_NAME, ZH_ROLE, cues

_STOPWORD = (
    r"(?:of|and|or|to|in|on|at|by|for|the|a|an|is|are|was|were|with|from|than|per|vs|am|pm|if|as|into|so|but|then|"
    r"that|this|it|more|less|out|up|down|off|over|under|after|before|until|since|through|again|also|too|more|most)"
)
_SPELLED = (
    r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|"
    r"hundred|thousand|a dozen|a couple of|a few)"
)
_NUM = r"(?<![A-Za-z0-9_.#/:-])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
# the SI and electrical units, case-sensitive: 4.20 V, 38 uA, 30 A, 10 Hz, 2.4 GHz, 5 kWh, 3000 mAh, 20 dBm, 40 °C
_SI = (
    r"(?-i:(?:[mkMµu]?[VAW]|[mkM]?Wh|m?Ah|[kMG]?Hz|dBm?|[mµun]s|[kcmµn]m|[mk]?g|[kMG]bps|[KMG]B/s|fps|rpm|ppm)\b"
    r"|°[CF]?|%)"
)
UNIT = re.compile(
    r"(?:" + _NUM + r"|\b" + _SPELLED + r"(?:[- ](?:hundred|thousand))?)\s?"
    r"(?:%|ms\b|s\b|sec\w*|min\w*|h\b|hours?|days?|weeks?|months?|years?|[kKMGT]i?B\b|[kmgt]b\b|[KMGT]i\b|"
    r"msg/s|r(?:eq)?/s|rps|qps|ops\b|requests?|connections?|times|retries|partitions|replicas|workers|"
    r"threads|rows|lines|nodes|brokers|items|operations|messages|users|vCPUs?|cores|EUR|USD|GBP|€|\$|x\b|"
    r"[kKM]\b|million\b|billion\b|thousand\b|秒|分钟|小时|天|周|个月|年|万|亿|次|个|笔|条|台|人|倍|" + _SI + ")"
    # money written before its amount: $27,600, £10, €1.2M, R$ 300
    r"|(?<![\w$`'])(?:US|R|A|C)?[$€£¥]\s?\d[\d,.]*(?:[kKMB]|bn)?(?!\w)",
    re.I,
)
# what a number counts, in the words after it: "1,300 orders", "30 tickets a week", "three alternatives"
COUNTED = re.compile(
    r"(?:" + _NUM + r"|\b" + _SPELLED + r")\s(?!" + _STOPWORD + r"\b)[a-z][a-z-]{2,}\b(?![(.:]\w)", re.I
)
ARROW = re.compile(r"\d\S*\s*(?:->|→|=>)\s*\d|\bfrom \S*\d\S* to \S*\d", re.I)
# a setting or a measure named and valued: "batch 16", "lr 1e-5", "p99 205 ms", "WER 23.4%", "workers = 8"
METRIC = re.compile(
    r"\b(?!" + _STOPWORD + r"\b)(?:[a-z][\w-]{1,30}|[A-Z]{2,6}\w*)\s?(?:=|:)?\s(?:\d[\d,.]*(?:e-?\d+)?)(?![\w:-])"
)
LIMIT = re.compile(
    r"\b(?:exceeds?|above|below|over|under|at least|at most|more than|less than|up to|threshold|"
    r"limit\w*|maximum|minimum|(?:max|min)(?=\s?[=:]?\s?\d)|cap(?:ped|s)?|allows?|no more than|not more than|"
    r"no fewer than|fewer than|not exceed|never more than|within|quota|budget|ceiling|valid|"
    r"per (?:second|minute|hour|day|week|month|account|user|seat|item|tenant|query))\b|[<>≤≥]=?\s?\d",
    re.I,
)
NUMBER = re.compile(r"\d")
SPELLED_NUMBER = re.compile(r"\b" + _SPELLED + r"\b", re.I)
_B, _E = r"(?<![A-Za-z0-9_])", r"(?![A-Za-z0-9_])"  # \b, but beside Chinese too ("把max.poll.interval.ms改成")
IDENT = re.compile(
    r"`[^`]+`|"
    + _B
    + r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+"
    + _E
    + "|"
    + _B
    + r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"
    + _E
    + "|"
    # a dotted key (max.poll.interval.ms), not a web address's host (docs.github.com/...)
    + r"(?<![A-Za-z0-9_./@-])[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_-]*){2,}(?![A-Za-z0-9_/@-])|"
    r"\b[\w-]+(?:\.[\w-]+)+:\d+\b|\b[A-Z][A-Z0-9]{1,9}-\d+\b|"
    r"(?:^|\s)[\w.-]*/[\w./{}-]+|\b[\w.-]+\s?=\s?\S+"
)
VERSION = re.compile(
    r"\bv\d+(?:\.\d+)*\b|\b[A-Za-z][\w.+-]* v?\d+(?:\.\d+)+\b(?!\s?"
    + _SI
    + r")|\b(?:version|release) \S*\d|\b\d+\.\d+\.\d+\b|"
    # a major version: "iOS 16", "Android 10", "Python 3", "expo-sqlite 14"
    r"\b(?:[A-Z][A-Za-z]*[a-z][A-Za-z]*|i[A-Z]\w*|[a-z]+(?:-[a-z]+)+) \d{1,3}\b(?![:.,]?\d|\s?%)"
    r"(?!\s?(?:ms|s|sec\w*|min\w*|h|hours?|days?|weeks?|"
    r"[kKMGT]i?B|x|times|rows|lines|users|requests|msg)\b)"
)
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
DATE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}\b|\b" + _MONTH + r" \d{1,2}\b|\b\d{1,2} " + _MONTH + r"(?!\w)|"
    r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b|\bweek \d{1,2}\b|\bQ[1-4]\b|"
    r"(?<![\d:])\d{1,2}:\d{2}(?!:?\d)(?:\s?(?:UTC|CET|CEST|GMT|[AP]M|[A-Z]{2,4}T))?|"
    r"\b(?:deadline|due|until|before|by end of)\b|"
    # dates and deadlines in words: "October 9th", "next sprint", "end of the month", "tomorrow"
    r"\b(?:january|february|march|april|june|july|august|september|october|november|december)\b|"
    r"\b\d{1,2}(?:st|nd|rd|th)\b|\b(?:next|this|coming|following) (?:week|sprint|month|quarter|release|year|"
    r"(?:mon|tues|wednes|thurs|fri|satur|sun)day)\b|\bend of (?:the )?(?:day|week|month|quarter|sprint|year)\b|"
    r"\b(?:tomorrow|tmrw|tonight|EOD|EOW|EOM)\b|\b(?:first|second|third|last) (?:working |business )?day\b|"
    r"(?-i:\b(?:Mon|Tue|Tues|Wed|Thu|Thur|Thurs|Fri|Sat|Sun)\b)" + "|" + cues("date"),
    re.I,
)
_DAYISH = (
    r"(?:\d{4}-\d{2}-\d{2}|(?:mon|tues|wednes|thurs|fri|satur|sun)day|tomorrow|tonight|EOD|EOW|next \w+|"
    r"the end of|end of|" + _MONTH + r" \d{1,2}|\d{1,2} " + _MONTH + r"|Q[1-4])"
)
DEADLINE = re.compile(r"\b(?:by|before|until|due(?: on| by)?|no later than|in place by|ready by)\s" + _DAYISH, re.I)
_ROLE_NOUN = (
    r"(?:lead|leader|manager|owner|admin(?:istrator)?|contact|maintainer|reviewers?|supervisor|designer|PM|"
    r"engineer|architect|director|head of \w+|CTO|CEO|VP|intern|QA|SRE|on-call|sponsor|stakeholder|approver|"
    r"advisor|mentor|consultant|author|champion|coordinator|analyst|scientist|developer|dev|product)"
)
NAME_ROLE = re.compile(
    r"\b[A-Z][\w'’.-]+(?: [A-Z][\w'’-]+)? \((?:[a-z][\w&/ -]{1,30}|[A-Z]{2,5})\)|"  # Carol (product)
    r"(?:\b(?:is|as|was|becomes?|became|are)|=)\s(?:the |our |their |a |an |his |her |its )?(?:[\w-]+ ){0,2}"
    + _ROLE_NOUN
    + r"\b|\b"  # Dmitri is the engineering manager, Marta = tech lead
    + _ROLE_NOUN
    + r"(?:[:,]?| (?:is|was|will be|becomes)) (?-i:[A-Z][a-z]+)|"  # contact Yusuf, reviewer: Jukka, author will be Aino
    r"\b(?!(?:the|a|an|our|their|my|your|his|her|whole|same) )[\w-]+ team\b|"  # the platform team
     + re.sub(r"\(\?P<\w+>", "(?:", ZH_NAME + r"[（(]" + ZH_ROLE + r"[）)]|[（(]" + ZH_NAME + r"[，,]\s?" + ZH_ROLE)
)
# a person's role as a summary's People line keeps it: a role noun, a team's function, or an acronym (DBA, SRE)
_PERSON_ROLE = (
    r"(?:(?:[\w-]+ |\w+-){0,3}(?i:" + _ROLE_NOUN + r"|officer|nurse|doctor|counsel|support|comms|finance|legal|"
    r"sales|marketing|recruiter|founder|partner|professor|postdoc|researcher|tester|writer|editor|[a-z]*ops|liaison|"
    # (a "tech" or a "head" of something: "field tech", "facility head"; "Rust is the tech we know" is no person)
    r"(?!(?:the|a|an|our|their) )\w+ (?:tech|head)|technician|student|assistant|secretary|chair|treasurer|clerk|"
    r"planner|dispatcher|inspector|"
    r"copyeditor|proofreader|typesetter|illustrator|translator|"
    # the same in the languages the memory may be written in: Portuguese, Spanish, French, German, Italian
    r"gerente|l[ií]der|engenheir[oa]|cient[ií]fic[oa]|cientista|wissenschaftler(?:in)?|scientifique|analista|"
    r"arquitet[oa]|arquitect[oa]|architekt(?:in)?|architecte|diseñador[a]?|designer(?:in)?|gestor[a]?|ingenier[oa]|ing[ée]nieure?|ingegnere|diret(?:or|ora)|director[a]?|"
    r"coordenador[a]?|coordinador[a]?|responsável|responsable|desenvolvedor[a]?|desarrollador[a]?|"
    r"d[ée]veloppeu(?:r|se)|sviluppatore|jefe|jefa|chefe|chef|"
    # German compounds, feminine too: Teamleiter Backend, Produktmanagerin, UX-Designerin
    r"(?i:[\w-]*(?:leiter|entwickler|ingenieur|manager|designer|berater|analyst|architekt)(?:in)?)(?: [A-Z][\w-]+)?)"
    r"(?: (?:de|da|do|del|des|du|di|of|for) [\w-]+)?|"
    r"DBA|UX|PO|PI|HR|MSc|PhD|[A-Z][a-z]*Ops|iOS (?:lead|dev))(?:/[\w-]+)?"  # QA/validation
)
_NOT_NAMES = (
    r"(?!(?:This|That|These|Those|It|He|She|They|We|You|There|Here|Which|What|Who|The|One|Our|My|Your|Their|Nobody|"
    # a sentence that opens with what was done to a tool: "Migrated Postgres from ...", "Kept Redis as ..."
    r"Migrated|Copied|Exported|Imported|Moved|Pulled|Pushed|Kept|Used|Added|Removed|Deployed|Installed|Updated|"
    r"Upgraded|Set|Got|Put|Ran|Built|Fixed|Tested|Checked|Switched|Replaced|Enabled|Disabled|Configured|"
    r"Somebody|Someone|Everybody|Everyone|Anyone|"
    # where software runs: "Prod runs avl-ingest v2.7.1"
    r"Prod|Production|Staging|Sandbox)\b)"
)
_PERSON = (
    r"(?P<name>(?:(?:Dr|Prof|Mr|Mrs|Ms)\. )?"
    + _NOT_NAMES
    + r"(?-i:[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ][\w'’-]*(?:(?: (?:de|van|von|der|den|da|di|del|du|dos|das|ter|le))? "
    + r"[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ][\w'’-]*)?))"  # Bram de Vries
)
_ROLE_OF = r"(?P<role>" + _PERSON_ROLE + r")"
# a role is no person's when a thing's noun follows it ("as the support dashboard", "from the finance schema")
_NOT_A_THING = (
    r"\b(?! (?:schema|repo|repository|monorepo|database|db|table|bucket|dashboard|cache|warehouse|cluster|service|"
    r"server|api|folder|directory|branch|account|project|budget|report|spreadsheet|sheet|page|channel|queue|config|"
    r"docs|pipeline|job|tool|stack|layer|host|node|bot|app|module|library|package|image|files?)\b)"
)
PEOPLE = (  # a person and their role, as the groups `name` and `role`
    # Oskar (SRE, on call this week), Lucia (product owner from the library side)
    # (the role as the parenthesis says it, to its first comma: "head of passenger information", "liaison to ops")
    re.compile(r"\b" + _PERSON + r" \((?P<role>" + _PERSON_ROLE + r"(?: [^(),;]{1,40})?)(?:[,;] [^()]{1,40})?\)"),
    re.compile(
        r"\b"
        + _PERSON
        + r"(?: is| was| =| é| es| est| ist) (?:the |our |their |o |a |el |la |le |der |die |l'|"
        + r"(?:nosso|nossa|nuestr[oa]|notre|unser|unsere) )?"
        + _ROLE_OF
        + r"\b(?! \w+ing\b)"
    ),
    # (owner: Felipe, iOS lead), Leona Berg, the new site manager at Brackenmoor; Annika Lindqvist, the PI.
    re.compile(
        r"\b" + _PERSON + r", (?:the |our |their )?" + _ROLE_OF + r"(?=[),;:]|\.(?:\s|$)| (?:at|for|on|in|from) )"
    ),
    # Margot Ellery chaired as managing editor, Dev Anand sat in as production manager (the role ends the clause:
    # "Grafana ... as the support dashboard" names no person)
    re.compile(
        r"\b" + _PERSON + r" (?:[a-z]+ ){1,2}as (?:the |our |their )?" + _ROLE_OF + _NOT_A_THING + r"(?! \w+ing\b)"
    ),
    # Femi Adeyemi from sales, Ines Kraft from grid compliance ("Snowflake from the finance schema": no person)
    re.compile(
        r"\b" + _PERSON + r" from (?:the )?(?P<role>(?:[\w-]+ )?(?:sales|marketing|finance|legal|compliance|security|"
        r"support|ops|operations|product|design|procurement|HR|IT|QA|research)(?: team)?)" + _NOT_A_THING
    ),
    # "contact Yusuf", and whose contact: "the platform team, contact Yusuf" -> Yusuf (platform team, contact)
    re.compile(
        r"\b(?P<role>(?:[\w-]+ team,? )?(?:contact|reviewer|owner|maintainer|supervisor))(?::| is)? " + _PERSON + r"\b"
    ),
    re.compile(ZH_NAME + r"[（(]" + ZH_ROLE + r"[）)]"),
    re.compile(r"[（(]" + ZH_NAME + r"[，,]\s?" + ZH_ROLE + r"[）)]"),
    # what a person owns or leads: "Tomasz Berg owns the weather feed" -> Tomasz Berg (owns the weather feed); who is
    # on call
    re.compile(
        r"(?<![Tt]he )(?<![Oo]ur )\b"
        + _PERSON
        + r"(?:,? who)? (?:is )?(?P<role>(?:owns|leads|runs|maintains|manages) (?:the |our )?"
        + r"[\w-]+(?:\.\d+)*(?: [\w-]+(?:\.\d+)*){0,3}|on[- ]call)"  # (a version's dots: avl-ingest v2.7.1)
        + r"(?=[,;)\n]|\.(?:\s|$)|$| and | this | \()"
    ),
)
ROLE = re.compile(
    r"\b(?:owns?|owner|on[- ]call|responsible for|maintains?|maintainer|reviewers?|assigned to|"
    r"in charge of|on leave|parental leave|out of office|OOO|joins?|joined|left the team|leaves the team|"
    r"from the \w+ team|leads?|handles|covers|takes over|took over|belongs to|handed (?:it )?over|hands over|"
    r"signs? off|approved by|works on)\b",
    re.I,
)
DECISION = re.compile(
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
    r"\w+ it is\b)\b" + "|" + cues("decision"),
    re.I,
)
# a decision told as one: "we went with X", "settled on", "let's go with", "from now on", "X it is"
DECISION_TOLD = re.compile(
    r"\b(?:went with|go(?:ing)? with|settled on|chose|opted for|decided|agreed|from now on|going forward|"
    r"we(?:'ll|’ll| will| are going to|'re going to|’re going to) (?:keep|use|stay|go|switch|move|stick|reprocess|"
    r"store|run|ship|drop|pin|only)|"
    # "Postgres it is." (never "bigger than it is", "leave it as it is", "whatever it is")
    r"\b(?!(?:than|as|what|whatever|how|where|who|which|that|because|if|when|since|so|way)\b)\w+ it is"
    r"(?=\s*(?:then\b|[.!,;:]|$)))|" + cues("decision-told"),
    re.I,
)
# what a decision replaced or ruled out: "was replaced by", "X was considered but", "goes from weekly to ..."
REPLACED = re.compile(
    r"\b(?:replaced (?:by|with)|was replaced|replacing|replaces|in place of|"
    r"considered\b.{0,40}\bbut|looked at\b.{0,60}\bbut|"
    r"so no\b|we drop|instead|(?:goes|go|moves?|moved|went) from \S+(?: \S+){0,3} to|approved|"
    r"(?:won't|will not|do not|don't) (?:use|add|need|support|ship)|dropped)\b|"
    r"\((?:was|previously|formerly) [^)]{1,30}\)",
    re.I,
)
REASON = re.compile(
    r"\b(?:because|since|so that|due to|in order to|as the|the reason|which is why|otherwise)\b|" + cues("because"),
    re.I,
)
CAUSE = re.compile(
    r"\b(?:root cause|caused by|the cause|real cause|because of|culprit|the problem was|"
    r"the issue was|turned out|regression|leak\w*|exhaust\w*|race condition|deadlock|due to|"
    r"caus(?:es|ed|ing)|led to|leads to|triggered by|stems? from|comes? from|came from|"
    r"(?:was|were|is|are)(?:n't|’t| not) (?:idempotent|thread-safe|atomic|closed|released|set)|"
    r"breaks|broke|the (?:real |actual |underlying )?(?:reason|problem|issue|bug) (?:is|was)|"
    r"explains? (?:the|why)|assumed|expected .{1,40} but|found the (?:reason|cause|bug|problem)|"
    r"(?:the )?bottleneck (?:is|was|were)|, so (?!that\b|far\b|I\b|let\b)(?=\w+ \w+)|"
    r"happens? because|(?:still )?points? (?:at|to)|"
    r"most of the (?:time|wait|latency|delay|cost|load|memory|CPU) (?:is|was|goes|went|is spent|was spent) (?:in|on))\b"
    + "|"
    + cues("cause"),
    re.I,
)
# a failure and its cause in one sentence: "the crash happens because ...", "the export hung since ..."
FAILURE_BECAUSE = re.compile(
    r"\b(?:crash\w*|errors?|fail\w*|hang|hung|hangs|stuck|time[ds]? ?out|timeouts?|OOM\w*|spike\w*|slow\w*|"
    r"duplicat\w*|outage|incident|bug|broken|wrong|missing|lost|died|dies)\b.{0,80}"
    r"\b(?:because|when|since|whenever|as soon as|if)\b" + f"|(?:{cues('failure')}).{{0,80}}(?:{cues('because')})",
    re.I,
)
FIX = re.compile(
    r"\b(?:fix(?:ed|es)?|resolved|workaround|mitigat\w*|rolled back|roll back|rollback|"
    r"patch(?:ed)?|hotfix|now (?!that\b|is\b|has\b|was\b|does\b|this\b)[a-z]+s|by (?:creating|adding|setting|using|"
    r"moving|wrapping)|made (?:it|them|the [\w-]+(?: [\w-]+)?) (?:idempotent|atomic|thread-safe|retry-safe))\b"
    + "|"
    + cues("fix"),
    re.I,
)
# a fix told as one: "fixed by ...", "the fix was ...", "sorted it out by ...", "works again"
FIX_TOLD = re.compile(
    r"\b(?:(?:fix|resolv|solv|sort|address|mitigat|handl|cur)\w*(?: it| this| that| the \w+)?(?: out)? (?:by|with)|"
    r"worked around|work around|the (?:fix|solution|remedy|workaround) (?:is|was)|to fix (?:it|this|that)|"
    r"(?:works?|match(?:es)?|pass(?:es)?|finish(?:es)?|runs?) again|no longer (?:fails|happens|crashes|breaks)|"
    r"no \w+ since|(?:pods?|it|service|job|system)s? (?:is |are )?stable)\b",
    re.I,
)
# a change made to set something right: "raised the limit from 256Mi to 512Mi", "bumped X to 1.9.2"
REMEDY = re.compile(
    r"\b(?:raised|lowered|increased|decreased|reduced|bumped|upgraded|downgraded|pinned|switched|disabled|"
    r"enabled|filter(?:ed)? out|cached|restarted|renumbered|rolled back|reverted|locked|capped|limited|"
    r"moved)\b(?: \S+){0,6}? (?:to|from|with|until|by|behind)\b",
    re.I,
)
PREFERENCE = re.compile(
    r"\b(?:prefers?|preferred|preference|would rather|'d rather|wants?|wanted|likes|liked|"
    r"(?:I|we|they|he|she) like|dislikes?|hates?|"
    r"please|always|never|for the record|don't want|doesn't want|insists?|convention|style|"
    r"would like|(?:'d|’d) like|would prefer|(?:'d|’d) prefer|asked (?:that|for)|"
    r"asked (?:us|me|everyone|the team) to (?:always|never|not|keep|use|stop|avoid)|"
    r"can we|could we|let(?:'s|’s) not|make sure|not allowed|(?:is|are) against|no \w+ without)\b"
    + "|"
    + cues("preference")
    + "|"
    + cues("rule"),
    re.I,
)
# a named person and their wish: "Dana wants ...", "Carol (product) wants", "Omar would like ...", "Lee asked that"
WISH = re.compile(
    r"\b(?:[A-Z][a-z]+|I|we|We|[Tt]he user|[Uu]ser)(?:'s)?(?: \([^)]{1,30}\))? (?:(?:also|really|still) )?"
    r"(?:wants?(?! to (?:look|see|check|know|talk|discuss|review|think|hear|understand|try|go|wait))|"
    r"would (?:like|prefer|rather)|"
    r"(?:'d|’d) (?:like|prefer|rather)|asked (?:that|for|me to|us to)|prefers|insists|suggested|proposed|"
    r"requested|expects|likes|hates|reminded (?:me|us)|told (?:me|us) (?:to|that|not))\b"
)
# a standing rule: "always ...", "never ...", "no new gems without asking", "only through the pipeline"
RULE = re.compile(
    r"\b(?:always|never|must(?:n't| not)?|should (?:always|never|not)|no (?:\w+ ){1,3}without|without asking|"
    r"from now on|going forward|(?:make|made) (?:that|it|this) a rule|as a rule|lessons?|"
    r"(?:'s|’s|house|team|our|the|ground) (?:rule|policy|guideline)s?(?: for [\w ]{1,30})?(?=:)|rule of thumb|"
    r"only\b(?! (?:had|have|took|got|found|saw|a few|one|two))|is (?:not )?allowed|mandatory|required)\b",
    re.I,
)
TODO_TEXT = re.compile(
    r"\b(?:[A-Z][\w'’-]+ (?:to|will|should|must|plans to) [a-z]+|need(?:s)? to|must|remember to|"
    r"todo|follow[- ]?up|blocked|is due|due (?:on|by)|deadline|(?:has|have) to be|"
    r"(?:it's|it is|is) due|due (?:\w+day|tomorrow|next|this|end|before)|"
    r"(?:by|before|until) (?:\w+day|tomorrow|tonight|EOD|EOW|next \w+|the end of|end of)|"
    r"in place by|ready by|done by|live by|(?:I'm|I am|we're|we are) (?:writing|doing|taking)|plans? to)\b"
    + "|"
    + cues("todo")
    # who does it, said last in parentheses: "update the runbook (Dana)", "更新 runbook（王磊）"
    + r"|[a-z\u3400-\u9fff][^()（）\n]{10,200}[(（](?:[A-Z][a-z]+|[\u4e00-\u9fff]{2,3})[)）][.。]?$"
)
PLACE = re.compile(
    r"\b[\w-]+(?:\.[\w-]+)+:\d+\b|\bhttps?://\S+|`[^`]*[./:][^`]*`|\b(?:is at|lives? in|lives? at|"
    r"runs on|hosted on|located|goes to|sent to|stored in|kept in|points? at)\b",
    re.I,
)
# what a thing is: "Stripe is the payment provider", "Kafka is our event bus", "PostgreSQL 16 is the primary"
DEFINITION = re.compile(
    r"(?<![\w.])(?!(?:It|This|That|There|Here|What|Which|Who|He|She|They|We|I)\b)[A-Z][\w.+-]*(?: [\w.+-]+)?"
    r" (?:is|are|was|were|remains?|stays?|becomes?) (?:the|our|their|its|now the) "
)
# how a thing is set up, told in the passive: "webhooks are verified with ...", "carts are deleted after 30 days"
SETUP = re.compile(
    r"\b(?:is|are) (?:\w+ly )?(?:[a-z]+ed|built|kept|run|sent|set|made|written|held|driven|done|shown|hidden)"
    r" (?:with|by|from|in|on|via|through|as|at|after|every|per|to|for|behind|under|before)\b"
)
NAME = re.compile(
    r"(?<![.!?:]\s)(?<!^)\b[A-Z][\w'’.+-]*[\w]|\b[a-z0-9]+(?:-[a-z0-9]+)+\b|\b[A-Z][a-z]+[A-Z]\w*\b|"
    r"\b[a-z]+(?:\.[a-z]+)+\b"
)


_RUN = re.compile(r"[^\s\u3400-\u9fff]{100,}")  # (Chinese writes whole sentences without a space: not a run)
_HAN_RUN = re.compile(r"\S{2000,}")


def short_runs(text: str) -> str:
    """`text` with every run of over 100 characters without a space (or a Chinese character) cut to its first 100 (a
    pasted key, a minified line), and any run of over 2,000 to its first 2,000: what the rules read, so that no
    rule's time grows with the square of such a run."""
    text = _RUN.sub(lambda m: m.group()[:100], text)
    return _HAN_RUN.sub(lambda m: m.group()[:2000], text)


@dataclass(frozen=True)
class Rule:
    """A rule that finds one kind of fact; `each` counts every match (else the rule counts once)."""

    name: str
    kind: str
    pattern: re.Pattern[str]
    says: str
    each: bool = False


RULES: tuple[Rule, ...] = (
    Rule("quantity", "number", UNIT, "a number with its unit: 3.8 s, 12 MB, 240Mi, 50k, 4.20 V, 20 %, $29", True),
    Rule("count", "number", COUNTED, "a number with what it counts: 1,300 orders, 30 tickets, three alternatives"),
    Rule("change", "number", ARROW, "a value changed: 100 -> 300, from 840 ms to 210 ms", True),
    Rule("measure", "setting", METRIC, "a setting or measure named with its value: batch 16, p99 205, workers = 8"),
    Rule("bound", "limit", LIMIT, "a bound with a number: under 2 s, at most 3, max 3 per item, valid 24 h"),
    Rule("identifier", "setting", IDENT, "code, snake_case or CONSTANT names, host:port, a path, JUN-882", True),
    Rule("version", "version", VERSION, "a name and its version: Go 1.23, react-navigation 7.0.14, v2.3.0", True),
    Rule("date", "date", DATE, "a date or time: 2027-01-15, Fri, next sprint, 09:30 UTC, Q2, week 47", True),
    Rule("deadline", "todo", DEADLINE, "a deadline: by, before, until or due with a day: by Friday, due 2027-02-01"),
    Rule("name-role", "role", NAME_ROLE, "a person and their role: Carol (product), Marta = tech lead, contact Yusuf"),
    Rule("responsibility", "role", ROLE, "who does what: owns, leads, handles, covers, on call, on leave, signs off"),
    Rule("definition", "definition", DEFINITION, "what a thing is: Stripe is the payment provider"),
    Rule("setup", "setting", SETUP, "how a thing is set up, in the passive: webhooks are verified with ..."),
    Rule("decision", "decision", DECISION, "a decision or a switch: decided, we keep, switched X to Y, instead of"),
    Rule("decision-told", "decision", DECISION_TOLD, "a decision told as one: went with, settled on, agreed, X it is"),
    Rule("replaced", "decision", REPLACED, "what a decision replaced or ruled out: replaced by, considered but, so no"),
    Rule("reason", "reason", REASON, "a reason: because, since, so that, due to"),
    Rule("cause", "cause", CAUSE, "a cause: root cause, caused by, turned out, not atomic, most of the time is in"),
    Rule("failure-because", "cause", FAILURE_BECAUSE, "a failure with its cause: the crash happens because ..."),
    Rule("fix", "fix", FIX, "a fix: fixed, resolved, workaround, rolled back, now uses, by adding, made X idempotent"),
    Rule("fix-told", "fix", FIX_TOLD, "a fix told as one: fixed it by, the fix was, works again, no timeouts since"),
    Rule("remedy", "fix", REMEDY, "a change made to set it right: raised X from A to B, bumped, pinned, switched"),
    Rule("preference", "preference", PREFERENCE, "a wish or taste: prefers, wants, would rather, please, don't want"),
    Rule("wish", "preference", WISH, "a named person's (or the user's) wish: Carol wants, the user told me to"),
    Rule("rule", "preference", RULE, "a standing rule: always, never, must, only, no X without asking, lesson"),
    Rule("todo", "todo", TODO_TEXT, "an open item: X to do Y, need to, follow-up, blocked, plans to, due"),
    Rule("place", "place", PLACE, "where a thing is: host:port, URL, a path, runs on, stored in, points at"),
)
