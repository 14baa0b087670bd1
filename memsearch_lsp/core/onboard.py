"""What makes a folder a memory workspace, starting one (`init`), and the supported platforms."""

from __future__ import annotations

import datetime as dt
import json
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from memsearch_lsp.config import CONFIG_FILE, SECTIONS, Config, load_config
from memsearch_lsp.core.files import PathError, inside

INDEX_GITIGNORE = ".memsearch/"
INIT_HINT = "run `memsearch-lsp init`"
NO_MEMORY = f"no memory here: {INIT_HINT}"

MEMORY_TEMPLATE = """\
# Memory

Long-term facts, decisions and preferences worth keeping. People and agents both edit this file;
daily notes go to `YYYY-MM-DD.md` beside it. `memsearch-lsp search "..."` finds any section by
meaning or by keyword.

## About this project

- What it is, who works on it, where things live.

## Decisions

- YYYY-MM-DD: what was decided, and why.

## Preferences

- How things should be done here.
"""

_SECTION_NOTES = {
    "memory": "folders (relative to this file) that hold the memory Markdown",
    "embedding": "the embedding model (bundled, offline); changing it re-embeds everything",
    "milvus": "empty uri: Milvus Lite in .memsearch/; set it for Milvus standalone or Zilliz Cloud",
    "search": "hybrid search: dense and BM25 weights, results per query",
    "watch": "how soon edits are re-indexed (milliseconds)",
    "compact": "compaction of old daily logs into summaries",
    "lsp": "editor behaviour",
}


class NoMemoryHere(Exception):
    """The folder has neither a memory folder nor a `.memsearch.toml`."""

    def __init__(self, root: Path, config: Config | None = None):
        folders = " or ".join(f"{p}/" for p in (config or Config()).memory.paths)
        super().__init__(f"{NO_MEMORY} ({root} has no {folders or 'memory folder'} and no {CONFIG_FILE})")
        self.root = root


# -- platforms ---------------------------------------------------------------------------------
SUPPORTED_PLATFORMS = ("linux", "darwin")
WINDOWS_MESSAGE = ("memsearch-lsp runs on Linux and macOS; Windows is not supported (the index is shared "
                   "through Unix sockets and POSIX file locks). Use WSL, and run the editor's server inside it.")


def platform_problem(platform: str | None = None) -> str | None:
    """None on a supported platform, else the one message to stop with."""
    name = platform or sys.platform
    if name.startswith("win") or name == "cygwin":
        return WINDOWS_MESSAGE
    return None


# -- memory workspaces -------------------------------------------------------------------------
def memory_markers(config: Config) -> list[str]:
    """What marks a memory workspace: its memory folders (`memory.paths`) and `.memsearch.toml`."""
    return [*config.memory.paths, CONFIG_FILE]


def is_memory_workspace(root: Path, config: Config | None = None) -> bool:
    """True when `root` has `.memsearch.toml` or one of the configured memory folders."""
    if (root / CONFIG_FILE).is_file():
        return True
    cfg = config or load_config(root)
    return any((root / path).is_dir() for path in cfg.memory.paths)


def require_memory_workspace(root: Path, config: Config | None = None) -> None:
    """Raise NoMemoryHere (nothing is written) unless `root` is a memory workspace."""
    cfg = config or load_config(root)
    if not is_memory_workspace(root, cfg):
        raise NoMemoryHere(root, cfg)


# -- init --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class InitResult:
    """What `init` did, as workspace-relative POSIX paths."""

    root: Path
    created: tuple[str, ...]
    updated: tuple[str, ...]
    existing: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"root": str(self.root), "created": list(self.created), "updated": list(self.updated),
                "existing": list(self.existing)}

    def describe(self) -> str:
        lines = [f"created {p}" for p in self.created] + [f"updated {p}" for p in self.updated]
        lines += [f"kept    {p} (exists)" for p in self.existing]
        lines.append(f"memory workspace ready in {self.root}; try: memsearch-lsp search \"decisions\"")
        return "\n".join(lines)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def config_template() -> str:
    """A `.memsearch.toml` with every setting commented out at its default."""
    lines = ["# memsearch-lsp settings for this workspace. Every line is commented out at its default:",
             "# uncomment what you change. Precedence: defaults < this file < MEMSEARCH_* environment",
             "# variables < editor settings. A tracked .memsearch.toml also marks a memory workspace."]
    for name, cls in SECTIONS.items():
        lines += ["", f"# {_SECTION_NOTES.get(name, name)}", f"# [{name}]"]
        defaults = cls()
        lines += [f"# {f.name} = {_toml_value(getattr(defaults, f.name))}" for f in fields(cls)]
    return "\n".join(lines) + "\n"


def _has_index_ignore(text: str) -> bool:
    entries = {line.strip().lstrip("/").rstrip("/") for line in text.splitlines()}
    return ".memsearch" in entries or ".memsearch/*" in entries


def init_workspace(root: Path, today: dt.date | None = None) -> InitResult:
    """Create a memory in `root`: MEMORY.md, today's log, a commented `.memsearch.toml`, `.memsearch/`
    in `.gitignore`. Idempotent; never overwrites a file."""
    root = root.expanduser()
    root.mkdir(parents=True, exist_ok=True)
    root = root.resolve()
    created: list[str] = []
    updated: list[str] = []
    existing: list[str] = []
    config = load_config(root)  # the workspace file's settings when it exists, else the defaults it would hold
    folder = (config.memory.paths or ("memory",))[0].strip("/")
    day = (today or dt.date.today()).isoformat()
    targets = [CONFIG_FILE, f"{folder}/MEMORY.md", f"{folder}/{day}.md", ".gitignore"]
    for rel in targets:  # every path's real place is inside the workspace, checked before anything is created
        if not inside(root, root / rel):
            raise PathError(f"init: {rel} resolves to {(root / rel).resolve()}, outside the workspace {root} "
                            "(a link?); nothing was created")

    def write_new(rel: str, text: str) -> None:
        path = root / rel
        if path.exists():
            existing.append(rel)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8") as handle:  # "x": never clobber a file made meanwhile
            handle.write(text)
        created.append(rel)

    write_new(CONFIG_FILE, config_template())
    write_new(f"{folder}/MEMORY.md", MEMORY_TEMPLATE)
    write_new(f"{folder}/{day}.md", daily_log_text(day))

    ignore = root / ".gitignore"
    if not ignore.exists():
        write_new(".gitignore", f"{INDEX_GITIGNORE}\n")
    else:
        text = ignore.read_text(encoding="utf-8", errors="replace")
        if _has_index_ignore(text):
            existing.append(".gitignore")
        else:
            with ignore.open("a", encoding="utf-8") as handle:
                handle.write(("" if text.endswith("\n") or not text else "\n") + f"{INDEX_GITIGNORE}\n")
            updated.append(".gitignore")
    return InitResult(root, tuple(created), tuple(updated), tuple(existing))


def daily_log_text(day: str) -> str:
    """The first lines of a new daily log."""
    return f"# {day}\n\n"
