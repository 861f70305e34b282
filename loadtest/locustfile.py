"""Locust load test of a tokend server through ``tokend.client``. The traffic mix: short chat
counts (most calls), never-seen documents of 1-64 KB (Encode and CountTokens), Decode, and
ListTokenizers. ``--host`` is the gRPC target (HOST:PORT, no scheme). ``loadtest/judge.py``
runs it headless and judges the run against latency budgets.

    locust -f loadtest/locustfile.py --headless -u 20 -r 10 -t 30s --host 127.0.0.1:50051

Environment: TOKEND_LOADTEST_TOKENIZER (default o200k_base), TOKEND_LOADTEST_CORPUS (a UTF-8 text
file to slice texts from; default tests/fixtures/corpora/shakespeare.txt.gz, else built-in text).
"""

from __future__ import annotations

# subtle: grpc's C core must cooperate with gevent (Locust's users are greenlets), and this has
# to run before any channel exists; without it one blocking call stalls every user.
import grpc.experimental.gevent as grpc_gevent

grpc_gevent.init_gevent()

import gzip  # noqa: E402  (after the gevent patch, on purpose)
import os  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from locust import User, constant, task  # noqa: E402

from tokend.client import Client, RemoteError  # noqa: E402

TOKENIZER = os.environ.get("TOKEND_LOADTEST_TOKENIZER", "o200k_base")
DEFAULT_CORPUS = (
    Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "corpora" / "shakespeare.txt.gz"
)
FALLBACK_TEXT = (
    "Tokenization splits text into pieces a model can count: words, numbers like 1234567, "
    "punctuation!?, accents (café, naïve), and CJK 東京 or emoji 🙂 as multi-byte pieces.\n"
)
TEXTS_PER_SIZE = 64


def _corpus() -> bytes:
    path = Path(os.environ.get("TOKEND_LOADTEST_CORPUS", DEFAULT_CORPUS))
    if not path.exists():
        return FALLBACK_TEXT.encode("utf-8") * 2048
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def make_texts(size: int, count: int = TEXTS_PER_SIZE) -> list[str]:
    """``count`` distinct slices of about ``size`` UTF-8 bytes (cut at character boundaries)."""
    data = _corpus()
    span = max(1, len(data) - size)
    return [
        data[(i * size) % span : (i * size) % span + size].decode("utf-8", errors="ignore")
        for i in range(count)
    ]


class LocustClient:
    """``tokend.client.Client`` whose calls are reported to Locust's statistics."""

    def __init__(self, user: User, target: str) -> None:
        # subtle: an own subchannel pool gives each user its own connection. Otherwise every
        # user in the process shares one, which SO_REUSEPORT sends to a single worker process.
        self.client = Client(target, timeout=30, options=[("grpc.use_local_subchannel_pool", 1)])
        self._events = user.environment.events

    def call(self, name: str, func: Callable[[], Any], size: int = 0) -> None:
        """Run one call and fire Locust's ``request`` event (failures carry the exception)."""
        start = time.perf_counter()
        exception: BaseException | None = None
        try:
            func()
        except RemoteError as err:
            exception = err
        self._events.request.fire(
            request_type="grpc",
            name=name,
            response_time=(time.perf_counter() - start) * 1000,
            response_length=size,
            exception=exception,
            context={},
        )

    def close(self) -> None:
        self.client.close()


CORPUS = _corpus().decode("utf-8", errors="ignore")
SHORT_MESSAGES = [line.strip() for line in CORPUS[:200_000].splitlines() if line.strip()][:2000]


def new_document(rng: random.Random) -> str:
    """A document of 1-64 KB no server has seen: a random slice of the corpus behind a nonce
    (so neither a response cache nor a whole-text memo could answer it)."""
    size = rng.randint(1024, 64 * 1024)
    start = rng.randrange(max(1, len(CORPUS) - size))
    return f"{rng.getrandbits(64):016x} {CORPUS[start : start + size]}"


class TokendUser(User):
    """One simulated caller: a channel of its own, back-to-back calls (no think time)."""

    wait_time = constant(0)

    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        if not self.host:
            raise ValueError("give the gRPC target with --host HOST:PORT (e.g. 127.0.0.1:50051)")
        self.tokend = LocustClient(self, self.host)
        self.rng = random.Random()

    def on_stop(self) -> None:
        self.tokend.close()

    @task(12)
    def chat_count(self) -> None:
        """A short chat: a system line and a user line, counted with the chat rule."""
        messages = [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": self.rng.choice(SHORT_MESSAGES)},
        ]
        self.tokend.call("CountTokens chat",
                         lambda: self.tokend.client.count_tokens(TOKENIZER, messages=messages))

    @task(2)
    def document_encode(self) -> None:
        text = new_document(self.rng)
        self.tokend.call(
            "Encode document",
            lambda: self.tokend.client.encode(TOKENIZER, text, disallowed_special=()),
            len(text),
        )

    @task(2)
    def document_count(self) -> None:
        text = new_document(self.rng)
        self.tokend.call("CountTokens document",
                         lambda: self.tokend.client.count_tokens(TOKENIZER, text), len(text))

    @task(3)
    def decode(self) -> None:
        ids = [self.rng.randrange(100_000) for _ in range(self.rng.randint(16, 512))]
        self.tokend.call("Decode", lambda: self.tokend.client.decode(TOKENIZER, ids))

    @task(1)
    def list_tokenizers(self) -> None:
        self.tokend.call("ListTokenizers", self.tokend.client.list_tokenizers)
