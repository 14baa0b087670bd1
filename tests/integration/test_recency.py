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


def _with_and_without(memory: Memory, query: str, without: Callable[[], None]) -> tuple[list[str], list[str]]:
    """The first two hits' sources, then again after `without()` (a rule turned off): the relevances the same."""
    hits = memory.search(query, 5, min_score=0.0)
    assert hits[0].rank_score >= hits[1].rank_score  # the order and the scores agree
    without()
    again = memory.search(query, 5, min_score=0.0)
    assert {h.id: h.score for h in again} == {h.id: h.score for h in hits}  # relevance (min_score's) is unchanged
    return [h.source for h in hits[:2]], [h.source for h in again[:2]]


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
    ranked, without = _with_and_without(memory, query, lambda: monkeypatch.setattr(recency, "NEAR", 0.0))
    assert ranked == ["memory/2026-11-18.md", "memory/MEMORY.md"]
    assert without == ["memory/MEMORY.md", "memory/2026-11-18.md"]  # without the rule the stale bullet wins on wording


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


SECTION = {
    "MEMORY.md": "# Memory\n\n## Decisions\n- Use RabbitMQ for the invoice event bus (quorum queues).\n"
    "- How long we keep idempotency keys: 24 hours, in the cache.\n- No deploys on Fridays after 15:00 CET.\n",
    "2026-11-18.md": "# 2026-11-18\n\n## 11:40\nSEPA returns can arrive late, so we now keep idempotency keys in the "
    "cache three times as long: TTL raised from 24 h to 72 h.\n",
    "2026-11-20.md": "# 2026-11-20\n\n## 09:00\nLunch with the design team about the new onboarding flow.\n",
}


def test_a_later_log_that_says_it_changed_a_memory_bullet_comes_first(
    tmp_path: Path, make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    # one bullet of a many-bullet section: the section is far from the log as a whole, the bullet is not
    memory = make_memory(_workspace(tmp_path, SECTION))
    memory.index()
    query = "how long do we keep idempotency keys"
    # without the rule (no line says a change) the stale bullet wins on wording
    ranked, without = _with_and_without(
        memory, query, lambda: monkeypatch.setattr(recency, "says_change", lambda _: False)
    )
    assert ranked == ["memory/2026-11-18.md", "memory/MEMORY.md"]
    assert without == ["memory/MEMORY.md", "memory/2026-11-18.md"]


FIRST = {
    "2026-02-10.md": "# 2026-02-10\n\n## 10:15\nFirst deploy of the search service to production today: "
    "Kubernetes 1.27, cluster prod-eu, smoke tests green, Marco on call.\n",
    "2026-05-02.md": "# 2026-05-02\n\n## 11:00\nWe deploy the search service to production on Kubernetes 1.29 now "
    "(upgraded from 1.27).\n",
}


def test_an_older_note_that_answers_when_it_first_happened_stays_first(
    tmp_path: Path, make_memory: Callable[..., Memory]
) -> None:
    memory = make_memory(_workspace(tmp_path, FIRST))
    memory.index()
    # the later note says a change (now, upgraded from 1.27), within the margin, of the same service, and shares the
    # older sentence's value (1.27); but not every query term of it ("first"): it does not restate what is asked
    hits = memory.search("when did we first deploy the search service to production", 5, min_score=0.0)
    assert [h.source for h in hits] == ["memory/2026-02-10.md", "memory/2026-05-02.md"]
    assert hits[1].rank_score >= (1.0 - recency.SUPERSEDE) * hits[0].rank_score
