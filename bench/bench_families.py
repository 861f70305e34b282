"""Every tokenizer family, single thread, on the mixed corpus: tokend vs the reference.

For each real file (fetched by scripts/fetch-tokenizer-files.sh) the same text is encoded by
tokend and by the family's reference in the same run: HF ``tokenizers`` for tokenizer.json
files, ``sentencepiece`` for .model files, Mistral's Tekkenizer (tiktoken inside) for Tekken.
Prints a markdown table (MB/s of CPU time, best of N after a warm-up; ratios tokend /
reference). CPU time (``time.process_time``), not wall time: the machine is shared, and both
sides run single-threaded in this process, so CPU seconds are what each spends.

    .venv/bin/python bench/bench_families.py            # 1 MB of mixed text, 3 repetitions
    .venv/bin/python bench/bench_families.py --mb 0.3 --repeat 2

"cold" is a fresh tokend tokenizer's first encode (its word cache empty); "warm" is the best
of the next encodes of the same text. Nothing here is a test: numbers depend on machine load.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sentencepiece
from mistral_common.tokens.tokenizers.tekken import Tekkenizer
from texts import build_mixed  # bench/ is the script's directory
from tokenizers import Tokenizer

from tokend.core.formats.files import load_file, sniff_format

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # one thread for HF as for tokend
FILES = Path(__file__).resolve().parent.parent / ".cache" / "tokenizer-files"
FAMILIES = [
    ("SentencePiece BPE (Mistral v1)", "mistral-v1.model"),
    ("SentencePiece BPE + user-defined (Mistral v3)", "mistral-v3.model"),
    ("Tekken (Mistral)", "tekken-240911.json"),
    ("byte-level BPE tokenizer.json (DeepSeek)", "deepseek.json"),
    ("WordPiece tokenizer.json (all-MiniLM-L6-v2)", "minilm-bert.json"),
    ("Unigram tokenizer.json (mon-tokenizer)", "mon-unigram.json"),
]


def reference(fmt: str, path: Path) -> tuple[str, Callable[[str], list[int]]]:
    """The family's own encoder for the file."""
    if fmt == "hf-json":
        tok = Tokenizer.from_file(str(path))
        tok.no_truncation()
        tok.no_padding()
        return "HF tokenizers", lambda t: tok.encode(t, add_special_tokens=False).ids
    if fmt == "sentencepiece":
        sp = sentencepiece.SentencePieceProcessor(model_file=str(path))
        return "sentencepiece", sp.encode
    logging.getLogger("mistral_common").setLevel(logging.WARNING)
    tek = Tekkenizer.from_file(path)
    return "mistral-common", lambda t: tek.encode(t, bos=False, eos=False)


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=1.0, help="size of the mixed text")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    text = build_mixed(int(args.mb * 1_000_000))
    mb = len(text.encode()) / 1e6
    print(f"mixed corpus: {mb:.2f} MB; best of {args.repeat}; one thread\n")
    print("| family | reference | tokend cold MB/s | tokend warm MB/s | reference MB/s "
          "| warm / reference | cold / reference |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for family, file in FAMILIES:
        path = FILES / file
        data = path.read_bytes()
        fmt = sniff_format(data) or "?"
        name, ref = reference(fmt, path)
        ours = load_file(fmt, data, name=file)
        # HF matches added tokens in the text ("[CLS]"); SentencePiece and Tekken never do.
        policy: dict[str, Any] = (
            {"allowed_special": "all"} if fmt == "hf-json" else {"disallowed_special": ()}
        )
        start = time.process_time()
        ids = ours.encode(text, **policy)
        cold = time.process_time() - start
        assert ids == ref(text), f"{file}: ids differ from {name}"
        warm = best(functools.partial(ours.encode, text, **policy), args.repeat)
        ref(text)
        theirs = best(functools.partial(ref, text), args.repeat)
        print(f"| {family} | {name} | {mb / cold:.2f} | {mb / warm:.2f} | {mb / theirs:.2f} "
              f"| {theirs / warm:.2f}x | {theirs / cold:.2f}x |")


if __name__ == "__main__":
    main()
