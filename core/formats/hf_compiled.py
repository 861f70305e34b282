"""A byte-level BPE tokenizer.json on the compiled engine, when its pipeline reduces to one.

A pipeline of (any normalizer) + (``Split`` stages, Isolated, then ``ByteLevel``) + byte-level
``BPE`` gives, between added tokens, exactly what the compiled engine gives with the ``Split``
patterns compiled as stages (``pattern_compiler``, split mode) and the merges as a rank table:
the normalizer and the added tokens stay with ``PipelineTokenizer``, which hands each plain
segment to the engine instead of its pre-tokenizer and model (and keeps both for offsets).

Why the rank table gives HF's merges: ``ranks_from_vocab_merges`` checks that for every merge
``(a, b) -> t`` of rank r, tiktoken's BPE on t's bytes with the ranks below r ends in exactly
the parts a | b. When tiktoken's BPE on any word merges two parts c | d into t, the parts
inside t's span were built by merges inside the span only, in the same order as BPE on t's
bytes alone, and no pair there ranks below r (r is the lowest now): so c | d is that end state,
a | b -- the pair HF merges at the same priority. A pretoken that is a whole token maps to it
directly, which HF's BPE also reaches (the same argument on the pretoken itself); vocabulary
entries that no merge makes are only decoded (with ``ignore_merges`` HF could emit them, so
such files stay on the pipeline). Anything else -- another model or pre-tokenizer, a pattern
the compiler refuses -- stays on the pure-Python pipeline, with the reason recorded.
"""

from __future__ import annotations

from typing import Any

from tokend.core.engine import _compiled, default_engine
from tokend.core.engine.pattern_compiler import compile_patterns
from tokend.core.engine.pattern_syntax import Unsupported
from tokend.core.errors import CorruptData, InvalidInput
from tokend.core.formats import unicode_to_bytes
from tokend.core.formats.hf_bpe import (
    HF_BYTELEVEL_PATTERN,
    merges_from_ranks,
    ranks_from_vocab_merges,
)
from tokend.core.formats.oniguruma import from_oniguruma


class NotReducible(ValueError):
    """The tokenizer.json needs the pure-Python pipeline (the message says why)."""


def split_stages(pre: object) -> list[str]:
    """The regex-module patterns of a byte-level pre-tokenizer, one per ``Split`` stage."""
    if not isinstance(pre, dict):
        raise NotReducible("no pre_tokenizer")
    steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else [pre]
    if not isinstance(steps, list) or not steps or not all(isinstance(s, dict) for s in steps):
        raise NotReducible("malformed pre_tokenizer")
    *splits, last = steps
    if last.get("type") != "ByteLevel":
        raise NotReducible(f"the pre-tokenizer ends in {last.get('type')!r}, not ByteLevel")
    if last.get("add_prefix_space", True):
        raise NotReducible("ByteLevel(add_prefix_space=true)")
    patterns: list[str] = []
    for k, step in enumerate(splits):
        if step.get("type") != "Split":
            raise NotReducible(f"pre-tokenizer step {k + 1} is {step.get('type')!r}, not Split")
        if step.get("behavior", "Isolated") != "Isolated" or step.get("invert", False):
            raise NotReducible(f"Split step {k + 1} is not Isolated without invert")
        spec = step.get("pattern")
        if isinstance(spec, dict) and isinstance(spec.get("Regex"), str):
            patterns.append(from_oniguruma(spec["Regex"]))
        elif isinstance(spec, dict) and isinstance(spec.get("String"), str) and spec["String"]:
            import regex  # noqa: PLC0415

            patterns.append(regex.escape(spec["String"]))
        else:
            raise NotReducible(f"Split step {k + 1} has pattern {spec!r:.60}")
    if last.get("use_regex", True):
        patterns.append(HF_BYTELEVEL_PATTERN)  # ByteLevel's own split: GPT-2's pattern
    if not patterns:
        raise NotReducible("ByteLevel(use_regex=false) alone does not split text")
    return patterns


def _tables(
    raw: dict[str, Any],
) -> tuple[dict[bytes, int], dict[bytes, int], dict[int, bytes]]:
    """The rank table, token -> id and id -> bytes of a byte-level BPE model."""
    model = raw["model"]
    if model.get("type", "BPE") != "BPE":
        raise NotReducible(f"model {model.get('type')!r}, not BPE")
    for key in ("continuing_subword_prefix", "end_of_word_suffix", "dropout"):
        if model.get(key):
            raise NotReducible(f"model.{key}={model[key]!r}")
    if model.get("byte_fallback"):
        raise NotReducible("byte_fallback BPE")
    table = unicode_to_bytes()
    added = {t.get("id") for t in raw.get("added_tokens") or [] if isinstance(t, dict)}
    vocab: dict[int, bytes] = {}
    for text, token_id in (model.get("vocab") or {}).items():
        if token_id in added:
            continue
        try:
            vocab[token_id] = bytes(table[c] for c in text)
        except KeyError:
            continue  # not in the byte alphabet: no merge can make it (checked below)
    merges: list[tuple[bytes, bytes]] = []
    try:
        for item in model.get("merges") or []:
            left, right = item.split(" ") if isinstance(item, str) else item
            merges.append((bytes(table[c] for c in left), bytes(table[c] for c in right)))
    except (KeyError, ValueError, TypeError):
        raise NotReducible("a merge outside GPT-2's byte alphabet") from None
    try:
        ids, leftovers = ranks_from_vocab_merges(vocab, merges, source="model")
        ranks = ids
    except InvalidInput:
        # ids do not follow the merge order: rank by merge index instead (checked the same way)
        ranks, ids, leftovers = _merge_order_tables(vocab, merges)
    except CorruptData as exc:
        raise NotReducible(str(exc)) from None
    if len(ranks) < 256 or any(bytes([b]) not in ranks for b in range(256)):
        raise NotReducible("the vocabulary lacks a token for some byte")
    if leftovers and model.get("ignore_merges"):
        raise NotReducible("ignore_merges with vocabulary entries no merge makes")
    decoder = {token_id: token for token, token_id in ids.items()}
    decoder.update(leftovers)
    return ranks, ids, decoder


def _merge_order_tables(
    vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]]
) -> tuple[dict[bytes, int], dict[bytes, int], dict[int, bytes]]:
    """Ranks by merge index (single bytes below them), ids from the vocabulary; refused unless
    replaying BPE on those ranks gives back exactly ``merges`` (the check of the module doc)."""
    by_bytes = {token: token_id for token_id, token in vocab.items()}
    ranks = {token: 0 for token in by_bytes if len(token) == 1}
    for k, (left, right) in enumerate(merges):
        if left + right in ranks:
            raise NotReducible(f"merge #{k + 1} makes {left + right!r} a second time")
        ranks[left + right] = 256 + k
    for k, token in enumerate(sorted(t for t in ranks if len(t) == 1)):
        ranks[token] = k
    if any(token not in by_bytes for token in ranks):
        raise NotReducible("a merge makes a token the vocabulary lacks")
    if merges_from_ranks(ranks) != merges:
        raise NotReducible("the merges are not a rank table (BPE by rank replays others)")
    ids = {token: by_bytes[token] for token in ranks}
    leftovers = {i: t for i, t in vocab.items() if t not in ranks}
    return ranks, ids, leftovers


def compiled_segment_engine(raw: dict[str, Any], *, cache_entries: int) -> tuple[Any, str]:
    """``(engine, path)`` for a reducible tokenizer.json, else ``(None, why not)``."""
    if _compiled is None or default_engine() != "compiled":
        return None, "the pure-Python engine is in use"
    try:
        patterns = split_stages(raw.get("pre_tokenizer"))
        stages = compile_patterns(patterns, split_mode=True)
        ranks, ids, decoder = _tables(raw)
    except (NotReducible, Unsupported) as exc:
        return None, str(exc)
    engine = _compiled.CompiledEngine(
        pat_str="", ranks=ranks, ids=ids, decoder=decoder, cache_entries=cache_entries,
        stages=stages,
    )
    return engine, f"{engine.path}, {len(patterns)} Split stage(s)"
