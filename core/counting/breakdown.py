"""What each part of a request costs: system, messages, tools, images, framing, texts.

Every count carries a :class:`Breakdown` whose parts add up to its total exactly. The parts
(the rules of each chat format are in ``docs/counting.md``, "Breakdown"):

* ``system``: what the caller wrote in system (and developer) messages;
* ``messages``: what the caller wrote in the other messages (content, tool calls);
* ``tools``: what the tool definitions and ``tool_choice`` add (the count with them minus
  the count without);
* ``images``: image parts;
* ``framing``: what the chat format adds around them (roles, separators, special tokens,
  the reply's priming); for formats rendered as a whole (harmony, chat templates, Llama,
  Mistral) it is the remainder once each message's own strings are counted alone;
* ``texts``: plain ``texts`` counted one by one (CountTokens), not part of a chat.

>>> b = Breakdown(system=5, messages=7, framing=11)
>>> b.total
23
>>> b.as_dict()["framing"]
11
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

PARTS = ("system", "messages", "tools", "images", "framing", "texts")
SYSTEM_ROLES = ("system", "developer")


@dataclass(frozen=True, slots=True)
class Breakdown:
    """The parts of a count (module docstring); ``total`` is their sum.

    ``framing`` alone may be negative: as a remainder it can go below zero where a chat
    template drops or rewrites what the caller sent.
    """

    system: int = 0
    messages: int = 0
    tools: int = 0
    images: int = 0
    framing: int = 0
    texts: int = 0

    @property
    def total(self) -> int:
        return (self.system + self.messages + self.tools + self.images + self.framing
                + self.texts)

    @property
    def chat(self) -> int:
        """The chat request's messages without tools and images (``ChatCount.messages``)."""
        return self.system + self.messages + self.framing

    def with_texts(self, texts: int, framing: int = 0) -> Breakdown:
        """This breakdown plus plain texts (and the framing tokens added around them)."""
        # subtle: positional, not dataclasses.replace (which reads the fields each call):
        # this runs on every CountTokens call.
        return Breakdown(self.system, self.messages, self.tools, self.images,
                         self.framing + framing, self.texts + texts)

    def as_dict(self) -> dict[str, int]:
        # Not dataclasses.asdict, which deep-copies each field: this runs on every call.
        return {"system": self.system, "messages": self.messages, "tools": self.tools,
                "images": self.images, "framing": self.framing, "texts": self.texts}


def own_tokens(message: Mapping[str, Any], count: Callable[[str], int]) -> int:
    """Tokens of what the caller wrote in ``message``, each string counted alone: its content
    (each text part) and its tool calls' names and arguments.

    >>> own_tokens({"role": "user", "content": "a b"}, lambda s: len(s.split()))
    2
    """
    total = 0
    content = message.get("content")
    if isinstance(content, str):
        total += count(content)
    elif isinstance(content, Sequence):
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text":
                total += count(str(part.get("text", "")))
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, Sequence) else ():
        function = call.get("function", call) if isinstance(call, Mapping) else {}
        if not isinstance(function, Mapping):
            continue
        arguments = function.get("arguments", "")
        total += count(str(function.get("name", "")))
        total += count(arguments if isinstance(arguments, str) else json.dumps(arguments))
    return total


def split_rendered(
    messages: Sequence[Mapping[str, Any]],
    count: Callable[[str], int],
    *,
    without_tools: int,
    tools: int,
    images: int = 0,
) -> Breakdown:
    """The breakdown of a format rendered as a whole: each message's own strings counted alone
    (:func:`own_tokens`), the framing the remainder of ``without_tools`` (the whole count
    without tool definitions, images included)."""
    system = sum(own_tokens(m, count) for m in messages if m.get("role") in SYSTEM_ROLES)
    others = sum(own_tokens(m, count) for m in messages if m.get("role") not in SYSTEM_ROLES)
    return Breakdown(system=system, messages=others, tools=tools, images=images,
                     framing=without_tools - system - others - images)
