"""Redaction takes time in proportion to the text (core/redact): no rule reads a text again from each place it could
start, and no value is read in more than one way. Timed against the same machine's time for ordinary text, or for a
smaller text of the same kind, never against a fixed number of seconds: the suite runs on loaded 2-core boxes."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from memsearch_lsp.core.redact import safe_text

MIB = 1024 * 1024  # the largest log read (core/files.py MAX_FILE_BYTES): what `compact` may redact in one call
PROSE = (
    "## 10:02 Retries\n\nWe chose Kafka for the queue; the broker times out after 30 s, so the worker retries five "
    "times with backoff. Ana reviews the migration on Friday (see ticket OPS-4821).\n\n"
)
PATHOLOGICAL = [  # each took time growing with the square (or worse) of its length
    "http://",  # url-password: to the word's end from each scheme
    "ab://x:y",
    "password for " + " " * 40,  # "the password for X is": spaces read three ways
    "user a" + " " * 30,  # SQL's `USER a ... IDENTIFIED BY`: two quantifiers over one run of spaces
    "-----BEGIN PRIVATE KEY-----\n\n",  # to an END line that never comes, from each BEGIN
    "AKIA" + "A" * 16 + " ",  # many secrets: each one found was checked against all found before it
    "curl -u a:",
    "pw:",
    "user a, pass" + "\t" * 30,  # a login said in prose
    "QUJDRA==\n-----END PRIVATE KEY-----\n",  # a key's tail: read up from each END line
    "Ab3dEf6hIj9kLm2n\n",  # a token wrapped over every line: one chain of lines, read once
    "x a1b2c3\nd4e5f6 y\n",  # a chain of two lines on every other line
]


def _fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _seconds(text: str, tries: int = 1) -> float:
    best = float("inf")
    for _ in range(tries):
        started = time.perf_counter()
        safe_text(text)
        best = min(best, time.perf_counter() - started)
    return best


@pytest.fixture(scope="module")
def ordinary() -> float:
    """Seconds to redact 1 MiB of ordinary notes on this machine, now."""
    return _seconds(_fill(PROSE, MIB), tries=2)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("unit", PATHOLOGICAL)
def test_a_pathological_text_as_long_as_a_log_is_redacted_in_linear_time(unit: str, ordinary: float) -> None:
    """65,000 characters of `http://` took 10 s, a 130 KB summary line 21 s to plan a compaction, and a 1 MiB log
    (its cap) would have taken tens of minutes. Eight times the text takes about eight times as long (a rule reading
    from each start to the end takes 64 times: failed here before 1 MiB is tried), and 1 MiB of it takes a few times
    what 1 MiB of ordinary notes does."""
    small, larger = _seconds(_fill(unit, MIB // 64), tries=3), _seconds(_fill(unit, MIB // 8), tries=2)
    assert larger < 32 * small + 0.2, f"{unit!r}: {small:.3f} s for 16 KiB, {larger:.3f} s for 128 KiB"
    whole = _seconds(_fill(unit, MIB))
    assert whole < 10 * ordinary + 2, f"{unit!r}: {whole:.2f} s for 1 MiB, {ordinary:.2f} s for ordinary notes"


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "text",
    [
        "DB_PASSWORD=" + "a" * 28 + "1",  # read as a dotted name (`process.env.TOKEN`) in 2**27 ways
        "curl -u admin:" + "eyJ" * 14,  # ... as a user's name
        "password=$" + "a" * 28 + "!",  # ... as a variable
        "token=getPasswordAndSecret" * 6 + "!(",  # ... as code
    ],
)
def test_a_value_is_read_in_one_way(text: str) -> None:
    """A value that is one long word was tried as every way of cutting it into words before it was found to be no
    dotted name, variable or call: 28 letters took seconds, 40 would take hours."""
    assert _seconds(text) < 0.5


@pytest.mark.parametrize("unit", ["a:", "x://u:", "a:/", "a|", ".a{color:red;margin:0}"])
def test_a_long_line_of_keys_is_read_in_one_pass(unit: str) -> None:
    """`name: value` was tried again from every `name` of a line, each time to the line's end: 64 KB of `a:` (a
    minified stylesheet, a table row) took a minute and a half in a captured turn."""
    _read_in_a_moment(unit * (64_000 // len(unit)) + " x")


@pytest.mark.parametrize("said", ["password ", "log in with password "])
def test_a_password_before_a_long_run_of_punctuation_is_read_in_one_pass(said: str) -> None:
    """The prose rule's value ended where a run of punctuation met a space: read from every length of the value
    to the run's end, 64 KB of commas took a minute."""
    _read_in_a_moment(said + "," * 64_000 + "x")


def test_a_text_of_many_keys_is_read_in_a_moment() -> None:
    """Each key found was looked for again with a regex of its own over the whole text: 128 KB of AWS key ids took
    17 s."""
    _read_in_a_moment("".join(f"AKIA{n:016d} " for n in range(6000)))


def _read_in_a_moment(text: str) -> None:
    """At most 20 times the time ordinary notes as long take here, now (they took a minute before; a fixed 5 s
    bound failed on a box at load 12)."""
    baseline = _seconds(_fill(PROSE, len(text)), tries=2)
    took = _seconds(text)
    assert took < 20 * baseline + 0.5, f"{took:.2f} s, ordinary notes as long: {baseline:.2f} s"


@pytest.mark.parametrize("summarize", [False, True])
def test_remember_on_the_command_line_looks_for_secrets_in_a_text_once(
    summarize: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`memsearch-lsp remember` cleaned the note, then `Memory.remember` cleaned it again: a 64 KB note cost 27 s of
    CPU while redaction was slow, and twice what it must. The note is redacted by `remember` alone; with --summarize,
    before the summariser reads it (it must not see a secret), then its summary by `remember`."""
    from memsearch_lsp import cli
    from memsearch_lsp.cli import commands
    from memsearch_lsp.core import notes
    from memsearch_lsp.core.compact import summarize

    looked: list[str] = []
    real = notes.safe_text
    monkeypatch.setattr(notes, "safe_text", lambda text: looked.append(text) or real(text))
    monkeypatch.setattr(summarize, "summarized", lambda config, root, body: f"Summary of {len(body)} characters.")

    class Cleaning:  # a memory that cleans what it is given, as Memory does
        config = root = None

        def __enter__(self) -> Cleaning:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        @staticmethod
        def clock() -> dt.datetime:
            return dt.datetime(2026, 12, 6, 10, 0)

        def remember(
            self, text: str, heading: str | None = None, *, now: dt.datetime | None = None, long_term: bool = False
        ) -> SimpleNamespace:
            notes.clean_note(text)
            return SimpleNamespace(to_dict=dict)

    monkeypatch.setattr(commands, "_memory", lambda args, **opening: Cleaning())
    monkeypatch.setattr(commands, "_emit", lambda args, data, text: None)
    (tmp_path / "memory").mkdir()
    note = f"deploy with {'ghp_' + 'Q3k9ZpL2mX7vN4bR8tY1wE6uI0oA5sD3fG7h'} today"
    assert cli.main(["remember", note, *(["--summarize"] if summarize else []), "--workspace", str(tmp_path)]) == 0
    assert looked == ([note, "Summary of 42 characters."] if summarize else [note])


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("prefix", "unit"),
    [("htpasswd -", "b"), ("htpasswd -", "0123456789abcdef"), ("<", " "), ("login", " "), ("creds", "\t")],
)
def test_one_long_run_after_a_prefix_is_read_in_linear_time(prefix: str, unit: str) -> None:
    """`htpasswd -` then a long word (32,000 characters took 19 s) and `<` then a long run of spaces (64,000 took 15 s
    looking for a `<private>` tag): each place a rule could split the run was tried against the whole rest of it."""
    small = _seconds(prefix + _fill(unit, MIB // 64), tries=3)
    larger = _seconds(prefix + _fill(unit, MIB // 8), tries=2)
    assert larger < 32 * small + 0.2, f"{prefix!r}: {small:.3f} s for 16 KiB, {larger:.3f} s for 128 KiB"
