"""``tokend train``: train a tokenizer (``--model`` kind) locally and publish it, or on a server.

Locally: counts and merges in this machine's processes with a progress bar on stderr, then
publishes a new version into the registry (``--registry``, env ``TOKEND_REGISTRY``, or the user
data dir) — or, with ``--out DIR``, writes ``<name>.tiktoken`` and a ``<name>.json`` manifest
(byte-bpe) or ``<name>.tokenizer.json`` (the other kinds).
With ``--target HOST:PORT`` the corpus is streamed to a tokend server, which trains and publishes.
With ``--ray ADDRESS`` (byte-level BPE) the counting phase runs as tasks on a Ray cluster (files
every node can read, or ``s3://`` objects) and the merges here (docs/scaling.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from tokend.commands import remote
from tokend.commands.progress import LineProgress
from tokend.commands.train_remote import run_remote_train
from tokend.core.errors import Cancelled, FailedPrecondition, TokendError, Unavailable
from tokend.core.formats import atomic_write_bytes, dump_tiktoken_bpe
from tokend.core.patterns import DEFAULT_TRAIN_PATTERN
from tokend.core.registry.publish import publish_trained, training_record
from tokend.core.training import TrainedTokenizer, TrainSpec, train
from tokend.core.training.objects import is_s3_url
from tokend.core.training.spec import (
    DEFAULT_MODEL,
    DEFAULT_WORDPIECE_SCORE,
    MODEL_KINDS,
    WORDPIECE_SCORES,
)

DESCRIPTION = """\
Train a tokenizer on UTF-8 text files: byte-level BPE (the default), char, word-bpe, wordpiece
or unigram (--model).

Locally (the default) it publishes a new version into the registry, or with --out DIR writes
<name>.tiktoken + <name>.json (byte-bpe) or <name>.tokenizer.json (the other kinds). With
--target HOST:PORT a tokend server trains and publishes.

example: tokend train corpus.txt --vocab-size 32000 --special '<|endoftext|>' --name mytok
example: tokend train corpus.txt --model wordpiece --vocab-size 8000 --special '[CLS]' --name bert
example: tokend train s3://corpora/en/ --ray ray-head:6379 --vocab-size 32000 --name mytok
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "train",
        help="train a tokenizer (byte-bpe, char, word-bpe, wordpiece, unigram) and publish it",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("corpus", nargs="+", metavar="CORPUS",
                        help="UTF-8 text files, or s3://BUCKET/KEY objects (a prefix ending in "
                        "/ means every object under it)")
    parser.add_argument("--vocab-size", type=int, required=True, metavar="N",
                        help="every id (byte-bpe: 256 bytes + merges + special tokens)")
    parser.add_argument("--special", action="append", default=[], metavar="TOKEN",
                        help="a special token (repeatable), e.g. --special '<|endoftext|>'")
    parser.add_argument("--model", default=DEFAULT_MODEL, choices=MODEL_KINDS,
                        help=f"the tokenizer kind (default {DEFAULT_MODEL})")
    parser.add_argument("--pattern", default=DEFAULT_TRAIN_PATTERN, metavar="NAME|REGEX",
                        help=f"byte-bpe: gpt2, cl100k, o200k or a regex "
                        f"(default {DEFAULT_TRAIN_PATTERN})")
    parser.add_argument("--wordpiece-score", choices=WORDPIECE_SCORES,
                        metavar="{" + ",".join(WORDPIECE_SCORES) + "}",
                        help="wordpiece: the merge criterion (default "
                        f"{DEFAULT_WORDPIECE_SCORE}, the likelihood gain; count: the most "
                        "frequent pair, as HF's trainer)")
    parser.add_argument("--name", required=True, help="tokenizer name in the registry")
    parser.add_argument("--registry", metavar="DIR|URL",
                        help="registry folder or s3://bucket/prefix (env TOKEND_REGISTRY, "
                        "default: user data dir)")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="write <name>.tiktoken + <name>.json here instead of publishing "
                        "(publishes as well if --registry is given)")
    parser.add_argument("--strict", action="store_true",
                        help="refuse to publish a tokenizer with lint errors (tokend registry "
                        "lint), naming each")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="counting processes (default: the CPUs available)")
    parser.add_argument("--ray", metavar="ADDRESS", dest="ray_address",
                        help="byte-bpe: count on this Ray cluster (HOST:PORT of the head, "
                        "ray://HOST:10001, or auto); needs pip install 'tokend[ray]'")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--detach", action="store_true",
                        help="with --target: print the job id and return at once")
    remote.add_connection_options(parser)
    # Local unless --target is given explicitly (TOKEND_TARGET does not send corpora away).
    parser.set_defaults(func=run, target=None)
    for action in parser._actions:  # argparse has no public way to reword a shared option
        if action.dest == "target":
            action.help = "train on this tokend server instead of locally (streams the corpus)"


def run(args: argparse.Namespace) -> int:
    if args.wordpiece_score is not None and args.model != "wordpiece":
        return _fail(args, "INVALID_ARGUMENT",
                     f"--wordpiece-score applies to --model wordpiece only, not --model "
                     f"{args.model}")
    if args.target is not None:
        if len(args.corpus) != 1:
            return _fail(args, "INVALID_ARGUMENT", "remote training takes exactly one corpus file")
        return run_remote_train(
            args,
            name=args.name,
            vocab_size=args.vocab_size,
            corpus=Path(args.corpus[0]),
            special_tokens=args.special,
            pattern=args.pattern,
            model=args.model,
            wordpiece_score=args.wordpiece_score or "",
            detach=args.detach,
        )
    try:
        if args.ray_address is not None and args.model != "byte-bpe":
            return _fail(args, "INVALID_ARGUMENT",
                         f"--ray counts for byte-level BPE only, not --model {args.model}")
        spec = TrainSpec(
            args.vocab_size,
            tuple(args.special),
            model=args.model,
            pattern=args.pattern,
            wordpiece_score=args.wordpiece_score or "",
            name=args.name,
        ).checked()
        bar = None if args.quiet else ProgressBar(sys.stderr)
        try:
            result = train(
                args.corpus,
                spec,
                workers=args.workers,
                progress=bar.update if bar else None,
                counter="local" if args.ray_address is None else "ray",
                ray_address=args.ray_address,
            )
        finally:
            if bar:
                bar.close()
        corpus_info = _corpus_info(args.corpus, result.stats.bytes_read)
        training = training_record(spec, result)
        output: dict[str, Any] = {"stats": result.stats.to_dict(), "merges": len(result.merges),
                                  "model": result.model}
        if args.out is not None:
            output["files"] = _write_out(args.out, args.name, result, training, corpus_info)
        if args.out is None or args.registry is not None:
            output["published"] = _publish(args, result, training, corpus_info)
    except KeyboardInterrupt:
        return _fail(args, "CANCELLED", "training interrupted; nothing was published", 130)
    except Cancelled as err:
        return _fail(args, "CANCELLED", str(err), 130)
    except Unavailable as err:
        return _fail(args, "UNAVAILABLE", str(err))
    except FailedPrecondition as err:
        return _fail(args, "FAILED_PRECONDITION", str(err))
    except (TokendError, ValueError, OSError) as err:
        return _fail(args, "INVALID_ARGUMENT", str(err))
    if args.json:
        print(json.dumps(output, indent=2, sort_keys=True))
    else:
        stats = result.stats
        note = " (ran out of material: stopped early)" if stats.stopped_early else ""
        distinct = stats.distinct_words
        print(
            f"trained {result.model} {len(result.vocab)} tokens ({len(result.merges)} "
            f"merges{note}) from {stats.bytes_read:,} bytes, {distinct:,} distinct "
            f"words in {stats.seconds['total']:.2f}s",
            file=sys.stderr,
        )
        for path in output.get("files", []):
            print(path)
        if "published" in output:
            print(output["published"])
    return 0


def _fail(args: argparse.Namespace, code: str, message: str, status: int = 1) -> int:
    if getattr(args, "json", False):
        print(json.dumps({"error": {"code": code, "message": message}}))
    print(f"tokend: {code}: {message}", file=sys.stderr)
    return status


def _corpus_info(names: list[str], bytes_read: int) -> dict[str, object]:
    """sha256 over the corpus files' bytes in order, their total size and names.

    Objects in object storage are not read a second time here: their URLs and total size.
    """
    if any(is_s3_url(name) for name in names):
        return {"bytes": bytes_read, "files": list(names)}
    paths = [Path(name) for name in names]
    digest = hashlib.sha256()
    total = 0
    for path in paths:
        with path.open("rb") as f:
            while block := f.read(1 << 20):
                digest.update(block)
                total += len(block)
    return {"sha256": digest.hexdigest(), "bytes": total, "files": [p.name for p in paths]}


def _write_out(
    out: Path,
    name: str,
    result: TrainedTokenizer[Any],
    training: dict[str, object],
    corpus: dict[str, object],
) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    if result.served_format != "tiktoken":
        path = out / f"{name}.tokenizer.json"
        result.save_tokenizer_json(path)
        return [str(path)]
    ranks_path = out / f"{name}.tiktoken"
    sha = dump_tiktoken_bpe(result.mergeable_ranks(), ranks_path)
    manifest = {
        "name": name,
        "ranks_file": ranks_path.name,
        "ranks_sha256": sha,
        "pat_str": result.pattern,
        "special_tokens": result.special_tokens,
        "explicit_n_vocab": len(result.vocab),
        "training": training,
        "corpus": corpus,
    }
    manifest_path = out / f"{name}.json"
    atomic_write_bytes(manifest_path, (json.dumps(manifest, indent=2) + "\n").encode())
    return [str(ranks_path), str(manifest_path)]


def _publish(
    args: argparse.Namespace,
    result: TrainedTokenizer[Any],
    training: dict[str, object],
    corpus: dict[str, object],
) -> str:
    from tokend.commands.registry import registry_root  # noqa: PLC0415 (only when publishing)
    from tokend.core.registry import Registry  # noqa: PLC0415

    registry = Registry(registry_root(args.registry))
    return publish_trained(registry, args.name, result, training=training, corpus=corpus,
                           strict=args.strict).ref


class ProgressBar(LineProgress):
    """Phase, done/total, rate and ETA of a local training run (timed here, per phase)."""

    def __init__(self, out: TextIO) -> None:
        super().__init__(out)
        self.phase = ""
        self.phase_start = time.monotonic()

    def update(self, phase: str, done: int, total: int) -> None:
        now = time.monotonic()
        if phase != self.phase:
            if self.drawn:
                self.out.write("\n")
            self.phase, self.phase_start = phase, now
        elapsed = now - self.phase_start
        unit = {"count": "B", "index": "words", "merge": "merges", "select": "chars"}.get(
            phase, "")
        rate = done / elapsed if elapsed > 0 else 0.0
        if total:
            bar = "[" + self.bar(done / total) + "] "
            eta = f" eta {(total - done) / rate:.0f}s" if rate > 0 and done < total else ""
            counts = f"{done:,}/{total:,}"
        else:
            bar, eta, counts = "", "", f"{done:,}"
        self.draw(f"\r{phase:<6} {bar}{counts} {unit} {rate:,.0f} {unit}/s{eta}", 79)
