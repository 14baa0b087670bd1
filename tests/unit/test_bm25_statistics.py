"""The BM25 document-frequency table on disk: small saves go to its journal, loading replays it."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from memsearch_lsp.core.search.bm25 import ANALYZER, DfTable


def counts(table: DfTable) -> tuple[int, dict[int, int]]:
    return table.docs, dict(table.df)


def reloaded(table: DfTable) -> DfTable:
    again = DfTable(table.path)
    assert again.load(table.docs), "the saved statistics load"
    assert counts(again) == counts(table)
    return again


def write(table: DfTable, vectors: list[dict[int, float]], sign: int = 1) -> None:
    """One index pass: the marker, the change, the save."""
    table.begin()
    table.add(vectors, sign=sign)
    table.save()


@pytest.fixture
def table(tmp_path: Path) -> DfTable:
    table = DfTable(tmp_path / "bm25-c.json")
    write(table, [{n: 1.0, n + 1: 1.0} for n in range(0, 400, 2)])
    return table


def test_small_saves_append_to_the_journal_and_leave_the_table_alone(table: DfTable) -> None:
    assert table.path is not None and table.journal is not None
    saved = table.path.read_bytes()
    for n in range(20):  # one file at a time, as an editor saves them
        write(table, [{1000 + n: 1.0, 3: 1.0}])
    assert table.path.read_bytes() == saved, "the whole table is not written again for each file"
    assert len(table.journal.read_text().splitlines()) == 20
    assert not table.marker.exists()  # type: ignore[union-attr]
    reloaded(table)


def test_removals_replay_to_the_same_counts(table: DfTable) -> None:
    write(table, [{0: 1.0, 1: 1.0}], sign=-1)  # terms 0 and 1 leave the table entirely
    write(table, [{0: 1.0, 7777: 1.0}])
    write(table, [{7777: 1.0}], sign=-1)
    again = reloaded(table)
    assert 1 not in again.df and 7777 not in again.df and again.df[0] == 1


def test_a_journal_as_large_as_the_table_is_folded_into_it(table: DfTable, monkeypatch: pytest.MonkeyPatch) -> None:
    assert table.path is not None and table.journal is not None
    monkeypatch.setattr(DfTable, "JOURNAL_MIN", 0)
    saved = table.path.read_bytes()
    for n in range(200):
        write(table, [{5000 + n: 1.0, 5001 + n: 1.0}])
        if table.path.read_bytes() != saved:
            break
    else:
        pytest.fail("the table was never written again")
    assert not table.journal.exists(), "the journal went with the rewrite"
    reloaded(table)


def test_journal_lines_of_an_older_table_are_skipped(table: DfTable, monkeypatch: pytest.MonkeyPatch) -> None:
    assert table.path is not None and table.journal is not None
    write(table, [{9000: 1.0}])
    old_lines = table.journal.read_text()
    monkeypatch.setattr(DfTable, "JOURNAL_MIN", 0)
    for n in range(200):  # until a save writes the table whole
        write(table, [{9001 + n: 1.0}])
        if not table.journal.exists():
            break
    table.journal.write_text(old_lines)  # as a crash between the new table and dropping the journal leaves it
    reloaded(table)


def test_a_journal_that_does_not_fit_its_table_is_recounted(table: DfTable, caplog: pytest.LogCaptureFixture) -> None:
    assert table.path is not None and table.journal is not None
    generation = json.loads(table.path.read_text())["journal"]
    for bad in (
        json.dumps({"journal": generation, "docs": -1000, "df": {}}),
        json.dumps({"journal": generation, "docs": 0, "df": {"123456": -1}}),
        "{not json",
    ):
        table.journal.write_text(bad + "\n")
        with caplog.at_level(logging.WARNING):
            assert not DfTable(table.path).load(table.docs)
        assert "rebuilding" in caplog.text
        caplog.clear()


def test_a_table_written_without_a_journal_ignores_one(tmp_path: Path) -> None:
    """A table from before the journal (or from an older version) is read as it is; the next save is whole."""
    path = tmp_path / "bm25-c.json"
    path.write_text(json.dumps({"analyzer": ANALYZER, "docs": 2, "df": {"5": 2, "6": 1}}))
    path.with_suffix(".journal").write_text(json.dumps({"journal": "x", "docs": 40, "df": {"5": 40}}) + "\n")
    table = DfTable(path)
    assert table.load(2) and counts(table) == (2, {5: 2, 6: 1})
    write(table, [{6: 1.0}])
    assert json.loads(path.read_text())["docs"] == 3 and not path.with_suffix(".journal").exists()
    reloaded(table)


def test_an_unfinished_pass_is_recounted_even_with_a_journal(table: DfTable) -> None:
    write(table, [{4242: 1.0}])
    table.begin()
    table.add([{4243: 1.0}])  # the process dies before save()
    assert not DfTable(table.path).load(table.docs)
    assert not DfTable(table.path).load(table.docs - 1)
