"""Training's counting phase on a real Ray cluster equals a local run, merge for merge.

The module starts a real S3-compatible server (SeaweedFS, tests/support/seaweed.py) holding
the corpus as objects, and a two-node Ray cluster on this machine (``ray start --head`` and a
second ``ray start --address``, one CPU each, every port picked free, each node a ``--block``ed
child process stopped by its id at the end; the nodes get the S3 endpoint and credentials in
their environment, as nodes of a real cluster would), then trains the same corpus locally and
through Ray, from files and from ``s3://`` objects, and compares vocabularies, merges and
statistics. The counting runs in the Ray workers (each its own process, on either node); only
the merge phase runs here.
"""

from __future__ import annotations

import gzip
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
import seaweed

from tokend.core.errors import Cancelled, InvalidInput, TokendError, Unavailable
from tokend.core.training import ray_count
from tokend.core.training.byte_bpe import train_bpe

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "corpora"
RAY = Path(sys.executable).parent / "ray"
START_TIMEOUT = 60.0
SPECIAL = "<|endoftext|>"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def node_ports() -> list[str]:
    """Every port a Ray node would otherwise take from a fixed default."""
    return [
        "--ray-client-server-port", str(free_port()),
        "--dashboard-agent-listen-port", str(free_port()),
        "--dashboard-agent-grpc-port", str(free_port()),
        "--metrics-export-port", str(free_port()),
        "--runtime-env-agent-port", str(free_port()),
    ]  # fmt: skip


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a ``ray start --block`` node: SIGTERM makes it stop its own processes."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: only what it started
            proc.wait()


def wait_for_nodes(address: str, want: int, logs: list[Path]) -> None:
    """Until the cluster reports ``want`` alive nodes (``ray status`` through the GCS)."""
    deadline = time.monotonic() + START_TIMEOUT
    out = ""
    while time.monotonic() < deadline:
        status = subprocess.run(
            [str(RAY), "status", "--address", address],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        out = status.stdout
        active = out.split("Active:", 1)[-1].split("Pending:", 1)[0]
        if status.returncode == 0 and active.count("node_") >= want:
            return
        time.sleep(1.0)
    tails = "\n".join(log.read_text(errors="replace")[-2000:] for log in logs)
    raise TimeoutError(f"Ray cluster at {address} has not {want} nodes:\n{out}\n{tails}")


@pytest.fixture(scope="module")
def s3_corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[str]]]:
    """An S3 server with the corpus files as objects under s3://corpora/en/ (key order = file
    order) and a non-UTF-8 object; yields (the prefix URL, the same files on disk)."""
    base = tmp_path_factory.mktemp("s3")
    server = seaweed.start(base)
    try:
        files = corpus_files(tmp_path_factory.mktemp("corpus"))
        client = boto3.client(
            "s3", endpoint_url=server.endpoint, aws_access_key_id=seaweed.ACCESS_KEY,
            aws_secret_access_key=seaweed.SECRET_KEY, region_name="us-east-1",
        )  # fmt: skip
        client.create_bucket(Bucket="corpora")
        for i, path in enumerate(files):
            client.put_object(Bucket="corpora", Key=f"en/{i:02d}-{Path(path).name}",
                              Body=Path(path).read_bytes())  # fmt: skip
        client.put_object(Bucket="corpora", Key="bad/latin1.txt",
                          Body="caf\xe9 au lait".encode("latin-1"))  # fmt: skip
        saved = {k: os.environ.get(k) for k in server.env()}
        os.environ.update(server.env())  # for boto3 here and in the Ray nodes started after
        try:
            yield "s3://corpora/en/", files
        finally:
            restore(saved)
    finally:
        server.stop()


def restore(saved: dict[str, str | None]) -> None:
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="module")
def ray_cluster(
    tmp_path_factory: pytest.TempPathFactory, s3_corpus: tuple[str, list[str]]
) -> Iterator[str]:
    """A head node and a second node, one CPU each; yields the head's GCS address."""
    base = tmp_path_factory.mktemp("ray")
    # Ray's token authentication with a token of this test only (nothing in ~/.ray); the
    # driver (this process, the CLI's) reads the same variables.
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32),
            "RAY_USAGE_STATS_ENABLED": "0"}  # fmt: skip
    saved = {k: os.environ.get(k) for k in auth}
    os.environ.update(auth)
    env = dict(os.environ)
    port = free_port()
    address = f"127.0.0.1:{port}"
    common = ["--num-cpus=1", "--node-ip-address=127.0.0.1", "--object-store-memory=80000000",
              "--disable-usage-stats", "--block"]  # fmt: skip
    procs: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []
    try:
        for args in (
            ["--head", f"--port={port}", "--include-dashboard=false", f"--temp-dir={base}"],
            [f"--address={address}"],
        ):
            log = base / f"node{len(procs)}.log"
            logs.append(log)
            with log.open("wb") as out:
                procs.append(subprocess.Popen(
                    [str(RAY), "start", *args, *common, *node_ports()],
                    stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                ))  # fmt: skip
            wait_for_nodes(address, len(procs), logs)
        yield address
    finally:
        for proc in reversed(procs):
            stop(proc)
        restore(saved)


def corpus_files(tmp_path: Path) -> list[str]:
    """Several files of different kinds: English with special tokens, German, code-like text,
    a file with CRLF and emoji, and Shakespeare cut into two parts."""
    shakespeare = gzip.decompress((FIXTURES / "shakespeare.txt.gz").read_bytes()).decode()
    texts = {
        "stories.txt": (FIXTURES / "tinystories_sample.txt").read_text(encoding="utf-8"),
        "german.txt": (FIXTURES / "german.txt").read_text(encoding="utf-8"),
        "mixed.txt": "def f(x):\r\n    return x  # 🙂 naïve café\r\n" * 300
        + f"{SPECIAL}  \t 12345 ,,, ??? 東京 タワー\n" * 200,
        "shakespeare-1.txt": shakespeare[:300_000],
        "shakespeare-2.txt": shakespeare[300_000:600_000],
    }
    paths = []
    for name, text in texts.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8", newline="")
        paths.append(str(path))
    return paths


class TestRayCounting:
    def test_ray_equals_local_merge_for_merge(
        self, ray_cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Same vocab, merges in the same order, same statistics; both nodes counted."""
        files = corpus_files(tmp_path)
        monkeypatch.setattr(ray_count, "SHARDS_PER_CPU", 1000)  # one shard per file: 5 tasks
        local = train_bpe(files, 1200, [SPECIAL], workers=2)
        on_ray = train_bpe(files, 1200, [SPECIAL], counter="ray", ray_address=ray_cluster)
        assert on_ray.merges == local.merges
        assert on_ray.vocab == local.vocab
        assert on_ray.special_tokens == local.special_tokens
        for field in ("bytes_read", "documents", "pretokens", "distinct_pretokens", "merges"):
            assert getattr(on_ray.stats, field) == getattr(local.stats, field), field
        assert on_ray.stats.workers == len(files)  # one Ray task per shard
        assert len(local.merges) == 1200 - 257

    def test_both_nodes_count_and_counts_match(
        self, ray_cluster: str, tmp_path: Path
    ) -> None:
        """The pretoken counts themselves equal a single process's, and both nodes took
        shards (one CPU each, so the second of two concurrent tasks runs on the other)."""
        files = corpus_files(tmp_path) * 2  # 10 shards
        merged = ray_count.count_on_ray(
            files, [SPECIAL], train_pattern(), safe_cuts=True, compiled=True,
            address=ray_cluster, shard_bytes=1,
        )  # fmt: skip
        alone = ray_count.count_files(
            files, [SPECIAL], train_pattern(), safe_cuts=True, compiled=False
        )
        assert merged.word_counts == alone.word_counts
        assert (merged.bytes_read, merged.documents, merged.pretokens) == (
            alone.bytes_read, alone.documents, alone.pretokens)
        assert merged.shards == 10
        assert len(merged.nodes) == 2, merged.nodes

    def test_cli_with_ray_writes_the_same_files(self, ray_cluster: str, tmp_path: Path) -> None:
        """`tokend train --ray ADDRESS` (custom regex: pieces only at special tokens) writes
        the same .tiktoken file as the local CLI run."""
        files = corpus_files(tmp_path)
        outputs = {}
        for mode, extra in (("local", []), ("ray", ["--ray", ray_cluster])):
            out = tmp_path / mode
            result = subprocess.run(
                [sys.executable, "-m", "tokend.cli", "train", *files, "--vocab-size", "700",
                 "--special", SPECIAL, "--pattern", r"\s*\w+|[^\w\s]+|\s+", "--name", "t",
                 "--out", str(out), "--quiet", "--json", *extra],
                capture_output=True, text=True, timeout=120, check=False,
                env=dict(os.environ),
            )  # fmt: skip
            assert result.returncode == 0, result.stderr[-3000:]
            outputs[mode] = (out / "t.tiktoken").read_bytes()
            stats = json.loads(result.stdout)["stats"]
            assert stats["workers"] >= 1
        assert outputs["ray"] == outputs["local"]
        assert len(outputs["local"].splitlines()) == 700 - 1  # 256 bytes + merges

    def test_s3_objects_on_ray_equal_local_files(
        self, ray_cluster: str, s3_corpus: tuple[str, list[str]]
    ) -> None:
        """Ray tasks read s3:// objects themselves (boto3 in the workers): the same merges as
        the files on disk counted locally, and as the objects counted locally."""
        prefix, files = s3_corpus
        local = train_bpe(files, 900, [SPECIAL], workers=1)
        on_ray = train_bpe(prefix, 900, [SPECIAL], counter="ray", ray_address=ray_cluster)
        from_s3_here = train_bpe([prefix], 900, [SPECIAL], workers=2)
        assert on_ray.merges == local.merges == from_s3_here.merges
        for field in ("bytes_read", "documents", "pretokens", "distinct_pretokens"):
            values = {getattr(r.stats, field) for r in (local, on_ray, from_s3_here)}
            assert len(values) == 1, (field, values)

    def test_a_bad_object_fails_with_its_url(
        self, ray_cluster: str, s3_corpus: tuple[str, list[str]]
    ) -> None:
        """Not UTF-8, in a task: InvalidInput naming the object; an empty prefix: no objects."""
        with pytest.raises(InvalidInput, match=r"s3://corpora/bad/latin1.txt' is not valid UTF-8"):
            train_bpe("s3://corpora/bad/", 300, counter="ray", ray_address=ray_cluster)
        with pytest.raises(InvalidInput, match="no objects under 's3://corpora/none/'"):
            train_bpe("s3://corpora/none/", 300)

    def test_cancel_stops_the_tasks(self, ray_cluster: str, tmp_path: Path) -> None:
        """should_stop is polled while the tasks run: Cancelled, and the run ends at once."""
        files = corpus_files(tmp_path) * 4
        polls: list[float] = []

        def should_stop() -> bool:
            polls.append(time.monotonic())
            return len(polls) > 1

        start = time.monotonic()
        with pytest.raises(Cancelled, match="count"):
            train_bpe(files, 1000, [SPECIAL], counter="ray", ray_address=ray_cluster,
                      should_stop=should_stop)  # fmt: skip
        assert time.monotonic() - start < 30
        assert len(polls) == 2

    def test_a_bad_file_fails_with_its_name(self, ray_cluster: str, tmp_path: Path) -> None:
        """A task's error comes back as the tokend error it was, naming the file."""
        bad = tmp_path / "latin1.txt"
        bad.write_bytes("caf\xe9 au lait".encode("latin-1"))
        with pytest.raises(InvalidInput, match=r"latin1\.txt' is not valid UTF-8 at byte 3"):
            train_bpe([str(bad)], 300, counter="ray", ray_address=ray_cluster)


class TestRayArguments:
    def test_a_stream_is_refused(self) -> None:
        """Text chunks cannot be shipped to a cluster: a clear error, before any connection."""
        with pytest.raises(InvalidInput, match="takes files"):
            train_bpe(iter(["some text"]), 300, counter="ray", ray_address="127.0.0.1:1")

    def test_a_missing_file_is_refused(self, tmp_path: Path) -> None:
        with pytest.raises(InvalidInput, match="does not exist"):
            train_bpe([str(tmp_path / "nope.txt")], 300, counter="ray")

    def test_an_unknown_counter_is_refused(self, tmp_path: Path) -> None:
        with pytest.raises(InvalidInput, match="counter must be one of local, ray"):
            train_bpe(iter(["x"]), 300, counter="spark")

    def test_no_cluster_there(self, tmp_path: Path) -> None:
        """An address where no Ray cluster listens is Unavailable, naming the address."""
        f = tmp_path / "a.txt"
        f.write_text("hello world", encoding="utf-8")
        address = f"127.0.0.1:{free_port()}"
        with pytest.raises(Unavailable, match=address):
            train_bpe([str(f)], 300, counter="ray", ray_address=address)
        with pytest.raises(InvalidInput, match="is not HOST:PORT"):
            train_bpe([str(f)], 300, counter="ray", ray_address="head-without-port")

    def test_shards_group_files_in_order(self) -> None:
        files = [ray_count.InputFile(n, s) for n, s in (("a", 3), ("b", 3), ("c", 9), ("d", 1))]
        assert ray_count.plan_shards(files, 6) == [["a", "b"], ["c"], ["d"]]
        assert ray_count.plan_shards(files, 1) == [["a"], ["b"], ["c"], ["d"]]
        assert issubclass(InvalidInput, TokendError)


def train_pattern() -> str:
    from tokend.core.patterns import DEFAULT_TRAIN_PATTERN, resolve_pattern

    return resolve_pattern(DEFAULT_TRAIN_PATTERN)


@pytest.mark.parametrize("name", ["ray_count", "objects"])
def test_docstring_examples(name: str) -> None:
    """The worked examples in the docstrings run and give what they say."""
    import doctest
    import importlib

    module = importlib.import_module(f"tokend.core.training.{name}")
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
