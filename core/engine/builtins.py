"""The built-in encodings (tiktoken's) and the model-name table, loaded lazily and once.

Rank files ship gzipped in ``tokend/core/data``; each ``<name>.json`` names its rank file and
the sha256 of the uncompressed contents, which is checked on load.
"""

from __future__ import annotations

import json
import threading
from importlib import resources
from typing import Any

from tokend.core.engine import default_engine
from tokend.core.engine.cache import DEFAULT_CACHE_ENTRIES
from tokend.core.engine.encoding import Encoding
from tokend.core.errors import CorruptData, UnknownTokenizer, shown
from tokend.core.formats import load_tiktoken_bpe

BUILTIN_NAMES: tuple[str, ...] = (
    "gpt2",
    "r50k_base",
    "p50k_base",
    "p50k_edit",
    "cl100k_base",
    "o200k_base",
    "o200k_harmony",
)

# gpt2 is r50k_base under another name (same ranks, pattern and special token).
_ALIASES = {"gpt2": "r50k_base"}

# Copied from tiktoken 0.14 (tiktoken/model.py).
MODEL_PREFIX_TO_ENCODING: dict[str, str] = {
    "o1-": "o200k_base",
    "o3-": "o200k_base",
    "o4-mini-": "o200k_base",
    # chat
    "gpt-5": "o200k_base",
    "gpt-4.5-": "o200k_base",
    "gpt-4.1-": "o200k_base",
    "chatgpt-4o-": "o200k_base",
    "gpt-4o-": "o200k_base",  # e.g., gpt-4o-2024-05-13
    "gpt-4-": "cl100k_base",  # e.g., gpt-4-0314, etc., plus gpt-4-32k
    "gpt-3.5-turbo-": "cl100k_base",  # e.g, gpt-3.5-turbo-0301, -0401, etc.
    "gpt-35-turbo-": "cl100k_base",  # Azure deployment name
    "gpt-oss-": "o200k_harmony",
    # fine-tuned
    "ft:gpt-4o": "o200k_base",
    "ft:gpt-4": "cl100k_base",
    "ft:gpt-3.5-turbo": "cl100k_base",
    "ft:davinci-002": "cl100k_base",
    "ft:babbage-002": "cl100k_base",
}

MODEL_TO_ENCODING: dict[str, str] = {
    # reasoning
    "o1": "o200k_base",
    "o3": "o200k_base",
    "o4-mini": "o200k_base",
    # chat
    "gpt-5": "o200k_base",
    "gpt-4.1": "o200k_base",
    "gpt-4o": "o200k_base",
    "gpt-4": "cl100k_base",
    "gpt-3.5-turbo": "cl100k_base",
    "gpt-3.5": "cl100k_base",  # Common shorthand
    "gpt-35-turbo": "cl100k_base",  # Azure deployment name
    # base
    "davinci-002": "cl100k_base",
    "babbage-002": "cl100k_base",
    # embeddings
    "text-embedding-ada-002": "cl100k_base",
    "text-embedding-3-small": "cl100k_base",
    "text-embedding-3-large": "cl100k_base",
    # DEPRECATED MODELS
    # text (DEPRECATED)
    "text-davinci-003": "p50k_base",
    "text-davinci-002": "p50k_base",
    "text-davinci-001": "r50k_base",
    "text-curie-001": "r50k_base",
    "text-babbage-001": "r50k_base",
    "text-ada-001": "r50k_base",
    "davinci": "r50k_base",
    "curie": "r50k_base",
    "babbage": "r50k_base",
    "ada": "r50k_base",
    # code (DEPRECATED)
    "code-davinci-002": "p50k_base",
    "code-davinci-001": "p50k_base",
    "code-cushman-002": "p50k_base",
    "code-cushman-001": "p50k_base",
    "davinci-codex": "p50k_base",
    "cushman-codex": "p50k_base",
    # edit (DEPRECATED)
    "text-davinci-edit-001": "p50k_edit",
    "code-davinci-edit-001": "p50k_edit",
    # old embeddings (DEPRECATED)
    "text-similarity-davinci-001": "r50k_base",
    "text-similarity-curie-001": "r50k_base",
    "text-similarity-babbage-001": "r50k_base",
    "text-similarity-ada-001": "r50k_base",
    "text-search-davinci-doc-001": "r50k_base",
    "text-search-curie-doc-001": "r50k_base",
    "text-search-babbage-doc-001": "r50k_base",
    "text-search-ada-doc-001": "r50k_base",
    "code-search-babbage-code-001": "r50k_base",
    "code-search-ada-code-001": "r50k_base",
    # open source
    "gpt2": "gpt2",
    "gpt-2": "gpt2",  # Maintains consistency with gpt-4
}

_lock = threading.Lock()
# (name, engine) -> the shared instance; one per engine, so tests can run both side by side
_encodings: dict[tuple[str, str], Encoding] = {}
_ranks: dict[str, dict[bytes, int]] = {}  # rank file name -> parsed ranks (shared, read-only)


def list_encoding_names() -> list[str]:
    """Names accepted by :func:`get_encoding`.

    >>> "o200k_base" in list_encoding_names()
    True
    """
    return list(BUILTIN_NAMES)


def load_builtin_spec(name: str) -> dict[str, Any]:
    """The JSON description of a built-in (pat_str, special_tokens, ranks_file, ranks_sha256)."""
    if name not in BUILTIN_NAMES:
        raise UnknownTokenizer(
            f"unknown encoding {shown(name)}; the built-in encodings are {', '.join(BUILTIN_NAMES)}"
        )
    source = _ALIASES.get(name, name)
    path = resources.files("tokend.core") / "data" / f"{source}.json"
    try:
        spec: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CorruptData(f"{path}: cannot read the description of {shown(name)} ({exc})") from None
    spec["name"] = name
    return spec


def builtin_n_vocab(name: str) -> int:
    """n_vocab of a built-in from its JSON description, without loading its rank table.

    Every built-in's ids end with its special tokens or, for p50k/r50k, at its declared
    ``explicit_n_vocab`` (checked against the loaded tables and tiktoken by the tests).
    """
    spec = load_builtin_spec(name)
    specials: dict[str, int] = spec.get("special_tokens") or {}
    return max(int(spec.get("explicit_n_vocab") or 0), max(specials.values(), default=-1) + 1)


def _load_ranks(ranks_file: str, sha256: str) -> dict[bytes, int]:
    # Called with _lock held; o200k_base and o200k_harmony share one parsed table.
    ranks = _ranks.get(ranks_file)
    if ranks is None:
        path = resources.files("tokend.core") / "data" / f"{ranks_file}.gz"
        with resources.as_file(path) as real_path:
            ranks = load_tiktoken_bpe(real_path, expected_sha256=sha256)
        _ranks[ranks_file] = ranks
    return ranks


def get_encoding(name: str) -> Encoding:
    """The built-in encoding ``name``, loaded (and sha256-checked) on first use, then shared.

    >>> get_encoding("cl100k_base").encode("hello world")
    [15339, 1917]
    """
    key = (name, default_engine())
    encoding = _encodings.get(key)
    if encoding is not None:
        return encoding
    with _lock:
        encoding = _encodings.get(key)
        if encoding is None:
            encoding = _build(name, DEFAULT_CACHE_ENTRIES)
            encoding.share_as_builtin(get_encoding)  # pickles by name
            _encodings[key] = encoding
    return encoding


def new_builtin_encoding(name: str, *, cache_entries: int) -> Encoding:
    """A new instance of the built-in ``name`` with its own cache of ``cache_entries``.

    The parsed rank table is shared with every other instance; only the caches and the
    per-instance lookup tables are new (a server uses this so --cache-entries applies).
    """
    with _lock:
        return _build(name, cache_entries)


def _build(name: str, cache_entries: int) -> Encoding:
    # Called with _lock held.
    spec = load_builtin_spec(name)
    ranks = _load_ranks(spec["ranks_file"], spec["ranks_sha256"])
    return Encoding(
        name,
        pat_str=spec["pat_str"],
        mergeable_ranks=ranks,
        special_tokens=dict(spec["special_tokens"]),
        explicit_n_vocab=spec.get("explicit_n_vocab"),
        cache_entries=cache_entries,
    )


def encoding_name_for_model(model_name: str) -> str:
    """The encoding a model uses: exact names first, then known prefixes (tiktoken's table).

    >>> encoding_name_for_model("gpt-4o-2024-05-13")
    'o200k_base'
    """
    if model_name in MODEL_TO_ENCODING:
        return MODEL_TO_ENCODING[model_name]
    for prefix, encoding_name in MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(prefix):
            return encoding_name
    raise UnknownTokenizer(
        f"cannot map model {shown(model_name)} to an encoding; use get_encoding() with one of "
        f"{', '.join(BUILTIN_NAMES)}"
    )


def encoding_for_model(model_name: str) -> Encoding:
    """The encoding a model uses (see :func:`encoding_name_for_model`)."""
    return get_encoding(encoding_name_for_model(model_name))
