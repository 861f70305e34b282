"""The ``manifest.json`` of one registry version: what it holds, how it was made, file hashes.

Versioned (``format_version``) and checked on load: a manifest that does not parse, names the
wrong tokenizer or version, or lacks a field is CorruptData naming the file.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from tokend.core.errors import CorruptData, InvalidInput, shown
from tokend.core.formats import sha256_hex
from tokend.core.patterns import NAMED_PATTERNS

FORMAT_VERSION = 1
# Token ids travel as uint32 (the proto's vocab_size, special token ids, Decode's ids): a
# manifest counting more, or naming an id outside that range, cannot be served.
MAX_TOKEN_ID = 2**32 - 1
MANIFEST_FILE = "manifest.json"
RANKS_FILE = "ranks.tiktoken"

_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "format_version": int,
    "name": str,
    "version": int,
    "created_at": str,
    "pattern": str,
    "special_tokens": dict,
    "n_vocab": int,
    "files": dict,
}


def tool_version() -> str:
    """The installed tokend version, recorded in every manifest."""
    try:
        return metadata.version("tokend")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "unknown"


def pattern_name(pat_str: str) -> str | None:
    """The built-in name of a pattern (``gpt2``, ``cl100k``, ``o200k``), or None if custom."""
    for name, regex in NAMED_PATTERNS.items():
        if regex == pat_str:
            return name
    return None


def build_manifest(
    *,
    name: str,
    version: int,
    pat_str: str,
    special_tokens: Mapping[str, int],
    n_vocab: int,
    mergeable_count: int,
    explicit_n_vocab: int | None,
    files: Mapping[str, Mapping[str, object]],
    training: Mapping[str, object] | None,
    corpus: Mapping[str, object] | None,
) -> dict[str, Any]:
    """Assemble a manifest dict (JSON-serializable) for a new version."""
    return {
        "format_version": FORMAT_VERSION,
        "name": name,
        "version": version,
        "created_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds"),
        "pattern": pat_str,
        "pattern_name": pattern_name(pat_str),
        "special_tokens": dict(special_tokens),
        "n_vocab": n_vocab,
        "mergeable_count": mergeable_count,
        "explicit_n_vocab": explicit_n_vocab,
        "files": {file: dict(info) for file, info in files.items()},
        "training": dict(training) if training is not None else None,
        "corpus": dict(corpus) if corpus is not None else None,
        "tool": {"name": "tokend", "version": tool_version()},
    }


def encode_manifest(manifest: Mapping[str, Any]) -> bytes:
    """Serialize a manifest (sorted keys, trailing newline) for writing."""
    try:
        text = json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise CorruptData(f"manifest is not JSON-serializable: {exc}") from None
    return (text + "\n").encode("utf-8")


def read_manifest(path: Path, *, name: str, version: int) -> dict[str, Any]:
    """Read and check the manifest at ``path`` for version ``name@version``."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise CorruptData(f"{path}: manifest is missing") from None
    return parse_manifest(raw, str(path), name=name, version=version)


def parse_manifest(raw: bytes, path: str, *, name: str, version: int) -> dict[str, Any]:
    """Check the manifest bytes ``raw`` of ``name@version`` (``path`` names it in errors)."""
    try:
        manifest = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptData(f"{path}: manifest is not valid JSON ({exc})") from None
    if not isinstance(manifest, dict):
        raise CorruptData(f"{path}: manifest is not a JSON object")
    for key, kind in _REQUIRED.items():
        value = manifest.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise CorruptData(f"{path}: manifest field {key!r} is missing or not a {kind}")
    if manifest["format_version"] != FORMAT_VERSION:
        raise CorruptData(
            f"{path}: manifest format_version {manifest['format_version']} is not supported "
            f"(this tokend reads {FORMAT_VERSION})"
        )
    if manifest["name"] != name or manifest["version"] != version:
        raise CorruptData(
            f"{path}: manifest says {manifest['name']}@{manifest['version']}, "
            f"but it is stored as {name}@{version}"
        )
    if not 0 < manifest["n_vocab"] <= MAX_TOKEN_ID:
        raise CorruptData(
            f"{path}: manifest field 'n_vocab' is {manifest['n_vocab']}, outside 1 .. "
            f"{MAX_TOKEN_ID} (ids are uint32); republish the version"
        )
    for token, token_id in manifest["special_tokens"].items():
        if (not isinstance(token_id, int) or isinstance(token_id, bool)
                or not 0 <= token_id <= MAX_TOKEN_ID):
            raise CorruptData(f"{path}: special token {shown(token)} has id {shown(token_id)} "
                              f"(ids are uint32: 0 .. {MAX_TOKEN_ID})")
    for file, info in manifest["files"].items():
        if (
            not isinstance(info, dict)
            or not isinstance(info.get("sha256"), str)
            or not isinstance(info.get("bytes"), int)
        ):
            raise CorruptData(f"{path}: manifest entry for file {file!r} lacks sha256/bytes")
    return manifest


def manifest_factory(
    name: str,
    contents: Mapping[str, bytes],
    *,
    pat_str: str,
    special_tokens: Mapping[str, int],
    n_vocab: int,
    mergeable_count: int,
    explicit_n_vocab: int | None,
    extra: Mapping[str, object],
) -> Callable[[int], dict[str, Any]]:
    """The manifest of a version about to be published, once the store assigns its number.

    ``extra`` holds ``training``, ``corpus`` and the optional ``format``, ``normalizer``,
    ``original_format``, ``chat`` and ``lint`` (``core.lint.publish``) keys; a value that is
    not JSON is refused here, before anything is written.
    """
    for key, value in extra.items():
        if value is None:
            continue
        try:
            json.dumps(value)
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"{key} metadata is not JSON-serializable: {exc}") from None
    files = {
        file: {"sha256": sha256_hex(data), "bytes": len(data)} for file, data in contents.items()
    }

    def manifest_for(version: int) -> dict[str, Any]:
        manifest = build_manifest(
            name=name,
            version=version,
            pat_str=pat_str,
            special_tokens=special_tokens,
            n_vocab=n_vocab,
            mergeable_count=mergeable_count,
            explicit_n_vocab=explicit_n_vocab,
            files=files,
            training=extra.get("training"),  # type: ignore[arg-type]
            corpus=extra.get("corpus"),  # type: ignore[arg-type]
        )
        for key in ("format", "normalizer", "original_format", "chat", "lint"):
            if extra.get(key) is not None:
                value = extra[key]
                manifest[key] = dict(value) if isinstance(value, Mapping) else value
        return manifest

    return manifest_for


def builtin_manifest(name: str, spec: Mapping[str, Any], n_vocab: int) -> dict[str, Any]:
    """The synthetic manifest of a built-in encoding, from its JSON description (``spec``)."""
    return {
        "name": name,
        "builtin": True,
        "pattern": spec["pat_str"],
        "special_tokens": dict(spec["special_tokens"]),
        "n_vocab": n_vocab,
    }

