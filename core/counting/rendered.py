"""Chat formats rendered as a whole: gpt-oss's harmony and a model's own Jinja chat template.

Each counts the whole prompt with and without the tool definitions (``tools`` is the
difference) and splits the rest as ``breakdown.split_rendered`` does: each message's own
strings counted alone, the framing the remainder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from tokend.core.counting.breakdown import SYSTEM_ROLES, Breakdown, split_rendered
from tokend.core.counting.catalogue import ModelInfo
from tokend.core.counting.harmony import harmony_prompt
from tokend.core.counting.templates import render_chat_template
from tokend.core.engine.special_tokens import AllowedSpecial
from tokend.core.errors import InvalidInput
from tokend.core.tokenizer import Tokenizer


def harmony_chat(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    *,
    enc: Tokenizer,
    allowed_special: AllowedSpecial,
    effort: str,
    reasons: list[str],
    alone: Callable[[str], int],
) -> Breakdown:
    flat = [_flatten(m, i, reasons) for i, m in enumerate(messages)]

    def total(with_tools: Sequence[Mapping[str, Any]] | None) -> int:
        prompt = harmony_prompt(flat, with_tools, reasoning_effort=effort)
        if allowed_special == "all":  # transformers' behaviour: look-alikes become specials
            return enc.count(prompt.render(), allowed_special="all", disallowed_special=())
        return prompt.count(enc)

    everything = total(tools)
    without = total(None) if tools else everything
    # The messages the format renders: a leading system/developer one, then user, assistant
    # and tool messages (harmony.py).
    shown = flat[:1] if flat and flat[0].get("role") in SYSTEM_ROLES else []
    shown += [m for m in flat[len(shown):] if m.get("role") in ("user", "assistant", "tool")]
    return split_rendered(shown, alone, without_tools=without, tools=everything - without)


def template_chat(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    *,
    enc: Tokenizer,
    info: ModelInfo | None,
    allowed_special: AllowedSpecial,
    reasons: list[str],
    alone: Callable[[str], int],
) -> Breakdown:
    if info is None or info.chat_template is None:
        raise InvalidInput("the template rule needs a model whose catalogue entry has a "
                           "chat_template, or a registry version imported with one")
    tokens_map = info.special_tokens_map

    def total(with_tools: Sequence[Mapping[str, Any]] | None) -> int:
        template = info.chat_template or ""
        if with_tools and info.tool_chat_template:  # transformers picks "tool_use" then
            template = info.tool_chat_template
        text = render_chat_template(template, messages, tools=with_tools,
                                    special_tokens_map=tokens_map)
        # The template's own special tokens count as one token each, as transformers counts.
        return enc.count(text, allowed_special="all", disallowed_special=())

    everything = total(tools)
    without = total(None) if tools else everything
    if allowed_special != "all":
        # Special-token look-alikes in the caller's strings count as plain text: correct the
        # rendered count by the difference each such string makes on its own.
        fix_messages, fix_tools = _look_alikes(enc, messages), _look_alikes(enc, tools)
        if fix_messages or fix_tools:
            reasons.append(
                "message text contains special-token text, counted as plain text; the count "
                "around it is an estimate"
            )
            everything += fix_messages + fix_tools
            without += fix_messages
    return split_rendered(messages, alone, without_tools=without, tools=everything - without)


def _look_alikes(enc: Tokenizer, value: Any) -> int:
    """What counting the special-token look-alikes in ``value``'s strings as plain text adds."""
    fix = 0
    for text in _strings(value):
        if any(s in text for s in enc.special_tokens_set):
            fix += enc.count(text, disallowed_special=()) - enc.count(
                text, allowed_special="all", disallowed_special=()
            )
    return fix


def _flatten(message: Mapping[str, Any], index: int, reasons: list[str]) -> Mapping[str, Any]:
    """A message whose content is a string (text parts joined); images are refused here."""
    content = message.get("content")
    if content is None or isinstance(content, str):
        return message
    if not isinstance(content, Sequence):
        raise InvalidInput(f"messages[{index}].content must be a string or a list of parts")
    texts = []
    for j, part in enumerate(content):
        if not isinstance(part, Mapping) or part.get("type") != "text":
            raise InvalidInput(
                f"messages[{index}].content[{j}]: only text parts can be counted with this "
                "model's chat format"
            )
        texts.append(str(part.get("text", "")))
    reasons.append("content given as parts: text parts joined")
    return {**message, "content": "".join(texts)}


def _strings(*values: Any) -> Iterator[str]:
    """Every string inside ``values`` (nested dicts and lists), in order."""
    for item in values:
        if isinstance(item, str):
            yield item
        elif isinstance(item, Mapping):
            yield from _strings(*item.values())
        elif isinstance(item, Sequence):
            yield from _strings(*item)
