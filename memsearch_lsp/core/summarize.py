"""Summarisers for compaction: `extractive` (offline, embedding de-duplication) and `openai` (chat completions)."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from memsearch_lsp.config import CompactConfig, ConfigError
from memsearch_lsp.core.chunks import normalize_newlines
from memsearch_lsp.core.embed import Embedder

log = logging.getLogger(__name__)

DEFAULT_PROMPT = Path(__file__).resolve().parent.parent / "prompts" / "compact.md"
CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 200  # characters of instructions around the logs in each request
MIN_PIECE_CHARS = 200
MAX_REDUCE_ROUNDS = 8

Note = Callable[[str], None]


class CompactError(ValueError):
    """Compaction cannot go ahead (a bad file, a conflict, a failed write); the memory is unchanged."""


class SummarizerError(CompactError):
    """The summariser failed (endpoint unreachable, errors after the retries, an empty answer)."""


@dataclass(frozen=True)
class LogText:
    """One daily log to summarise, with where its archived copy will be."""

    source: str  # memory/2026-02-09.md
    archived: str  # memory/archive/2026-02-09.md
    link: str  # the archived copy relative to the summary file: archive/2026-02-09.md
    date: str  # 2026-02-09
    text: str

    def ref(self, line: int) -> str:
        """A Markdown provenance link to one line of the archived original."""
        return f"[{self.date}#L{line}]({self.link}#L{line})"


class Summarizer(Protocol):
    name: str

    def summarize(self, label: str, logs: Sequence[LogText], note: Note | None = None) -> str:
        """Markdown body: `## topic` sections of bullets ending in provenance links."""
        ...


def create_summarizer(config: CompactConfig, root: Path, embedder: Callable[[], Embedder]) -> Summarizer:
    """The configured summariser; `embedder` is called only when one is needed."""
    if config.summarizer == "openai":
        return OpenAISummarizer(config, root)
    if config.summarizer == "extractive":
        return ExtractiveSummarizer(embedder, config.similarity_threshold)
    raise ConfigError(f"compact.summarizer: expected 'extractive' or 'openai', got {config.summarizer!r}")


# -- extractive ---------------------------------------------------------------------------------
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


# -- openai -------------------------------------------------------------------------------------
def load_prompt(config: CompactConfig, root: Path) -> str:
    """The system prompt: `compact.prompt_file` (relative to the workspace) or the packaged default."""
    if not config.prompt_file:
        return DEFAULT_PROMPT.read_text(encoding="utf-8")
    path = Path(config.prompt_file).expanduser()
    path = path if path.is_absolute() else root / path
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"compact.prompt_file: cannot read {path}: {exc}") from exc
    if not text.strip():
        raise ConfigError(f"compact.prompt_file: {path} is empty")
    return text


def _numbered(log_text: LogText) -> list[str]:
    header = (f"### {log_text.source} ({log_text.date}; cite line n as "
              f"[{log_text.date}#L<n>]({log_text.link}#L<n>))")
    lines = normalize_newlines(log_text.text).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [header] + [f"L{n}: {line}" for n, line in enumerate(lines, 1)]


def pack(blocks: Sequence[list[str]], budget: int) -> list[str]:
    """Join blocks of lines into pieces of at most `budget` characters, splitting blocks when they must.

    A split block repeats its first line (its header) on each piece; a line longer than a piece
    is cut into slices.
    """
    pieces: list[str] = []
    current = ""
    for block in blocks:
        text = "\n".join(block)
        if current and len(current) + 2 + len(text) <= budget:
            current += "\n\n" + text
            continue
        if current:
            pieces.append(current)
            current = ""
        if len(text) <= budget:
            current = text
            continue
        header, rest = block[0], block[1:]
        part = header
        for line in rest:
            while len(header) + 1 + len(line) > budget:  # a huge line: slice it
                room = max(budget - len(header) - 1, 1)
                if part != header:
                    pieces.append(part)
                pieces.append(f"{header}\n{line[:room]}")
                part, line = header, line[room:]
            if len(part) + 1 + len(line) > budget:
                pieces.append(part)
                part = header
            part += "\n" + line
        current = part
    if current:
        pieces.append(current)
    return pieces


_ERROR_PREFIX = re.compile(r"^Error code: \d+ - ")
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}


class OpenAISummarizer:
    """Any OpenAI-compatible chat-completions endpoint; map-reduce when a group exceeds the budget."""

    name = "openai"

    def __init__(self, config: CompactConfig, root: Path):
        self.config = config
        self.prompt = load_prompt(config, root)
        self._client: Any = None
        self.calls = 0

    @property
    def budget(self) -> int:
        """Characters of logs that fit one request beside the prompt."""
        return self.config.max_input_tokens * CHARS_PER_TOKEN - len(self.prompt) - MESSAGE_OVERHEAD

    def client(self) -> Any:
        if self._client is None:
            from openai import OpenAI

            key = os.environ.get(self.config.api_key_env, "") if self.config.api_key_env else ""
            if not key:
                host = urlsplit(self.config.base_url).hostname or ""
                level = logging.DEBUG if host in _LOCAL_HOSTS else logging.WARNING
                log.log(level, "environment variable %s is not set; calling %s without an API key",
                        self.config.api_key_env or "(compact.api_key_env)", self.config.base_url)
            self._client = OpenAI(base_url=self.config.base_url, api_key=key or "no-key",
                                  timeout=self.config.timeout_s, max_retries=self.config.max_retries)
        return self._client

    def summarize(self, label: str, logs: Sequence[LogText], note: Note | None = None) -> str:
        budget = self.budget
        if budget < MIN_PIECE_CHARS:
            raise ConfigError(
                f"compact.max_input_tokens = {self.config.max_input_tokens} leaves no room for the logs: the "
                f"prompt alone is ~{len(self.prompt) // CHARS_PER_TOKEN} tokens")
        pieces = pack([_numbered(x) for x in logs], budget)
        partials = []
        for n, piece in enumerate(pieces, 1):
            if note and len(pieces) > 1:
                note(f"{label}: summarising part {n}/{len(pieces)}")
            partials.append(self.chat(f"Summarise these daily logs from {label}.\n\n{piece}"))
        rounds = 0
        while len(partials) > 1:
            batches = pack([p.split("\n") for p in partials], budget)
            rounds += 1
            if len(batches) >= len(partials) or rounds > MAX_REDUCE_ROUNDS:
                raise SummarizerError(
                    f"the partial summaries of {label} do not fit compact.max_input_tokens = "
                    f"{self.config.max_input_tokens}; raise it")
            if note:
                note(f"{label}: merging {len(partials)} partial summaries")
            partials = [self.chat(f"Merge these partial summaries of {label} into one.\n\n{batch}")
                        for batch in batches]
        return clean_markdown(partials[0]) if partials else ""

    def chat(self, user: str) -> str:
        """One chat completion; errors become a SummarizerError that names the endpoint."""
        import openai

        where = self.config.base_url
        attempts = self.config.max_retries + 1
        self.calls += 1
        try:
            response = self.client().chat.completions.create(
                model=self.config.model,
                messages=[{"role": "system", "content": self.prompt}, {"role": "user", "content": user}])
        except openai.APITimeoutError as exc:
            raise SummarizerError(f"summariser endpoint {where} timed out after {self.config.timeout_s:g}s "
                                  f"({attempts} attempts); raise compact.timeout_s or check the server") from exc
        except openai.APIConnectionError as exc:
            raise SummarizerError(f"cannot reach summariser endpoint {where} ({attempts} attempts): "
                                  f"{exc}") from exc
        except openai.APIStatusError as exc:
            hint = {401: f"; check the API key in the environment variable {self.config.api_key_env}",
                    403: f"; check the API key in the environment variable {self.config.api_key_env}",
                    404: f"; check compact.base_url and compact.model ({self.config.model!r})"}
            raise SummarizerError(f"summariser endpoint {where} answered HTTP {exc.status_code} "
                                  f"({attempts} attempts): {_short(_ERROR_PREFIX.sub('', exc.message))}"
                                  f"{hint.get(exc.status_code, '')}") from exc
        except openai.OpenAIError as exc:
            raise SummarizerError(f"summariser endpoint {where} failed: {_short(str(exc))}") from exc
        choices = getattr(response, "choices", None) or []
        content = choices[0].message.content if choices and choices[0].message else None
        if not content or not content.strip():
            raise SummarizerError(f"summariser endpoint {where} returned an empty summary "
                                  f"(model {self.config.model!r})")
        return str(content)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def clean_markdown(text: str) -> str:
    """Unwrap a fenced answer, demote `# ` titles to topics, drop a model-written Sources section."""
    text = normalize_newlines(text).strip()
    fenced = re.fullmatch(r"```[\w-]*\n(.*?)\n```", text, re.S)
    if fenced:
        text = fenced.group(1).strip()
    lines = text.split("\n")
    in_fence = False
    out: list[str] = []
    for line in lines:
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and re.match(r"^#\s", line):
            line = "#" + line
        out.append(line)
    text = "\n".join(out)
    text = re.split(r"(?m)^##\s+Sources\s*$", text)[0].rstrip()
    return text + "\n" if text else ""
