"""A prompt as the model sees it: ordinary text runs between special tokens.

Chat formats (harmony, chat templates) interleave framing special tokens with message text. A
tokenizer encodes the text between two special tokens as one run, so counting a prompt means
joining adjacent text pieces and encoding each run as ordinary text (special-token look-alikes in
user text stay plain text), plus one token per special token.

>>> from tokend.core.engine.builtins import get_encoding
>>> p = Prompt()
>>> p.special("<|start|>"); p.text("user"); p.special("<|message|>"); p.text("hi")
>>> p.count(get_encoding("o200k_harmony"))
4
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tokend.core.engine.builtins import get_encoding
from tokend.core.errors import InvalidInput
from tokend.core.tokenizer import Tokenizer

NO_SPECIAL: frozenset[str] = frozenset()


def resolve_encoding(encoding: Tokenizer | str) -> Tokenizer:
    """A tokenizer, or a built-in encoding's name resolved as ``get_encoding`` does."""
    return get_encoding(encoding) if isinstance(encoding, str) else encoding


def count_plain(enc: Tokenizer, text: str) -> int:
    """Tokens of ``text`` with special-token look-alikes counted as ordinary text."""
    return enc.count(text, allowed_special=NO_SPECIAL, disallowed_special=NO_SPECIAL)


@dataclass
class Prompt:
    """Pieces in order: ``(text, is_special)``."""

    pieces: list[tuple[str, bool]] = field(default_factory=list)

    def text(self, value: str) -> None:
        if value:
            self.pieces.append((value, False))

    def special(self, token: str) -> None:
        self.pieces.append((token, True))

    def render(self) -> str:
        """The prompt as one string (special tokens written as their text)."""
        return "".join(value for value, _ in self.pieces)

    def count(self, enc: Tokenizer) -> int:
        """Tokens of the prompt: one per special token, ordinary runs encoded as wholes."""
        specials = enc.special_tokens_set
        total = 0
        run: list[str] = []
        for value, is_special in self.pieces:
            if not is_special:
                run.append(value)
                continue
            if value not in specials:
                raise InvalidInput(
                    f"the chat format needs the special token {value!r}, which {enc.name} does "
                    "not have; count with the model's own tokenizer"
                )
            total += count_plain(enc, "".join(run)) + 1
            run = []
        return total + count_plain(enc, "".join(run))
