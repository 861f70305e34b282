"""Corpus files in S3-compatible object storage: list a prefix, stream an object's text.

boto3 finds the endpoint and credentials the usual way (``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``, or a profile), so a
Ray task on another machine reads the object where it runs, without the bytes passing through
the process that started training. boto3 is optional, imported only when an s3:// URL is used.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokend.core.errors import FailedPrecondition, InvalidInput
from tokend.core.training.utf8 import utf8_blocks

SCHEME = "s3://"
READ_BLOCK_BYTES = 1 << 20
ECHO_CHARS = 200


def is_s3_url(name: str) -> bool:
    return name.startswith(SCHEME)


def split_url(url: str) -> tuple[str, str]:
    """``s3://bucket/some/key`` -> ("bucket", "some/key"); the bucket must be named.

    >>> split_url("s3://corpora/en/part-0001.txt")
    ('corpora', 'en/part-0001.txt')
    """
    rest = url[len(SCHEME):]
    bucket, _, key = rest.partition("/")
    if not bucket:
        raise InvalidInput(f"{url[:ECHO_CHARS]!r} names no bucket; write s3://BUCKET/KEY")
    return bucket, key


def s3_list(url: str) -> list[tuple[str, int]]:
    """(URL, size) of one object, or of every object under a prefix ending in ``/``."""
    bucket, key = split_url(url)
    client = _client()
    if key and not key.endswith("/"):
        try:
            head = client.head_object(Bucket=bucket, Key=key)
        except Exception as exc:
            raise InvalidInput(
                f"corpus object {url[:ECHO_CHARS]!r} cannot be read: {_reason(exc)}"
            ) from None
        return [(url, int(head["ContentLength"]))]
    found: list[tuple[str, int]] = []
    try:
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key):
            for obj in page.get("Contents", []):
                if not obj["Key"].endswith("/"):
                    found.append((f"{SCHEME}{bucket}/{obj['Key']}", int(obj["Size"])))
    except Exception as exc:
        raise InvalidInput(f"cannot list {url[:ECHO_CHARS]!r}: {_reason(exc)}") from None
    if not found:
        raise InvalidInput(f"no objects under {url[:ECHO_CHARS]!r}")
    return sorted(found)


def s3_blocks(url: str) -> Iterator[str]:
    """The object's text in blocks, fetched when the first block is asked for."""
    blocks, _ = s3_text_blocks(url)
    yield from blocks


def s3_text_blocks(url: str) -> tuple[Iterator[str], int]:
    """(the object's text in blocks, its size); strict UTF-8, as local files are read."""
    bucket, key = split_url(url)
    try:
        reply = _client().get_object(Bucket=bucket, Key=key)
    except Exception as exc:
        raise InvalidInput(
            f"corpus object {url[:ECHO_CHARS]!r} cannot be read: {_reason(exc)}"
        ) from None
    return _decode(url, reply["Body"]), int(reply["ContentLength"])


def _decode(url: str, body: Any) -> Iterator[str]:
    try:
        yield from utf8_blocks(body.read, f"corpus object {url[:ECHO_CHARS]!r}", READ_BLOCK_BYTES)
    finally:
        body.close()


def _client() -> Any:
    try:
        import boto3  # noqa: PLC0415 (optional: only for s3:// corpora)
    except ImportError:
        raise FailedPrecondition(
            "s3:// corpora need boto3: pip install 'tokend[s3]'"
        ) from None
    return boto3.client("s3")


def _reason(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc)[:ECHO_CHARS]}"
