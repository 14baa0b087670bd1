"""Bad arguments get a clear one-line answer where they are read: the CLI's parser, the date and source filters,
the settings, the compaction command's days; with -v an unexpected error's details go to stderr."""

from __future__ import annotations

import datetime as dt
import json
import logging
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from memsearch_lsp.cli.parser import UsageError, build_parser
from memsearch_lsp.config import ConfigError, load_config, user_config_path
from memsearch_lsp.core.search.filters import FilterError, make_filter, parse_date
from memsearch_lsp.lsp.features.actions import CompactCommandError, older_than_days
from memsearch_lsp.lsp.setup import configure_logging, listen_address

TODAY = dt.date(2026, 3, 15)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["serve", "--tcp", "abc"], "'abc' is not HOST:PORT"),
        (["serve", "--tcp", "127.0.0.1:99999"], "from 1 to 65535"),
        (["serve", "--tcp", "127.0.0.1:"], "from 1 to 65535"),
        (["serve", "--tcp", "[::1]:abc"], "from 1 to 65535"),
        (["serve", "--tcp", "127.0.0.1:0"], "from 1 to 65535"),
        (["compact", "--older-than", "100000000"], "at most 365000"),
        (["compact", "--older-than", "99999999999999999999"], "at most 365000"),
        (["compact", "--older-than", "-1"], "at least 0"),
        (["recent", "--days", "100000000"], "at most 365000"),
        (["recent", "--days", "0"], "at least 1"),
        (["search", "x", "-k", "0"], "at least 1"),
        (["search", "x", "--since", "2026-13-45"], "cannot read the date"),  # before an owner answers it, hintless
        (["search", "x", "--until", "5000y"], "out of range"),
        (["search", "x", "--min-score", "2"], "from 0 to 1"),
        (["search", "x", "--vector-weight", "nan"], "from 0 to 1"),
        (["recent", "--days", "\u0663"], "whole number of days"),  # an Arabic-Indic 3: ASCII digits only
        (["recent", "--chars", "99999999999999999999"], "at most 1000000000"),
        (["warm", "--idle", "nan"], "more than 0"),
        (["warm", "--idle", "inf"], "more than 0"),
        (["warm", "--idle", "-5"], "more than 0"),
        (["warm", "--idle", "0"], "more than 0"),
        (["search", "x", "--since", ""], "needs a date or a relative age like 7d"),
        (["search", "x", "--until", "  "], "needs a date or a relative age like 7d"),
        (["search", "x", "--source", "a\\"], "the source pattern 'a\\\\' is not a valid gitignore-style glob"),
        (["search", "x", "--source", "!"], "the source pattern '!' is not a valid gitignore-style glob"),
        (["search", "x", "--source", "*a*a*a*b"], "at most 2"),
        (
            ["search", "x", "--source", "memory/[z-a].md"],
            "'memory/[z-a].md' is not a valid glob (bad character range z-a)",
        ),
    ],
)
def test_bad_arguments_are_usage_errors_naming_the_argument(argv: list[str], needle: str) -> None:
    with pytest.raises(UsageError) as caught:
        build_parser().parse_args(argv)
    message = str(caught.value)
    assert needle in message and message.startswith(f"argument {argv[2] if argv[0] == 'search' else argv[1]}")
    assert caught.value.prog == f"memsearch-lsp {argv[0]}"


def test_an_argument_no_command_takes_is_named_by_its_command() -> None:
    with pytest.raises(UsageError, match="unrecognized arguments: --bogus") as caught:
        build_parser().parse_args(["search", "x", "--bogus"])
    assert caught.value.prog == "memsearch-lsp search" and "memsearch-lsp search --help" in caught.value.hint


@pytest.mark.parametrize(
    ("argv", "dashed"), [(["search", "--max-model-len"], "--max-model-len"), (["remember", "-x"], "-x")]
)
def test_a_query_or_note_that_starts_with_a_dash_is_told_to_come_after_two_dashes(argv: list[str], dashed: str) -> None:
    with pytest.raises(UsageError, match=r"arguments are required|unrecognized arguments") as caught:
        build_parser().parse_args(argv)
    assert str(caught.value).startswith(f'"{dashed}" was read as an option (')
    assert caught.value.hint == (
        f'a QUERY or TEXT that starts with "-" goes after the options and "--": memsearch-lsp {argv[0]} -- "{dashed}"'
        " (or pipe it in as -)"
    )
    parsed = build_parser().parse_args([argv[0], "--", dashed])
    assert (parsed.query if argv[0] == "search" else parsed.text) in (dashed, [dashed])
    with pytest.raises(UsageError, match="expected one argument"):  # help is no query: never tried (nor printed)
        build_parser().parse_args(["remember", "--heading", "-h", "a note"])
    with pytest.raises(UsageError) as plain:  # a query forgotten, a known option given: the usual hint
        build_parser().parse_args(["search", "--json"])
    assert plain.value.hint == "see `memsearch-lsp search --help`"


@pytest.mark.parametrize(
    ("argv", "dashed", "line"),
    [
        (["search", "--dry-run", "--workspace", "."], "--dry-run", ["search", "--workspace", "."]),
        (
            ["--json", "search", "-k", "2", "--dry-run", "--json"],
            "--dry-run",
            ["--json", "search", "-k", "2", "--json"],
        ),
        (["remember", "-x", "--heading", "Rota"], "-x", ["remember", "--heading", "Rota"]),
    ],
)
def test_a_dashed_query_before_options_is_told_to_go_last(argv: list[str], dashed: str, line: list[str]) -> None:
    """`search "--dry-run" --workspace ws` gave the query, but read it as an option: the error names it and shows
    the line that works, the options ahead of "--" (it said only that QUERY was missing)."""
    with pytest.raises(UsageError) as caught:
        build_parser().parse_args(argv)
    assert str(caught.value).startswith(f'"{dashed}" was read as an option (')
    assert caught.value.hint.endswith(f'memsearch-lsp {" ".join(line)} -- "{dashed}" (or pipe it in as -)')
    fixed = build_parser().parse_args([*line, "--", dashed])
    assert (fixed.query if "search" in argv else fixed.text) in (dashed, [dashed])


@pytest.mark.parametrize(
    ("argv", "attribute", "value"),
    [
        (["serve", "--tcp", "127.0.0.1:2087"], "tcp", "127.0.0.1:2087"),
        (["compact", "--older-than", "0"], "older_than", 0),
        (["compact", "--older-than", "100000"], "older_than", 100000),
        (["recent", "--days", "400"], "days", 400),
        (["warm", "--idle", "0.2"], "idle", 0.2),
        (["search", "x", "--since", "7d"], "since", "7d"),
        (["search", "x", "--source", "memory/2026-02-*"], "source", ["memory/2026-02-*"]),
    ],
)
def test_good_arguments_read_as_before(argv: list[str], attribute: str, value: Any) -> None:
    assert getattr(build_parser().parse_args(argv), attribute) == value


def test_listen_address_reads_host_and_port() -> None:
    assert listen_address("127.0.0.1:2087") == ("127.0.0.1", 2087)
    assert listen_address(":2087") == ("127.0.0.1", 2087)
    assert listen_address("[::1]:2087") == ("::1", 2087)
    assert listen_address("::1:2087") == ("::1", 2087)
    with pytest.raises(ValueError, match="from 1 to 65535"):
        listen_address("localhost:65536")


@pytest.mark.parametrize("verbose", [False, True])
def test_serve_keeps_routine_lines_off_stderr_unless_verbose(capsys: pytest.CaptureFixture[str], verbose: bool) -> None:
    """An editor logs each stderr line of its server as an error (Neovim's lsp.log): `serve` writes warnings and errors
    there (the client gets every INFO line as window/logMessage), and everything with -v."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    try:
        configure_logging(verbose)
        log = logging.getLogger("memsearch_lsp.core.index")
        log.info("routine pass")
        log.warning("a problem")
        assert log.isEnabledFor(logging.INFO)  # (what ClientLogHandler forwards)
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
    err = capsys.readouterr().err
    assert "a problem" in err and ("routine pass" in err) == verbose, err


def test_a_workspace_that_is_a_file_or_too_long_a_name_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("x")
    for argv in (["--workspace", str(file), "init"], ["init", str(file)], ["status", "-w", str(file)]):
        with pytest.raises(UsageError, match="is not a folder"):
            build_parser().parse_args(argv)
    with pytest.raises(UsageError, match=r": not a folder \(a part of it is a file\)"):
        build_parser().parse_args(["init", str(file / "sub")])
    long = str(tmp_path / ("a" * 5000))
    with pytest.raises(UsageError, match=r"\(5\d\d\d characters\): the name is too long") as caught:
        build_parser().parse_args(["--workspace", long, "status"])
    assert len(str(caught.value)) < 200  # the name is cut short in the message
    new = str(tmp_path / "new")  # not there yet: init makes it, the other commands say so themselves
    assert build_parser().parse_args(["init", new]).dir == new


@pytest.mark.parametrize("text", ["740000d", "5000y", "999999999d", "1000000000d", "9" * 30 + "d", "9" * 5000 + "w"])
def test_a_relative_date_too_far_back_is_out_of_range(text: str) -> None:
    with pytest.raises(FilterError, match=r"is out of range: it would be before the year 1"):
        parse_date(text, TODAY)


def test_relative_dates_take_ascii_digits_of_any_length_within_the_calendar() -> None:
    assert parse_date("739000d", TODAY) == TODAY - dt.timedelta(days=739000)  # 5 digits were the old limit
    assert parse_date("7 d", TODAY) == dt.date(2026, 3, 8)
    for text in ("\u0663d", "\uff13d", "3\u00a0d"):  # Arabic-Indic and full-width digits, a no-break space
        with pytest.raises(FilterError, match="cannot read the date"):
            parse_date(text, TODAY)


def test_an_invalid_source_pattern_is_a_filter_error_naming_it() -> None:
    with pytest.raises(FilterError, match=r"the source pattern 'a\\\\' is not a valid gitignore-style glob"):
        make_filter(source=["memory/*", "a\\"], today=TODAY)
    with pytest.raises(FilterError, match=r"the source pattern '\[9-0\]\*' is not a valid glob \(bad character range"):
        make_filter(source="[9-0]*", today=TODAY)  # (a range backwards: re's own error came through, not a FilterError)
    assert make_filter(source=" ./memory/* ", today=TODAY).sources == ("memory/*",)


@pytest.mark.parametrize("name", ["", "9lives", "my-memory", "mémoire", "a b", "x" * 248])
def test_a_bad_collection_name_is_a_config_error_naming_the_key(tmp_path: Path, name: str) -> None:
    user = user_config_path()  # (milvus.collection is the user's: a workspace file's is ignored)
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(f"[milvus]\ncollection = {json.dumps(name)}\n")
    with pytest.raises(ConfigError, match=r"config\.toml: milvus\.collection: must be 1 to 247 letters"):
        load_config(tmp_path, env={})
    user.unlink()
    with pytest.raises(ConfigError, match=r"environment: milvus\.collection: must be 1 to 247"):
        load_config(tmp_path, env={"MEMSEARCH_MILVUS_COLLECTION": name})


@pytest.mark.parametrize("name", ["memsearch", "_private", "Team_2026", "x" * 247])
def test_a_good_collection_name_is_taken(tmp_path: Path, name: str) -> None:
    assert load_config(tmp_path, env={"MEMSEARCH_MILVUS_COLLECTION": name}).milvus.collection == name
    assert load_config(tmp_path, {"milvus": {"collection": name}}, env={}).milvus.collection == name


@pytest.mark.parametrize("days", [-1, 365_001, 1_000_000_000, 2.5, "7", True])
def test_compaction_days_out_of_range_are_invalid_params(days: Any) -> None:
    with pytest.raises(CompactCommandError, match="olderThanDays must be a whole number of days from 0 to 365000"):
        older_than_days(days)
    assert issubclass(CompactCommandError, ValueError)  # the protocol answers a handler's ValueError with -32602


def test_compaction_days_in_range_are_taken() -> None:
    assert [older_than_days(d) for d in (None, 0, 7, 365_000)] == [None, 0, 7, 365_000]


BROKEN = """
import sys
from memsearch_lsp.cli import COMMANDS, main

def broken(args):
    raise OverflowError("date value out of range")

COMMANDS["status"] = broken
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("json_output", [False, True])
def test_verbose_shows_an_unexpected_errors_details_on_stderr(tmp_path: Path, json_output: bool) -> None:
    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        options = ["--json"] if json_output else []
        argv = (*argv, *options, "-w", str(tmp_path))
        return subprocess.run([sys.executable, "-c", BROKEN, *argv], capture_output=True, text=True, timeout=60)

    quiet, verbose = run("status"), run("-v", "status")
    assert quiet.returncode == verbose.returncode == 1
    assert "Traceback" not in quiet.stderr and "Traceback" not in verbose.stdout
    assert "Traceback (most recent call last)" in verbose.stderr and "in broken" in verbose.stderr
    if json_output:
        assert json.loads(verbose.stdout)["error"]["message"] == "OverflowError: date value out of range"
    else:
        assert quiet.stderr == "memsearch-lsp: error: OverflowError: date value out of range\n"
        assert verbose.stderr.endswith(quiet.stderr) and verbose.stdout == ""


def test_a_posix_class_in_a_source_glob_warns_nobody() -> None:
    """`[[:alpha:]]` made Python's re print a FutureWarning (a nested set) on the user's terminal."""
    from memsearch_lsp.core.files import glob_match

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        glob_match("memory/[[:alpha:]]*", "memory/MEMORY.md")


def test_a_read_is_asked_again_once_when_the_owner_went_away_while_it_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor closing as `search` asks it: the second time there is no owner (this process opens the index); a
    command that writes is never run twice."""
    from memsearch_lsp import cli
    from memsearch_lsp.core.process.protocol import OwnerGone

    calls: list[str] = []

    def gone_once(args: object) -> int:
        calls.append(getattr(args, "command", ""))
        if len(calls) == 1:
            raise OwnerGone("the process that owns the index is gone (reset)")
        return 0

    (tmp_path / "memory").mkdir()
    monkeypatch.setitem(cli.COMMANDS, "search", gone_once)
    monkeypatch.setitem(cli.COMMANDS, "remember", gone_once)
    assert cli.main(["search", "redis", "--workspace", str(tmp_path)]) == 0 and calls == ["search", "search"]
    calls.clear()
    assert cli.main(["remember", "a note", "--workspace", str(tmp_path)]) == 1 and calls == ["remember"]


def test_verbose_says_what_happens(tmp_path: Path) -> None:
    """`-v` (log what happens) wrote nothing at all for an index or a search."""
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "MEMORY.md").write_text("# Memory\n\nWe use Redis.\n")
    done = subprocess.run(
        [sys.executable, "-m", "memsearch_lsp", "index", "-v", "--workspace", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "opened the index at" in done.stderr and "+1 added" in done.stderr


def test_a_permission_refused_outside_the_index_folder_names_its_own_file() -> None:
    """Every EACCES became "<folder> is not writable by you" after the read-only workspace fix: a file the user cannot
    read was then no longer named. A read-only file system, or a refusal in the index folder, is a write refused."""
    import errno

    from memsearch_lsp.cli import _refused_write

    assert _refused_write(PermissionError(errno.EACCES, "Permission denied", "/ws/memory/private.md")) is None
    index = _refused_write(PermissionError(errno.EACCES, "Permission denied", "/ws/.memsearch/milvus.db/x"))
    assert index is not None and "/ws/.memsearch/milvus.db is not writable by you" in str(index)
    read_only = _refused_write(OSError(errno.EROFS, "Read-only file system", "/ws/.memsearch"))
    assert read_only is not None and "/ws is on a read-only file system" in str(read_only)
    assert _refused_write(ValueError("x")) is None
