"""``tokend calibrate MODEL usage.jsonl [--json]``: fit a closed model's estimate to your bills.

Reads one JSON object per line, ``{"request": <the body sent to the vendor>, "input_tokens":
<what the vendor billed>}``, fits the model's estimate on four calls in five and measures its
error on the fifth (``tokend.core.counting.calibrate``), then stores the fitted estimate in the
registry's ``models.json`` (temp-then-rename): every later count for the model, here or on a
server using that registry, reports the measured error ("±2.8% over 412 calls").
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tokend.commands.registry import registry_root
from tokend.core.counting import ModelCatalogue
from tokend.core.counting.calibrate import calibrate, estimate_entry, read_usage
from tokend.core.counting.prompt import count_plain
from tokend.core.counting.registry_models import set_model_entry
from tokend.core.engine.builtins import get_encoding
from tokend.core.errors import InvalidInput, TokendError, UnknownTokenizer


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("calibrate", help="fit a closed model's estimate to billed "
                                   "counts", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", metavar="MODEL", help="e.g. claude-sonnet-4-5, gemini-2.5-pro")
    parser.add_argument("usage", type=Path, metavar="USAGE.jsonl")
    parser.add_argument("--registry", metavar="DIR",
                        help="registry folder whose models.json keeps the fit (env "
                        "TOKEND_REGISTRY, default: user data dir)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--dry-run", action="store_true", help="measure only, store nothing")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        root = registry_root(args.registry)
        if not isinstance(root, Path):
            raise InvalidInput("calibrate stores into a registry folder's models.json; "
                               "s3:// registries are not supported")
        info = ModelCatalogue.for_registry(root).get(args.model)
        try:
            enc = get_encoding(info.tokenizer)
        except UnknownTokenizer:
            raise InvalidInput(f"{info.name} is not counted by an estimate over a built-in "
                               "encoding; nothing to calibrate") from None
        result = calibrate(info, read_usage(args.usage), lambda text: count_plain(enc, text))
        stored = None
        if not args.dry_run:
            stored = set_model_entry(root, info.name, estimate_entry(info, result.estimate))
    except TokendError as err:
        reason = " ".join(str(err).split())
        print(f"tokend: error: {reason}", file=sys.stderr)
        if args.json:
            print(json.dumps({"error": {"type": type(err).__name__, "message": reason}}))
        return 2 if isinstance(err, InvalidInput) else 1
    cal, est = result.calibration, result.estimate
    if args.json:
        print(json.dumps({
            "model": info.name, "calls": cal.calls, "held_out": cal.held_out,
            "error_pct": cal.error_pct, "uncalibrated_error_pct": round(result.before_pct, 2),
            "factor": est.factor, "per_message": est.per_message, "fixed": est.fixed,
            "stored": None if stored is None else str(stored)}, indent=2))
        return 0
    print(f"{info.name}: ±{cal.error_pct:.1f}% over {cal.calls} calls (measured on the "
          f"{cal.held_out} held out; uncalibrated: ±{result.before_pct:.1f}%)")
    print(f"  estimate = {est.factor:.4g} x {info.tokenizer} tokens + {est.per_message:.4g} "
          f"per message + {est.fixed:.4g}")
    print(f"  stored in {stored}" if stored else "  not stored (--dry-run)")
    return 0
