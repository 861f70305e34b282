"""ListTokenizers and GetTokenizer: what the registry holds, as plain data.

Listing loads nothing that is not loaded yet (a built-in's size comes from its table, a
version's from its manifest); a corrupt version lists with size 0 and is reported by Get. Get
loads the version to say which engine path it runs on, the same answer from every worker.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tokend.core.engine.builtins import builtin_n_vocab
from tokend.core.errors import TokendError
from tokend.core.tokenizer import Tokenizer, engine_path
from tokend.server.app.fields import bounded, with_field
from tokend.server.tokenizers import Tokenizers


@dataclass(frozen=True, slots=True)
class TokenizerSummary:
    name: str
    builtin: bool
    versions: list[int]
    latest_version: int
    aliases: dict[str, int]
    vocab_size: int


@dataclass(frozen=True, slots=True)
class TokenizerManifest:
    name: str
    version: int  # 0 for built-ins
    ref: str  # the resolved reference ("mytok@7")
    builtin: bool
    vocab_size: int
    pattern: str
    special_tokens: dict[str, int]
    sha256: dict[str, str]  # file name -> sha256 (hex)
    training_json: str  # training parameters and corpus statistics, "" when not trained
    created_at: str
    versions: list[int] = field(default_factory=list)
    aliases: dict[str, int] = field(default_factory=dict)
    # which engine path the version runs on (core.tokenizer.engine_path), loading it if need be
    engine: str = ""


def list_tokenizers(tokenizers: Tokenizers) -> list[TokenizerSummary]:
    registry = tokenizers.registry
    loaded = tokenizers.loaded()
    return [
        TokenizerSummary(
            name=info.name, builtin=info.builtin, versions=list(info.versions),
            latest_version=info.latest or 0, aliases=dict(info.aliases),
            vocab_size=_vocab_size(tokenizers, info.name, info.builtin, loaded),
        )
        for info in registry.list()
    ]


def _vocab_size(tokenizers: Tokenizers, name: str, builtin: bool,
                loaded: Mapping[str, Tokenizer]) -> int:
    """n_vocab of the latest version, without loading anything that is not loaded yet."""
    try:
        if builtin:
            encoding = loaded.get(name)
            if encoding is not None:
                return int(encoding.n_vocab)
            return builtin_n_vocab(name)
        manifest = tokenizers.registry.manifest(name)
        return int(manifest["n_vocab"])
    except TokendError:
        return 0  # a corrupt version is reported by GetTokenizer; listing keeps working


def get_tokenizer(tokenizers: Tokenizers, ref: str) -> TokenizerManifest:
    registry = tokenizers.registry
    try:
        resolved = registry.resolve(ref)
        manifest: dict[str, Any] = registry.manifest(resolved.ref)
    except TokendError as exc:
        raise with_field(exc, "tokenizer") from None
    files = manifest.get("files") or {}
    training = manifest.get("training")
    training_json = ""
    if training:
        payload = {"training": training, "corpus": manifest.get("corpus")}
        training_json = json.dumps(payload, sort_keys=True, default=str)
    versions: list[int] = []
    aliases: dict[str, int] = {}
    if not resolved.builtin:
        for info in registry.list():
            if info.name == resolved.name:
                versions.extend(info.versions)
                aliases.update(info.aliases)
    return TokenizerManifest(
        engine=_engine_path(tokenizers, resolved.ref),
        name=resolved.name,
        version=resolved.version or 0,
        ref=resolved.ref,
        builtin=resolved.builtin,
        vocab_size=int(manifest.get("n_vocab", 0)),
        pattern=str(manifest.get("pattern", "")),
        special_tokens=dict(manifest.get("special_tokens", {})),
        sha256={file: str(info["sha256"]) for file, info in files.items()},
        training_json=training_json,
        created_at=str(manifest.get("created_at", "") or ""),
        versions=versions,
        aliases=aliases,
    )


def _engine_path(tokenizers: Tokenizers, ref: str) -> str:
    """The engine path ``ref`` runs on. The version is loaded if this worker has not yet, so
    that every worker answers the same (a worker's own table would say "not loaded" on one and
    "compiled" on the other); a version that does not load says why."""
    try:
        return engine_path(tokenizers.get(ref).encoding)
    except TokendError as exc:
        return f"does not load: {bounded(str(exc))}"
