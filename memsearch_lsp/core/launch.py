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


# run MODULE as `-m` does, once the working folder ('' under -c) is off the import path
_RUN_MODULE = (
    "import sys; sys.path[:] = [p for p in sys.path if p]; del sys.argv[0]; import runpy; "
    "runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)"
)


def python(module: str, *arguments: str) -> list[str]:
    """`python -E -m MODULE ARGUMENTS` without the working folder on its import path, this interpreter: no PYTHON*
    variable read (and environment() keeps none), no workspace module importable. Not `-I`: it leaves out the user's
    site-packages too, where `pip install --user` puts this package (the process then cannot find it); not `-P`
    (Python 3.11+)."""
    return [sys.executable, "-E", "-c", _RUN_MODULE, module, *arguments]
