"""The S3 server the tests run on honours conditional writes, races included.

The S3 registry's guarantees rest on ``If-None-Match: *`` (create only if absent) and ``If-Match``
(replace only if unchanged) on PUT. Checked here on the pinned SeaweedFS, with 8 threads racing
on one key: exactly one create wins, exactly one swap from a given ETag wins.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from registry_backends import BUCKET, s3_backend

RACERS = 8


@pytest.fixture
def client(s3_backend_env: dict[str, str]) -> Any:
    s3_backend(s3_backend_env)  # makes sure the bucket exists
    return boto3.client("s3", region_name=s3_backend_env["AWS_DEFAULT_REGION"])


def status_of(call: Callable[[], object]) -> int:
    try:
        call()
    except ClientError as exc:
        return int(exc.response["ResponseMetadata"]["HTTPStatusCode"])
    return 200


def race(calls: list[Callable[[], object]]) -> list[int]:
    """Run ``calls`` at once (released together by a barrier); their HTTP statuses."""
    barrier = threading.Barrier(len(calls))
    out = [0] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        out[i] = status_of(calls[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


class TestConditionalWrites:
    def test_if_none_match_creates_once(self, client: Any) -> None:
        key = f"cond/{uuid.uuid4().hex}"
        assert status_of(lambda: client.put_object(Bucket=BUCKET, Key=key, Body=b"a",
                                                   IfNoneMatch="*")) == 200
        assert status_of(lambda: client.put_object(Bucket=BUCKET, Key=key, Body=b"b",
                                                   IfNoneMatch="*")) == 412
        assert client.get_object(Bucket=BUCKET, Key=key)["Body"].read() == b"a"

    def test_if_match_swaps_only_from_the_current_etag(self, client: Any) -> None:
        key = f"cond/{uuid.uuid4().hex}"
        first = client.put_object(Bucket=BUCKET, Key=key, Body=b"1")["ETag"]
        assert status_of(lambda: client.put_object(Bucket=BUCKET, Key=key, Body=b"2",
                                                   IfMatch=first)) == 200
        assert status_of(lambda: client.put_object(Bucket=BUCKET, Key=key, Body=b"3",
                                                   IfMatch=first)) == 412
        missing = f"cond/{uuid.uuid4().hex}"
        assert status_of(lambda: client.put_object(Bucket=BUCKET, Key=missing, Body=b"x",
                                                   IfMatch=first)) in (404, 412)
        assert client.get_object(Bucket=BUCKET, Key=key)["Body"].read() == b"2"

    def test_racing_creates_have_one_winner(self, client: Any) -> None:
        for _ in range(2):
            key = f"cond/{uuid.uuid4().hex}"
            statuses = race([
                (lambda i=i, key=key: client.put_object(Bucket=BUCKET, Key=key, Body=b"%d" % i,
                                                        IfNoneMatch="*"))
                for i in range(RACERS)
            ])
            assert statuses.count(200) == 1, statuses
            assert set(statuses) <= {200, 409, 412}
            winner = statuses.index(200)
            assert client.get_object(Bucket=BUCKET, Key=key)["Body"].read() == b"%d" % winner

    def test_racing_swaps_have_one_winner(self, client: Any) -> None:
        for _ in range(2):
            key = f"cond/{uuid.uuid4().hex}"
            etag = client.put_object(Bucket=BUCKET, Key=key, Body=b"start")["ETag"]
            statuses = race([
                (lambda i=i, key=key, etag=etag: client.put_object(
                    Bucket=BUCKET, Key=key, Body=b"%d" % i, IfMatch=etag))
                for i in range(RACERS)
            ])
            assert statuses.count(200) == 1, statuses
            assert set(statuses) <= {200, 409, 412}
            winner = statuses.index(200)
            assert client.get_object(Bucket=BUCKET, Key=key)["Body"].read() == b"%d" % winner
