"""What makes a folder a memory workspace, starting one (`init`), and the supported platforms."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from memsearch_lsp.config import CONFIG_FILE, SECTIONS, USER_ONLY_KEYS, Config, load_config
from memsearch_lsp.core import clock
from memsearch_lsp.core.files import SUFFIXES, PathError, inside

log = logging.getLogger(__name__)
INDEX_GITIGNORE = ".memsearch/"
INIT_HINT = "run `memsearch-lsp init`"
NO_MEMORY = f"no memory here: {INIT_HINT}"

# The sections `remember --long-term` fills; no placeholder text (it would answer searches: issue 38).
MEMORY_TEMPLATE = """\
# Memory

## About this project

## Decisions

## Preferences
"""

_SECTION_NOTES = {
    "memory": "folders (relative to this file) that hold the memory Markdown",
    "embedding": "the embedding model (bundled, offline); changing it re-embeds everything",
    "milvus": "the index: Milvus Lite in .memsearch/ (a server uri is a user setting)",
    "search": "hybrid search: dense and BM25 weights, results per query",
    "watch": "how soon edits are re-indexed (milliseconds)",
    "compact": "compaction of old daily logs into summaries",
    "lsp": "editor behaviour",
    "warm": "`memsearch-lsp warm` (the Claude Code hooks keep the index open between prompts): seconds idle",
}


class NoMemoryHere(Exception):
    """The folder has neither a memory folder nor a `.memsearch.toml`."""

    def __init__(self, root: Path, config: Config | None = None, searched: bool = False):
        paths = (config or Config()).memory.paths
        folders = " or ".join(p if p.lower().endswith((*SUFFIXES, "/")) else f"{p}/" for p in paths)
        where = f"{root} and its parent folders have" if searched else f"{root} has"
        super().__init__(f"{NO_MEMORY} ({where} no {folders or 'memory folder'} and no {CONFIG_FILE})")
        self.root = root


# -- platforms ---------------------------------------------------------------------------------
SUPPORTED_PLATFORMS = ("linux", "darwin")
WINDOWS_MESSAGE = (
    "memsearch-lsp runs on Linux and macOS; Windows is not supported (the index is shared "
    "through Unix sockets and POSIX file locks). Use WSL, and run the editor's server inside it."
)


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


def _ceilings() -> set[Path]:
    """Where the search for a workspace stops (never looked at): the home folder and the filesystem root."""
    stops = {Path(Path.cwd().anchor or "/").resolve()}
    try:
        stops.add(Path.home().resolve())
    except (RuntimeError, KeyError, OSError):  # no home folder known
        pass
    return stops


def find_workspace(start: Path) -> Path | None:
    """The memory workspace holding `start`, found as git finds a repository: `start` itself, then each
    parent folder, up to but not including the home folder or the filesystem root; None when there is none."""
    start = start.expanduser().resolve()
    if _workspace_here(start):  # a command run in the home folder itself looks there
        return start
    return enclosing_workspace(start)


def _workspace_here(folder: Path) -> bool:
    """`folder` is a memory workspace of this user (found, never named: another user's is said and passed over)."""
    try:
        if not is_memory_workspace(folder):
            return False
        foreign = foreign_marker(folder)
    except (OSError, ValueError):  # an unreadable folder or a broken settings file on the way up
        return False
    if foreign is not None:
        log.warning("%s belongs to another user: not used as your memory (name it with --workspace to use it)", foreign)
    return foreign is None


def foreign_marker(folder: Path) -> Path | None:
    """A marker of the workspace `folder` (its `.memsearch.toml`, a memory folder) that another user owns, else None:
    one found by looking upwards (a `memory/` planted in /tmp or a shared folder) would read and receive your notes."""
    uid = os.geteuid()

    def foreign(marker: Path) -> bool:  # (a link counts as its own owner's and as its target's: either may be other)
        if not marker.is_symlink():
            return marker.exists() and marker.stat().st_uid != uid
        return marker.lstat().st_uid != uid or (marker.exists() and marker.stat().st_uid != uid)

    settings = folder / CONFIG_FILE
    if foreign(settings):  # (before it is read for the memory folders it names)
        return settings
    return next((folder / p for p in load_config(folder).memory.paths if foreign(folder / p)), None)


def workspace_for(start: Path) -> Path:
    """The memory workspace holding `start` (see find_workspace); NoMemoryHere when there is none, or the error of a
    bad setting in the environment or the user's file that kept it from being found (named, not "no memory")."""
    found = find_workspace(start)
    if found is None:
        root = start.expanduser().resolve()
        config = load_config(root)  # (ConfigError naming the setting)
        raise NoMemoryHere(root, config, searched=True)  # (naming the memory folders the settings name)
    return found


class NotAProject(ValueError):
    """`init` was asked for the file system's root: every folder below would take it for its memory."""


class NestedWorkspace(Exception):
    """`init` was asked for a folder inside another memory workspace (or inside its memory folder)."""


def enclosing_workspace(root: Path) -> Path | None:
    """The memory workspace above `root` (not `root` itself) that a command run in `root` would find: the
    nearest parent that is one, below the home folder and the filesystem root."""
    stops = _ceilings()
    for folder in root.expanduser().resolve().parents:
        if folder in stops:
            return None
        if _workspace_here(folder):
            return folder
    return None


# -- init --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class InitResult:
    """What `init` did, as workspace-relative POSIX paths."""

    root: Path
    created: tuple[str, ...]
    updated: tuple[str, ...]
    existing: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "created": list(self.created),
            "updated": list(self.updated),
            "existing": list(self.existing),
        }

    def describe(self) -> str:
        lines = [f"created {p}" for p in self.created] + [f"updated {p}" for p in self.updated]
        lines += [f"kept    {p} (exists)" for p in self.existing]
        lines.append(f"memory workspace ready in {self.root}; {FIRST_STEPS}")
        return "\n".join(lines)


#: What `init` suggests: a note, then a search that finds it (a new memory's headings alone are never a hit).
FIRST_STEPS = (
    'try: memsearch-lsp remember "Set up memsearch-lsp for this project", then memsearch-lsp search "memsearch setup"'
)


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
    lines = [
        "# memsearch-lsp settings for this workspace. Every line is commented out at its default:",
        "# uncomment what you change. Precedence: defaults < your user config file < this file < MEMSEARCH_*",
        "# environment variables < editor settings. A tracked .memsearch.toml also marks a memory workspace.",
        "# Where data, secrets or files go (milvus.uri, milvus.token, compact.base_url, ...) is set only",
        "# in your user config file, MEMSEARCH_* variables or editor settings: this file cannot.",
    ]
    for name, cls in SECTIONS.items():
        lines += ["", f"# {_SECTION_NOTES.get(name, name)}", f"# [{name}]"]
        defaults = cls()
        lines += [
            f"# {f.name} = {_toml_value(getattr(defaults, f.name))}"
            for f in fields(cls)
            if f"{name}.{f.name}" not in USER_ONLY_KEYS
        ]
    return "\n".join(lines) + "\n"


def _has_index_ignore(text: str) -> bool:
    """The `.gitignore` of the workspace's root keeps the index out of git, read by git's rules (pathspec's): the last
    line that matches decides (a `!` one un-ignores), leading spaces belong to the pattern, `/` and `**/` anchor."""
    import pathspec

    spec = pathspec.GitIgnoreSpec.from_lines(text.splitlines())
    return all(spec.match_file(path) for path in (f"{INDEX_GITIGNORE}milvus.db/", f"{INDEX_GITIGNORE}index.txt"))


def init_workspace(root: Path, today: dt.date | None = None) -> InitResult:
    """Create a memory in `root`: MEMORY.md, today's log, a commented `.memsearch.toml`, `.memsearch/`
    in `.gitignore`. Idempotent; never overwrites a file."""
    root = root.expanduser().resolve()
    if root == Path(root.anchor):  # "/" (or a drive): every project below would take it for theirs
        raise NotAProject(f"{root} is the file system's root, not a project folder")
    outer = enclosing_workspace(root)
    if outer is not None and not is_memory_workspace(root):
        folders = [(outer / p).resolve() for p in load_config(outer).memory.paths]
        where = (
            "is the memory folder"
            if root in folders
            else "is inside the memory folder"
            if any(f in root.parents for f in folders)
            else "is inside the memory workspace"
        )
        raise NestedWorkspace(
            f"{root} {where} of {outer}: commands run in a subfolder use that workspace "
            f"already (or: memsearch-lsp init {outer})"
        )
    root.mkdir(parents=True, exist_ok=True)
    created: list[str] = []
    updated: list[str] = []
    existing: list[str] = []
    config = load_config(root)  # the workspace file's settings when it exists, else the defaults it would hold
    folder = (config.memory.paths or ("memory",))[0].strip("/")
    day = (today or clock.now().date()).isoformat()  # (MEMSEARCH_NOW, as remember reads it)
    targets = [CONFIG_FILE, f"{folder}/MEMORY.md", f"{folder}/{day}.md", ".gitignore"]
    for rel in targets:  # every path's real place is inside the workspace, checked before anything is created
        if not inside(root, root / rel):
            raise PathError(
                f"init: {rel} resolves to {(root / rel).resolve()}, outside the workspace {root} "
                "(a link?); nothing was created"
            )
        blocked = next((p for p in (root / rel).parents if p != root and root in p.parents and p.is_file()), None)
        if blocked is not None:
            raise PathError(
                f"init: {blocked} is a file, not a folder; move it away and init again (nothing was created)"
            )

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
