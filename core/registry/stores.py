"""Pick the store for a registry location: a folder, or ``s3://bucket/prefix``.

Apart from ``store.py`` (the interface), so that the backends import the interface and this
module imports the backends, with no cycle between them.
"""

from __future__ import annotations

import os
from typing import Any

from tokend.core.registry.local import LocalStore
from tokend.core.registry.store import Store, check_location, url_scheme


def open_store(location: str | os.PathLike[str], **options: Any) -> Store:
    """The store for a folder path or ``s3://bucket/prefix`` (other URL schemes refused)."""
    check_location(location)
    if url_scheme(location) == "s3":
        from tokend.core.registry.s3 import S3Store  # noqa: PLC0415 (boto3 only when used)

        return S3Store(os.fspath(location))
    return LocalStore(location, **options)


