"""Regenerate the Python code of the gRPC contract from proto/ (the one command for it).

    .venv/bin/python scripts/gen_proto.py            # writes proto/tokend/v1/*_pb2*.py{,i}
    .venv/bin/python scripts/gen_proto.py --out DIR  # writes DIR/tokend/v1/... (tests diff this)
    .venv/bin/python scripts/gen_proto.py --go [--out DIR]   # client/go/tokendv1/*.pb.go

The Go code is committed (a Go module's users expect it) and made by Debian's protoc and
plugins (apt: protobuf-compiler protoc-gen-go protoc-gen-go-grpc; scripts/setup-test-tools.sh
installs them), whose versions it names in its headers; tests/client/test_go_client.py diffs it.

The generated modules import each other as ``tokend.v1``, the proto package, which
pyproject.toml maps onto ``proto/tokend/v1``. Never edit the generated files by hand.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from grpc_tools import protoc  # dev dependency (grpcio-tools)

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
PROTO_FILES = ["tokend/v1/tokenizer.proto", "tokend/v1/sentencepiece_model.proto"]
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")


def generate(out_dir: Path) -> list[Path]:
    """Run protoc (grpcio-tools + mypy-protobuf) into ``out_dir``; return the files written."""
    plugin = Path(sys.executable).parent / "protoc-gen-mypy"
    grpc_plugin = Path(sys.executable).parent / "protoc-gen-mypy_grpc"
    well_known = Path(protoc.__file__).parent / "_proto"
    out_dir.mkdir(parents=True, exist_ok=True)
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"-I{well_known}",
        f"--python_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        f"--plugin=protoc-gen-mypy={plugin}",
        f"--plugin=protoc-gen-mypy_grpc={grpc_plugin}",
        f"--mypy_out={out_dir}",
        f"--mypy_grpc_out={out_dir}",
        *PROTO_FILES,
    ]
    status = protoc.main(args)
    if status != 0:
        raise SystemExit(f"protoc failed with status {status}")
    return sorted(p for p in out_dir.rglob("*") if p.name.endswith(GENERATED_SUFFIXES))


GO_MODULE = "tokend.dev/client/go"  # go_package's prefix; client/go/go.mod's module
GO_TOOLS = ("protoc", "protoc-gen-go", "protoc-gen-go-grpc")


def generate_go(out_dir: Path) -> list[Path]:
    """Run Debian's protoc with protoc-gen-go and protoc-gen-go-grpc into ``out_dir`` (the
    module root: files land in ``out_dir/tokendv1``); return the files written."""
    missing = [tool for tool in GO_TOOLS if shutil.which(tool) is None]
    if missing:
        raise SystemExit(f"{', '.join(missing)} not found: apt-get install protobuf-compiler "
                         "protoc-gen-go protoc-gen-go-grpc (or scripts/setup-test-tools.sh)")
    out_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["protoc", f"-I{PROTO_ROOT}", f"--go_out={out_dir}", f"--go_opt=module={GO_MODULE}",
         f"--go-grpc_out={out_dir}", f"--go-grpc_opt=module={GO_MODULE}", *PROTO_FILES],
        check=True,
    )
    return sorted(out_dir.rglob("*.pb.go"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="output root (default: proto/)")
    parser.add_argument("--go", action="store_true",
                        help="generate the Go code (default --out: client/go)")
    args = parser.parse_args()
    if args.go:
        for path in generate_go(args.out or ROOT / "client" / "go"):
            print(path)
        return 0
    if args.out is not None:
        for path in generate(args.out):
            print(path)
        return 0
    staging = ROOT / "build" / "proto-gen"
    shutil.rmtree(staging, ignore_errors=True)
    for path in generate(staging):
        target = PROTO_ROOT / path.relative_to(staging)
        shutil.copyfile(path, target)
        print(target.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
