"""Do summaries keep the facts? Share of labelled facts kept and size ratio of compaction, per set.

    python -m bench compaction                       # the extractive summariser on every set below
    python -m bench.compaction [--set DIR ...] [--summarizer openai --base-url URL --model NAME]

A set is a folder with `memory/YYYY-MM-DD.md` (an agent's daily logs) and `facts.json`: each fact names
its log and the tokens any faithful summary must hold. A fact is kept when one line of the summaries
holds all its tokens (case-insensitive), so a line cut in half or a number without its name does not
count. Every log of a set is compacted (`plan_compaction`, nothing applied, the product's settings
otherwise: weekly summaries, the bundled model for near-duplicates) in a copy under a temporary folder.
The size ratio is the summaries' characters (headers and links included) over the logs'.

`compaction_set/dev` (two weeks of one project, 42 facts) and `dev2` (eight denser days in seven styles,
35 facts) are the sets the summariser is tuned on; `heldout` (another project, another writing style, 16
facts), `heldout2` (a nightly ETL's week in five styles, 25 facts), `heldout3` (an app team's two weeks in
four styles, 47 facts) and `heldout4` (a lab's week, 21 facts) were written before the round that measured
them (seen since); `heldout5` (a data platform team's week, 35 facts) was written before issue 39's second
round; `heldout6` (a hospital booking app's week, 36 facts) and `heldout7` (a battery firmware team's week, 34
facts) were written for issue 39's third round by someone who had not read the summariser. The fourth round's
People line was chosen after reading what the summariser lost on heldout5-7: they are seen now. `heldout8` (an
observatory's telescope scheduler, 36 facts) was written blind in the fifth round by a helper that had not read the
summariser, and measured before any change was made for it (17/36); the rules that round took from it (a person who
"owns the weather feed", "liaison", a guess as a hedge) make it seen too. `ml-dev` (an online chess platform's
matchmaking team) and `ml-heldout` (a container terminal's yard planning team), 8 logs each in Portuguese, Spanish,
German and Chinese (36 facts each), were written blind the same round: the rules for those languages were tuned on
`ml-dev`; of `ml-heldout` only its score was read, never its text. `heldout9` (a public library's e-book lending
service, 34 facts) was written blind at the end of that round and measured once: unseen (its text and what it
loses have not been read). `heldout12` (a small publisher's production of a memoir, 39 facts), `heldout13` (a
research group's GPS-tagged curlews, 36 facts) and `ml-heldout3` (a museum's touring exhibition, in Portuguese,
Spanish, German and Chinese, 37 facts) were written blind in issue 39's tenth round, by a helper that had not read
the summariser, and measured by score only at its start and end (49/112 both times); heldout13's text was read in
the twelfth round (seen since). `heldout14` (a city bus operator's timetable and real-time data team, 40 facts) and
`heldout15` (a vet clinic chain's move to a new booking system, 40 facts) were written blind at the start of the
twelfth round by a helper that had not read the summariser or the other sets' logs. `heldout16` (a wind farm's
turbine maintenance scheduling, 40 facts) and `heldout17` (a school group's timetabling software, partly in Spanish
and German, 30 facts) were written blind the same way at the start of the round of 2026-12-06 and measured by score
only (42/70 before that round's changes). `heldout18` (a hospital pharmacy's dispensary and aseptic unit, 39 facts),
`heldout19` (a river footbridge's construction site, 38 facts) and `ml-heldout4` (a coffee roastery exporting from
Lisbon to Shanghai, in Portuguese, Spanish, German and Chinese, 40 facts) were written blind the same way at the start
of the round of 2026-12-07 and measured by score only at its start and end (57/117 both times; seen since).
Logs a summary would not shrink enough are left as they are
(`nothing_to_gain`): their facts count as kept and their characters count on both sides of the ratio.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import BENCH, ROOT, emit, table

DEV = [BENCH / "compaction_set" / name for name in ("dev", "dev2", "ml-dev")]  # tuned on
HELD_OUT = [
    BENCH / "compaction_set" / name
    for name in (
        "heldout",
        "heldout2",
        "heldout3",
        "heldout4",
        "heldout5",
        "heldout6",
        "heldout7",
        "heldout8",
        "heldout9",
        "heldout10",
        "heldout11",
        "heldout12",
        "heldout13",
        "heldout14",
        "heldout15",
        "heldout16",
        "heldout17",
        "heldout18",
        "heldout19",
        "ml-heldout",
        "ml-heldout2",
        "ml-heldout3",
        "ml-heldout4",
    )
]  # written before the round that measured them (seen since)
SETS = DEV + HELD_OUT
COLUMNS = (
    "set",
    "summarizer",
    "logs",
    "summaries",
    "unchanged",
    "kept",
    "kept_share",
    "ratio",
    "met",
    "promoted",
    "ceiling",
    "lost",
)
TARGET_KEPT, TARGET_RATIO = 0.90, 0.40  # issue 26: >= 90 % of facts at <= 40 % of the logs' characters


@dataclass(frozen=True)
class Fact:
    id: str
    kind: str
    log: str
    tokens: tuple[str, ...]


def load_facts(folder: Path) -> list[Fact]:
    data = json.loads((folder / "facts.json").read_text(encoding="utf-8"))
    return [Fact(f["id"], f.get("class", ""), f["log"], tuple(f["tokens"])) for f in data["facts"]]


def holds(text: str, fact: Fact) -> bool:
    """One line of `text` holds every token of the fact."""
    tokens = [t.lower() for t in fact.tokens]
    return any(all(t in line.lower() for t in tokens) for line in text.splitlines())


def score(facts: Sequence[Fact], summaries: str, chars_before: int, chars_after: int) -> dict[str, Any]:
    """Share of facts kept, the size ratio, and which facts were lost (by id) and kept per class."""
    kept = [f for f in facts if holds(summaries, f)]
    classes: dict[str, list[int]] = {}
    for f in facts:
        classes.setdefault(f.kind, [0, 0])[1] += 1
        classes[f.kind][0] += f in kept
    return {
        "facts": len(facts),
        "kept": len(kept),
        "kept_share": len(kept) / len(facts) if facts else 1.0,
        "chars_before": chars_before,
        "chars_after": chars_after,
        "ratio": chars_after / chars_before if chars_before else 0.0,
        "lost": [f.id for f in facts if f not in kept],
        "by_class": {k: f"{v[0]}/{v[1]}" for k, v in sorted(classes.items())},
    }


def run_set(folder: Path, embedder: Any = None, **compact: Any) -> dict[str, Any]:
    """Compact every log of a set (planned, not applied) and score the summaries against its facts."""
    from memsearch_lsp.core.compact.plan import plan_compaction
    from memsearch_lsp.core.memory import Memory

    facts = load_facts(folder)
    with tempfile.TemporaryDirectory(prefix="memsearch-compaction-facts-") as tmp:
        ws = Path(tmp)
        shutil.copytree(folder / "memory", ws / "memory")
        logs = sorted(p.name for p in (ws / "memory").glob("*.md"))
        memory = Memory(ws, embedder=embedder, compact=compact) if compact else Memory(ws, embedder=embedder)
        try:
            plan = plan_compaction(memory, files=[f"memory/{name}" for name in logs])
        finally:
            memory.close()
        left = {x: paragraphs((ws / x).read_text(encoding="utf-8")) for u in plan.unchanged for x in u.logs}
    text = "\n".join([*(s.content for s in plan.summaries), *left.values()])  # a log left as it is keeps its facts
    kept = sum(u.chars_before for u in plan.unchanged)  # ... and its size
    empty = [s.path for s in plan.summaries if len(s.content.strip().splitlines()) <= 3]
    return {
        "set": folder.name,
        "summarizer": plan.summarizer,
        "logs": len(logs),
        "summaries": len(plan.summaries),
        "unchanged": len(left),
        "empty_summaries": empty,
        **score(facts, text, plan.chars_before + kept, plan.chars_after + kept),
        "promoted": len(plan.promotions),
        "ceiling": round(ceiling(folder, facts, plan.chars_before + kept, text), 3),
        "text": text,
    }


def ceiling(folder: Path, facts: Sequence[Fact], chars_before: int, summaries: str) -> float:
    """The share of facts a picker that knows the labels could keep with the summariser's own sentences and clauses
    (a clause with those it leans on) at TARGET_RATIO of the size: the summaries' titles, "Summary of" lines and blank
    lines as they are (no People line, no topic heading), a linked date heading per log it takes a sentence from,
    and each sentence's "- " and newline; picked greedily by new facts per character. A choice of whole sentences
    does not beat it by much (greedy is not always optimal)."""
    from memsearch_lsp.core.compact.extractive import log_heading
    from memsearch_lsp.core.compact.parse import parse_log
    from memsearch_lsp.core.compact.summarize import LogText
    from memsearch_lsp.core.compact.units import UNIT_OVERHEAD, units_of

    frame = sum(
        len(line) + 1 for line in summaries.splitlines() if not line.startswith(("- ", "## [", "### ", "People"))
    )
    candidates: list[tuple[int, str, set[str]]] = []
    heading: dict[str, int] = {}
    for path in sorted((folder / "memory").glob("*.md")):
        log = LogText(f"memory/{path.name}", f"memory/archive/{path.name}", f"archive/{path.name}", path.stem, "")
        log = LogText(log.source, log.archived, log.link, log.date, path.read_text(encoding="utf-8"))
        heading[log.source] = len(log_heading(log))
        for item in parse_log(log):
            for unit in units_of(item):
                group = [unit]
                while group[-1].lean is not None:
                    group.append(group[-1].lean)
                text = " ".join(u.text for u in group)
                held = {f.id for f in facts if holds(text, f)}
                if held:
                    candidates.append((sum(len(u.text) + UNIT_OVERHEAD for u in group), log.source, held))
    room, got, logs = TARGET_RATIO * chars_before - frame, set[str](), set[str]()
    while True:
        best: tuple[float, int, str, set[str]] | None = None
        for cost, source, held in candidates:
            total = cost + (0 if source in logs else heading[source])
            if held - got and total <= room and (best is None or len(held - got) / total > best[0]):
                best = (len(held - got) / total, total, source, held)
        if best is None:
            return len(got) / len(facts) if facts else 1.0
        room, got = room - best[1], got | best[3]
        logs.add(best[2])


def paragraphs(text: str) -> str:
    """`text` with each paragraph or list item on one line (a fact wrapped over two lines of a log is one fact)."""
    out: list[str] = []
    for line in text.splitlines():
        if out and out[-1].strip() and line.strip() and not _OPENS.match(line):
            out[-1] = f"{out[-1].rstrip()} {line.strip()}"
        else:
            out.append(line)
    return "\n".join(out)


_OPENS = re.compile(r"^\s*(?:[-*+>|#]|\d+[.)]\s|```)")  # a line that starts a block of its own


def main(args: argparse.Namespace | list[str] | None = None) -> int:
    if not isinstance(args, argparse.Namespace):
        parser = argparse.ArgumentParser(prog="python -m bench.compaction", description=__doc__.split("\n")[0])
        parser.add_argument("--set", action="append", metavar="DIR", help="a set folder (default: every set)")
        parser.add_argument("--summarizer", default="extractive", choices=["extractive", "openai"])
        parser.add_argument("--base-url", help="openai: the chat-completions endpoint")
        parser.add_argument("--model", help="openai: the model name")
        parser.add_argument("--show", action="store_true", help="print the summaries too")
        args = parser.parse_args(args)
    sets = [Path(s) for s in (getattr(args, "set", None) or SETS)]
    compact: dict[str, Any] = {}
    if getattr(args, "summarizer", "extractive") == "openai":
        compact = {"summarizer": "openai", "base_url": args.base_url, "model": args.model}
    rows = []
    for folder in sets:
        row = run_set(folder, **compact)
        text = row.pop("text")
        if getattr(args, "show", False):
            print(text)
        emit("compaction", row)
        rows.append(
            dict(
                row,
                kept=f"{row['kept']}/{row['facts']}",
                lost=", ".join(row["lost"]) or "-",
                met="yes" if row["kept_share"] >= TARGET_KEPT and row["ratio"] <= TARGET_RATIO else "no",
            )
        )
    table(
        rows,
        [*COLUMNS],
        f"Facts kept by compaction (target >= {TARGET_KEPT:.0%} at <= {TARGET_RATIO:.0%} of the characters)",
    )
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
