#!/usr/bin/env bash
# Create .venv (if missing) and install tokend with its dev extras into it.
# Used by both README commands, so a fresh machine needs nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
# Serialize concurrent set-ups of the same checkout (two pip runs in one venv corrupt it).
exec 9>".setup.lock"
flock 9
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip setuptools wheel
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[${TOKEND_EXTRAS:-dev}]" \
  --config-settings editable_mode=strict
