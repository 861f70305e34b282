"""Build the Go, Java, C++, Node and Python interop programs and run them against one fresh
``tokend serve`` (plus a TLS one); print a language x case table and fail on any miss.

    .venv/bin/python scripts/interop.py                 # every language
    .venv/bin/python scripts/interop.py --langs go,cpp  # some

Each program (interop/<lang>/) runs the same cases with the same inputs and prints
"case<TAB>result". The Python program (tokend.client) is the reference: its results are first
checked against tiktoken and the cases' own expectations, then every other language must
print exactly the same results. The compiled programs are built from Debian's packages only
(scripts/setup-test-tools.sh installs them; docs/clients.md lists them) into
.cache/interop/<lang>-<hash of the sources and tool versions>/, so a second run rebuilds
nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import google.rpc

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))
from tiktoken_reference import reference  # noqa: E402
from tls_certs import Certs  # noqa: E402
from tokend_process import ServedProcess, start_tokend  # noqa: E402

INTEROP = ROOT / "interop"
CACHE = ROOT / ".cache" / "interop"
LANGS = ("python", "node", "go", "cpp", "java")
CASES = ("count", "encode", "decode", "chunk", "encode_stream", "refused", "deadline",
         "request_id", "health", "tls")
GO_MODULE = "tokend.dev/client/go"
GOCODE = "/usr/share/gocode"  # Debian's Go sources (golang-*-dev packages)
JAVA_JARS = ("grpc-api", "grpc-core", "grpc-netty", "grpc-protobuf", "grpc-protobuf-lite",
             "grpc-stub", "grpc-context", "protobuf", "proto-google-common-protos", "guava",
             "netty-buffer", "netty-codec", "netty-codec-http", "netty-codec-http2",
             "netty-common", "netty-handler", "netty-resolver", "netty-transport",
             "netty-transport-native-unix-common", "perfmark-api", "gson",
             "geronimo-annotation-1.3-spec", "jsr305", "error_prone_annotations", "netty-tcnative")
TCNATIVE_SO = Path("/usr/lib/x86_64-linux-gnu/jni/libnetty-tcnative.so")  # libnetty-tcnative-jni
HINT = "run `bash scripts/setup-test-tools.sh` (installs the Debian toolchains)"
# The same inputs as every program's: the reference's own expectations.
STREAM_TEXT = "Grüße aus 日本 👍🏽 and more"
CHUNK_TEXT = "The quick brown fox jumps over the lazy dog. " * 6
REQUEST_ID = "interop-rid-42"
PROGRAM_SECONDS = 180  # one program's whole run (a JVM starting on a loaded machine)


def googleapis_protos() -> Path:
    """google/rpc/*.proto, from the googleapis-common-protos wheel (a grpcio-status dep)."""
    return Path(next(iter(google.rpc.__path__))).parent.parent


def run(command: list[str], **kwargs: object) -> str:
    """Run a build step; a failure names the command and shows its output."""
    result = subprocess.run(command, capture_output=True, text=True, check=False,
                            **kwargs)  # type: ignore[call-overload]
    if result.returncode != 0:
        raise SystemExit(f"interop: {' '.join(command)} failed ({result.returncode}):\n"
                         f"{result.stdout}{result.stderr}")
    return str(result.stdout) + str(result.stderr)


def need(*tools: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None and not Path(t).exists()]
    if missing:
        raise SystemExit(f"interop: {', '.join(missing)} not found: {HINT}")


def cache_dir(lang: str, sources: list[Path], versions: list[list[str]]) -> tuple[Path, bool]:
    """.cache/interop/<lang>-<hash>/ and whether a finished build is there."""
    digest = hashlib.sha256()
    for path in sorted(sources):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    for command in versions:
        digest.update(run(command).encode())
    folder = CACHE / f"{lang}-{digest.hexdigest()[:16]}"
    return folder, (folder / "built").exists()


def finish(folder: Path) -> None:
    """Mark a build done and drop the language's older builds (other hashes)."""
    (folder / "built").touch()
    lang = folder.name.rsplit("-", 1)[0]
    for old in CACHE.glob(f"{lang}-*"):
        if old != folder and old.name.rsplit("-", 1)[0] == lang:
            shutil.rmtree(old, ignore_errors=True)


def files(*roots: Path, suffix: str = "") -> list[Path]:
    return [p for root in roots for p in ([root] if root.is_file() else root.rglob(f"*{suffix}"))
            if p.is_file()]


def protos() -> list[Path]:
    return files(ROOT / "proto", INTEROP / "proto", suffix=".proto")


def build_go() -> list[str]:
    """GOPATH mode, offline: the module's path links to client/go; Debian's sources after it."""
    need("go")
    sources = files(ROOT / "client" / "go", INTEROP / "go")
    out, built = cache_dir("go", sources, [["go", "version"]])
    if not built:
        gopath = out / "gopath"
        link = gopath / "src" / GO_MODULE
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.is_symlink():
            link.symlink_to(ROOT / "client" / "go")
        env = {**os.environ, "GOPATH": f"{gopath}:{GOCODE}", "GO111MODULE": "off",
               "GOPROXY": "off", "GOFLAGS": "", "GOCACHE": str(CACHE / "go-build-cache")}
        run(["go", "build", "-o", str(out / "interop"), "."], cwd=INTEROP / "go", env=env)
        finish(out)
    return [str(out / "interop")]


def build_cpp() -> list[str]:
    """protoc + grpc_cpp_plugin, then one g++ (pkg-config grpc++ protobuf)."""
    need("protoc", "g++", "pkg-config", "/usr/bin/grpc_cpp_plugin")
    out, built = cache_dir("cpp", [*protos(), INTEROP / "cpp" / "interop.cc"],
                           [["protoc", "--version"], ["g++", "--version"],
                            ["pkg-config", "--modversion", "grpc++"]])
    if not built:
        gen = out / "gen"
        gen.mkdir(parents=True, exist_ok=True)
        api = googleapis_protos()
        run(["protoc", f"-I{ROOT / 'proto'}", f"-I{INTEROP / 'proto'}", f"--cpp_out={gen}",
             f"--grpc_out={gen}", "--plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin",
             "tokend/v1/tokenizer.proto", "grpc/health/v1/health.proto"])
        run(["protoc", f"-I{api}", f"--cpp_out={gen}", "google/rpc/status.proto",
             "google/rpc/error_details.proto"])
        flags = run(["pkg-config", "--cflags", "--libs", "grpc++", "protobuf"]).split()
        run(["g++", "-std=c++17", "-O0", f"-I{gen}", str(INTEROP / "cpp" / "interop.cc"),
             *map(str, gen.rglob("*.cc")), "-o", str(out / "interop"), *flags])
        finish(out)
    return [str(out / "interop")]


def java_classpath(classes: Path) -> str:
    jars = [Path("/usr/share/java") / f"{name}.jar" for name in JAVA_JARS]
    missing = [str(j) for j in jars if not j.exists()]
    if missing:
        raise SystemExit(f"interop: {', '.join(missing)} not found: {HINT}")
    return os.pathsep.join([str(classes), *map(str, jars)])


def build_java() -> list[str]:
    """protoc + grpc_java_plugin, then javac against Debian's jars (/usr/share/java)."""
    need("protoc", "javac", "java", "/usr/bin/grpc_java_plugin", str(TCNATIVE_SO))
    out, built = cache_dir("java", [*protos(), INTEROP / "java" / "Interop.java"],
                           [["protoc", "--version"], ["javac", "-version"]])
    classes = out / "classes"
    classpath = java_classpath(classes)
    if not built:
        gen = out / "gen"
        gen.mkdir(parents=True, exist_ok=True)
        classes.mkdir(exist_ok=True)
        run(["protoc", f"-I{ROOT / 'proto'}", f"-I{INTEROP / 'proto'}", f"--java_out={gen}",
             f"--grpc-java_out={gen}", "--plugin=protoc-gen-grpc-java=/usr/bin/grpc_java_plugin",
             "tokend/v1/tokenizer.proto", "tokend/v1/sentencepiece_model.proto",
             "grpc/health/v1/health.proto"])
        # subtle: Debian's proto-google-common-protos (1.16) predates google.rpc.ErrorInfo;
        # these classes, first on the classpath, are the current error_details.proto's.
        run(["protoc", f"-I{googleapis_protos()}", f"--java_out={gen}",
             "google/rpc/error_details.proto"])
        run(["javac", "-nowarn", "-d", str(classes), "-cp", classpath,
             *map(str, gen.rglob("*.java")), str(INTEROP / "java" / "Interop.java")])
        finish(out)
    # subtle: Debian's netty-handler is built without its JDK ALPN classes ("JDK provider does
    # not support ALPN protocol"), so gRPC over TLS needs OpenSSL through netty-tcnative. Its
    # JNI library loads only under netty's name for it (libnetty_tcnative.so; Debian installs
    # libnetty-tcnative.so, and the library refuses a symlink), hence a copy.
    jni = out / "jni"
    if not (jni / "libnetty_tcnative.so").exists():
        jni.mkdir(exist_ok=True)
        shutil.copyfile(TCNATIVE_SO, jni / "libnetty_tcnative.so.tmp")
        (jni / "libnetty_tcnative.so.tmp").rename(jni / "libnetty_tcnative.so")
    return ["java", f"-Djava.library.path={jni}", "-cp", classpath, "Interop"]


def build_node() -> list[str]:
    need("node")
    if not (ROOT / "client" / "node" / "node_modules" / "@grpc" / "grpc-js").is_dir():
        raise SystemExit(f"interop: client/node's npm packages are missing: {HINT}")
    return ["node", str(INTEROP / "node" / "interop.js"), str(googleapis_protos())]


def build_python() -> list[str]:
    return [sys.executable, str(INTEROP / "python" / "interop.py")]


BUILDERS: dict[str, Callable[[], list[str]]] = {
    "python": build_python, "node": build_node, "go": build_go, "cpp": build_cpp,
    "java": build_java,
}


def run_program(command: list[str], plain: ServedProcess, tls: ServedProcess,
                ca: Path) -> dict[str, str]:
    # GRPC_GO_RETRY=on: grpc-go before 1.40 (Debian's 1.33) applies retry policies only then.
    try:
        result = subprocess.run([*command, plain.target, tls.target, str(ca)],
                                capture_output=True, text=True, timeout=PROGRAM_SECONDS,
                                check=False, env={**os.environ, "GRPC_GO_RETRY": "on"})
    except subprocess.TimeoutExpired as err:
        return {"exit": f"ERROR no answer within {PROGRAM_SECONDS} s: {err.stdout!r}"}
    cells = dict(line.split("\t", 1) for line in result.stdout.splitlines() if "\t" in line)
    if result.returncode != 0 or set(cells) != set(CASES):
        cells.setdefault("exit", f"ERROR status {result.returncode}: {result.stderr[-2000:]}")
    return cells


def reference_misses(cells: dict[str, str]) -> dict[str, str]:
    """What the Python results get wrong against tiktoken and the cases' own expectations."""
    o200k = reference("o200k_base")  # tiktoken, over the shipped ranks
    special = "hello <|endoftext|> world"
    texts = ["hello world", "naïve café — 日本語 🙂"]
    want = {
        "encode": "ids=" + ",".join(map(str, o200k.encode(special, allowed_special="all"))),
        "decode": "text=" + special.encode().hex(),
        "encode_stream": "ids=" + ",".join(map(str, o200k.encode(STREAM_TEXT))),
        "refused": "code=INVALID_ARGUMENT field=texts[0] reason=DisallowedSpecialToken",
        "deadline": "code=DEADLINE_EXCEEDED",
        "request_id": f"id={REQUEST_ID}",
        "health": "status=SERVING",
        "tls": f"total={len(o200k.encode('hello world'))}",
    }
    misses = {case: f"want {value!r}" for case, value in want.items()
              if cells.get(case) != value}
    counts = ",".join(str(len(o200k.encode(t))) for t in texts)
    if not cells.get("count", "").startswith(f"counts={counts} "):
        misses["count"] = f"want counts={counts} (tiktoken)"
    if not cells.get("chunk", "").endswith(f",{len(CHUNK_TEXT)}"):
        misses["chunk"] = f"the last chunk must end at {len(CHUNK_TEXT)}"
    return misses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--langs", default=",".join(LANGS),
                        help=f"comma-separated, of {', '.join(LANGS)} (python always runs)")
    args = parser.parse_args()
    langs = ["python", *(lang for lang in args.langs.split(",") if lang != "python")]
    unknown = set(langs) - set(LANGS)
    if unknown:
        parser.error(f"unknown language(s): {', '.join(sorted(unknown))}")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tokend-interop-") as tmp, \
            ThreadPoolExecutor(max_workers=len(langs) + 2) as pool:
        base = Path(tmp)
        certs_dir = base / "certs"
        certs_dir.mkdir()
        certs = Certs(certs_dir)
        # The servers start while the programs build (both take seconds).
        plain_future = pool.submit(start_tokend, base / "plain", workers=1)
        tls_future = pool.submit(start_tokend, base / "tls", "--tls-cert", str(certs.server_cert),
                                 "--tls-key", str(certs.server_key), workers=1)
        builds = {lang: pool.submit(BUILDERS[lang]) for lang in langs}
        try:
            commands = {lang: future.result() for lang, future in builds.items()}
            built = time.monotonic()
            results = {lang: run_program(commands[lang], plain_future.result(),
                                         tls_future.result(), certs.ca) for lang in langs}
        finally:  # a failed build or a server that did not start: stop whichever started
            for future in (plain_future, tls_future):
                if future.exception() is None:
                    future.result().stop()
    reference = results["python"]
    misses: dict[tuple[str, str], str] = {
        ("python", case): why for case, why in reference_misses(reference).items()}
    for lang in langs[1:]:
        for case in CASES:
            got = results[lang].get(case, "(no result)")
            if got != reference.get(case):
                misses[(lang, case)] = f"{got!r} != python's {reference.get(case)!r}"
    for lang in langs:
        if "exit" in results[lang]:
            misses[(lang, "exit")] = results[lang]["exit"]
    width = max(map(len, CASES))
    print(f"{'':8}" + " ".join(f"{lang:>6}" for lang in langs))
    for case in CASES:
        cells = ("MISS" if (lang, case) in misses else "ok" for lang in langs)
        print(f"{case:<{width}} " + " ".join(f"{cell:>6}" for cell in cells))
    for (lang, case), why in sorted(misses.items()):
        print(f"MISS {lang} {case}: {why}")
    for case in CASES:
        print(f"  {case}: {reference.get(case)}")
    print(f"interop: {len(langs)} languages x {len(CASES)} cases, {len(misses)} misses; "
          f"build {built - started:.1f} s, total {time.monotonic() - started:.1f} s")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
