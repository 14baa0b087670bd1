"""What the CLI writes for a person: a note's or a file name's control characters shown, never run by the terminal
(ESC [2J as ␛[2J, an OSC 52 clipboard write as text; C1 controls as U+FFFD), whether stdout is the terminal or a pipe
into one (`| head`, `| less -R`). `--json` escapes them as JSON does."""

from __future__ import annotations

import logging

from memsearch_lsp.trust import HidingFormatter

_SHOWN = {c: 0x2400 + c for c in range(32) if c not in (9, 10)} | {127: 0x2421} | dict.fromkeys(range(128, 160), 0xFFFD)


def printable(text: str) -> str:
    """`text` with its control characters (but tab and newline) as the symbols that stand for them."""
    return text.translate(_SHOWN)


class ShownFormatter(HidingFormatter):
    """Log lines on stderr with their control characters shown (a skipped file's name is the repository's), and no
    URL's password (trust.hide_credentials)."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))
