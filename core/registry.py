"""The registry: a versioned, crash-safe directory of trained tokenizers.

Layout under the root (every path component is a checked name or a decimal version)::

    .lock                     registry-wide flock, held while assigning versions / aliases
    .staging/<id>/ <id>.lock  versions being written; a lock nobody holds means a dead writer
    <name>/counter.json       highest version ever assigned (versions are never reused)
    <name>/aliases.json       {"stable": 3, ...}, replaced atomically
    <name>/<version>/         manifest.json + ranks.tiktoken, immutable once renamed in

A version holds either a rank table (``ranks.tiktoken``: tiktoken-style BPE, served by the
Encoding engine) or the user's own file kept byte for byte (``tokenizer.json``,
``tokenizer.model``, ``tekken.json``; the manifest's ``format`` says which), so an export gives
back exactly what was imported.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokend.core.builtins import (
    builtin_n_vocab,
    encoding_name_for_model,
    get_encoding,
    list_encoding_names,
    load_builtin_spec,
    new_builtin_encoding,
)
from tokend.core.errors import (
    AlreadyExists,
    CorruptData,
    FailedPrecondition,
    InvalidInput,
    TokendError,
    UnknownTokenizer,
    shown,
    storage_error,
)
from tokend.core.formats import (
    atomic_write_bytes,
    format_tiktoken_bpe,
    fsync_dir,
    parse_tiktoken_bpe,
    sha256_hex,
)
from tokend.core.formats.files import FILE_NAMES
from tokend.core.locking import file_lock, held_lock_file, try_lock
from tokend.core.manifest import (
    MANIFEST_FILE,
    RANKS_FILE,
    build_manifest,
    encode_manifest,
    read_manifest,
)
from tokend.core.names import check_alias, check_name, check_version, parse_ref
from tokend.core.patterns import validate_pattern
from tokend.core.tokenizer import NORMALIZER_FORMS, Tokenizer, build_tokenizer

LOCK_FILE = ".lock"
STAGING_DIR = ".staging"
GENERATION_FILE = ".generation"
COUNTER_FILE = "counter.json"
ALIASES_FILE = "aliases.json"
# The files a version may list in its manifest (nothing else is ever opened).
VERSION_FILES = frozenset({RANKS_FILE, *FILE_NAMES.values()})


@dataclass(frozen=True)
class ResolvedRef:
    """What a reference points at: a registry version, or a built-in encoding (version None)."""

    name: str
    version: int | None
    builtin: bool

    @property
    def ref(self) -> str:
        """The canonical reference string (``name@7`` or the built-in's name)."""
        return self.name if self.version is None else f"{self.name}@{self.version}"


@dataclass(frozen=True)
class VersionInfo:
    """A published version and its manifest."""

    name: str
    version: int
    manifest: dict[str, Any]
    path: Path

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"


@dataclass(frozen=True)
class TokenizerInfo:
    """One entry of :meth:`Registry.list`."""

    name: str
    versions: tuple[int, ...]
    aliases: dict[str, int]
    latest: int | None
    builtin: bool


@dataclass(frozen=True)
class Problem:
    """One finding of :meth:`Registry.verify`: which reference, which file, what is wrong."""

    ref: str
    path: str
    message: str


@dataclass(frozen=True)
class TokenizerData:
    """The verified contents of a version (or built-in): everything needed to build or export."""

    resolved: ResolvedRef
    ranks: dict[bytes, int]
    pat_str: str
    special_tokens: dict[str, int]
    explicit_n_vocab: int | None
    manifest: dict[str, Any] | None = field(default=None)
    fmt: str = "tiktoken"  # or a key of formats.files.FILE_NAMES: then `file` holds it
    file: bytes | None = None
    normalizer: str | None = None  # nfc|nfd|nfkc|nfkd applied before a rank table's BPE
    original: bytes | None = None  # the imported file's exact bytes (export --format original)


class Registry:
    """A registry directory; safe to use from many threads and processes at once.

    >>> reg = Registry(tmp)                                          # doctest: +SKIP
    >>> reg.publish("tok", ranks=ranks, pat_str=pat, special_tokens={}).ref  # doctest: +SKIP
    'tok@1'
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        include_builtins: bool = True,
        lock_timeout: float | None = 60.0,
    ) -> None:
        self.root = Path(root)
        self.include_builtins = include_builtins
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

    # -- paths ---------------------------------------------------------------------------

    @property
    def _staging(self) -> Path:
        return self.root / STAGING_DIR

    def _name_dir(self, name: str) -> Path:
        return self.root / check_name(name)

    def _version_dir(self, name: str, version: int) -> Path:
        return self._name_dir(name) / str(check_version(version))

    def _lock(self) -> contextlib.AbstractContextManager[int]:
        return file_lock(self.root / LOCK_FILE, timeout=self.lock_timeout)

    # -- reading state ------------------------------------------------------------------

    def _builtin_names(self) -> list[str]:
        return list_encoding_names() if self.include_builtins else []

    def _versions(self, name: str) -> list[int]:
        """Sorted visible versions of ``name`` (directories named by a positive decimal)."""
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

    def _names(self) -> list[str]:
        """Registry names that have at least one visible version."""
        names = []
        for entry in sorted(os.scandir(self.root), key=lambda e: e.name):
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            try:
                check_name(entry.name)
            except InvalidInput:
                continue
            if self._versions(entry.name):
                names.append(entry.name)
        return names

    def _aliases(self, name: str) -> dict[str, int]:
        path = self._name_dir(name) / ALIASES_FILE
        try:
            raw = json.loads(path.read_bytes())
        except FileNotFoundError:
            return {}
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise CorruptData(f"{path}: aliases file is not valid JSON ({exc})") from None
        if not isinstance(raw, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
            for k, v in raw.items()
        ):
            raise CorruptData(f"{path}: aliases file must map alias names to versions")
        return dict(raw)

    def _counter(self, name: str) -> int:
        """The highest version ever assigned to ``name`` (from the counter file and the dirs)."""
        path = self._name_dir(name) / COUNTER_FILE
        recorded = 0
        try:
            raw = json.loads(path.read_bytes())
            recorded = int(raw["last_version"])
        except FileNotFoundError:
            pass
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            # A damaged counter is reported by verify(); the directories still bound it below.
            pass
        return max([recorded, *self._versions(name)])

    # -- references ---------------------------------------------------------------------

    def resolve(self, ref: str) -> ResolvedRef:
        """Resolve ``name``, ``name@7``, ``name@alias``, a built-in or a model name.

        Registry names are looked up first; a bare name with no versions falls back to the
        built-in encodings and then to model names (``gpt-4o`` -> ``o200k_base``).
        """
        parsed = parse_ref(ref)
        name = parsed.name
        builtins = self._builtin_names()
        if name in builtins:
            if parsed.version is not None or (parsed.alias not in (None, "latest")):
                raise InvalidInput(
                    f"{shown(ref)}: {name} is a built-in encoding; it has no versions or aliases"
                )
            return ResolvedRef(name, None, builtin=True)
        versions = self._versions(name)
        if not versions:
            if parsed.version is None and parsed.alias is None and self.include_builtins:
                with contextlib.suppress(UnknownTokenizer):
                    return ResolvedRef(encoding_name_for_model(name), None, builtin=True)
            known = self._names() + builtins
            raise UnknownTokenizer(
                f"no tokenizer named {shown(name)} in registry {self.root} and no model of that "
                f"name; known tokenizers: {', '.join(known[:30]) or '(none)'}"
            )
        if parsed.version is not None:
            if parsed.version not in versions:
                raise UnknownTokenizer(
                    f"{name} has no version {parsed.version}; versions: "
                    f"{', '.join(map(str, versions))}"
                )
            return ResolvedRef(name, parsed.version, builtin=False)
        if parsed.alias is None or parsed.alias == "latest":
            return ResolvedRef(name, versions[-1], builtin=False)
        aliases = self._aliases(name)
        if parsed.alias not in aliases:
            raise UnknownTokenizer(
                f"{name} has no alias {shown(parsed.alias)}; aliases: "
                f"{', '.join(sorted(aliases)) or '(none)'}"
            )
        version = aliases[parsed.alias]
        if version not in versions:
            raise CorruptData(
                f"{self._name_dir(name) / ALIASES_FILE}: alias {shown(parsed.alias)} points at "
                f"missing version {version}"
            )
        return ResolvedRef(name, version, builtin=False)

    # -- publishing ---------------------------------------------------------------------

    def publish(
        self,
        name: str,
        *,
        ranks: Mapping[bytes, int],
        pat_str: str,
        special_tokens: Mapping[str, int],
        explicit_n_vocab: int | None = None,
        training: Mapping[str, object] | None = None,
        corpus: Mapping[str, object] | None = None,
        normalizer: str | None = None,
        original: tuple[str, bytes] | None = None,
        chat: Mapping[str, object] | None = None,
    ) -> VersionInfo:
        """Publish a new immutable version of ``name`` and return it (``name@N``).

        The ranks are written to a staging directory and fsynced before the registry lock is
        taken; under the lock the next version number is assigned, the manifest written, and
        the directory renamed into place. ``normalizer`` (nfc|nfd|nfkc|nfkd) is recorded in
        the manifest and applied to text before BPE. ``original`` (format, bytes) keeps the
        file the ranks came from, for a byte-identical export. ``chat`` is the version's chat
        template metadata (``counting.version_template.read_chat_metadata``), kept as given.
        """
        self._check_publishable(name)
        n_vocab = _check_contents(ranks, pat_str, special_tokens, explicit_n_vocab)
        if normalizer is not None and normalizer not in NORMALIZER_FORMS:
            raise InvalidInput(f"normalizer {normalizer!r} is not one of {NORMALIZER_FORMS}")
        contents = {RANKS_FILE: format_tiktoken_bpe(ranks)}
        if original is not None:
            if original[0] not in FILE_NAMES:
                raise InvalidInput(f"unknown original format {original[0]!r}")
            contents[FILE_NAMES[original[0]]] = original[1]
        return self._publish(
            name,
            contents,
            pat_str=pat_str,
            special_tokens=special_tokens,
            n_vocab=n_vocab,
            mergeable_count=len(ranks),
            explicit_n_vocab=explicit_n_vocab,
            extra={"training": training, "corpus": corpus, "normalizer": normalizer,
                   "original_format": original[0] if original is not None else None,
                   "chat": chat},
        )

    def publish_file(
        self,
        name: str,
        *,
        fmt: str,
        data: bytes,
        training: Mapping[str, object] | None = None,
        chat: Mapping[str, object] | None = None,
    ) -> VersionInfo:
        """Publish a tokenizer file kept as it is (``fmt`` a key of ``FILE_NAMES``).

        The file is loaded first, so one with an unsupported component is refused here and
        never published; what is stored is the file's exact bytes.
        """
        self._check_publishable(name)
        if fmt not in FILE_NAMES:
            raise InvalidInput(f"unknown file format {fmt!r}; known: {', '.join(FILE_NAMES)}")
        tokenizer = build_tokenizer(
            TokenizerData(ResolvedRef(name, None, builtin=False), {}, "", {}, None,
                          fmt=fmt, file=data)
        )
        specials = getattr(tokenizer, "special_tokens", {})
        return self._publish(
            name,
            {FILE_NAMES[fmt]: data},
            pat_str="",
            special_tokens=dict(specials),
            n_vocab=tokenizer.n_vocab,
            mergeable_count=0,
            explicit_n_vocab=None,
            extra={"training": training, "format": fmt, "chat": chat},
        )

    def _check_publishable(self, name: str) -> None:
        check_name(name)
        if name in self._builtin_names():
            raise AlreadyExists(
                f"{shown(name)} is a built-in encoding (read-only); choose another name"
            )

    def _publish(
        self,
        name: str,
        contents: Mapping[str, bytes],
        *,
        pat_str: str,
        special_tokens: Mapping[str, int],
        n_vocab: int,
        mergeable_count: int,
        explicit_n_vocab: int | None,
        extra: Mapping[str, object],
    ) -> VersionInfo:
        """Stage ``contents``, then assign the version and rename it in under the lock."""
        for key, value in extra.items():
            if value is None:
                continue
            try:
                json.dumps(value)
            except (TypeError, ValueError) as exc:
                raise InvalidInput(f"{key} metadata is not JSON-serializable: {exc}") from None
        files = {
            file: {"sha256": sha256_hex(data), "bytes": len(data)}
            for file, data in contents.items()
        }
        token = secrets.token_hex(8)
        lock_path = self._staging / f"{token}.lock"
        stage = self._staging / token
        lock_fd = held_lock_file(lock_path)
        try:
            try:
                stage.mkdir()
                for file, data in contents.items():
                    _write_synced(stage / file, data)
                with self._lock():
                    name_dir = self._name_dir(name)
                    if not name_dir.is_dir():
                        name_dir.mkdir()
                        fsync_dir(self.root)
                    version = self._counter(name) + 1
                    manifest = build_manifest(
                        name=name,
                        version=version,
                        pat_str=pat_str,
                        special_tokens=special_tokens,
                        n_vocab=n_vocab,
                        mergeable_count=mergeable_count,
                        explicit_n_vocab=explicit_n_vocab,
                        files=files,
                        training=extra.get("training"),  # type: ignore[arg-type]
                        corpus=extra.get("corpus"),  # type: ignore[arg-type]
                    )
                    for key in ("format", "normalizer", "original_format", "chat"):
                        if extra.get(key) is not None:
                            value = extra[key]
                            manifest[key] = dict(value) if isinstance(value, Mapping) else value
                    _write_synced(stage / MANIFEST_FILE, encode_manifest(manifest))
                    fsync_dir(stage)
                    # The counter goes first: a crash right after burns the number, never reuses it.
                    atomic_write_bytes(
                        name_dir / COUNTER_FILE, json.dumps({"last_version": version}).encode()
                    )
                    target = name_dir / str(version)
                    os.rename(stage, target)
                    fsync_dir(name_dir)
                    fsync_dir(self._staging)
                    self._bump_generation()
            except OSError as exc:
                # Disk full, read-only, no permission: the version was not renamed into place,
                # so nothing is visible (a burnt version number at most).
                raise storage_error(
                    exc, f"cannot publish {name} in registry {self.root} (nothing was published)"
                ) from exc
        finally:
            shutil.rmtree(stage, ignore_errors=True)
            lock_path.unlink(missing_ok=True)
            os.close(lock_fd)
        return VersionInfo(name, version, manifest, target)

    # -- aliases and deletion -----------------------------------------------------------

    def set_alias(self, name: str, alias: str, version: int) -> None:
        """Point ``name@alias`` at ``version`` (creating or moving the alias)."""
        check_name(name)
        check_alias(alias)
        check_version(version)
        if name in self._builtin_names():
            raise FailedPrecondition(
                f"{shown(name)} is a built-in encoding (read-only): no aliases"
            )
        with self._lock():
            versions = self._versions(name)
            if version not in versions:
                raise UnknownTokenizer(
                    f"cannot alias {name}@{alias} to version {version}: {name} has versions "
                    f"{', '.join(map(str, versions)) or '(none)'}"
                )
            aliases = self._aliases(name)
            aliases[alias] = version
            self._write_aliases(name, aliases)

    def remove_alias(self, name: str, alias: str) -> None:
        """Remove ``name@alias``; UnknownTokenizer if it does not exist."""
        check_name(name)
        check_alias(alias)
        with self._lock():
            aliases = self._aliases(name)
            if alias not in aliases:
                raise UnknownTokenizer(
                    f"{name} has no alias {shown(alias)}; aliases: "
                    f"{', '.join(sorted(aliases)) or '(none)'}"
                )
            del aliases[alias]
            self._write_aliases(name, aliases)

    def _write_aliases(self, name: str, aliases: Mapping[str, int]) -> None:
        data = json.dumps(dict(sorted(aliases.items())), indent=2) + "\n"
        atomic_write_bytes(self._name_dir(name) / ALIASES_FILE, data.encode())
        self._bump_generation()

    def delete(self, ref: str, *, all_versions: bool = False) -> list[int]:
        """Delete the version ``ref`` resolves to (or every version, with ``all_versions``).

        Refuses built-ins and any version an alias points at (FailedPrecondition naming the
        alias). The version counter survives, so deleted numbers are never handed out again.
        Returns the deleted version numbers.
        """
        parsed = parse_ref(ref)
        if all_versions and (parsed.version is not None or parsed.alias is not None):
            raise InvalidInput(f"{shown(ref)}: deleting all versions takes a bare name")
        with self._lock():
            resolved = self.resolve(ref)
            if resolved.builtin:
                raise FailedPrecondition(
                    f"{shown(ref)} is the built-in encoding {resolved.name}; "
                    "built-ins are read-only"
                )
            name = resolved.name
            assert resolved.version is not None  # registry versions always have one
            doomed = self._versions(name) if all_versions else [resolved.version]
            aliases = self._aliases(name)
            blocking = sorted(f"{name}@{a} -> {v}" for a, v in aliases.items() if v in doomed)
            if blocking:
                raise FailedPrecondition(
                    f"cannot delete {shown(ref)}: aliases point at it ({', '.join(blocking)}); "
                    "move "
                    "or remove the aliases first"
                )
            name_dir = self._name_dir(name)
            for version in doomed:
                # Rename out of sight first (atomic), then remove at leisure.
                trash = self._staging / f"{secrets.token_hex(8)}.trash"
                os.rename(name_dir / str(version), trash)
                shutil.rmtree(trash, ignore_errors=True)
            fsync_dir(name_dir)
            self._bump_generation()
        return doomed

    # -- loading ------------------------------------------------------------------------

    def manifest(self, ref: str) -> dict[str, Any]:
        """The manifest of the version ``ref`` resolves to (a synthetic one for built-ins)."""
        resolved = self.resolve(ref)
        if resolved.builtin:  # from the JSON description: no rank table is loaded for this
            spec = load_builtin_spec(resolved.name)
            return {
                "name": resolved.name,
                "builtin": True,
                "pattern": spec["pat_str"],
                "special_tokens": dict(spec["special_tokens"]),
                "n_vocab": builtin_n_vocab(resolved.name),
            }
        assert resolved.version is not None
        path = self._version_dir(resolved.name, resolved.version) / MANIFEST_FILE
        return read_manifest(path, name=resolved.name, version=resolved.version)

    def load_data(self, ref: str) -> TokenizerData:
        """Read and verify the contents behind ``ref`` (sha256 of every file checked)."""
        resolved = self.resolve(ref)
        if resolved.builtin:
            enc = get_encoding(resolved.name)
            return TokenizerData(
                resolved,
                ranks=enc.mergeable_ranks,
                pat_str=enc.pat_str,
                special_tokens=dict(enc.special_tokens),
                explicit_n_vocab=enc.n_vocab,
            )
        assert resolved.version is not None
        return self._read_version(resolved)

    def _read_version(self, resolved: ResolvedRef) -> TokenizerData:
        assert resolved.version is not None
        vdir = self._version_dir(resolved.name, resolved.version)
        manifest = read_manifest(vdir / MANIFEST_FILE, name=resolved.name, version=resolved.version)
        files: dict[str, dict[str, Any]] = manifest["files"]
        fmt = manifest.get("format", "tiktoken")
        main = RANKS_FILE if fmt == "tiktoken" else FILE_NAMES.get(str(fmt))
        kept = FILE_NAMES.get(str(manifest.get("original_format"))) if fmt == "tiktoken" else None
        expected = {main, kept} - {None}
        if main is None or set(files) != expected:
            raise CorruptData(
                f"{vdir / MANIFEST_FILE}: files must be {sorted(map(str, expected))} for format "
                f"{fmt!r}, got {sorted(files)}"
            )
        contents: dict[str, bytes] = {}
        for file, info in files.items():
            path = vdir / file
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                raise CorruptData(f"{path}: file is missing") from None
            if len(data) != info["bytes"]:
                raise CorruptData(
                    f"{path}: {len(data)} bytes, manifest says {info['bytes']} (truncated?)"
                )
            actual = sha256_hex(data)
            if actual != info["sha256"]:
                raise CorruptData(f"{path}: sha256 is {actual}, manifest says {info['sha256']}")
            contents[file] = data
        if fmt != "tiktoken":
            return TokenizerData(
                resolved, ranks={}, pat_str="", special_tokens=manifest["special_tokens"],
                explicit_n_vocab=None, manifest=manifest, fmt=str(fmt), file=contents[main],
                original=contents[main],
            )
        normalizer = manifest.get("normalizer")
        if normalizer is not None and normalizer not in NORMALIZER_FORMS:
            raise CorruptData(f"{vdir / MANIFEST_FILE}: unknown normalizer {normalizer!r}")
        ranks = parse_tiktoken_bpe(contents[RANKS_FILE], source=str(vdir / RANKS_FILE))
        explicit = manifest.get("explicit_n_vocab")
        explicit_n_vocab = explicit if isinstance(explicit, int) else None
        special_tokens: dict[str, int] = manifest["special_tokens"]
        try:
            _check_contents(ranks, manifest["pattern"], special_tokens, explicit_n_vocab)
        except InvalidInput as exc:
            raise CorruptData(f"{vdir}: {exc}") from None
        return TokenizerData(
            resolved,
            ranks=ranks,
            pat_str=manifest["pattern"],
            special_tokens=special_tokens,
            explicit_n_vocab=explicit_n_vocab,
            manifest=manifest,
            normalizer=normalizer,
            original=contents[kept] if kept else contents[RANKS_FILE],
        )

    def load(self, ref: str, *, cache_entries: int | None = None) -> tuple[ResolvedRef, Tokenizer]:
        """Resolve ``ref`` and load its tokenizer (verified) through :func:`build_tokenizer`.

        Nothing is cached here: callers keep what they load (the server's table is the one
        cache of loaded tokenizers). A built-in is the process-wide shared instance unless
        ``cache_entries`` asks for a cache of another size.
        """
        resolved = self.resolve(ref)
        if resolved.builtin:
            if cache_entries is None:
                return resolved, get_encoding(resolved.name)
            # An instance of its own (sharing the parsed rank table), so the cache size applies.
            return resolved, new_builtin_encoding(resolved.name, cache_entries=cache_entries)
        return resolved, build_tokenizer(self._read_version(resolved),
                                         cache_entries=cache_entries)

    # -- listing, verification, housekeeping --------------------------------------------

    def versions(self, name: str) -> list[VersionInfo]:
        """Every visible version of ``name`` with its manifest (unreadable ones skipped)."""
        out = []
        for version in self._versions(name):
            path = self._version_dir(name, version)
            try:
                manifest = read_manifest(path / MANIFEST_FILE, name=name, version=version)
            except CorruptData:
                continue
            out.append(VersionInfo(name, version, manifest, path))
        return out

    def verify(self) -> list[Problem]:
        """Check every version's manifest and file hashes, every alias and counter."""
        problems: list[Problem] = []
        for name in self._names():
            name_dir = self._name_dir(name)
            versions = self._versions(name)
            for version in versions:
                try:
                    self._read_version(ResolvedRef(name, version, builtin=False))
                except TokendError as exc:
                    problems.append(
                        Problem(
                            f"{name}@{version}", str(self._version_dir(name, version)), str(exc)
                        )
                    )
            try:
                for alias, version in self._aliases(name).items():
                    if version not in versions:
                        problems.append(
                            Problem(
                                f"{name}@{alias}",
                                str(name_dir / ALIASES_FILE),
                                f"alias {shown(alias)} points at missing version {version}",
                            )
                        )
            except CorruptData as exc:
                problems.append(Problem(name, str(name_dir / ALIASES_FILE), str(exc)))
            counter_path = name_dir / COUNTER_FILE
            try:
                recorded = int(json.loads(counter_path.read_bytes())["last_version"])
                if recorded < versions[-1]:
                    problems.append(
                        Problem(
                            name,
                            str(counter_path),
                            f"counter says {recorded} but version {versions[-1]} exists",
                        )
                    )
            except (OSError, ValueError, KeyError, TypeError) as exc:
                problems.append(Problem(name, str(counter_path), f"unreadable counter: {exc}"))
        return problems

    def generation(self) -> str:
        """A cheap token that changes whenever a version or alias is published or removed.

        Combines a counter bumped under the lock with the mtimes of the root and name
        directories (a rename into a directory updates its mtime), so even a publisher that
        died between its rename and its counter bump is noticed.
        """
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
        """Remove what dead publishers left behind; returns the removed paths.

        A staging directory is removed only when nobody holds its lock file (flocks die with
        their process), so a publisher that is still writing is never disturbed.
        """
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
            dirs = [self.root, *(self.root / n for n in self._names_any())]
            for directory in dirs:
                for entry in os.scandir(directory):
                    if entry.name.startswith(".") and entry.name.endswith(".tmp"):
                        Path(entry.path).unlink(missing_ok=True)
                        removed.append(entry.path)
        return removed

    def _names_any(self) -> list[str]:
        """Every valid name directory, with or without visible versions."""
        out = []
        for entry in os.scandir(self.root):
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            with contextlib.suppress(InvalidInput):
                out.append(check_name(entry.name))
        return out

    # subtle: defined last, so `list[...]` annotations above still mean the builtin.
    def list(self) -> list[TokenizerInfo]:
        """Every registry tokenizer with versions, then the built-ins (read-only)."""
        infos = []
        for name in self._names():
            versions = tuple(self._versions(name))
            try:
                aliases = self._aliases(name)
            except CorruptData:
                aliases = {}  # verify() reports it; listing must keep working
            infos.append(TokenizerInfo(name, versions, aliases, versions[-1], builtin=False))
        for name in self._builtin_names():
            infos.append(TokenizerInfo(name, (), {}, None, builtin=True))
        return infos


def _write_synced(path: Path, data: bytes) -> None:
    """Create ``path`` with ``data`` and fsync it (the directory is fsynced by the caller)."""
    with open(path, "xb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _check_contents(
    ranks: Mapping[bytes, int],
    pat_str: str,
    special_tokens: Mapping[str, int],
    explicit_n_vocab: int | None,
) -> int:
    """Validate a rank table + specials the way tiktoken would; return n_vocab."""
    validate_pattern(pat_str)
    if not ranks:
        raise InvalidInput("ranks are empty; a tokenizer needs at least one mergeable token")
    seen: set[int] = set()
    for token, rank in ranks.items():
        if not isinstance(token, bytes) or not token:
            raise InvalidInput(f"token {shown(token)} must be non-empty bytes")
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
            raise InvalidInput(f"rank of {shown(token)} is {rank!r}, not a non-negative int")
        if rank in seen:
            raise InvalidInput(f"rank {rank} is used by more than one token")
        seen.add(rank)
    for text, token_id in special_tokens.items():
        if not isinstance(text, str) or not text:
            raise InvalidInput(f"special token {shown(text)} must be a non-empty string")
        if isinstance(token_id, bool) or not isinstance(token_id, int) or token_id < 0:
            raise InvalidInput(f"id of special token {shown(text)} is {token_id!r}")
        if token_id in seen:
            raise InvalidInput(
                f"special token {shown(text)} has id {token_id}, already used by another token"
            )
        seen.add(token_id)
    n_vocab = max(seen) + 1
    if explicit_n_vocab is not None and not (explicit_n_vocab == len(seen) == n_vocab):
        raise InvalidInput(
            f"explicit_n_vocab is {explicit_n_vocab}, but there are {len(seen)} tokens "
            f"with ids up to {n_vocab - 1}"
        )
    return n_vocab
