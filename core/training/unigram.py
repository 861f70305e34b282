"""Unigram language-model tokenizer training (Kudo 2018), as SentencePiece's unigram trainer.

From pretoken counts (text after Metaspace pre-tokenization: spaces are ``▁``, each pretoken
starts at one):

1. *Seed*: the required characters and the frequent substrings (``unigram_seed``).
2. *EM*: ``num_sub_iterations`` rounds of an E-step (expected piece counts by
   forward-backward over each pretoken's lattice) and a Bayesian M-step (pieces expected
   less than 0.5 times leave; score = digamma(count) - digamma(total)).
3. *Prune*: unless at most 1.1 x ``vocab_size`` pieces remain, keep the ``shrinking_factor``
   share of pieces whose removal would cost the most likelihood (the loss assumes every
   Viterbi use of the piece turns into its second-best segmentation); back to 2.
4. *Finalize*: every required character, then the best-scoring pieces up to ``vocab_size``.

Ids: the special tokens in the order given, the unknown token (unless it is one of them), the
256 byte pieces ``<0x00>``..``<0xFF>`` when ``byte_fallback``, then the pieces by descending
score. ``docs/training.md`` lists every choice and where it differs from SentencePiece.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tokend.core.errors import Cancelled, InvalidInput, shown
from tokend.core.training.unigram_kernel import (
    KernelName,
    Lattices,
    make_lattices,
    make_substrings,
)
from tokend.core.training.unigram_lattice import ALTERNATIVE, NEG_INF, REMOVABLE
from tokend.core.training.unigram_seed import (
    WHITESPACE,
    Seeds,
    char_table,
    required_characters,
    seed_pieces,
)

ProgressFn = Callable[[str, int, int], None]  # (phase, done, total)
StopFn = Callable[[], bool]

EXPECTED_FREQUENCY_THRESHOLD = 0.5  # SentencePiece's kExpectedFrequencyThreshold
MIN_SCORE_PENALTY_DELTA = 0.0001  # SentencePiece's kMinScorePenaltyDelta
UNK_TOKEN = "<unk>"
MAX_PIECE_LENGTH = 256  # characters; SentencePiece's default is 16


@dataclass(frozen=True)
class UnigramStats:
    """What training saw and did."""

    distinct_pretokens: int
    required_characters: int
    seed_pieces: int
    em_rounds: int  # prune rounds (each after num_sub_iterations EM steps)
    objective: float  # the last E-step's negative log-likelihood per pretoken occurrence
    kernel: str  # "compiled" or "python"
    seconds: dict[str, float] = field(default_factory=dict)  # phase -> wall seconds


@dataclass(frozen=True)
class UnigramResult:
    """A trained Unigram vocabulary: ``pieces[id] = (piece, log-prob score)``."""

    pieces: list[tuple[str, float]]
    unk_id: int
    special_tokens: list[str]  # in id order; the unknown token is among them
    byte_fallback: bool
    stats: UnigramStats

    @property
    def vocab(self) -> dict[str, int]:
        """piece -> id."""
        return {piece: i for i, (piece, _score) in enumerate(self.pieces)}

    def tokenizer_json(self) -> dict[str, Any]:
        """The HF ``tokenizer.json`` document: Unigram model, Metaspace pre-tokenizer/decoder."""
        metaspace = {"replacement": WHITESPACE, "prepend_scheme": "always", "split": True}
        decoder: dict[str, Any] = {"type": "Metaspace", **metaspace}
        if self.byte_fallback:
            decoder = {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, decoder]}
        vocab = self.vocab
        return {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [
                {
                    "id": vocab[token],
                    "content": token,
                    "single_word": False,
                    "lstrip": False,
                    "rstrip": False,
                    "normalized": False,
                    "special": True,
                }
                for token in self.special_tokens
            ],
            "normalizer": None,
            "pre_tokenizer": {"type": "Metaspace", **metaspace},
            "post_processor": None,
            "decoder": decoder,
            "model": {
                "type": "Unigram",
                "unk_id": self.unk_id,
                "vocab": [[piece, score] for piece, score in self.pieces],
                "byte_fallback": self.byte_fallback,
            },
        }


def digamma(x: float) -> float:
    """SentencePiece's digamma (recurrence to x >= 7, then the asymptotic series).

    >>> round(digamma(1.0), 6)  # -Euler-Mascheroni
    -0.577216
    """
    result = 0.0
    while x < 7:
        result -= 1 / x
        x += 1
    x -= 1.0 / 2.0
    xx = 1.0 / x
    xx2 = xx * xx
    xx4 = xx2 * xx2
    return (
        result
        + math.log(x)
        + (1.0 / 24.0) * xx2
        - (7.0 / 960.0) * xx4
        + (31.0 / 8064.0) * xx4 * xx2
        - (127.0 / 30720.0) * xx4 * xx4
    )


class _Clock:
    """Progress at most every 0.1 s per phase, should_stop at most every 0.05 s."""

    def __init__(self, progress: ProgressFn | None, should_stop: StopFn | None) -> None:
        self.progress, self.should_stop = progress, should_stop
        self.last_report, self.last_phase, self.last_check = 0.0, "", 0.0

    def tick(self, phase: str, done: int, total: int) -> None:
        now = time.monotonic()
        if self.progress is not None and (
            phase != self.last_phase or now - self.last_report >= 0.1 or done == total
        ):
            self.last_report, self.last_phase = now, phase
            self.progress(phase, done, total)
        if self.should_stop is not None and now - self.last_check >= 0.05:
            self.last_check = now
            if self.should_stop():
                raise Cancelled(f"training was cancelled during the unigram {phase} phase")


def _check_inputs(
    counts: Mapping[str, int], vocab_size: int, special_tokens: Sequence[str]
) -> None:
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1:
        raise InvalidInput(f"vocab_size must be a positive integer, got {shown(vocab_size)}")
    seen: set[str] = set()
    for token in special_tokens:
        if not isinstance(token, str) or not token:
            raise InvalidInput(f"a special token must be a non-empty string, got {shown(token)}")
        if token in seen:
            raise InvalidInput(f"special token {shown(token)} is given twice")
        seen.add(token)
    for word, count in counts.items():
        if not isinstance(word, str) or not word:
            raise InvalidInput(f"a pretoken must be a non-empty string, got {shown(word)}")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InvalidInput(
                f"the count of pretoken {shown(word)} must be a non-negative integer, "
                f"got {shown(count)}"
            )


def _m_step(scores: list[float], expected: Sequence[float], alive: list[int]) -> list[int]:
    """Bayesian M-step in place: drop pieces expected < 0.5 times, digamma-normalize the rest;
    returns the pieces still alive."""
    kept = [i for i in alive if expected[i] >= EXPECTED_FREQUENCY_THRESHOLD]
    for i in alive:
        if expected[i] < EXPECTED_FREQUENCY_THRESHOLD:
            scores[i] = NEG_INF
    log_total = digamma(sum(expected[i] for i in kept))
    for i in kept:
        scores[i] = digamma(expected[i]) - log_total
    return kept


def _prune(
    lattices: Lattices,
    scores: list[float],
    alive: list[int],
    *,
    first_word: Sequence[int],
    first_start: Sequence[int],
    desired: int,
    shrinking_factor: float,
    total_count: float,
) -> list[int]:
    """Keep the pieces whose removal loses the most likelihood (SentencePiece's
    PruneSentencePieces), marking the others -inf in place; returns the pieces kept."""
    min_score = min(scores[i] for i in alive)
    verdicts = lattices.second_best(
        scores, min_score, alive, [first_word[i] for i in alive], [first_start[i] for i in alive]
    )
    freq = lattices.viterbi_counts(scores, min_score)
    freq_sum = sum(freq[i] for i in alive)
    log_sum = math.log(freq_sum)
    kept: list[int] = []
    candidates: list[tuple[float, int]] = []
    for i, (kind, alternative) in zip(alive, verdicts, strict=True):
        if freq[i] == 0 or kind == REMOVABLE:
            continue  # not on any best path, or split by its own best path: safe to drop
        if kind != ALTERNATIVE:
            kept.append(i)  # nothing else can spell it
            continue
        share = freq[i] / total_count
        logprob = math.log(freq[i]) - log_sum
        # Without piece i, its uses go to its alternative's pieces: the total grows by
        # freq[i] * (len(alternative) - 1) and each alternative piece gains freq[i].
        log_sum_alt = math.log(freq_sum + freq[i] * (len(alternative) - 1))
        logprob_alt = sum(math.log(freq[n] + freq[i]) - log_sum_alt for n in alternative)
        candidates.append((share * (logprob - logprob_alt), i))
    pruned_size = max(desired, int(shrinking_factor * len(alive)))
    candidates.sort(key=lambda item: (-item[0], item[1]))
    for _loss, i in candidates:
        # subtle: equality, as SentencePiece: when the pieces that must stay are already more
        # than pruned_size, every candidate stays too.
        if len(kept) == pruned_size:
            break
        kept.append(i)
    keep = set(kept)
    for i in alive:
        if i not in keep:
            scores[i] = NEG_INF
    return sorted(keep)


def _finalize(
    seeds: Seeds, scores: list[float], size: int, meta: Sequence[str]
) -> list[tuple[str, float]]:
    """The required characters (a missing one gets just above the lowest score), then the
    best pieces, ``size`` in all, sorted by score (ties: the smaller string first); a piece
    spelled like a special, unknown or byte token is left out (that id exists already)."""
    taken = set(meta)
    alive = [
        (seeds.pieces[i], s)
        for i, s in enumerate(scores)
        if s != NEG_INF and seeds.pieces[i] not in taken
    ]
    by_piece = dict(alive)
    min_score = min(s for _p, s in alive) if alive else 0.0
    final: dict[str, float] = {}
    penalty = 0.0
    for char, _count in seeds.required:
        if char in taken:
            continue
        if char in by_piece:
            final[char] = by_piece[char]
        else:
            final[char] = min_score + penalty
            penalty += MIN_SCORE_PENALTY_DELTA
    for piece, score in sorted(alive, key=lambda item: (-item[1], item[0])):
        if len(final) >= size:
            break
        final.setdefault(piece, score)
    return sorted(final.items(), key=lambda item: (-item[1], item[0]))


def train_unigram(
    counts: Mapping[str, int],
    vocab_size: int,
    special_tokens: Sequence[str] = (),
    *,
    unk_token: str = UNK_TOKEN,
    byte_fallback: bool = False,
    character_coverage: float = 0.9995,
    max_piece_length: int = 16,
    seed_size: int = 1_000_000,
    whole_word_seeds: bool = True,
    shrinking_factor: float = 0.75,
    num_sub_iterations: int = 2,
    progress: ProgressFn | None = None,
    should_stop: StopFn | None = None,
    kernel: KernelName | None = None,
) -> UnigramResult:
    """Train a Unigram vocabulary of ``vocab_size`` ids (special tokens, the unknown token and
    byte pieces included) from pretoken counts.

    ``progress(phase, done, total)`` is called during the phases ``seed``, ``lattice`` and
    ``em`` (done/total = pieces removed / pieces to remove); when ``should_stop()`` returns
    True, Cancelled is raised. Fewer ids come out when the corpus has fewer useful pieces.

    >>> result = train_unigram({"▁low": 5, "▁lower": 2, "▁newest": 6, "▁widest": 3}, 30)
    >>> result.pieces[0], result.unk_id
    (('<unk>', 0.0), 0)
    """
    _check_inputs(counts, vocab_size, special_tokens)
    if not 0.0 < character_coverage <= 1.0:
        raise InvalidInput(f"character_coverage must be in (0, 1], got {character_coverage}")
    if not 0.0 < shrinking_factor < 1.0:
        raise InvalidInput(f"shrinking_factor must be in (0, 1), got {shrinking_factor}")
    if not isinstance(unk_token, str) or not unk_token:
        raise InvalidInput(f"unk_token must be a non-empty string, got {shown(unk_token)}")
    # the compiled kernel keeps one piece's characters in a fixed buffer of 256
    if not 1 <= max_piece_length <= MAX_PIECE_LENGTH:
        raise InvalidInput(
            f"max_piece_length must be in 1..{MAX_PIECE_LENGTH}, got {max_piece_length}"
        )
    if seed_size < 0 or num_sub_iterations < 1:
        raise InvalidInput(
            f"seed_size must be >= 0 and num_sub_iterations >= 1, got {seed_size} and "
            f"{num_sub_iterations}"
        )
    clock = _Clock(progress, should_stop)
    seconds: dict[str, float] = {}
    began = time.perf_counter()
    # Most frequent first, ties by string (SentencePiece's order): the float sums of the
    # E-step then do not depend on the caller's dict order, so neither does the result.
    counts = dict(
        sorted(
            ((word, count) for word, count in counts.items() if count > 0),
            key=lambda item: (-item[1], item[0]),
        )
    )

    meta = list(special_tokens)
    if unk_token not in meta:
        meta.append(unk_token)
    if byte_fallback:
        meta += [f"<0x{b:02X}>" for b in range(256) if f"<0x{b:02X}>" not in meta]
    required = required_characters(counts, character_coverage)
    room = vocab_size - len(meta)
    if room < len(required):
        raise InvalidInput(
            f"vocab_size {vocab_size} is too small: {len(meta)} special/unknown/byte tokens and "
            f"{len(required)} required characters need {len(meta) + len(required)}; raise "
            "vocab_size or lower character_coverage"
        )

    substrings = make_substrings(
        kernel,
        words=list(counts),
        counts=list(counts.values()),
        chars=char_table(counts, required),
        max_length=max_piece_length,
        whole_word_seeds=whole_word_seeds,
        tick=lambda done, total: clock.tick("seed", done, total),
    )
    clock.tick("seed", len(counts), len(counts))
    seeds = seed_pieces(substrings, required, seed_size)
    seconds["seed"] = time.perf_counter() - began
    mark = time.perf_counter()
    clock.tick("lattice", 0, 1)
    offsets, starts, ends, pieces_of_edges, first_word, first_start = (
        substrings.lattice_edges(seeds.pieces)
    )
    del substrings  # the table is the biggest thing in memory; the lattices are all we need
    lattices = make_lattices(
        kernel, lengths=[len(word) for word in counts], counts=[float(c) for c in counts.values()],
        offsets=offsets, starts=starts, ends=ends, pieces=pieces_of_edges,
    )
    clock.tick("lattice", 1, 1)
    seconds["lattice"] = time.perf_counter() - mark
    mark = time.perf_counter()

    scores = list(seeds.scores)
    desired = int(vocab_size * 1.1)
    total_count = float(sum(counts.values()))
    alive = list(range(len(scores)))
    to_remove = max(len(alive) - desired, 0)
    rounds = 0
    objective = 0.0
    while alive:
        for _ in range(num_sub_iterations):
            clock.tick("em", min(len(scores) - len(alive), to_remove), to_remove)
            min_score = min(scores[i] for i in alive)
            expected, objective = lattices.expectations(scores, min_score)
            alive = _m_step(scores, expected, alive)
            lattices.drop_dead(scores)
            if not alive:
                break
        if len(alive) <= desired:
            break
        clock.tick("em", min(len(scores) - len(alive), to_remove), to_remove)
        before = len(alive)
        alive = _prune(
            lattices, scores, alive, first_word=first_word, first_start=first_start,
            desired=desired, shrinking_factor=shrinking_factor, total_count=total_count,
        )
        lattices.drop_dead(scores)
        rounds += 1
        if len(alive) == before:
            break  # nothing left that can go (SentencePiece would loop forever here)
    clock.tick("em", to_remove, to_remove)
    seconds["em"] = time.perf_counter() - mark

    final = _finalize(seeds, scores, room, meta)
    pieces = [(token, 0.0) for token in meta] + final
    seconds["total"] = time.perf_counter() - began
    stats = UnigramStats(
        distinct_pretokens=len(counts),
        required_characters=len(required),
        seed_pieces=len(seeds.pieces),
        em_rounds=rounds,
        objective=objective,
        kernel=lattices.name,
        seconds=seconds,
    )
    specials = list(special_tokens)
    if unk_token not in specials:
        specials.append(unk_token)
    return UnigramResult(pieces, meta.index(unk_token), specials, byte_fallback, stats)
