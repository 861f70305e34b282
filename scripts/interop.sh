#!/usr/bin/env bash
# The Go, Java, C++, Node and Python clients against one fresh `tokend serve` (and a TLS one):
# a language x case table, exit 1 on any miss (scripts/interop.py; docs/clients.md).
# Needs scripts/setup.sh and scripts/setup-test-tools.sh (the Debian toolchains) first.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python scripts/interop.py "$@"
