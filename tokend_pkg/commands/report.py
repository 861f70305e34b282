"""``tokend report``: compare tokenizers on texts — tables, JSON and plots.

Tokenizers are built-in names (``o200k_base``), model names (``gpt-4o``), registry references
(``mytok@3``) or tokenizer files (``tokenizer.json``, ``tokenizer.model``, ``tekken.json``).
Texts default to the shipped parallel corpus; ``--curve-corpus`` adds a tokens-vs-vocabulary
curve trained here (never on a server: training belongs to Train jobs, see docs/report.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tokend.commands import backends, remote
from tokend.core.errors import FailedPrecondition, InvalidInput, TokendError
from tokend.core.report import (
    DEFAULT_SIZES,
    CurvePoint,
    LanguageCost,
    Report,
    TokenizerMetrics,
    build_report,
    format_report,
    load_parallel_corpus,
    report_from_dict,
    training_kinds,
    vocab_curve,
)
from tokend.core.tokenizer import Tokenizer

if TYPE_CHECKING:
    from tokend.client import ReportResult

DEFAULT_TOKENIZERS = ("o200k_base", "cl100k_base", "r50k_base")

DESCRIPTION = f"""\
Compare tokenizers: bytes, characters and words per token, the share of the vocabulary used,
the token cost of 20 languages relative to English (shipped parallel corpus), and optionally
held-out tokens against vocabulary size for tokenizers trained here.

examples:
  tokend report                                   # {", ".join(DEFAULT_TOKENIZERS)}
  tokend report o200k_base mytok@2 tokenizer.json --text notes.txt --json
  tokend report --curve-corpus corpus.txt --heldout para.txt --plot report.png
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "report",
        help="compare tokenizers: table, JSON, PNG/SVG plots",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("tokenizers", nargs="*", metavar="TOKENIZER",
                        help="built-in, model name, registry ref or tokenizer file "
                        f"(default: {' '.join(DEFAULT_TOKENIZERS)})")
    parser.add_argument("--text", action="append", type=Path, default=[], metavar="FILE",
                        help="UTF-8 file to measure, one text per file (repeatable; "
                        "default: the shipped parallel corpus)")
    parser.add_argument("--no-lint", dest="lint", action="store_false",
                        help="leave out each tokenizer's lint counts (local runs only)")
    parser.add_argument("--no-languages", dest="languages", action="store_false",
                        help="leave out the per-language cost table")
    parser.add_argument("--parallel", type=Path, metavar="FILE",
                        help="your own parallel corpus (the shipped parallel.json's format)")
    parser.add_argument("--curve-corpus", action="append", type=Path, default=[],
                        metavar="FILE", help="train on these files for the vocabulary curve")
    parser.add_argument("--heldout", type=Path, metavar="FILE",
                        help="text the curve counts (default: the parallel corpus' English)")
    parser.add_argument("--vocab-sizes", type=_sizes, default=DEFAULT_SIZES, metavar="N,N,...",
                        help=f"curve sizes (default {','.join(map(str, DEFAULT_SIZES))})")
    parser.add_argument("--kinds", type=_kinds, metavar="KIND,...",
                        help=f"training kinds for the curve (default: all: "
                        f"{','.join(training_kinds())})")
    parser.add_argument("--workers", type=int, metavar="N", help="counting processes to train")
    parser.add_argument("--from-json", type=Path, metavar="FILE",
                        help="print / draw a report saved with --json instead of measuring")
    parser.add_argument("--plot", action="append", type=Path, default=[], metavar="FILE",
                        help="draw the report into FILE.png or FILE.svg (repeatable)")
    parser.add_argument("--registry", metavar="DIR|URL",
                        help="registry folder or s3://bucket/prefix (env TOKEND_REGISTRY, "
                        "default: user data dir)")
    remote.add_connection_options(parser)  # --target (the Report RPC), TLS, --json
    # Local unless --target is given explicitly, as for `tokend train`.
    parser.set_defaults(func=run, target=None)
    for action in parser._actions:  # argparse has no public way to reword a shared option
        if action.dest == "target":
            action.help = ("measure on this tokend server (the Report RPC: its tokenizers, "
                           "its limits); --parallel and --curve-corpus are local only")


def _sizes(value: str) -> tuple[int, ...]:
    try:
        return tuple(int(part.replace("_", "")) for part in value.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"vocabulary sizes must be integers separated by commas, got {value!r}"
        ) from None


def _kinds(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def run(args: argparse.Namespace) -> int:
    try:
        report = make_report(args)
        if args.plot:
            from tokend.core.report.plots import plot_format, write_plot  # noqa: PLC0415

            for path in args.plot:
                plot_format(path)  # refuse a bad name before drawing any
            for path in args.plot:
                write_plot(report, path)
    except KeyboardInterrupt:
        return _fail(args, "CANCELLED", "interrupted", 130)
    except FailedPrecondition as err:
        return _fail(args, "FAILED_PRECONDITION", str(err))
    except (TokendError, ValueError, OSError) as err:
        code, details = backends.failure(err, args)  # a server's status, else a bad argument
        return _fail(args, "INVALID_ARGUMENT" if code == "CLIENT_ERROR" else code, details)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(format_report(report))
    for path in args.plot:
        print(f"wrote {path}", file=sys.stderr)
    return 0


def make_report(args: argparse.Namespace) -> Report:
    """Load the tokenizers and texts the arguments name, train the curve, measure."""
    if args.from_json is not None:
        if args.tokenizers or args.text or args.curve_corpus or args.target is not None:
            raise InvalidInput("--from-json shows a saved report: give no tokenizers, --text, "
                               "--curve-corpus or --target with it")
        try:
            saved = json.loads(args.from_json.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InvalidInput(f"{args.from_json}: not a JSON report ({exc})") from None
        return report_from_dict(saved)
    refs = list(args.tokenizers) or list(DEFAULT_TOKENIZERS)
    if args.target is not None:
        if args.parallel is not None or args.curve_corpus:
            raise InvalidInput("with --target the server measures its own parallel corpus; "
                               "--parallel and --curve-corpus work locally only")
        texts_arg = [_read_text(path) for path in args.text] or None
        with backends.connect(args) as client:
            result = client.report(refs, texts_arg, languages=args.languages)
        return report_from_result(result)
    tokenizers = load_tokenizers(refs, args.registry)
    corpus = load_parallel_corpus(args.parallel)
    texts: list[str] | None = None
    source = ""
    if args.text:
        texts = [_read_text(path) for path in args.text]
        source = ", ".join(path.name for path in args.text)
    elif args.parallel is not None:
        source = f"{args.parallel.name} ({len(corpus.languages)} languages)"
    curve: list[CurvePoint] = []
    heldout: str | None = None
    if args.curve_corpus:
        heldout = (_read_text(args.heldout) if args.heldout is not None
                   else " ".join(corpus.language("en").sentences))
        curve = vocab_curve(
            args.curve_corpus, heldout, args.vocab_sizes, kinds=args.kinds, workers=args.workers,
            progress=None if args.json else _curve_progress,
        )
    elif args.heldout is not None or args.kinds is not None:
        raise InvalidInput("--heldout and --kinds shape the curve: add --curve-corpus FILE")
    return build_report(tokenizers, texts, texts_source=source, languages=args.languages,
                        corpus=corpus, curve=curve, heldout=heldout, lint=args.lint)


def report_from_result(result: ReportResult) -> Report:
    """A server's Report answer as the core's Report, so tables, JSON and plots are shared."""
    return Report(
        texts_source=result.texts_source,
        metrics=tuple(
            TokenizerMetrics(tokenizer=t.tokenizer, n_vocab=t.n_vocab, texts=t.texts,
                             bytes=t.bytes, chars=t.chars, words=t.words, tokens=t.tokens,
                             distinct_tokens=t.distinct_tokens)
            for t in result.tokenizers
        ),
        languages=tuple(
            LanguageCost(tokenizer=r.tokenizer, language=r.language, name=r.name, bytes=r.bytes,
                         tokens=r.tokens, relative=r.relative)
            for r in result.languages
        ),
    )


def _curve_progress(kind: str, vocab_size: int) -> None:
    print(f"training {kind} to {vocab_size:,} tokens for the curve...", file=sys.stderr)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: not UTF-8 text (byte {exc.start})") from None


def load_tokenizers(refs: Sequence[str], registry: str | None) -> list[tuple[str, Tokenizer]]:
    """(name, tokenizer) for each reference: a tokenizer file if the path exists, else the
    registry's resolution (built-ins and model names need no registry folder)."""
    from tokend.commands.registry import registry_root  # noqa: PLC0415
    from tokend.core.registry import Registry  # noqa: PLC0415

    store: Registry | None = None
    loaded: list[tuple[str, Tokenizer]] = []
    for ref in refs:
        path = Path(ref)
        if path.is_file():
            loaded.append((path.name, _load_file(path)))
            continue
        if store is None:
            store = Registry(registry_root(registry))
        resolved, tokenizer = store.load(ref)
        loaded.append((resolved.ref, tokenizer))
    return loaded


def _load_file(path: Path) -> Tokenizer:
    from tokend.core.formats.files import FILE_NAMES, load_file, sniff_format  # noqa: PLC0415

    data = path.read_bytes()
    fmt = sniff_format(data)
    if fmt == "tiktoken":
        raise InvalidInput(
            f"{path}: a .tiktoken file does not say its pattern; import it first: "
            f"tokend registry import NAME --from {path} --pattern o200k"
        )
    if fmt not in FILE_NAMES:
        raise InvalidInput(
            f"{path}: not a tokenizer file tokend reads ({', '.join(FILE_NAMES)})"
        )
    return load_file(fmt, data, name=path.name)


def _fail(args: argparse.Namespace, code: str, message: str, status: int = 1) -> int:
    reason = " ".join(message.split())
    if getattr(args, "json", False):
        print(json.dumps({"error": {"code": code, "message": reason}}))
    print(f"tokend: {code}: {reason}", file=sys.stderr)
    return status
