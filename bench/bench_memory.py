"""Resident memory under a stream of never-repeated words: tokend's caches stay bounded.

    .venv/bin/python bench/bench_memory.py                  # 256 MB per run (~10 minutes)
    .venv/bin/python bench/bench_memory.py --total-mb 1024  # the issue's 1 GB
    .venv/bin/python bench/bench_memory.py --total-mb 32 --no-plot   # a quick look

Each run is a fresh process (so RSS is its own) that builds one o200k_base Encoding with a
given ``cache_entries`` and counts documents of 64 KB of random lower-case words, 6-14
letters (26^6 and more: a word recurs with negligible odds), sampling its RSS (VmRSS) every
16 MB. A long-running worker that meets unique text (ids, base64, other languages) is what
this models: every block and nearly every word is a miss, so every cache fills to its bound.
The same stream goes through gigatoken 0.10.0 in its own process for contrast (its word cache
has no bound by default).

Prints a table (RSS after the first 10 MB, at the end, their ratio: the issue asks <= 1.2x)
and draws docs/memory.png (matplotlib). Numbers depend on the machine; see docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC_BYTES = 1 << 16
SAMPLE_EVERY = 16 << 20
FIRST = 10 << 20


def rss_mb() -> float:
    """This process's resident set (VmRSS), MB."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status (Linux only)")


def documents(seed: int):
    """Endless 64 KB documents of random lower-case words of 6-14 letters."""
    import numpy as np  # noqa: PLC0415 (a bench dependency only)

    rng = np.random.default_rng(seed)
    while True:
        lengths = rng.integers(6, 15, size=DOC_BYTES // 8)
        letters = rng.integers(97, 123, size=int(lengths.sum()) + len(lengths), dtype=np.uint8)
        ends = np.cumsum(lengths + 1) - 1
        letters[ends] = 32  # a space after each word
        yield letters.tobytes().decode("ascii")


def worker(library: str, cache_entries: int, total: int) -> None:
    """Stream ``total`` bytes through one encoder, printing JSON samples (MB in, RSS MB)."""
    os.environ["RAYON_NUM_THREADS"] = "1"
    if library == "tokend":
        from tokend.core import Encoding, get_encoding  # noqa: PLC0415

        base = get_encoding("o200k_base")
        enc = Encoding(
            "o200k_base",
            pat_str=base.pat_str,
            mergeable_ranks=base.mergeable_ranks,
            special_tokens=base.special_tokens,
            cache_entries=cache_entries,
        )
        del base
        count = enc.count
    else:
        import base64  # noqa: PLC0415
        import tempfile  # noqa: PLC0415

        import gigatoken  # noqa: PLC0415
        from tiktoken_offline import load_tiktoken  # noqa: PLC0415

        ranks = load_tiktoken("o200k_base")._mergeable_ranks
        path = Path(tempfile.mkdtemp()) / "o200k_base.tiktoken"
        with path.open("wb") as f:
            for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
                f.write(base64.b64encode(token) + b" %d\n" % rank)
        del ranks
        tok = gigatoken.Tokenizer.from_tiktoken(str(path))
        count = tok.encode
    done, next_sample, first_sampled = 0, SAMPLE_EVERY, False
    start = time.process_time()
    print(json.dumps({"mb": 0, "rss": rss_mb()}), flush=True)
    for doc in documents(cache_entries + 1):
        count(doc)
        done += len(doc)
        if not first_sampled and done >= FIRST:
            print(json.dumps({"mb": done / 1e6, "rss": rss_mb(), "first": True}), flush=True)
            first_sampled = True
        if done >= next_sample or done >= total:
            print(json.dumps({"mb": done / 1e6, "rss": rss_mb()}), flush=True)
            next_sample += SAMPLE_EVERY
        if done >= total:
            break
    print(json.dumps({"cpu_s": time.process_time() - start}), flush=True)


def run(library: str, cache_entries: int, total: int) -> dict[str, object]:
    """One worker process's samples."""
    out = subprocess.run(
        [sys.executable, __file__, "--worker", library, str(cache_entries), str(total)],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).parent,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    samples = [r for r in rows if "rss" in r]
    first = next(r["rss"] for r in samples if r.get("first"))
    cpu = next(r["cpu_s"] for r in rows if "cpu_s" in r)
    return {"samples": samples, "first": first, "last": samples[-1]["rss"], "cpu": cpu}


def plot(results: dict[str, dict[str, object]], out: Path, total_mb: float) -> None:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for label, res in results.items():
        samples = res["samples"]
        assert isinstance(samples, list)
        ax.plot([s["mb"] for s in samples], [s["rss"] for s in samples], label=label)
    ax.set_xlabel("MB of never-repeated words streamed (o200k_base, 64 KB documents)")
    ax.set_ylabel("resident memory (MB)")
    ax.set_title(f"RSS over a {total_mb:.0f} MB stream of unique words, one process each")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--total-mb", type=float, default=256)
    parser.add_argument("--settings", default="16384,65536,262144", help="cache_entries values")
    parser.add_argument("--no-gigatoken", action="store_true")
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument("--plot", type=Path, default=REPO / "docs" / "memory.png")
    args = parser.parse_args()
    if args.worker:
        library, entries, total = args.worker
        worker(library, int(entries), int(total))
        return
    total = int(args.total_mb * 1e6)
    results: dict[str, dict[str, object]] = {}
    for entries in (int(x) for x in args.settings.split(",")):
        results[f"tokend, cache_entries={entries:,}"] = run("tokend", entries, total)
    if not args.no_gigatoken:
        results["gigatoken 0.10.0 (default settings)"] = run("gigatoken", 0, total)
    print(
        f"\n{args.total_mb:.0f} MB of never-repeated words, load average {os.getloadavg()[0]:.2f}\n"
    )
    print("| run | RSS after 10 MB | RSS at the end | end / 10 MB | CPU s (MB/s) |")
    print("|---|---|---|---|---|")
    for label, res in results.items():
        first, last, cpu = res["first"], res["last"], res["cpu"]
        assert isinstance(first, float) and isinstance(last, float) and isinstance(cpu, float)
        print(
            f"| {label} | {first:.0f} MB | {last:.0f} MB | {last / first:.2f}x "
            f"| {cpu:.0f} ({args.total_mb / cpu:.1f}) |"
        )
    if not args.no_plot:
        plot(results, args.plot, args.total_mb)
        print(f"\nplot: {args.plot.relative_to(REPO)}")


if __name__ == "__main__":
    main()
