"""``tokend registry verify``: every version, alias and counter of a registry checked."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokend.core.errors import CorruptData, TokendError, shown
from tokend.core.registry.checks import ALIASES_FILE
from tokend.core.registry.model import Problem, ResolvedRef

if TYPE_CHECKING:
    from tokend.core.registry.registry import Registry



def verify_registry(registry: Registry) -> list[Problem]:
    """Problems found reading every version (files, hashes), alias and version counter."""
    problems: list[Problem] = []
    for name in registry._names():
        versions = registry._versions(name)
        for version in versions:
            try:
                registry._read_version(ResolvedRef(name, version, builtin=False))
            except TokendError as exc:
                problems.append(
                    Problem(f"{name}@{version}", registry.store.where(name, version), str(exc))
                )
        aliases_where = registry.store.where(name, file=ALIASES_FILE)
        try:
            for alias, version in registry._aliases(name).items():
                if version not in versions:
                    problems.append(
                        Problem(
                            f"{name}@{alias}",
                            aliases_where,
                            f"alias {shown(alias)} points at missing version {version}",
                        )
                    )
        except CorruptData as exc:
            problems.append(Problem(name, aliases_where, str(exc)))
        counter = registry.store.counter_problem(name, versions)
        if counter is not None:
            problems.append(Problem(name, registry.store.counter_where(name), counter))
    return problems
