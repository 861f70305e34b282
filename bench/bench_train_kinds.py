"""Training quality and speed of tokend's WordPiece vs Hugging Face's ``WordPieceTrainer``.

Same corpus (the first 90% of its lines), same vocabulary size, same pipeline (BERT uncased:
``BertNormalizer`` + ``BertPreTokenizer``, ``[UNK]``), held-out text = the last 10% of the lines.
Prints one table: tokens per byte of held-out text (lower is better) and its ratio to HF's,
training wall and CPU seconds (best of ``--repeat``; CPU = all threads of this process, HF's
trainer is multi-threaded) and their ratios. tokend runs every score (``gain``, the default,
the textbook ``ratio`` and HF's own criterion ``count``; docs/training.md).

    .venv/bin/python bench/bench_train_kinds.py                      # corpus.en, shakespeare
    .venv/bin/python bench/bench_train_kinds.py --vocab 1000 4000 8000 --repeat 3

Reads ``../shared/data/corpora`` (relative to the project root) and falls back to the copies in
``tests/fixtures/corpora`` when it is missing.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

from tokend.core.training import TrainedTokenizer, train_tokenizer
from tokend.core.training.spec import WORDPIECE_SCORES

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data" / "corpora"
FIXTURES = ROOT / "tests" / "fixtures" / "corpora"


def read_corpus(name: str) -> str:
    for path in (SHARED / name, FIXTURES / name, FIXTURES / f"{name}.gz"):
        if path.is_file():
            data = path.read_bytes()
            return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8")
    raise SystemExit(f"corpus {name} not found in {SHARED} or {FIXTURES}")


def split(text: str) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    cut = int(len(lines) * 0.9)
    return "".join(lines[:cut]), "".join(lines[cut:])


def best_of(repeat: int, fn: Callable[[], object]) -> tuple[object, float, float]:
    """(last result, best wall seconds, best CPU seconds)."""
    walls, cpus = [], []
    result: object = None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return result, min(walls), min(cpus)


def hf_wordpiece(train: str, vocab_size: int) -> Tokenizer:
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator([train], trainers.WordPieceTrainer(
        vocab_size=vocab_size, special_tokens=["[UNK]"], show_progress=False))
    return tok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", nargs="+", default=["corpus.en", "shakespeare.txt"])
    parser.add_argument("--vocab", nargs="+", type=int, default=[1000, 4000])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    print(f"{'corpus':<16} {'vocab':>6} {'trainer':<16} {'tok/byte':>8} {'vs HF':>6} "
          f"{'wall s':>7} {'cpu s':>7} {'wall x':>6} {'cpu x':>6}")
    tmp = tempfile.mkdtemp()  # the training split as a file: tokend streams it from disk
    try:
        run(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(args: argparse.Namespace, tmp: str) -> None:
    for name in args.corpus:
        train, held = split(read_corpus(name))
        held_bytes = len(held.encode("utf-8"))
        train_path = str(Path(tmp) / f"{name}.train")
        Path(train_path).write_text(train, encoding="utf-8")
        for vocab in args.vocab:
            hf, hf_wall, hf_cpu = best_of(args.repeat, partial(hf_wordpiece, train, vocab))
            assert isinstance(hf, Tokenizer)
            hf_tpb = len(hf.encode(held).ids) / held_bytes
            rows = [("HF WordPieceTrainer", hf_tpb, hf_wall, hf_cpu)]
            for score in WORDPIECE_SCORES:
                ours, wall, cpu = best_of(args.repeat, partial(
                    train_tokenizer, [train_path], vocab, model="wordpiece",
                    wordpiece_score=score))
                assert isinstance(ours, TrainedTokenizer)
                tpb = len(ours.to_encoding("bench").encode(held)) / held_bytes
                rows.append((f"tokend {score}", tpb, wall, cpu))
            for trainer, tpb, wall, cpu in rows:
                print(f"{name:<16} {vocab:>6} {trainer:<16} {tpb:>8.4f} {tpb / hf_tpb:>6.3f} "
                      f"{wall:>7.2f} {cpu:>7.2f} {wall / hf_wall:>6.2f} {cpu / hf_cpu:>6.2f}")


if __name__ == "__main__":
    main()
