"""Moving and removing aliases: one compare-and-swap change of a name's aliases file each.

The rules (names, built-ins) are checked by ``Registry``; these functions make the change on
its store, which applies it under a lock (folder) or by an ETag compare-and-swap (S3).
"""

from __future__ import annotations

from collections.abc import Callable

from tokend.core.errors import FailedPrecondition, UnknownTokenizer, shown
from tokend.core.registry.store import Store


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
