"""Service-traffic benchmark: never-seen documents, repeats, a long shared prompt, RSS.

What a tokenization service meets all day, in one process, with peers measured in the same run
(tiktoken, riptoken when installed, HF ``tokenizers`` on a tokenizer.json tokend writes, and
tokend's two engines):

- *never-seen documents*: each engine's cache is first warmed on the first half of a corpus's
  documents; then every document of the second half is encoded once, one call each, for
  documents of ~0.3, 1, 4, 16 and 64 KB. Then *the same documents again*. tokend's count runs
  on a second instance warmed the same way, so its documents are new to it too.
- *whole file, cold*: a fresh encoding encodes the whole corpus once.
- *a long shared prompt*: a ~54k-token system prompt followed by a new question, one call per
  request (what agents and RAG services send).
- *RSS*: resident memory a loaded encoding adds to a fresh interpreter, after encoding 1 MB.

    .venv/bin/python bench/bench_traffic.py                 # o200k_base and cl100k_base
    .venv/bin/python bench/bench_traffic.py --quick         # smaller corpora

Times are CPU seconds of this process (``time.process_time``; every peer encodes on one
thread), best of ``--reps`` repetitions interleaved across libraries: on a shared machine
wall-clock time mostly measures the other jobs. Ratios are to tiktoken in the same run.
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tiktoken
from texts import build_mixed, load_shakespeare  # bench/ is the script's directory
from tiktoken_offline import load_tiktoken
from tokenizers import Tokenizer

from tokend.core import Encoding, get_encoding, write_hf_tokenizer_json
from tokend.core.engine import COMPILED_AVAILABLE

try:
    import riptoken
except ImportError:  # optional peer
    riptoken = None

SIZES_KB = (0.3, 1, 4, 16, 64)
Encoder = Callable[[str], Any]


def documents(text: str, size: int, limit_bytes: int) -> list[str]:
    """``text`` cut into documents of about ``size`` bytes (at a whitespace), at most
    ``limit_bytes`` in all."""
    docs: list[str] = []
    start = 0
    total = 0
    while start < len(text) and total < limit_bytes:
        end = text.find(" ", start + size)
        end = len(text) if end < 0 else end
        docs.append(text[start:end])
        total += len(docs[-1].encode())
        start = end
    return docs


def fresh(name: str, engine: str) -> Encoding:
    base = get_encoding(name)
    return Encoding(
        name,
        pat_str=base.pat_str,
        mergeable_ranks=base.mergeable_ranks,
        special_tokens=base.special_tokens,
        engine=engine,  # type: ignore[arg-type]
    )


def seconds(encode: Encoder, docs: list[str]) -> float:
    """CPU seconds to encode ``docs`` one call each."""
    gc.collect()
    start = time.process_time()
    for doc in docs:
        encode(doc)
    return time.process_time() - start


def peers(name: str, tmp: Path) -> dict[str, Callable[[], Encoder]]:
    """Library -> a factory of a fresh encode function (fresh caches for tokend)."""
    base = get_encoding(name)
    tk = load_tiktoken(name)
    out: dict[str, Callable[[], Encoder]] = {"tiktoken": lambda: tk.encode_ordinary}
    if riptoken is not None:
        core = riptoken.CoreBPE(base.mergeable_ranks, base.special_tokens, base.pat_str)
        out["riptoken"] = lambda: core.encode_ordinary
    path = tmp / f"{name}.json"
    write_hf_tokenizer_json(
        path, ranks=base.mergeable_ranks, pat_str=base.pat_str, special_tokens=base.special_tokens
    )
    hf = Tokenizer.from_file(str(path))
    out["HF tokenizers"] = lambda: lambda text: hf.encode(text, add_special_tokens=False).ids
    engines = ["compiled", "python"] if COMPILED_AVAILABLE else ["python"]
    for engine in engines:
        out[f"tokend {engine}"] = lambda engine=engine: fresh(name, engine).encode_ordinary
        out[f"tokend {engine} count"] = lambda engine=engine: fresh(name, engine).count
    return out


def traffic(label: str, text: str, name: str, limit: int, tmp: Path, *, reps: int) -> None:
    """The never-seen / repeated table for one corpus."""
    libs = peers(name, tmp)
    half = len(text) // 2
    print(f"\n### {label}, {name}: never-seen documents, one call each (MB/s; x tiktoken)\n")
    print("| library | " + " | ".join(f"{kb:g} KB new | again" for kb in SIZES_KB) + " |")
    print("|---|" + "---:|---:|" * len(SIZES_KB))
    results: dict[str, list[tuple[float, float]]] = {lib: [] for lib in libs}
    for kb in SIZES_KB:
        size = int(kb * 1024)
        warm_docs = documents(text[:half], size, limit)
        new_docs = documents(text[half:], size, limit)
        mb = sum(len(d.encode()) for d in new_docs) / 1e6
        best: dict[str, tuple[float, float]] = {}
        for _ in range(reps):
            for lib, factory in libs.items():
                encode = factory()
                for doc in warm_docs:
                    encode(doc)
                first = seconds(encode, new_docs)
                again = seconds(encode, new_docs)
                old = best.get(lib, (1e9, 1e9))
                best[lib] = (min(old[0], first), min(old[1], again))
        for lib, (first, again) in best.items():
            results[lib].append((mb / first, mb / again))
    ref = results["tiktoken"]
    for lib, cells in results.items():
        parts = [
            f"{new:.1f} ({new / ref[i][0]:.2f}x) | {again:.1f} ({again / ref[i][1]:.2f}x)"
            for i, (new, again) in enumerate(cells)
        ]
        print(f"| {lib} | " + " | ".join(parts) + " |")
    sys.stdout.flush()


def whole_file(label: str, text: str, name: str, tmp: Path, reps: int) -> None:
    mb = len(text.encode()) / 1e6
    print(f"\n### {label}, {name}: whole file ({mb:.1f} MB), best of {reps} (MB/s; x tiktoken)\n")
    print("| library | cold (first encode) | warm (again) |")
    print("|---|---:|---:|")
    times: dict[str, tuple[float, float]] = {}
    libs = peers(name, tmp)
    for _ in range(reps):
        for lib, factory in libs.items():
            encode = factory()
            cold = seconds(encode, [text])
            warm = seconds(encode, [text])
            old = times.get(lib, (1e9, 1e9))
            times[lib] = (min(old[0], cold), min(old[1], warm))
    rows = [(lib, mb / cold, mb / warm) for lib, (cold, warm) in times.items()]
    tk_cold, tk_warm = rows[0][1], rows[0][2]
    for lib, cold, warm in rows:
        print(
            f"| {lib} | {cold:.1f} ({cold / tk_cold:.2f}x) | {warm:.1f} ({warm / tk_warm:.2f}x) |"
        )
    sys.stdout.flush()


def shared_prompt(text: str, name: str, tmp: Path, requests: int, reps: int) -> None:
    """A ~54k-token system prompt + a new question per request."""
    tk = load_tiktoken(name)
    prompt_end = 0
    while len(tk.encode_ordinary(text[:prompt_end])) < 54_000:
        prompt_end += 20_000
    prompt = text[:prompt_end]
    rng = random.Random(5)
    words = text[prompt_end : prompt_end + 200_000].split()
    questions = [
        f" Question {i}: " + " ".join(rng.choice(words) for _ in range(rng.randint(8, 40))) + "?"
        for i in range(requests)
    ]
    tokens = len(tk.encode_ordinary(prompt))
    print(f"\n### {name}: a {tokens:,}-token shared prompt + a new question, one call each\n")
    print("| library | ms per request | x tiktoken |")
    print("|---|---:|---:|")
    requests_text = [prompt + q for q in questions[1:]]
    best: dict[str, float] = {}
    libs = peers(name, tmp)
    for _ in range(reps):
        for lib, factory in libs.items():
            encode = factory()
            encode(prompt + questions[0])  # the first request primes any cache
            elapsed = seconds(encode, requests_text) * 1000 / len(requests_text)
            best[lib] = min(best.get(lib, 1e9), elapsed)
    rows = list(best.items())
    for lib, ms in rows:
        print(f"| {lib} | {ms:.2f} | {rows[0][1] / ms:.1f}x |")
    sys.stdout.flush()


RSS_PROBE = """
import sys
def rss_kb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
sys.path.insert(0, {bench!r})
lib, name, fill = sys.argv[1], sys.argv[2], sys.argv[3] == "fill"
text = open({corpus!r}, encoding="utf-8").read()
if not fill:
    text = text[:1_000_000]
import tiktoken, tokend.core.engine.encoding  # the libraries' code is not the encoding's memory
base = rss_kb()
if lib == "tiktoken":
    from tiktoken_offline import load_tiktoken
    enc = load_tiktoken(name); enc.encode_ordinary(text)
else:
    from tokend.core import get_encoding
    from tokend.core.engine import set_default_engine
    set_default_engine(lib)
    enc = get_encoding(name); enc.encode_ordinary(text); enc.encode_ordinary(text)
print(rss_kb() - base)
"""


def rss(name: str, text: str, tmp: Path) -> None:
    """RSS a loaded encoding adds (fresh interpreter each), after encoding 1 MB twice, and
    after the whole corpus twice (more than the default cache holds: the cache is full)."""
    corpus = tmp / "rss.txt"
    corpus.write_text(text, encoding="utf-8")
    code = RSS_PROBE.format(bench=str(Path(__file__).parent), corpus=str(corpus))
    print(f"\n### {name}: RSS added by one loaded encoding, default cache (MB)\n")
    print("| library | after 1 MB | x tiktoken | cache full | x tiktoken |")
    print("|---|---:|---:|---:|---:|")
    rows = []
    for lib in ["tiktoken", "compiled", "python"]:
        if lib == "compiled" and not COMPILED_AVAILABLE:
            continue
        sizes = []
        for fill in ("1mb", "fill"):
            out = subprocess.run(
                [sys.executable, "-c", code, lib, name, fill],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            sizes.append(int(out.split()[-1]) / 1024)
        rows.append((lib, sizes))
    for lib, (small, full) in rows:
        label = lib if lib == "tiktoken" else f"tokend {lib}"
        ref_small, ref_full = rows[0][1]
        ratios = f"{small / ref_small:.2f}x | {full:.0f} | {full / ref_full:.2f}x"
        print(f"| {label} | {small:.0f} | {ratios} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encodings", default="o200k_base,cl100k_base")
    parser.add_argument("--quick", action="store_true", help="smaller corpora")
    parser.add_argument("--limit-mb", type=float, default=1.0, help="new documents per size")
    parser.add_argument("--reps", type=int, default=3, help="repetitions (best is reported)")
    args = parser.parse_args()
    scale = 4 if args.quick else 1
    shakespeare = load_shakespeare()[: 5_000_000 // scale]
    mixed = build_mixed(4_000_000 // scale)
    limit = int(args.limit_mb * 1e6 / scale)
    print(
        f"python {sys.version.split()[0]}, tiktoken {tiktoken.__version__}, "
        f"riptoken {'yes' if riptoken else 'not installed'}, "
        f"max RSS so far {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB"
    )
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        for name in args.encodings.split(","):
            for label, text in (("shakespeare", shakespeare), ("mixed", mixed)):
                traffic(label, text, name, limit, tmp, reps=args.reps)
                whole_file(label, text, name, tmp, args.reps)
            shared_prompt(shakespeare, name, tmp, 30 if args.quick else 100, args.reps)
            rss(name, shakespeare, tmp)


if __name__ == "__main__":
    main()
