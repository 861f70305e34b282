"""Training every tokenizer family: ``train_tokenizer`` and what it returns.

One module per kind (``char``, ``word_bpe``, ``wordpiece``, ``unigram``; byte-level BPE is
``tokend.core.training.byte_bpe``), the shared merge loop (``pair_merge``), corpus -> word counts
(``words``) and the result with its tokenizer.json (``result``). Beyond one machine: the
byte-level BPE counting phase as Ray tasks (``ray_count``) and ``s3://`` corpora (``objects``).
"""

from __future__ import annotations

from tokend.core.training.kinds import MODEL_KINDS, check_model, train_tokenizer
from tokend.core.training.result import KindStats, TrainedTokenizer

__all__ = ["MODEL_KINDS", "KindStats", "TrainedTokenizer", "check_model", "train_tokenizer"]
