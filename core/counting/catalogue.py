"""The model catalogue: model name -> tokenizer, context window, max output tokens, chat rule.

Shipped for the OpenAI models tiktoken knows (``tokend/core/data/models.json``), extendable per
registry by ``<registry>/models.json`` in the same format, re-read when it changes (checked at
most once a second), like aliases. A dated or fine-tuned name takes the entry of its longest
listed prefix: ``gpt-4o-2024-08-06`` -> ``gpt-4o``, ``ft:gpt-4o-mini:org::id`` -> ``gpt-4o-mini``.

An entry::

    "my-llama": {"tokenizer": "llama3@stable", "context_window": 8192,
                 "max_output_tokens": 2048, "chat_rule": "template",
                 "chat_template": "{% for m in messages %}...",
                 "special_tokens_map": {"bos_token": "<|begin_of_text|>"}}

Chat rules: ``openai`` (3 per message, 1 per name, 3 to prime the reply), ``openai-0301``
(4 and -1), ``harmony`` (gpt-oss), ``template`` (the entry's Jinja chat template) or none.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from tokend.core.counting.images import ImageRule
from tokend.core.errors import CorruptData, UnknownTokenizer

FORMAT = "tokend-models"
FILE_NAME = "models.json"
CHAT_RULES = ("openai", "openai-0301", "harmony", "template")
CHECK_SECONDS = 1.0


@dataclass(frozen=True)
class ModelInfo:
    """One catalogue entry (see the module docstring)."""

    name: str
    tokenizer: str
    context_window: int
    max_output_tokens: int
    chat_rule: str | None = None
    # The OpenAI cookbook checked this model's chat rule against the API (docs/counting.md).
    verified: bool = False
    images: ImageRule | None = None
    chat_template: str | None = None
    special_tokens_map: Mapping[str, str] = field(default_factory=dict)
    source: str = "built-in"


def parse_models(doc: Any, source: str) -> dict[str, ModelInfo]:
    """Entries of a models file; CorruptData naming the file and the entry on any mistake."""
    if not isinstance(doc, Mapping) or doc.get("format") != FORMAT or doc.get("version") != 1:
        raise CorruptData(
            f'{source}: not a models file: expected {{"format": "{FORMAT}", "version": 1, '
            '"models": {...}}'
        )
    models = doc.get("models")
    if not isinstance(models, Mapping):
        raise CorruptData(f'{source}: "models" must map model names to entries')
    return {name: _entry(name, raw, source) for name, raw in models.items()}


def _entry(name: str, raw: Any, source: str) -> ModelInfo:
    where = f"{source}: model {name!r}"
    if not isinstance(raw, Mapping):
        raise CorruptData(f"{where}: an entry must be a JSON object")
    tokenizer = raw.get("tokenizer")
    if not isinstance(tokenizer, str) or not tokenizer:
        raise CorruptData(f"{where}: needs a tokenizer reference (e.g. \"o200k_base\")")
    numbers = {}
    for key in ("context_window", "max_output_tokens"):
        value = raw.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise CorruptData(f"{where}: {key} must be a whole number >= 0")
        numbers[key] = value
    rule = raw.get("chat_rule")
    if rule is not None and rule not in CHAT_RULES:
        raise CorruptData(f"{where}: chat_rule must be one of {', '.join(CHAT_RULES)}")
    template = raw.get("chat_template")
    if rule == "template" and not isinstance(template, str):
        raise CorruptData(f"{where}: chat_rule \"template\" needs a chat_template string")
    tokens_map = raw.get("special_tokens_map") or {}
    if not isinstance(tokens_map, Mapping) or not all(
        isinstance(v, str) for v in tokens_map.values()
    ):
        raise CorruptData(f"{where}: special_tokens_map must map names to token strings")
    return ModelInfo(
        name=name,
        tokenizer=tokenizer,
        chat_rule=rule,
        verified=bool(raw.get("verified", False)),
        images=_image_rule(raw.get("images"), where),
        chat_template=template if isinstance(template, str) else None,
        special_tokens_map=dict(tokens_map),
        source=source,
        **numbers,
    )


def _image_rule(raw: Any, where: str) -> ImageRule | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or raw.get("kind") not in ("tiles", "patches"):
        raise CorruptData(f'{where}: images must be {{"kind": "tiles"|"patches", ...}}')
    if raw["kind"] == "tiles":
        return ImageRule("tiles", base=int(raw.get("base", 0)), tile=int(raw.get("tile", 0)))
    return ImageRule("patches", multiplier=float(raw.get("multiplier", 1.0)))


def _builtin_models() -> dict[str, ModelInfo]:
    path = resources.files("tokend.core") / "data" / FILE_NAME
    return parse_models(json.loads(path.read_text(encoding="utf-8")), "built-in models.json")


class ModelCatalogue:
    """Built-in entries, overlaid by an optional extension file that is re-read on change."""

    def __init__(self, extension: Path | None = None) -> None:
        self._builtin = _builtin_models()
        self._extension = extension
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._checked = 0.0
        self._extra: dict[str, ModelInfo] = {}
        # The last failed read of the extension file (the previous entries stay served).
        self.error: str | None = None
        self.refresh(force=True)

    @classmethod
    def for_registry(cls, root: Path) -> ModelCatalogue:
        return cls(Path(root) / FILE_NAME)

    def refresh(self, *, force: bool = False) -> bool:
        """Re-read the extension file if it changed; True if the entries changed."""
        if self._extension is None:
            return False
        now = time.monotonic()
        if not force and now - self._checked < CHECK_SECONDS:
            return False
        with self._lock:
            self._checked = now
            try:
                st = os.stat(self._extension)
                stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
            except FileNotFoundError:
                stamp = None
            if stamp == self._stamp:
                return False
            if stamp is None:
                self._stamp, self._extra, self.error = None, {}, None
                return True
            try:
                text = self._extension.read_text(encoding="utf-8")
                extra = parse_models(json.loads(text), str(self._extension))
            except (OSError, ValueError) as exc:  # CorruptData and JSONDecodeError included
                self.error = str(exc)
                self._stamp = stamp  # keep serving the last good entries until it changes
                return False
            self._stamp, self._extra, self.error = stamp, extra, None
            return True

    def names(self) -> list[str]:
        self.refresh()
        return sorted({*self._builtin, *self._extra})

    def find(self, model: str) -> ModelInfo | None:
        """The entry for ``model`` (exact, else its longest listed prefix), or None."""
        self.refresh()
        base = model
        if base.startswith("ft:"):  # ft:gpt-4o-mini-2024-07-18:org::id
            base = base[3:].split(":", 1)[0]
        best: ModelInfo | None = None
        for table in (self._builtin, self._extra):  # the registry's entries win ties
            for name, info in table.items():
                if (base == name or base.startswith(name + "-")) and (
                    best is None or len(name) >= len(best.name)
                ):
                    best = info
        return best

    def get(self, model: str) -> ModelInfo:
        """Like :meth:`find`, but an unknown model is UnknownTokenizer listing a few known."""
        info = self.find(model)
        if info is None:
            known = ", ".join(self.names()[:12])
            raise UnknownTokenizer(
                f"unknown model {model[:100]!r}; known models include {known} (add one to the "
                f"registry's {FILE_NAME})"
            )
        return info


_default: ModelCatalogue | None = None


def default_catalogue() -> ModelCatalogue:
    """The built-in catalogue (no extension file), shared."""
    global _default  # noqa: PLW0603 - one lazily built read-only table per process
    if _default is None:
        _default = ModelCatalogue()
    return _default
