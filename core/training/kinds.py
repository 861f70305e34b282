"""``train`` and ``train_tokenizer``: one entry point for every tokenizer family tokend trains.

Kinds (``TrainSpec.model``): ``byte-bpe`` (GPT-2 style, ``byte_bpe.train_bpe``: the default),
``char``, ``word-bpe`` (Sennrich et al. 2016), ``wordpiece`` (BERT) and ``unigram`` (Kudo 2018,
in ``tokend.core.training.unigram``). Every kind reads the same streamed corpora, reports
progress, honours ``should_stop``, returns a :class:`TrainedTokenizer` and exports a
tokenizer.json HF ``tokenizers`` loads with the ids tokend serves.

The Unigram algorithm is ``tokend.core.training.unigram.train_unigram`` (its own docs in
docs/training.md); ``unigram_kind`` feeds it Metaspace word counts and exports its result.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

from tokend.core.errors import InvalidInput
from tokend.core.patterns import DEFAULT_TRAIN_PATTERN
from tokend.core.training.byte_bpe import COUNTERS, train_bpe
from tokend.core.training.corpus import CorpusInput
from tokend.core.training.progress import ProgressFn, StopFn, Throttle
from tokend.core.training.result import TrainedTokenizer
from tokend.core.training.spec import DEFAULT_MODEL, DEFAULT_UNK_TOKEN, TrainSpec

_MODULES = {
    "char": ("tokend.core.training.char", "train_char"),
    "word-bpe": ("tokend.core.training.word_bpe", "train_word_bpe"),
    "wordpiece": ("tokend.core.training.wordpiece", "train_wordpiece"),
    "unigram": ("tokend.core.training.unigram_kind", "train_unigram_kind"),
}


def train(
    corpus: CorpusInput,
    spec: TrainSpec,
    *,
    workers: int | None = None,
    progress: ProgressFn | None = None,
    should_stop: StopFn | None = None,
    counter: str = "local",
    ray_address: str | None = None,
) -> TrainedTokenizer[Any]:
    """Train ``spec`` (checked here) on ``corpus`` (paths, ``s3://`` URLs or str chunks).

    ``workers``, ``counter`` and ``ray_address`` apply to ``byte-bpe``'s counting phase
    (``train_bpe``); ``progress(phase, done, total)`` and ``should_stop()`` to every kind.

    >>> r = train(iter(["low lower lowest"]), TrainSpec(20, model="word-bpe"))
    >>> r.merges[:2]
    [('l', 'o'), ('lo', 'w')]
    """
    spec = spec.checked()
    if spec.model == "byte-bpe":
        return train_bpe(corpus, spec.vocab_size, spec.special_tokens, pattern=spec.pattern,
                         workers=workers, progress=progress, should_stop=should_stop,
                         counter=counter, ray_address=ray_address)
    if counter != "local":
        raise InvalidInput(
            f"counter {counter!r:.60} counts byte-level BPE only, not model {spec.model}; "
            f"choose one of {', '.join(COUNTERS)} with model byte-bpe"
        )
    extra: dict[str, str] = {"score": spec.wordpiece_score} if spec.model == "wordpiece" else {}
    module_name, func_name = _MODULES[spec.model]
    trainer: Callable[..., TrainedTokenizer[str]] = getattr(
        importlib.import_module(module_name), func_name
    )
    return trainer(corpus, spec.vocab_size, spec.trainer_specials, unk_token=spec.unk_token,
                   throttle=Throttle(progress, should_stop), **extra)


def train_tokenizer(
    corpus: CorpusInput,
    vocab_size: int,
    special_tokens: Iterable[str] = (),
    *,
    model: str = DEFAULT_MODEL,
    pattern: str = DEFAULT_TRAIN_PATTERN,
    unk_token: str = DEFAULT_UNK_TOKEN,
    wordpiece_score: str | None = None,
    workers: int | None = None,
    progress: ProgressFn | None = None,
    should_stop: StopFn | None = None,
) -> TrainedTokenizer[Any]:
    """Train a tokenizer of kind ``model`` on ``corpus``: :func:`train` with a spec built from
    keyword arguments (see :class:`TrainSpec` for what each applies to; semantics of each
    kind: ``docs/training.md``).

    >>> r = train_tokenizer(iter(["low lower lowest"]), 20, model="word-bpe")
    >>> r.merges[:2]
    [('l', 'o'), ('lo', 'w')]
    """
    spec = TrainSpec(
        vocab_size,
        special_tokens,  # type: ignore[arg-type]  # any iterable: checked() makes the tuple
        model=model,
        pattern=pattern,
        unk_token=unk_token,
        wordpiece_score=wordpiece_score or "",
    )
    return train(corpus, spec, workers=workers, progress=progress, should_stop=should_stop)
