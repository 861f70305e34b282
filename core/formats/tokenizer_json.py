"""HF ``tokenizer.json`` of any model type -> :class:`PipelineTokenizer`.

Every component is built by its stage's ``from_json``; one that tokend cannot reproduce
exactly is refused with its JSON path. ``truncation`` and ``padding`` are ignored: a count
for an API call wants every token of the text, never a cut or padded sequence.
"""

from __future__ import annotations

import json
from typing import Any

from tokend.core.engine.cache import DEFAULT_CACHE_ENTRIES
from tokend.core.errors import CorruptData, InvalidInput
from tokend.core.formats.hf_compiled import compiled_segment_engine
from tokend.core.pipeline import decoders, models, normalizers, post_processors, pre_tokenizers
from tokend.core.pipeline.added_tokens import AddedToken
from tokend.core.pipeline.tokenizer import PipelineTokenizer

_U64_MAX = (1 << 64) - 1
_POW10 = [float(f"1e{i}") for i in range(309)]  # Rust's POW10 table: correctly rounded


def serde_json_float(text: str) -> float:
    """A JSON number as HF reads it: serde_json's default (not correctly rounded) parsing.

    subtle: serde_json without ``float_roundtrip`` keeps up to 19 significant digits in a u64,
    converts that to f64 and then multiplies or divides by a power of ten: two roundings, so a
    score can differ from Python's correctly rounded ``float`` by one ulp, and Unigram's ties
    between equal-looking paths then break the other way.

    >>> serde_json_float("-12.563223870658675") == float("-12.563223870658675")
    True
    """
    i = 0
    positive = True
    if text[i] == "-":
        positive, i = False, 1
    significand = 0
    exponent = 0
    overflowed = False
    n = len(text)
    while i < n and text[i].isdigit():  # integer part
        digit = ord(text[i]) - 48
        if overflowed or significand * 10 + digit > _U64_MAX:
            overflowed = True
            exponent += 1  # further integer digits only scale
        else:
            significand = significand * 10 + digit
        i += 1
    if i < n and text[i] == ".":
        i += 1
        while i < n and text[i].isdigit():
            digit = ord(text[i]) - 48
            if not overflowed and significand * 10 + digit > _U64_MAX:
                overflowed = True  # further fraction digits are ignored
            if not overflowed:
                significand = significand * 10 + digit
                exponent -= 1
            i += 1
    if i < n and text[i] in "eE":
        i += 1
        sign = 1
        if text[i] in "+-":
            sign = -1 if text[i] == "-" else 1
            i += 1
        exponent += sign * int(text[i:])
    value = float(significand)
    while True:
        if abs(exponent) < len(_POW10):
            value = value * _POW10[exponent] if exponent >= 0 else value / _POW10[-exponent]
            break
        if value == 0.0:
            break
        if exponent >= 0:
            return float("inf") if positive else float("-inf")
        value /= 1e308
        exponent += 308
    return value if positive else -value


def parse_tokenizer_json(data: bytes, *, source: str = "tokenizer.json") -> dict[str, Any]:
    """The JSON object of a tokenizer.json, checked to have a ``model``; numbers are read as
    HF reads them (:func:`serde_json_float`)."""
    try:
        raw = json.loads(data, parse_float=serde_json_float)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptData(f"{source}: not valid JSON ({exc})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("model"), dict):
        raise CorruptData(f"{source}: expected a tokenizer.json object with a 'model'")
    return raw


def tokenizer_from_json(
    raw: dict[str, Any], *, name: str, source: str = "tokenizer.json",
    cache_entries: int | None = None,
) -> PipelineTokenizer:
    """Assemble the pipeline described by a parsed tokenizer.json."""

    def part(key: str) -> Any:
        return raw.get(key)

    try:
        model = models.from_json(raw["model"], "model")
        normalizer = (
            normalizers.from_json(part("normalizer")) if part("normalizer") is not None else None
        )
        pre_tokenizer = (
            pre_tokenizers.from_json(part("pre_tokenizer"))
            if part("pre_tokenizer") is not None else None
        )
        post_processor = (
            post_processors.from_json(part("post_processor"))
            if part("post_processor") is not None else None
        )
        decoder = decoders.from_json(part("decoder")) if part("decoder") is not None else None
        added_raw = part("added_tokens") or []
        if not isinstance(added_raw, list):
            raise CorruptData("added_tokens is not a list")
        added = [AddedToken.from_json(t, f"added_tokens[{i}]") for i, t in enumerate(added_raw)]
    except (CorruptData, InvalidInput) as exc:
        raise type(exc)(f"{source}: {exc}") from None
    kwargs: dict[str, Any] = {}
    if cache_entries is not None:
        kwargs["cache_entries"] = cache_entries
    tokenizer = PipelineTokenizer(
        name,
        model=model,
        normalizer=normalizer,
        pre_tokenizer=pre_tokenizer,
        post_processor=post_processor,
        decoder=decoder,
        added_tokens=added,
        **kwargs,
    )
    # Byte-level BPE whose pre-tokenizer is Split stages runs on the compiled engine.
    engine, path = compiled_segment_engine(
        raw, cache_entries=DEFAULT_CACHE_ENTRIES if cache_entries is None else cache_entries)
    if engine is not None:
        tokenizer.use_segment_engine(engine, path)
    else:
        tokenizer.engine_path = f"pure-Python pipeline: {path}"
    return tokenizer


def load_tokenizer_json(
    data: bytes, *, name: str, source: str = "tokenizer.json", cache_entries: int | None = None
) -> PipelineTokenizer:
    """Parse and assemble a tokenizer.json's bytes."""
    raw = parse_tokenizer_json(data, source=source)
    return tokenizer_from_json(raw, name=name, source=source, cache_entries=cache_entries)
