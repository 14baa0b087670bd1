"""The user's own memory beside every workspace's: a memory workspace in the user's data folder
(`$XDG_DATA_HOME/memsearch-lsp`, its notes in `memory/`), private to the user, opened like any other (one
owner, `open_memory`); searches merge its hits with the workspace's by a score both indexes share.

Fused scores rank the hits of one search and mean nothing across two (each is rescaled over its own
candidates), so the two lists are merged by `Hit.score` (core/search/rank.py `relevance`: the dense
cosine and the query's term coverage, both absolute), each list keeping its own order.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memsearch_lsp.config import Config, load_config
from memsearch_lsp.core import clock
from memsearch_lsp.core.api import MemoryApi, check_scope
from memsearch_lsp.core.files import private_folder
from memsearch_lsp.core.search.filters import check_source, named_day, on_day
from memsearch_lsp.core.search.hybrid import AmbiguousId, Expanded, Hit
from memsearch_lsp.core.store import StoreError

if TYPE_CHECKING:
    from memsearch_lsp.core.process.door import Door

APP = "memsearch-lsp"
FOLDER = "memory"
T = TypeVar("T")
log = logging.getLogger(__name__)
QUIET_S = 60.0  # how long a user memory that did not answer is not asked again beside the workspace's
# user-memory root -> until when (time.monotonic) it is not asked beside the workspace's: a long-lived process (MCP,
# LSP) does not wait for it again at every call, and warns once
_UNANSWERED: dict[Path, float] = {}


def user_root() -> Path:
    """`$XDG_DATA_HOME/memsearch-lsp` (default `~/.local/share/memsearch-lsp`): the user memory's workspace."""
    base = os.environ.get("XDG_DATA_HOME", "").strip()
    data = Path(base) if base and Path(base).is_absolute() else Path.home() / ".local" / "share"
    return data / APP


def is_user_root(folder: Path) -> bool:
    """`folder` is the user memory's own workspace (a search there must not count its notes twice)."""
    try:
        return folder.resolve() == user_root().resolve()
    except OSError:
        return False


def user_memory_exists() -> bool:
    return (user_root() / FOLDER).is_dir()


def make_user_root() -> Path:
    """The user memory's folders, created private (0700) when missing; files.UnsafeFolder for a link or a
    folder of another user."""
    root = user_root()
    root.parent.mkdir(parents=True, exist_ok=True)
    private_folder(root)
    private_folder(root / FOLDER)
    return root


def user_config(base: Config | None = None) -> Config:
    """The user memory's settings: the user's own (no workspace file), its notes in `memory/`."""
    config = base or load_config(user_root())
    return config.merged({"memory": {"paths": [FOLDER], "exclude": []}})


def open_user_memory(*, create: bool = False, **settings: Any) -> MemoryApi | None:
    """The user memory (its owner's client, or owned here); None when it does not exist and `create` is False."""
    from memsearch_lsp.core.process.door import open_memory

    if not create and not user_memory_exists():
        return None
    root = make_user_root()
    return open_memory(root, config=user_config(), scope="user", **settings)


def user_door(process: str, **settings: Any) -> Door:
    """The door to the user memory for a long-lived process (own its index or follow its owner; made when missing):
    what it answers (hits, chunks, notes) says it is the user's."""
    from memsearch_lsp.core.process.door import Door

    return Door(make_user_root(), config=user_config(), process=process, scope="user", **settings)


ID_CHARS = 16  # a whole chunk id: never ambiguous (of a chunk in both memories, the workspace's is meant)


def looks_beyond(root: Path, chunk_id: str) -> bool:
    """Whether an id the workspace at `root` found must be looked for in the user memory too: a prefix, which a chunk
    of each may start (not the user memory's own workspace: its chunks are the same ones)."""
    return len(chunk_id.strip()) < ID_CHARS and not is_user_root(root)


UNCHECKED = "the id prefix {!r} is taken as this workspace's chunk without looking there"


def user_beside(
    open_mine: Callable[[], MemoryApi | None], chunk_id: str, here: bool
) -> tuple[MemoryApi | None, Expanded | None]:
    """(the user memory (`open_mine()`, open), None) for an id the workspace's memory has no chunk of (its failure
    raised); (None, its chunk of `chunk_id`) for an id prefix the workspace's memory also has one of (`here`): None
    where the user memory has none, or does not answer (`beside`: the workspace's is taken, with one warning)."""
    if not here:
        return open_mine(), None

    def ask() -> Expanded | None:
        mine = open_mine()
        if mine is None:
            return None
        with mine:
            return mine.expand(chunk_id)

    return None, beside(ask, True, UNCHECKED.format(chunk_id))


def one_memory(chunk_id: str, here: Expanded | None, mine: Expanded | None) -> None:
    """AmbiguousId when the id prefix `chunk_id` found a chunk in the workspace's memory (`here`) and one in the user
    memory (`mine`): which one was meant, neither says (`forget` would take out the wrong note); like a prefix of
    several chunks of one memory, the message names them and asks for more of the id (`looks_beyond`: when to ask)."""
    if here is not None and mine is not None:
        raise AmbiguousId(
            f"the id prefix {chunk_id.strip().lower()!r} matches a chunk of this workspace's memory ({here.id}, "
            f"{here.source}:{here.start_line}) and one of your user memory ({mine.id}, user:{mine.source}:"
            f"{mine.start_line}): give more of the id (the whole id of a chunk in both is this workspace's)"
        )


def scoped(hits: Sequence[Hit], scope: str) -> list[Hit]:
    return [replace(h, scope=scope) for h in hits]


def merge(lists: Sequence[Sequence[T]], top_k: int, relevance: Callable[[T], Any] | None = None) -> list[T]:
    """The best `top_k` of several searches' hits, each list in its own order: the most relevant of the lists'
    heads next (`relevance(hit)`, default `Hit.score`: the relevance; `by_day` for a query that names a day)."""
    key = relevance or (lambda hit: hit.score)  # type: ignore[attr-defined]
    heads = [list(hits) for hits in lists if hits]
    out: list[T] = []
    while heads and len(out) < top_k:
        best = max(range(len(heads)), key=lambda n: (key(heads[n][0]), -n))
        out.append(heads[best].pop(0))
        heads = [h for h in heads if h]
    return out


def by_day(query: str, today: dt.date) -> Callable[[Hit], tuple[bool, float]]:
    """How `merge` orders several memories' hits of `query`: the notes of the day it names first (each memory gives
    them first, without the floor: filters.day_first), then by relevance."""
    day = named_day(query, today)
    return lambda hit: (day is not None and on_day(hit.source, day), hit.score)


def search_scopes(
    workspace: MemoryApi | None,
    user: Callable[[], MemoryApi | None],
    query: str,
    top_k: int | None,
    scope: str = "all",
    **overrides: Any,
) -> list[Hit]:
    """Hits for `query` from the workspace's memory, the user's (`user()` opens it when wanted; None when there
    is none) or both, each tagged with its scope; `top_k` of both merged (`merge`). A user memory searched beside
    the workspace's (scope "all") that does not answer is left out with one warning; the workspace's own failures,
    and the user memory's when it is the one asked for, are raised."""
    check_scope(scope)
    if workspace is not None and overrides.get("source"):  # a path in the workspace: the glob both memories read
        globs = overrides["source"]
        overrides["source"] = [check_source(g, workspace.root) for g in ([globs] if isinstance(globs, str) else globs)]
    if workspace is not None and is_user_root(workspace.root):  # the user memory itself: its notes once
        return scoped(workspace.search(query, top_k, **overrides), "user")
    lists = []
    if workspace is not None and scope in ("workspace", "all"):
        lists.append(scoped(workspace.search(query, top_k, **overrides), "workspace"))
    if scope in ("user", "all"):
        lists.extend(_user_hits(user, query, top_k, overrides, besides=bool(lists)))
    if len(lists) == 1:
        return lists[0]
    limit = top_k if top_k is not None else (workspace.config.search.top_k if workspace else 3)
    return merge(lists, limit, by_day(query, (workspace.clock() if workspace else clock.now()).date()))


def _user_hits(
    user: Callable[[], MemoryApi | None], query: str, top_k: int | None, overrides: dict[str, Any], besides: bool
) -> list[list[Hit]]:
    """[the user memory's hits] ([] when it has none); searched `besides` the workspace's, a user memory that does
    not answer gives [] (`beside`): the workspace's hits still come."""

    def ask() -> list[list[Hit]]:
        mine = user()
        if mine is None:
            return []
        mine.index()
        return [scoped(mine.search(query, top_k, **overrides), "user")]

    return beside(ask, besides, "these hits are the workspace's alone") or []


def beside(ask: Callable[[], T], besides: bool, instead: str) -> T | None:
    """`ask()` of the user memory; asked `besides` the workspace's answer, a user memory that does not answer (its
    owner stopped or stuck, its index busy or broken, its folder unreadable) gives None and one warning (saying what
    is done `instead`), and for QUIET_S is not asked again (None at once); alone, its failure is raised."""
    from memsearch_lsp.core.process.protocol import OwnerGone

    root = user_root()
    if besides and _UNANSWERED.get(root, 0.0) > time.monotonic():
        return None
    try:
        return ask()
    except (StoreError, OwnerGone, OSError) as exc:
        if not besides:
            raise
        _UNANSWERED[root] = time.monotonic() + QUIET_S
        log.warning("the user memory did not answer, %s: %s", instead, exc)
        return None
