"""The public Python API says what it is: `open_memory` types as `MemoryApi`, `Memory` is the local one."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.helpers import ROOT


def test_the_package_exports_the_local_memory_and_the_typed_opener() -> None:
    import memsearch_lsp
    from memsearch_lsp.core.api import MemoryApi, Remembered
    from memsearch_lsp.core.memory import Memory

    assert memsearch_lsp.Memory is Memory  # the local implementation (it has .store and .indexer)
    assert memsearch_lsp.MemoryApi is MemoryApi and memsearch_lsp.Remembered is Remembered
    assert set(memsearch_lsp.__all__) >= {"Memory", "MemoryApi", "open_memory", "__version__"}


def test_type_checkers_see_what_open_memory_returns(tmp_path: Path) -> None:
    """What mypy infers is what the call returns: a MemoryApi (local or the owner's client), which has no
    `.store`; `Memory(...)` does. (The old public `Memory` claimed to be the local class and was not.)"""
    program = tmp_path / "agent.py"
    program.write_text(
        textwrap.dedent("""\
        import memsearch_lsp
        memory = memsearch_lsp.open_memory(".", top_k=3)
        reveal_type(memory)
        reveal_type(memory.remember("x"))
        memory.store
        reveal_type(memsearch_lsp.Memory(".").store)
    """)
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file=",
            "--ignore-missing-imports",
            "--follow-imports=silent",
            f"--cache-dir={tmp_path / 'cache'}",
            str(program),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "MYPYPATH": str(ROOT)},
    )
    out = result.stdout
    assert 'Revealed type is "memsearch_lsp.core.api.MemoryApi"' in out, out
    assert 'Revealed type is "memsearch_lsp.core.api.Remembered"' in out, out
    assert '"MemoryApi" has no attribute "store"' in out, out
    assert 'Revealed type is "memsearch_lsp.core.store.Store"' in out, out
