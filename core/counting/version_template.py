"""A registry version's own chat template: stored at import, used when counting its messages.

``tokend registry import NAME --from ... --tokenizer-config tokenizer_config.json`` keeps the
file's chat template(s) and the special tokens they use (read by the catalogue's
``parse_tokenizer_config``, as transformers reads them) in the version's manifest under
``"chat"``::

    "chat": {"chat_template": "...", "tool_chat_template": "..." | null,
             "special_tokens_map": {"bos_token": "<s>"}, "source": "tokenizer_config.json"}

Counting messages for that version then uses the ``template`` rule, unless a catalogue model
for the request names a chat rule of its own (an explicit catalogue entry wins).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tokend.core.counting.catalogue import ModelInfo, parse_tokenizer_config
from tokend.core.counting.templates import compile_chat_template
from tokend.core.errors import CorruptData, InvalidInput

MANIFEST_KEY = "chat"


def read_chat_metadata(path: Path) -> dict[str, Any]:
    """The ``"chat"`` manifest metadata of a tokenizer_config.json; InvalidInput naming the file
    when it cannot be read, has no chat template, or a template does not compile."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"cannot read tokenizer config {path}: {exc}") from None
    if not isinstance(data, Mapping):
        raise InvalidInput(f"tokenizer config {path} is not a JSON object")
    return chat_metadata(data, source=Path(path).name, where=str(path))


def chat_metadata(data: Mapping[str, Any], *, source: str, where: str) -> dict[str, Any]:
    """Validated ``"chat"`` metadata of a parsed tokenizer_config (:func:`read_chat_metadata`)."""
    config = parse_tokenizer_config(data)
    template = config.get("chat_template")
    if not isinstance(template, str):
        raise InvalidInput(
            f"tokenizer config {where} has no chat_template (a string, or a list with a "
            '"default" {"name", "template"} entry)'
        )
    tool_template = config.get("tool_chat_template")
    for label, text in (("chat_template", template), ("tool_use template", tool_template)):
        if not isinstance(text, str):
            continue
        try:
            compile_chat_template(text)
        except InvalidInput as exc:
            raise InvalidInput(f"tokenizer config {where}: {label}: {exc}") from None
    return {
        "chat_template": template,
        "tool_chat_template": tool_template if isinstance(tool_template, str) else None,
        "special_tokens_map": dict(config["special_tokens_map"]),
        "source": source,
    }


def version_chat_model(
    ref: str, manifest: Mapping[str, Any], info: ModelInfo | None = None
) -> ModelInfo | None:
    """The entry to count ``ref``'s messages with: ``info`` if it names a chat rule, else the
    version's stored template (keeping ``info``'s windows), else ``info``."""
    if info is not None and info.chat_rule is not None:
        return info
    chat = manifest.get(MANIFEST_KEY)
    if chat is None:
        return info
    if not isinstance(chat, Mapping) or not isinstance(chat.get("chat_template"), str):
        raise CorruptData(f"{ref}: manifest field {MANIFEST_KEY!r} has no chat_template string")
    tool = chat.get("tool_chat_template")
    tokens = chat.get("special_tokens_map") or {}
    fields: dict[str, Any] = {
        "chat_rule": "template",
        "chat_template": chat["chat_template"],
        "tool_chat_template": tool if isinstance(tool, str) else None,
        "special_tokens_map": {str(k): str(v) for k, v in dict(tokens).items()},
    }
    if info is not None:
        return dataclasses.replace(info, **fields)
    return ModelInfo(name=ref, tokenizer=ref, context_window=0, max_output_tokens=0,
                     source=f"{ref} metadata", **fields)
