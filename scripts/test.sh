#!/usr/bin/env bash
# Install everything the tests need, then lint, type-check and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ -f scripts/setup-test-tools.sh ]; then
  bash scripts/setup-test-tools.sh
fi
echo "== ruff"
.venv/bin/ruff check .
echo "== mypy"
.venv/bin/mypy -p tokend
echo "== pytest"
.venv/bin/python -m pytest "$@"
