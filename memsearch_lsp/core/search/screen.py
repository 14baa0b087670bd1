"""Text cut to a terminal's columns: a wide character (CJK, most emoji) takes two, and a cut never splits what a
reader sees as one character (an accent from its letter, a flag's two halves, a joined emoji)."""

from __future__ import annotations

import unicodedata

_JOINER = "\u200d"


def _width(char: str) -> int:
    if unicodedata.combining(char) or char == _JOINER or "\ufe00" <= char <= "\ufe0f" or _modifier(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def _modifier(char: str) -> bool:
    """A skin tone or a tag: it changes the emoji before it, shown in that one's columns."""
    return "\U0001f3fb" <= char <= "\U0001f3ff" or "\U000e0020" <= char <= "\U000e007f"


def _flag_half(char: str) -> bool:
    return "\U0001f1e6" <= char <= "\U0001f1ff"


def _joins(before: str, char: str) -> bool:
    """`char` belongs to the character shown before it: a mark (a Hindi vowel sign too), a joiner or what follows one,
    a skin tone, a tag."""
    return _width(char) == 0 or before == _JOINER or unicodedata.category(char) in ("Mn", "Mc", "Me")


def boundary(text: str, at: int) -> int:
    """The first place at or after `at` where a shown character starts (not inside a flag or a joined emoji)."""
    if text.isascii():
        return at
    while 0 < at < len(text):
        run = at
        while run and _flag_half(text[run - 1]):
            run -= 1
        if not _joins(text[at - 1], text[at]) and not (_flag_half(text[at]) and (at - run) % 2):
            break
        at += 1
    return at


def columns(text: str) -> int:
    """The columns `text` takes on a terminal."""
    if text.isascii():
        return len(text)
    return sum(0 if n and text[n - 1] == _JOINER else _width(c) for n, c in enumerate(text))


def fit(text: str, width: int) -> str:
    """The longest start of `text` that takes at most `width` columns and ends between two shown characters."""
    if text.isascii():
        return text[: max(width, 0)]
    used, cut, flags = 0, 0, 0
    for n, char in enumerate(text):
        flags = flags + 1 if _flag_half(char) else 0
        if n and not _joins(text[n - 1], char) and not (_flag_half(char) and flags % 2 == 0):
            cut = n  # a boundary: everything before it may be shown
        used += 0 if n and text[n - 1] == _JOINER else _width(char)  # (a joined emoji shows as one)
        if used > width:
            return text[:cut]
    return text


_CLAUSE = "，、；：。"  # where a Chinese or Japanese clause ends (their text has no spaces between words)


def shorten(text: str, width: int) -> str:
    """`text` cut after its last whole word (or clause) in `width` columns, "…" after it."""
    if columns(text) <= width:
        return text
    cut = fit(text, width)
    clause = max(cut.rfind(mark) for mark in _CLAUSE)
    if " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    elif clause >= len(cut) // 2:
        cut = cut[:clause]
    return cut.rstrip(",.;:") + "…"
