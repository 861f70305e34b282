"""Import tokenizers from other tools' files into the registry, and export registry entries.

Formats: ``tiktoken`` (a ``.tiktoken`` rank file; the pattern and special tokens come from the
caller, or from the built-in whose ranks are identical), ``gpt2`` (``vocab.json`` +
``merges.txt``, a directory or the pair), ``hf-json`` (any ``tokenizer.json``), ``sentencepiece``
(a ``.model``) and ``tekken`` (Mistral's JSON). A tokenizer.json that is a plain byte-level rank
table becomes ranks (served by the BPE engine, the file kept beside them for export); every
other file is kept byte for byte and served by the pipeline it describes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokend.core.engine.builtins import BUILTIN_NAMES, load_builtin_spec
from tokend.core.errors import CorruptData, InvalidInput
from tokend.core.formats import (
    dump_tiktoken_bpe,
    parse_tiktoken_bpe,
    read_gpt2_merges,
    read_gpt2_vocab,
    read_maybe_gzip,
    sha256_hex,
)
from tokend.core.formats.files import load_file, sniff_format
from tokend.core.formats.hf_bpe import (
    ranks_from_vocab_merges,
    read_hf_tokenizer_json,
    write_hf_tokenizer_json,
)
from tokend.core.patterns import resolve_pattern

IMPORT_FORMATS = ("tiktoken", "gpt2", "hf-json", "sentencepiece", "tekken")
EXPORT_FORMATS = ("tiktoken", "hf-json", "original")


@dataclass(frozen=True)
class TokenizerParts:
    """A tokenizer as plain data, ready for :meth:`Registry.publish`."""

    ranks: dict[bytes, int]
    pat_str: str
    special_tokens: dict[str, int]
    source: dict[str, Any] = field(default_factory=dict)  # provenance, kept in the manifest
    notes: list[str] = field(default_factory=list)  # what was inferred, for the user
    original: tuple[str, bytes] | None = None  # (format, bytes) of the file it came from


@dataclass(frozen=True)
class FileParts:
    """A tokenizer file kept as it is, ready for :meth:`Registry.publish_file`."""

    fmt: str
    data: bytes
    source: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def detect_format(paths: Sequence[Path]) -> str:
    """The import format from a single file's contents, else from the names."""
    if len(paths) == 2:
        return "gpt2"
    path = paths[0]
    if path.is_dir():
        if (path / "tokenizer.json").exists():
            return "hf-json"
        return "gpt2"
    sniffed = sniff_format(read_maybe_gzip(path))
    if sniffed is not None:
        return sniffed
    name = path.name.removesuffix(".gz")
    if name.endswith(".tiktoken"):
        return "tiktoken"
    if name.endswith(".json"):
        return "hf-json"
    raise InvalidInput(
        f"cannot tell the format of {path}; pass --format {'|'.join(IMPORT_FORMATS)}"
    )


def parse_special(items: Sequence[str]) -> dict[str, int]:
    """Parse ``TEXT=ID`` items (the CLI's ``--special``); the last ``=`` separates the id.

    >>> parse_special(["<|endoftext|>=50256"])
    {'<|endoftext|>': 50256}
    """
    out: dict[str, int] = {}
    for item in items:
        text, sep, number = item.rpartition("=")
        if not sep or not text or not number.isdigit():
            raise InvalidInput(f"special token {item!r} must look like TEXT=ID (ID an integer)")
        out[text] = int(number)
    return out


def _builtin_with_ranks(digest: str) -> tuple[str, dict[str, Any]] | None:
    """The built-in encoding whose rank file has this sha256, if any."""
    for name in BUILTIN_NAMES:
        spec = load_builtin_spec(name)
        if spec["ranks_sha256"] == digest:
            return name, spec
    return None


def read_tokenizer_files(
    paths: Sequence[str | os.PathLike[str]],
    *,
    fmt: str | None = None,
    pattern: str | None = None,
    special_tokens: Mapping[str, int] | None = None,
) -> TokenizerParts | FileParts:
    """Read a tokenizer in any import format; ``pattern`` / ``special_tokens`` override
    (for rank tables; files kept as they are carry their own)."""
    files = [Path(p) for p in paths]
    if not 1 <= len(files) <= 2:
        raise InvalidInput(f"expected one path (or vocab.json + merges.txt), got {len(files)}")
    for file in files:
        if not file.exists():
            raise InvalidInput(f"{file}: no such file or directory")
    fmt = fmt or detect_format(files)
    if fmt not in IMPORT_FORMATS:
        raise InvalidInput(f"unknown import format {fmt!r}; use one of {IMPORT_FORMATS}")
    if len(files) == 2 and fmt != "gpt2":
        raise InvalidInput(f"format {fmt} takes one file, got {len(files)}")
    user_specials = dict(special_tokens or {})
    notes: list[str] = []
    if fmt in ("sentencepiece", "tekken"):
        if pattern is not None or user_specials:
            raise InvalidInput(f"--pattern / --special do not apply to a {fmt} file")
        data = read_maybe_gzip(files[0])
        return _checked(FileParts(fmt, data, {"format": fmt, "file": str(files[0]),
                                              "sha256": sha256_hex(data)}))
    if fmt == "tiktoken":
        contents = read_maybe_gzip(files[0])
        ranks = parse_tiktoken_bpe(contents, source=str(files[0]))
        digest = sha256_hex(contents)
        known = _builtin_with_ranks(digest)
        specials = user_specials
        if pattern is not None:
            pat_str = resolve_pattern(pattern)
        elif known is not None:
            pat_str = known[1]["pat_str"]
            notes.append(f"pattern taken from built-in {known[0]} (identical ranks)")
            if not user_specials:
                specials = dict(known[1]["special_tokens"])
                notes.append(f"special tokens taken from built-in {known[0]}")
        else:
            raise InvalidInput(
                f"{files[0]}: a .tiktoken file carries no pattern; pass --pattern "
                "gpt2|cl100k|o200k|REGEX"
            )
        source = {"format": fmt, "file": str(files[0]), "sha256": digest}
        return TokenizerParts(ranks, pat_str, specials, source, notes)

    if fmt == "gpt2":
        if len(files) == 1:
            if not files[0].is_dir():
                raise InvalidInput(
                    f"{files[0]}: gpt2 format takes a directory or vocab.json + merges.txt"
                )
            vocab_path = _first_existing(files[0], ("vocab.json", "encoder.json"))
            merges_path = _first_existing(files[0], ("merges.txt", "vocab.bpe"))
        else:
            json_files = [f for f in files if f.name.removesuffix(".gz").endswith(".json")]
            if len(json_files) != 1:
                raise InvalidInput(
                    f"gpt2 format takes vocab.json + merges.txt, got {[str(f) for f in files]}"
                )
            vocab_path = json_files[0]
            merges_path = files[1] if files[0] == vocab_path else files[0]
        vocab = read_gpt2_vocab(vocab_path)
        merges = read_gpt2_merges(merges_path)
        file_specials: dict[str, int] = {}
        pat_str = resolve_pattern(pattern or "gpt2")
        where = f"{vocab_path} + {merges_path}"
        source = {"format": fmt, "file": where}
    else:
        path = files[0] / "tokenizer.json" if files[0].is_dir() else files[0]
        original = read_maybe_gzip(path)
        source = {"format": fmt, "file": str(path), "sha256": sha256_hex(original)}
        try:
            hf = read_hf_tokenizer_json(path)
            ranks, leftovers = ranks_from_vocab_merges(hf.vocab, hf.merges, source=str(path))
        except (InvalidInput, CorruptData) as exc:
            # Not a plain byte-level rank table: keep the file, serve its whole pipeline.
            if pattern is not None or user_specials:
                raise InvalidInput(
                    f"{path}: --pattern / --special apply to byte-level rank tables only; this "
                    f"file is served by its own pipeline ({exc})"
                ) from None
            return _checked(FileParts("hf-json", original, source,
                                      [f"kept as a tokenizer.json pipeline ({exc})"]))
        pat_str = resolve_pattern(pattern) if pattern is not None else hf.pat_str
        return _with_specials(ranks, leftovers, pat_str, hf.special_tokens, user_specials,
                              str(path), source, notes, original=("hf-json", original))
    ranks, leftovers = ranks_from_vocab_merges(vocab, merges, source=where)
    return _with_specials(ranks, leftovers, pat_str, file_specials, user_specials, where,
                          source, notes)


def _checked(parts: FileParts) -> FileParts:
    """``parts`` once its file loads (CorruptData / InvalidInput naming the problem if not)."""
    load_file(parts.fmt, parts.data, name="import", cache_entries=1)
    return parts


def _with_specials(  # noqa: PLR0917 - one private helper, the parts of one import
    ranks: dict[bytes, int],
    leftovers: Mapping[int, bytes],
    pat_str: str,
    file_specials: Mapping[str, int],
    user_specials: Mapping[str, int],
    where: str,
    source: dict[str, Any],
    notes: list[str],
    original: tuple[str, bytes] | None = None,
) -> TokenizerParts:
    """Special tokens from the file, leftover vocab entries and the user, in that order."""
    specials = dict(file_specials)
    for token_id, token in sorted(leftovers.items()):
        # Vocab entries no merge can build (GPT-2's <|endoftext|>) are special tokens.
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput(
                f"{where}: token {token!r} (id {token_id}) is neither a byte nor built by a "
                "merge, and is not text that could be a special token"
            ) from None
        if text not in user_specials and token_id not in user_specials.values():
            specials.setdefault(text, token_id)
            notes.append(f"{text!r} (id {token_id}) is built by no merge: kept as special")
    specials.update(user_specials)
    return TokenizerParts(ranks, pat_str, specials, source, notes, original)


def _first_existing(directory: Path, names: Sequence[str]) -> Path:
    for name in names:
        for candidate in (directory / name, directory / f"{name}.gz"):
            if candidate.exists():
                return candidate
    raise InvalidInput(f"{directory}: none of {list(names)} found")


def export_tokenizer(
    out: str | os.PathLike[str],
    *,
    fmt: str,
    ranks: Mapping[bytes, int],
    pat_str: str,
    special_tokens: Mapping[str, int],
) -> None:
    """Write ``.tiktoken`` (ranks only: the pattern is not part of that format) or HF json."""
    if fmt == "tiktoken":
        dump_tiktoken_bpe(ranks, out)
    elif fmt == "hf-json":
        write_hf_tokenizer_json(out, ranks=ranks, pat_str=pat_str, special_tokens=special_tokens)
    else:
        raise InvalidInput(f"unknown export format {fmt!r}; use one of {EXPORT_FORMATS}")
