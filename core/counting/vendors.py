"""Chat rules of the other vendors' models: Llama, Mistral, and estimates for closed models.

``count_chat`` (``chat.py``) hands these rules here: ``llama3`` / ``llama4`` (``llama.py``),
``mistral-v1`` ... ``mistral-v7`` (``mistral.py``) and ``estimate`` (``estimate.py``). Each
returns a :class:`Breakdown`, tools being what the tool definitions add; Llama's and Mistral's
framing is the remainder once each message's own strings are counted alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tokend.core.counting.breakdown import Breakdown, split_rendered
from tokend.core.counting.catalogue import ModelInfo
from tokend.core.counting.estimate import estimate_chat
from tokend.core.counting.llama import (
    IMAGE,
    TOKENS,
    count_pieces,
    llama_pieces,
    tool_definitions,
)
from tokend.core.counting.mistral import VERSIONS, mistral_pieces, shown_messages
from tokend.core.errors import InvalidInput
from tokend.core.tokenizer import Tokenizer

VENDOR_RULES = (*TOKENS, *VERSIONS, "estimate")


def vendor_chat(
    rule: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    *,
    tool_choice: Any,
    enc: Tokenizer,
    info: ModelInfo | None,
    count: Callable[[str], int],
    reasons: list[str],
) -> Breakdown:
    """The tokens of a request by one of :data:`VENDOR_RULES`, part by part."""
    specials = enc.special_tokens_set
    if rule == "estimate":
        if info is None or info.estimate is None:
            raise InvalidInput("the estimate rule needs a catalogued model with an estimate")
        return estimate_chat(messages, tools, tool_choice=tool_choice, estimate=info.estimate,
                             count=count)
    if rule in TOKENS:
        pieces = llama_pieces(messages, rule, reasons)
        msgs = count_pieces(pieces, specials, count, enc.name)
        images = pieces.count((IMAGE, True))  # an image's own token (module llama.py)
        tools_n = 0
        if tools:
            tools_n = count(tool_definitions(tools))
            reasons.append("llama-models' chat format has no place for tool definitions "
                           "(llama-stack writes them into the system prompt): counted as "
                           "their indented JSON")
        return split_rendered(messages, count, without_tools=msgs, tools=tools_n,
                              images=images)
    everything = count_pieces(mistral_pieces(messages, tools, rule, reasons), specials, count,
                              enc.name)
    without = everything
    if tools:
        without = count_pieces(mistral_pieces(messages, None, rule, []), specials, count,
                               enc.name)
    return split_rendered(shown_messages(messages, rule), count, without_tools=without,
                          tools=everything - without)
