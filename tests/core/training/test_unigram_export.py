"""A trained Unigram vocabulary exported to tokenizer.json: HF ``tokenizers`` and tokend's
own pipeline give the same ids (and decode to the same text) on held-out and random text."""

from __future__ import annotations

import functools
import json

import pytest
from family_texts import SAMPLES, random_text
from hypothesis import HealthCheck, given, settings
from unigram_corpus import lines, metaspace_counts

from tokend.core.formats.tokenizer_json import load_tokenizer_json
from tokend.core.pipeline.tokenizer import PipelineTokenizer
from tokend.core.training.unigram import train_unigram

CONFIGS = {"plain": False, "byte-fallback": True}


@functools.cache
def pair(config: str) -> tuple[object, PipelineTokenizer]:
    from tokenizers import Tokenizer

    byte_fallback = CONFIGS[config]
    vocab_size = 700 if byte_fallback else 400
    counts = metaspace_counts(lines()[0])
    # coverage below 1: rare characters stay unknown (or become bytes)
    result = train_unigram(counts, vocab_size, ["<s>", "</s>"], byte_fallback=byte_fallback,
                           character_coverage=0.995)
    text = json.dumps(result.tokenizer_json())
    return Tokenizer.from_str(text), load_tokenizer_json(text.encode(), name=config)


def check(config: str, text: str) -> None:
    hf, ours = pair(config)
    ids = ours.encode_ordinary(text)
    assert ids == hf.encode(text, add_special_tokens=False).ids, (config, text)  # type: ignore[attr-defined]
    assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=False), (config, text)  # type: ignore[attr-defined]


@pytest.mark.parametrize("config", sorted(CONFIGS))
class TestExportedTokenizerJson:
    def test_held_out_lines_match_hf(self, config: str) -> None:
        """Every held-out line, the samples and their concatenation: same ids, same decode."""
        for text in [*lines()[1], *SAMPLES.values(), "\n".join(SAMPLES.values())]:
            check(config, text)

    def test_special_tokens_match_hf(self, config: str) -> None:
        """Special tokens in the text are their ids (HF added tokens), in both."""
        hf, ours = pair(config)
        text = "<s> hello </s>"
        assert ours.encode(text, allowed_special="all") == hf.encode(  # type: ignore[attr-defined]
            text, add_special_tokens=False).ids

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(text=random_text)
    def test_random_unicode_matches_hf(self, config: str, text: str) -> None:
        check(config, text)
