"""Count a whole chat request (messages, tools, images) for a model, saying if it is exact.

The rule comes from the model catalogue (``catalogue.py``); every rule and its source is in
``docs/counting.md``:

* ``openai``: OpenAI cookbook's ``num_tokens_from_messages``: 3 tokens per message, the tokens
  of every field's value, +1 per name, +3 to prime the reply (``<|start|>assistant<|message|>``).
  Exact for the models the cookbook checked against the API (``verified`` in the catalogue).
* ``openai-0301``: gpt-3.5-turbo-0301: 4 per message, -1 per name (the role is then omitted).
* ``harmony``: gpt-oss, as its chat template renders the request (``harmony.py``,
  ``rendered.py``).
* ``template``: the model's own Jinja chat template (``templates.py``, ``rendered.py``).

Tools follow the community rule (``tools.py``), images OpenAI's tile formula (``images.py``);
both make the count an estimate, and the result says why. Every count carries a
:class:`~tokend.core.counting.breakdown.Breakdown` (system, messages, tools, images, framing).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tokend.core.counting.breakdown import SYSTEM_ROLES, Breakdown
from tokend.core.counting.catalogue import (
    ModelCatalogue,
    ModelInfo,
    default_catalogue,
    not_installed,
)
from tokend.core.counting.harmony import DEFAULT_EFFORT
from tokend.core.counting.images import DEFAULT_RULE, image_tokens
from tokend.core.counting.prompt import NO_SPECIAL, resolve_encoding
from tokend.core.counting.rendered import harmony_chat, template_chat
from tokend.core.counting.tools import (
    SYSTEM_MESSAGE_DISCOUNT,
    TOOL_CHOICE_NAMED_TOKENS,
    TOOL_CHOICE_NONE_TOKENS,
    TOOLS_TOKENS,
    check_tools,
    format_function_definitions,
    tool_choice_name,
)
from tokend.core.counting.vendors import VENDOR_RULES, vendor_chat
from tokend.core.engine.builtins import encoding_name_for_model, get_encoding
from tokend.core.engine.special_tokens import AllowedSpecial, DisallowedSpecial
from tokend.core.errors import InvalidInput, UnknownTokenizer
from tokend.core.tokenizer import Tokenizer

REPLY_PRIMING = 3
# (tokens per message, tokens per name) of the OpenAI rules.
OPENAI_RULES: dict[str, tuple[int, int]] = {"openai": (3, 1), "openai-0301": (4, -1)}
VERIFIED = "gpt-3.5-turbo (0301, 0613, 0125), gpt-4 (0314, 0613), gpt-4o and gpt-4o-mini"

Message = Mapping[str, Any]
ToolChoice = str | Mapping[str, Any] | None


@dataclass(frozen=True)
class ChatCount:
    """What a chat request costs. ``total`` = ``messages`` + ``tools`` + ``images``, and
    ``breakdown`` splits ``messages`` further into system, messages and framing."""

    total: int
    messages: int
    tools: int
    images: int
    exact: bool
    # Why the count is an estimate ("" when exact).
    estimate_reason: str
    rule: str
    encoding: str
    model: str | None = None
    context_window: int | None = None
    max_output_tokens: int | None = None
    breakdown: Breakdown = field(default_factory=Breakdown)


def budget_fit(total: int, max_tokens: int | None, context_window: int | None) -> tuple[bool, int]:
    """``(fits, remaining)`` against ``max_tokens``, else the model's context window.

    With neither, the count fits and ``remaining`` is 0.

    >>> budget_fit(100, None, 128)
    (True, 28)
    """
    budget = max_tokens if max_tokens is not None else context_window
    if budget is None:
        return True, 0
    return total <= budget, budget - total


def count_chat(
    messages: Sequence[Message],
    *,
    model: str | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    encoding: Tokenizer | str | None = None,
    tool_choice: ToolChoice = None,
    rule: str | None = None,
    catalogue: ModelCatalogue | None = None,
    allowed_special: AllowedSpecial = NO_SPECIAL,
    disallowed_special: DisallowedSpecial = NO_SPECIAL,
    reasoning_effort: str = DEFAULT_EFFORT,
    model_info: ModelInfo | None = None,
) -> ChatCount:
    """Tokens of a chat request (OpenAI message dicts) for ``model``.

    ``encoding`` overrides the model's tokenizer (needed for registry tokenizers); ``rule``
    overrides its chat rule (``openai``, ``openai-0301``, ``harmony``, ``template``,
    ``plain``). Special-token text in messages counts as plain text unless
    ``allowed_special`` says otherwise (tiktoken's arguments). ``model_info`` is the entry to
    use instead of looking ``model`` up (a registry version's own chat template:
    ``version_template.version_chat_model``).

    >>> count_chat([{"role": "user", "content": "hello"}], model="gpt-4o").total
    8
    """
    if tools:
        check_tools(tools)
    info = model_info
    if info is None and model:
        info = (catalogue or default_catalogue()).find(model)
    enc = _encoding_for(model, info, encoding)
    chosen = rule or (info.chat_rule if info else None) or ("openai" if info is None else "plain")
    reasons: list[str] = []
    if info is None and chosen == "openai" and rule is None:
        named = f" {model[:64]!r}" if model else ""
        reasons.append(f"no catalogued model{named}: counted by OpenAI's 3/1 chat rule")
    elif info is not None and chosen in OPENAI_RULES and not info.verified:
        reasons.append(
            f"OpenAI's chat rule was checked against the API for {VERIFIED} only (OpenAI "
            f"cookbook); {info.name} may frame messages differently"
        )
    elif info is not None and info.chat_rule is None and rule is None:
        reasons.append(f"{info.name} has no chat format: messages counted as plain text")
    if info is not None:
        reasons.append(info.fixed_reason())

    def count(text: str) -> int:
        return enc.count(text, allowed_special=allowed_special,
                         disallowed_special=disallowed_special)

    def alone(text: str) -> int:  # a message's own string, as the rendered formats count it
        return enc.count(text, allowed_special=allowed_special, disallowed_special=())

    if chosen in OPENAI_RULES or chosen == "plain":
        result = _openai(messages, tools, tool_choice=tool_choice, rule=chosen, count=count,
                         info=info, reasons=reasons)
    elif chosen == "harmony":
        result = harmony_chat(messages, tools, enc=enc, allowed_special=allowed_special,
                              effort=reasoning_effort, reasons=reasons, alone=alone)
    elif chosen == "template":
        result = template_chat(messages, tools, enc=enc, info=info,
                               allowed_special=allowed_special, reasons=reasons, alone=alone)
    elif chosen in VENDOR_RULES:
        result = vendor_chat(chosen, messages, tools, tool_choice=tool_choice, enc=enc,
                             info=info, count=count, reasons=reasons)
    else:
        raise InvalidInput(
            f"unknown chat rule {chosen[:40]!r}; rules: openai, openai-0301, harmony, "
            f"template, {', '.join(VENDOR_RULES)}, plain"
        )
    reasons = [r for r in dict.fromkeys(reasons) if r]
    return ChatCount(
        total=result.total,
        messages=result.chat,
        tools=result.tools,
        images=result.images,
        exact=not reasons,
        estimate_reason="; ".join(reasons),
        rule=chosen,
        encoding=enc.name,
        model=info.name if info else model,
        context_window=info.context_window if info else None,
        max_output_tokens=info.max_output_tokens if info else None,
        breakdown=result,
    )


def _encoding_for(
    model: str | None, info: ModelInfo | None, encoding: Tokenizer | str | None
) -> Tokenizer:
    if encoding is not None:
        return resolve_encoding(encoding)
    if info is not None:
        try:
            return resolve_encoding(info.tokenizer)
        except UnknownTokenizer:
            raise UnknownTokenizer(not_installed(info)) from None
    if model is None:
        raise InvalidInput("count_chat needs a model or an encoding")
    try:
        return get_encoding(encoding_name_for_model(model))
    except UnknownTokenizer:
        raise UnknownTokenizer(
            f"unknown model {model[:100]!r}: not in the model catalogue nor tiktoken's table; "
            "pass encoding=... (and rule=...) or add it to the registry's models.json"
        ) from None


# -- the OpenAI rules ---------------------------------------------------------------------------


def _openai(
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]] | None,
    *,
    tool_choice: ToolChoice,
    rule: str,
    count: Callable[[str], int],
    info: ModelInfo | None,
    reasons: list[str],
) -> Breakdown:
    """The OpenAI rules, each field counted alone: what the caller wrote in a message goes to
    ``system`` or ``messages``, its role and the rule's constants to ``framing``."""
    plain = rule == "plain"
    per_message, per_name = OPENAI_RULES.get(rule, (0, 0))
    own = {True: 0, False: 0}  # is a system message -> tokens of what the caller wrote
    framing = images = padding = 0
    padded = False
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise InvalidInput(f"messages[{i}] must be an object with role and content")
        framing += per_message
        is_system = message.get("role") in SYSTEM_ROLES
        if message.get("role") in ("function", "tool") and not plain:
            # Results of calls: 2 fewer framing tokens (measured by hmarr/openai-chat-tokens).
            framing -= 2
            reasons.append("tool results follow the community rule (hmarr/openai-chat-tokens)")
        for key, value in message.items():
            if value is None:
                continue
            if key == "content" and tools and message.get("role") == "system" and not padded:
                # subtle: with tools, the first system message is counted with a trailing
                # newline (measured by hmarr/openai-chat-tokens); what the newline adds is
                # the tools' (they are why it is there).
                padded = True
                if isinstance(value, str):
                    own[is_system] += count(value)
                    padding = count(value + "\n") - count(value)
                    continue
            if key == "content" and not isinstance(value, str):
                text, image = _parts(value, i, count, info, reasons)
                own[is_system] += text
                images += image
            elif key in ("tool_calls", "function_call"):  # function_call: one legacy call
                calls = value if key == "tool_calls" else [value]
                names_and_arguments, per_call = _tool_calls(calls, i, count, plain, reasons)
                own[is_system] += names_and_arguments
                framing += per_call
            elif isinstance(value, str):
                if key == "role":
                    framing += count(value)
                else:
                    own[is_system] += count(value)
                if key == "name":
                    framing += per_name
    if messages and not plain:
        framing += REPLY_PRIMING
    tools_n = 0
    if tools:
        tools_n = count(format_function_definitions(tools)) + TOOLS_TOKENS + padding
        if any(m.get("role") == "system" for m in messages):
            tools_n -= SYSTEM_MESSAGE_DISCOUNT
        reasons.append(
            "tool definitions follow the community-measured rule (hmarr/openai-chat-tokens, "
            "LiteLLM); OpenAI publishes none"
        )
    if tool_choice == "none":
        tools_n += TOOL_CHOICE_NONE_TOKENS
    name = tool_choice_name(tool_choice)
    if name is not None:
        tools_n += TOOL_CHOICE_NAMED_TOKENS + count(name)
        reasons.append("a named tool_choice follows LiteLLM's rule (7 + the name's tokens)")
    return Breakdown(system=own[True], messages=own[False], tools=tools_n, images=images,
                     framing=framing)


def _parts(
    parts: Any,
    index: int,
    count: Callable[[str], int],
    info: ModelInfo | None,
    reasons: list[str],
) -> tuple[int, int]:
    """(text tokens, image tokens) of a content list of text and image_url parts."""
    if not isinstance(parts, Sequence):
        raise InvalidInput(f"messages[{index}].content must be a string or a list of parts")
    text = images = 0
    for j, part in enumerate(parts):
        where = f"messages[{index}].content[{j}]"
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            text += count(str(part.get("text", "")))
            reasons.append("content given as parts: each text part is counted on its own")
        elif kind == "image_url":
            url = part.get("image_url") or {}
            detail = str(part.get("detail") or url.get("detail") or "auto")
            width = int(part.get("width") or url.get("width") or 0)
            height = int(part.get("height") or url.get("height") or 0)
            rule = info.images if info is not None and info.images else DEFAULT_RULE
            if detail == "low" and rule.kind == "tiles":
                width, height = max(width, 1), max(height, 1)  # low detail ignores the size
            try:
                images += image_tokens(width, height, detail, rule)
            except InvalidInput as exc:
                raise InvalidInput(f"{where}: {exc}") from None
            reasons.append(
                "images follow OpenAI's published formula; the framing around an image part is "
                "not published"
            )
            if info is None or info.images is None:
                reasons.append("no image rule for this model: gpt-4o's constants (85 + 170/tile)")
        else:
            raise InvalidInput(f"{where}: a part must be {{\"type\": \"text\"|\"image_url\", ...}}")
    return text, images


def _tool_calls(
    calls: Any, index: int, count: Callable[[str], int], plain: bool, reasons: list[str]
) -> tuple[int, int]:
    """An assistant's tool calls: (the names' and arguments' tokens, 3 per call), the
    community rule."""
    if not isinstance(calls, Sequence):
        raise InvalidInput(f"messages[{index}].tool_calls must be a list")
    own = 0
    for call in calls:
        function = call.get("function", call) if isinstance(call, Mapping) else {}
        own += count(str(function.get("name", ""))) + count(str(function.get("arguments", "")))
    reasons.append("tool calls in messages follow the community rule (hmarr/openai-chat-tokens)")
    return own, 0 if plain else 3 * len(calls)
