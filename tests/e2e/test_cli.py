"""The CLI as agents use it, in a subprocess, with the real bundled model."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import helpers
from tests.helpers import make_workspace

pytestmark = pytest.mark.model


def cli(ws: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """The shared runner, asserting success unless told not to."""
    return helpers.cli(ws, *args, check=check)


def as_json(result: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example memory, indexed once for the module: tests may run in any order or alone."""
    root = make_workspace(tmp_path_factory.mktemp("cli"))
    cli(root, "index")
    return root


def test_index_json_fields_and_idempotence(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    first = as_json(cli(ws, "index", "--json"))
    for key in (
        "files_added",
        "files_modified",
        "files_removed",
        "chunks_total",
        "chunks_embedded",
        "chunks_reused",
        "seconds",
    ):
        assert key in first
    assert first["files_added"] == 13 and first["chunks_embedded"] == first["chunks_total"]
    again = as_json(cli(ws, "index", "--json"))
    assert again["chunks_embedded"] == 0 and again["files_modified"] == 0


def test_search_json_ranks_redis_first(ws: Path) -> None:
    hits = as_json(cli(ws, "search", "Redis cache config", "--json"))["hits"]
    assert len(hits) == 3
    top = hits[0]
    assert set(top) >= {"id", "source", "heading", "start_line", "end_line", "score", "rank_score", "snippet"}
    assert all(0 <= h["score"] <= 1 for h in hits) and [h["rank_score"] for h in hits] == sorted(
        (h["rank_score"] for h in hits), reverse=True
    )
    assert (top["heading"], top["source"]) == ("Redis Caching", "memory/MEMORY.md")
    lines = (ws / "memory/MEMORY.md").read_text().split("\n")
    assert lines[top["start_line"] - 1] == "## Redis Caching" and "5min TTL" in lines[top["start_line"] + 1]
    assert len(top["snippet"]) <= 200


def test_postgres_16_ranks_above_15(ws: Path) -> None:
    hits = as_json(cli(ws, "search", "PostgreSQL 16", "-k", "10", "--json"))["hits"]
    order = [h["source"] for h in hits]
    assert order.index("memory/MEMORY.md") < order.index("memory/2026-02-04.md")


def test_search_is_fresh_and_weights_apply(ws: Path) -> None:
    note = ws / "memory/2026-03-04.md"
    note.write_text("# 2026-03-04\n\n## Capybara\n\nCapybara cluster ready.\n")
    try:
        hits = as_json(cli(ws, "search", "capybara cluster", "--json", "-k", "1", "--vector-weight", "0.2"))["hits"]
        assert hits[0]["source"] == "memory/2026-03-04.md"
    finally:
        note.unlink()


def test_expand_status_and_text_output(ws: Path) -> None:
    hit = as_json(cli(ws, "search", "Kafka over RabbitMQ", "--json", "-k", "1"))["hits"][0]
    chunk = as_json(cli(ws, "expand", hit["id"], "--json"))
    assert chunk["content"].startswith("## Decision: Kafka over RabbitMQ")
    assert "we chose Kafka over RabbitMQ" in cli(ws, "expand", hit["id"]).stdout
    status = as_json(cli(ws, "status", "--json"))
    assert status["chunks"] >= 40 and status["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    text = cli(ws, "search", "Redis cache config").stdout
    assert "Redis Caching" in text
    assert all(0 <= float(score) <= 1 for score in re.findall(r"score=(\d+\.\d+)", text))  # the relevance


@pytest.mark.parametrize(
    "args",
    [
        ["expand", "0000000000000000"],
        ["search", "x", "-k", "0"],
        ["search", "x", "--vector-weight", "3"],
        ["search", "  "],  # (it printed nothing and exited 0)
        ["reset"],
        ["frobnicate"],
    ],
)
def test_user_errors_exit_1_with_one_line(ws: Path, args: list[str]) -> None:
    result = cli(ws, *args, check=False)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_filter_that_matches_no_note_is_named_in_the_answer(ws: Path) -> None:
    """It said "no results relevant enough (`--min-score 0` lists the closest anyway)", and that listed nothing."""
    for args in (["--source", "memroy/*"], ["--since", "2099-01-01"]):
        result = cli(ws, "search", "redis", *args)
        assert result.stdout.startswith(f"no results with {args[0]} {args[1]!r} (no note matches them"), result.stdout


def test_the_first_steps_init_suggests_find_something_and_the_floor_hint_is_given_only_when_true(
    tmp_path: Path,
) -> None:
    """`init` suggested `search "decisions"`, which a new memory (empty headings) never answers, and said "`--min-score
    0` lists the closest anyway", which then listed nothing."""
    ws, floor = tmp_path / "new", {}  # (env {}: the product's floor, not the tests' 0)
    said = helpers.run_cli("init", str(ws), cwd=tmp_path, env=floor).stdout
    steps = re.search(r'try: memsearch-lsp remember "([^"]+)", then memsearch-lsp search "([^"]+)"', said)
    assert steps, said
    empty = helpers.cli(ws, "search", "decisions", env=floor).stdout
    assert empty.strip() == "no results", empty  # nothing hidden by the floor: no hint that lists nothing
    helpers.cli(ws, "remember", steps[1], env=floor)
    hits = as_json(helpers.cli(ws, "search", steps[2], "--json", env=floor))["hits"]
    assert [h["snippet"] for h in hits] == [steps[1]], hits
    unrelated = helpers.cli(ws, "search", "recipe for lemon drizzle cake", env=floor).stdout
    assert "`--min-score 0` lists the closest anyway" in unrelated, unrelated  # (something is below the floor)
    assert as_json(helpers.cli(ws, "search", "recipe for lemon drizzle cake", "--min-score", "0", "--json"))["hits"]


def test_min_score_0_lists_what_the_floor_hides_after_what_it_shows(tmp_path: Path) -> None:
    """A note most relevant to the query but last in the fused ranking (German words, English query) was the one hit
    by default, and `--min-score 0 -k 3` ("shows what it hides") left it out for three unrelated ones."""
    ws = make_workspace(tmp_path)
    (ws / "memory" / "2026-02-20.md").write_text(
        "# 2026-02-20\n\n## 11:30 Speicherleck im Bilddienst\nDer Thumbnail-Dienst verlor pro Stunde etwa 300 MB "
        "Speicher. Ursache: geöffnete Bilder wurden nie\ngeschlossen (`open` ohne `with`). Lösung: Kontextmanager; "
        "seitdem stabil bei 250 MB.\n\n## 15:50\nRetro: fewer meetings on Thursdays; Thursday mornings are quiet.\n"
    )
    query, floor = "thumbnail service memory leak cause", {}  # (env {}: the product's floor, not the tests' 0)
    shown = [h["id"] for h in as_json(helpers.cli(ws, "search", query, "-k", "3", "--json", env=floor))["hits"]]
    every = as_json(helpers.cli(ws, "search", query, "-k", "3", "--min-score", "0", "--json", env=floor))["hits"]
    assert shown and [h["id"] for h in every][: len(shown)] == shown and len(every) == 3


def test_bad_config_is_a_user_error(tmp_path: Path) -> None:
    (tmp_path / ".memsearch.toml").write_text("[search]\ntop_k = 'lots'\n")
    result = cli(tmp_path, "status", check=False)
    assert result.returncode == 1 and "search.top_k" in result.stderr


def test_a_urls_password_is_never_shown_in_an_error_or_a_log_line(tmp_path: Path) -> None:
    """`milvus.uri` / `embedding.base_url` with a password (`http://root:secret@host`): the errors said it as set."""
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "MEMORY.md").write_text("# Notes\n\n## Redis\n\nWe use Redis.\n")
    for env in (
        {"MEMSEARCH_MILVUS_URI": "http://root:Secr3tPassw0rd@127.0.0.1:9"},
        {
            "MEMSEARCH_EMBEDDING_PROVIDER": "openai",
            "MEMSEARCH_EMBEDDING_BASE_URL": "http://bob:Secr3tPassw0rd@127.0.0.1:9/v1",
            "MEMSEARCH_EMBEDDING_MAX_RETRIES": "0",
            "OPENAI_API_KEY": "sk-test",
        },
    ):
        for args in (("--json", "index"), ("-v", "index"), ("doctor",), ("--json", "doctor")):
            result = helpers.run_cli(*args, workspace=tmp_path, env=env, timeout=120)
            assert result.returncode == 1 and "127.0.0.1:9" in result.stdout + result.stderr, (args, result)
            assert "Secr3t" not in result.stdout + result.stderr and ":***@127.0.0.1:9" in result.stdout + result.stderr


def test_a_typo_in_memory_paths_is_said_and_never_empties_the_index(tmp_path: Path) -> None:
    """`paths = ["memroy"]` read as "every file is gone": `index` removed all 13 files (exit 0), `doctor` said "no
    problems found", and fixing the typo embedded everything again."""
    ws = make_workspace(tmp_path)
    cli(ws, "index")
    (ws / ".memsearch.toml").write_text('[memory]\npaths = ["memroy"]\n')
    for command in ("index", "search"):
        result = cli(ws, command, *(["redis"] if command == "search" else []), check=False)
        assert result.returncode == 1 and "none of memroy is in" in result.stderr, result.stderr
    doctor = as_json(cli(ws, "doctor", "--json", check=False))
    assert not doctor["ok"] and "memroy" in str(doctor)
    (ws / ".memsearch.toml").write_text("")
    again = as_json(cli(ws, "index", "--json"))
    assert (again["files_removed"], again["chunks_embedded"], again["files_added"]) == (0, 0, 0)


def test_a_deleted_memory_folder_takes_its_notes_out_of_the_index(tmp_path: Path) -> None:
    """`rm -rf memory` (or a branch without it): the notes indexed from it leave search, said once, not an error;
    had they come from elsewhere (the setting changed), it would be the typo above."""
    ws = make_workspace(tmp_path)
    (ws / ".memsearch.toml").write_text('[memory]\npaths = ["memory"]\n')
    cli(ws, "index")
    shutil.rmtree(ws / "memory")
    result = cli(ws, "index", "--json", check=False)
    assert result.returncode == 0 and as_json(result)["files_removed"] == 13, result.stderr
    assert "memory: deleted" in result.stderr and "typo" not in result.stderr
    assert as_json(cli(ws, "search", "redis", "--json", "--min-score", "0"))["hits"] == []


def test_text_output_to_a_terminal_shows_a_notes_escape_codes_and_never_runs_them(tmp_path: Path) -> None:
    """A cloned repository's note holding `ESC[2J` or an OSC title sequence reached the user's terminal as it was,
    also through a pipe (`| head`); JSON stays as the note has it."""
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    hostile = "ctrlword \x1b[2J clear \x1b]0;pwned\x07 title \x9b31m"
    (ws / "memory/MEMORY.md").write_text(f"# Hostile\n\n## Trap\n\n{hostile}\n")
    cli(ws, "index", check=True)
    argv = [sys.executable, "-m", "memsearch_lsp", "search", "ctrlword", "--min-score", "0", "--workspace", str(ws)]
    main, terminal = os.openpty()
    with subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=terminal, stderr=subprocess.DEVNULL) as child:
        os.close(terminal)
        shown = b""
        while chunk := _read_or_eof(main):
            shown += chunk
        child.wait(60)
    os.close(main)
    text = shown.decode()
    assert "ctrlword" in text and "\u241b[2J clear \u241b]0;pwned\u2407 title \ufffd31m" in text, text
    assert not any((ord(c) < 32 and c not in "\t\r\n") or 127 <= ord(c) < 160 for c in text), repr(text)
    hits = as_json(cli(ws, "search", "ctrlword", "--min-score", "0", "--json"))["hits"]
    assert "\x1b[2J clear \x1b]0;pwned\x07" in hits[0]["snippet"]
    for args in (("search", "ctrlword", "--min-score", "0"), ("expand", hits[0]["id"])):  # text into a pipe
        piped = cli(ws, *args, check=True).stdout
        assert "\u241b[2J clear \u241b]0;pwned\u2407" in piped and "\x1b" not in piped and "\x07" not in piped, piped
    (ws / "memory/bad\x1b]0;name\x07.md").write_bytes(b"\xff\xfe not text")  # its name in the index's report
    warned = cli(ws, "index").stdout
    assert "bad\u241b]0;name\u2407.md" in warned and "\x1b" not in warned, warned
    # forget's question shows the note on the terminal too (answered "n": nothing removed)
    argv = [sys.executable, "-m", "memsearch_lsp", "forget", hits[0]["id"], "--workspace", str(ws)]
    main, terminal = os.openpty()
    with subprocess.Popen(argv, stdin=terminal, stdout=terminal, stderr=terminal) as child:
        os.close(terminal)
        shown = b""
        while b"[y/N]" not in shown and (chunk := _read_or_eof(main)):
            shown += chunk
        os.write(main, b"n\n")
        while chunk := _read_or_eof(main):
            shown += chunk
        child.wait(60)
    os.close(main)
    assert b"Forget this note?" in shown and b"\x1b" not in shown and b"\x07" not in shown, shown
    assert "ctrlword" in (ws / "memory/MEMORY.md").read_text()


def _read_or_eof(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # (EIO: the terminal's other end closed)
        return b""


def test_reset_then_search_gives_the_same_results(ws: Path) -> None:
    before = as_json(cli(ws, "search", "rate limit per API key", "--json"))["hits"]
    cli(ws, "reset", "--yes")
    assert not (ws / ".memsearch/milvus.db").exists() and (ws / "memory/MEMORY.md").exists()
    after = as_json(cli(ws, "search", "rate limit per API key", "--json"))["hits"]
    assert [h["id"] for h in after] == [h["id"] for h in before]


def test_version_and_help_are_fast_and_light() -> None:
    code = (
        "import sys, memsearch_lsp.cli as c\n"
        "try:\n    c.main(['--version'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('fastembed', 'pymilvus', 'onnxruntime', 'pygls') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("memsearch-lsp ")


def test_status_and_search_load_only_what_the_command_needs(ws: Path) -> None:
    """A cold CLI pays for every import: `status` loads no embedding model and no compaction code, `search`
    runs the bundled model without fastembed (its import was ~0.4 s), and neither imports asyncio."""
    cli(ws, "index")
    code = (
        "import sys, memsearch_lsp.cli as c\n"
        "assert c.main(['--workspace', sys.argv[1], *sys.argv[2:]]) == 0\n"
        "loaded = [m for m in ('fastembed', 'asyncio', 'memsearch_lsp.core.compact.plan', 'huggingface_hub')"
        " if m in sys.modules]\n"
        "assert not loaded, loaded\n"
        "print('onnxruntime' in sys.modules)\n"
    )
    for argv, model in ((["status"], False), (["search", "rate limit per API key"], True)):
        result = subprocess.run(
            [sys.executable, "-c", code, str(ws), *argv], capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip().splitlines()[-1] == str(model), "the model loads for a search only"


def test_workspace_and_json_flags_work_before_the_command(ws: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "memsearch_lsp", "--workspace", str(ws), "--json", "status"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ws.parent,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["root"] == str(ws.resolve())


def test_remember_appends_to_todays_log_and_search_finds_it(ws: Path) -> None:
    env = {**__import__("os").environ, "MEMSEARCH_NOW": "2026-12-03T18:07"}
    run = [sys.executable, "-m", "memsearch_lsp", "remember", "--workspace", str(ws)]
    text = subprocess.run(
        [*run, "The", "narwhal", "queue", "drains", "nightly."], capture_output=True, text=True, timeout=300, env=env
    )
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("remembered memory/2026-12-03.md:3-5  The narwhal queue drains nightly. (18:07)  id=")
    piped = subprocess.run(
        [*run, "-", "--heading", "Stdin", "--json"],
        input="Pangolin alerts page Ana.\n",
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    note = json.loads(piped.stdout)
    assert {k: note[k] for k in ("source", "heading", "start_line", "end_line")} == {
        "source": "memory/2026-12-03.md",
        "heading": "Stdin",
        "start_line": 7,
        "end_line": 9,
    }
    assert (ws / "memory/2026-12-03.md").read_text().startswith("# 2026-12-03\n\n## 18:07\n\nThe narwhal queue")
    assert as_json(cli(ws, "search", "pangolin alerts", "--json", "-k", "1"))["hits"][0]["id"] == note["id"]
    empty = subprocess.run([*run, "-"], input=" \n", capture_output=True, text=True, timeout=300, env=env)
    assert empty.returncode == 1 and "nothing to remember" in empty.stderr
    (ws / "memory/2026-12-03.md").unlink()


def test_a_note_with_its_own_title_is_one_section_its_id_expands_to(ws: Path) -> None:
    """A note starting with its own `# title`: the id remember answered expanded to the bare `## Runbook` heading,
    and search and recent showed its text under `### My own title`, without the note's heading."""
    env = {"MEMSEARCH_NOW": "2026-12-04T10:30"}
    text = "# My own title\nRestart steps:\n```bash\nkubectl rollout restart deploy/quokka-api -n prod\n"
    argv = ("remember", "-", "--heading", "Runbook: restart api", "--json")
    note = as_json(helpers.cli(ws, *argv, stdin=text, env=env, check=True))
    whole = as_json(cli(ws, "expand", note["id"], "--json"))
    assert whole["content"].startswith("## Runbook: restart api\n") and "quokka-api" in whole["content"]
    assert (whole["start_line"], whole["end_line"]) == (note["start_line"], note["end_line"])
    hit = as_json(cli(ws, "search", "restart the quokka api deployment", "--json", "-k", "1"))["hits"][0]
    assert (hit["id"], hit["heading"]) == (note["id"], "Runbook: restart api")
    cli(ws, "forget", note["id"], "--yes")
    assert "quokka" not in (ws / note["source"]).read_text()
    (ws / note["source"]).unlink()


def test_a_read_only_memory_folder_is_named_with_what_to_do_and_nothing_is_lost(tmp_path: Path) -> None:
    """remember, forget and compact failed with a raw OSError, forget's naming a temporary file of its own."""
    ws = make_workspace(tmp_path)
    cli(ws, "index")
    hit = as_json(cli(ws, "search", "Kafka over RabbitMQ", "--json", "-k", "1"))["hits"][0]
    before = helpers.snapshot(ws)
    env = {"MEMSEARCH_NOW": "2026-02-18T10:00"}
    with helpers.read_only(ws / "memory") as prefix:
        for argv in (("remember", "a note"), ("forget", hit["id"], "--yes"), ("compact", "--older-than", "1")):
            done = helpers.cli(ws, *argv, env=env, prefix=prefix)
            said = done.stderr.strip()
            assert done.returncode == 1 and "\n" not in said and "Error" not in said, said
            assert f"{ws / 'memory'} is " in said and "fix its permissions" in said and ".tmp" not in said, said
    assert helpers.snapshot(ws) == before


def test_a_query_unrelated_to_the_memory_finds_nothing(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMSEARCH_SEARCH_MIN_SCORE")  # the shipped floor (conftest turns it off for the fake)
    for query in ("xyzzy plugh", "recipe for lemon drizzle cake", "how many moons does neptune have"):
        assert as_json(cli(ws, "search", query, "--json", "-k", "5"))["hits"] == []
    # Related questions keep their answers, in the user's words too.
    hits = as_json(cli(ws, "search", "how long are cached values kept before they expire", "--json"))["hits"]
    assert hits and hits[0]["heading"] == "Redis Caching"
    assert all(h["score"] >= 0.25 for h in hits)  # a hit's score is the relevance the floor (0.25) compares
    hits = as_json(cli(ws, "search", "decision made on 2026-02-05", "--json"))["hits"]
    assert hits and hits[0]["source"] == "memory/2026-02-05.md"
    # The floor is a setting: off, the unrelated query returns its best (irrelevant) candidates. It says so.
    assert "`--min-score 0` lists the closest anyway" in cli(ws, "search", "xyzzy plugh").stdout
    assert as_json(cli(ws, "search", "xyzzy plugh", "--json", "--min-score", "0"))["hits"]

    refused = cli(ws, "search", "x", "--min-score", "2", check=False).stderr  # as argparse says it, before any index
    assert refused.startswith("memsearch-lsp search: error: argument --min-score: must be a number from 0 to 1")


@pytest.mark.parametrize("json_flag", [["--json"], []])
def test_a_reader_that_closes_the_pipe_gets_no_traceback(ws: Path, json_flag: list[str]) -> None:
    """`memsearch-lsp search ... | head -0`: the reader is gone before the answer; the command stops quietly with
    the status of a process killed by SIGPIPE, as `grep` or `cat` would, and says nothing on stderr."""
    read, write = os.pipe()
    os.close(read)
    try:
        argv = [sys.executable, "-m", "memsearch_lsp", "search", "redis", *json_flag, "--workspace", str(ws)]
        result = subprocess.run(argv, stdout=write, stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write)
    assert result.returncode == 141 and result.stderr == "", result.stderr


def test_warm_detach_returns_once_it_serves_and_a_second_names_the_owners_own_idle_time(tmp_path: Path) -> None:
    """A second `warm --detach` right after the first found no record yet and started another owner; one beside a
    running owner said the default idle time (600 s), not the owner's."""
    from memsearch_lsp.core.memory import Memory
    from tests.fakes import FakeEmbedder

    ws = make_workspace(tmp_path)
    record = ws / ".memsearch" / "server.json"
    first = as_json(cli(ws, "warm", "--detach", "--idle", "60", "--json"))
    try:
        assert record.is_file() and json.loads(record.read_text())["pid"] == first["pid"]  # the next call finds it
        assert first == {"pid": first["pid"], "idle_s": 60.0}
        assert as_json(cli(ws, "warm", "--detach", "--json")) == {"pid": first["pid"], "idle_s": 60.0, "running": True}
    finally:
        os.kill(first["pid"], signal.SIGTERM)
    helpers.wait_until(lambda: not record.exists(), "the warm owner leaves", timeout=60)
    editor = Memory(ws, embedder=FakeEmbedder())  # an owner that stays while it runs (an editor's): no idle time
    try:
        with helpers.owner_serving(editor):
            assert as_json(cli(ws, "warm", "--detach", "--json")) == {"pid": os.getpid(), "running": True}
    finally:
        editor.close()


def test_index_says_each_file_it_skips_once_and_a_fifo_as_a_fifo(tmp_path: Path) -> None:
    """`index` printed each skipped file twice (a WARNING, then its report's line), and called a FIFO "not a regular
    file (a broken or looping link?)"."""
    ws = make_workspace(tmp_path)
    os.mkfifo(ws / "memory" / "pipe.md")
    (ws / "memory" / "huge.md").write_text("wombat " * 200_000)
    done = cli(ws, "index")
    said = done.stderr + done.stdout
    assert said.count("memory/pipe.md") == 1 and "not a regular file (a FIFO)" in said, said
    assert said.count("memory/huge.md") == 1, said
    assert "looping link" not in said
