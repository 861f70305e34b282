"""Which priced models tokend counts: every model genai-prices lists for OpenAI, Anthropic,
Google, Meta, Mistral, DeepSeek and Qwen, resolved through the model catalogue.

A priced model either resolves to a catalogue entry (by name, alias or longest listed prefix,
as any count resolves it: ``counted`` with the entry's exactness) or is listed as not counted
with the reason; a name that says it bills audio, images, embeddings... (``NOT_CHAT``) is not
counted even when its prefix is a chat model's (``gpt-4o-mini-tts``); ``tokend models list
--all`` shows them. Qwen's models are priced by their hosts only
(genai-prices has no Qwen provider): every priced model whose name says ``qwen`` counts as
Qwen's.

>>> row = coverage_row("openai", "openai", "gpt-4o-2024-08-06", default_catalogue())
>>> row["counted"], row["model"], row["exactness"]
(True, 'gpt-4o', 'exact')
"""

from __future__ import annotations

from typing import Any

from tokend.core.counting.catalogue import ModelCatalogue, default_catalogue
from tokend.core.counting.prices import _genai_prices

# The seven vendors: genai-prices' provider id -> the catalogue's vendor (Qwen: by name).
VENDOR_PROVIDERS = {"openai": "openai", "anthropic": "anthropic", "google": "google",
                    "meta": "meta", "mistral": "mistral", "deepseek": "deepseek"}
QWEN = "qwen"
# Kinds of model that bill something other than a chat prompt's text tokens, by a word of the
# name (first match wins): tokend counts chat requests, so these are listed with this reason.
NOT_CHAT: tuple[tuple[str, str], ...] = (
    ("embed", "an embedding model"), ("ocr", "an OCR model (priced per page)"),
    ("tts", "a text-to-speech model"), ("transcribe", "a speech-to-text model"),
    ("whisper", "a speech-to-text model"), ("voxtral", "an audio model"),
    ("audio", "an audio model"), ("realtime", "a realtime audio model"),
    ("live", "a realtime audio model"), ("image", "an image-generation model"),
    ("dall-e", "an image-generation model"), ("imagen", "an image-generation model"),
    ("veo", "a video model"), ("sora", "a video model"), ("moderation", "a moderation model"),
    ("banana", "an image-generation model"), ("omni", "an audio and video model"),
)
CLOSED = {"anthropic": "Anthropic publishes no tokenizer; tokend estimates only the Claude "
          "models it has coefficients for",
          "google": "Google publishes no Gemini tokenizer; tokend estimates only the Gemini "
          "models it has coefficients for"}


def priced_models() -> list[tuple[str, str, str]]:
    """(vendor, provider, model id) of every priced model of the seven vendors."""
    gp = _genai_prices()
    rows: list[tuple[str, str, str]] = []
    for provider in gp.data_snapshot.get_snapshot().providers:
        vendor = VENDOR_PROVIDERS.get(provider.id)
        for model in provider.models:
            if vendor is not None:
                rows.append((vendor, provider.id, model.id))
            elif QWEN in model.id.lower():
                rows.append((QWEN, provider.id, model.id))
    return rows


def coverage_row(vendor: str, provider: str, model: str, catalogue: ModelCatalogue
                 ) -> dict[str, Any]:
    """One priced model: counted (the catalogue entry and its exactness) or the reason not."""
    info = catalogue.find(_bare(model))
    row: dict[str, Any] = {"vendor": vendor, "provider": provider, "price_model": model}
    word = _not_chat_word(model)
    if info is not None and (word is None or word in info.name.lower()):
        return {**row, "counted": True, "model": info.name, "exactness": info.exactness,
                "reason": info.fixed_reason()}
    return {**row, "counted": False, "model": None, "exactness": None,
            "reason": not_counted_reason(vendor, model)}


def not_counted_reason(vendor: str, model: str) -> str:
    """Why tokend does not count a priced model."""
    word = _not_chat_word(model)
    if word is not None:
        return f"{dict(NOT_CHAT)[word]}: tokend counts chat and text requests"
    if vendor in CLOSED:
        return f"not catalogued: {CLOSED[vendor]}"
    return ("not catalogued: tokenizer and chat format unknown to tokend (add it to the "
            "registry's models.json, or `tokend models install --hf OWNER/REPO`)")


def _not_chat_word(model: str) -> str | None:
    """The NOT_CHAT word in a model's name (an embedding, audio, image... model), if any."""
    name = model.lower()
    return next((word for word, _ in NOT_CHAT if word in name), None)


def coverage(catalogue: ModelCatalogue | None = None) -> list[dict[str, Any]]:
    """Every priced model of the seven vendors, counted or with the reason it is not."""
    chosen = catalogue or default_catalogue()
    return [coverage_row(v, p, m, chosen) for v, p, m in priced_models()]


def _bare(model: str) -> str:
    """A host's spelling reduced to the model's name: ``@cf/qwen/qwen3-30b`` -> the same, the
    catalogue's spellings handle owner prefixes; ``qwen.qwen3-32b-v1:0`` (Bedrock) ->
    ``qwen3-32b``.

    >>> _bare("qwen.qwen3-32b-v1:0"), _bare("@cf/qwen/qwq-32b")
    ('qwen3-32b', 'qwen/qwq-32b')
    """
    name = model.removeprefix("@cf/")
    if "." in name.split("/")[0] and name.split(".")[0].isalpha():
        name = name.split(".", 1)[1].split(":")[0].removesuffix("-v1")
    return name
