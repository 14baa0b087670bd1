"""How this program starts a Python process of its own: isolated from the workspace it serves."""

from __future__ import annotations

import os
import sys

#: What a process we start keeps of our environment: where the user's files and settings are, and ours.
KEPT_ENVIRONMENT = ("HOME", "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "USER", "LOGNAME", "VIRTUAL_ENV")
KEPT_PREFIXES = ("XDG_", "MEMSEARCH_")
ROOT_FOLDER = "/"  # where it runs: never a workspace, whose files must not be importable


def environment() -> dict[str, str]:
    """A minimal environment for a process we start: no PYTHONPATH, PYTHONSTARTUP or the like."""
    return {k: v for k, v in os.environ.items() if k in KEPT_ENVIRONMENT or k.startswith(KEPT_PREFIXES)}


def python(module: str, *arguments: str) -> list[str]:
    """`python -I -m MODULE ARGUMENTS`: isolated mode (neither the working folder nor PYTHONPATH nor the user's site
    folder is on its import path), this interpreter."""
    return [sys.executable, "-I", "-m", module, *arguments]
