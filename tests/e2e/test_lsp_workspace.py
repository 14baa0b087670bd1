"""Server settings, multi-root workspaces and the TCP transport, end to end."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.helpers import (
    Session,
    capabilities,
    free_port,
    make_workspace,
    open_session,
    start,
    stop,
    until,
    uri,
    wait_until,
    watches,
    workspace_folder,
)

FAST = {"watch": {"debounceMs": 200}}


@pytest_asyncio.fixture
async def two_roots(lsp: LanguageClient, tmp_path: Path):
    first = make_workspace(tmp_path / "one")
    second = tmp_path / "two"
    (second / "notes").mkdir(parents=True)
    (second / "notes" / "2026-03-01.md").write_text("# 2026-03-01\n\n## Axolotl\n\naxolotl habitat notes\n")
    (second / ".memsearch.toml").write_text('[memory]\npaths = ["notes"]\n')
    return await open_session(lsp, first, FAST, wait=2, folders=[first, second]), second


@pytest.mark.clients("visual_studio_code")  # no client capability changes what it checks
async def test_each_root_has_its_own_index_and_search_spans_them(two_roots: tuple[Session, Path]) -> None:
    session, second = two_roots
    roots = {n["root"]: n for n in session.indexed}
    assert roots[str(second)]["chunks"] == 2 and roots[str(session.workspace)]["chunks"] > 30
    assert (second / ".memsearch" / "milvus.db").is_dir() and (session.workspace / ".memsearch").is_dir()
    axolotl = await session.until_symbol("axolotl habitat", "Axolotl")
    assert isinstance(axolotl.location, types.Location) and "/two/notes/" in axolotl.location.uri
    assert (await session.symbols("Redis cache config"))[0].name == "Redis Caching"


@pytest.mark.clients("visual_studio_code")  # (RelativePatterns; the plain globs are the same paths)
async def test_the_watchers_cover_what_is_indexed_and_go_with_their_folder(lsp: LanguageClient, tmp_path: Path) -> None:
    """A client filters file events by the registered globs: they must match every file the indexer reads (`.md`
    and `.markdown`, a memory path naming one file) and a deleted folder; a removed folder's watcher is
    unregistered, and one added again is registered under a new id."""
    ws, other = tmp_path / "ws", tmp_path / "other"
    for path, text in [
        ("memory/a.md", "# A\n\nalpha\n"),
        ("memory/sub/x.markdown", "# X\n"),
        ("notes/pinned.md", "# P\n"),
    ]:
        (ws / path).parent.mkdir(parents=True, exist_ok=True)
        (ws / path).write_text(text)
    (ws / ".memsearch.toml").write_text('[memory]\npaths = ["memory", "notes/pinned.md"]\n')
    (other / "memory").mkdir(parents=True)
    (other / "memory" / "b.md").write_text("# B\n\nbeta\n")
    session = await open_session(lsp, ws, FAST, wait=2, folders=[ws, other])
    mine = next(r for r in session.registrations if watches(r, ws / "memory/a.md"))
    for path in ("memory/sub/x.markdown", "memory/new.markdown", "notes/pinned.md"):
        assert watches(mine, ws / path) and watches(mine, ws / path, kind=1), path
    assert watches(mine, ws / "memory/sub", kind=4)  # a folder deleted whole
    assert not watches(mine, ws / "notes/other.md") and not watches(mine, ws / "src/x.md")

    theirs = next(r for r in session.registrations if watches(r, other / "memory/b.md"))
    change = session.client.workspace_did_change_workspace_folders
    gone = types.WorkspaceFoldersChangeEvent(added=[], removed=[workspace_folder(other)])
    change(types.DidChangeWorkspaceFoldersParams(event=gone))
    await until(
        lambda: [u.id for u in session.unregistrations] == [theirs.id], "the removed folder's watcher withdrawn"
    )
    back = types.WorkspaceFoldersChangeEvent(added=[workspace_folder(other)], removed=[])
    change(types.DidChangeWorkspaceFoldersParams(event=back))
    await until(lambda: len(session.registrations) == 3, "the folder added again watched again")
    assert len({r.id for r in session.registrations}) == 3 and watches(session.registrations[-1], other / "memory/b.md")


async def _open_with_folder_answers(
    lsp: LanguageClient, folders: list[Path], answers: dict[str, Any], options: dict[str, Any]
) -> Session:
    """Open `folders` with `options` at start-up; workspace/configuration is answered from `answers` (pytest-lsp
    answers a scopeUri by its longest prefix, "" the window's); their first index passes done."""
    session = Session(lsp, folders[0], lsp.profile)  # type: ignore[attr-defined]
    lsp._configuration = answers  # type: ignore[attr-defined]
    await lsp.initialize_session(
        types.InitializeParams(
            capabilities=capabilities(lsp.profile),  # type: ignore[attr-defined]
            root_uri=uri(folders[0]),
            workspace_folders=[workspace_folder(f) for f in folders],
            initialization_options={"memsearch": options},
        )
    )
    await session.wait_indexed(len(folders))
    return session


@pytest.mark.clients("visual_studio_code")  # (Neovim answers every folder with its one settings table)
async def test_each_folder_has_its_own_editor_settings_but_the_users_own_keys(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    """(audit Y1) VS Code's settings of a folder (its `.vscode/settings.json`) never reached the server: it asked
    workspace/configuration once, without a scopeUri, and gave every root the window's settings, so a folder whose
    memory.paths is ["notes"] was indexed at memory/ while the extension watched notes/. A folder's own value of a
    setting only the user sets (where the index goes) does not apply; a folder added later is asked for its own."""
    alpha, beta, gamma = tmp_path / "alpha", tmp_path / "beta", tmp_path / "gamma"
    for ws, other, text in [
        (alpha, "memory", "## Alpha\n\nplatypus alpha\n"),
        (beta, "notes", "## Wombat\n\nwombat burrow notes\n"),
        (gamma, "kept", "## Quokka\n\nquokka island notes\n"),
    ]:
        (ws / "memory").mkdir(parents=True)
        (ws / "memory" / "MEMORY.md").write_text(f"# M\n\n## {ws.name} topic\n\nplatypus {ws.name}\n")
        (ws / other).mkdir(exist_ok=True)
        (ws / other / "n.md").write_text(f"# N\n\n{text}")
    window = {**FAST, "milvus": {"collection": "mine"}}
    answers = {
        "": {"memsearch": window},
        uri(beta): {"memsearch": {**FAST, "memory": {"paths": ["notes"]}, "milvus": {"collection": "theirs"}}},
        uri(gamma): {"memsearch": {"memory": {"paths": ["kept"]}}},
    }
    session = await _open_with_folder_answers(lsp, [alpha, beta], answers, window)
    wombat = await session.until_symbol("wombat burrow", "Wombat")
    assert isinstance(wombat.location, types.Location) and "/beta/notes/" in wombat.location.uri
    assert "beta topic" not in [s.name for s in await session.symbols("platypus beta")]  # (beta/memory: not its)
    assert "alpha topic" in [s.name for s in await session.symbols("platypus alpha")]  # (the window's paths)
    status = await lsp.workspace_execute_command_async(types.ExecuteCommandParams(command="memsearch.status"))
    assert {Path(r["root"]).name: r["collection"] for r in status["roots"]} == {"alpha": "mine", "beta": "mine"}
    added = types.WorkspaceFoldersChangeEvent(added=[workspace_folder(gamma)], removed=[])
    lsp.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(event=added))
    quokka = await session.until_symbol("quokka island", "Quokka", timeout=60)
    assert isinstance(quokka.location, types.Location) and "/gamma/kept/" in quokka.location.uri


@pytest.mark.clients("visual_studio_code")  # (Neovim answers every folder with its one settings table)
async def test_a_nested_folders_own_settings_stay_its_own(lsp: LanguageClient, tmp_path: Path) -> None:
    """(review R1b, 1) A memory workspace open beside a folder inside it that is a memory of its own took that
    folder's settings when its own answer was empty (VS Code's with nothing set): indexed at the inner folder's
    `notes/`, it had no memory, and every search failed."""
    outer, inner = tmp_path / "ws", tmp_path / "ws" / "sub"
    for ws, text in [(outer, "## Platypus\n\nplatypus outer notes\n"), (inner, "## Okapi\n\nokapi inner notes\n")]:
        (ws / "memory").mkdir(parents=True)
        (ws / "memory" / "MEMORY.md").write_text(f"# M\n\n{text}")
    (inner / "notes").mkdir()
    (inner / "notes" / "n.md").write_text("# N\n\n## Wombat\n\nwombat inner notes\n")
    answers = {"": {"memsearch": {}}, uri(inner): {"memsearch": {**FAST, "memory": {"paths": ["notes"]}}}}
    session = await _open_with_folder_answers(lsp, [outer, inner], answers, FAST)
    platypus = await session.until_symbol("platypus outer", "Platypus")
    assert isinstance(platypus.location, types.Location) and "/ws/memory/" in platypus.location.uri
    wombat = await session.until_symbol("wombat inner", "Wombat")
    assert isinstance(wombat.location, types.Location) and "/sub/notes/" in wombat.location.uri


@pytest_asyncio.fixture
async def session(lsp: LanguageClient, tmp_path: Path):
    return await open_session(lsp, make_workspace(tmp_path), FAST)


async def search(session: Session, query: str) -> list[dict[str, Any]]:
    return list(await session.client.protocol.send_request_async("memsearch/search", {"query": query, "topK": 5}))


async def test_configuration_changes_apply(session: Session) -> None:
    before = await search(session, "message broker decision")
    settings = {"search": {"vectorWeight": 0.0, "bm25Weight": 1.0}, "watch": {"debounceMs": 200}}
    session.client._configuration["memsearch"] = settings
    session.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"memsearch": settings})
    )

    async def changed() -> Any:
        found = await search(session, "message broker decision")
        return found if found != before else None

    after = await until(changed, "the new weights to take effect", timeout=10, every=0.2)
    assert [h["score"] for h in after] != [h["score"] for h in before]
    n = len(session.indexed)
    (session.workspace / "journal").mkdir()
    (session.workspace / "journal" / "2026-03-09.md").write_text("# 2026-03-09\n\n## Quokka\n\nquokka sighting\n")
    moved = {**settings, "memory": {"paths": ["journal"]}}
    session.client._configuration["memsearch"] = moved
    session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"memsearch": moved}))
    note = await session.wait_indexed(n + 1, timeout=60)
    assert note["files"] == 1 and note["chunks"] == 2  # a new memory path re-indexes
    assert [s.name for s in await session.symbols("quokka")][:1] == ["Quokka"]


async def test_a_bad_editor_setting_is_left_out_alone_each_said_once_and_a_removed_setting_is_gone(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    """One out-of-range editor setting used to drop every setting (`.memsearch.toml`'s exclude too: the private
    note was found); a later bad one was never shown; a setting the user removed stayed until a restart."""
    ws = make_workspace(tmp_path)
    (ws / "memory" / "private").mkdir()
    (ws / "memory" / "private" / "salary.md").write_text("# Private\n\n## Salary\n\nMy salary negotiation: a raise.\n")
    (ws / ".memsearch.toml").write_text('[memory]\nexclude = ["memory/private/**"]\n')
    other, plain = make_workspace(tmp_path / "other", examples=False), tmp_path / "plain"
    plain.mkdir()  # (the editor's settings were said once per folder, a folder without memory too)
    settings = {**FAST, "search": {"snippetChars": 0, "minScore": 0}}
    session = await open_session(lsp, ws, settings, wait=2, folders=[ws, other, plain])
    assert all("private" not in h["source"] for h in await search(session, "salary negotiation raise"))
    said = [m.message for m in session.client.messages if "snippetChars" in m.message]
    assert len(said) == 1 and "editor settings: search.snippetChars: must be at least 1" in said[0], said

    async def longest() -> int:
        return max((len(h["snippet"]) for h in await search(session, "Redis cache")), default=0)

    async def short() -> bool:
        return 0 < await longest() <= 21

    async def longer() -> bool:
        return await longest() > 21

    def push(settings: dict[str, Any]) -> None:
        session.client._configuration["memsearch"] = settings
        session.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"memsearch": settings})
        )

    push({**FAST, "search": {"snippetChars": 20, "topk": 2}})
    await until(lambda: any("unknown setting 'search.topk'" in m.message for m in session.client.messages), "said")
    await until(short, "the good setting beside the bad one to apply", timeout=10, every=0.2)
    push({})  # (VS Code sends the user's values only: none left)

    await until(longer, "the removed setting to be gone (the default snippet length)", timeout=10, every=0.2)


async def test_a_milvus_password_is_never_in_a_reply_a_message_or_the_log(lsp: LanguageClient, tmp_path: Path) -> None:
    """(review N, 2) The messages and the log hid it; a request's error reply (what VS Code's output shows) did not."""
    ws = make_workspace(tmp_path)
    session = Session(lsp, ws, lsp.profile)  # type: ignore[attr-defined]
    await session.start(capabilities(lsp.profile), {"milvus": {"uri": "http://root:Secr3tPw@127.0.0.1:9"}})  # type: ignore[attr-defined]
    said: list[str] = []
    with pytest.raises(Exception) as failed:  # (the server's own error reply, as a client sees it)
        await asyncio.wait_for(lsp.protocol.send_request_async("memsearch/search", {"query": "redis"}), timeout=60)
    said.append(str(failed.value))

    async def status_error() -> str:  # (status answers, saying what keeps the index shut)
        status = await lsp.workspace_execute_command_async(types.ExecuteCommandParams(command="memsearch.status"))
        return str(status["roots"][0].get("error", ""))

    said.append(await until(status_error, "status to say what is wrong", timeout=60))
    said += [m.message for m in lsp.messages] + [m.message for m in lsp.log_messages]
    assert any("root:***@127.0.0.1:9" in text for text in said[:2]), said
    assert not [text for text in said if "Secr3t" in text]


async def start_answering(lsp: LanguageClient, ws: Path, answer: dict[str, Any]) -> None:
    """Start the server for `ws` with `search.snippetChars` 20 as start-up options, the client answering
    workspace/configuration for `memsearch` with `answer`."""
    Session(lsp, ws, lsp.profile)  # type: ignore[attr-defined]  # (the client's side: registrations answered)
    lsp._configuration = {"": {"memsearch": answer}}  # type: ignore[attr-defined]
    await lsp.initialize_session(
        types.InitializeParams(
            capabilities=capabilities(lsp.profile),  # type: ignore[attr-defined]
            root_uri=ws.as_uri(),
            workspace_folders=[workspace_folder(ws)],
            initialization_options={**FAST, "search": {"snippetChars": 20}},
        )
    )


async def test_start_up_options_survive_an_empty_answer_and_another_servers_settings(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    """(review N, 4) lsp-mode answers workspace/configuration for a section it does not hold with `{}`, and eglot
    pushes its whole configuration (`{"pylsp": ...}`): neither is a memsearch setting, so the start-up options stay;
    a push of the section itself still replaces them (a removed setting is gone)."""
    await start_answering(lsp, make_workspace(tmp_path), {})  # (what lsp-mode answers)

    async def longest() -> int:
        found = await lsp.protocol.send_request_async("memsearch/search", {"query": "Redis cache", "topK": 5})
        return max((len(h["snippet"]) for h in found), default=0)

    await until(longest, "the first index pass", timeout=60, every=0.2)
    assert await longest() <= 21
    lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"pylsp": {"x": 1}}))
    await asyncio.sleep(1)
    assert 0 < await longest() <= 21
    assert not [m.message for m in lsp.messages if "pylsp" in m.message]
    lsp.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"memsearch": {}}))

    async def longer() -> bool:
        return await longest() > 21

    await until(longer, "the pushed section (none) to replace the start-up options", timeout=10, every=0.2)


async def test_a_clients_answer_is_complete_a_start_up_option_it_lacks_is_gone(
    lsp: LanguageClient, tmp_path: Path
) -> None:
    """(review P, 7) The answer to workspace/configuration was merged over the start-up options: one the user had
    removed since came back."""
    await start_answering(lsp, make_workspace(tmp_path), {**FAST, "compact": {"olderThanDays": 9}})

    async def found() -> list[Any]:
        return list(await lsp.protocol.send_request_async("memsearch/search", {"query": "Redis cache"}))

    hits = await until(found, "the first index pass", timeout=60, every=0.2)
    assert max(len(h["snippet"]) for h in hits) > 21


def test_tcp_transport_answers_initialize(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "memsearch_lsp", "serve", "--tcp", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:

        def connected() -> socket.socket | None:
            assert proc.poll() is None, "the server exited"
            try:
                return socket.create_connection(("127.0.0.1", port), timeout=5)
            except OSError:
                return None

        conn = wait_until(connected, "the server to listen", timeout=30)
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"processId": None, "rootUri": None, "capabilities": {}},
            }
        ).encode()
        with conn:
            conn.sendall(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
            data = b""
            while b"serverInfo" not in data or not data.rstrip().endswith(b"}"):
                chunk = conn.recv(65536)
                assert chunk, "connection closed"
                data += chunk
        reply = json.loads(data.split(b"\r\n\r\n", 1)[1])
        assert reply["result"]["serverInfo"]["name"] == "memsearch-lsp"
        assert "workspaceSymbolProvider" in reply["result"]["capabilities"]
    finally:
        proc.kill()
        proc.wait(timeout=10)


async def test_workspace_symbol_finds_nothing_for_a_query_unrelated_to_the_memory(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """The shipped floor (search.min_score) with the real model, as an editor's user meets it."""
    from tests.helpers import start, stop

    monkeypatch.delenv("MEMSEARCH_SEARCH_MIN_SCORE")  # conftest turns it off for the fake embedder
    session = await start(make_workspace(tmp_path))
    try:
        await session.wait_indexed(1, timeout=120)

        async def symbols(query: str) -> list[Any]:
            found = await session.client.workspace_symbol_async(types.WorkspaceSymbolParams(query=query))
            return list(found or [])

        assert await symbols("xyzzy plugh") == []
        assert await symbols("recipe for lemon drizzle cake") == []
        related = await symbols("how long are cached values kept before they expire")
        assert related and related[0].name.startswith("Redis Caching")
    finally:
        await stop(session)


@pytest.mark.clients("visual_studio_code")  # no client capability changes what it checks
async def test_a_client_root_inside_a_workspace_serves_that_workspace(lsp: LanguageClient, tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    inner = ws / "src" / "pkg"
    inner.mkdir(parents=True)
    session = await open_session(lsp, ws, FAST, folders=[inner])
    assert session.indexed[0]["root"] == str(ws) and session.indexed[0]["chunks"] > 30
    assert not (inner / ".memsearch").exists() and (ws / ".memsearch").is_dir()
    hits = await search(session, "Redis cache config")
    assert hits[0]["heading"] == "Redis Caching"
    # filters, as the CLI's --since/--until/--source: the legs' candidates come from matching files only
    request = session.client.protocol.send_request_async
    dated = list(
        await request(
            "memsearch/search",
            {"query": "load test and rate limiting", "topK": 5, "since": "2026-02-09", "until": "2026-02-13"},
        )
    )
    assert dated and all("2026-02-09" <= h["date"] <= "2026-02-13" for h in dated)
    only = list(await request("memsearch/search", {"query": "Redis cache config", "source": ["**/MEMORY.md"]}))
    assert only and {h["source"] for h in only} == {"memory/MEMORY.md"}
    command = await session.client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="memsearch.search", arguments=["load test and rate limiting", 3, {"source": "memory/2026-02-1*"}]
        )
    )
    assert command and all(h["source"].startswith("memory/2026-02-1") for h in command)
    assert set(command[0]) >= {
        "id",
        "source",
        "heading",
        "start_line",
        "end_line",
        "score",
        "snippet",
        "date",
        "archived",
        "uri",
        "range",
    }
    session.client.workspace_did_change_workspace_folders(
        types.DidChangeWorkspaceFoldersParams(
            event=types.WorkspaceFoldersChangeEvent(added=[], removed=[workspace_folder(inner)])
        )
    )

    async def closed() -> bool:
        status = await session.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="memsearch.status")
        )
        return not status["roots"]

    await until(closed, "removing the folder to close the workspace it served", timeout=20)


async def test_a_folder_a_bad_model_setting_kept_shut_opens_once_the_setting_is_fixed(tmp_path: Path) -> None:
    """A `.memsearch.toml` naming a model folder that is not there: every request says why (-32602); once the file
    is fixed and the client says settings changed, the folder opens and is indexed (it stayed broken until the
    server restarted: the settings change itself failed on the memory that could not open)."""
    ws = make_workspace(tmp_path)
    (ws / ".memsearch.toml").write_text('[embedding]\nprovider = "onnx"\nmodel = "models/minilm"\n')
    session = await start(ws)
    try:
        with pytest.raises(Exception, match="is not a folder"):
            await session.symbols("Redis cache config")
        (ws / ".memsearch.toml").write_text("")
        session.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={}))

        async def opened() -> bool:
            try:
                return any(s.name == "Redis Caching" for s in await session.symbols("Redis cache config"))
            except Exception:  # (the new settings are taken in the background)
                return False

        await until(opened, "the folder to open with the fixed settings", timeout=120, every=0.5)
        assert not [m.message for m in session.client.messages if "Error in server" in m.message]
    finally:
        await stop(session)
