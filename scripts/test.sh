#!/usr/bin/env bash
# The project's test command (README "Quick start"): installs what it needs, then lints and tests
# the Python package, the Neovim plugin (headless, inside pytest) and the VS Code extension.
# The VS Code extension (from the start) and mypy (once Python is installed) run in the background
# beside the rest; their output is printed at the end under their own headings, and a failure of
# any step fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."

logs=$(mktemp -d)
names=() pids=()
background() {  # background NAME COMMAND...: run it with its output in $logs/NAME
  local name=$1; shift
  "$@" >"$logs/$name" 2>&1 &
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
  npm run compile
  npm run lint
  npm test
  npx --no-install vsce package
  npm run check-vsix
}
background vscode-extension vscode

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev]'
# The tests start the CLI and the server in a few hundred subprocesses: let them import the package
# from bytecode even where PYTHONDONTWRITEBYTECODE is set.
.venv/bin/python -m compileall -q memsearch_lsp

background mypy .venv/bin/mypy
echo "== ruff"; .venv/bin/ruff check .
# Property tests run derandomized (tests/conftest.py, profile "ci"); HYPOTHESIS_PROFILE=explore hunts.
# pytest-xdist: one worker per CPU, each test file on one worker (PYTEST_WORKERS=0 runs in-process).
echo "== pytest"
tests=0
HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-ci} .venv/bin/python -m pytest -q -p no:cacheprovider \
  -n "${PYTEST_WORKERS:-auto}" --dist loadfile --durations=20 "$@" || tests=$?
others=0
finish || others=1
[ "$tests" -eq 0 ] && [ "$others" -eq 0 ] || { echo "== FAILED"; exit 1; }
echo "== all checks passed"
