"""The two registry backends for parametrized tests: a folder, and a prefix on SeaweedFS.

``Backend.raw`` reads and writes the stored files by their relative key (``tok/1/manifest.json``)
under either backend, so corruption tests tamper with the same file in both.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokend.core.registry import Registry

BUCKET = "tokend-test"


class LocalRaw:
    """Direct access to a registry folder's files."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def read(self, key: str) -> bytes:
        return (self.root / key).read_bytes()

    def write(self, key: str, data: bytes) -> None:
        (self.root / key).write_bytes(data)

    def delete(self, key: str) -> None:
        (self.root / key).unlink()

    def exists(self, key: str) -> bool:
        return (self.root / key).exists()

    def keys(self) -> list[str]:
        if not self.root.exists():
            return []
        return sorted(str(p.relative_to(self.root)) for p in self.root.rglob("*") if p.is_file())


class S3Raw:
    """Direct access to a registry prefix's objects (a boto3 client of its own)."""

    def __init__(self, client: Any, bucket: str, prefix: str) -> None:
        self.client, self.bucket, self.prefix = client, bucket, prefix

    def read(self, key: str) -> bytes:
        got = self.client.get_object(Bucket=self.bucket, Key=self.prefix + key)
        return bytes(got["Body"].read())

    def write(self, key: str, data: bytes) -> None:
        self.client.put_object(Bucket=self.bucket, Key=self.prefix + key, Body=data)

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self.prefix + key)

    def exists(self, key: str) -> bool:
        return key in self.keys()

    def keys(self) -> list[str]:
        out: list[str] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.prefix
        ):
            out += [item["Key"][len(self.prefix):] for item in page.get("Contents", [])]
        return sorted(out)


@dataclass
class Backend:
    """One registry location under test and raw access to what it stores."""

    kind: str  # "local" or "s3"
    location: str
    raw: LocalRaw | S3Raw
    env: dict[str, str]  # what a subprocess needs to reach it (AWS variables for s3)

    def open(self, **options: Any) -> Registry:
        options.setdefault("include_builtins", False)
        return Registry(self.location, **options)


def local_backend(root: Path) -> Backend:
    return Backend("local", str(root), LocalRaw(root), {})


def s3_backend(env: dict[str, str]) -> Backend:
    """A fresh prefix in the test bucket (created on first use)."""
    import boto3

    client = boto3.client(
        "s3", endpoint_url=env["AWS_ENDPOINT_URL"], aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"], region_name=env["AWS_DEFAULT_REGION"],
    )
    try:
        client.head_bucket(Bucket=BUCKET)
    except client.exceptions.ClientError:
        client.create_bucket(Bucket=BUCKET)
    prefix = f"t{uuid.uuid4().hex[:12]}/reg/"
    return Backend("s3", f"s3://{BUCKET}/{prefix}", S3Raw(client, BUCKET, prefix), env)
