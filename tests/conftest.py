"""Shared fixtures: a copy of the example memory, a fake embedder and a Memory on real Milvus Lite."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from hypothesis import HealthCheck, settings
from pytest_lsp import LanguageClient

from memsearch_lsp.core.memory import Memory
from tests.fakes import FakeEmbedder
from tests.helpers import CLIENTS, config, make_workspace

# Property tests: derandomized in CI (scripts/test.sh selects "ci"), so a run can only fail on a change
# of code; "explore" is the larger randomized run to hunt for new inputs (pin each one with @example):
#   HYPOTHESIS_PROFILE=explore .venv/bin/python -m pytest tests -k "chunks or reliability"
settings.register_profile("ci", max_examples=300, derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile(
    "explore", max_examples=4000, deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True, scope="session")
def _user_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No test reads or writes the real user's ~/.cache/memsearch-lsp (the bundled model's folder, fastembed's
    cache): one cache per test process (a pytest-xdist worker), inherited by the servers and CLIs it starts."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
        yield


@pytest.fixture(autouse=True)
def _user_config_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the real user's ~/.config/memsearch-lsp/config.toml, nor touches the user memory in
    ~/.local/share/memsearch-lsp (servers and hooks inherit this too)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg")))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))


@pytest.fixture(autouse=True)
def _no_relevance_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    """The relevance floor (search.min_score) is calibrated on a real model's cosines; the fake embedder's
    hashed words are not one, so tests run without it (servers inherit this too) unless they set it:
    tests/integration/test_rank.py checks the floor on its own (MIN_SCORE_ON)."""
    monkeypatch.setenv("MEMSEARCH_SEARCH_MIN_SCORE", "0")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A copy of the example memory (tests/helpers.py make_workspace)."""
    return make_workspace(tmp_path)


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


async def _serve(client: LanguageClient, request: pytest.FixtureRequest) -> AsyncIterator[None]:
    client.profile = request.param  # type: ignore[attr-defined]  # the client profile (tests/helpers.py)
    yield
    await client.shutdown_session()


@pytest_lsp.fixture(config=config(), params=CLIENTS)
async def lsp(lsp_client: LanguageClient, request: pytest.FixtureRequest):
    """The real server over stdio, once with Neovim's and once with VS Code's capabilities."""
    async for _ in _serve(lsp_client, request):
        yield


@pytest_lsp.fixture(config=config(), params=CLIENTS, scope="module")
async def shared_lsp(lsp_client: LanguageClient, request: pytest.FixtureRequest):
    """One real server per client profile for a whole module (as pygls's and esbonio's own suites do); the
    module's tests run in the module's event loop (`pytest.mark.asyncio(loop_scope="module")`)."""
    async for _ in _serve(lsp_client, request):
        yield


@pytest_lsp.fixture(config=config(), params=CLIENTS, loop_scope="module")
async def own_lsp(lsp_client: LanguageClient, request: pytest.FixtureRequest):
    """A server for one test of a module whose other tests share `shared_lsp` (other client capabilities)."""
    async for _ in _serve(lsp_client, request):
        yield


# The files that start servers or many subprocesses go first, so that the parallel workers of
# scripts/test.sh (one file per worker at a time) finish together instead of one waiting on the last big file.
HEAVY_FIRST = (
    "test_reliability_e2e.py",
    "test_lsp_compact.py",
    "test_lsp.py",
    "test_security_lsp.py",
    "test_model.py",
    "test_cli.py",
    "test_lsp_workspace.py",
    "test_reliability.py",
    "test_mcp.py",
    "test_nvim.py",
    "test_claude_code_hooks.py",
    "test_index.py",
    "test_embed_providers.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: n for n, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(HEAVY_FIRST)))  # stable: each file keeps its order
    # `@pytest.mark.clients(PROFILE)`: a test whose behaviour no client capability changes runs with that client
    # profile only (a server and an indexed folder less); the items of the other profile are deselected here,
    # before any fixture of theirs is set up.
    kept, dropped = [], []
    for item in items:
        marker = item.get_closest_marker("clients")
        params = getattr(getattr(item, "callspec", None), "params", {})
        profile = next((params[name] for name in ("lsp", "shared_lsp", "own_lsp") if name in params), None)
        (dropped if marker and profile is not None and profile not in marker.args else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
