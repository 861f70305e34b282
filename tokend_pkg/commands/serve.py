"""``tokend serve``: run the gRPC tokenization service (supervisor + worker processes)."""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile

from tokend.server.config import add_arguments, config_from

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# What `pip install tokend` leaves out and the server needs (the `server` extra).
SERVER_MODULES = ("starlette", "uvicorn", "grpc_health", "grpc_reflection")


def missing_server_modules() -> list[str]:
    """The server extra's modules this Python cannot import (a client-only install)."""
    return [name for name in SERVER_MODULES if importlib.util.find_spec(name) is None]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the gRPC tokenization service",
        description="Serve tokend.v1.TokenizerService. Every flag also reads an environment "
        "variable (shown in brackets); a flag wins over the environment.",
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        config = config_from(args, os.environ)
    except ValueError as exc:
        print(f"tokend serve: {exc}", file=sys.stderr)
        return 2
    missing = missing_server_modules()
    if missing:
        print(
            f"tokend serve: the server is not installed (missing {', '.join(missing)}): "
            "pip install 'tokend[server]'",
            file=sys.stderr,
        )
        return 2
    # subtle: prometheus_client picks its multiprocess mode when it is first imported, so
    # the directory is set before importing the server (workers inherit it when spawned).
    own_dir = None
    if not os.environ.get(MULTIPROC_ENV):
        own_dir = tempfile.mkdtemp(prefix="tokend-metrics-")
        os.environ[MULTIPROC_ENV] = own_dir
    try:
        from tokend.server.supervisor import serve  # noqa: PLC0415 - after the env is set

        try:
            return serve(config)
        except (OSError, RuntimeError) as exc:
            print(f"tokend serve: {exc}", file=sys.stderr)
            return 1
    finally:
        if own_dir is not None:
            shutil.rmtree(own_dir, ignore_errors=True)
