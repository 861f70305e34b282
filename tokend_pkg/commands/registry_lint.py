"""``tokend registry lint`` and ``tokend registry diff``: what a tokenizer gets wrong, and
what changed between two (method and every finding kind: ``docs/lint.md``).

``REF`` is a registry reference (``name``, ``name@3``, a built-in) or, when such a file exists,
a tokenizer file read as ``registry import`` reads it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tokend.core.engine.encoding import Encoding
from tokend.core.formats.files import load_file
from tokend.core.formats.interop import FileParts, TokenizerParts, read_tokenizer_files
from tokend.core.lint import KINDS, LintReport, lint_tokenizer, read_manifest_summary
from tokend.core.lint.diff import diff_tokenizers
from tokend.core.registry import Registry
from tokend.core.tokenizer import Tokenizer

Handler = Callable[[Registry, argparse.Namespace], int]
Wrap = Callable[[Handler], Callable[[argparse.Namespace], int]]
SHOWN_PER_KIND = 10  # findings per kind in the table (--json lists them all)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser],
             common: argparse.ArgumentParser, wrap: Wrap) -> None:
    """Add ``lint`` and ``diff`` to ``tokend registry`` (``wrap``: its error handling)."""
    p = sub.add_parser("lint", parents=[common],
                       help="check a tokenizer: unreachable, broken specials, glitch candidates")
    p.add_argument("ref", metavar="REF|FILE")
    p.add_argument("--list-partial", action="store_true",
                   help="list every partial-UTF-8 token (they are always counted)")
    p.add_argument("--limit", type=int, default=50, metavar="N",
                   help="glitch candidates listed, best first (default 50; all are counted)")
    p.add_argument("--strict", action="store_true", help="exit 1 when there are errors")
    p.set_defaults(func=wrap(_lint))

    p = sub.add_parser("diff", parents=[common],
                       help="what changed from A to B: tokens, ids, merges, cost per language")
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B")
    p.add_argument("--top", type=int, default=10, metavar="N",
                   help="texts whose counts changed most (default 10)")
    p.set_defaults(func=wrap(_diff))


def load_ref_or_file(registry: Registry, ref: str) -> tuple[str, Tokenizer]:
    """A registry reference, or a tokenizer file when ``ref`` names an existing file."""
    path = Path(ref)
    if path.exists():
        return str(path), tokenizer_of_parts(read_tokenizer_files([path]), name=path.name)
    resolved, tokenizer = registry.load(ref)
    return resolved.ref, tokenizer


def tokenizer_of_parts(parts: TokenizerParts | FileParts, *, name: str) -> Tokenizer:
    """The tokenizer ``read_tokenizer_files`` parts describe (to lint a file, not a version)."""
    if isinstance(parts, FileParts):
        return load_file(parts.fmt, parts.data, name=name)
    return Encoding(name, pat_str=parts.pat_str, mergeable_ranks=parts.ranks,
                    special_tokens=parts.special_tokens)


def _lint(registry: Registry, args: argparse.Namespace) -> int:
    name, tokenizer = load_ref_or_file(registry, args.ref)
    report = lint_tokenizer(tokenizer, name=name, list_partial=args.list_partial,
                            glitch_limit=max(args.limit, 0))
    if args.json:
        _print_json(report.to_dict())
    else:
        print_report(report)
    return 1 if args.strict and report.errors else 0


def print_report(report: LintReport) -> None:
    """The counts per kind, then up to ``SHOWN_PER_KIND`` findings of each, then summaries."""
    print(f"{report.tokenizer}: n_vocab {report.n_vocab}, linted in {report.seconds:.2f} s")
    for kind, (severity, meaning) in KINDS.items():
        state = report.checks.get(kind, "skipped")
        count = str(report.counts[kind]) if state == "ran" else "-"
        print(f"  {kind:<22} {severity:<8} {count:>7}  {meaning}"
              + ("" if state == "ran" else f" ({state})"))
    for kind in KINDS:
        found = [f for f in report.findings if f.kind == kind]
        if not found:
            continue
        print(f"\n{kind} ({report.counts[kind]}):")
        for f in found[:SHOWN_PER_KIND]:
            token = "" if f.token is None else repr(f.token.decode("utf-8", "replace")) + " "
            where = "" if f.id is None else f"{f.id:>7} "
            print(f"  {where}{token}{f.message}")
        if len(found) > SHOWN_PER_KIND:
            print(f"  ... {len(found) - SHOWN_PER_KIND} more (--json lists them all)")
    s = report.summaries
    if s:
        twins, digits = s["trailing_space_twins"], s["digits"]
        print(f"\ntrailing-space twins: {twins['twins']} of {twins['words']} word tokens")
        print(f"digits: {digits['grouping']} ({digits['probe']} -> "
              f"{' | '.join(digits['probe_pieces'])})")
        costs = ", ".join(f"{row['language']} {row['relative']:.2f}" for row in s["languages"])
        print(f"tokens relative to English: {costs}")


def _diff(registry: Registry, args: argparse.Namespace) -> int:
    name_a, a = load_ref_or_file(registry, args.a)
    name_b, b = load_ref_or_file(registry, args.b)
    diff = diff_tokenizers(a, b, name_a=name_a, name_b=name_b, top=max(args.top, 0))
    if args.json:
        _print_json(diff)
        return 0
    s = diff["summary"]
    print(f"{diff['a']} -> {diff['b']}: n_vocab {diff['n_vocab']['a']} -> "
          f"{diff['n_vocab']['b']}")
    print(f"  added {s['added']}, removed {s['removed']}, bytes changed (error) "
          f"{s['changed']}, moved id {s['moved']}, "
          f"merges reordered {s['reordered_merges']}, special-token changes "
          f"{s['special_changes']}")
    for error in diff["errors"][:SHOWN_PER_KIND]:
        print(f"  error: {error}")
    for key in ("added", "removed"):
        shown = ", ".join(repr(row["token"]["text"]) for row in diff[key][:SHOWN_PER_KIND])
        if shown:
            print(f"  {key}: {shown}{' ...' if s[key] > SHOWN_PER_KIND else ''}")
    print("  tokens B/A per language: " + ", ".join(
        f"{row['language']} {row['ratio']:.2f}" for row in diff["languages"]))
    for row in diff["texts"]:
        print(f"  {row['a']:>4} -> {row['b']:>4}  {row['text'][:70]!r}")
    return 0


def manifest_line(manifest: dict[str, Any]) -> str:
    """``registry show``'s lint line: errors and non-zero counts from the manifest."""
    lint = read_manifest_summary(manifest)
    if lint is None:
        return "not recorded (published before lint; run tokend registry lint REF)"
    counts = ", ".join(f"{kind} {n}" for kind, n in lint["summary"].items() if n)
    errors = len(lint.get("errors") or [])
    return f"{errors} error(s); {counts or 'no findings'}"


def _print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True))
