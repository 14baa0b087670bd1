"""Shared fixtures: a copy of the example memory, a fake embedder and a Memory on real Milvus Lite."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memsearch_lsp.core.memory import Memory
from tests.fakes import FakeEmbedder

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "memory"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copytree(EXAMPLES, ws / "memory")
    return ws


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def make_memory(embedder: FakeEmbedder) -> Iterator[Callable[..., Memory]]:
    made: list[Memory] = []

    def make(ws: Path, emb: Any = None, **settings: Any) -> Memory:
        memory = Memory(ws, embedder=emb or embedder, **settings)
        made.append(memory)
        return memory

    yield make
    for memory in made:
        memory.close()
