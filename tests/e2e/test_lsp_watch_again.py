"""(audit G) A memory folder that git deletes and brings back (`git checkout` of a branch without it and back,
`git stash -u` of an uncommitted one) stays watched: Neovim stops watching under a folder that is deleted, so the
server must ask it again when the folder comes back, or it never hears of a later write."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.uris import to_fs_path
from pytest_lsp import LanguageClient

from tests.helpers import FAST, Session, capabilities, open_session, until, uri, watches

pytestmark = pytest.mark.slow

NOTE = "# 2026-03-10\n\n## Kafka\n\nkafka chosen over rabbitmq for the event bus\n"
LATER = "\n## Okapi\n\nokapi batch runs hourly\n"
CREATED, CHANGED, DELETED = types.FileChangeType.Created, types.FileChangeType.Changed, types.FileChangeType.Deleted


class Neovim:
    """What Neovim on Linux reports of the server's registrations: each watcher filters by its pattern and kind,
    and one rooted at a folder that is deleted (or was not there when registered) stops for good."""

    def __init__(self, session: Session):
        self.session, self.dead = session, set[tuple[str, Path]]()

    def _alive(self) -> list[types.Registration]:
        gone = {u.id for u in self.session.unregistrations}
        found = []
        for registration in self.session.registrations:
            if registration.id in gone or registration.method != types.WORKSPACE_DID_CHANGE_WATCHED_FILES:
                continue
            watchers = registration.register_options["watchers"]  # type: ignore[index]
            kept = {"watchers": [w for w in watchers if (registration.id, _base(w)) not in self.dead]}
            found.append(types.Registration(id=registration.id, method=registration.method, register_options=kept))
        return found

    def bury(self, folder: Path) -> None:
        """`folder` was deleted: the watchers rooted at or under it stop."""
        for registration in self._alive():
            for watcher in registration.register_options["watchers"]:  # type: ignore[index]
                if _base(watcher) == folder or folder in _base(watcher).parents:
                    self.dead.add((registration.id, _base(watcher)))

    def report(self, ws: Path, events: list[tuple[str, types.FileChangeType]]) -> list[str]:
        """Send the events a live watcher matches; the paths sent."""
        kind = {CREATED: 1, CHANGED: 2, DELETED: 4}
        sent = [
            (path, change) for path, change in events if any(watches(r, ws / path, kind[change]) for r in self._alive())
        ]
        if sent:
            changes = [types.FileEvent(uri=uri(ws / path), type=change) for path, change in sent]
            self.session.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=changes))
        return [path for path, _ in sent]


def _base(watcher: dict[str, dict[str, str]]) -> Path:
    return Path(to_fs_path(watcher["globPattern"]["baseUri"]) or "")


async def _found(session: Session, query: str, name: str) -> bool:
    return name in [s.name for s in await session.symbols(query)]


@pytest.mark.clients("neovim@v0.11.0")  # (its plugin's capabilities: dynamic registration, RelativePatterns)
@pytest.mark.parametrize(
    ("memory", "config", "only_config"),
    [
        ("memory", "", False),  # git checkout of a branch with neither memory/ nor .memsearch.toml, and back
        ("memory", "", True),  # the same, with a client that reports `.memsearch.toml` and never the folder itself
        ("notes/log", '[memory]\npaths = ["notes/log"]\n', False),  # git stash -u of an uncommitted notes/ and pop
    ],
)
async def test_a_memory_folder_deleted_and_restored_is_watched_again(
    lsp: LanguageClient, tmp_path: Path, memory: str, config: str, only_config: bool
) -> None:
    """The note leaves search with its folder and comes back with it, and a later write to it is reported and
    indexed: before, the client's watch of the folder died with it and the server never asked again (only
    `.memsearch.toml` was reported, its settings unchanged), so nothing written there was indexed again."""
    ws, away = tmp_path / "ws", tmp_path / "away"
    (ws / memory).mkdir(parents=True)
    (ws / memory / "2026-03-10.md").write_text(NOTE)
    (ws / ".memsearch.toml").write_text(config or "# memsearch\n")
    away.mkdir()
    caps = capabilities(lsp.profile, dynamic_watch=True)  # type: ignore[attr-defined]
    session = await open_session(lsp, ws, FAST, caps=caps)
    nvim = Neovim(session)
    await until(lambda: _found(session, "kafka event bus", "Kafka"), "the note indexed")
    top, note = memory.split("/")[0], f"{memory}/2026-03-10.md"
    folders = ["/".join(memory.split("/")[: n + 1]) for n in range(memory.count("/") + 1)]  # notes, notes/log
    toml = [] if config else [".memsearch.toml"]  # (a stash keeps the committed settings; a checkout takes them)
    moved = [top, *toml]
    taken = [(note, DELETED), *[(f, DELETED) for f in reversed(folders)], *[(t, DELETED) for t in toml]]
    brought = [*[(f, CREATED) for f in folders], (note, CREATED), *[(t, CHANGED) for t in toml]]  # (Neovim's type)
    if only_config:
        taken = [e for e in taken if e[0] not in folders]
        brought = [e for e in brought if e[0] in toml]

    for name in moved:
        shutil.move(ws / name, away / name)
    nvim.report(ws, taken)
    nvim.bury(ws / top)
    await until(lambda: _not_found(session), "the deleted note out of search")

    nvim.bury(ws / top)  # (a watcher asked for while it was not there never starts)
    for name in moved:
        shutil.move(away / name, ws / name)
    nvim.report(ws, brought)
    await until(lambda: _found(session, "kafka event bus", "Kafka"), "the note back in search", 20)

    with (ws / note).open("a") as log:
        log.write(LATER)
    assert nvim.report(ws, [(note, CHANGED)]), "the client no longer watches the memory folder"
    await until(lambda: _found(session, "okapi batch hourly", "Okapi"), "a later write indexed", 20)


async def _not_found(session: Session) -> bool:
    return not await _found(session, "kafka event bus", "Kafka")
