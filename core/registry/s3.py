"""The registry in S3-compatible object storage: conditional writes, no locks, any machine.

Layout under ``s3://bucket/prefix/`` (the same names as a local registry folder)::

    .generation                 rewritten (random bytes) after every change; replicas poll its ETag
    <name>/<version>/.reserved  the version marker: created with ``If-None-Match: *``, never removed
    <name>/<version>/.deleting  present while a delete runs (``set_alias`` backs off)
    <name>/<version>/<file>     the version's files, written after the marker
    <name>/<version>/manifest.json  written last, with ``If-None-Match: *``: the version is visible
                                once (and only while) its manifest exists
    <name>/aliases.json         {"stable": 3, ...}, changed by compare-and-swap (``If-Match`` ETag)
    <name>/aliases.kept.json    a copy of the last aliases.json written (served if it is garbled)

Numbers: a publisher takes the highest marker + 1 and creates its marker conditionally; if
another publisher got there first (412), it tries the next number. A marker is never deleted, so
a number is never handed out twice, even after a delete or a publisher killed half way (its
files stay invisible without a manifest and :meth:`S3Store.clean` removes them later).

Endpoint and credentials come from the usual AWS variables (``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``/``AWS_DEFAULT_REGION``...), read
by boto3 itself.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import random
import re
import secrets
import time
from collections.abc import Iterator, Mapping
from typing import Any

from tokend.core.errors import (
    FailedPrecondition,
    InvalidInput,
    StorageError,
    shown,
)
from tokend.core.names import check_name, check_version
from tokend.core.registry.checks import (
    ALIASES_FILE,
    KEPT_ALIASES_FILE,
    encode_aliases,
    parse_aliases,
)
from tokend.core.registry.manifest import MANIFEST_FILE, encode_manifest
from tokend.core.registry.store import AliasChange, ManifestFor, Store

MARKER_FILE = ".reserved"
DELETING_FILE = ".deleting"  # a delete is checking the aliases; set_alias backs off
# A delete mark older than this is a deleter that died: ignored (a delete takes milliseconds).
DELETING_SECONDS = 60.0
GENERATION_KEY = ".generation"
# A reserved version with no manifest this long after its marker was written is abandoned.
STALE_SECONDS = 3600.0
CAS_ATTEMPTS = 100
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\Z")


def parse_s3_url(url: str) -> tuple[str, str]:
    """Split ``s3://bucket/some/prefix`` into the bucket and a key prefix ending in ``/``.

    >>> parse_s3_url("s3://tokend/prod/registry")
    ('tokend', 'prod/registry/')
    """
    rest = url.split("://", 1)[1]
    bucket, _, prefix = rest.partition("/")
    if not _BUCKET.match(bucket):
        raise InvalidInput(f"registry {shown(url)}: {shown(bucket)} is not a valid S3 bucket name")
    parts = [p for p in prefix.split("/") if p]
    if any(p in (".", "..") or "\\" in p for p in parts):
        raise InvalidInput(
            f"registry {shown(url)}: the key prefix may not contain '.', '..' or '\\'"
        )
    return bucket, "".join(p + "/" for p in parts)


class S3Store(Store):
    """A registry under an S3 prefix, shared by any number of machines."""

    def __init__(self, url: str, *, client: Any = None) -> None:
        self.bucket, self.prefix = parse_s3_url(url)
        self.location = f"s3://{self.bucket}/{self.prefix}".rstrip("/")
        self.client = client if client is not None else _make_client()
        with self._errors(f"cannot reach the registry {self.location}"):
            try:
                self.client.head_bucket(Bucket=self.bucket)
            except self.client.exceptions.ClientError as exc:
                if _status(exc) == 404:
                    raise FailedPrecondition(
                        f"registry {self.location}: bucket {self.bucket!r} does not exist; "
                        "create it first"
                    ) from None
                raise

    # -- keys ----------------------------------------------------------------------------

    def _key(self, name: str, version: int | None = None, file: str | None = None) -> str:
        key = self.prefix + check_name(name) + "/"
        if version is not None:
            key += f"{check_version(version)}/"
        return key + (file or "")

    def where(self, name: str | None = None, version: int | None = None,
              file: str | None = None) -> str:
        if name is None:
            return self.location
        return f"s3://{self.bucket}/{self._key(name, version, file)}".rstrip("/")

    # -- reading -------------------------------------------------------------------------

    def _list(self, prefix: str, delimiter: str | None = None) -> Iterator[dict[str, Any]]:
        """Every page of a listing (ListObjectsV2 returns up to 1000 keys a page)."""
        args: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix}
        if delimiter is not None:
            args["Delimiter"] = delimiter
        with self._errors(f"cannot list {self.location}"):
            while True:
                page: dict[str, Any] = self.client.list_objects_v2(**args)
                yield page
                if not page.get("IsTruncated"):
                    return
                args["ContinuationToken"] = page["NextContinuationToken"]

    def _scan(self, name: str) -> tuple[set[int], dict[int, _dt.datetime], set[str]]:
        """(visible versions, markers -> time written, every key) of ``name``: one listing."""
        base = self._key(name)
        visible: set[int] = set()
        markers: dict[int, _dt.datetime] = {}
        keys: set[str] = set()
        for page in self._list(base):
            for item in page.get("Contents", []):
                key: str = item["Key"]
                keys.add(key)
                number, _, file = key[len(base):].partition("/")
                if not (number.isascii() and number.isdigit() and not number.startswith("0")):
                    continue
                if file == MANIFEST_FILE:
                    visible.add(int(number))
                elif file == MARKER_FILE:
                    markers[int(number)] = item["LastModified"]
        return visible, markers, keys

    def names(self) -> list[str]:
        out = []
        for page in self._list(self.prefix, "/"):
            for common in page.get("CommonPrefixes", []):
                candidate = common["Prefix"][len(self.prefix):].rstrip("/")
                if not candidate.startswith(".") and _valid_name(candidate):
                    out.append(candidate)
        return sorted(out)

    def versions(self, name: str) -> list[int]:
        return sorted(self._scan(name)[0])

    def last_version(self, name: str) -> int:
        visible, markers, _ = self._scan(name)
        return max([0, *visible, *markers])

    def counter_problem(self, name: str, versions: list[int]) -> str | None:
        markers = self._scan(name)[1]
        unmarked = [v for v in versions if v not in markers]
        if unmarked:
            return f"versions {unmarked} have no {MARKER_FILE} marker (not published by tokend?)"
        return None

    def counter_where(self, name: str) -> str:
        return self.where(name) + f"/*/{MARKER_FILE}"

    def read(self, name: str, version: int, file: str) -> bytes:
        data = self._get(self._key(name, version, file))
        if data is None:
            raise FileNotFoundError(self.where(name, version, file))
        return data[0]

    def read_aliases(self, name: str, *, kept: bool = False) -> bytes | None:
        data = self._get(self._key(name, file=KEPT_ALIASES_FILE if kept else ALIASES_FILE))
        return None if data is None else data[0]

    # -- writing -------------------------------------------------------------------------

    def publish(self, name: str, contents: Mapping[str, bytes],
                manifest_for: ManifestFor) -> tuple[int, dict[str, Any]]:
        """Reserve a number (conditional create of its marker), write the files, then the
        manifest last (conditional create): until then no reader can see the version."""
        version = self.last_version(name) + 1
        while not self._create(self._key(name, version, MARKER_FILE), b""):
            version += 1  # another publisher holds this number: try the next
        for file, data in contents.items():
            self._put(self._key(name, version, file), data)
        manifest = manifest_for(version)
        body = encode_manifest(manifest)
        key = self._key(name, version, MANIFEST_FILE)
        if not self._create(key, body):
            # subtle: a retried request whose first attempt succeeded also lands here.
            existing = self._get(key)
            if existing is None or existing[0] != body:
                raise FailedPrecondition(
                    f"{self.where(name, version)}: another writer created this version's "
                    "manifest (was the publish abandoned and cleaned?); nothing was published"
                )
        self._bump_generation()
        return version, manifest

    def update_aliases(self, name: str, change: AliasChange) -> None:
        """Compare-and-swap on the aliases file's ETag, retried until no one raced us."""
        key, where = self._key(name, file=ALIASES_FILE), self.where(name, file=ALIASES_FILE)
        for attempt in range(CAS_ATTEMPTS):
            got = self._get(key)
            body = encode_aliases(change({} if got is None else parse_aliases(got[0], where)))
            # Created if there was none, else replaced only if nobody changed it since we read.
            done = self._create(key, body) if got is None else self._put(key, body, if_match=got[1])
            if done:
                # The copy may lag a racing writer's: it is only served while aliases.json
                # does not parse, and every later change rewrites it.
                self._put(self._key(name, file=KEPT_ALIASES_FILE), body)
                self._bump_generation()
                return
            time.sleep(random.uniform(0, 0.01 * min(attempt + 1, 20)))  # jitter
        raise FailedPrecondition(
            f"{self.where(name, file=ALIASES_FILE)} changed {CAS_ATTEMPTS} times while we tried "
            "to update it; retry"
        )

    @contextlib.contextmanager
    def deleting(self, name: str, versions: list[int]) -> Iterator[None]:
        keys = [self._key(name, version, DELETING_FILE) for version in versions]
        for key in keys:
            self._put(key, b"")
        try:
            yield
        finally:
            for key in keys:
                self._delete(key)

    def being_deleted(self, name: str, version: int) -> bool:
        visible, _, keys = self._scan(name)
        if version not in visible:
            return True
        mark = self._key(name, version, DELETING_FILE)
        if mark not in keys:
            return False
        with self._errors(f"cannot read s3://{self.bucket}/{mark}"):
            try:
                head = self.client.head_object(Bucket=self.bucket, Key=mark)
            except self.client.exceptions.ClientError as exc:
                if _status(exc) == 404:
                    return False  # the delete ended meanwhile (refused: the version stays)
                raise
        age: float = (_dt.datetime.now(_dt.UTC) - head["LastModified"]).total_seconds()
        return age < DELETING_SECONDS

    def remove_versions(self, name: str, versions: list[int]) -> None:
        """Delete each manifest first (the version disappears at once), then its files; the
        marker stays so the number is never reused."""
        _, _, keys = self._scan(name)
        for version in versions:
            self._delete(self._key(name, version, MANIFEST_FILE))
            marker = self._key(name, version, MARKER_FILE)
            for key in sorted(k for k in keys if k.startswith(self._key(name, version))):
                if key != marker:
                    self._delete(key)
        self._bump_generation()

    # -- change stamp and housekeeping ---------------------------------------------------

    def generation(self) -> str:
        """The ETag of ``.generation``: one HEAD request per poll."""
        with self._errors(f"cannot poll the registry {self.location}"):
            try:
                head = self.client.head_object(Bucket=self.bucket, Key=self.prefix + GENERATION_KEY)
            except self.client.exceptions.ClientError as exc:
                if _status(exc) == 404:
                    return "0"
                raise
        return str(head["ETag"]).strip('"')

    def _bump_generation(self) -> None:
        self._put(self.prefix + GENERATION_KEY, secrets.token_hex(16).encode())

    def clean(self, *, stale_seconds: float = STALE_SECONDS) -> list[str]:
        """Remove the files of versions reserved more than ``stale_seconds`` ago that never got
        a manifest (their publisher died). Without locks a live writer cannot be told from a
        dead one, so only the age decides; the markers stay."""
        removed: list[str] = []
        now = _dt.datetime.now(_dt.UTC)
        for name in self.names():
            visible, markers, keys = self._scan(name)
            for version, written in markers.items():
                if version in visible or (now - written).total_seconds() < stale_seconds:
                    continue
                marker = self._key(name, version, MARKER_FILE)
                for key in sorted(k for k in keys if k.startswith(self._key(name, version))):
                    if key != marker:
                        self._delete(key)
                        removed.append(f"s3://{self.bucket}/{key}")
        return removed

    # -- requests ------------------------------------------------------------------------

    def _get(self, key: str) -> tuple[bytes, str] | None:
        """(bytes, ETag) of ``key``, or None if it does not exist."""
        with self._errors(f"cannot read s3://{self.bucket}/{key}"):
            try:
                got = self.client.get_object(Bucket=self.bucket, Key=key)
            except self.client.exceptions.ClientError as exc:
                if _status(exc) == 404:
                    return None
                raise
            return got["Body"].read(), str(got["ETag"])
        raise AssertionError("unreachable")  # pragma: no cover (mypy: the with may swallow)

    def _put(self, key: str, body: bytes, *, if_match: str | None = None) -> bool:
        """Write ``key``; with ``if_match``, only if its ETag is still that (False if not)."""
        args: dict[str, Any] = {"Bucket": self.bucket, "Key": key, "Body": body}
        if if_match is not None:
            args["IfMatch"] = if_match
        return self._conditional(args)

    def _create(self, key: str, body: bytes) -> bool:
        """Create ``key`` only if it does not exist (``If-None-Match: *``); False if it did."""
        return self._conditional({"Bucket": self.bucket, "Key": key, "Body": body,
                                  "IfNoneMatch": "*"})

    def _conditional(self, args: dict[str, Any]) -> bool:
        with self._errors(f"cannot write s3://{self.bucket}/{args['Key']}"):
            for attempt in range(CAS_ATTEMPTS):
                try:
                    self.client.put_object(**args)
                    return True
                except self.client.exceptions.ClientError as exc:
                    status = _status(exc)
                    if status == 412 or (status == 404 and "IfMatch" in args):
                        return False
                    if status != 409:  # 409: a concurrent conditional write; try again
                        raise
                time.sleep(random.uniform(0, 0.005 * (attempt + 1)))  # jitter
        return False

    def _delete(self, key: str) -> None:
        with self._errors(f"cannot delete s3://{self.bucket}/{key}"):
            self.client.delete_object(Bucket=self.bucket, Key=key)

    @staticmethod
    @contextlib.contextmanager
    def _errors(what: str) -> Iterator[None]:
        """Turn boto3's failures (unreachable, denied...) into StorageError naming ``what``."""
        from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415

        try:
            yield
        except ClientError as exc:
            error = exc.response.get("Error", {})
            raise StorageError(
                f"{what}: {error.get('Code', '?')} ({error.get('Message', '')})"
            ) from exc
        except BotoCoreError as exc:
            raise StorageError(f"{what}: {exc}") from exc


def _status(exc: Any) -> int:
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))


def _valid_name(name: str) -> bool:
    try:
        check_name(name)
    except InvalidInput:
        return False
    return True


def _make_client() -> Any:
    """A boto3 S3 client configured from the standard AWS environment and config files."""
    try:
        import boto3  # noqa: PLC0415 (only S3 registries pay for the import)
        from botocore.config import Config  # noqa: PLC0415
    except ImportError:
        raise FailedPrecondition("s3:// registries need boto3: pip install 'tokend[s3]'") from None

    config = Config(
        connect_timeout=5, read_timeout=60, retries={"mode": "standard", "max_attempts": 4},
        # Path-style addressing works with every S3-compatible server (MinIO, SeaweedFS...).
        s3={"addressing_style": "path"},
    )
    return boto3.client("s3", config=config)


__all__ = ["S3Store", "parse_s3_url"]
