"""Pretokenizer benchmark: the compiled scanner vs the ``regex`` module and the stdlib ``re`` twin.

Prints one table per text (shakespeare, ASCII prose; a mixed text of code, German, CJK, emoji and
numbers from texts.build_mixed): MB/s (UTF-8 bytes per second, best of --reps) and the
ratio to ``regex`` for

- scanner, scan only: ``count_pretokens`` (the loop the engine runs, no Python objects);
- scanner -> strs: ``pretokenize`` (the same, building the list of pretoken strs);
- scanner, counted: ``PretokenCounter.add`` (training's counting: the scan plus a C hash table);
- regex findall: ``compile_pattern(pattern)``, the reference (tiktoken-compatible pattern);
- re ASCII twin: ``compile_ascii_pattern(pattern)`` (ASCII text only).

    .venv/bin/python bench/bench_pretok.py [--reps 5] [--mixed-mb 2]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable

from texts import build_mixed, load_shakespeare  # bench/ is the script's directory

from tokend.core.engine._compiled import PretokenCounter, count_pretokens, pretokenize
from tokend.core.engine.pretokenize import (
    R50K_PATTERN,
    SCANNER_KINDS,
    compile_ascii_pattern,
    compile_pattern,
)
from tokend.core.patterns import CL100K_PATTERN, O200K_PATTERN

PATTERNS = {"o200k": O200K_PATTERN, "cl100k": CL100K_PATTERN, "r50k": R50K_PATTERN}


def best_seconds(fn: Callable[[str], object], text: str, reps: int) -> float:
    """Best CPU time of ``reps`` calls after one warm-up call."""
    fn(text)
    best = float("inf")
    for _ in range(reps):
        gc.collect()
        start = time.process_time()
        fn(text)
        best = min(best, time.process_time() - start)
    return best


def bench_text(label: str, text: str, reps: int) -> None:
    mb = len(text.encode("utf-8")) / 1e6
    print(f"\n{label}: {mb:.1f} MB, {'ASCII' if text.isascii() else 'non-ASCII'}")
    print(f"| {'pattern':<7} | {'method':<18} | {'MB/CPU-s':>8} | {'x regex':>7} |")
    print(f"|{'-' * 9}|{'-' * 20}|{'-' * 10}|{'-' * 9}|")
    for name, pattern in PATTERNS.items():
        kind = SCANNER_KINDS[pattern]
        methods: dict[str, Callable[[str], object]] = {
            "scanner, scan only": lambda t, k=kind: count_pretokens(k, t),
            "scanner -> strs": lambda t, k=kind: pretokenize(k, t),
            "scanner, counted": lambda t, k=kind: PretokenCounter(k).add(t),
            "regex findall": compile_pattern(pattern),
        }
        twin = compile_ascii_pattern(pattern)
        if twin is not None and text.isascii():
            methods["re ASCII twin"] = twin
        seconds = {method: best_seconds(fn, text, reps) for method, fn in methods.items()}
        for method, s in seconds.items():
            ratio = seconds["regex findall"] / s
            print(f"| {name:<7} | {method:<18} | {mb / s:8.1f} | {ratio:6.1f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--mixed-mb", type=float, default=2.0)
    args = parser.parse_args()
    bench_text("shakespeare", load_shakespeare(), args.reps)
    bench_text("mixed", build_mixed(int(args.mixed_mb * 1e6)), args.reps)


if __name__ == "__main__":
    main()
