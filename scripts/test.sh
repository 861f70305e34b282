#!/usr/bin/env bash
# Install everything the tests need, then lint, type-check and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# A silent fall-back to the pure-Python engine must fail CI, not pass it.
export TOKEND_REQUIRE_COMPILED=1
# Hypothesis with fixed examples, so CI's verdict is reproducible (tests/conftest.py).
export TOKEND_HYPOTHESIS_PROFILE="${TOKEND_HYPOTHESIS_PROFILE:-ci}"
bash scripts/setup.sh
bash scripts/fetch-test-data.sh
if [ -f scripts/setup-test-tools.sh ]; then
  bash scripts/setup-test-tools.sh
fi
echo "== ruff"
.venv/bin/ruff check .
echo "== mypy"
.venv/bin/mypy -p tokend
echo "== pytest"
.venv/bin/python -m pytest "$@"
