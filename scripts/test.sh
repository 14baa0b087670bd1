#!/usr/bin/env bash
# The project's test command (README "Quick start"): installs what it needs, then lints and tests
# the Python package, the Neovim plugin (headless, inside pytest) and the VS Code extension.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev]'

echo "== ruff"; .venv/bin/ruff check .
echo "== mypy"; .venv/bin/mypy
# Property tests run derandomized (tests/conftest.py, profile "ci"); HYPOTHESIS_PROFILE=explore hunts.
echo "== pytest"; HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-ci} .venv/bin/python -m pytest -q -p no:cacheprovider \
  --durations=20 "$@"

echo "== vscode-extension"
(
  cd vscode-extension
  npm ci --no-audit --no-fund
  npm run compile
  npm run lint
  npm test
  npx --no-install vsce package
  npm run check-vsix
)
echo "== all checks passed"
