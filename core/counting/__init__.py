"""What an API call costs in tokens: chat rules, tools, images, templates, truncate and chunk.

``count_chat`` counts a whole chat request for a model (its rule comes from the model
catalogue); ``truncate`` cuts a text to a token budget; ``chunk`` splits a document into pieces
of at most N tokens. The rules and their sources are listed in ``docs/counting.md``.
"""

from __future__ import annotations

from tokend.core.counting.breakdown import Breakdown
from tokend.core.counting.catalogue import ModelCatalogue, ModelInfo, default_catalogue
from tokend.core.counting.chat import ChatCount, count_chat
from tokend.core.counting.chunking import Chunk, chunk, iter_chunks
from tokend.core.counting.templates import render_chat_template
from tokend.core.counting.truncation import TruncateResult, truncate
from tokend.core.counting.version_template import read_chat_metadata, version_chat_model

__all__ = [
    "Breakdown",
    "ChatCount",
    "Chunk",
    "ModelCatalogue",
    "ModelInfo",
    "TruncateResult",
    "chunk",
    "count_chat",
    "default_catalogue",
    "iter_chunks",
    "read_chat_metadata",
    "render_chat_template",
    "truncate",
    "version_chat_model",
]
