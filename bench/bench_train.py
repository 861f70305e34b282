"""Training benchmark: tokend ``train_bpe`` vs Hugging Face ``tokenizers`` BpeTrainer.

Prints one table: best-of-N wall time per trainer, the ratio, tokend's phase breakdown and the
peak RSS of each run (every run is a fresh subprocess, so RSS is its own; for tokend the
counting workers' peak is shown after the "+"). HF uses the ByteLevel pre-tokenizer (the GPT-2
regex) and the same special token; both use every CPU they may.

    .venv/bin/python bench/bench_train.py                 # corpus.en/500, shakespeare/10,000
    .venv/bin/python bench/bench_train.py --big-mb 1024   # + generated 1 GB corpus to 32,000

Reads ``../shared/data/corpora`` (relative to the project root) and says so when it is missing.
The big corpus is generated in a temporary directory from shuffled words of those corpora
(realistic distinct pretokens), with ``<|endoftext|>`` between documents, and deleted after.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "corpora"
SPECIAL = "<|endoftext|>"


def run_one(trainer: str, path: str, vocab_size: int) -> dict[str, object]:
    """Train once in this process and return timings (imports excluded) and peak RSS (MB)."""
    phases: dict[str, float] = {}
    merges = 0
    if trainer == "tokend":
        from tokend.core.training.byte_bpe import train_bpe  # noqa: PLC0415 (RSS of this trainer only)

        def progress(phase: str, done: int, total: int) -> None:
            # the first report after counting: the counting workers have been reaped
            if phase != "count" and "count_cpu" not in phases:
                phases["count_cpu"] = cpu_seconds() - cpu_start

        cpu_start = cpu_seconds()
        start = time.perf_counter()
        result = train_bpe(path, vocab_size, [SPECIAL], pattern="gpt2",  # HF ByteLevel's regex
                           progress=progress)
        phases |= result.stats.seconds
        merges = len(result.merges)
    else:
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers  # noqa: PLC0415

        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        trainer_obj = trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=[SPECIAL],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        start = time.perf_counter()
        tok.train([path], trainer_obj)
        merges = tok.get_vocab_size() - 257
    seconds = time.perf_counter() - start
    cpu = cpu_seconds()
    self_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "phases": phases,
        "rss_mb": self_rss,
        "child_rss_mb": child_rss,
        "merges": merges,
    }


def cpu_seconds() -> float:
    """CPU time of this process and of its children that have been waited for."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def measure(trainer: str, path: Path, vocab_size: int, repeat: int) -> dict[str, object]:
    """Best of ``repeat`` runs, each in a fresh interpreter (after one warm-up for small runs)."""
    runs = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, __file__, "--one", trainer, str(path), str(vocab_size)],
            check=True,
            capture_output=True,
            text=True,
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    best = min(runs, key=lambda r: float(r["seconds"]))
    best["rss_mb"] = max(float(r["rss_mb"]) for r in runs)
    best["child_rss_mb"] = max(float(r["child_rss_mb"]) for r in runs)
    return best


def generate_corpus(target_mb: int, out: Path, seed: int = 0) -> int:
    """Write ~target_mb MB of shuffled corpus words, 8-20 words a line, ~200 words a document."""
    rng = random.Random(seed)
    words: list[str] = []
    for name in ("shakespeare.txt", "corpus.en", "tinystories_sample.txt"):
        words.extend((DATA / name).read_text("utf-8").replace(SPECIAL, " ").split())
    rng.shuffle(words)
    # Pre-build ~1 MB blocks of text once; each output MB is a random block, so the stream
    # has the words' natural frequencies without repeating one long period.
    blocks: list[str] = []
    pos = 0
    while pos < len(words):
        lines = []
        size = 0
        while size < (1 << 20) and pos < len(words):
            n = rng.randint(8, 20)
            line = " ".join(words[pos : pos + n])
            pos += n
            lines.append(line)
            size += len(line) + 1
            if rng.random() < 0.06:
                lines.append(SPECIAL)
        blocks.append("\n".join(lines) + "\n")
    written = 0
    with out.open("w", encoding="utf-8") as f:
        while written < target_mb << 20:
            block = rng.choice(blocks)
            f.write(block)
            written += len(block.encode("utf-8"))
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--one", nargs=3, metavar=("TRAINER", "PATH", "VOCAB"), help=argparse.SUPPRESS
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell (best is shown)")
    parser.add_argument("--big-mb", type=int, default=0, help="also train a generated corpus")
    parser.add_argument("--big-vocab", type=int, default=32000)
    parser.add_argument("--skip-small", action="store_true", help="only the generated corpus")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one[0], args.one[1], int(args.one[2]))))
        return 0
    if not DATA.is_dir():
        print(f"missing {DATA}: the benchmark corpora live in ../shared/data/corpora")
        return 1

    cases = [
        ("corpus.en", DATA / "corpus.en", 500),
        ("shakespeare", DATA / "shakespeare.txt", 10000),
    ]
    print(
        f"CPUs available: {len(os.sched_getaffinity(0))}, load average "
        f"{os.getloadavg()[0]:.1f}; best of {args.repeat} runs each\n"
    )
    header = (
        "| corpus | vocab | tokend s | HF s | HF/tokend | tokend count / index / merge s "
        "| tokend peak RSS MB (+workers) | HF peak RSS MB |"
    )
    print(header)
    print("|---|---:|---:|---:|---:|---|---:|---:|")
    for label, path, vocab in [] if args.skip_small else cases:
        ours = measure("tokend", path, vocab, args.repeat)
        hf = measure("hf", path, vocab, args.repeat)
        ph = ours["phases"]
        assert isinstance(ph, dict)
        print(
            f"| {label} | {vocab:,} | {ours['seconds']:.3f} | {hf['seconds']:.3f} "
            f"| {float(hf['seconds']) / float(ours['seconds']):.2f}x "
            f"| {ph['count']:.3f} / {ph['index']:.3f} / {ph['merge']:.3f} "
            f"| {ours['rss_mb']:.0f} (+{ours['child_rss_mb']:.0f}) | {hf['rss_mb']:.0f} |"
        )
    if args.big_mb:
        with tempfile.TemporaryDirectory() as tmp:
            big = Path(tmp) / "big.txt"
            size = generate_corpus(args.big_mb, big)
            ours = measure("tokend", big, args.big_vocab, 1)
            ph = ours["phases"]
            assert isinstance(ph, dict)
            print(
                f"\ngenerated corpus {size / 1e6:,.0f} MB -> vocab {args.big_vocab:,}: "
                f"{ours['seconds']:.1f} s wall, {ours['cpu_seconds']:.1f} CPU-s (count "
                f"{ph['count']:.1f} / index {ph['index']:.1f} / merge {ph['merge']:.1f}), "
                f"counting {ph['count_cpu']:.1f} CPU-s = {size / 1e6 / ph['count_cpu']:.1f} MB "
                f"per CPU-second, "
                f"peak RSS {ours['rss_mb']:.0f} MB main "
                f"+ {ours['child_rss_mb']:.0f} MB per counting worker, {ours['merges']} merges"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
