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

An entry may name its model's ``tokenizer_config.json`` instead (``"tokenizer_config":
"llama3/tokenizer_config.json"``, relative to the registry): its chat template(s) and special
tokens are read when models.json is (re)read.

Chat rules: ``openai`` (3 per message, 1 per name, 3 to prime the reply), ``openai-0301``
(4 and -1), ``harmony`` (gpt-oss), ``template`` (the entry's Jinja chat template), ``llama3`` /
``llama4`` (llama-models' chat format), ``mistral-v1`` ... ``mistral-v7`` (mistral-common's
instruct tokenizers), ``estimate`` (closed tokenizers: ``estimate.py``) or none.

Vendor entries also carry ``vendor``, ``aliases`` (Hugging Face repo ids, provider spellings;
matched case-insensitively after the reductions of ``spellings.py``), ``install`` (the bundle
``tokend models install`` fetches the tokenizer from), ``estimate`` (the estimate rule's
coefficients) and ``estimate_reason`` (why every count for the model is an estimate).
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

from tokend.core.counting.estimate import Estimate, estimate_reason, parse_estimate
from tokend.core.counting.images import ImageRule
from tokend.core.counting.spellings import candidates
from tokend.core.errors import CorruptData, UnknownTokenizer

FORMAT = "tokend-models"
FILE_NAME = "models.json"
CHAT_RULES = ("openai", "openai-0301", "harmony", "template", "llama3", "llama4", "mistral-v1",
              "mistral-v2", "mistral-v3", "mistral-v7", "estimate")
EXACTNESS = ("exact", "framing-estimate", "estimate")
CHECK_SECONDS = 1.0
MEMO_ENTRIES = 4096


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
    # A tokenizer_config's "tool_use" template, used when the request has tools (as
    # transformers picks it).
    tool_chat_template: str | None = None
    special_tokens_map: Mapping[str, str] = field(default_factory=dict)
    source: str = "built-in"
    vendor: str = "openai"
    aliases: tuple[str, ...] = ()
    # The bundle `tokend models install` fetches this model's tokenizer from (open models).
    install: str | None = None
    estimate: Estimate | None = None
    # Why every count for this model is an estimate, whatever the rule ("" when it is not).
    estimate_reason: str = ""

    @property
    def exactness(self) -> str:
        """``exact`` (a public tokenizer and framing), ``framing-estimate`` (exact text, an
        unverified chat rule) or ``estimate`` (no public tokenizer)."""
        if self.estimate is not None or self.estimate_reason:
            return "estimate"
        if self.chat_rule in ("openai", "openai-0301") and not self.verified:
            return "framing-estimate"
        return "exact"

    def text_tokens(self, base_count: int) -> int:
        """A text's count for this model from its tokenizer's count (scaled by an estimate)."""
        if self.estimate is None:
            return base_count
        return round(self.estimate.factor * base_count)

    def fixed_reason(self) -> str:
        """The reason every count for this model is an estimate ("" if none)."""
        if self.estimate is not None:
            return estimate_reason(self.name, self.tokenizer, self.estimate)
        return self.estimate_reason


def parse_models(doc: Any, source: str, base: Path | None = None) -> dict[str, ModelInfo]:
    """Entries of a models file; CorruptData naming the file and the entry on any mistake.

    ``base`` is the folder a ``tokenizer_config`` path is relative to (a registry's root).
    """
    if not isinstance(doc, Mapping) or doc.get("format") != FORMAT or doc.get("version") != 1:
        raise CorruptData(
            f'{source}: not a models file: expected {{"format": "{FORMAT}", "version": 1, '
            '"models": {...}}'
        )
    models = doc.get("models")
    if not isinstance(models, Mapping):
        raise CorruptData(f'{source}: "models" must map model names to entries')
    return {name: _entry(name, raw, source, base) for name, raw in models.items()}


def _entry(name: str, raw: Any, source: str, base: Path | None) -> ModelInfo:
    where = f"{source}: model {name!r}"
    if not isinstance(raw, Mapping):
        raise CorruptData(f"{where}: an entry must be a JSON object")
    config: dict[str, Any] = {}
    if raw.get("tokenizer_config") is not None:
        config = _tokenizer_config(raw["tokenizer_config"], base, where)
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
    template = raw.get("chat_template", config.get("chat_template"))
    if rule == "estimate" and raw.get("estimate") is None:
        raise CorruptData(f'{where}: chat_rule "estimate" needs an "estimate" object')
    aliases = raw.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and a for a in aliases):
        raise CorruptData(f"{where}: aliases must be a list of model names")
    for key in ("vendor", "install", "estimate_reason"):
        if not isinstance(raw.get(key, ""), str):
            raise CorruptData(f"{where}: {key} must be a string")
    if rule == "template" and not isinstance(template, str):
        raise CorruptData(f"{where}: chat_rule \"template\" needs a chat_template string (or "
                          "a tokenizer_config with one)")
    tokens_map = {**config.get("special_tokens_map", {}), **(raw.get("special_tokens_map") or {})}
    if not all(isinstance(v, str) for v in tokens_map.values()):
        raise CorruptData(f"{where}: special_tokens_map must map names to token strings")
    return ModelInfo(
        name=name,
        tokenizer=tokenizer,
        chat_rule=rule,
        verified=bool(raw.get("verified", False)),
        images=_image_rule(raw.get("images"), where),
        chat_template=template if isinstance(template, str) else None,
        tool_chat_template=config.get("tool_chat_template"),
        special_tokens_map=dict(tokens_map),
        source=source,
        vendor=raw.get("vendor") or "openai",
        aliases=tuple(aliases),
        install=raw.get("install") or None,
        estimate=None if raw.get("estimate") is None else parse_estimate(raw["estimate"], where),
        estimate_reason=raw.get("estimate_reason") or "",
        **numbers,
    )


SPECIAL_TOKEN_KEYS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                      "cls_token", "mask_token")


def _tokenizer_config(relative: Any, base: Path | None, where: str) -> dict[str, Any]:
    """The chat template(s) and special tokens of a model's tokenizer_config.json.

    ``chat_template`` is a string or a list of ``{"name", "template"}`` ("default", and
    "tool_use" for requests with tools); each ``*_token`` is a string or an AddedToken object
    (``{"content": ...}``).
    """
    if base is None or not isinstance(relative, str) or not relative:
        raise CorruptData(f"{where}: tokenizer_config must be a path relative to the registry")
    path = (base / relative).resolve()
    if not path.is_relative_to(base.resolve()):
        raise CorruptData(f"{where}: tokenizer_config {relative[:100]!r} leaves the registry")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CorruptData(f"{where}: cannot read tokenizer_config {path}: {exc}") from None
    if not isinstance(data, Mapping):
        raise CorruptData(f"{where}: {path} is not a JSON object")
    return parse_tokenizer_config(data)


def parse_tokenizer_config(data: Mapping[str, Any]) -> dict[str, Any]:
    """``chat_template``, ``tool_chat_template`` and ``special_tokens_map`` of a parsed
    tokenizer_config.json (the keys it has), read as transformers reads them."""
    out: dict[str, Any] = {"special_tokens_map": {}}
    templates = data.get("chat_template")
    if isinstance(templates, str):
        out["chat_template"] = templates
    elif isinstance(templates, list):
        named = {t.get("name"): t.get("template") for t in templates if isinstance(t, Mapping)}
        out["chat_template"] = named.get("default")
        out["tool_chat_template"] = named.get("tool_use")
    for key in SPECIAL_TOKEN_KEYS:
        value = data.get(key)
        if isinstance(value, Mapping):
            value = value.get("content")
        if isinstance(value, str):
            out["special_tokens_map"][key] = value
    return out


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
        self._indexed: tuple[tuple[int, int] | None, dict[str, ModelInfo]] | None = None
        # Answers of find() for the current index (most requests name a few models).
        self._found: tuple[dict[str, ModelInfo], dict[str, ModelInfo | None]] = ({}, {})
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
                extra = parse_models(json.loads(text), str(self._extension),
                                     self._extension.parent)
            except (OSError, ValueError) as exc:  # CorruptData and JSONDecodeError included
                self.error = str(exc)
                self._stamp = stamp  # keep serving the last good entries until it changes
                return False
            self._stamp, self._extra, self.error = stamp, extra, None
            return True

    def names(self) -> list[str]:
        self.refresh()
        return sorted({*self._builtin, *self._extra})

    def entries(self) -> list[ModelInfo]:
        """Every entry (a registry's entry replaces a built-in of the same name), by name."""
        self.refresh()
        merged = {**self._builtin, **self._extra}
        return [merged[name] for name in sorted(merged)]

    def _index(self) -> dict[str, ModelInfo]:
        """Lowercased names and aliases -> entries; the registry's win over built-ins."""
        stamp = self._stamp
        if self._indexed is None or self._indexed[0] != stamp:
            index: dict[str, ModelInfo] = {}
            for table in (self._builtin, self._extra):
                for info in table.values():
                    for key in (*info.aliases, info.name):  # a name wins over an alias
                        index[key.lower()] = info
            self._indexed = (stamp, index)
        return self._indexed[1]

    def find(self, model: str) -> ModelInfo | None:
        """The entry for ``model``, or None.

        Each spelling of ``candidates`` (``spellings.py``) is looked up as a name or alias,
        case-insensitively; failing that, the longest listed name or alias that is a prefix
        of a spelling followed by ``-`` (``gpt-4o-2024-08-06`` -> ``gpt-4o``).
        """
        self.refresh()
        index = self._index()
        memo = self._found
        if memo[0] is not index:  # the entries changed: forget earlier answers
            memo = self._found = (index, {})
        if model in memo[1]:
            return memo[1][model]
        if len(memo[1]) >= MEMO_ENTRIES:
            memo[1].clear()
        found = memo[1][model] = self._lookup(model, index)
        return found

    @staticmethod
    def _lookup(model: str, index: dict[str, ModelInfo]) -> ModelInfo | None:
        base = model
        if base.startswith("ft:"):  # ft:gpt-4o-mini-2024-07-18:org::id
            base = base[3:].split(":", 1)[0]
        spellings = candidates(base)
        for spelling in spellings:
            if spelling in index:
                return index[spelling]
        for spelling in spellings:
            best = ""
            for key in index:
                if len(key) > len(best) and spelling.startswith(key + "-"):
                    best = key
            if best:
                return index[best]
        return None

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


def not_installed(info: ModelInfo) -> str:
    """What to do when ``info``'s tokenizer is not in the registry (or no registry is used)."""
    if info.install:
        return (f"{info.name} is counted with the tokenizer {info.tokenizer!r}, which is not "
                f"installed: run `tokend models install {info.name}` (it fetches "
                f"{info.install!r} once, pinned by sha256), then count through a server on "
                "that registry, or pass encoding=Registry(...).load(...)")
    return (f"{info.name} is counted with the tokenizer {info.tokenizer!r}, which is neither "
            "built in nor in the registry; import it (`tokend registry import "
            f"{info.tokenizer} --from FILE`) or pass encoding=...")


_default: ModelCatalogue | None = None


def default_catalogue() -> ModelCatalogue:
    """The built-in catalogue (no extension file), shared."""
    global _default  # noqa: PLW0603 - one lazily built read-only table per process
    if _default is None:
        _default = ModelCatalogue()
    return _default
