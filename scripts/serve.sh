#!/usr/bin/env bash
# Install tokend with its server extra into .venv (skipped when nothing changed) and serve the built-ins.
set -euo pipefail
cd "$(dirname "$0")/.."
TOKEND_EXTRAS=server bash scripts/setup.sh
exec .venv/bin/tokend serve "$@"
