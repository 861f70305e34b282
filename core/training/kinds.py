"""``train_tokenizer``: one entry point for every tokenizer family tokend trains.

Kinds (``model=``): ``byte-bpe`` (GPT-2 style, ``train_bpe``: the default), ``char``,
``word-bpe`` (Sennrich et al. 2016), ``wordpiece`` (BERT) and ``unigram`` (Kudo 2018, in
``tokend.core.training.unigram``). Every kind reads the same streamed corpora, reports
progress, honours ``should_stop``, and exports a tokenizer.json HF ``tokenizers`` loads with
the ids tokend serves.

The Unigram algorithm is ``tokend.core.training.unigram.train_unigram`` (its own docs in
docs/training.md); ``unigram_kind`` feeds it Metaspace word counts and exports its result.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from tokend.core.errors import InvalidInput, LimitExceeded, shown
from tokend.core.patterns import DEFAULT_TRAIN_PATTERN
from tokend.core.training.byte_bpe import TrainResult, check_special_tokens, train_bpe
from tokend.core.training.corpus import CorpusInput
from tokend.core.training.progress import ProgressFn, StopFn, Throttle

if TYPE_CHECKING:
    from tokend.core.training.result import TrainedTokenizer

MODEL_KINDS = ("byte-bpe", "char", "word-bpe", "wordpiece", "unigram")
DEFAULT_MODEL = "byte-bpe"
DEFAULT_UNK_TOKEN = "[UNK]"
# No family needs more: a bigger number is a typo (and a huge allocation for char/unigram).
MAX_VOCAB_SIZE = 1 << 22

_MODULES = {
    "char": ("tokend.core.training.char", "train_char"),
    "word-bpe": ("tokend.core.training.word_bpe", "train_word_bpe"),
    "wordpiece": ("tokend.core.training.wordpiece", "train_wordpiece"),
    "unigram": ("tokend.core.training.unigram_kind", "train_unigram_kind"),
}


def check_model(model: object) -> str:
    """``model`` if it names a kind; InvalidInput naming ``model`` (bounded echo) otherwise."""
    if not isinstance(model, str) or model not in MODEL_KINDS:
        raise InvalidInput(
            f"model {shown(str(model))} is not a tokenizer kind; choose one of "
            f"{', '.join(MODEL_KINDS)}"
        )
    return model


# WordPiece's merge criteria (see ``wordpiece``): "gain" (the likelihood gain, default),
# "ratio" (count(ab) / (count(a) count(b)) alone) or "count" (count(ab), HF's trainer). Kept
# here, not in ``wordpiece``, so the CLI and the server check a score without importing a
# trainer (the kinds themselves are imported only when one trains).
WORDPIECE_SCORES = ("gain", "ratio", "count")
DEFAULT_WORDPIECE_SCORE = "gain"


def check_wordpiece_score(score: object, model: str) -> str:
    """The WordPiece merge criterion for ``model``: ``score``, or the default when ``score`` is
    None or "" (``""`` for the other kinds, which take none).

    InvalidInput naming ``wordpiece_score`` (bounded echo) for a score not in
    WORDPIECE_SCORES, or one given for another model: it would be ignored, so the caller
    surely meant something else.
    """
    if score is None or score == "":
        return DEFAULT_WORDPIECE_SCORE if model == "wordpiece" else ""
    if not isinstance(score, str) or score not in WORDPIECE_SCORES:
        raise InvalidInput(
            f"wordpiece_score {shown(str(score))} is not a WordPiece score; choose one of "
            f"{', '.join(WORDPIECE_SCORES)}"
        )
    if model != "wordpiece":
        raise InvalidInput(
            f"wordpiece_score applies to model wordpiece only, not {shown(model)}"
        )
    return score


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
) -> TrainResult | TrainedTokenizer:
    """Train a tokenizer of kind ``model`` on ``corpus`` (paths or str chunks, as train_bpe).

    ``vocab_size`` counts every id (special tokens included). ``pattern`` and ``workers``
    apply to ``byte-bpe`` only; ``unk_token`` to the other kinds, which add it in front of
    ``special_tokens`` unless listed there. ``wordpiece_score`` (wordpiece only; None: the
    default ``"gain"``, the likelihood gain): ``"ratio"`` (count(ab) / (count(a) count(b))
    alone) or ``"count"`` (count(ab), HF's trainer), see ``wordpiece``.
    Semantics of each kind: ``docs/training.md``.

    >>> r = train_tokenizer(iter(["low lower lowest"]), 20, model="word-bpe")
    >>> r.merges[:2]
    [('l', 'o'), ('lo', 'w')]
    """
    kind = check_model(model)
    score = check_wordpiece_score(wordpiece_score, kind)
    if kind == "byte-bpe":
        return train_bpe(corpus, vocab_size, special_tokens, pattern=pattern,
                         workers=workers, progress=progress, should_stop=should_stop)
    specials = check_special_tokens(special_tokens)
    if not isinstance(unk_token, str) or not unk_token:
        raise InvalidInput(f"unk_token must be a non-empty string, got {unk_token!r}")
    if unk_token not in specials:
        specials.insert(0, unk_token)
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
        raise InvalidInput(f"vocab_size must be an int, got {vocab_size!r}")
    if vocab_size <= len(specials):
        raise InvalidInput(
            f"vocab_size is {vocab_size}, not above the {len(specials)} special tokens "
            f"({', '.join(shown(s) for s in specials[:4])}{', ...' if len(specials) > 4 else ''})"
        )
    if vocab_size > MAX_VOCAB_SIZE:
        raise LimitExceeded("vocab_size", vocab_size, MAX_VOCAB_SIZE)
    extra: dict[str, str] = {}
    if kind == "wordpiece":
        extra["score"] = score
    module_name, func_name = _MODULES[kind]
    train: Callable[..., TrainedTokenizer] = getattr(
        importlib.import_module(module_name), func_name
    )
    return train(corpus, vocab_size, specials, unk_token=unk_token,
                 throttle=Throttle(progress, should_stop), **extra)
