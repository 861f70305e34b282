"""The installed open models (``tokend models install``) against tiktoken's o200k_base, one thread.

For each installed version (llama3, llama4, qwen3, qwen3-2507, deepseek-v3, tekken-240718,
tekken-240911) tokend's ``Registry.load(name)`` then ``encode`` / ``count`` of never-seen
documents of 1 KB, 16 KB and 256 KB (consecutive slices of the held-out Shakespeare corpus; each
run takes slices no library has seen), after a 200 KB warm-up, in the same run as tiktoken's
o200k_base on the same documents, and fastokens / snaptokens loading the same tokenizer.json
beside them: DeepSeek's own file, or for a ``.tiktoken`` / Tekken version the byte-level
tokenizer.json tokend exports for it (same pattern and merges; without Qwen's NFC step, and with
rank-numbered ids for Tekken -- the same work, so the same speed).

Figures are MB/s of CPU time (``time.process_time``: every thread a library uses is counted;
the machine is shared), the median over ``--runs``; ratios are to o200k in the same run.

    .venv/bin/python bench/bench_installed.py                 # installs into a tmp registry
    .venv/bin/python bench/bench_installed.py --runs 3 --mb 0.5

Nothing here is a test: numbers depend on machine load (``uptime`` is printed beside them).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")

from texts import load_shakespeare
from tiktoken_offline import load_tiktoken

from tokend.core.formats.hf_bpe import format_hf_tokenizer_json
from tokend.core.install.bundles import BUNDLES
from tokend.core.install.installer import install_bundle
from tokend.core.install.wheels import WheelSource
from tokend.core.registry import Registry
from tokend.core.tokenizer import NormalizedEncoding, engine_path

REPO = Path(__file__).resolve().parent.parent
VERSIONS = ["llama3", "llama4", "qwen3", "qwen3-2507", "deepseek-v3", "tekken-240718",
            "tekken-240911"]
SIZES = [("1 KB", 1024), ("16 KB", 16 * 1024), ("256 KB", 256 * 1024)]
WARMUP = 200_000


def tokenizer_json(name: str, tok: Any) -> bytes:
    """The tokenizer.json the peers load: DeepSeek's own, else tokend's export."""
    if BUNDLES[name].fmt == "hf-json":
        wheel = REPO / ".test-data" / "wheels" / BUNDLES[name].wheel.filename
        with zipfile.ZipFile(wheel) as archive:
            return archive.read(BUNDLES[name].member)
    enc = tok.encoding if isinstance(tok, NormalizedEncoding) else tok
    return format_hf_tokenizer_json(ranks=enc._ranks, pat_str=enc._pat_str,
                                    special_tokens={})


def peers(data: bytes) -> dict[str, Callable[[str], Any]]:
    out: dict[str, Callable[[str], Any]] = {}
    try:
        import fastokens  # noqa: PLC0415

        fast = fastokens.Tokenizer.from_json_str(data.decode())
        out["fastokens"] = lambda t: fast.encode(t, add_special_tokens=False)
    except Exception as exc:
        print(f"  (fastokens cannot load it: {exc})")
    try:
        import snaptokens  # noqa: PLC0415

        snap = snaptokens.Tokenizer.from_json_str(data.decode())
        out["snaptokens"] = lambda t: snap.encode(t, add_special_tokens=False)
    except Exception as exc:
        print(f"  (snaptokens cannot load it: {exc})")
    return out


def rate(fn: Callable[[str], Any], docs: list[str]) -> float:
    """MB/s of CPU time over ``docs``, each seen once."""
    size = sum(len(d.encode()) for d in docs)
    start = time.process_time()
    for doc in docs:
        fn(doc)
    return size / (time.process_time() - start) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mb", type=float, default=0.5, help="MB of documents per size per run")
    parser.add_argument("--versions", default=",".join(VERSIONS))
    args = parser.parse_args()
    corpus = load_shakespeare()
    per_run = int(args.mb * 1e6)
    need = WARMUP + args.runs * len(SIZES) * per_run
    if len(corpus) < need:
        raise SystemExit(f"the corpus has {len(corpus)} characters, {need} needed: lower --mb")
    o200k = load_tiktoken("o200k_base")
    with tempfile.TemporaryDirectory(prefix="tokend-bench-") as tmp:
        registry = Registry(Path(tmp) / "registry")
        source = WheelSource([REPO / ".test-data" / "wheels"], download=False)
        print(f"load average before: {os.getloadavg()}")
        print("| installed version | engine path | document | tokend encode MB/s | "
              "x o200k | tokend count x o200k | fastokens x o200k | snaptokens x o200k | "
              "o200k MB/s |")
        print("|---|---|---|---|---|---|---|---|---|")
        for name in args.versions.split(","):
            install_bundle(registry, BUNDLES[name], source)
            _, tok = registry.load(name)
            _, counter = registry.load(name)  # its own cache: the documents are new to it too
            others = peers(tokenizer_json(name, tok))
            libs: dict[str, Callable[[str], Any]] = {
                "encode": tok.encode_ordinary,
                "count": lambda t, counter=counter: counter.count(t, disallowed_special=()),
                "o200k": o200k.encode_ordinary,
                **others,
            }
            warm = corpus[:WARMUP]
            for fn in libs.values():
                fn(warm)
            at = WARMUP
            results: dict[str, dict[str, list[float]]] = {label: {} for label, _ in SIZES}
            for _ in range(args.runs):
                for label, size in SIZES:
                    region = corpus[at:at + per_run]
                    at += per_run
                    docs = [region[i:i + size] for i in range(0, len(region) - size + 1, size)]
                    for lib, fn in libs.items():
                        results[label].setdefault(lib, []).append(rate(fn, docs))
            path = engine_path(tok)
            for label, _ in SIZES:
                med = {lib: statistics.median(v) for lib, v in results[label].items()}
                base = med["o200k"]

                def ratio(lib: str, med: dict[str, float] = med, base: float = base) -> str:
                    return f"{med[lib] / base:.2f}x" if lib in med else "-"

                print(f"| {name} | {path} | {label} | {med['encode']:.1f} | {ratio('encode')} "
                      f"| {ratio('count')} | {ratio('fastokens')} | {ratio('snaptokens')} "
                      f"| {base:.1f} |")
        print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
