"""Encoder benchmark: tokend vs tiktoken, riptoken, HF tokenizers and puretiktoken.

One process, one rank table (o200k_base by default), the same texts for every library.
Prints markdown tables: MB/s (best and median of several repetitions after a warm-up) and the
ratio to tiktoken measured in the same run, then a "pathological inputs" table.

    .venv/bin/python bench/bench_encode.py            # full run (~3 minutes)
    .venv/bin/python bench/bench_encode.py --quick    # smaller texts, fewer repetitions

Times are CPU seconds of this process (``time.process_time``: every library encodes on one
thread), so other jobs on a shared machine disturb them less than wall-clock time. Nothing here
is a test; the numbers depend on the machine. Documents of realistic sizes met for the first
time, a long shared prompt and RSS are measured by ``bench_traffic.py``.

"Cold" is a fresh Encoding (default engine, empty cache) meeting the text for the first time;
"second sight" is the next encode of the same text; "warm" is every encode after that.
(With the pure-Python engine, ``TOKEND_ENGINE=python``, a long ASCII text's first sight takes
the direct route and leaves the chunk cache empty; its second sight fills it.)
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import puretiktoken
import riptoken
import tiktoken
from texts import build_mixed, load_shakespeare  # bench/ is the script's directory
from tiktoken_offline import load_tiktoken
from tokenizers import Tokenizer

from tokend.core import Encoding, get_encoding

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data" / "corpora"


def timed(fn: Callable[..., Any], reps: int, setup: Callable[[], Any] | None = None) -> list[float]:
    """Wall-clock seconds of ``reps`` calls; ``setup()`` runs untimed and is passed to ``fn``."""
    times = []
    for _ in range(reps):
        args = (setup(),) if setup else ()
        gc.collect()
        start = time.process_time()
        fn(*args)
        times.append(time.process_time() - start)
    return times


class Row:
    """One line of the table."""

    def __init__(self, library: str, operation: str, mb: float, times: list[float]) -> None:
        self.library = library
        self.operation = operation
        self.best = mb / min(times)
        self.median = mb / statistics.median(times)


def fresh_tokend(base: Encoding) -> Encoding:
    """A new Encoding with the default cache size and an empty cache."""
    return Encoding(
        base.name,
        pat_str=base.pat_str,
        mergeable_ranks=base.mergeable_ranks,
        special_tokens=base.special_tokens,
    )


def peers(name: str, tmp: Path) -> dict[str, tuple[Callable[[str], list[int]], Any, str]]:
    """Other libraries on the same table: name -> (encode, decode, note)."""
    out: dict[str, tuple[Callable[[str], list[int]], Any, str]] = {}
    base = get_encoding(name)
    if riptoken is not None:
        core = riptoken.CoreBPE(base.mergeable_ranks, base.special_tokens, base.pat_str)
        out["riptoken"] = (core.encode_ordinary, core.decode_bytes, "")
    else:
        print("note: riptoken is not installed", file=sys.stderr)
    try:
        from tokend.core import write_hf_tokenizer_json  # noqa: PLC0415 (owned by another module)

        path = tmp / f"{name}.tokenizer.json"
        write_hf_tokenizer_json(
            path,
            ranks=base.mergeable_ranks,
            pat_str=base.pat_str,
            special_tokens=base.special_tokens,
        )
        hf = Tokenizer.from_file(str(path))
        out["HF tokenizers"] = (
            lambda text: hf.encode(text, add_special_tokens=False).ids,
            lambda ids: hf.decode(ids, skip_special_tokens=False),
            "tokenizer.json written by tokend",
        )
    except Exception as exc:  # the table notes why a peer is missing
        print(f"note: HF tokenizers skipped ({exc})", file=sys.stderr)
    try:
        pure = puretiktoken.get_encoding(name)
        out["puretiktoken"] = (
            pure.encode_ordinary,
            pure.decode_bytes,
            "loads its own bundled copy of the ranks offline; keeps a piece cache",
        )
    except Exception as exc:
        print(f"note: puretiktoken cannot load {name} offline ({exc})", file=sys.stderr)
    return out


def bench_text(label: str, text: str, name: str, reps: int, tmp: Path) -> list[Row]:
    """Time every library on ``text``; repetitions are interleaved across libraries so that
    a change in machine load hits all of them alike."""
    mb = len(text.encode()) / 1e6
    print(f"\n## {label}: {mb:.2f} MB, {name}", file=sys.stderr)
    tk = load_tiktoken(name)
    expected = tk.encode(text)
    base = get_encoding(name)
    warm = fresh_tokend(base)
    if warm.encode(text) != expected or warm.count(text) != len(expected):
        raise SystemExit("tokend disagrees with tiktoken")

    # New text for a cache that has seen similar text: the second half of the text, encoded by
    # a fresh Encoding that has encoded the first half (a service meeting a new document).
    first_half, second_half = text[: len(text) // 2], text[len(text) // 2 :]

    def warmed_on_first_half() -> Encoding:
        enc = fresh_tokend(base)
        enc.encode(first_half)
        return enc

    def seen_once() -> Encoding:
        enc = fresh_tokend(base)
        enc.encode(text)  # a long ASCII text is encoded directly the first time
        return enc

    # (library, operation, fn, setup): setup() runs untimed and its result is passed to fn
    jobs: list[tuple[str, str, Callable[..., Any], Callable[[], Any] | None]] = [
        ("tiktoken", "encode", lambda: tk.encode(text), None),
        ("tiktoken", "count (len(encode))", lambda: len(tk.encode(text)), None),
        ("tiktoken", "decode", lambda: tk.decode(expected), None),
        ("tokend", "encode, cold cache", lambda enc: enc.encode(text), lambda: fresh_tokend(base)),
        ("tokend", "encode, second sight (fills the cache)", lambda e: e.encode(text), seen_once),
        ("tokend", "encode, warm cache", lambda: warm.encode(text), None),
        ("tokend", "count, warm cache", lambda: warm.count(text), None),
        (
            "tokend",
            "encode, new text (2nd half; cache warmed on the 1st)",
            lambda enc: enc.encode(second_half),
            warmed_on_first_half,
        ),
        ("tokend", "decode", lambda: warm.decode(expected), None),
    ]
    half_mb = {len(jobs) - 2: len(second_half.encode()) / 1e6}  # that row's MB
    for peer, (encode, decode, note) in peers(name, tmp).items():
        ids = encode(text)  # also the warm-up (peers with caches get theirs filled)
        suffix = "" if ids == expected else " (ids differ from tiktoken!)"
        if note:
            suffix += f" [{note}]"
        jobs.append((peer, "encode" + suffix, lambda fn=encode: fn(text), None))
        jobs.append((peer, "decode", lambda fn=decode: fn(expected), None))
    times: list[list[float]] = [[] for _ in jobs]
    for job in jobs:  # warm-up round
        timed(job[2], 1, job[3])
    for _ in range(reps):
        for k, (_, _, fn, setup) in enumerate(jobs):
            times[k] += timed(fn, 1, setup)
    print(f"tokend cache after the run: {warm.cache_info()}", file=sys.stderr)
    return [
        Row(lib, op, half_mb.get(k, mb), t)
        for k, ((lib, op, _, _), t) in enumerate(zip(jobs, times, strict=True))
    ]


def print_table(title: str, rows: list[Row]) -> None:
    tk = {r.operation.split(" ")[0]: r.best for r in rows if r.library == "tiktoken"}
    print(f"\n### {title}\n")
    print("| library | operation | best MB/s | median MB/s | vs tiktoken (best) |")
    print("|---|---|---:|---:|---:|")
    for r in rows:
        op = r.operation.split(",")[0].split(" ")[0]
        ref = tk.get(op) or tk.get("encode")
        ratio = f"{r.best / ref:.2f}x" if ref else ""
        print(f"| {r.library} | {r.operation} | {r.best:.1f} | {r.median:.1f} | {ratio} |")


def pathological(name: str, scale: int) -> None:
    """Long single pretokens: seconds for tokend and tiktoken, and tokend's linearity."""
    rng = random.Random(3)
    base = get_encoding(name)
    tk = load_tiktoken(name)
    size = 1_000_000 // scale
    cases = {
        "1 MB of 'a'": "a" * size,
        "1 MB of random a-z": "".join(
            rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(size)
        ),
        "1 MB of digits": "".join(rng.choice("0123456789") for _ in range(size)),
        "1 MB of random CJK": "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(size // 3)),
        "100,000 spaces": " " * (100_000 // scale),
        "1 MB of spaces": " " * size,
    }
    print(f"\n### Pathological inputs ({name}{', scaled down' if scale > 1 else ''})\n")
    print(
        "| input | tokend s | tokend s at 1/4 size | growth (4 = linear) "
        "| growth from 1/10 (10 = linear) | tiktoken s | same ids |"
    )
    print("|---|---:|---:|---:|---:|---:|---|")
    for label, text in cases.items():
        head = text[: len(text) // 4]
        quarter = min(timed(lambda enc, head=head: enc.encode(head), 1, lambda: fresh_tokend(base)))
        tenth_text = text[: len(text) // 10]
        tenth = min(timed(lambda enc, t=tenth_text: enc.encode(t), 3, lambda: fresh_tokend(base)))
        enc = fresh_tokend(base)  # built before the clock starts, like the quarter's
        start = time.process_time()
        ids = enc.encode(text)
        full = time.process_time() - start
        if label == "1 MB of spaces":
            # tiktoken 0.14 overflows its stack here (a crash, not an exception): not run.
            ok = "round-trips" if base.decode(ids) == text else "NO"
            growth = f"{full / quarter:.1f} | {full / max(tenth, 1e-6):.1f}"
            print(f"| {label} | {full:.2f} | {quarter:.2f} | {growth} | (crashes) | {ok} |")
            continue
        start = time.process_time()
        ref = tk.encode(text)
        tk_s = time.process_time() - start
        same = "yes" if ids == ref else "NO"
        growth = f"{full / quarter:.1f} | {full / max(tenth, 1e-6):.1f}"
        print(f"| {label} | {full:.2f} | {quarter:.2f} | {growth} | {tk_s:.2f} | {same} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoding", default="o200k_base")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="1/10 of the texts, 3 reps")
    parser.add_argument("--skip-pathological", action="store_true")
    parser.add_argument("--only-pathological", action="store_true")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    reps = 3 if args.quick else args.reps
    shakespeare = load_shakespeare()
    shakespeare = shakespeare[: len(shakespeare) // scale]
    mixed = build_mixed(2_000_000 // scale)
    print(
        f"python {sys.version.split()[0]}, tiktoken {tiktoken.__version__}, "
        f"{args.encoding}, {reps} reps after a warm-up"
    )
    if args.only_pathological:
        pathological(args.encoding, scale)
        return
    with tempfile.TemporaryDirectory() as tmp:
        for label, text in (("shakespeare", shakespeare), ("mixed", mixed)):
            rows = bench_text(label, text, args.encoding, reps, Path(tmp))
            print_table(f"{label} ({len(text.encode()) / 1e6:.2f} MB)", rows)
            sys.stdout.flush()
    if not args.skip_pathological:
        pathological(args.encoding, scale)


if __name__ == "__main__":
    main()
