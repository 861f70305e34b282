"""Counting benchmark: count_chat, truncate and chunk vs the usual tiktoken recipes.

The peers are what people write with tiktoken: the cookbook's ``num_tokens_from_messages``;
"encode, keep the first N ids, decode" for truncation; "slide an N-id window with a step of
N - M ids and decode each window" for chunking. tokend does more per call — its cuts are
maximal, never split a character (the peers' decoded windows may carry U+FFFD) and chunks
prefer paragraph/sentence/word boundaries with char and byte offsets — so the table also says
how many of the peer's pieces are not valid text. Best and median of several repetitions after
a warm-up, in one process, o200k_base, on Shakespeare interleaved with German prose. "warm"
rows reuse tokend's encoding (its cache has seen the text, as in a long-running service);
"cold" rows give every repetition a fresh encoding with an empty cache (built outside the
timing). Nothing here is a test; numbers depend on the machine and its load.

    .venv/bin/python bench/bench_counting.py            # ~1 minute
    .venv/bin/python bench/bench_counting.py --quick
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tiktoken_offline import load_tiktoken  # bench/ is the script's directory

from tokend.core import Encoding, chunk, count_chat, get_encoding, truncate

REPO = Path(__file__).resolve().parent.parent


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """(best, median) seconds of ``fn`` after one warm-up call, and its last result."""
    result = fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times), result


def fresh(base: Encoding) -> Encoding:
    return Encoding("fresh", pat_str=base.pat_str, mergeable_ranks=base.mergeable_ranks,
                    special_tokens=base.special_tokens)


def timed_cold(fn: Callable[[Encoding], Any], base: Encoding, repeat: int
               ) -> tuple[float, float, Any]:
    """Like :func:`timed`, each call on a fresh encoding (empty caches)."""
    encodings = [fresh(base) for _ in range(repeat)]
    times, result = [], None
    for enc in encodings:
        start = time.perf_counter()
        result = fn(enc)
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times), result


def cookbook_count(enc: Any, messages: list[dict[str, str]]) -> int:
    total = 3
    for message in messages:
        total += 3
        for key, value in message.items():
            total += len(enc.encode(value, disallowed_special=()))
            total += key == "name"
    return total


def peer_windows(enc: Any, text: str, size: int, overlap: int) -> list[str]:
    ids = enc.encode(text, disallowed_special=())
    step = size - overlap
    return [enc.decode(ids[i:i + size]) for i in range(0, max(1, len(ids) - overlap), step)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeat = 3 if args.quick else 7
    corpus = gzip.decompress((REPO / "tests/fixtures/corpora/shakespeare.txt.gz").read_bytes())
    english = corpus.decode()
    german = (REPO / "tests/fixtures/corpora/german.txt").read_text(encoding="utf-8")
    size = 200_000 if args.quick else 1_000_000
    parts, i = [], 0
    while sum(map(len, parts)) < size:  # 4 KB of English, then 1 KB of German, ...
        parts += [english[i * 4096:(i + 1) * 4096], german[(i * 1024) % len(german):][:1024]]
        i += 1
    text = "".join(parts)[:size]
    enc, ref = get_encoding("o200k_base"), load_tiktoken("o200k_base")
    lines = [line for line in text.splitlines() if line.strip()][:400]
    messages = [{"role": "user" if i % 2 else "assistant", "content": line}
                for i, line in enumerate(lines)]

    rows: list[tuple[str, float, float, float, float, str]] = []
    best, med, ours = timed(lambda: count_chat(messages, model="gpt-4o").total, repeat)
    pbest, pmed, theirs = timed(lambda: cookbook_count(ref, messages), repeat)
    rows.append((f"count_chat, {len(messages)} messages", best, med, pbest, pmed,
                 f"same count: {ours == theirs}"))
    for budget in (1_000, 50_000):
        pbest, pmed, naive = timed(
            lambda b=budget: ref.decode(ref.encode(text, disallowed_special=())[:b]), repeat)
        for kind in ("warm", "cold"):
            if kind == "warm":
                best, med, cut = timed(lambda b=budget: truncate(enc, text, b), repeat)
            else:
                best, med, cut = timed_cold(lambda e, b=budget: truncate(e, text, b), enc,
                                            repeat)
            rows.append((f"truncate head to {budget:,} tokens ({kind})", best, med, pbest,
                         pmed, f"tokend count {cut.count}; peer ends in U+FFFD: "
                         f"{naive.endswith(chr(0xFFFD))}"))
    pbest, pmed, windows = timed(lambda: peer_windows(ref, text, 512, 64), repeat)
    broken = sum("\ufffd" in w for w in windows)
    for kind in ("warm", "cold"):
        if kind == "warm":
            best, med, pieces = timed(lambda: chunk(enc, text, 512, overlap=64), repeat)
        else:
            best, med, pieces = timed_cold(lambda e: chunk(e, text, 512, overlap=64), enc,
                                           repeat)
        rows.append((f"chunk 512 tokens, overlap 64 ({kind})", best, med, pbest, pmed,
                     f"{len(pieces)} vs {len(windows)} pieces; peer pieces with U+FFFD: "
                     f"{broken}"))

    print(f"text: {len(text):,} characters (Shakespeare + German), o200k_base, best/median of "
          f"{repeat}")
    print()
    print("| operation | tokend best / median ms | peer best / median ms | tokend/peer time "
          "(best) | notes |")
    print("|---|---:|---:|---:|---|")
    for name, b, m, pb, pm, note in rows:
        print(f"| {name} | {b * 1e3:.1f} / {m * 1e3:.1f} | {pb * 1e3:.1f} / {pm * 1e3:.1f} | "
              f"{b / pb:.2f}x | {note} |")


if __name__ == "__main__":
    main()
