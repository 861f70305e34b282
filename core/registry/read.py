"""Read one registry version's files back, every byte checked against its manifest."""

from __future__ import annotations

from typing import Any

from tokend.core.errors import CorruptData, InvalidInput, shown
from tokend.core.formats import parse_tiktoken_bpe, sha256_hex
from tokend.core.formats.files import FILE_NAMES
from tokend.core.registry.checks import check_contents
from tokend.core.registry.manifest import MANIFEST_FILE, RANKS_FILE
from tokend.core.registry.model import ResolvedRef, TokenizerData
from tokend.core.registry.store import Store
from tokend.core.tokenizer import NORMALIZER_FORMS

# The files a version may list in its manifest (nothing else is ever opened).
VERSION_FILES = frozenset({RANKS_FILE, *FILE_NAMES.values()})


def read_version(store: Store, resolved: ResolvedRef, manifest: dict[str, Any]) -> TokenizerData:
    """The contents of ``resolved`` (a registry version) as its checked ``manifest`` lists them.

    Only files the manifest may name are opened; each one's size and sha256 must match, and a
    rank table must still pass the publish-time checks (CorruptData naming the file otherwise).
    """
    assert resolved.version is not None
    name, version = resolved.name, resolved.version
    manifest_where = store.where(name, version, MANIFEST_FILE)
    files: dict[str, dict[str, Any]] = manifest["files"]
    fmt = manifest.get("format", "tiktoken")
    main = RANKS_FILE if fmt == "tiktoken" else FILE_NAMES.get(str(fmt))
    kept = FILE_NAMES.get(str(manifest.get("original_format"))) if fmt == "tiktoken" else None
    expected = {main, kept} - {None}
    if main is None or set(files) != expected:
        raise CorruptData(
            f"{manifest_where}: files must be {sorted(map(str, expected))} for format "
            f"{fmt!r}, got {sorted(files)}"
        )
    contents: dict[str, bytes] = {}
    for file, info in files.items():
        if file not in VERSION_FILES:  # never open a key the manifest made up
            raise CorruptData(f"{manifest_where}: unknown file {shown(file)}")
        path = store.where(name, version, file)
        try:
            data = store.read(name, version, file)
        except FileNotFoundError:
            raise CorruptData(f"{path}: file is missing") from None
        if len(data) != info["bytes"]:
            raise CorruptData(
                f"{path}: {len(data)} bytes, manifest says {info['bytes']} (truncated?)"
            )
        actual = sha256_hex(data)
        if actual != info["sha256"]:
            raise CorruptData(f"{path}: sha256 is {actual}, manifest says {info['sha256']}")
        contents[file] = data
    if fmt != "tiktoken":
        return TokenizerData(
            resolved, ranks={}, pat_str="", special_tokens=manifest["special_tokens"],
            explicit_n_vocab=None, manifest=manifest, fmt=str(fmt), file=contents[main],
            original=contents[main],
        )
    normalizer = manifest.get("normalizer")
    if normalizer is not None and normalizer not in NORMALIZER_FORMS:
        raise CorruptData(f"{manifest_where}: unknown normalizer {normalizer!r}")
    ranks = parse_tiktoken_bpe(
        contents[RANKS_FILE], source=store.where(name, version, RANKS_FILE)
    )
    explicit = manifest.get("explicit_n_vocab")
    explicit_n_vocab = explicit if isinstance(explicit, int) else None
    special_tokens: dict[str, int] = manifest["special_tokens"]
    try:
        check_contents(ranks, manifest["pattern"], special_tokens, explicit_n_vocab)
    except InvalidInput as exc:
        raise CorruptData(f"{store.where(name, version)}: {exc}") from None
    return TokenizerData(
        resolved,
        ranks=ranks,
        pat_str=manifest["pattern"],
        special_tokens=special_tokens,
        explicit_n_vocab=explicit_n_vocab,
        manifest=manifest,
        normalizer=normalizer,
        original=contents[kept] if kept else contents[RANKS_FILE],
    )
