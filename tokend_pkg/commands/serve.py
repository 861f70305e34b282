"""``tokend serve``: run the gRPC service (the service itself lands with the service issue)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("serve", help="run the gRPC tokenization service")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print("tokend serve: the gRPC service is not built yet (see the service issue).")
    return 0
