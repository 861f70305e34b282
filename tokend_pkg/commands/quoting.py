"""``tokend quote``: what a call will cost, as a table (part, tokens, $/MTok, $) or ``--json``;
``tokend prices update``: a newer genai-prices snapshot kept in the registry (``prices.json``,
read by quotes in process and by ``tokend serve`` on that registry).

In process or on a server with ``--target``, as the other remote commands (``remote.py``): the
request is a messages file (an OpenAI chat request) or a vendor's body (``--vendor --body``);
the answer is ``Client.quote``'s, whose ``as_dict`` is ``POST /quote``'s JSON.
"""

from __future__ import annotations

import argparse
import sys
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokend.commands.backends import Backend
from tokend.commands.registry import registry_root
from tokend.commands.remote import print_json, read_json, read_request, remote_parser
from tokend.core.counting.prices import PRICES_FILE, write_snapshot
from tokend.core.errors import TokendError

if TYPE_CHECKING:
    from tokend.client.results import QuoteResult

VENDORS = ("anthropic", "openai-responses", "openai-chat", "gemini")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    prices = subparsers.add_parser("prices", help="the price data quotes use (genai-prices)")
    sub = prices.add_subparsers(dest="prices_command", metavar="SUBCOMMAND", required=True)
    update = sub.add_parser("update", help="take a newer genai-prices snapshot into the "
                            "registry (needs the network, or --from FILE)")
    update.add_argument("--from", dest="origin", metavar="URL|FILE",
                        help="where to take it (default: genai-prices' own update URL)")
    update.add_argument("--registry", metavar="DIR",
                        help="the registry folder (env TOKEND_REGISTRY, default: user data dir)")
    update.add_argument("--json", action="store_true", help="print JSON for scripts")
    update.set_defaults(func=_prices_update)
    quote = remote_parser(
        subparsers,
        "quote",
        _quote,
        "what a call will cost: its input split by the vendor's prompt caching, each part "
        "priced by genai-prices (in process, or on a server with --target)",
        tokenizer=False,
    )
    quote.add_argument("--model", metavar="NAME", help="the model (else the file's \"model\")")
    quote.add_argument("--messages", type=Path, metavar="FILE", help="a JSON list of messages "
                       "or an OpenAI chat request {messages, tools?, model?} ('-': stdin)")
    quote.add_argument("--tools", type=Path, metavar="FILE", help="tool definitions (JSON)")
    quote.add_argument("--tool-choice", metavar="CHOICE")
    quote.add_argument("--vendor", choices=VENDORS, help="FILE (--body) is this vendor's "
                       "request body; anthropic: its cache_control breakpoints apply")
    quote.add_argument("--body", type=Path, metavar="FILE", help="a vendor's request body "
                       "(JSON; with --vendor)")
    quote.add_argument("--max-output-tokens", type=int, metavar="N",
                       help="the most output quoted (default: the model's maximum)")
    quote.add_argument("--cache", default="cold", metavar="STATE",
                       help="cold (default), warm, or prefix_tokens:N")
    quote.add_argument("--provider", metavar="ID", help="genai-prices' provider id (open "
                       "models: who hosts it, e.g. together)")



def _quote(client: Backend, args: argparse.Namespace) -> None:
    request: dict[str, Any] = {}
    body = None
    if args.body is not None:
        body = read_json(args.body)
        if not isinstance(body, dict) or not args.vendor:
            raise ValueError(f"{args.body}: --body takes a vendor's JSON object body, with "
                             f"--vendor ({', '.join(VENDORS)})")
    elif args.messages is not None:
        request = read_request(args.messages)
    else:
        raise ValueError("tokend quote needs --messages FILE or --vendor V --body FILE")
    model = args.model or request.get("model") or (body or {}).get("model") or ""
    if not model:
        raise ValueError("tokend quote needs --model (or a \"model\" in the file)")
    tools = read_json(args.tools) if args.tools is not None else request.get("tools")
    result = client.quote(model, request.get("messages") if body is None else None,
                          tools=tools, tool_choice=args.tool_choice or request.get("tool_choice"),
                          vendor=args.vendor if body is not None else None, vendor_body=body,
                          max_output_tokens=args.max_output_tokens, cache=args.cache,
                          provider=args.provider)
    if args.json:
        print_json(result.as_dict())
        return
    print(quote_table(result))


def quote_table(result: QuoteResult) -> str:
    """The quote as a table: part, tokens, $/MTok, $ (and the totals and where prices are from).
    """
    rows = [(p.part, f"{p.tokens:,}", f"{p.usd_per_mtok:f}", f"{p.usd:f}") for p in result.parts
            if p.tokens or p.part in ("input", "output")]
    header = ("part", "tokens", "$/MTok", "$")
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(4)]
    lines = [f"{result.model} ({result.cache}; {result.cache_rule})"]
    for row in (header, *rows):
        lines.append(f"{row[0]:<{widths[0]}}  " + "  ".join(
            f"{cell:>{widths[i + 1]}}" for i, cell in enumerate(row[1:])))
    lines.append(f"input {result.input_tokens:,} tokens; output 0 .. "
                 f"{result.output_tokens_max:,}")
    lines.append(f"total: ${result.usd_min:f} (no output) .. ${result.usd_max:f}")
    prices = result.prices
    lines.append(f"prices: {prices['source']} {prices['version']} ({prices['provider']} "
                 f"{prices['model']})")
    if not result.exact:
        lines.append(f"estimate: {result.estimate_reason}")
    return "\n".join(lines)


def _prices_update(args: argparse.Namespace) -> int:
    """Fetch genai-prices' data.json (or read a file), check it, keep it in the registry."""
    try:
        root = registry_root(args.registry)
        if not isinstance(root, Path):
            raise ValueError(f"{root}: prices are kept in a registry folder; object storage "
                             "registries use the shipped snapshot")
        origin = args.origin or _default_url()
        payload = _fetch(origin)
        snapshot = write_snapshot(root, payload, origin, datetime.now(UTC))
    except (TokendError, ValueError, OSError) as err:
        print(f"tokend: prices update: {err}", file=sys.stderr)
        return 1
    models = sum(len(p.models) for p in snapshot.data.providers)
    if args.json:
        print_json({"file": str(root / PRICES_FILE), "fetched": snapshot.fetched,
                    "origin": snapshot.origin, "providers": len(snapshot.data.providers),
                    "models": models})
    else:
        print(f"{root / PRICES_FILE}: {len(snapshot.data.providers)} providers, {models} "
              f"models, taken {snapshot.fetched} from {snapshot.origin}")
    return 0


def _default_url() -> str:
    from genai_prices.update_prices import DEFAULT_UPDATE_URL  # noqa: PLC0415 (optional extra)

    return str(DEFAULT_UPDATE_URL)


def _fetch(origin: str) -> bytes:
    """The bytes at ``origin``: an http(s) URL (30 s) or a file."""
    if not origin.startswith(("http://", "https://")):
        return Path(origin).read_bytes()
    try:
        with urllib.request.urlopen(origin, timeout=30) as answer:
            return bytes(answer.read())
    except (urllib.error.URLError, TimeoutError) as exc:
        raise OSError(f"cannot fetch {origin} ({exc}): no network? take a file with --from "
                      "FILE") from None
