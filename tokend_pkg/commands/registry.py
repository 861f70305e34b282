"""``tokend registry``: inspect and manage a tokenizer registry directly on disk (no server).

The registry folder is ``--registry DIR``, else env ``TOKEND_REGISTRY``, else the user data dir.
Every command prints a table, or JSON with ``--json``; any refusal exits non-zero with one line
``tokend: error: <reason>`` on stderr (2 for a malformed name or argument, 1 otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tokend.commands import registry_lint
from tokend.core.counting import read_chat_metadata
from tokend.core.errors import InvalidInput, TokendError
from tokend.core.formats import atomic_write_bytes
from tokend.core.formats.interop import (
    EXPORT_FORMATS,
    IMPORT_FORMATS,
    FileParts,
    parse_special,
    read_tokenizer_files,
)
from tokend.core.registry import Registry, check_location
from tokend.core.registry.export import export_version
from tokend.core.registry.manifest import pattern_name
from tokend.core.tokenizer import NORMALIZER_FORMS, engine_path
from tokend.server.config import default_registry_dir, registry_location

Handler = Callable[[Registry, argparse.Namespace], int]


def registry_root(arg: str | None) -> Path | str:
    """Resolve the registry: flag, then environment, then the user data dir.

    A folder path or an ``s3://bucket/prefix`` URL (kept as text; other schemes are refused).
    """
    if arg is None:
        arg = os.environ.get("TOKEND_REGISTRY") or None
    if arg is None:
        return default_registry_dir()
    check_location(arg)
    return registry_location(arg)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--registry",
        metavar="DIR|URL",
        help="registry folder or s3://bucket/prefix (env TOKEND_REGISTRY, default: user data "
        "dir; S3 endpoint and credentials from the AWS_* variables)",
    )
    common.add_argument("--json", action="store_true", help="print JSON instead of a table")

    parser = subparsers.add_parser(
        "registry",
        help="list, import, export, alias and delete registry tokenizers",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="registry_command", metavar="SUBCOMMAND", required=True)

    p = sub.add_parser("list", parents=[common], help="tokenizers, versions and aliases")
    p.set_defaults(func=_command(_list))

    p = sub.add_parser("show", parents=[common], help="the manifest of one reference")
    p.add_argument("ref", metavar="REF", help="name, name@VERSION, name@ALIAS, built-in or model")
    p.set_defaults(func=_command(_show))

    p = sub.add_parser("import", parents=[common], help="publish a tokenizer from files")
    p.add_argument("name", metavar="NAME")
    p.add_argument(
        "--from",
        dest="paths",
        type=Path,
        nargs="+",
        action="extend",
        required=True,
        metavar="PATH",
        help="a tokenizer.json (any model type), a SentencePiece .model, a Tekken .json, a "
        ".tiktoken file, or vocab.json + merges.txt (or their folder)",
    )
    p.add_argument(
        "--format", choices=IMPORT_FORMATS, help="default: read from the file's contents"
    )
    p.add_argument(
        "--normalizer",
        choices=NORMALIZER_FORMS,
        help="Unicode normalization applied before BPE (rank tables only; recorded in the "
        "manifest)",
    )
    p.add_argument(
        "--pattern",
        metavar="NAME|REGEX",
        help="gpt2, cl100k, o200k or a regex (overrides the file's; needed for .tiktoken)",
    )
    p.add_argument(
        "--special",
        action="append",
        default=[],
        metavar="TEXT=ID",
        help="a special token and its id (repeatable)",
    )
    p.add_argument(
        "--tokenizer-config",
        type=Path,
        metavar="PATH",
        help="the model's tokenizer_config.json: its chat template(s) and special tokens are "
        "kept in the version's metadata and used to count chat messages",
    )
    p.add_argument("--strict", action="store_true",
                   help="refuse a tokenizer with lint errors (tokend registry lint), naming each")
    p.set_defaults(func=_command(_import))

    p = sub.add_parser("export", parents=[common], help="write a tokenizer to a file")
    p.add_argument("ref", metavar="REF")
    p.add_argument("--format", choices=EXPORT_FORMATS, required=True,
                   help="the format a version holds comes back byte for byte (original: the "
                   "imported file); other formats are exact conversions or refused, naming why")
    p.add_argument("--out", type=Path, required=True, metavar="PATH")
    p.set_defaults(func=_command(_export))

    p = sub.add_parser("alias", parents=[common], help="point NAME@ALIAS at VERSION")
    p.add_argument("name", metavar="NAME")
    p.add_argument("alias", metavar="ALIAS")
    p.add_argument("version", metavar="VERSION")
    p.set_defaults(func=_command(_alias))

    p = sub.add_parser("unalias", parents=[common], help="remove NAME@ALIAS")
    p.add_argument("name", metavar="NAME")
    p.add_argument("alias", metavar="ALIAS")
    p.set_defaults(func=_command(_unalias))

    p = sub.add_parser("delete", parents=[common], help="delete the version REF points at")
    p.add_argument("ref", metavar="REF")
    p.add_argument("--all", action="store_true", help="delete every version of NAME")
    p.set_defaults(func=_command(_delete))

    p = sub.add_parser("verify", parents=[common], help="check every file hash; exit 1 on damage")
    p.set_defaults(func=_command(_verify))

    registry_lint.register(sub, common, _command)


def _command(handler: Handler) -> Callable[[argparse.Namespace], int]:
    """Open the registry, run ``handler``, and turn any refusal into one line and a status."""

    def run(args: argparse.Namespace) -> int:
        try:
            registry = Registry(registry_root(args.registry))
            return handler(registry, args)
        except TokendError as err:
            return _fail(args, err, 2 if isinstance(err, InvalidInput) else 1)
        except BrokenPipeError:
            # The reader went away (`| head`): not a failure; keep the exit-time flush quiet.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        except OSError as err:
            return _fail(args, err, 1)

    return run


def _fail(args: argparse.Namespace, err: Exception, status: int) -> int:
    reason = " ".join(str(err).split())  # one line, whatever the message looked like
    print(f"tokend: error: {reason}", file=sys.stderr)
    if args.json:
        _print_json({"error": {"type": type(err).__name__, "message": reason}})
    return status


def _print_json(value: object) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True))


def _table(rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )


# -- handlers ----------------------------------------------------------------------------


def _list(registry: Registry, args: argparse.Namespace) -> int:
    infos = registry.list()
    if args.json:
        _print_json(
            [
                {
                    "name": i.name,
                    "builtin": i.builtin,
                    "versions": list(i.versions),
                    "latest": i.latest,
                    "aliases": i.aliases,
                }
                for i in infos
            ]
        )
        return 0
    rows = [["NAME", "LATEST", "VERSIONS", "ALIASES", "KIND"]]
    for i in infos:
        rows.append(
            [
                i.name,
                "-" if i.latest is None else str(i.latest),
                ",".join(map(str, i.versions)) or "-",
                ",".join(f"{a}={v}" for a, v in sorted(i.aliases.items())) or "-",
                "built-in" if i.builtin else "registry",
            ]
        )
    _table(rows)
    return 0


def _show(registry: Registry, args: argparse.Namespace) -> int:
    resolved = registry.resolve(args.ref)
    manifest = registry.manifest(args.ref)
    info: dict[str, Any] = {
        "ref": resolved.ref,
        "name": resolved.name,
        "version": resolved.version,
        "builtin": resolved.builtin,
        "manifest": manifest,
    }
    if not resolved.builtin:
        entry = next(i for i in registry.list() if i.name == resolved.name)
        info["versions"] = list(entry.versions)
        info["aliases"] = entry.aliases
    info["engine"] = _engine_line(registry, resolved.ref)
    if args.json:
        _print_json(info)
        return 0
    pattern = str(manifest.get("pattern", ""))
    specials = manifest.get("special_tokens") or {}
    lines = [
        ("ref", resolved.ref),
        ("kind", "built-in (read-only)" if resolved.builtin else "registry"),
        ("n_vocab", str(manifest.get("n_vocab"))),
        ("pattern", pattern_name(pattern) or pattern),
        ("engine", info["engine"]),
        ("special tokens", ", ".join(f"{t}={i}" for t, i in specials.items()) or "-"),
    ]
    if not resolved.builtin:
        files = manifest.get("files") or {}
        lines += [
            ("created", str(manifest.get("created_at"))),
            ("versions", ",".join(map(str, info["versions"]))),
            ("aliases", ",".join(f"{a}={v}" for a, v in sorted(info["aliases"].items())) or "-"),
            *((f"file {f}", f"{d['bytes']} bytes sha256 {d['sha256']}") for f, d in files.items()),
            ("training", json.dumps(manifest.get("training"), sort_keys=True)),
            ("corpus", json.dumps(manifest.get("corpus"), sort_keys=True)),
            ("tool", json.dumps(manifest.get("tool"), sort_keys=True)),
            ("chat template", _chat_summary(manifest.get("chat"))),
            ("lint", registry_lint.manifest_line(manifest)),
        ]
    width = max(len(key) for key, _ in lines)
    for key, value in lines:
        print(f"{key.ljust(width)}  {value}")
    return 0


def _engine_line(registry: Registry, ref: str) -> str:
    """The engine path the version runs on (it is loaded for this: verified, tables built)."""
    try:
        _, tokenizer = registry.load(ref)
    except TokendError as exc:
        return f"cannot load: {exc}"
    return engine_path(tokenizer)


def _chat_summary(chat: Any) -> str:
    if not isinstance(chat, dict):
        return "-"
    tool = ", tool_use too" if chat.get("tool_chat_template") else ""
    tokens_map = chat.get("special_tokens_map") or {}
    tokens = ", ".join(f"{k}={v}" for k, v in sorted(tokens_map.items()))
    return f"from {chat.get('source')}{tool} ({tokens or 'no special tokens'})"


def _import(registry: Registry, args: argparse.Namespace) -> int:
    chat = None if args.tokenizer_config is None else read_chat_metadata(args.tokenizer_config)
    parts = read_tokenizer_files(
        args.paths,
        fmt=args.format,
        pattern=args.pattern,
        special_tokens=parse_special(args.special),
    )
    if isinstance(parts, FileParts):
        if args.normalizer is not None:
            raise InvalidInput(
                f"--normalizer applies to rank tables; a {parts.fmt} file carries its own"
            )
        info = registry.publish_file(
            args.name, fmt=parts.fmt, data=parts.data, training={"imported_from": parts.source},
            chat=chat, strict=args.strict,
        )
        if args.json:
            _print_json({"ref": info.ref, "name": info.name, "version": info.version,
                         "notes": parts.notes, "manifest": info.manifest})
        else:
            print(f"imported {info.ref} ({parts.fmt}, n_vocab {info.manifest['n_vocab']}, "
                  f"{len(info.manifest['special_tokens'])} special)")
        return 0
    info = registry.publish(
        args.name,
        ranks=parts.ranks,
        pat_str=parts.pat_str,
        special_tokens=parts.special_tokens,
        training={"imported_from": parts.source},
        normalizer=args.normalizer,
        original=parts.original,
        chat=chat,
        strict=args.strict,
    )
    if args.json:
        _print_json(
            {
                "ref": info.ref,
                "name": info.name,
                "version": info.version,
                "notes": parts.notes,
                "manifest": info.manifest,
            }
        )
        return 0
    for note in parts.notes:
        print(f"note: {note}", file=sys.stderr)
    pattern = pattern_name(parts.pat_str) or "custom regex"
    print(
        f"imported {info.ref} ({len(parts.ranks)} mergeable tokens, "
        f"{len(parts.special_tokens)} special, pattern {pattern})"
    )
    return 0


def _export(registry: Registry, args: argparse.Namespace) -> int:
    result = export_version(registry, args.ref, args.format)
    atomic_write_bytes(args.out, result.data)
    if args.json:
        _print_json({"ref": result.ref, "format": args.format, "out": str(args.out),
                     "unchanged": result.how == "stored", "notes": list(result.notes)})
        return 0
    if args.format == "original":
        print(f"wrote {args.out} (the imported file of {result.ref}, unchanged)")
    elif result.how == "stored":
        print(f"wrote {args.out} (the {args.format} file {result.ref} holds, unchanged)")
    else:
        print(f"wrote {args.out} ({args.format}, {result.ref})")
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def _alias(registry: Registry, args: argparse.Namespace) -> int:
    if not (args.version.isascii() and args.version.isdigit()):
        raise InvalidInput(f"VERSION must be a positive integer, got {args.version!r}")
    registry.set_alias(args.name, args.alias, int(args.version))
    if args.json:
        _print_json({"name": args.name, "alias": args.alias, "version": int(args.version)})
    else:
        print(f"{args.name}@{args.alias} -> {args.name}@{int(args.version)}")
    return 0


def _unalias(registry: Registry, args: argparse.Namespace) -> int:
    registry.remove_alias(args.name, args.alias)
    if args.json:
        _print_json({"name": args.name, "removed_alias": args.alias})
    else:
        print(f"removed {args.name}@{args.alias}")
    return 0


def _delete(registry: Registry, args: argparse.Namespace) -> int:
    deleted = registry.delete(args.ref, all_versions=args.all)
    name = args.ref.partition("@")[0]
    if args.json:
        _print_json({"name": name, "deleted_versions": deleted})
    else:
        print(f"deleted {', '.join(f'{name}@{v}' for v in deleted)}")
    return 0


def _verify(registry: Registry, args: argparse.Namespace) -> int:
    problems = registry.verify()
    if args.json:
        _print_json({"ok": not problems, "problems": [p.__dict__ for p in problems]})
    elif not problems:
        print("ok: every version's files match their manifest")
    else:
        rows = [["REF", "PROBLEM"]] + [[p.ref, " ".join(p.message.split())] for p in problems]
        _table(rows)
    if problems:
        print(f"tokend: error: {len(problems)} problem(s) found", file=sys.stderr)
        return 1
    return 0
