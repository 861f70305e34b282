"""Training every tokenizer family: one spec (``TrainSpec``), one entry point (``train``,
or ``train_tokenizer`` with keyword arguments), one result type (``TrainedTokenizer``).

One module per kind (``char``, ``word_bpe``, ``wordpiece``, ``unigram``; byte-level BPE is
``tokend.core.training.byte_bpe``), the shared merge loop (``pair_merge``), corpus -> word counts
(``words``) and the result with its tokenizer.json (``result``). Beyond one machine: the
byte-level BPE counting phase as Ray tasks (``ray_count``) and ``s3://`` corpora (``objects``).
"""

from __future__ import annotations

from tokend.core.training.kinds import train, train_tokenizer
from tokend.core.training.result import KindStats, TrainedTokenizer, TrainResult, TrainStats
from tokend.core.training.spec import MODEL_KINDS, TrainSpec, check_model

__all__ = [
    "MODEL_KINDS",
    "KindStats",
    "TrainResult",
    "TrainSpec",
    "TrainStats",
    "TrainedTokenizer",
    "check_model",
    "train",
    "train_tokenizer",
]
