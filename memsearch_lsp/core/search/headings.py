"""How a chunk's heading is shown, the same wherever the chunk is sent (a search hit, expand, remember, recent,
symbols, outlines, the hooks' context): a bare `## HH:MM` named by the note's first line."""

from __future__ import annotations

import re

from memsearch_lsp.core.chunks import body_of
from memsearch_lsp.core.search.screen import shorten

TIME_HEADING = re.compile(r"^(\d{1,2}:\d{2})(?:\s+\((\d+)\))?$")
_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\([^()\s]*\)")  # an inline link (not an image)
_MARKUP = re.compile(r"^\s*(?:[-*+>]|\d+[.)])\s+|\*\*|__|`+")
TITLE_CHARS = 60
# The most headings the empty workspace/symbol query lists (a root's; the newest daily logs first): editors choke on
# larger symbol lists (README, "Language server").
HEADINGS_LIMIT = 5000


def display_heading(heading: str, content: str) -> str:
    """How a heading is shown (search results, expand, remember, recent, symbols, outlines, the hooks' context): a
    note under a bare `## HH:MM` heading (what `remember` writes without --heading; `## HH:MM (2)` for a second note
    of the minute) is named by its first line, the time beside it: "Chose Kafka for the event bus (10:40)"; a link as
    its text ("[2026-02-05](archive/2026-02-05.md)", a summary's day, is "2026-02-05"); every other heading as it is."""
    heading = _LINK.sub(r"\1", heading)
    timed = TIME_HEADING.match(heading.strip())
    if not timed:
        return heading
    body = body_of(content)
    first = next((line for line in content.split("\n")[1:] if line.strip()), "") if body else ""
    topic = " ".join(_MARKUP.sub("", first).split())
    if not topic:
        return heading
    return f"{shorten(topic, TITLE_CHARS)} ({timed[1]})"
