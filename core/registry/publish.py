"""Publish a training result: the one way a trained tokenizer becomes a registry version.

The library, the CLI (``tokend train``) and the server's trainer process all call
:func:`publish_trained`, so every version records the same ``training`` metadata: byte-level
BPE as its tiktoken rank table, every other kind as its tokenizer.json kept byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tokend.core.registry.model import VersionInfo
from tokend.core.registry.registry import Registry
from tokend.core.training.result import TrainedTokenizer
from tokend.core.training.spec import TrainSpec


def training_record(
    spec: TrainSpec, result: TrainedTokenizer[Any], **extra: object
) -> dict[str, object]:
    """The ``training`` metadata of a version (manifest, ``tokend train --out``, job state).

    >>> from tokend.core.training import train
    >>> r = train(iter(["low lower"]), TrainSpec(258))
    >>> sorted(training_record(TrainSpec(258), r))  # doctest: +NORMALIZE_WHITESPACE
    ['model', 'pattern', 'pattern_name', 'special_tokens', 'stats', 'vocab_size']
    """
    record: dict[str, object] = {
        "model": result.model,
        "vocab_size": spec.vocab_size,
        "special_tokens": list(spec.special_tokens),
        "stats": result.stats.to_dict(),
    }
    if result.served_format == "tiktoken":
        record["pattern"] = spec.pattern
        record["pattern_name"] = result.pattern_name
    if spec.wordpiece_score:
        record["wordpiece_score"] = spec.wordpiece_score
    record.update(extra)
    return record


def publish_trained(
    registry: Registry,
    name: str,
    result: TrainedTokenizer[Any],
    *,
    training: Mapping[str, object],
    corpus: Mapping[str, object] | None = None,
    strict: bool = False,
) -> VersionInfo:
    """A new version of ``name`` from ``result``: ranks + pattern (byte-bpe) or tokenizer.json.

    ``corpus`` (what it was trained on: sha256, bytes, files) goes into the manifest's
    ``corpus`` field for a rank table and into ``training.corpus`` for a kept file, whose
    manifest has no field of its own for it. ``strict`` refuses lint errors (``core.lint``).
    """
    if result.served_format == "tiktoken":
        assert result.pattern is not None  # served_format says so
        return registry.publish(
            name,
            ranks=result.mergeable_ranks(),
            pat_str=result.pattern,
            special_tokens=result.special_tokens,
            training=training,
            corpus=corpus,
            strict=strict,
        )
    record = dict(training)
    if corpus is not None:
        record["corpus"] = dict(corpus)
    return registry.publish_file(name, fmt="hf-json", data=result.tokenizer_json_bytes(),
                                 training=record, strict=strict)
