"""`memsearch-lsp search` with typos, as a user types it, with the real bundled model (core/search/spelling.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import helpers
from tests.helpers import make_workspace

pytestmark = pytest.mark.model


def test_a_query_with_typos_finds_what_the_right_spelling_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMSEARCH_SEARCH_MIN_SCORE")  # the shipped relevance floor: what said "no results" before
    ws = make_workspace(tmp_path)
    helpers.cli(ws, "index", check=True)

    def hits(query: str) -> list[tuple[str, str]]:
        found = json.loads(helpers.cli(ws, "search", query, "--json", check=True).stdout)["hits"]
        return [(h["source"], h["heading"]) for h in found]

    right = hits("Redis cache config")
    assert right[0] == ("memory/MEMORY.md", "Redis Caching")
    assert hits("Reddis cahce confg")[0] == right[0]  # was: no results relevant enough
    assert hits("Redis cahce config")[0] == right[0]  # (found as typed: searched so)
