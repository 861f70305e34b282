"""``tokend encode|decode|count|truncate|chunk|tokenizers``: tokens from the shell.

Without ``--target`` (or env ``TOKEND_TARGET``) the commands answer in process, on the
application layer and registry ``tokend serve`` would use; with one, that server answers
(``backends.py`` picks). Either way the results are the typed client's, printed here once:
plain output for people, ``--json`` for scripts. Failed calls print ``tokend: CODE: message``
on stderr and exit 1. ``tokend train --target`` and
``tokend report --target`` reuse ``add_connection_options`` from here.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from tokend.commands.backends import Backend, failure, open_backend
from tokend.core.errors import TokendError

DEFAULT_TOKENIZER = "o200k_base"

# A command: prints its result; returns its exit status (None: 0).
Handler = Callable[[Backend, argparse.Namespace], int | None]


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    encode = remote_parser(subparsers, "encode", _encode,
                            "encode text to token ids (in process, or on a server with --target)")
    encode.add_argument("texts", nargs="*", metavar="TEXT", help="texts (default: stdin)")
    encode.add_argument(
        "--allowed-special",
        default="",
        metavar="TOKENS",
        help="comma-separated special tokens to encode as such, or 'all'",
    )
    encode.add_argument(
        "--no-special-check",
        action="store_true",
        help="encode special-token text as plain text instead of refusing it",
    )
    encode.add_argument("--details", action="store_true", help="also show pieces and offsets")

    decode = remote_parser(subparsers, "decode", _decode,
                            "decode token ids to text (in process, or on a server with --target)")
    decode.add_argument(
        "ids", nargs="*", metavar="ID", help="token ids (default: stdin, spaces or commas)"
    )

    count = remote_parser(
        subparsers,
        "count",
        _count,
        "count tokens of texts or chat messages (in process, or on a server with --target)",
    )
    count.add_argument("texts", nargs="*", metavar="TEXT", help="texts (default: stdin)")
    count.add_argument(
        "--messages",
        type=Path,
        metavar="FILE",
        help="JSON file of chat messages, OpenAI-style ('-': stdin); or of a whole request "
        '{"model", "messages", "tools", "tool_choice"}',
    )
    count.add_argument(
        "--plain-text", action="store_true", help="count messages without the chat framing"
    )
    count.add_argument("--max-tokens", type=int, metavar="N", help="also say whether it fits "
                       "(default budget: the model's context window)")
    count.add_argument("--model", metavar="NAME", help="the model whose chat rule and context "
                       "window apply (default: --tokenizer read as a model name)")
    count.add_argument("--tools", type=Path, metavar="FILE",
                       help="JSON file of tool definitions (an OpenAI request's 'tools')")
    count.add_argument("--tool-choice", metavar="CHOICE",
                       help="auto, none, required, or a function's name")
    count.add_argument("--breakdown", action="store_true",
                       help="also say what costs what: system, messages, tools, images, "
                       "framing, texts (--json always has it)")
    count.set_defaults(tokenizer=None)  # with --model, the model's own tokenizer

    cut = remote_parser(subparsers, "truncate", _truncate,
                         "cut a text to at most N tokens (in process, or on a server with "
                         "--target)")
    cut.add_argument("text", nargs="?", metavar="TEXT", help="the text (default: stdin)")
    cut.add_argument("-n", "--max-tokens", type=int, required=True, metavar="N")
    cut.add_argument("--keep", choices=["head", "tail", "both"], default="head",
                     help="what to keep (both: the two ends around --marker)")
    cut.add_argument("--marker", metavar="TEXT", help="between the ends with --keep both "
                     "(default '…'; counted within the budget)")

    pieces = remote_parser(subparsers, "chunk", _chunk,
                            "split a document into pieces of at most N tokens (in process, or on a "
                            "server with --target)")
    pieces.add_argument("file", nargs="?", type=Path, metavar="FILE",
                        help="the document (default: stdin)")
    pieces.add_argument("-n", "--max-tokens", type=int, required=True, metavar="N")
    pieces.add_argument("--overlap", type=int, default=0, metavar="M",
                        help="tokens the next piece repeats from the previous one")

    tokenizers = remote_parser(
        subparsers,
        "tokenizers",
        _tokenizers,
        "list the tokenizers (the registry's, or a server's with --target), or "
        "describe one",
        tokenizer=False,
    )
    tokenizers.add_argument("name", nargs="?", metavar="REF", help="describe this one")


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    """--target, --token, --timeout, TLS and --json: the options every remote command takes."""
    group = parser.add_argument_group("connection")
    group.add_argument(
        "--target",
        default=os.environ.get("TOKEND_TARGET") or None,
        metavar="HOST:PORT",
        help="ask the tokend server at this address (env TOKEND_TARGET; default: answer in "
        "process)",
    )
    group.add_argument(
        "--token",
        default=os.environ.get("TOKEND_TOKEN"),
        help="admin token, sent as 'authorization: Bearer' (env TOKEND_TOKEN)",
    )
    group.add_argument(
        "--timeout", type=float, default=30.0, metavar="SECONDS", help="per-call deadline"
    )
    group.add_argument("--tls", action="store_true", help="use TLS (system roots by default)")
    group.add_argument("--tls-ca", type=Path, metavar="PEM", help="CA certificate to trust")
    group.add_argument("--tls-cert", type=Path, metavar="PEM", help="client certificate (mTLS)")
    group.add_argument("--tls-key", type=Path, metavar="PEM", help="client key (mTLS)")
    group.add_argument("--tls-server-name", metavar="NAME", help="expected server cert name")
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")


def remote_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    handler: Handler,
    help_text: str,
    *,
    tokenizer: bool = True,
) -> argparse.ArgumentParser:
    """A remote command's parser: connection options, ``--tokenizer``, and its handler."""
    parser = subparsers.add_parser(name, help=help_text)
    add_connection_options(parser)
    parser.add_argument("--registry", metavar="DIR|URL",
                        help="without --target: the registry folder or s3://bucket/prefix "
                        "(env TOKEND_REGISTRY, default: the user data dir, as `tokend serve`)")
    if tokenizer:
        parser.add_argument(
            "-t",
            "--tokenizer",
            default=DEFAULT_TOKENIZER,
            metavar="REF",
            help=f"name, name@version, name@alias or model (default {DEFAULT_TOKENIZER})",
        )
    parser.set_defaults(func=_command(handler))
    return parser


def _command(handler: Handler) -> Callable[[argparse.Namespace], int]:
    """Wrap a handler: open its backend, print its result, turn errors into exit status 1."""

    def run(args: argparse.Namespace) -> int:
        try:
            with contextlib.closing(open_backend(args)) as backend:
                status = handler(backend, args)
        except (TokendError, ValueError, OSError) as err:
            fail(args, *failure(err, args))
            return 1
        return 0 if status is None else status

    return run


def fail(args: argparse.Namespace, code: str, details: str) -> None:
    print(f"tokend: {code}: {details}", file=sys.stderr)
    if getattr(args, "json", False):
        print_json({"error": {"code": code, "details": details}})


def print_json(value: object, out: TextIO | None = None) -> None:
    print(json.dumps(value, ensure_ascii=False), file=out or sys.stdout)


def _texts(args: argparse.Namespace) -> list[str]:
    return list(args.texts) if args.texts else [sys.stdin.read()]


# -- handlers ---------------------------------------------------------------------------------


def _encode(client: Backend, args: argparse.Namespace) -> None:
    allowed: Any = frozenset()
    if args.allowed_special == "all":
        allowed = "all"
    elif args.allowed_special:
        allowed = frozenset(t for t in args.allowed_special.split(",") if t)
    results = client.encode_batch(
        args.tokenizer,
        _texts(args),
        allowed_special=allowed,
        disallowed_special=() if args.no_special_check else "all",
        details=args.details,
    )
    if args.json:
        print_json(
            {
                "tokenizer": results[0].tokenizer if results else "",
                "results": [
                    {"ids": r.ids}
                    | (
                        {"details": [_detail_json(d) for d in r.details]}
                        if r.details is not None
                        else {}
                    )
                    for r in results
                ],
            }
        )
        return
    for result in results:
        print(" ".join(map(str, result.ids)))
        for d in result.details or ():
            print(f"  {d.id:>8} [{d.start}, {d.end}) {d.piece!r}{' special' if d.special else ''}")


def _detail_json(detail: Any) -> dict[str, object]:
    return {
        "id": detail.id,
        "piece": base64.b64encode(detail.piece).decode("ascii"),
        "start": detail.start,
        "end": detail.end,
        "special": detail.special,
    }


def _decode(client: Backend, args: argparse.Namespace) -> None:
    raw: Sequence[str] = args.ids or sys.stdin.read().replace(",", " ").split()
    try:
        ids = [int(x) for x in raw]
    except ValueError as err:
        raise ValueError(f"token ids must be integers: {err}") from None
    result = client.decode(args.tokenizer, ids)
    if args.json:
        print_json(
            {
                "tokenizer": result.tokenizer,
                "text": result.text,
                "data": base64.b64encode(result.data).decode("ascii"),
            }
        )
    else:
        sys.stdout.write(result.text + "\n")


def _count(client: Backend, args: argparse.Namespace) -> None:
    messages: list[Any] | None = None
    request: dict[str, Any] = {}
    if args.messages is not None:
        request = read_request(args.messages)
        messages = request["messages"]
    tools = read_json(args.tools) if args.tools is not None else request.get("tools")
    texts = list(args.texts) if args.texts else ([] if messages else [sys.stdin.read()])
    model = args.model or request.get("model")
    result = client.count_tokens(
        args.tokenizer or ("" if model else DEFAULT_TOKENIZER),
        texts or None,
        messages=messages,
        plain_text=args.plain_text,
        max_tokens=args.max_tokens,
        model=model,
        tools=tools,
        tool_choice=args.tool_choice or request.get("tool_choice"),
    )
    if args.json:
        print_json(dataclasses.asdict(result))
        return
    for text_count in result.counts:
        print(text_count)
    if messages:
        print(f"messages: {result.messages_count} ({result.chat_rule} rule"
              f"{', tools ' + str(result.tools_count) if result.tools_count else ''}"
              f"{', images ' + str(result.images_count) if result.images_count else ''})")
    if len(result.counts) + bool(messages) > 1:
        print(f"total: {result.total}")
    if args.breakdown:
        parts = dataclasses.asdict(result.breakdown)
        print("breakdown: " + ", ".join(f"{part} {n}" for part, n in parts.items()))
    if not result.exact:
        print(f"estimate: {result.estimate_reason}")
    if args.max_tokens is not None or result.context_window:
        budget = args.max_tokens if args.max_tokens is not None else result.context_window
        what = "tokens" if args.max_tokens is not None else f"tokens ({result.model}'s window)"
        verdict = "fits" if result.fits else "does not fit"
        print(f"{verdict} in {budget} {what} (remaining {result.remaining})")


def read_json(path: Path) -> Any:
    text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    try:
        return json.loads(text)
    except ValueError as err:
        raise ValueError(f"{path}: not JSON ({err})") from None


def read_request(path: Path) -> dict[str, Any]:
    """A messages file: a JSON list of messages, or an object with "messages" (and "model",
    "tools", "tool_choice") as in an OpenAI chat request."""
    data = read_json(path)
    request = {"messages": data} if isinstance(data, list) else data
    messages = request.get("messages") if isinstance(request, dict) else None
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise ValueError(f"{path}: expected a JSON list of {{role, content, name?}} objects, or "
                         '{"messages": [...], "tools": [...]}')
    choice = request.get("tool_choice")
    if isinstance(choice, dict):
        request["tool_choice"] = str((choice.get("function") or choice).get("name", ""))
    return request


def _truncate(client: Backend, args: argparse.Namespace) -> None:
    text = args.text if args.text is not None else sys.stdin.read()
    result = client.truncate(args.tokenizer, text, args.max_tokens, keep=args.keep,
                             marker=args.marker)
    if args.json:
        print_json(dataclasses.asdict(result))
        return
    sys.stdout.write(result.text + "\n")


def _chunk(client: Backend, args: argparse.Namespace) -> None:
    text = args.file.read_text(encoding="utf-8") if args.file else sys.stdin.read()
    pieces = client.iter_chunks(args.tokenizer, text, args.max_tokens, overlap=args.overlap)
    for piece in pieces:
        if args.json:  # one JSON object per line, as the server streams them
            print_json(dataclasses.asdict(piece))
        else:
            print(f"--- chunk {piece.index}: chars [{piece.start}, {piece.end}) bytes "
                  f"[{piece.byte_start}, {piece.byte_end}) tokens {piece.count}")
            print(piece.text)


def _tokenizers(client: Backend, args: argparse.Namespace) -> None:
    if args.name:
        manifest = client.get_tokenizer(args.name)
        if args.json:
            print_json(dataclasses.asdict(manifest))
            return
        print(f"{manifest.ref}  vocab {manifest.vocab_size}  builtin {manifest.builtin}")
        print(f"  pattern: {manifest.pattern}")
        print(f"  special tokens: {manifest.special_tokens}")
        if manifest.versions:
            print(f"  versions: {manifest.versions}  aliases: {manifest.aliases}")
        if manifest.created_at:
            print(f"  created: {manifest.created_at}")
        return
    summaries = client.list_tokenizers()
    if args.json:
        print_json([dataclasses.asdict(s) for s in summaries])
        return
    for s in summaries:
        kind = "builtin" if s.builtin else f"versions {s.versions} latest {s.latest_version}"
        aliases = f" aliases {s.aliases}" if s.aliases else ""
        print(f"{s.name:<24} vocab {s.vocab_size:<8} {kind}{aliases}")
