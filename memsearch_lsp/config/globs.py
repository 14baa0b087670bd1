"""Gitignore-style globs (pathspec), as a source filter, `memory.exclude` and the archive folder use them: one reading
for all, so a pattern that settings or a filter took never fails where it is matched."""

from __future__ import annotations

import re
import warnings
from functools import lru_cache

import pathspec

MAX_GLOB = 512  # characters of one pattern
MAX_STARS = 2  # `*` in one part of a pattern: each more multiplies the worst-case matching time by a name's length


def check_glob(glob: str, what: str = "pattern") -> pathspec.GitIgnoreSpec:
    """The pattern read; ValueError naming it (as `what`) when it is too long, when its matching could take unbounded
    time (its regular expression backtracks: `*a*a*a*a*b` took seconds a file name), or when it is no gitignore-style
    glob (`a\\`, `!`, a range written backwards as `[z-a]`)."""
    if len(glob) > MAX_GLOB:
        raise ValueError(f"the {what} {glob[:40]!r}... is longer than {MAX_GLOB} characters")
    for part in glob.split("/"):
        stars = part.count("*") if part != "**" else 0
        if stars > MAX_STARS:
            raise ValueError(
                f"the {what} {glob!r} has {stars} `*` in {part!r}: use at most {MAX_STARS} in each part (between "
                "slashes), e.g. 'memory/2026-02-*' or '**/*decision*.md'"
            )
    try:
        with warnings.catch_warnings():  # "[[:alpha:]]": re's FutureWarning on a nested set is no news for the user
            warnings.simplefilter("ignore", FutureWarning)
            return pathspec.GitIgnoreSpec.from_lines([glob])
    except re.error as exc:  # (pathspec lets the regular expression's own error through: `[z-a]`, `[9-0]`)
        hint = ": write a range from the lower character to the higher, as [a-z] or [0-9]" if "range" in exc.msg else ""
        raise ValueError(f"the {what} {glob!r} is not a valid glob ({exc.msg}){hint}") from None
    except ValueError:
        raise ValueError(
            f"the {what} {glob!r} is not a valid gitignore-style glob: a `\\` must escape a character "
            "(write `\\\\` for a backslash) and a `!` needs a pattern after it"
        ) from None


@lru_cache(maxsize=256)
def _spec(pattern: str) -> pathspec.GitIgnoreSpec:
    return check_glob(pattern)


def glob_match(pattern: str, source: str) -> bool:
    """Gitignore rules (pathspec): `**` spans folders, a pattern naming a folder covers what is inside,
    a pattern with a slash is anchored at the workspace root, one without matches at any depth."""
    return bool(_spec(pattern.strip()).match_file(source))
