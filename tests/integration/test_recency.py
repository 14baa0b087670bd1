"""Newer first among near-duplicates (core/search/recency.py): a later log that restates a note with a new value
comes first; hits that are not about the same thing keep their order. Real Milvus Lite, the fake embedder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from memsearch_lsp.core.memory import Memory
from memsearch_lsp.core.search import recency


def _workspace(tmp_path: Path, files: dict[str, str]) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    for name, text in files.items():
        (ws / "memory" / name).write_text(text, encoding="utf-8")
    return ws


def _order(memory: Memory, query: str) -> list[str]:
    return [h.source.rsplit("/", 1)[-1] for h in memory.search(query, 5, min_score=0.0)]


STALE = {
    "MEMORY.md": "# Memory\n\n## Team decisions\n- Idempotency keys are kept in the cache for 24 hours.\n",
    "2026-11-18.md": "# 2026-11-18\n\n## Decisions\n- Idempotency keys are kept in the cache for 72 hours.\n",
    "2026-11-20.md": "# 2026-11-20\n\n## 09:00\nLunch with the design team about the new onboarding flow.\n",
}


def test_a_later_log_that_restates_a_memory_note_comes_first(
    tmp_path: Path, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = make_memory(_workspace(tmp_path, STALE))
    memory.index()
    query = "how long are idempotency keys kept in the cache"
    hits = memory.search(query, 5, min_score=0.0)
    assert [h.source for h in hits[:2]] == ["memory/2026-11-18.md", "memory/MEMORY.md"]
    assert hits[0].rank_score >= hits[1].rank_score  # the order and the scores agree
    before = {h.id: h.score for h in hits}
    monkeypatch.setattr(recency, "NEAR", 0.0)  # without the rule the stale bullet wins on wording
    again = memory.search(query, 5, min_score=0.0)
    assert [h.source for h in again[:2]] == ["memory/MEMORY.md", "memory/2026-11-18.md"]
    assert {h.id: h.score for h in again} == before  # relevance (what min_score compares) is unchanged


def test_hits_about_different_things_keep_their_order(
    tmp_path: Path, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _workspace(
        tmp_path,
        {
            "2026-01-05.md": "# 2026-01-05\n\n## 10:00\nKafka retention policy for the audit topic: 7 days.\n",
            "2026-03-01.md": "# 2026-03-01\n\n## 10:00\nPostgres backups: the retention policy is 30 days in S3.\n",
        },
    )
    memory = make_memory(ws)
    memory.index()
    query = "kafka retention policy"
    assert _order(memory, query) == ["2026-01-05.md", "2026-03-01.md"]  # the newer one stays below
    monkeypatch.setattr(recency, "NEAR", 0.0)
    assert _order(memory, query) == ["2026-01-05.md", "2026-03-01.md"]


def test_near_duplicates_without_a_day_keep_their_order(
    tmp_path: Path, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = STALE["2026-11-18.md"].replace("# 2026-11-18", "# Cache notes")
    memory = make_memory(_workspace(tmp_path, {"MEMORY.md": STALE["MEMORY.md"], "cache.md": log}))
    memory.index()
    query = "how long are idempotency keys kept in the cache"
    undated = _order(memory, query)  # neither has a day: nothing says which is newer
    monkeypatch.setattr(recency, "NEAR", 0.0)
    assert _order(memory, query) == undated
