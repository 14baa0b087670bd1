"""The real server over stdio indexes a large new workspace in a child process (core/process/bulk.py), and so
does a forced re-index the CLI asks of it: the server itself never loads the Milvus Lite engine (nor pyarrow or
faiss) and answers from the saved state; an edit afterwards is indexed in the server as before."""

from __future__ import annotations

import json
from pathlib import Path

from lsprotocol import types

from tests.helpers import lsp_session, make_workspace, run_cli, server_pid

NOTE = "# Notes\n\n## Standing meeting\n\n" + "The weekly sync covers the roadmap, hiring and on-call handover.\n" * 16


def _maps(pid: int) -> str:
    return Path(f"/proc/{pid}/maps").read_text()


async def test_a_large_new_workspace_is_indexed_in_a_child_and_searched_by_the_server(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    notes = ws / "memory" / "notes"
    notes.mkdir()
    for i in range(300):  # ~300 KB of text (one embedding: equal texts are embedded once)
        (notes / f"note-{i:03}.md").write_text(NOTE)
    async with lsp_session(ws) as session:
        first = await session.wait_indexed(1, timeout=120)
        assert first["files"] >= 313 and first["chunks"] >= 344 and first["embedded"] >= 45
        symbols = await session.symbols("Redis cache config")
        assert symbols and symbols[0].name == "Redis Caching"
        loaded = _maps(server_pid(session))
        assert "milvus_lite" not in loaded and "libarrow" not in loaded, "the server never opened the engine"
        forced = json.loads(run_cli("index", "--force", "--json", workspace=ws, check=True).stdout)  # via the server
        assert forced["files_modified"] >= 313 and forced["chunks_total"] == first["chunks"]
        loaded = _maps(server_pid(session))
        assert "milvus_lite" not in loaded, "a forced re-index asked through the server ran in a child as well"
        log = ws / "memory" / "2026-02-06.md"
        log.write_text(log.read_text() + "\n## Wombats\n\nThe wombat burrow survey starts on Monday.\n")
        session.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=log.as_uri(), type=types.FileChangeType.Changed)]
            )
        )
        found = await session.until_symbol("wombat burrow survey", "Wombats", timeout=60)
        assert found.location.uri.endswith("2026-02-06.md")  # type: ignore[union-attr]
