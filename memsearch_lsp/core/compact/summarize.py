"""Summariser interface for compaction, and the `openai` one (any chat-completions endpoint, map-reduce)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from memsearch_lsp.config import CompactConfig, Config, ConfigError
from memsearch_lsp.core.chunks import normalize_newlines
from memsearch_lsp.core.endpoint import Endpoint

log = logging.getLogger(__name__)

DEFAULT_PROMPT = Path(__file__).resolve().parents[2] / "prompts" / "compact.md"
CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 200  # characters of instructions around the logs in each request
MIN_PIECE_CHARS = 200
MAX_REDUCE_ROUNDS = 8
TARGET_RATIO = 0.40  # a summary is at most this share of the characters of the logs it replaces
MIN_BUDGET = 250  # characters of summary body any group gets, whatever the ratio: a small log keeps its facts
LOG_FLOOR = 120  # and this many more for each further log of the group (its section's heading and a line)
KEEP_SHARE = 0.70  # a summary this share of its logs or more gains nothing: the logs are left as they are

Note = Callable[[str], None]
Restore = Callable[[str, Sequence["LogText"]], str]  # (a model's summary, its logs) -> the summary made whole


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

    def ref_log(self) -> str:
        """A link to the archived original, named by the date: the one provenance link of the log's section in a
        summary."""
        return f"[{self.date}]({self.link})"


class Summarizer(Protocol):
    name: str

    def summarize(
        self, label: str, logs: Sequence[LogText], note: Note | None = None, budget: int | None = None
    ) -> str:
        """Markdown body: `## topic` sections of bullets with provenance, within `budget` characters."""
        ...


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
    header = f"### {log_text.source} ({log_text.date}; cite line n as [{log_text.date}#L<n>]({log_text.link}#L<n>))"
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


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


class OpenAISummarizer:
    """Any OpenAI-compatible chat-completions endpoint; map-reduce when a group exceeds the budget."""

    name = "openai"

    def __init__(self, config: CompactConfig, root: Path, restore: Restore | None = None):
        self.config = config
        self.prompt = load_prompt(config, root)
        self.endpoint = Endpoint(
            "summariser", "compact", config.base_url, config.api_key_env, config.timeout_s, config.max_retries
        )
        self.calls = 0
        self.restore = restore  # puts back, word for word, the labelled lines the model's answer dropped

    @property
    def budget(self) -> int:
        """Characters of logs that fit one request beside the prompt."""
        return self.config.max_input_tokens * CHARS_PER_TOKEN - len(self.prompt) - MESSAGE_OVERHEAD

    def client(self) -> Any:
        return self.endpoint.client()

    def summarize(
        self, label: str, logs: Sequence[LogText], note: Note | None = None, budget: int | None = None
    ) -> str:
        """Map-reduce under the request budget; `budget` (characters of summary) is the target given to the model."""
        target = budget
        budget = self.budget
        if budget < MIN_PIECE_CHARS:
            raise ConfigError(
                f"compact.max_input_tokens = {self.config.max_input_tokens} leaves no room for the logs: the "
                f"prompt alone is ~{len(self.prompt) // CHARS_PER_TOKEN} tokens"
            )
        pieces = pack([_numbered(x) for x in logs], budget)
        total = sum(len(p) for p in pieces) or 1
        partials = []
        for n, piece in enumerate(pieces, 1):
            if note and len(pieces) > 1:
                note(f"{label}: summarising part {n}/{len(pieces)}")
            share = None if target is None else max(1, target * len(piece) // total)
            partials.append(self.chat(f"Summarise these daily logs from {label}{_length(share)}.\n\n{piece}"))
        rounds = 0
        while len(partials) > 1:
            batches = pack([p.split("\n") for p in partials], budget)
            rounds += 1
            if len(batches) >= len(partials) or rounds > MAX_REDUCE_ROUNDS:
                raise SummarizerError(
                    f"the partial summaries of {label} do not fit compact.max_input_tokens = "
                    f"{self.config.max_input_tokens}; raise it"
                )
            if note:
                note(f"{label}: merging {len(partials)} partial summaries")
            partials = [
                self.chat(f"Merge these partial summaries of {label} into one{_length(target)}.\n\n{batch}")
                for batch in batches
            ]
        answer = clean_markdown(partials[0]) if partials else ""
        return self.restore(answer, logs) if self.restore else answer

    def chat(self, user: str) -> str:
        """One chat completion; errors become a SummarizerError that names the endpoint."""
        where = self.config.base_url
        self.calls += 1
        with self.endpoint.failures(SummarizerError, self.config.model):
            response = self.client().chat.completions.create(
                model=self.config.model,
                messages=[{"role": "system", "content": self.prompt}, {"role": "user", "content": user}],
            )
        choices = getattr(response, "choices", None) or []
        content = choices[0].message.content if choices and choices[0].message else None
        if not content or not content.strip():
            raise SummarizerError(
                f"summariser endpoint {where} returned an empty summary (model {self.config.model!r})"
            )
        return str(content)


def _length(target: int | None) -> str:
    """The length target the model is asked to meet (the prompt says why), as the end of a request's first sentence."""
    return "" if target is None else f" in at most {max(target, 0)} characters, links included"


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


TURN_PROMPT = (
    "Rewrite this exchange between a user and a coding agent as a short note for the project's "
    "long-term memory, in Markdown bullets: what was asked, what was decided or done and why, and every "
    "fact worth keeping (names, versions, numbers and settings, dates, root causes and fixes, the user's "
    "stated preferences). Leave out chatter and dead ends. Answer with the note only.\n\n"
)


def summarized(config: Config, root: Path, text: str) -> str:
    """`text` (a captured turn) rewritten as a note by the configured summariser endpoint (`compact.summarizer
    = "openai"`, a user setting); `text` itself when none is configured or the endpoint fails (logged)."""
    if config.compact.summarizer != "openai":
        return text
    try:
        return OpenAISummarizer(config.compact, root).chat(TURN_PROMPT + text).strip() or text
    except SummarizerError as exc:
        log.warning("keeping the text as it is: %s", exc)
        return text
