"""``tokend train --target``: start a training job on a tokend server and follow it.

The corpus is streamed (or named under the server's --train-dir); a progress line on stderr
shows the server's phase, rate and ETA; the published reference (or, with ``--detach``, the
job id) is printed on stdout.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tokend.commands.backends import connect, failure
from tokend.commands.progress import LineProgress
from tokend.commands.remote import fail, print_json
from tokend.core.errors import TokendError

if TYPE_CHECKING:
    from tokend.client import Client, TrainJob


def run_remote_train(
    args: argparse.Namespace,
    *,
    name: str,
    vocab_size: int,
    corpus: Path | None,
    corpus_path: str = "",
    special_tokens: Sequence[str] = (),
    pattern: str = "",
    model: str = "",
    wordpiece_score: str = "",
    detach: bool = False,
) -> int:
    """Start a training job on the server and follow it with a progress bar on stderr.

    ``corpus`` (a local file) is streamed; or ``corpus_path`` names a file under the server's
    --train-dir. Prints the published reference (or, with ``detach``, the job id) on stdout.
    """

    def follow(client: Client) -> int:
        handle = client.train(
            name,
            corpus,
            vocab_size=vocab_size,
            special_tokens=special_tokens,
            pattern=pattern,
            corpus_path=corpus_path,
            model=model,
            wordpiece_score=wordpiece_score,
        )
        if detach:
            _emit_job(args, handle.job)
            return 0
        bar = ProgressBar(sys.stderr)
        for job in handle.progress():
            bar.update(job)
        bar.close()
        job = handle.job if handle.job.finished else handle.refresh()
        _emit_job(args, job)
        return 0 if job.published else 1

    try:
        with connect(args) as client:
            return follow(client)
    except (TokendError, ValueError, OSError) as err:
        fail(args, *failure(err, args))
        return 1


def _emit_job(args: argparse.Namespace, job: TrainJob) -> None:
    if getattr(args, "json", False):
        print_json(dataclasses.asdict(job) | {"state": job.state.value})
    elif job.published:
        print(job.published)
    elif job.finished:
        print(f"tokend: training job {job.job_id} {job.state.value}: {job.error}", file=sys.stderr)
    else:
        print(job.job_id)


class ProgressBar(LineProgress):
    """Phase, done/total, rate and ETA of a remote job, as the server reports them."""

    def update(self, job: TrainJob) -> None:
        bar = self.bar(job.done / job.total if job.total else 0.0)
        eta = f" eta {job.eta_seconds:.0f}s" if job.eta_seconds > 0 else ""
        rate = f" {job.rate:,.0f}/s" if job.rate > 0 else ""
        phase = job.phase or job.state.value
        self.draw(f"\r{phase:<8} [{bar}] {job.done:,}/{job.total:,}{rate}{eta}", 78)
