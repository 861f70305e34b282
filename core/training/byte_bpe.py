"""Byte-level BPE training: count pretokens (in parallel), then learn merges incrementally.

Semantics (exact, and the same for any ``workers`` and any chunking of the input):

1. The corpus is split on the special tokens first; then each document is cut into pretokens
   by the pattern. No merge ever crosses a special token or a pretoken boundary.
2. Each round merges the most frequent adjacent pair of tokens, counted over all pretokens
   weighted by how often each pretoken occurs. Ties go to the lexicographically greatest
   pair, compared as ``(bytes, bytes)``.
3. Ids: bytes 0-255 by value, then one id per merge from 256 in order, then the special
   tokens. ``vocab_size`` counts all three; when no pair is left, training stops early.

The merge loop never recounts: it keeps ``pair -> count`` and ``pair -> pretokens holding it``,
updates only around the places a merge touches, and picks the best pair from a heap whose
stale entries are fixed up lazily when they reach the top.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass

from tokend.core.errors import InvalidInput, LimitExceeded
from tokend.core.patterns import DEFAULT_TRAIN_PATTERN, NAMED_PATTERNS, resolve_pattern
from tokend.core.training import corpus as corpus_io
from tokend.core.training.byte_merges import MergeLearner
from tokend.core.training.corpus import CorpusInput, Splitter, open_sources
from tokend.core.training.pretoken_count import CountPool, PieceCounter, use_compiled
from tokend.core.training.progress import ProgressFn, StopFn, Throttle
from tokend.core.training.result import TrainedTokenizer, TrainStats
from tokend.core.training.spec import TrainSpec
from tokend.core.training.utf8 import utf8_length

Pair = tuple[bytes, bytes]

# Characters of text per batch handed to a counting worker.
BATCH_CHARS = 1 << 18
# More counting processes than this is a typo, not a machine.
MAX_WORKERS = 256
# Where the counting phase runs: worker processes here, or tasks on a Ray cluster.
COUNTERS = ("local", "ray")


def train_bpe(
    corpus: CorpusInput,
    vocab_size: int,
    special_tokens: Iterable[str] = (),
    *,
    pattern: str = DEFAULT_TRAIN_PATTERN,
    workers: int | None = None,
    progress: ProgressFn | None = None,
    should_stop: StopFn | None = None,
    counter: str = "local",
    ray_address: str | None = None,
) -> TrainedTokenizer[bytes]:
    """Train a byte-level BPE tokenizer on ``corpus`` (see the module docstring for semantics).

    ``corpus`` is a path, a list or tuple of paths, or any other iterable of str chunks (a
    stream: documents may span chunks). ``workers`` counting processes are used when the input
    is larger than one batch (default: the CPUs this process may use). ``progress(phase, done,
    total)`` is called at a steady rate for the phases ``count`` (bytes; total 0 when unknown),
    ``index`` (pretokens) and ``merge`` (merges). ``should_stop()`` is polled; when it returns
    True, Cancelled is raised within a fraction of a second and worker processes are stopped.

    ``counter="ray"`` counts on a Ray cluster instead (``ray_address``: what ``ray.init``
    takes; ``pip install 'tokend[ray]'``): one task per shard of files (paths every node can
    read, or ``s3://`` objects), merged here; the merges are the same as a local run's
    (``tokend.core.training.ray_count``).

    >>> r = train_bpe(iter(["low lower lowest"]), 258)
    >>> r.merges
    [(b'l', b'o'), (b'lo', b'w')]
    """
    spec = TrainSpec(
        vocab_size,
        special_tokens,  # type: ignore[arg-type]  # any iterable: checked() makes the tuple
        model="byte-bpe",
        pattern=pattern,
    ).checked()
    specials = list(spec.special_tokens)
    minimum = spec.minimum_vocab_size
    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
    ):
        raise InvalidInput(f"workers must be a positive int or None, got {workers!r}")
    if workers is not None and workers > MAX_WORKERS:
        raise LimitExceeded("workers", workers, MAX_WORKERS)
    if counter not in COUNTERS:
        raise InvalidInput(f"counter must be one of {', '.join(COUNTERS)}, got {counter!r:.200}")
    pat_str = resolve_pattern(spec.pattern)
    pattern_name = next((n for n, p in NAMED_PATTERNS.items() if pat_str == p), None)
    throttle = Throttle(progress, should_stop)
    seconds: dict[str, float] = {}

    start = time.perf_counter()
    if counter == "ray":
        counted = _count_on_ray(
            corpus,
            specials,
            pat_str,
            safe_cuts=pattern_name is not None,
            address=ray_address,
            throttle=throttle,
        )
    else:
        counted = _count_corpus(
            corpus,
            specials,
            pat_str,
            safe_cuts=pattern_name is not None,
            workers=workers if workers is not None else _available_cpus(),
            throttle=throttle,
            should_stop=should_stop,
        )
    seconds["count"] = time.perf_counter() - start

    learner = MergeLearner(counted.word_counts, throttle)
    del counted.word_counts  # the learner holds its own copy as token lists
    seconds["index"] = learner.index_seconds
    start = time.perf_counter()
    n_merges = vocab_size - minimum
    learner.learn(n_merges)
    seconds["merge"] = time.perf_counter() - start
    seconds["total"] = seconds["count"] + seconds["index"] + seconds["merge"]

    vocab = dict(enumerate(learner.vocab))
    next_id = len(vocab)
    special_ids: dict[str, int] = {}
    for i, text in enumerate(specials):
        special_ids[text] = next_id + i
        vocab[next_id + i] = text.encode("utf-8")
    merges = [(learner.vocab[a], learner.vocab[b]) for a, b in learner.merges]
    stats = TrainStats(
        bytes_read=counted.bytes_read,
        documents=counted.documents,
        pretokens=counted.pretokens,
        distinct_pretokens=learner.distinct_pretokens,
        merges=len(merges),
        stopped_early=len(merges) < n_merges,
        workers=counted.workers,
        seconds=seconds,
    )
    return TrainedTokenizer(
        model="byte-bpe",
        vocab=vocab,
        merges=merges,
        special_tokens=special_ids,
        vocab_size=vocab_size,
        stats=stats,
        pattern=pat_str,
        pattern_name=pattern_name,
    )


def _available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@dataclass
class _Counted:
    word_counts: dict[bytes, int]
    bytes_read: int
    documents: int
    pretokens: int
    workers: int


def _count_corpus(
    corpus: CorpusInput,
    specials: list[str],
    pat_str: str,
    *,
    safe_cuts: bool,
    workers: int,
    throttle: Throttle,
    should_stop: StopFn | None,
) -> _Counted:
    """Phase 1: stream the input, cut it into pieces and count pretokens.

    With ``workers`` > 1, ``workers - 1`` processes are started once a second batch shows up
    (at once for files over 4 batches), and this process counts whatever they cannot take.
    """
    sources = open_sources(corpus)
    total = sum(s.size for s in sources if s.size is not None)
    if any(s.size is None for s in sources):
        total = 0
    splitter = Splitter(
        specials, safe_cuts=safe_cuts, target_chars=corpus_io.TARGET_PIECE_CHARS
    )
    compiled = use_compiled()
    counter = PieceCounter(pat_str, compiled=compiled)
    local_seen = 0
    pool: CountPool | None = None
    batches = 0
    batch: list[str] = []
    batch_chars = 0
    bytes_read = 0

    def dispatch(pieces: list[str]) -> None:
        # This process counts whatever the workers cannot take right now: the first batch
        # (small inputs never start a pool), batches while workers start, and any overflow.
        nonlocal pool, local_seen, batches
        batches += 1
        if pool is None and workers > 1 and (batches > 1 or total > 4 * BATCH_CHARS):
            pool = CountPool(pat_str, workers - 1, should_stop, compiled=compiled)
        if pool is None or not pool.try_submit(pieces):
            local_seen += counter.count(pieces)

    try:
        for source in sources:
            before = bytes_read
            chars = 0
            for block in source.blocks:
                throttle.check("count")
                if source.size is None:
                    bytes_read += utf8_length(block)
                    shown = bytes_read
                else:  # characters approximate bytes until the file is done
                    chars += len(block)
                    shown = before + min(chars, source.size)
                for piece in splitter.feed(block):
                    batch.append(piece)
                    batch_chars += len(piece)
                if batch_chars >= BATCH_CHARS:
                    dispatch(batch)
                    batch, batch_chars = [], 0
                throttle.report("count", shown, total)
            batch.extend(splitter.finish())
            if source.size is not None:
                bytes_read += source.size
        if batch:
            dispatch(batch)
        throttle.check("count")
        if pool is not None:
            word_counts, seen = pool.results()
            used = workers
            for word, n in counter.byte_counts().items():
                word_counts[word] = word_counts.get(word, 0) + n
            seen += local_seen
        else:
            word_counts, seen, used = counter.byte_counts(), local_seen, 1
    except BaseException:
        if pool is not None:
            pool.close()  # at once: cancelled or failed
        raise
    if pool is not None:
        pool.close(graceful=True)
    throttle.report("count", bytes_read, total, force=True)
    return _Counted(word_counts, bytes_read, splitter.documents, seen, used)


def _count_on_ray(
    corpus: CorpusInput,
    specials: list[str],
    pat_str: str,
    *,
    safe_cuts: bool,
    address: str | None,
    throttle: Throttle,
) -> _Counted:
    """Phase 1 on a Ray cluster: the same counts, from one task per shard of files."""
    # subtle: imported here, as tokend.core.training's package imports this module.
    from tokend.core.training.ray_count import count_on_ray  # noqa: PLC0415

    shard = count_on_ray(
        corpus,
        specials,
        pat_str,
        safe_cuts=safe_cuts,
        compiled=use_compiled(),
        address=address,
        report=lambda done, total: throttle.report("count", done, total),
        check=lambda: throttle.check("count"),
    )
    throttle.report("count", shard.bytes_read, shard.bytes_read, force=True)
    return _Counted(
        shard.word_counts, shard.bytes_read, shard.documents, shard.pretokens, shard.shards
    )
