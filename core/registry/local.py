"""The registry in a local folder: flock, fsync and rename (one machine, many processes).

Layout under the root (every path component is a checked name or a decimal version)::

    .lock                     registry-wide flock, held while assigning versions / aliases
    .generation               a counter bumped on every change (with directory mtimes)
    .staging/<id>/ <id>.lock  versions being written; a lock nobody holds means a dead writer
    <name>/counter.json       highest version ever assigned (versions are never reused)
    <name>/aliases.json       {"stable": 3, ...}, replaced atomically
    <name>/aliases.kept.json  a copy of the last aliases.json written here (served if it is garbled)
    <name>/<version>/         manifest.json + the version's files, immutable once renamed in

A version becomes visible by one ``rename`` of a complete, fsynced staging directory, so a
crash at any instant leaves either no new version or a complete one.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tokend.core.errors import FailedPrecondition, InvalidInput, storage_error
from tokend.core.formats import atomic_write_bytes, fsync_dir, sha256_hex
from tokend.core.names import check_name, check_version
from tokend.core.registry.checks import (
    ALIASES_FILE,
    KEPT_ALIASES_FILE,
    encode_aliases,
    parse_aliases,
)
from tokend.core.registry.locking import file_lock, held_lock_file, try_lock
from tokend.core.registry.manifest import MANIFEST_FILE, encode_manifest
from tokend.core.registry.store import AliasChange, ManifestFor, Store

LOCK_FILE = ".lock"
STAGING_DIR = ".staging"
GENERATION_FILE = ".generation"
COUNTER_FILE = "counter.json"


class LocalStore(Store):
    """A registry folder; safe to use from many threads and processes of one machine."""

    def __init__(self, root: str | os.PathLike[str], *, lock_timeout: float | None = 60.0) -> None:
        self.root = Path(root)
        self.location = str(self.root)
        self.lock_timeout = lock_timeout
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise FailedPrecondition(f"registry root {self.root} is not a directory") from None
        try:
            self._staging.mkdir(exist_ok=True)
        except FileExistsError:
            raise FailedPrecondition(f"{self._staging} is not a directory") from None
        except OSError:
            return  # a read-only registry (e.g. mounted into a server): serve, never clean
        self.clean()

    @property
    def local_root(self) -> str:
        return str(self.root)

    # -- paths ---------------------------------------------------------------------------

    @property
    def _staging(self) -> Path:
        return self.root / STAGING_DIR

    def _name_dir(self, name: str) -> Path:
        return self.root / check_name(name)

    def _version_dir(self, name: str, version: int) -> Path:
        return self._name_dir(name) / str(check_version(version))

    def where(self, name: str | None = None, version: int | None = None,
              file: str | None = None) -> str:
        path = self.root
        for part in (name, None if version is None else str(version), file):
            if part is not None:
                path = path / part
        return str(path)

    def exclusive(self) -> contextlib.AbstractContextManager[int]:
        return file_lock(self.root / LOCK_FILE, timeout=self.lock_timeout)

    # -- reading -------------------------------------------------------------------------

    def versions(self, name: str) -> list[int]:
        try:
            entries = list(os.scandir(self._name_dir(name)))
        except (FileNotFoundError, NotADirectoryError):
            return []
        versions = [
            int(e.name)
            for e in entries
            if e.name.isascii() and e.name.isdigit() and not e.name.startswith("0") and e.is_dir()
        ]
        return sorted(versions)

    def names(self) -> list[str]:
        out = []
        for entry in sorted(os.scandir(self.root), key=lambda e: e.name):
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            with contextlib.suppress(InvalidInput):
                out.append(check_name(entry.name))
        return out

    def _recorded(self, name: str) -> int:
        """The counter file's number; raises for a missing or damaged file."""
        raw = json.loads((self._name_dir(name) / COUNTER_FILE).read_bytes())
        return int(raw["last_version"])

    def last_version(self, name: str) -> int:
        recorded = 0
        # A damaged counter is reported by verify(); the directories still bound it below.
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
            recorded = self._recorded(name)
        return max([recorded, *self.versions(name)])

    def counter_problem(self, name: str, versions: list[int]) -> str | None:
        try:
            recorded = self._recorded(name)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return f"unreadable counter: {exc}"
        if versions and recorded < versions[-1]:
            return f"counter says {recorded} but version {versions[-1]} exists"
        return None

    def counter_where(self, name: str) -> str:
        return str(self._name_dir(name) / COUNTER_FILE)

    def read(self, name: str, version: int, file: str) -> bytes:
        return (self._version_dir(name, version) / file).read_bytes()

    def read_aliases(self, name: str, *, kept: bool = False) -> bytes | None:
        try:
            file = KEPT_ALIASES_FILE if kept else ALIASES_FILE
            return (self._name_dir(name) / file).read_bytes()
        except FileNotFoundError:
            return None

    # -- writing -------------------------------------------------------------------------

    def publish(self, name: str, contents: Mapping[str, bytes],
                manifest_for: ManifestFor) -> tuple[int, dict[str, Any]]:
        """Stage ``contents``, then assign the version and rename it in under the lock.

        The files are written and fsynced before the registry lock is taken; under the lock
        the next version number is assigned, the manifest written, and the directory renamed
        into place.
        """
        token = secrets.token_hex(8)
        lock_path = self._staging / f"{token}.lock"
        stage = self._staging / token
        lock_fd = held_lock_file(lock_path)
        try:
            try:
                stage.mkdir()
                for file, data in contents.items():
                    _write_synced(stage / file, data)
                with self.exclusive():
                    name_dir = self._name_dir(name)
                    if not name_dir.is_dir():
                        name_dir.mkdir()
                        fsync_dir(self.root)
                    version = self.last_version(name) + 1
                    manifest = manifest_for(version)
                    _write_synced(stage / MANIFEST_FILE, encode_manifest(manifest))
                    fsync_dir(stage)
                    # The counter goes first: a crash right after burns the number, never reuses it.
                    atomic_write_bytes(
                        name_dir / COUNTER_FILE, json.dumps({"last_version": version}).encode()
                    )
                    os.rename(stage, name_dir / str(version))
                    fsync_dir(name_dir)
                    fsync_dir(self._staging)
                    self._bump_generation()
            except OSError as exc:
                # Disk full, read-only, no permission: the version was not renamed into place,
                # so nothing is visible (a burnt version number at most).
                raise storage_error(
                    exc, f"cannot publish {name} in {self.root} (nothing was published)"
                ) from exc
        finally:
            shutil.rmtree(stage, ignore_errors=True)
            lock_path.unlink(missing_ok=True)
            os.close(lock_fd)
        return version, manifest

    def update_aliases(self, name: str, change: AliasChange) -> None:
        with self.exclusive():
            raw = self.read_aliases(name)
            current = {} if raw is None else parse_aliases(raw, self.where(name, file=ALIASES_FILE))
            body = encode_aliases(change(current))
            atomic_write_bytes(self._name_dir(name) / ALIASES_FILE, body)
            atomic_write_bytes(self._name_dir(name) / KEPT_ALIASES_FILE, body)
            self._bump_generation()

    def remove_versions(self, name: str, versions: list[int]) -> None:
        name_dir = self._name_dir(name)
        for version in versions:
            # Rename out of sight first (atomic), then remove at leisure.
            trash = self._staging / f"{secrets.token_hex(8)}.trash"
            os.rename(name_dir / str(version), trash)
            shutil.rmtree(trash, ignore_errors=True)
        fsync_dir(name_dir)
        self._bump_generation()

    # -- change stamp and housekeeping ---------------------------------------------------

    def generation(self) -> str:
        """Combines a counter bumped under the lock with the mtimes of the root and name
        directories (a rename into a directory updates its mtime), so even a publisher that
        died between its rename and its counter bump is noticed."""
        try:
            counter = (self.root / GENERATION_FILE).read_text().strip()
        except (FileNotFoundError, UnicodeDecodeError):
            counter = "0"
        stamps = []
        for entry in os.scandir(self.root):
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            st = entry.stat()
            stamps.append(f"{entry.name}:{st.st_mtime_ns}:{st.st_ino}")
        stamps.sort()
        return f"{counter}-{sha256_hex(chr(10).join(stamps).encode())[:16]}"

    def _bump_generation(self) -> None:
        """Increment the generation counter (caller holds the registry lock)."""
        path = self.root / GENERATION_FILE
        try:
            current = int(path.read_text().strip())
        except (FileNotFoundError, ValueError, UnicodeDecodeError):
            current = 0
        atomic_write_bytes(path, f"{current + 1}\n".encode())

    def clean(self) -> list[str]:
        """A staging directory is removed only when nobody holds its lock file (flocks die
        with their process), so a publisher that is still writing is never disturbed."""
        removed: list[str] = []
        try:
            entries = sorted(os.scandir(self._staging), key=lambda e: e.name)
        except FileNotFoundError:
            return removed
        lock_names = {e.name for e in entries if e.name.endswith(".lock")}
        for entry in entries:
            path = Path(entry.path)
            if entry.name.endswith(".lock"):
                try:
                    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
                except FileNotFoundError:
                    continue
                try:
                    if try_lock(fd):
                        stage = path.with_suffix("")
                        shutil.rmtree(stage, ignore_errors=True)
                        path.unlink(missing_ok=True)
                        removed += [str(stage), str(path)]
                finally:
                    os.close(fd)
            elif f"{entry.name}.lock" not in lock_names:
                # No lock file: a trash directory from a delete, or a dead writer's leftovers
                # (publishers create the lock before the directory and remove it after).
                # subtle: scandir is no snapshot; re-check now that we have seen the directory.
                if (self._staging / f"{entry.name}.lock").exists():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)
                removed.append(str(path))
        removed += self._clean_temp_files()
        return removed

    def _clean_temp_files(self) -> list[str]:
        """Remove half-written ``.*.tmp`` files of atomic writes, if the lock is free now."""
        removed: list[str] = []
        with (
            contextlib.suppress(FailedPrecondition, PermissionError),
            file_lock(self.root / LOCK_FILE, timeout=0),
        ):
            for directory in [self.root, *(self.root / n for n in self.names())]:
                for entry in os.scandir(directory):
                    if entry.name.startswith(".") and entry.name.endswith(".tmp"):
                        Path(entry.path).unlink(missing_ok=True)
                        removed.append(entry.path)
        return removed


def _write_synced(path: Path, data: bytes) -> None:
    """Create ``path`` with ``data`` and fsync it (the directory is fsynced by the caller)."""
    with open(path, "xb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
