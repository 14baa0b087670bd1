"""Issue 39: compaction proposes the lasting facts of the logs it compacts as MEMORY.md additions, each under
its section with its source; they are in the plan (text, JSON), applied only with the rest of it and rolled
back with it; and after applying, a summary outranks its archived original in search."""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import re
from pathlib import Path

import pytest

from memsearch_lsp import cli
from memsearch_lsp.core.compact import apply as compact_apply
from memsearch_lsp.core.compact.plan import CompactError, apply_plan, plan_compaction
from tests.fakes import FakeEmbedder
from tests.helpers import (
    BM25,
    LASTING_LOGS,
    LASTING_MEMORY,
    LASTING_TODAY,
    NOISE,
    snapshot,
    write_lasting_logs,
)

MAR1, LOGS, MEMORY, write = LASTING_TODAY, LASTING_LOGS, LASTING_MEMORY, write_lasting_logs


def test_lasting_facts_are_proposed_under_their_sections_with_their_sources(tmp_path: Path, make_memory) -> None:
    write(tmp_path)
    memory = make_memory(tmp_path)
    plan = plan_compaction(memory, today=MAR1)
    edit = plan.memory_edit
    assert edit is not None and edit.path == "memory/MEMORY.md" and edit.action == "insert"
    got = [(p.section, p.kind, p.source) for p in plan.promotions]  # by section, then in the logs' order
    assert got == [
        ("Preferences", "preference", "memory/2026-10-12.md"),
        ("Preferences", "preference", "memory/2026-10-14.md"),
        ("Decisions", "decision", "memory/2026-10-13.md"),
    ]  # Carol's wish has a deadline: a task, not a lasting fact; a setting is no preference
    data = plan.to_dict()
    assert [set(p) for p in data["promoted"]] == [{"path", "section", "text", "source", "line", "kind"}] * 3
    for p in data["promoted"]:  # each with its source: the archived log, at its line
        day = Path(p["source"]).stem
        assert p["text"].endswith(f" ([{day}](archive/{day}.md#L{p['line']}))"), p
        line = (tmp_path / p["source"]).read_text().splitlines()[p["line"] - 1]
        assert p["text"].split(" ([", 1)[0].split(": ", 1)[-1] in line, (p, line)
        assert f"  promote memory/MEMORY.md ## {p['section']}: {p['text']}" in plan.describe()
    before = snapshot(tmp_path)
    apply_plan(memory, plan)
    text = (tmp_path / "memory/MEMORY.md").read_text()
    assert text.startswith("# Memory\n\n## Decisions\n\n- 2027-01-04: chose Kafka.\n- we keep PostgreSQL")
    preferences = text.split("## Preferences", 1)[1]
    assert preferences.startswith("\n\n- Dates as YYYY-MM-DD.\n- Ines prefers small PRs")
    assert "The user told me to always run the migrations" in preferences
    assert "Carol" not in text and "maxmemory" not in text
    assert before["memory/MEMORY.md"] != text.encode() and text == edit.content
    for p in data["promoted"]:  # the source link works once the log is archived
        assert (tmp_path / "memory/archive" / Path(p["source"]).name).is_file()


def test_facts_already_in_memory_md_are_not_proposed_again_and_promote_can_be_off(tmp_path: Path, make_memory) -> None:
    write(tmp_path)
    memory = make_memory(tmp_path)
    apply_plan(memory, plan_compaction(memory, today=MAR1))
    (tmp_path / "memory/2026-10-19.md").write_text(
        "# 2026-10-19\n\n## Review\n\nIness prefers small PRs, under 400 lines of diff, one concern per PR.\n"
        "Ines prefers small PRs, under 400 lines of diff, one concern per PR.\n" + NOISE
    )
    again = plan_compaction(memory, today=dt.date(2026, 11, 9))
    assert [p.text.split(" ([")[0] for p in again.promotions] == [
        "Iness prefers small PRs, under 400 lines of diff, one concern per PR."
    ]  # the one said the same way is there already
    off = plan_compaction(make_memory(tmp_path, compact={"promote": False}), today=dt.date(2026, 11, 9))
    assert off.memory_edit is None and off.to_dict()["promoted"] == [] and off.summaries


def test_memory_md_is_created_when_missing_and_a_changed_one_refuses_the_plan(tmp_path: Path, make_memory) -> None:
    write(tmp_path, memory_md=None)
    memory = make_memory(tmp_path)
    plan = plan_compaction(memory, today=MAR1)
    assert plan.memory_edit is not None and plan.memory_edit.action == "create"
    (tmp_path / "memory/MEMORY.md").write_text("# Mine\n")  # written meanwhile
    before = snapshot(tmp_path)
    with pytest.raises(CompactError, match=r"MEMORY\.md appeared since the plan was made"):
        apply_plan(memory, plan)
    assert snapshot(tmp_path) == before
    plan = plan_compaction(memory, today=MAR1)
    assert plan.memory_edit is not None and plan.memory_edit.action == "insert"
    (tmp_path / "memory/MEMORY.md").write_text("# Mine\n\n- edited again\n")
    with pytest.raises(CompactError, match=r"MEMORY\.md changed since the plan was made"):
        apply_plan(memory, plan)


def test_a_failure_at_the_last_step_rolls_memory_md_back_with_the_rest(
    tmp_path: Path, make_memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path)
    memory = make_memory(tmp_path)
    plan = plan_compaction(memory, today=MAR1)
    assert plan.memory_edit is not None
    before = snapshot(tmp_path)
    real, calls = compact_apply._install, []

    def install(source: Path, target: Path) -> None:
        calls.append(target.name)
        if target.name == "MEMORY.md" and calls.count("MEMORY.md") == 1:  # the last install of the plan
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(source, target)

    monkeypatch.setattr(compact_apply, "_install", install)
    with pytest.raises(CompactError, match="rolled back, memory unchanged"):
        apply_plan(memory, plan)
    assert snapshot(tmp_path) == before  # the summary removed, the logs back, MEMORY.md as it was


@pytest.fixture
def fake_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memsearch_lsp.core.workspace.create_embedder", lambda *a, **k: FakeEmbedder())


def test_the_cli_shows_the_promotions_in_the_dry_run(tmp_path: Path, fake_model, capsys, monkeypatch) -> None:
    write(tmp_path)
    assert cli.main(["compact", "-w", str(tmp_path), "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert re.search(r"^  promote memory/MEMORY.md ## Preferences: Ines prefers small PRs.*#L\d+\)\)$", text, re.M)
    assert cli.main(["compact", "-w", str(tmp_path), "--dry-run", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["applied"] is False and len(data["promoted"]) == 3 and data["nothing_to_gain"] == []
    assert (tmp_path / "memory/MEMORY.md").read_text() == MEMORY  # a dry run writes nothing


def test_a_week_in_five_languages_proposes_its_labelled_decisions_not_its_causes_nor_what_was_not_decided(
    tmp_path: Path, make_memory
) -> None:
    """The audit's report: "Decisão:", "Decisión:", "Entscheidung:" and "决定：" were never proposed while the English
    line was; "nada decidido" and "没有结论" were proposed as decisions; a root cause ("was never cleared") as a
    rule."""
    days = {
        "2026-10-12": "Decision: we use Stripe for card payments.\n"
        "We talked a bit about the offsite, nothing decided.\n"
        "Root cause of the memory leak in the image service: the size cache was never cleared.",
        "2026-10-13": "Decisão: usamos Stripe para os pagamentos com cartão.\n"
        "Conversamos um pouco sobre o almoço de fim de ano, nada decidido.",
        "2026-10-14": "Decisión: usamos Stripe para los pagos con tarjeta.\n"
        "Causa raíz: la caché de miniaturas nunca se vaciaba. Solución: caché LRU con 5.000 entradas como máximo.",
        "2026-10-15": "Entscheidung: Wir verwenden Stripe für Kartenzahlungen.\n"
        "Wir haben kurz über das Weihnachtsessen gesprochen, nichts entschieden.\n"
        "Ursache des Speicherlecks im Bildservice: der Größen-Cache wurde nie geleert.",
        "2026-10-16": "决定：用 Stripe 处理信用卡支付。\n我们讨论了很久要不要换掉现在的报表工具，最后还是没有结论。",
    }
    (tmp_path / "memory").mkdir()
    for day, lines in days.items():
        (tmp_path / "memory" / f"{day}.md").write_text(f"# {day}\n\n## 10:00\n\n{lines}\n{NOISE}", encoding="utf-8")
    plan = plan_compaction(make_memory(tmp_path), today=MAR1)
    assert [(p.section, p.source, p.text.split(" ([")[0]) for p in plan.promotions] == [
        ("Decisions", "memory/2026-10-12.md", "we use Stripe for card payments."),
        ("Decisions", "memory/2026-10-13.md", "usamos Stripe para os pagamentos com cartão."),
        ("Decisions", "memory/2026-10-14.md", "usamos Stripe para los pagos con tarjeta."),
        ("Decisions", "memory/2026-10-15.md", "Wir verwenden Stripe für Kartenzahlungen."),
        ("Decisions", "memory/2026-10-16.md", "用 Stripe 处理信用卡支付。"),
    ]
    summaries = "\n".join(s.content for s in plan.summaries)  # the causes stay in the summary, labels and all
    assert "Causa raíz: la caché de miniaturas nunca se vaciaba." in summaries


# -- the summary outranks its archive ------------------------------------------------------------
def test_a_fact_in_both_the_summary_and_its_archive_is_found_once_in_the_summary(tmp_path: Path, make_memory) -> None:
    """The issue's report: after applying, `search redis` ranked the archived original (0.864) above its own
    summary (0.684), so one fact filled two hits."""
    write(tmp_path)
    memory = make_memory(tmp_path)
    apply_plan(memory, plan_compaction(memory, today=MAR1))
    summary = (tmp_path / "memory/summary-2026-W42.md").read_text()
    assert "Kafka topic `parcel.events` has 12 partitions" in summary
    for query in ["Kafka topic partitions retention", "parcel.events partitions"]:
        for settings in ({}, BM25):
            hits = memory.search(query, top_k=5, **settings)
            assert hits[0].source == "memory/summary-2026-W42.md", (query, hits)
            assert not [h for h in hits if h.archived and "parcel.events" in h.snippet], (query, hits)  # no 2nd hit
            both = memory.search(query, top_k=5, archived=True, **settings)  # asked for: after its summary
            sources = [h.source for h in both]
            assert sources.index("memory/summary-2026-W42.md") < sources.index("memory/archive/2026-10-14.md")
            original = next(h for h in both if h.archived and "parcel.events" in h.snippet)
            assert both[sources.index("memory/summary-2026-W42.md")].score >= original.score  # its score too
    dropped = memory.search("whole suite open issues machine", top_k=3, **BM25)  # what the summary left out
    assert dropped and all(h.archived for h in dropped)  # is still found in the archive


def test_the_summary_keeping_a_fact_word_for_word_comes_first_though_the_archive_matched_more(
    tmp_path: Path, make_memory
) -> None:
    """A user's report: "what limits do we apply per API key" ranked the archived log first (its heading said "Rate
    limiting", which the summary's section does not) and listed the summary after it: one fact, two hits."""
    write(tmp_path)
    (tmp_path / "memory/2026-10-15.md").write_text(
        "# 2026-10-15\n\n## 10:00 Rate limiting on the public API\n\nDecision: token bucket per API key, 600"
        " requests/minute burst 100,\nimplemented in the Envoy sidecar rather than in the app.\n" + NOISE,
        encoding="utf-8",
    )
    memory = make_memory(tmp_path)
    apply_plan(memory, plan_compaction(memory, today=MAR1))
    summary = (tmp_path / "memory/summary-2026-W42.md").read_text()
    assert "token bucket per API key" in summary and "Rate limiting" not in summary
    for settings in ({}, BM25):
        hits = memory.search("what rate limits do we apply per API key", top_k=5, **settings)
        assert hits[0].source == "memory/summary-2026-W42.md" and "token bucket" in hits[0].snippet, hits
        assert not [h for h in hits if h.archived and "token bucket" in h.snippet], hits  # no second hit
        both = memory.search("what rate limits do we apply per API key", top_k=5, archived=True, **settings)
        sources = [h.source for h in both]
        assert sources.index("memory/summary-2026-W42.md") < sources.index("memory/archive/2026-10-15.md"), both


def test_the_cli_searches_the_archive_with_archived(tmp_path: Path, fake_model, capsys, monkeypatch) -> None:
    write(tmp_path)
    assert cli.main(["compact", "-w", str(tmp_path)]) == 0
    capsys.readouterr()
    args = ["search", "-w", str(tmp_path), "--json", "-k", "5", "--vector-weight", "0", "parcel.events partitions"]
    assert cli.main(args) == 0
    plain = [h["source"] for h in json.loads(capsys.readouterr().out)["hits"]]
    assert cli.main([*args, "--archived"]) == 0
    both = [(h["source"], h["archived"]) for h in json.loads(capsys.readouterr().out)["hits"]]
    assert plain[0] == "memory/summary-2026-W42.md" and "memory/archive/2026-10-14.md" not in plain
    assert both[0] == ("memory/summary-2026-W42.md", False) and ("memory/archive/2026-10-14.md", True) in both


def test_a_person_in_the_summary_s_people_line_is_found_once_in_the_summary(tmp_path: Path, make_memory) -> None:
    """The People line sits in the summary's head (its title and intro), which links to no log: it speaks for the
    logs the summary links to, so the archived original naming the same person gives way to it."""
    write(tmp_path)
    tour = "# 2026-10-15\n\n## 10:00\n\nNoor (engineering manager) gave me the tour of the office and the kitchen.\n"
    (tmp_path / "memory/2026-10-15.md").write_text(tour + NOISE, encoding="utf-8")
    memory = make_memory(tmp_path)
    apply_plan(memory, plan_compaction(memory, today=MAR1))
    summary = (tmp_path / "memory/summary-2026-W42.md").read_text()
    assert "Noor (engineering manager)" in summary.split("\n## ")[0] and "the tour" not in summary  # People line only
    for settings in ({}, BM25):
        hits = memory.search("Noor engineering manager", top_k=5, **settings)
        assert hits[0].source == "memory/summary-2026-W42.md" and "Noor (engineering manager)" in hits[0].snippet, hits
        assert not [h for h in hits if h.archived and "Noor" in h.snippet], hits
        both = memory.search("Noor engineering manager", top_k=5, archived=True, **settings)
        assert [h for h in both if h.archived and "Noor" in h.snippet], both


def test_a_memory_md_in_another_language_gets_the_facts_under_its_own_sections(tmp_path: Path, make_memory) -> None:
    (tmp_path / "memory").mkdir(parents=True)
    (tmp_path / "memory/2026-10-12.md").write_text(
        "# 2026-10-12\n\n## 09:30\n\nDecidimos manter o PostgreSQL e não migrar para o DynamoDB.\n"
        "Regra do time: nunca rodar migrações a partir de um laptop.\n" + NOISE,
        encoding="utf-8",
    )
    (tmp_path / "memory/MEMORY.md").write_text("# Memória\n\n## Decisões\n\n- Kafka.\n\n## Regras\n\n- UTC.\n")
    plan = plan_compaction(make_memory(tmp_path), today=MAR1)
    assert [(p.section, p.kind) for p in plan.promotions] == [("Decisões", "decision"), ("Regras", "preference")]
    apply_plan(make_memory(tmp_path), plan)
    text = (tmp_path / "memory/MEMORY.md").read_text()
    assert "## Decisions" not in text and "## Preferences" not in text
    assert text.split("## Regras", 1)[1].startswith("\n\n- UTC.\n- nunca rodar migrações a partir de um laptop.")


SECRET_LOG = """# 2026-10-12

## 09:00

Decision: the staging database password is Kx9vQ2mZ7pLw3Tq and we use DB_PASSWORD=Kx9vQ2mZ7pLw3Tq everywhere.
Decision: we chose Postgres <private>because Bob's salary data PRIVSAL
lives there</private> for billing.
The user prefers <private>PRIVPREF secret</private> dark mode always.
We decided to store the token ghp_1234567890abcdefghijABCDEFGHIJ123456 in CI.
Decision: we always deploy on Tuesdays through the pipeline.
"""


def test_compaction_writes_no_secret_and_no_private_span(tmp_path: Path, fake_model, capsys) -> None:
    """Issue 38: redaction before anything is written, summaries too; a `<private>` span is never written. Neither
    a promotion to MEMORY.md nor a summary copies one from a log (a fact keeps its line in the archived log)."""
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory/2026-10-12.md").write_text(SECRET_LOG + NOISE, encoding="utf-8")
    assert cli.main(["compact", "-w", str(tmp_path), "--json"]) == 0
    promoted = json.loads(capsys.readouterr().out)["promoted"]
    written = (tmp_path / "memory/MEMORY.md").read_text() + (tmp_path / "memory/summary-2026-W42.md").read_text()
    for said in ("Kx9vQ2mZ7pLw3Tq", "ghp_", "PRIV", "private>", "salary"):
        assert said not in written, said
    assert "[redacted: github-token]" in written and "we chose Postgres" in written and "dark mode" in written
    archived = (tmp_path / "memory/archive/2026-10-12.md").read_text().splitlines()
    tuesday = next(p for p in promoted if "Tuesdays" in p["text"])  # a line after a span over two lines
    assert "deploy on Tuesdays" in archived[tuesday["line"] - 1] and f"#L{tuesday['line']})" in tuesday["text"]
    assert "PRIVSAL" in archived[5]  # the archive keeps the log as it was written
