"""tokend against every exact peer on never-seen documents (issue 30's table), one thread each.

    .venv/bin/pip install -e '.[bench]'       # the peers, pinned
    .venv/bin/python bench/bench_peers.py     # o200k_base and cl100k_base, 3 runs (~10 minutes)
    .venv/bin/python bench/bench_peers.py --encodings o200k_base --runs 1 --budget 32768  # quick

A user choosing a tokenizer meets documents it has never seen. So, per encoding:

1. every library is warmed on the first ``--warm`` bytes of the held-out corpus (shakespeare.txt
   from ../shared, else the test fixture) -- word caches fill with the corpus's common words;
2. each run cuts *fresh* documents of 1 KB .. 1 MB from the rest of the corpus (at line ends;
   ``--budget`` bytes of documents per size, one document at 1 MB) and every library encodes each
   document exactly once, in a rotating order;
3. "repeated" encodes the first run's documents again (second sight: what block caches are for).

Every id every library returns in a timed call is compared with tiktoken's afterwards (and on
the warm-up text before timing); a mismatch stops the script. Times are CPU seconds of this
process (``time.process_time``) with one thread forced for every library: RAYON_NUM_THREADS=1
(and OMP/MKL) set before any import, the process pinned to one CPU (``os.sched_setaffinity``).
Tables: MB/s (median of ``--runs``), then the ratios to tiktoken and to gigatoken ``encode``
measured in the same run. The numbers depend on the machine and its load; see docs/benchmarks.md.
"""

from __future__ import annotations

import os

for _var in ("RAYON_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TOKENIZERS_PARALLELISM"):
    os.environ[_var] = "false" if _var == "TOKENIZERS_PARALLELISM" else "1"

import argparse  # noqa: E402 (the thread settings must come before any peer's import)
import base64  # noqa: E402
import gc  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import fastokens  # noqa: E402
import gigatoken  # noqa: E402
import quicktok  # noqa: E402
import riptoken  # noqa: E402
import snaptokens  # noqa: E402
from texts import load_shakespeare  # noqa: E402 (bench/ is the script's directory)
from tiktoken_offline import load_tiktoken  # noqa: E402

from tokend.core import Encoding, get_encoding  # noqa: E402
from tokend.core.formats.hf_bpe import write_hf_tokenizer_json  # noqa: E402

SIZES = {"1 KB": 1 << 10, "4 KB": 1 << 12, "16 KB": 1 << 14, "64 KB": 1 << 16, "1 MB": 1 << 20}
# The GPT-4 pattern as Hugging Face's converted tokenizer.json files spell it: snaptokens
# refuses tiktoken's possessive spelling of cl100k's pattern; the ids are checked all the same.
HF_CL100K_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"""
    r""" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

Encode = Callable[[str], Any]  # a library's call: text -> ids (list, array) or a count


def one_cpu() -> str:
    """Pin the process to one CPU (the libraries' pools, if any, then share it)."""
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"pinned to CPU {cpu}"
    return "not pinned (no sched_setaffinity)"


def libraries(name: str, tmp: Path) -> dict[str, Encode]:
    """Every library's encode on ``name``, tiktoken first (the reference)."""
    tk = load_tiktoken(name)
    base = get_encoding(name)

    def td() -> Encoding:  # one Encoding per method: each call meets each document once
        return Encoding(
            name,
            pat_str=base.pat_str,
            mergeable_ranks=base.mergeable_ranks,
            special_tokens=base.special_tokens,
        )

    ranks_file = tmp / f"{name}.tiktoken"  # gigatoken and fastokens read the rank file
    with ranks_file.open("wb") as f:
        for token, rank in sorted(tk._mergeable_ranks.items(), key=lambda kv: kv[1]):
            f.write(base64.b64encode(token) + b" %d\n" % rank)
    giga = gigatoken.Tokenizer.from_tiktoken(str(ranks_file))
    giga_list = gigatoken.Tokenizer.from_tiktoken(str(ranks_file))  # its own word cache
    fast = fastokens.Tokenizer.from_tiktoken(
        str(ranks_file), pattern=tk._pat_str, special_tokens=dict(tk._special_tokens)
    )
    snap_json = tmp / f"{name}.json"
    write_hf_tokenizer_json(
        snap_json,
        ranks=tk._mergeable_ranks,
        pat_str=HF_CL100K_PATTERN if name == "cl100k_base" else tk._pat_str,
        special_tokens={},  # snaptokens wants contiguous ids; the corpus has no special text
    )
    snap = snaptokens.Tokenizer.from_file(str(snap_json))
    quick = quicktok.get_encoding(name)
    rip = riptoken.CoreBPE(dict(tk._mergeable_ranks), {}, tk._pat_str)
    libs: dict[str, Encode] = {
        "tiktoken `encode_ordinary`": tk.encode_ordinary,
        "gigatoken 0.10.0 `encode` (numpy)": giga.encode,
        "gigatoken `encode().tolist()`": lambda text: giga_list.encode(text).tolist(),
        "fastokens 0.3.5 `encode_ordinary().ids`": lambda text: fast.encode_ordinary(text).ids,
        "snaptokens 0.2.6 `encode().ids`": lambda text: snap.encode(text).ids,
        "quicktok-v1 0.4.0 `encode`": quick.encode,
        "riptoken 0.2.4 `encode_ordinary`": rip.encode_ordinary,
        "**tokend `encode`**": td().encode,
        "**tokend `encode_ordinary`**": td().encode_ordinary,
        "**tokend `count`**": td().count,
    }
    if hasattr(base, "encode_to_numpy"):
        libs["**tokend `encode_to_numpy`**"] = td().encode_to_numpy
    return libs


def as_list(result: Any) -> list[int] | int:
    """A call's result in a comparable form: a list of ids, or a count."""
    if isinstance(result, int):
        return result
    return result.tolist() if hasattr(result, "tolist") else list(result)


def check(library: str, got: Any, want: list[int], where: str) -> None:
    """Stop the script on any id (or count) that differs from tiktoken's."""
    got = as_list(got)
    if got != (len(want) if isinstance(got, int) else want):
        sys.exit(f"MISMATCH: {library} on {where} differs from tiktoken; no timing reported")


def documents(corpus: str, start: int, size: int, budget: int) -> tuple[list[str], int]:
    """Documents of about ``size`` bytes cut at line ends from ``corpus[start:]`` (ASCII-ish
    text: characters ~ bytes), ``budget`` bytes of them (at least one); and where they end."""
    docs: list[str] = []
    total = 0
    while total < max(budget, size):
        end = corpus.find("\n", start + size)
        end = len(corpus) if end < 0 else end + 1
        if start >= len(corpus):
            raise SystemExit("the corpus is too short for these sizes; lower --budget or --runs")
        docs.append(corpus[start:end])
        total += end - start
        start = end
    return docs, start


def time_docs(fn: Encode, docs: Sequence[str]) -> tuple[float, list[Any]]:
    """CPU seconds to encode every document once, and the results (checked later)."""
    out = []
    gc.collect()
    gc.disable()
    start = time.process_time()
    for doc in docs:
        out.append(fn(doc))
    elapsed = time.process_time() - start
    gc.enable()
    return elapsed, out


def run(name: str, args: argparse.Namespace, corpus: str, tmp: Path) -> None:
    libs = libraries(name, tmp)
    reference = libs["tiktoken `encode_ordinary`"]
    warm = corpus[: args.warm]
    want = reference(warm)
    for lib, fn in libs.items():  # warm-up on other text of the corpus, checked
        check(lib, fn(warm), want, "the warm-up text")
    sizes = {k: v for k, v in SIZES.items() if k in args.sizes}
    times: dict[tuple[str, str], list[float]] = {}
    mb: dict[str, float] = {}
    pos = args.warm
    first_docs: dict[str, list[str]] = {}
    order = list(libs)
    for r in range(args.runs):
        for label, size in sizes.items():
            docs, pos = documents(corpus, pos, size, args.budget)
            first_docs.setdefault(label, docs)
            mb[label] = sum(len(d.encode()) for d in docs) / 1e6  # the same per run, near enough
            wants = [reference(d) for d in docs]  # untimed; tiktoken is timed below like any
            rotated = order[r % len(order) :] + order[: r % len(order)]
            for lib in rotated:
                elapsed, outs = time_docs(libs[lib], docs)
                for i, got in enumerate(outs):
                    check(lib, got, wants[i], f"{label} document {i} of run {r}")
                times.setdefault((lib, label), []).append(mb[label] / elapsed)
        print(f"  run {r + 1}/{args.runs} done (load {os.getloadavg()[0]:.2f})", file=sys.stderr)
    repeated: dict[tuple[str, str], float] = {}
    for label, docs in first_docs.items():
        for lib in order:
            elapsed, _ = time_docs(libs[lib], docs)
            repeated[(lib, label)] = sum(len(d.encode()) for d in docs) / 1e6 / elapsed
    med = {k: statistics.median(v) for k, v in times.items()}
    labels = list(sizes)
    head = "| library | " + " | ".join(labels) + " |\n|---|" + "---|" * len(labels)
    print(f"\n### {name}: never-seen documents, MB/s (median of {args.runs} runs)\n\n{head}")
    for lib in order:
        print(f"| {lib} | " + " | ".join(f"{med[(lib, s)]:.1f}" for s in labels) + " |")
    for peer in ("tiktoken `encode_ordinary`", "gigatoken 0.10.0 `encode` (numpy)"):
        print(f"\n### {name}: never-seen documents, ratio to {peer}\n\n{head}")
        for lib in order:
            cells = (f"{med[(lib, s)] / med[(peer, s)]:.2f}x" for s in labels)
            print(f"| {lib} | " + " | ".join(cells) + " |")
    print(f"\n### {name}: repeated documents (second sight), MB/s and ratio to gigatoken\n")
    print(head)
    giga = "gigatoken 0.10.0 `encode` (numpy)"
    for lib in order:
        cells = (
            f"{repeated[(lib, s)]:.1f} ({repeated[(lib, s)] / repeated[(giga, s)]:.2f}x)"
            for s in labels
        )
        print(f"| {lib} | " + " | ".join(cells) + " |")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encodings", default="o200k_base,cl100k_base")
    parser.add_argument("--sizes", default=",".join(SIZES), help="comma list: " + ",".join(SIZES))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--budget", type=int, default=96 << 10, help="bytes per size and run")
    parser.add_argument("--warm", type=int, default=256 << 10, help="warm-up bytes")
    args = parser.parse_args(argv)
    args.sizes = [s.strip() for s in args.sizes.split(",")]
    pinned = one_cpu()
    corpus = load_shakespeare()
    print(
        f"Python {sys.version.split()[0]}, {pinned}, corpus {len(corpus) / 1e6:.1f} MB, "
        f"load average at start {os.getloadavg()[0]:.2f}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.encodings.split(","):
            run(name.strip(), args, corpus, Path(tmp))
    print(f"\nload average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
