#!/usr/bin/env bash
# Create .venv (if missing) and install tokend into it: with the dev extras by default,
# TOKEND_EXTRAS=test for the test extras only, TOKEND_EXTRAS=server for the service (what
# scripts/serve.sh asks), TOKEND_EXTRAS= (empty) for the client and in-process library only.
# Used by both README commands, so a fresh machine needs nothing else.
#
# pip is skipped when nothing that shapes the install changed since the last one (a stamp in
# .venv): the extras, the Python, TOKEND_REQUIRE_COMPILED, pyproject.toml, setup.py, the
# engine's sources (compiled into the extension: an edit there must rebuild it) and the list of
# package files, the inspector page's static files included (editable_mode=strict maps only the
# files known at install time). A runtime-only request is also satisfied by an install with
# extras, and a server one by the test or dev extras. TOKEND_FORCE_INSTALL=1 always runs pip.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
EXTRAS="${TOKEND_EXTRAS-dev}"
# Serialize concurrent set-ups of the same checkout (two pip runs in one venv corrupt it).
exec 9>".setup.lock"
flock 9
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
STAMP=.venv/.tokend-install-stamp
source_hash() {
  {
    .venv/bin/python -VV
    echo "require_compiled=${TOKEND_REQUIRE_COMPILED:-}"
    cat pyproject.toml setup.py
    find core/engine core/training -type f \( -name '*.pyx' -o -name '*.pxi' -o -name '*.h' -o -name '*.pyi' \) \
      | LC_ALL=C sort | xargs cat
    find core server client proto tokend_pkg -type f \( -name '*.py' -o -name '*.pyi' \
      -o -name '*.pyx' -o -name '*.pxi' -o -name '*.json' -o -name '*.gz' -o -name '*.proto' \
      -o -name 'py.typed' -o -name '*.yaml' \) -not -path '*/__pycache__/*' | LC_ALL=C sort
    if [ -d server/web/static ]; then  # the inspector page's files (package data)
      find server/web/static -type f | LC_ALL=C sort
    fi
  } | sha256sum | cut -d' ' -f1
}
want="$(source_hash)"
if [ "${TOKEND_FORCE_INSTALL:-0}" = 0 ] && [ -f "$STAMP" ]; then
  # The stamp holds "<hash> <extras>" lines, one per extras installed at that hash.
  # An install with extras also satisfies the runtime (""), and the test / dev extras
  # include the server's.
  if grep -qxF "$want $EXTRAS" "$STAMP" || { [ -z "$EXTRAS" ] && grep -q "^$want " "$STAMP"; } \
    || { [ "$EXTRAS" = server ] && grep -qE "^$want (test|dev)\$" "$STAMP"; }; then
    exit 0
  fi
fi
target="."
if [ -n "$EXTRAS" ]; then
  target=".[${EXTRAS}]"
fi
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip setuptools wheel
# The build backend's notices (the strict editable install's auxiliary folder) are not ours to
# act on; errors still show.
PYTHONWARNINGS="ignore::UserWarning" .venv/bin/python -m pip install -q \
  --disable-pip-version-check -e "$target" --config-settings editable_mode=strict
if [ -f "$STAMP" ] && grep -q "^$want " "$STAMP"; then
  echo "$want $EXTRAS" >> "$STAMP"
else
  echo "$want $EXTRAS" > "$STAMP"
fi
