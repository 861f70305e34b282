"""What a registry needs from its storage, and the rules for a location (folder or URL).

A :class:`Store` holds the bytes (versions, aliases, the generation stamp); the
:class:`~tokend.core.registry.registry.Registry` above it holds every rule (names, manifests,
sha256 checks, resolution). Two stores exist: a local folder (``local.py``: flock, fsync and
rename) and S3-compatible object storage (``s3.py``: conditional writes, no locks).

A registry location is a folder path or a URL; ``s3://bucket/prefix`` is the only URL scheme
understood, and any other (``gs://``, ``http://``...) is refused rather than taken as a folder
(``stores.open_store`` picks the store).
"""

from __future__ import annotations

import contextlib
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

from tokend.core.errors import InvalidInput, shown

# A version's metadata, built once its number is known (``manifest_for(7)``).
ManifestFor = Callable[[int], dict[str, Any]]
# A change of a name's aliases: current table in, new table out (may raise to refuse).
AliasChange = Callable[[dict[str, int]], dict[str, int]]

SUPPORTED_SCHEMES = ("s3",)
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def url_scheme(location: str | os.PathLike[str]) -> str | None:
    """The URL scheme of a registry location, or None for a folder path.

    >>> url_scheme("s3://bucket/reg"), url_scheme("/var/lib/tokend"), url_scheme("GS://b")
    ('s3', None, 'gs')
    """
    match = _SCHEME.match(os.fspath(location))
    return match.group(1).lower() if match else None


def check_location(location: str | os.PathLike[str]) -> str | os.PathLike[str]:
    """Return ``location`` if it is a folder or a supported URL; else InvalidInput naming it."""
    scheme = url_scheme(location)
    if scheme is not None and scheme not in SUPPORTED_SCHEMES:
        raise InvalidInput(
            f"registry {shown(os.fspath(location))}: URL scheme {scheme!r} is not supported; "
            "use a folder path or s3://bucket/prefix (S3-compatible object storage)"
        )
    return location


class Store(ABC):
    """The storage under one registry: versions, aliases and a change stamp.

    Guarantees every implementation gives: a version is visible only once complete (its
    manifest is the last thing written), is never changed afterwards, and its number is never
    handed out twice; alias changes are atomic and never lose a concurrent change.
    """

    location: str  # the folder or URL, for messages

    @abstractmethod
    def where(self, name: str | None = None, version: int | None = None,
              file: str | None = None) -> str:
        """The path or URL of a name, version or file, for messages."""

    @abstractmethod
    def names(self) -> list[str]:
        """Valid names that may have versions (sorted; callers check :meth:`versions`)."""

    @abstractmethod
    def versions(self, name: str) -> list[int]:
        """Sorted visible (complete) versions of ``name``."""

    @abstractmethod
    def last_version(self, name: str) -> int:
        """The highest version ever assigned to ``name`` (0 if none)."""

    @abstractmethod
    def counter_problem(self, name: str, versions: list[int]) -> str | None:
        """What is wrong with the version counter of ``name``, if anything (for verify)."""

    @abstractmethod
    def counter_where(self, name: str) -> str:
        """Where the version counter of ``name`` is kept, for messages."""

    @abstractmethod
    def read(self, name: str, version: int, file: str) -> bytes:
        """The bytes of one file of a version; FileNotFoundError if it is missing."""

    @abstractmethod
    def read_aliases(self, name: str, *, kept: bool = False) -> bytes | None:
        """The aliases file of ``name`` as stored, or None if there is none; ``kept``: the
        copy of the last one written through :meth:`update_aliases` instead."""

    @abstractmethod
    def publish(self, name: str, contents: Mapping[str, bytes],
                manifest_for: ManifestFor) -> tuple[int, dict[str, Any]]:
        """Store ``contents`` as the next version of ``name``; return (version, manifest)."""

    @abstractmethod
    def update_aliases(self, name: str, change: AliasChange) -> None:
        """Apply ``change`` to the aliases of ``name`` atomically (retried on a conflict),
        then keep a copy of the result (``KEPT_ALIASES_FILE``)."""

    @abstractmethod
    def remove_versions(self, name: str, versions: list[int]) -> None:
        """Make ``versions`` invisible, then remove their files (inside :meth:`exclusive`)."""

    @abstractmethod
    def generation(self) -> str:
        """A cheap token that changes whenever a version or alias is published or removed."""

    @abstractmethod
    def clean(self) -> list[str]:
        """Remove what dead publishers left behind; returns what was removed."""

    def exclusive(self) -> contextlib.AbstractContextManager[Any]:
        """Hold off other writers for a check-then-delete (a no-op where no lock exists)."""
        return contextlib.nullcontext()

    def deleting(self, name: str, versions: list[int]) -> contextlib.AbstractContextManager[Any]:
        """Mark ``versions`` as being deleted for the ``with`` body (where there is no lock)."""
        return contextlib.nullcontext()

    def being_deleted(self, name: str, version: int) -> bool:
        """True if ``version`` is gone or marked by a running :meth:`deleting` (no-lock stores:
        checked after an alias write, which a delete under a lock cannot interleave with)."""
        return False

    @property
    def local_root(self) -> str | None:
        """The folder of a local store (for files kept beside it), None for remote ones."""
        return None
