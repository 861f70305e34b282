"""The registry's plain data: resolved references, versions, listings, problems, contents."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ResolvedRef:
    """What a reference points at: a registry version, or a built-in encoding (version None)."""

    name: str
    version: int | None
    builtin: bool

    @property
    def ref(self) -> str:
        """The canonical reference string (``name@7`` or the built-in's name)."""
        return self.name if self.version is None else f"{self.name}@{self.version}"


@dataclass(frozen=True)
class VersionInfo:
    """A published version and its manifest; ``path`` is its folder or ``s3://`` URL."""

    name: str
    version: int
    manifest: dict[str, Any]
    path: str

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"


@dataclass(frozen=True)
class TokenizerInfo:
    """One entry of :meth:`Registry.list`."""

    name: str
    versions: tuple[int, ...]
    aliases: dict[str, int]
    latest: int | None
    builtin: bool


@dataclass(frozen=True)
class Problem:
    """One finding of :meth:`Registry.verify`: which reference, which file, what is wrong."""

    ref: str
    path: str
    message: str


@dataclass(frozen=True)
class TokenizerData:
    """The verified contents of a version (or built-in): everything needed to build or export."""

    resolved: ResolvedRef
    ranks: dict[bytes, int]
    pat_str: str
    special_tokens: dict[str, int]
    explicit_n_vocab: int | None
    manifest: dict[str, Any] | None = field(default=None)
    fmt: str = "tiktoken"  # or a key of formats.files.FILE_NAMES: then `file` holds it
    file: bytes | None = None
    normalizer: str | None = None  # nfc|nfd|nfkc|nfkd applied before a rank table's BPE
    original: bytes | None = None  # the imported file's exact bytes (export --format original)
