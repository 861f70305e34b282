"""The ``tokend`` command line: one entry point, one module per command group.

Each module in ``tokend.commands`` exposes ``register(subparsers)``, which adds its
subcommands and sets ``func`` (``argparse.Namespace -> int`` exit status) on each.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from tokend import __version__

# Command groups, each a module under tokend.commands with a ``register`` function.
COMMAND_MODULES: tuple[str, ...] = ("serve", "remote", "quoting", "train", "registry", "report",
                                     "models", "calibrate")


def build_parser() -> argparse.ArgumentParser:
    """Build the full parser; separate from ``main`` so tests can inspect it."""
    parser = argparse.ArgumentParser(
        prog="tokend", description="tiktoken-exact tokenization service and tools"
    )
    parser.add_argument("--version", action="version", version=f"tokend {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"tokend.commands.{name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command and return its exit status (non-zero with a one-line reason on refusal)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    status: int = func(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
