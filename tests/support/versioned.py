"""A trained tokenizer with two versions and an alias, for the tests that pick one of them.

``vtok@1`` (vocabulary 300) and ``vtok@2`` (vocabulary 420) are byte-level BPE trained by
tokend on the same slice of the bundled English corpus, so v2 knows every merge of v1 and a
hundred more: the "what changed between v1 and v2" view of the inspector page. ``vtok@stable``
points at version 1. Published straight into a registry folder (before or while a server
serves it); the bad-input catalogue's unknown-version and unknown-alias rows ask this name.
"""

from __future__ import annotations

from pathlib import Path

from tokend.core import train_bpe
from tokend.core.registry import Registry

NAME = "vtok"
VOCAB_SIZES = (300, 420)  # version 1, version 2
ALIAS = ("stable", 1)
CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpora" / "corpus.en"


def publish_versions(registry: Path) -> None:
    """Train and publish ``vtok@1`` and ``vtok@2`` into ``registry``; alias stable -> 1."""
    text = CORPUS.read_text(encoding="utf-8")[:20_000]
    store = Registry(registry)
    for vocab_size in VOCAB_SIZES:
        result = train_bpe(iter([text]), vocab_size, ["<|endoftext|>"])
        store.publish(NAME, ranks=result.mergeable_ranks(), pat_str=result.pattern,
                      special_tokens=result.special_tokens,
                      training={"vocab_size": vocab_size})
    store.set_alias(NAME, *ALIAS)
