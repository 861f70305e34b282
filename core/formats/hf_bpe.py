"""Hugging Face ``tokenizer.json`` for byte-level BPE: read it, and write one from a rank table.

tiktoken and HF BPE agree when three things line up:

- merges: HF needs explicit pairs; for a token of rank r we replay tiktoken's own BPE on the
  token's bytes with only ranks < r, and the last merge it makes is the pair (the approach of
  the tiktoken -> HF converters);
- ``ignore_merges: true``: a pretoken that is itself in the vocabulary maps straight to its id,
  as tiktoken's encoder does before running BPE;
- the pretokenizer: ``Split(Regex(pat_str), "Isolated")`` then ``ByteLevel(use_regex=false)``,
  so HF splits text with the same regex and then maps bytes to GPT-2's printable alphabet.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from tokend.core.errors import CorruptData, InvalidInput
from tokend.core.formats import (
    Pair,
    atomic_write_bytes,
    printable_to_token,
    read_maybe_gzip,
    token_to_printable,
)
from tokend.core.formats.oniguruma import from_oniguruma, to_oniguruma
from tokend.core.patterns import GPT2_PATTERN

# HF's ByteLevel pretokenizer regex when ``use_regex`` is true: GPT-2's pattern.
HF_BYTELEVEL_PATTERN = GPT2_PATTERN


class HFTokenizer(NamedTuple):
    """The parts of a byte-level BPE ``tokenizer.json`` (specials removed from ``vocab``)."""

    vocab: dict[int, bytes]
    merges: list[Pair]
    special_tokens: dict[str, int]
    pat_str: str


# -- ranks -> merges ---------------------------------------------------------------------


def _bpe_parts(ranks: Mapping[bytes, int], token: bytes, max_rank: int) -> list[bytes]:
    """tiktoken's BPE on ``token`` using only ranks below ``max_rank``; returns the parts.

    Stops at two parts (their merge is ``token`` itself, whose rank is not below
    ``max_rank``). Pair ranks live in a list so ``min``/``index`` scan in C, leftmost first.

    >>> _bpe_parts({b"a": 0, b"b": 1, b"c": 2, b"bc": 3, b"abc": 4}, b"abc", 4)
    [b'a', b'bc']
    """
    get = ranks.get
    none = max_rank  # any rank >= max_rank counts as "no merge"
    parts = [token[i : i + 1] for i in range(len(token))]
    pair_ranks = [min(get(token[i : i + 2], none), none) for i in range(len(token) - 1)]
    while len(parts) > 2:
        best = min(pair_ranks)
        if best >= none:
            break
        i = pair_ranks.index(best)
        parts[i] += parts[i + 1]
        del parts[i + 1]
        del pair_ranks[i]
        if i < len(pair_ranks):
            pair_ranks[i] = min(get(parts[i] + parts[i + 1], none), none)
        if i > 0:
            pair_ranks[i - 1] = min(get(parts[i - 1] + parts[i], none), none)
    return parts


def merges_from_ranks(ranks: Mapping[bytes, int]) -> list[Pair]:
    """The merge list equivalent to a rank table, ordered by the merged token's rank.

    Tokens that BPE cannot build from lower ranks get no merge (tiktoken can only emit them
    when a whole pretoken equals them, which ``ignore_merges`` reproduces in HF).

    >>> merges_from_ranks({b"a": 0, b"b": 1, b"ab": 2, b"abb": 3})
    [(b'a', b'b'), (b'ab', b'b')]
    """
    merges: list[Pair] = []
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(token) < 2:
            continue
        parts = _bpe_parts(ranks, token, rank)
        if len(parts) == 2:
            merges.append((parts[0], parts[1]))
    return merges


def ranks_from_vocab_merges(
    vocab: Mapping[int, bytes], merges: Sequence[Pair], *, source: str = "<vocab>"
) -> tuple[dict[bytes, int], dict[int, bytes]]:
    """Turn a vocab + merge list into a rank table whose ranks are the vocab ids.

    Exact only if ranking tokens by id replays the same merges, which is checked: the merges
    derived back from the ranks must equal ``merges``. Vocab entries that are neither single
    bytes nor the product of a merge (``<|endoftext|>`` in GPT-2's vocab.json) are returned
    separately, as candidates for special tokens. Raises InvalidInput naming the first merge
    that a rank table cannot express.
    """
    ids: dict[bytes, int] = {}
    for token_id, token in vocab.items():
        if token in ids:
            raise CorruptData(f"{source}: token {token!r} has two ids ({ids[token]}, {token_id})")
        ids[token] = token_id
    products: set[bytes] = set()
    for index, (left, right) in enumerate(merges):
        for part in (left, right, left + right):
            if part not in ids:
                raise CorruptData(
                    f"{source}: merge #{index + 1} ({left!r}, {right!r}) uses {part!r}, "
                    "which is not in the vocabulary"
                )
        products.add(left + right)
    ranks: dict[bytes, int] = {}
    leftovers: dict[int, bytes] = {}
    for token, token_id in ids.items():
        if len(token) == 1 or token in products:
            ranks[token] = token_id
        else:
            leftovers[token_id] = token
    derived = merges_from_ranks(ranks)
    if derived != list(merges):
        for index, (want, got) in enumerate(zip(merges, derived, strict=False)):
            if want != got:
                raise InvalidInput(
                    f"{source}: merge #{index + 1} {want!r} cannot be expressed as a rank "
                    f"table (ranking tokens by id replays {got!r} there); ids must follow "
                    "the merge order"
                )
        raise InvalidInput(
            f"{source}: {len(merges)} merges but ranking tokens by id replays {len(derived)}; "
            "ids must follow the merge order"
        )
    return ranks, leftovers


# -- writing -----------------------------------------------------------------------------


def hf_tokenizer_dict(
    *,
    ranks: Mapping[bytes, int],
    pat_str: str,
    special_tokens: Mapping[str, int],
) -> dict[str, Any]:
    """Build the ``tokenizer.json`` structure for a tiktoken-style rank table."""
    vocab = {
        token_to_printable(token): rank
        for token, rank in sorted(ranks.items(), key=lambda item: item[1])
    }
    for text, token_id in sorted(special_tokens.items(), key=lambda item: item[1]):
        # subtle: HF renumbers added tokens that the model vocab lacks (cl100k's 100257 would
        # become 100256), so specials are listed in the model vocab too, as GPT-2's file does.
        if text in vocab:
            raise InvalidInput(
                f"special token {text!r} spells the same as a regular token in HF's byte-level "
                "alphabet; rename it"
            )
        vocab[text] = token_id
    merges = [
        f"{token_to_printable(left)} {token_to_printable(right)}"
        for left, right in merges_from_ranks(ranks)
    ]
    added = [
        {
            "id": token_id,
            "content": text,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for text, token_id in sorted(special_tokens.items(), key=lambda item: item[1])
    ]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {
                    "type": "Split",
                    "pattern": {"Regex": to_oniguruma(pat_str)},
                    "behavior": "Isolated",
                    "invert": False,
                },
                {
                    "type": "ByteLevel",
                    "add_prefix_space": False,
                    "trim_offsets": False,
                    "use_regex": False,
                },
            ],
        },
        "post_processor": None,
        "decoder": {
            "type": "ByteLevel",
            "add_prefix_space": False,
            "trim_offsets": False,
            "use_regex": False,
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": True,
            "vocab": vocab,
            "merges": merges,
        },
    }


def format_hf_tokenizer_json(
    *, ranks: Mapping[bytes, int], pat_str: str, special_tokens: Mapping[str, int]
) -> bytes:
    """Serialize :func:`hf_tokenizer_dict` as UTF-8 JSON."""
    data = hf_tokenizer_dict(ranks=ranks, pat_str=pat_str, special_tokens=special_tokens)
    return (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode("utf-8")


def write_hf_tokenizer_json(
    path: str | os.PathLike[str],
    *,
    ranks: Mapping[bytes, int],
    pat_str: str,
    special_tokens: Mapping[str, int],
) -> None:
    """Write a ``tokenizer.json`` that HF ``tokenizers`` loads with tiktoken-identical ids."""
    data = format_hf_tokenizer_json(ranks=ranks, pat_str=pat_str, special_tokens=special_tokens)
    atomic_write_bytes(path, data)


# -- reading -----------------------------------------------------------------------------


def read_hf_tokenizer_json(path: str | os.PathLike[str]) -> HFTokenizer:
    """Read a byte-level BPE ``tokenizer.json``; anything else is refused, naming the part.

    Accepted pretokenizers: ``ByteLevel`` (GPT-2's regex) or ``Sequence[Split(Regex,
    Isolated), ByteLevel(use_regex=false)]`` (what :func:`write_hf_tokenizer_json` writes).
    """
    source = str(path)
    try:
        raw = json.loads(read_maybe_gzip(path))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptData(f"{source}: not valid JSON ({exc})") from None
    except RecursionError:
        raise CorruptData(f"{source}: JSON nested too deeply") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("model"), dict):
        raise CorruptData(f"{source}: expected a tokenizer.json object with a 'model'")
    model: dict[str, Any] = raw["model"]
    if model.get("type", "BPE") != "BPE":
        raise InvalidInput(f"{source}: model type {model.get('type')!r}; only BPE is supported")
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            raise InvalidInput(f"{source}: model.{key}={model[key]!r} is not byte-level BPE")
    if model.get("byte_fallback"):
        raise InvalidInput(f"{source}: byte_fallback BPE is not byte-level BPE")
    if raw.get("normalizer") is not None:
        raise InvalidInput(
            f"{source}: a normalizer ({raw['normalizer'].get('type')!r}) is not supported; "
            "tiktoken-style tokenizers encode the raw text"
        )
    pat_str = _pattern_of(raw.get("pre_tokenizer"), source)

    vocab_raw = model.get("vocab")
    if not isinstance(vocab_raw, dict):
        raise CorruptData(f"{source}: model.vocab must be an object of token -> id")
    added = raw.get("added_tokens") or []
    if not isinstance(added, list):
        raise CorruptData(f"{source}: added_tokens must be a list")
    special_tokens: dict[str, int] = {}
    for entry in added:
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("content"), str)
            or not isinstance(entry.get("id"), int)
        ):
            raise CorruptData(f"{source}: malformed added_tokens entry {entry!r:.80}")
        special_tokens[entry["content"]] = entry["id"]
    special_ids = set(special_tokens.values())

    vocab: dict[int, bytes] = {}
    for text, token_id in vocab_raw.items():
        if not isinstance(token_id, int) or isinstance(token_id, bool) or token_id < 0:
            raise CorruptData(f"{source}: id of {text!r} is {token_id!r}")
        if token_id in special_ids:
            continue  # an added token also listed in the model vocab (GPT-2 does this)
        if token_id in vocab:
            raise CorruptData(f"{source}: id {token_id} is used twice in model.vocab")
        vocab[token_id] = printable_to_token(text, source=f"{source}: model.vocab")

    merges: list[Pair] = []
    merges_raw = model.get("merges") or []
    if not isinstance(merges_raw, list):
        raise CorruptData(f"{source}: model.merges must be a list of pairs")
    for index, item in enumerate(merges_raw):
        if isinstance(item, str):
            pieces = item.split(" ")
        elif isinstance(item, list):
            pieces = item
        else:
            pieces = []
        if len(pieces) != 2 or not all(isinstance(p, str) and p for p in pieces):
            raise CorruptData(f"{source}: merge #{index + 1} is {item!r:.80}, not a pair")
        where = f"{source}: merge #{index + 1}"
        merges.append(
            (
                printable_to_token(pieces[0], source=where),
                printable_to_token(pieces[1], source=where),
            )
        )
    return HFTokenizer(vocab, merges, special_tokens, pat_str)


def _pattern_of(pre: object, source: str) -> str:
    """The tiktoken regex equivalent to a byte-level pretokenizer config."""
    if not isinstance(pre, dict):
        raise InvalidInput(f"{source}: no pre_tokenizer; byte-level BPE needs ByteLevel")
    steps = pre.get("pretokenizers") if pre.get("type") == "Sequence" else [pre]
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        raise CorruptData(f"{source}: malformed pre_tokenizer")
    kinds = [s.get("type") for s in steps]
    last = steps[-1] if steps else {}
    if last.get("type") != "ByteLevel":
        raise InvalidInput(
            f"{source}: pre_tokenizer {kinds} is not byte-level BPE (must end in ByteLevel)"
        )
    if last.get("add_prefix_space"):
        raise InvalidInput(
            f"{source}: ByteLevel(add_prefix_space=true) is not supported; tiktoken never "
            "adds a space"
        )
    use_regex = last.get("use_regex", True)
    if len(steps) == 1:
        if not use_regex:
            raise InvalidInput(f"{source}: ByteLevel(use_regex=false) alone does not split text")
        return HF_BYTELEVEL_PATTERN
    split = steps[0]
    if len(steps) != 2 or split.get("type") != "Split" or use_regex:
        raise InvalidInput(
            f"{source}: pre_tokenizer {kinds} is not supported; expected ByteLevel or "
            "Sequence[Split(Regex), ByteLevel(use_regex=false)]"
        )
    pattern = split.get("pattern")
    regex_text = pattern.get("Regex") if isinstance(pattern, dict) else None
    if not isinstance(regex_text, str):
        raise InvalidInput(f"{source}: Split pattern must be a Regex, got {pattern!r:.80}")
    if split.get("behavior") != "Isolated" or split.get("invert"):
        raise InvalidInput(
            f"{source}: Split must be behavior Isolated without invert, got "
            f"{split.get('behavior')!r}, invert={split.get('invert')!r}"
        )
    return from_oniguruma(regex_text)
