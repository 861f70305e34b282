#!/usr/bin/env bash
# Install tokend into .venv and run the service with the built-in encodings.
set -euo pipefail
cd "$(dirname "$0")/.."
TOKEND_EXTRAS="${TOKEND_EXTRAS:-test}" bash scripts/setup.sh
exec .venv/bin/tokend serve "$@"
