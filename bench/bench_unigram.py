"""Unigram training benchmark: tokend ``train_unigram`` vs sentencepiece vs HF UnigramTrainer.

Prints one table per (corpus, vocab size): held-out tokens per byte (lower is better) and its
ratio to sentencepiece's, and training time (best of N; CPU seconds and wall seconds) with its
ratio to sentencepiece's. Every trainer sees the same lines: the corpus is cut into lines,
every 10th non-empty line is held out. sentencepiece trains with ``identity`` normalization and
``remove_extra_whitespaces=False`` (tokend does not normalize), one thread (tokend trains on
one core) and its defaults otherwise (coverage 0.9995, shrinking 0.75, 2 sub-iterations); tokend
and HF get the same lines, Metaspace-split (``▁`` for spaces, one per line start). Held-out
text is encoded line by line: sentencepiece by itself, tokend's result through its exported
tokenizer.json in HF ``tokenizers`` (ids equal to tokend's own pipeline, see
tests/core/training/test_unigram_export.py), HF by itself. tokend's time includes counting
the pretokens. ``tokend-spmseed`` is tokend with ``whole_word_seeds=False`` (SentencePiece's
own seeding, where a word always followed by a space is no seed candidate; docs/training.md).
``train_tokenizer`` is the whole entry point a user calls (``model="unigram"``) on the training
lines as one file (lines joined by ``\n``): it counts the words itself, line by line, the
newline kept at its line's end as HF's ``Tokenizer.train(files)`` reads lines. ``doc tok/byte``
encodes the held-out lines as one text joined by ``\n`` instead (a newline sentencepiece never
saw is one unknown token there).

    .venv/bin/python bench/bench_unigram.py                # corpus.en 1k, shakespeare 4 MB 1k/8k
    .venv/bin/python bench/bench_unigram.py --repeat 1 --mb 1

Reads ``../shared/data/corpora`` (relative to the project root) and says so when it is missing.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "corpora"
WS = "\u2581"


def split_lines(text: str) -> tuple[list[str], list[str]]:
    """(training lines, held-out lines): every 10th non-empty line is held out."""
    lines = [line for line in text.splitlines() if line.strip()]
    held = [line for i, line in enumerate(lines) if i % 10 == 9]
    train = [line for i, line in enumerate(lines) if i % 10 != 9]
    return train, held


def metaspace_counts(lines: list[str]) -> dict[str, int]:
    """Pretoken counts as HF's Metaspace (prepend_scheme always, split) makes them."""
    counts: collections.Counter[str] = collections.Counter()
    for line in lines:
        text = line.replace(" ", WS)
        if not text.startswith(WS):
            text = WS + text
        counts.update(WS + part for part in text.split(WS)[1:])
    return dict(counts)


def timed(fn: Callable[[], object]) -> tuple[object, float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - cpu, time.perf_counter() - wall


Row = tuple[int, int, float, float]  # held-out tokens (line by line, as one text), cpu, wall


def run_tokend(
    train: list[str], held: list[str], vocab: int, *, whole_word_seeds: bool = True
) -> Row:
    from tokenizers import Tokenizer  # noqa: PLC0415

    from tokend.core.training.unigram import train_unigram  # noqa: PLC0415

    result, cpu, wall = timed(lambda: train_unigram(
        metaspace_counts(train), vocab, whole_word_seeds=whole_word_seeds))
    tok = Tokenizer.from_str(json.dumps(result.tokenizer_json()))  # type: ignore[attr-defined]
    return hf_tokens(tok, held), len(tok.encode("\n".join(held)).ids), cpu, wall


def hf_tokens(tok: Any, held: list[str]) -> int:
    return sum(len(e.ids) for e in tok.encode_batch(held))


def run_train_tokenizer(train: list[str], held: list[str], vocab: int) -> Row:
    """``train_tokenizer(file, vocab, model="unigram")``: counting included, line by line."""
    from tokenizers import Tokenizer  # noqa: PLC0415

    from tokend.core.training import TrainedTokenizer, train_tokenizer  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.txt"
        path.write_text("\n".join(train) + "\n", encoding="utf-8")
        result, cpu, wall = timed(lambda: train_tokenizer(
            path, vocab, model="unigram", unk_token="<unk>"))
    assert isinstance(result, TrainedTokenizer)
    tok = Tokenizer.from_str(result.tokenizer_json_bytes().decode("utf-8"))
    return hf_tokens(tok, held), len(tok.encode("\n".join(held)).ids), cpu, wall


def run_sentencepiece(train: list[str], held: list[str], vocab: int) -> Row:
    import sentencepiece as spm  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as tmp:
        def fit() -> None:
            spm.SentencePieceTrainer.train(
                sentence_iterator=iter(train), model_prefix=f"{tmp}/m", vocab_size=vocab,
                model_type="unigram", normalization_rule_name="identity",
                remove_extra_whitespaces=False, num_threads=1, minloglevel=2,
            )

        _out, cpu, wall = timed(fit)
        sp = spm.SentencePieceProcessor(model_file=f"{tmp}/m.model")
        doc = len(sp.encode("\n".join(held)))
        return sum(len(ids) for ids in sp.encode(held)), doc, cpu, wall


def run_hf(train: list[str], held: list[str], vocab: int) -> Row:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers  # noqa: PLC0415

    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    trainer = trainers.UnigramTrainer(
        vocab_size=vocab, special_tokens=["<unk>"], unk_token="<unk>", show_progress=False
    )
    _out, cpu, wall = timed(lambda: tok.train_from_iterator(train, trainer))
    return hf_tokens(tok, held), len(tok.encode("\n".join(held)).ids), cpu, wall


def run_tokend_spm_seeds(train: list[str], held: list[str], vocab: int) -> Row:
    """tokend with SentencePiece's own seeding (whole_word_seeds=False, docs/training.md)."""
    return run_tokend(train, held, vocab, whole_word_seeds=False)


RUNNERS = {"sentencepiece": run_sentencepiece, "tokend": run_tokend,
           "tokend-spmseed": run_tokend_spm_seeds, "train_tokenizer": run_train_tokenizer,
           "hf": run_hf}


def bench(name: str, text: str, vocab: int, repeat: int) -> None:
    train, held = split_lines(text)
    held_bytes = sum(len(line.encode()) for line in held)
    doc_bytes = len("\n".join(held).encode())
    rows = {}
    for trainer, runner in RUNNERS.items():
        best: Row | None = None
        for _ in range(repeat):
            got = runner(train, held, vocab)
            if best is None or got[2] < best[2]:
                best = got
        assert best is not None
        rows[trainer] = best
    ref_tokens, ref_doc, ref_cpu, ref_wall = rows["sentencepiece"]
    print(f"\n{name}: {sum(len(x.encode()) + 1 for x in train):,} training bytes, "
          f"{held_bytes:,} held-out bytes, vocab {vocab:,} (best of {repeat})")
    print(f"{'trainer':<16}{'tokens/byte':>12}{'vs spm':>8}{'doc tok/byte':>13}{'vs spm':>8}"
          f"{'cpu s':>8}{'vs spm':>8}{'wall s':>8}{'vs spm':>8}")
    for trainer, (tokens, doc, cpu, wall) in rows.items():
        print(f"{trainer:<16}{tokens / held_bytes:>12.4f}{tokens / ref_tokens:>8.3f}"
              f"{doc / doc_bytes:>13.4f}{doc / ref_doc:>8.3f}"
              f"{cpu:>8.2f}{cpu / ref_cpu:>8.2f}{wall:>8.2f}{wall / ref_wall:>8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--mb", type=float, default=4.0, help="MB of shakespeare to use")
    args = parser.parse_args()
    if not DATA.is_dir():
        sys.exit(f"bench_unigram: {DATA} is missing (the shared corpora); nothing to measure")
    corpus_en = (DATA / "corpus.en").read_text(encoding="utf-8")
    shakespeare = (DATA / "shakespeare.txt").read_text(encoding="utf-8")
    shakespeare = shakespeare[: int(args.mb * 1e6)]
    bench("corpus.en", corpus_en, 1000, args.repeat)
    bench(f"shakespeare {args.mb:g} MB", shakespeare, 1000, args.repeat)
    bench(f"shakespeare {args.mb:g} MB", shakespeare, 8000, args.repeat)


if __name__ == "__main__":
    main()
