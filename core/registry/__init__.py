"""The registry of trained tokenizers: rules in ``registry.py``, storage in ``local.py``/``s3.py``.

``Registry(location)`` takes a folder path or ``s3://bucket/prefix``; see ``store.py`` for what
a storage backend must guarantee.
"""

from tokend.core.registry.model import (
    Problem,
    ResolvedRef,
    TokenizerData,
    TokenizerInfo,
    VersionInfo,
)
from tokend.core.registry.read import VERSION_FILES
from tokend.core.registry.registry import Registry
from tokend.core.registry.store import SUPPORTED_SCHEMES, Store, check_location, url_scheme

__all__ = [
    "SUPPORTED_SCHEMES",
    "VERSION_FILES",
    "Problem",
    "Registry",
    "ResolvedRef",
    "Store",
    "TokenizerData",
    "TokenizerInfo",
    "VersionInfo",
    "check_location",
    "url_scheme",
]
