"""Reading a name's aliases file (keeping the last good one when it is garbled), and moving
and removing aliases: one compare-and-swap change of the file each.

The rules (names, built-ins) are checked by ``Registry``; these functions make the change on
its store, which applies it under a lock (folder) or by an ETag compare-and-swap (S3).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from tokend.core.errors import CorruptData, FailedPrecondition, UnknownTokenizer, shown
from tokend.core.registry.checks import ALIASES_FILE, KEPT_ALIASES_FILE, parse_aliases
from tokend.core.registry.store import Store


class AliasesReader:
    """A store's aliases files as resolution reads them.

    With ``keep_last_good``, a file that no longer parses gives the store's kept copy of the
    last one written through it (``KEPT_ALIASES_FILE``), the same in every process and after a
    restart, else the last one that parsed in this process (registries written before the copy
    existed), as a failed reload keeps a version. ``verify`` and changes read the file as it is.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._good: dict[str, dict[str, int]] = {}  # name -> the last file that parsed here
        self.on_kept: Callable[[str, CorruptData], None] | None = None

    def read(self, name: str, *, keep_last_good: bool = False) -> dict[str, int]:
        raw = self.store.read_aliases(name)
        try:
            aliases = {} if raw is None else parse_aliases(
                raw, self.store.where(name, file=ALIASES_FILE))
        except CorruptData as exc:
            kept = self._kept(name) if keep_last_good else None
            if kept is None:
                raise
            if self.on_kept is not None:
                self.on_kept(name, exc)
            return dict(kept)
        self._good[name] = aliases
        return aliases

    def _kept(self, name: str) -> dict[str, int] | None:
        raw = self.store.read_aliases(name, kept=True)
        if raw is not None:
            with contextlib.suppress(CorruptData):
                return parse_aliases(raw, self.store.where(name, file=KEPT_ALIASES_FILE))
        return self._good.get(name)


def point_alias(
    store: Store, name: str, alias: str, version: int, versions_of: Callable[[str], list[int]]
) -> None:
    """Point ``name@alias`` at ``version``, which must exist when the change is applied."""
    before: dict[str, int] = {}

    def change(aliases: dict[str, int]) -> dict[str, int]:
        versions = versions_of(name)
        if version not in versions:
            raise UnknownTokenizer(
                f"cannot alias {name}@{alias} to version {version}: {name} has versions "
                f"{', '.join(map(str, versions)) or '(none)'}"
            )
        before.clear()
        before.update(aliases)
        return {**aliases, alias: version}

    store.update_aliases(name, change)
    # subtle: with no lock (S3) a delete of `version` may have checked the aliases before
    # our write landed; it marked the version first, so seeing no mark now means it saw us.
    if store.being_deleted(name, version):

        def undo(aliases: dict[str, int]) -> dict[str, int]:
            if aliases.get(alias) != version:
                return aliases  # moved again meanwhile: not ours to undo
            restored = {a: v for a, v in aliases.items() if a != alias}
            if alias in before:
                restored[alias] = before[alias]
            return restored

        store.update_aliases(name, undo)
        raise FailedPrecondition(
            f"cannot alias {name}@{alias} to version {version}: it is being deleted"
        )


def drop_alias(store: Store, name: str, alias: str) -> None:
    """Remove ``name@alias``; UnknownTokenizer listing the aliases there are if it is absent."""

    def change(aliases: dict[str, int]) -> dict[str, int]:
        if alias not in aliases:
            raise UnknownTokenizer(
                f"{name} has no alias {shown(alias)}; aliases: "
                f"{', '.join(sorted(aliases)) or '(none)'}"
            )
        return {a: v for a, v in aliases.items() if a != alias}

    store.update_aliases(name, change)
