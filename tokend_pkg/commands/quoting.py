"""``tokend quote``: what a call will cost, as a table (part, tokens, $/MTok, $) or ``--json``.

In process or on a server with ``--target``, as the other remote commands (``remote.py``): the
request is a messages file (an OpenAI chat request) or a vendor's body (``--vendor --body``);
the answer is ``Client.quote``'s, whose ``as_dict`` is ``POST /quote``'s JSON.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokend.commands.backends import Backend
from tokend.commands.remote import print_json, read_json, read_request, remote_parser

if TYPE_CHECKING:
    from tokend.client.results import QuoteResult

VENDORS = ("anthropic", "openai-responses", "openai-chat", "gemini")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
