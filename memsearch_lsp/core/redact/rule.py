"""A redaction rule: a kind of secret, the pattern that finds it, the part replaced and what is left alone."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Redaction:
    """A span of the text that was (or would be) replaced, and its kind."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class Rule:
    """A kind of secret: `pattern`'s group `group` (or the first of several named groups that matched) is replaced;
    `keep(match)` True leaves a match alone."""

    kind: str
    pattern: re.Pattern[str]
    group: int | tuple[str, ...] = 0
    keep: Callable[[re.Match[str]], bool] | None = None
    nested: tuple[str, ...] = ()  # groups that may hold settings of their own when the match is left alone

    def span(self, match: re.Match[str]) -> tuple[int, int]:
        if isinstance(self.group, int):
            return match.span(self.group)
        groups = [g for g in self.group if g in match.re.groupindex]
        return match.span(next((g for g in groups if match[g] is not None), groups[-1]))


def token(prefix: str, body: str, minimum: int, end: bool = False) -> re.Pattern[str]:
    """`prefix` then `minimum` or more of `body` (`end`: and no other character of a token after them), not inside
    a longer token."""
    return re.compile(rf"(?<![A-Za-z0-9_-]){prefix}(?P<body>{body}{{{minimum},}}){'(?![A-Za-z0-9_-])' if end else ''}")
