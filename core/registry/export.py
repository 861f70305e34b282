"""Export a registry version (or a built-in) in a file format: what ``tokend registry export``
writes.

Asked for the format a version holds, the export *is* that file, byte for byte (as
``original``). Otherwise it is an exact conversion, or a refusal that names what stands in the
way. Every (stored, requested) pair:

| stored \\ requested | ``hf-json`` | ``tiktoken`` | ``original`` |
|---|---|---|---|
| tokenizer.json (trained kinds, imports) | the file | its ranks if it is a byte-level rank table, else refused (why) | the file |
| rank table kept with its tokenizer.json | that file when it is what is served, else written from the ranks | the ranks | the tokenizer.json |
| rank table (byte-bpe training, .tiktoken, GPT-2 files), built-in | written from the ranks; refused with a normalizer | the ranks | the rank file (built-in: refused) |
| SentencePiece .model | refused (ties, merge order) | refused (not byte-level BPE) | the file |
| Tekken | written from its ranks | its ranks | the file |

A ``.tiktoken`` file holds ranks only: the pattern, special tokens and normalizer it cannot
say come back as notes.
"""  # noqa: E501 - a table reads better unwrapped

from __future__ import annotations

import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tokend.core.errors import CorruptData, InvalidInput
from tokend.core.formats import format_tiktoken_bpe
from tokend.core.formats.files import FILE_NAMES
from tokend.core.formats.hf_bpe import (
    format_hf_tokenizer_json,
    ranks_from_vocab_merges,
    read_hf_tokenizer_json,
)
from tokend.core.formats.interop import EXPORT_FORMATS, TokenizerParts, read_tokenizer_files
from tokend.core.formats.tekken import load_tekken
from tokend.core.registry.manifest import pattern_name
from tokend.core.registry.model import TokenizerData
from tokend.core.registry.registry import Registry

__all__ = ["Exported", "export_data", "export_version"]


@dataclass(frozen=True)
class Exported:
    """The bytes of an export and how they came about."""

    ref: str
    fmt: str  # the requested format
    data: bytes
    how: Literal["stored", "converted"]  # the file the version holds, unchanged, or written
    notes: tuple[str, ...] = ()  # what the written format cannot say


def export_version(registry: Registry, ref: str, fmt: str) -> Exported:
    """Export ``ref`` in ``fmt`` (``hf-json``, ``tiktoken`` or ``original``).

    >>> export_version(Registry(tmp), "mytok@1", "hf-json").data[:1]  # doctest: +SKIP
    b'{'
    """
    return export_data(registry.load_data(ref), fmt)


def export_data(data: TokenizerData, fmt: str) -> Exported:
    """Export verified contents (see the module's table); InvalidInput names what is missing."""
    ref = data.resolved.ref
    if fmt not in EXPORT_FORMATS:
        raise InvalidInput(f"unknown export format {fmt!r}; use one of {EXPORT_FORMATS}")
    if fmt == "original":
        if data.original is None:
            raise InvalidInput(f"{ref} is a built-in: it has no original file")
        return Exported(ref, fmt, data.original, "stored")
    if data.file is not None:
        return _from_file(data, data.file, fmt)
    if fmt == "tiktoken":
        notes = _tiktoken_notes(data.pat_str, data.special_tokens, data.normalizer)
        kept_name = FILE_NAMES.get(str((data.manifest or {}).get("original_format")))
        if data.original is not None and kept_name is None:  # the original is the rank file
            return Exported(ref, fmt, data.original, "stored", notes)
        return Exported(ref, fmt, format_tiktoken_bpe(data.ranks), "converted", notes)
    # hf-json of a rank table
    if data.normalizer is not None:
        raise InvalidInput(
            f"{ref} applies {data.normalizer.upper()} (Python's Unicode "
            f"{unicodedata.unidata_version}) before BPE, and HF's normalizers use older Unicode "
            "tables (docs/families.md), so no tokenizer.json gives its ids for every text; "
            "export it with --format tiktoken or original"
        )
    kept = _kept_tokenizer_json(data)
    if kept is not None:
        return Exported(ref, fmt, kept, "stored")
    body = format_hf_tokenizer_json(ranks=data.ranks, pat_str=data.pat_str,
                                    special_tokens=data.special_tokens)
    return Exported(ref, fmt, body, "converted")


def _from_file(data: TokenizerData, file: bytes, fmt: str) -> Exported:
    """hf-json / tiktoken of a version that holds a tokenizer.json, .model or Tekken file."""
    ref, stored = data.resolved.ref, data.fmt
    if stored == fmt:
        return Exported(ref, fmt, file, "stored")
    if stored == "hf-json":  # asked for tiktoken
        table = _rank_table(file)
        if isinstance(table, str):
            raise InvalidInput(
                f"{ref} holds a tokenizer.json that is not a byte-level BPE rank table "
                f"({table}), which is all a .tiktoken file can hold; export it with --format "
                "hf-json or original"
            )
        return Exported(ref, fmt, format_tiktoken_bpe(table.ranks), "converted",
                        _tiktoken_notes(table.pat_str, table.special_tokens, None))
    if stored == "tekken":
        enc = load_tekken(file, name=ref, cache_entries=1)
        ranks, pat_str, specials = enc.mergeable_ranks, enc.pat_str, dict(enc.special_tokens)
        if fmt == "tiktoken":
            return Exported(ref, fmt, format_tiktoken_bpe(ranks), "converted",
                            _tiktoken_notes(pat_str, specials, None))
        body = format_hf_tokenizer_json(ranks=ranks, pat_str=pat_str, special_tokens=specials)
        return Exported(ref, fmt, body, "converted")
    if stored == "sentencepiece":
        raise InvalidInput(f"{ref} holds a SentencePiece {_spm_kind(file)} model "
                           f"({FILE_NAMES[stored]}): {_spm_obstacle(file, fmt)}; export it with "
                           "--format original")
    raise CorruptData(f"{ref}: unknown stored format {stored!r}")  # manifests are checked


def _spm_kind(file: bytes) -> str:
    from tokend.core.formats.sentencepiece import BPE, parse_sentencepiece  # noqa: PLC0415

    return "BPE" if int(parse_sentencepiece(file).trainer_spec.model_type) == BPE else "Unigram"


def _spm_obstacle(file: bytes, fmt: str) -> str:
    """Why a .model has no exact file in ``fmt``."""
    if fmt == "tiktoken":
        return "a .tiktoken file holds byte-level BPE ranks only"
    if _spm_kind(file) == "Unigram":
        return ("HF's Unigram sums scores in f64 per pre-token where sentencepiece sums float32 "
                "over the whole text, so tied segmentations (whitespace runs) get other ids "
                "(docs/families.md)")
    return ("sentencepiece's BPE merges the best-scoring pair (leftmost on ties) where HF's "
            "applies a merge list, and tokend derives no merge list that gives its ids")


def _tiktoken_notes(pat_str: str, specials: dict[str, int],
                    normalizer: str | None) -> tuple[str, ...]:
    pattern = pattern_name(pat_str) or pat_str
    note = f".tiktoken holds ranks only; pattern {pattern}, special tokens {specials}"
    if normalizer is not None:
        note += f", normalizer {normalizer}"
    return (note,)


def _kept_tokenizer_json(data: TokenizerData) -> bytes | None:
    """The tokenizer.json a rank-table import kept, if it is exactly what the version serves
    (an import with --pattern / --special serves something else)."""
    manifest = data.manifest or {}
    if manifest.get("original_format") != "hf-json" or data.original is None:
        return None
    table = _rank_table(data.original)
    if isinstance(table, str):
        return None
    same = (table.ranks == data.ranks and table.pat_str == data.pat_str
            and table.special_tokens == data.special_tokens)
    return data.original if same else None


def _rank_table(file: bytes) -> TokenizerParts | str:
    """The rank table a tokenizer.json imports as (import's own reading), or why it is none."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tokenizer.json"
        path.write_bytes(file)
        try:
            hf = read_hf_tokenizer_json(path)
            ranks_from_vocab_merges(hf.vocab, hf.merges, source=str(path))
            parts = read_tokenizer_files([path], fmt="hf-json")
        except (InvalidInput, CorruptData) as exc:
            return str(exc).replace(f"{path}: ", "")
    if not isinstance(parts, TokenizerParts):
        return "kept as a pipeline"
    return parts
