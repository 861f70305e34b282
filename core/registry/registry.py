"""The registry: named, versioned, immutable tokenizers, over a folder or object storage.

Every rule lives here (names, manifests, sha256 checks, reference resolution); where the bytes
are kept is a :class:`~tokend.core.registry.store.Store` chosen by the location: a local folder
(``local.py``) or ``s3://bucket/prefix`` (``s3.py``). Both give the same guarantees: a version
is visible only once complete, never changes, and its number is never reused.

A version holds either a rank table (``ranks.tiktoken``: tiktoken-style BPE, served by the
Encoding engine) or the user's own file kept byte for byte (``tokenizer.json``,
``tokenizer.model``, ``tekken.json``; the manifest's ``format`` says which), so an export gives
back exactly what was imported.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from typing import Any

from tokend.core.engine.builtins import (
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
    UnknownTokenizer,
    shown,
)
from tokend.core.formats import format_tiktoken_bpe
from tokend.core.formats.files import FILE_NAMES
from tokend.core.lint.publish import lint_file, lint_ranks
from tokend.core.names import check_alias, check_name, check_version, parse_ref
from tokend.core.registry.aliases import AliasesReader, drop_alias, point_alias
from tokend.core.registry.checks import ALIASES_FILE, check_contents
from tokend.core.registry.manifest import (
    MANIFEST_FILE,
    RANKS_FILE,
    builtin_manifest,
    manifest_factory,
    parse_manifest,
)
from tokend.core.registry.model import (
    Problem,
    ResolvedRef,
    TokenizerData,
    TokenizerInfo,
    VersionInfo,
)
from tokend.core.registry.read import read_version
from tokend.core.registry.store import Store
from tokend.core.registry.stores import open_store
from tokend.core.registry.verify import verify_registry
from tokend.core.tokenizer import NORMALIZER_FORMS, Tokenizer, build_tokenizer


class Registry:
    """A registry (folder or ``s3://`` URL); safe to use from many threads and processes at once.

    >>> reg = Registry(tmp)                                          # doctest: +SKIP
    >>> reg.publish("tok", ranks=ranks, pat_str=pat, special_tokens={}).ref  # doctest: +SKIP
    'tok@1'
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | Store,
        *,
        include_builtins: bool = True,
        lock_timeout: float | None = 60.0,
    ) -> None:
        self.store = (
            root if isinstance(root, Store) else open_store(root, lock_timeout=lock_timeout)
        )
        self.location = self.store.location
        self.include_builtins = include_builtins
        # Reads aliases files; resolving keeps serving the last good one if a file is garbled.
        self._alias_reader = AliasesReader(self.store)

    @property
    def on_kept_aliases(self) -> Callable[[str, CorruptData], None] | None:
        """Called with (name, error) when a garbled aliases file is passed over."""
        return self._alias_reader.on_kept

    @on_kept_aliases.setter
    def on_kept_aliases(self, callback: Callable[[str, CorruptData], None] | None) -> None:
        self._alias_reader.on_kept = callback

    # -- reading state ------------------------------------------------------------------

    def _builtin_names(self) -> list[str]:
        return list_encoding_names() if self.include_builtins else []

    def _versions(self, name: str) -> list[int]:
        """Sorted visible versions of ``name``."""
        return self.store.versions(check_name(name))

    def _names(self) -> list[str]:
        """Registry names that have at least one visible version."""
        return [name for name in self.store.names() if self.store.versions(name)]

    def _aliases(self, name: str, *, keep_last_good: bool = False) -> dict[str, int]:
        """The aliases of ``name`` (``AliasesReader.read``)."""
        return self._alias_reader.read(check_name(name), keep_last_good=keep_last_good)

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
                f"no tokenizer named {shown(name)} in {self.location} and no model of "
                f"that name; known tokenizers: {', '.join(known[:30]) or '(none)'}"
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
        aliases = self._aliases(name, keep_last_good=True)
        if parsed.alias not in aliases:
            raise UnknownTokenizer(
                f"{name} has no alias {shown(parsed.alias)}; aliases: "
                f"{', '.join(sorted(aliases)) or '(none)'}"
            )
        version = aliases[parsed.alias]
        if version not in versions:
            raise CorruptData(
                f"{self.store.where(name, file=ALIASES_FILE)}: alias {shown(parsed.alias)} "
                f"points at missing version {version}"
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
        chat: Mapping[str, object] | None = None, strict: bool = False,
    ) -> VersionInfo:
        """Publish a new immutable version of ``name`` and return it (``name@N``).

        The ranks are written to a staging directory and fsynced before the registry lock is
        taken; under the lock the next version number is assigned, the manifest written, and
        the directory renamed into place. ``normalizer`` (nfc|nfd|nfkc|nfkd) is recorded in
        the manifest and applied to text before BPE. ``original`` (format, bytes) keeps the
        file the ranks came from, for a byte-identical export. ``chat`` is the version's chat
        template metadata (``counting.version_template.read_chat_metadata``), kept as given.
        Linted (``core.lint.publish``): ``strict`` refuses errors; the summary is kept.
        """
        self._check_publishable(name)
        n_vocab = check_contents(ranks, pat_str, special_tokens, explicit_n_vocab)
        if normalizer is not None and normalizer not in NORMALIZER_FORMS:
            raise InvalidInput(f"normalizer {normalizer!r} is not one of {NORMALIZER_FORMS}")
        lint = lint_ranks(name, ranks, pat_str=pat_str, special_tokens=special_tokens,
                          explicit_n_vocab=explicit_n_vocab, normalizer=normalizer, strict=strict)
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
                   "chat": chat, "lint": lint},
        )

    def publish_file(
        self,
        name: str,
        *,
        fmt: str,
        data: bytes,
        training: Mapping[str, object] | None = None,
        chat: Mapping[str, object] | None = None, strict: bool = False,
    ) -> VersionInfo:
        """Publish a tokenizer file kept as it is (``fmt`` a key of ``FILE_NAMES``).

        The file is loaded first, so one with an unsupported component is refused here and
        never published; what is stored is the file's exact bytes.
        """
        self._check_publishable(name)
        if fmt not in FILE_NAMES:
            raise InvalidInput(f"unknown file format {fmt!r}; known: {', '.join(FILE_NAMES)}")
        tokenizer, lint = lint_file(name, fmt, data, strict=strict)
        specials = getattr(tokenizer, "special_tokens", {})
        return self._publish(
            name,
            {FILE_NAMES[fmt]: data},
            pat_str="",
            special_tokens=dict(specials),
            n_vocab=tokenizer.n_vocab,
            mergeable_count=0,
            explicit_n_vocab=None,
            extra={"training": training, "format": fmt, "chat": chat, "lint": lint},
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
        """Hand ``contents`` to the store: it assigns the version and writes the manifest last."""
        manifest_for = manifest_factory(
            name,
            contents,
            pat_str=pat_str,
            special_tokens=special_tokens,
            n_vocab=n_vocab,
            mergeable_count=mergeable_count,
            explicit_n_vocab=explicit_n_vocab,
            extra=extra,
        )
        version, manifest = self.store.publish(name, contents, manifest_for)
        return VersionInfo(name, version, manifest, self.store.where(name, version))

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
        point_alias(self.store, name, alias, version, self._versions)

    def remove_alias(self, name: str, alias: str) -> None:
        """Remove ``name@alias``; UnknownTokenizer if it does not exist."""
        check_name(name)
        check_alias(alias)
        drop_alias(self.store, name, alias)

    def delete(self, ref: str, *, all_versions: bool = False) -> list[int]:
        """Delete the version ``ref`` resolves to (or every version, with ``all_versions``).

        Refuses built-ins and any version an alias points at (FailedPrecondition naming the
        alias). The version counter survives, so deleted numbers are never handed out again.
        Returns the deleted version numbers.
        """
        parsed = parse_ref(ref)
        if all_versions and (parsed.version is not None or parsed.alias is not None):
            raise InvalidInput(f"{shown(ref)}: deleting all versions takes a bare name")
        with self.store.exclusive():
            resolved = self.resolve(ref)
            if resolved.builtin:
                raise FailedPrecondition(
                    f"{shown(ref)} is the built-in encoding {resolved.name}; "
                    "built-ins are read-only"
                )
            name = resolved.name
            assert resolved.version is not None  # registry versions always have one
            doomed = self._versions(name) if all_versions else [resolved.version]
            # Marked before the aliases are read, so a racing set_alias sees it (set_alias).
            with self.store.deleting(name, doomed):
                aliases = self._aliases(name)
                blocking = sorted(f"{name}@{a} -> {v}" for a, v in aliases.items() if v in doomed)
                if blocking:
                    raise FailedPrecondition(
                        f"cannot delete {shown(ref)}: aliases point at it "
                        f"({', '.join(blocking)}); move or remove the aliases first"
                    )
                self.store.remove_versions(name, doomed)
        return doomed

    # -- loading ------------------------------------------------------------------------

    def manifest(self, ref: str) -> dict[str, Any]:
        """The manifest of the version ``ref`` resolves to (a synthetic one for built-ins)."""
        resolved = self.resolve(ref)
        if resolved.builtin:  # from the JSON description: no rank table is loaded for this
            spec = load_builtin_spec(resolved.name)
            return builtin_manifest(resolved.name, spec, builtin_n_vocab(resolved.name))
        assert resolved.version is not None
        return self._manifest(resolved.name, resolved.version)

    def _manifest(self, name: str, version: int) -> dict[str, Any]:
        """The checked manifest of a visible version (CorruptData if missing or malformed)."""
        where = self.store.where(name, version, MANIFEST_FILE)
        try:
            raw = self.store.read(name, version, MANIFEST_FILE)
        except FileNotFoundError:
            raise CorruptData(f"{where}: manifest is missing") from None
        return parse_manifest(raw, where, name=name, version=version)

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
        manifest = self._manifest(resolved.name, resolved.version)
        return read_version(self.store, resolved, manifest)

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
            try:
                manifest = self._manifest(name, version)
            except CorruptData:
                continue
            out.append(VersionInfo(name, version, manifest, self.store.where(name, version)))
        return out

    def verify(self) -> list[Problem]:
        """Check every version's manifest and file hashes, every alias and counter."""
        return verify_registry(self)

    def generation(self) -> str:
        """A cheap token that changes whenever a version or alias is published or removed."""
        return self.store.generation()

    def clean(self) -> list[str]:
        """Remove what dead publishers left behind; returns the removed paths or URLs."""
        return self.store.clean()

    # subtle: defined last, so `list[...]` annotations above still mean the builtin.
    def list(self) -> list[TokenizerInfo]:
        """Every registry tokenizer with versions, then the built-ins (read-only)."""
        infos = []
        for name in self._names():
            versions = tuple(self._versions(name))
            try:
                aliases = self._aliases(name, keep_last_good=True)
            except CorruptData:
                aliases = {}  # verify() reports it; listing must keep working
            infos.append(TokenizerInfo(name, versions, aliases, versions[-1], builtin=False))
        for name in self._builtin_names():
            infos.append(TokenizerInfo(name, (), {}, None, builtin=True))
        return infos


