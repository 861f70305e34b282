"""Errors tagged with the request field they are about, and messages bounded in length.

Every transport reports the field (gRPC in a BadRequest detail, HTTP in the JSON error), so the
application layer tags each refusal once: ``with_field(InvalidInput(...), "texts[3]")``.
"""

from __future__ import annotations

from tokend.core.errors import TokendError

# A status message (grpc-message, the BadRequest detail, the HTTP error body) is cut to this
# many characters: core quotes client values through ``errors.shown`` already, this is the
# backstop that keeps any message far below the client's 16 KiB metadata limit.
MAX_MESSAGE_CHARS = 1024


def with_field(exc: TokendError, field: str) -> TokendError:
    """Tag an error with the request field it is about (``texts[3]``) for BadRequest details.

    >>> from tokend.core.errors import InvalidInput
    >>> with_field(InvalidInput("bad"), "texts[3]").field  # type: ignore[attr-defined]
    'texts[3]'
    """
    exc.field = field  # type: ignore[attr-defined]
    return exc


def field_of(exc: BaseException) -> str | None:
    """The request field an error was tagged with, if any."""
    value = getattr(exc, "field", None)
    return value if isinstance(value, str) else None


def bounded(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``message`` cut to ``limit`` characters, saying so when it was cut.

    >>> bounded("x" * 10, limit=4)
    'xxxx... (message cut at 4 of 10 characters)'
    """
    if len(message) <= limit:
        return message
    return f"{message[:limit]}... (message cut at {limit} of {len(message)} characters)"
