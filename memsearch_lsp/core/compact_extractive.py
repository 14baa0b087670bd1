"""The `extractive` summariser: offline; keeps headings, bullets and dates, drops exact and near duplicates."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memsearch_lsp.core.chunks import normalize_newlines
from memsearch_lsp.core.embed import Embedder
from memsearch_lsp.core.summarize import LogText, Note

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_BULLET = re.compile(r"^([ \t]*)(?:[-*+]|\d{1,9}[.)])[ \t]+(.*)$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
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
    also: list[str] = field(default_factory=list)  # provenance of the duplicates it stands for

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


def _fence_end(lines: list[str], start: int, marker: str) -> int:
    char, size = marker[0], len(marker)
    for j in range(start + 1, len(lines)):
        m = _FENCE.match(lines[j])
        if m and m.group(1)[0] == char and len(m.group(1)) >= size and not lines[j].strip()[len(m.group(1)):].strip():
            return j
    return len(lines) - 1


def parse_log(log_text: LogText) -> list[_Item]:
    """Headings become topics; bullets, paragraphs, code blocks and tables become items."""
    lines = normalize_newlines(log_text.text).split("\n")
    items: list[_Item] = []
    path: list[tuple[int, str]] = []
    anchor = 0
    current: _Item | None = None
    i = 0
    if lines and lines[0].strip() in ("---", "+++"):  # front matter is metadata, not memory
        closing = next((j for j in range(1, len(lines)) if lines[j].strip() in ("---", "+++", "...")), None)
        i = closing + 1 if closing is not None else 0

    def add(kind: str, text: str, depth: int, line: int) -> _Item:
        item = _Item(_topic(path, log_text.date), kind, text, depth, line, log_text, anchor or line)
        items.append(item)
        return item

    while i < len(lines):
        line, stripped = lines[i], lines[i].strip()
        fence, heading = _FENCE.match(line), _ATX.match(line)
        if fence:
            end = _fence_end(lines, i, fence.group(1))
            add("block", "\n".join(lines[i:end + 1]), 0, i + 1)
            current, i = None, end + 1
            continue
        setext = (stripped and current is None and i + 1 < len(lines) and _SETEXT.match(lines[i + 1])
                  and not _BULLET.match(line) and not _TABLE.match(line))
        if heading or setext:
            level = len(heading.group(1)) if heading else (1 if lines[i + 1].strip()[0] == "=" else 2)
            title = (heading.group(2) or "") if heading else stripped
            path = [(lvl, t) for lvl, t in path if lvl < level] + [(level, title.strip())]
            anchor = i + 1 if _topic(path, log_text.date) != "Notes" else 0
            current, i = None, i + (1 if heading else 2)
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


def _render(items: Sequence[_Item]) -> str:
    """`## topic` sections; each day's run of items opens with a dated link to its section."""
    topics: dict[str, list[_Item]] = {}
    for item in items:
        topics.setdefault(item.topic, []).append(item)
    out: list[str] = []
    for topic, members in topics.items():
        out.append(f"## {topic}\n\n")
        previous: LogText | None = None
        for item in members:
            if item.log is not previous:
                if previous is not None:
                    out.append("\n")
                out.append(f"From {item.log.ref(item.anchor)}:\n")
                previous = item.log
            also = f" (also {', '.join(item.also)})" if item.also else ""
            if item.kind == "block":
                out.append(f"\n{item.text}\n{also.strip()}\n\n")
            else:
                out.append(f"{'  ' * item.depth}- {item.text}{also}\n")
        out.append("\n")
    return re.sub(r"\n{3,}", "\n\n", "".join(out)).strip() + "\n"


class ExtractiveSummarizer:
    """Offline: keeps headings, decisions, bullets and dates; drops exact and near-duplicate lines.

    A line is a near-duplicate when its embedding is within `threshold` (cosine) of an earlier
    kept line and it names no number, version, name or code that the kept line lacks.
    """

    name = "extractive"

    def __init__(self, embedder: Callable[[], Embedder], threshold: float):
        self._embedder, self.threshold = embedder, threshold

    def summarize(self, label: str, logs: Sequence[LogText], note: Note | None = None) -> str:
        items = [item for log_text in logs for item in parse_log(log_text)]
        return _render(self.dedupe(items))

    def dedupe(self, items: list[_Item]) -> list[_Item]:
        kept: list[_Item] = []
        by_key: dict[str, _Item] = {}
        for item in items:
            twin = by_key.get(item.key)
            if twin is not None and item.key:
                twin.also.append(item.log.ref(item.line))
                continue
            by_key[item.key] = item
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
            for m in range(n):
                if m not in dropped and similar[n, m] and item.names <= lines[m].names:
                    lines[m].also.append(item.log.ref(item.line))
                    dropped.add(n)
                    break
        gone = {id(lines[n]) for n in dropped}
        return [i for i in kept if id(i) not in gone]
