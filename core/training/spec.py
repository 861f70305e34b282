"""What to train, as one checked description: the library, the CLI and the server all build a
:class:`TrainSpec` and call :meth:`TrainSpec.checked`, so every rule and every message lives here.

An error names the spec field it is about in its ``field`` attribute (``vocab_size``,
``special_tokens[1]``...); the server prefixes it with ``config.``, the CLI with nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tokend.core.engine.builtins import list_encoding_names
from tokend.core.errors import AlreadyExists, InvalidInput, LimitExceeded, TokendError, shown
from tokend.core.names import check_name
from tokend.core.patterns import DEFAULT_TRAIN_PATTERN, resolve_pattern
from tokend.core.training.utf8 import utf8_length

MODEL_KINDS = ("byte-bpe", "char", "word-bpe", "wordpiece", "unigram")
DEFAULT_MODEL = "byte-bpe"
DEFAULT_UNK_TOKEN = "[UNK]"
BYTE_TOKENS = 256  # byte-level BPE's first ids: one per byte value
# No family needs more: a bigger number is a typo (and a huge allocation for char/unigram).
MAX_VOCAB_SIZE = 1 << 22
# WordPiece's merge criteria (see ``wordpiece``): "gain" (the likelihood gain, default),
# "ratio" (count(ab) / (count(a) count(b)) alone) or "count" (count(ab), HF's trainer).
WORDPIECE_SCORES = ("gain", "ratio", "count")
DEFAULT_WORDPIECE_SCORE = "gain"


def _about(exc: TokendError, field: str) -> TokendError:
    """Tag ``exc`` with the spec field it is about (read by the server and the CLI)."""
    exc.field = field  # type: ignore[attr-defined]
    return exc


def check_model(model: object) -> str:
    """``model`` if it names a kind; InvalidInput naming ``model`` (bounded echo) otherwise."""
    if not isinstance(model, str) or model not in MODEL_KINDS:
        raise _about(InvalidInput(
            f"model {shown(str(model))} is not a tokenizer kind; choose one of "
            f"{', '.join(MODEL_KINDS)}"
        ), "model")
    return model


def check_wordpiece_score(score: object, model: str) -> str:
    """The WordPiece merge criterion for ``model``: ``score``, or the default when ``score`` is
    None or "" (``""`` for the other kinds, which take none).

    A score not in WORDPIECE_SCORES, or one given for another model (it would be ignored, so
    the caller surely meant something else), is InvalidInput naming ``wordpiece_score``.
    """
    if score is None or score == "":
        return DEFAULT_WORDPIECE_SCORE if model == "wordpiece" else ""
    if not isinstance(score, str) or score not in WORDPIECE_SCORES:
        raise _about(InvalidInput(
            f"wordpiece_score {shown(str(score))} is not a WordPiece score; choose one of "
            f"{', '.join(WORDPIECE_SCORES)}"
        ), "wordpiece_score")
    if model != "wordpiece":
        raise _about(InvalidInput(
            f"wordpiece_score applies to model wordpiece only, not {shown(model)}"
        ), "wordpiece_score")
    return score


def check_special_tokens(special_tokens: Iterable[str]) -> list[str]:
    """The special tokens as a list: non-empty strings, each once, encodable as UTF-8."""
    if isinstance(special_tokens, str):
        raise _about(InvalidInput(
            f"special_tokens must be a list of strings, not the string {shown(special_tokens)}; "
            f"write [{shown(special_tokens)}]"
        ), "special_tokens")
    specials: list[str] = []
    for i, token in enumerate(special_tokens):
        field = f"special_tokens[{i}]"
        if not isinstance(token, str) or not token:
            raise _about(InvalidInput(
                f"special token {i} is empty; special tokens must be non-empty strings, "
                f"got {token!r:.60}"
            ), field)
        if token in specials:
            raise _about(InvalidInput(f"special token {shown(token)} is listed twice"), field)
        try:
            utf8_length(token)  # refuses lone surrogates
        except InvalidInput as exc:
            raise _about(exc, field) from None
        specials.append(token)
    return specials


@dataclass(frozen=True)
class TrainSpec:
    """One training run: the kind, the vocabulary and every rule-bound option.

    ``pattern`` applies to ``byte-bpe``; ``unk_token`` to the other kinds (added in front of
    the special tokens unless listed there); ``wordpiece_score`` to ``wordpiece`` ("" means
    the default). ``name`` is where the result will be published (None: not published).

    >>> TrainSpec(vocab_size=300, special_tokens=("<s>",)).checked().minimum_vocab_size
    257
    """

    vocab_size: int
    special_tokens: tuple[str, ...] = ()
    model: str = DEFAULT_MODEL
    pattern: str = DEFAULT_TRAIN_PATTERN
    unk_token: str = DEFAULT_UNK_TOKEN
    wordpiece_score: str = ""
    name: str | None = None

    @property
    def trainer_specials(self) -> list[str]:
        """The special tokens the trainer adds: the unknown token first for the non-byte kinds."""
        specials = list(self.special_tokens)
        if self.model != "byte-bpe" and self.unk_token not in specials:
            specials.insert(0, self.unk_token)
        return specials

    @property
    def minimum_vocab_size(self) -> int:
        """The smallest vocabulary this spec can ask for (ids the kind always has, + 1 for
        the other kinds, which need room for at least one learned token)."""
        if self.model == "byte-bpe":
            return BYTE_TOKENS + len(self.special_tokens)
        return len(self.trainer_specials) + 1

    def checked(self) -> TrainSpec:
        """This spec with every rule checked and defaults resolved (the WordPiece score).

        Raises InvalidInput (AlreadyExists for a built-in's name, LimitExceeded above
        MAX_VOCAB_SIZE) naming the field in its message and its ``field`` attribute.
        """
        if self.name is not None:
            try:
                check_name(self.name)
            except TokendError as exc:
                raise _about(exc, "name") from None
            if self.name in list_encoding_names():  # refused now, not after the whole training
                raise _about(AlreadyExists(
                    f"{shown(self.name)} is a built-in encoding (read-only); choose another name"
                ), "name")
        specials = tuple(check_special_tokens(self.special_tokens))
        model = check_model(self.model)
        score = check_wordpiece_score(self.wordpiece_score, model)
        if model != "byte-bpe" and (not isinstance(self.unk_token, str) or not self.unk_token):
            raise _about(InvalidInput(
                f"unk_token must be a non-empty string, got {self.unk_token!r:.60}"
            ), "unk_token")
        spec = dataclasses.replace(self, special_tokens=specials, model=model,
                                   wordpiece_score=score)
        vocab_size = self.vocab_size
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
            raise _about(InvalidInput(f"vocab_size must be an int, got {vocab_size!r:.60}"),
                         "vocab_size")
        minimum = spec.minimum_vocab_size
        if vocab_size < minimum:
            if model == "byte-bpe":
                why = f"256 byte tokens + {len(specials)} special tokens"
            else:
                shown_specials = ", ".join(shown(s) for s in spec.trainer_specials[:4])
                more = ", ..." if len(spec.trainer_specials) > 4 else ""
                why = f"{minimum - 1} special tokens ({shown_specials}{more}), + 1"
            raise _about(InvalidInput(
                f"vocab_size is {vocab_size}, below the minimum {minimum} for model {model} "
                f"({why})"
            ), "vocab_size")
        if vocab_size > MAX_VOCAB_SIZE:
            raise _about(LimitExceeded("vocab_size", vocab_size, MAX_VOCAB_SIZE), "vocab_size")
        if not isinstance(self.pattern, str):
            raise _about(InvalidInput(f"pattern must be a string, got {self.pattern!r:.60}"),
                         "pattern")
        try:
            resolve_pattern(self.pattern)
        except TokendError as exc:
            raise _about(exc, "pattern") from None
        return spec

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON for job state and manifests."""
        out = dataclasses.asdict(self)
        out["special_tokens"] = list(self.special_tokens)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainSpec:
        """The spec :meth:`to_dict` wrote (unknown keys, e.g. a job's corpus path, ignored)."""
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        if "special_tokens" in values:
            values["special_tokens"] = tuple(values["special_tokens"])
        return cls(**values)
