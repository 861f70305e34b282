"""Errors raised by tokend.core.

Each class also inherits the builtin a caller would naturally catch (``ValueError``,
``LookupError``, ...), so code written against tiktoken keeps working. The server maps these
classes to gRPC status codes in one table (``tokend.server.errors``); the client maps them back.
"""

from __future__ import annotations

import errno

# How many characters of a client's value an error message quotes (bug: a 6 KB name echoed in
# full overflowed gRPC's trailer limit). Longer values are cut and their length is given.
SHOWN_CHARS = 200


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """``repr`` of a value a client sent, cut to a bounded prefix.

    >>> shown("abc")
    "'abc'"
    >>> shown("x" * 100, limit=4)
    "'xxxx'... (100 characters)"
    """
    if isinstance(value, str | bytes) and len(value) > limit:
        unit = "characters" if isinstance(value, str) else "bytes"
        return f"{value[:limit]!r}... ({len(value)} {unit})"
    return repr(value)


class TokendError(Exception):
    """Base class of every error tokend raises on purpose."""


class InvalidInput(TokendError, ValueError):
    """The caller passed something malformed: bad reference, unknown id, disallowed special."""


class DisallowedSpecialToken(InvalidInput):
    """Text contains a special token that the encode call did not allow."""

    def __init__(self, token: str, *, message: str | None = None) -> None:
        """``message`` replaces tiktoken's Python-argument advice (the server names its
        request fields instead)."""
        self.token = token
        if message is not None:
            super().__init__(message)
            return
        super().__init__(
            f"Encountered text corresponding to disallowed special token {token!r}.\n"
            "If you want this text to be encoded as a special token, pass it to "
            f"`allowed_special`, e.g. `allowed_special={{{token!r}, ...}}`.\n"
            "If you want this text to be encoded as normal text, disable the check for this "
            f"token by passing `disallowed_special=(enc.special_tokens_set - {{{token!r}}})`.\n"
            "To disable this check for all special tokens, pass `disallowed_special=()`."
        )


class UnknownTokenId(InvalidInput):
    """A token id that is not in the vocabulary was passed to decode."""

    def __init__(self, token_id: int, n_vocab: int) -> None:
        self.token_id = token_id
        super().__init__(f"Invalid token id {token_id}: not in the vocabulary (n_vocab={n_vocab})")


class InvalidName(InvalidInput):
    """A tokenizer name, alias or version does not follow the registry's naming rule."""


class UnknownTokenizer(TokendError, LookupError):
    """No tokenizer, version or alias of that name exists."""


class NoPrice(UnknownTokenizer):
    """The price data (genai-prices) has no price for the model: NOT_FOUND, like an unknown
    model (``core/counting/prices.py``)."""


class AlreadyExists(TokendError, FileExistsError):
    """Something with that name already exists and may not be replaced."""


class LimitExceeded(TokendError, ValueError):
    """A configured size limit was hit; the message names the limit and its value."""

    def __init__(
        self, what: str, value: int, limit: int, flag: str | None = None, *,
        field: str | None = None,
    ) -> None:
        self.what = what
        self.value = value
        self.limit = limit
        self.flag = flag
        if field is not None:
            self.field = field  # the request field at fault (a server tags BadRequest with it)
        hint = f" (raise it with {flag})" if flag else ""
        super().__init__(f"{what} is {value}, over the limit of {limit}{hint}")


class CorruptData(TokendError, ValueError):
    """A file on disk failed its checksum or could not be parsed; names file and line."""


class StorageError(TokendError, OSError):
    """A file could not be written (read-only disk, no permission...): nothing was changed."""


class StorageFull(StorageError):
    """The disk (or quota) is full: nothing was written; retry once space is freed."""


def storage_error(exc: OSError, what: str) -> StorageError:
    """The StorageError for an OSError met while doing ``what`` (StorageFull on ENOSPC/EDQUOT).

    >>> import errno
    >>> str(storage_error(OSError(errno.ENOSPC, "No space left on device", "/r/x"), "writing"))
    'writing: /r/x: No space left on device'
    """
    full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
    where = f"{exc.filename}: " if exc.filename else ""
    reason = exc.strerror or str(exc)
    cls = StorageFull if full else StorageError
    return cls(f"{what}: {where}{reason}")


class FailedPrecondition(TokendError, RuntimeError):
    """The operation is refused in the current state (delete an aliased version, a built-in...)."""


class Cancelled(TokendError):
    """A long operation (training) was cancelled on request; nothing was left behind."""


class Unauthenticated(TokendError, PermissionError):
    """An admin operation was called without credentials (no ``authorization`` metadata)."""


class PermissionDenied(TokendError, PermissionError):
    """The credentials of an admin operation are wrong."""


class Unavailable(TokendError, ConnectionError):
    """The server is draining (shutting down) or cannot serve right now; retry elsewhere."""


class DeadlineExceeded(TokendError, TimeoutError):
    """The caller's deadline passed before the work was done."""


class UnknownJob(TokendError, LookupError):
    """No training job has that id (ids are listed by ListTrainJobs / `tokend train list`)."""
