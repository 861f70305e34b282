"""Training's counting phase as Ray tasks: one task per shard of files, counts merged here.

Why this is exact: documents never span two files
(``tokend.core.training.corpus.open_sources``), so a file read, split and counted on its own
gives the same pretoken counts as inside a local run, and adding the per-shard counts is what
the local worker pool does with its per-process counts. The merge phase stays in the calling
process (``tokend.core.training.byte_bpe``), so the merges are the same, merge for merge.

The unit of work is a whole file (a local path every Ray node can read, or an ``s3://``
object read with boto3 where the task runs); shards group files to even out their sizes. Ray is
an optional dependency (``pip install 'tokend[ray]'``), imported only when this runs.
"""

from __future__ import annotations

import dataclasses
import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokend.core.errors import FailedPrecondition, InvalidInput, TokendError, Unavailable
from tokend.core.training import objects
from tokend.core.training.corpus import TARGET_PIECE_CHARS, Splitter, file_blocks
from tokend.core.training.pretoken_count import PieceCounter

# Characters of text counted at once inside a task.
BATCH_CHARS = 1 << 18
# Seconds between two looks at finished tasks (and at should_stop).
POLL_SECONDS = 0.1
# A shard holds files until it reaches about this many bytes, or a quarter of the corpus's
# share of one CPU of the cluster if that is less (more shards than CPUs keeps every CPU busy
# until the end; fewer keeps the per-task overhead and result transfers low).
SHARD_BYTES = 64 << 20
SHARDS_PER_CPU = 4
# Seconds to wait for a TCP connection to a cluster's head before calling it unreachable.
CONNECT_SECONDS = 5.0
# Most characters of a user-given value echoed back in an error.
ECHO_CHARS = 200


@dataclass(frozen=True)
class ShardCount:
    """What one shard (or all of them, merged) contributed to the counting phase."""

    word_counts: dict[bytes, int]  # pretoken UTF-8 bytes -> occurrences
    bytes_read: int
    documents: int  # non-empty documents (text between special tokens / file ends)
    pretokens: int  # pretoken occurrences
    shards: int = 1
    nodes: frozenset[str] = frozenset()  # the Ray nodes that counted (ids)


@dataclass(frozen=True)
class InputFile:
    """One corpus file: a local path or an ``s3://bucket/key`` URL, and its size in bytes."""

    name: str
    size: int


def count_files(
    names: Sequence[str],
    special_tokens: Sequence[str],
    pat_str: str,
    *,
    safe_cuts: bool,
    compiled: bool,
) -> ShardCount:
    """Count the pretokens of whole files, in this process (the body of one Ray task).

    Each file is split exactly as ``train_bpe`` splits it (special tokens, safe cuts), so the
    sum over any grouping of files equals a local run's counts.
    """
    counter = PieceCounter(pat_str, compiled=compiled)
    splitter = Splitter(special_tokens, safe_cuts=safe_cuts, target_chars=TARGET_PIECE_CHARS)
    seen = 0
    bytes_read = 0
    for name in names:
        batch: list[str] = []
        chars = 0
        blocks, size = _open(name)
        for block in blocks:
            for piece in splitter.feed(block):
                batch.append(piece)
                chars += len(piece)
            if chars >= BATCH_CHARS:
                seen += counter.count(batch)
                batch, chars = [], 0
        batch.extend(splitter.finish())
        seen += counter.count(batch)
        bytes_read += size
    return ShardCount(counter.byte_counts(), bytes_read, splitter.documents, seen)


def _count_task(
    names: Sequence[str],
    special_tokens: Sequence[str],
    pat_str: str,
    *,
    safe_cuts: bool,
    compiled: bool,
) -> ShardCount:
    """``count_files`` as a Ray task: the count, and the node it ran on."""
    import ray  # noqa: PLC0415 (only ever runs inside a Ray worker)

    part = count_files(names, special_tokens, pat_str, safe_cuts=safe_cuts, compiled=compiled)
    node = ray.get_runtime_context().get_node_id()
    return dataclasses.replace(part, nodes=frozenset({node}))


def _open(name: str) -> tuple[Any, int]:
    """(text blocks, size in bytes) of a local file or an s3:// object."""
    if objects.is_s3_url(name):
        return objects.s3_text_blocks(name)
    path = Path(name)
    if not path.is_file():
        raise InvalidInput(
            f"corpus file {name[:ECHO_CHARS]!r} does not exist on the Ray node "
            f"{os.uname().nodename!r}; every node must see the same paths (or use s3://)"
        )
    return file_blocks(path), path.stat().st_size


def list_inputs(corpus: object) -> list[InputFile]:
    """The files of ``corpus`` (a path or URL, or a list of them), with their sizes.

    An ``s3://bucket/prefix/`` URL ending in ``/`` stands for every object under the prefix,
    in key order. Streams of str chunks cannot be shipped to a cluster and are refused.
    """
    items: list[object]
    if isinstance(corpus, str | os.PathLike):
        items = [corpus]
    elif isinstance(corpus, list | tuple):
        items = list(corpus)
        if not items:
            raise InvalidInput("corpus is an empty list of files; pass at least one path")
    else:
        raise InvalidInput(
            "counting on Ray takes files (paths or s3:// URLs), not a stream of text; "
            "write the text to files first"
        )
    out: list[InputFile] = []
    for item in items:
        if not isinstance(item, str | os.PathLike):
            raise InvalidInput(f"corpus list items must be paths, got {type(item).__name__}")
        name = os.fspath(item)
        if objects.is_s3_url(name):
            out += [InputFile(url, size) for url, size in objects.s3_list(name)]
            continue
        path = Path(name)
        if not path.is_file():
            raise InvalidInput(f"corpus file {name[:ECHO_CHARS]!r} does not exist or is not a file")
        out.append(InputFile(str(path.resolve()), path.stat().st_size))
    return out


def plan_shards(files: Sequence[InputFile], shard_bytes: int = SHARD_BYTES) -> list[list[str]]:
    """Group files, in order, into shards of about ``shard_bytes`` (a bigger file: alone).

    >>> plan_shards([InputFile("a", 5), InputFile("b", 5), InputFile("c", 20)], 10)
    [['a', 'b'], ['c']]
    """
    shards: list[list[str]] = []
    current: list[str] = []
    size = 0
    for f in files:
        if current and size + f.size > shard_bytes:
            shards.append(current)
            current, size = [], 0
        current.append(f.name)
        size += f.size
    if current:
        shards.append(current)
    return shards


def count_on_ray(
    corpus: object,
    special_tokens: Sequence[str],
    pat_str: str,
    *,
    safe_cuts: bool,
    compiled: bool,
    address: str | None,
    report: Callable[[int, int], None] | None = None,
    check: Callable[[], None] | None = None,
    shard_bytes: int | None = None,
) -> ShardCount:
    """Count ``corpus`` with one Ray task per shard and merge the counts as they arrive.

    ``address`` is what ``ray.init`` takes (``HOST:PORT`` of a cluster's head, ``ray://HOST:
    10001`` for Ray Client, ``auto``; None: ``RAY_ADDRESS`` or a new local instance).
    ``report(bytes_done, bytes_total)`` follows finished shards; ``check()`` may raise (e.g.
    Cancelled), which cancels the tasks still running. ``shard_bytes``: see SHARD_BYTES.
    """
    ray = _import_ray()
    files = list_inputs(corpus)
    total = sum(f.size for f in files)
    sizes = {f.name: f.size for f in files}
    started_here = not ray.is_initialized()
    if started_here:
        _check_reachable(address)
        try:
            ray.init(address=address, log_to_driver=False)
        except Exception as exc:  # ConnectionError, ValueError... Ray raises several kinds
            raise Unavailable(
                f"cannot reach the Ray cluster at {str(address)[:ECHO_CHARS]!r}: "
                f"{type(exc).__name__}: {str(exc)[:ECHO_CHARS]}"
            ) from None
    try:
        if shard_bytes is None:
            cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
            shard_bytes = min(SHARD_BYTES, max(1, total // (SHARDS_PER_CPU * cpus)))
        shards = plan_shards(files, shard_bytes)
        task = ray.remote(num_cpus=1, max_retries=2)(_count_task)
        nodes = _counting_nodes(ray)
        pending = {
            task.options(scheduling_strategy=_on_node(ray, nodes, i)).remote(
                shard, list(special_tokens), pat_str, safe_cuts=safe_cuts, compiled=compiled
            ): shard
            for i, shard in enumerate(shards)
        }  # fmt: skip
        return _gather(ray, pending, sizes, total, report=report, check=check)
    finally:
        if started_here:
            ray.shutdown()


def _counting_nodes(ray: Any) -> list[str]:
    """Ids of the alive nodes with CPUs, in a fixed order."""
    return sorted(
        n["NodeID"] for n in ray.nodes() if n.get("Alive") and n["Resources"].get("CPU", 0) > 0
    )


def _on_node(ray: Any, nodes: list[str], i: int) -> Any:
    """Shard ``i`` goes to node ``i mod len(nodes)`` (soft: elsewhere if that node is gone),
    so every node reads its share of the corpus instead of the first one queueing them all."""
    if not nodes:
        return "DEFAULT"
    from ray.util.scheduling_strategies import (  # noqa: PLC0415 (optional dependency)
        NodeAffinitySchedulingStrategy,
    )

    return NodeAffinitySchedulingStrategy(node_id=nodes[i % len(nodes)], soft=True)


def _gather(
    ray: Any,
    pending: dict[Any, list[str]],
    sizes: dict[str, int],
    total: int,
    *,
    report: Callable[[int, int], None] | None,
    check: Callable[[], None] | None,
) -> ShardCount:
    """Merge finished shards into one count, largest first, until none is left."""
    words: dict[bytes, int] = {}
    nodes: set[str] = set()
    bytes_read = documents = pretokens = 0
    done_bytes = 0
    shards = len(pending)
    try:
        while pending:
            if check is not None:
                check()
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_SECONDS)
            for ref in ready:
                shard = pending.pop(ref)
                part = _result(ray, ref, shard)
                if len(part.word_counts) > len(words):  # add the smaller into the larger
                    words, small = dict(part.word_counts), words
                else:
                    small = part.word_counts
                get = words.get
                for word, n in small.items():
                    words[word] = get(word, 0) + n
                bytes_read += part.bytes_read
                documents += part.documents
                pretokens += part.pretokens
                nodes |= part.nodes
                done_bytes += sum(sizes[name] for name in shard)
                if report is not None:
                    report(done_bytes, total)
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    return ShardCount(words, bytes_read, documents, pretokens, shards, frozenset(nodes))


def _result(ray: Any, ref: Any, shard: list[str]) -> ShardCount:
    """A finished task's count; its failure re-raised as the tokend error it was."""
    try:
        part: ShardCount = ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause
        if isinstance(cause, TokendError):
            raise cause from None
        raise TokendError(
            f"a Ray counting task failed on {shard[0][:ECHO_CHARS]!r}: "
            f"{type(cause).__name__}: {str(cause)[:ECHO_CHARS]}"
        ) from None
    except ray.exceptions.RayError as exc:  # a node died, the object was lost...
        raise TokendError(
            f"a Ray counting task was lost ({type(exc).__name__}): {str(exc)[:ECHO_CHARS]}"
        ) from None
    return part


def _check_reachable(address: str | None) -> None:
    """Fail fast when nothing listens at a ``HOST:PORT`` address (``ray.init`` would wait
    minutes for a cluster that is not there); other forms are left to Ray."""
    if address is None or "://" in address or address == "auto":
        return
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise InvalidInput(
            f"Ray address {address[:ECHO_CHARS]!r} is not HOST:PORT, ray://HOST:PORT or auto"
        )
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_SECONDS).close()
    except OSError as exc:
        raise Unavailable(
            f"cannot reach the Ray cluster at {address[:ECHO_CHARS]!r}: {exc.strerror or exc}"
        ) from None


def _import_ray() -> Any:
    try:
        import ray  # noqa: PLC0415 (optional dependency, only for counter="ray")
    except ImportError:
        raise FailedPrecondition(
            "counting on Ray needs the ray package: pip install 'tokend[ray]'"
        ) from None
    return ray
