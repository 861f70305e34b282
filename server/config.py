"""Server configuration: one frozen dataclass, built once from flags and environment.

Nothing below this module reads ``os.environ``; every component gets the ``ServerConfig`` (or the
one field it needs) passed down. Each setting has a flag, an environment variable and a default;
a flag beats the environment, which beats the default.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path

import platformdirs

from tokend.core.engine.cache import DEFAULT_CACHE_ENTRIES
from tokend.core.registry.store import check_location, url_scheme
from tokend.server.executor import LONG_CALL_SECONDS

MiB = 1 << 20


def default_registry_dir() -> Path:
    """Where the registry lives when neither --registry nor TOKEND_REGISTRY says."""
    return Path(platformdirs.user_data_dir("tokend")) / "registry"


def default_jobs_dir() -> Path:
    """Training job state when the registry is not a local folder (see ``jobs_path``)."""
    return Path(platformdirs.user_data_dir("tokend")) / "jobs"


def registry_location(text: str) -> Path | str:
    """A ``--registry`` value: a folder path, or a URL kept as text (``s3://bucket/prefix``).

    subtle: ``Path("s3://b/p")`` would collapse to ``s3:/b/p``, a folder in the working
    directory; URLs stay strings and unsupported schemes are refused by ``__post_init__``.
    """
    return text if url_scheme(text) is not None else Path(text)


def is_loopback(host: str) -> bool:
    """Whether ``host`` only listens to this machine (``127.0.0.1``, ``::1``, ``localhost``).

    >>> is_loopback("127.0.0.1"), is_loopback("0.0.0.0"), is_loopback("localhost")
    (True, False, True)
    """
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: whatever it resolves to, it is not known to be loopback


def env_flag(text: str) -> bool:
    """A boolean setting from the environment: 1/true/yes/on or 0/false/no/off."""
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(text)


def available_cpus() -> int:
    """CPUs this process may run on (a container's CPU set, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # pragma: no cover - platforms without sched_getaffinity
        return os.cpu_count() or 1


@dataclass(frozen=True)
class ServerConfig:
    """Everything `tokend serve` can be told; defaults are safe for a loopback service."""

    host: str = "127.0.0.1"
    port: int = 50051
    registry: Path | str = field(default_factory=default_registry_dir)  # folder or s3:// URL
    jobs_dir: Path | None = None  # None: <registry>/.jobs, or the user data dir for s3://
    metrics_port: int = 9464  # 0 disables the /metrics endpoint
    # The HTTP JSON API and the inspector page (server/web/): off unless a port is given, so
    # an upgrade never opens a new listener; loopback unless told otherwise, whatever --host.
    http_port: int = 0
    http_host: str = "127.0.0.1"
    http_head_seconds: float = 10.0  # a request head must arrive within this (else closed)
    http_max_connections: int = 512  # per worker; more are closed at once (descriptors)
    http_body_seconds: float = 30.0  # a request body must arrive within this
    http_allowed_hosts: str = ""  # comma-separated Host names; empty: the bind address rule
    workers: int = field(default_factory=available_cpus)
    threads: int = 16  # gRPC handler threads per worker process
    busy_calls: int = 2  # calls a worker runs at once (not counting long ones; executor.py)
    max_message_bytes: int = 16 * MiB
    max_batch: int = 1024  # texts per Encode/CountTokens, sequences per Decode, chat messages
    max_text_bytes: int = 8 * MiB  # one text of Encode/CountTokens (UTF-8 bytes)
    max_ids: int = 4 * MiB  # ids in one Decode request or one Encode response
    # Tokens with details (piece, offsets) in one Encode response: each costs ~100 bytes of
    # protobuf and ~150 of JSON, so the answer is bounded before it is built (HTTP /tokenize
    # asks for details by default).
    max_detail_tokens: int = 1 << 18
    max_stream_bytes: int = 1 << 30  # total text of one EncodeStream
    max_corpus_bytes: int = 256 * MiB  # one Train corpus (streamed or a --train-dir file)
    max_report_tokenizers: int = 8  # tokenizers compared by one Report call
    # Lint / Diff (server/app/linting.py): the largest vocabulary linted or diffed (each side;
    # one encode per token), the most findings one Lint lists, and the calls running at once
    # per worker (each holds a handler thread for up to seconds of CPU: docs/lint.md).
    max_lint_vocab: int = 1 << 18
    max_lint_findings: int = 10_000
    max_lint_calls: int = 1
    # A client stream (EncodeStream, a Train upload) silent this long is ended, and at most
    # max_streams are open per worker (0: half of --threads), so idle clients can never hold
    # every handler thread.
    stream_idle_seconds: float = 30.0
    max_streams: int = 0
    # Cache budget per loaded encoding (built-ins included), in the Python engine's unit of
    # one chunk: the compiled engine holds cache_entries / 8 blocks in 64 bytes per unit
    # (16 MiB at the default) and cache_entries / 4 pretokens in a fixed table of 32-byte
    # entries (2 MiB); see tokend.core.engine.
    cache_entries: int = DEFAULT_CACHE_ENTRIES
    admin_token: str | None = None
    # Train/CancelTrainJob without --admin-token on a non-loopback --host: refused unless set.
    allow_open_training: bool = False
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_client_ca: Path | None = None
    train_dir: Path | None = None  # the only folder server-side corpora are read from
    max_train_jobs: int = 4  # queued + running
    max_vocab_size: int = 1 << 20  # largest vocab_size a Train request may ask for
    train_concurrency: int = 1  # training processes running at once
    train_workers: int = 1  # counting processes per training job
    grace_seconds: float = 10.0  # SIGTERM: how long in-flight RPCs get to finish
    # SIGTERM: how long new calls get UNAVAILABLE (retryable) before the listener closes, so
    # clients and load balancers see NOT_SERVING and go elsewhere.
    drain_delay_seconds: float = 0.5
    reload_seconds: float = 0.5  # how often workers poll the registry for new versions
    log_level: str = "INFO"

    def __post_init__(self) -> None:
        check_location(self.registry)  # InvalidInput (a ValueError) naming an unknown scheme
        for name in ("port", "metrics_port", "http_port"):
            value = getattr(self, name)
            if not 0 <= value <= 65535:
                raise ValueError(f"--{name.replace('_', '-')} {value} is not a TCP port (0-65535)")
        for name in (
            "workers",
            "threads",
            "busy_calls",
            "max_message_bytes",
            "max_batch",
            "max_text_bytes",
            "max_ids",
            "max_detail_tokens",
            "max_stream_bytes",
            "max_corpus_bytes",
            "max_report_tokenizers",
            "max_lint_vocab",
            "max_lint_findings",
            "max_lint_calls",
            "http_max_connections",
            "cache_entries",
            "max_train_jobs",
            "max_vocab_size",
            "train_concurrency",
            "train_workers",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1")
        if self.admin_token is not None and not self.admin_token.strip():
            raise ValueError(
                "--admin-token is empty: give a secret (clients send 'authorization: Bearer "
                "<token>'), or leave the flag out to serve Train only on a loopback --host"
            )
        if self.admin_token is None and not self.allow_open_training \
                and not is_loopback(self.host):
            raise ValueError(
                f"--host {self.host} is not a loopback address and no --admin-token is set, so "
                "anyone who reaches it could run Train and CancelTrainJob: set --admin-token "
                "(or TOKEND_ADMIN_TOKEN), or pass --allow-open-training to serve them open"
            )
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("--tls-cert and --tls-key go together: give both or neither")
        if self.tls_client_ca is not None and self.tls_cert is None:
            raise ValueError("--tls-client-ca (mTLS) needs --tls-cert and --tls-key")
        if min(self.stream_idle_seconds, self.http_head_seconds, self.http_body_seconds) <= 0 \
                or self.max_streams < 0:
            raise ValueError("--stream-idle-seconds, --http-head-seconds and "
                             "--http-body-seconds must be > 0, --max-streams >= 0")
        if self.max_streams >= self.threads:
            raise ValueError(
                f"--max-streams {self.max_streams} must be below --threads {self.threads}, or "
                "idle streams could hold every handler thread"
            )
        if self.grace_seconds < 0 or self.drain_delay_seconds < 0 or self.reload_seconds <= 0:
            raise ValueError(
                "--grace-seconds and --drain-delay-seconds must be >= 0, --reload-seconds > 0"
            )

    @property
    def jobs_path(self) -> Path:
        """Training job state, shared by every worker process (see jobs.py).

        Jobs are processes of this machine, so their state stays on local disk: beside a local
        registry, or under the user data dir (or ``--jobs-dir``) when the registry is in object
        storage; only the finished tokenizer goes to the shared registry.
        """
        if self.jobs_dir is not None:
            return self.jobs_dir
        if isinstance(self.registry, str):
            return default_jobs_dir()
        return self.registry / ".jobs"

    @property
    def hidden_paths(self) -> dict[str, Path | None]:
        """The folders a status message never shows, each named by its label instead
        (``server/errors.hide_paths``): the server's layout is none of a client's business."""
        registry = None if isinstance(self.registry, str) else self.registry
        return {"the registry": registry, "the jobs folder": self.jobs_path,
                "the train dir": self.train_dir}

    @property
    def stream_cap(self) -> int:
        """Client streams a worker keeps open at once (--max-streams, else half --threads)."""
        return self.max_streams or max(1, self.threads // 2)

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None


# (field, flag, env, type, help) for every setting; the parser and the env reader share it.
_SETTINGS: tuple[tuple[str, str, Callable[[str], object], str], ...] = (
    ("host", "TOKEND_HOST", str, "interface to bind (default 127.0.0.1)"),
    ("port", "TOKEND_PORT", int, "port to bind, shared by all workers (0: pick a free one)"),
    ("registry", "TOKEND_REGISTRY", registry_location,
     "registry folder or s3://bucket/prefix (default: user data dir)"),
    ("jobs_dir", "TOKEND_JOBS_DIR", Path,
     "training job state (default: <registry>/.jobs; user data dir for an s3:// registry)"),
    ("metrics_port", "TOKEND_METRICS_PORT", int, "Prometheus /metrics port (0 disables)"),
    ("http_port", "TOKEND_HTTP_PORT", int,
     "HTTP JSON API + inspector page port, shared by all workers (default 0: off)"),
    ("http_host", "TOKEND_HTTP_HOST", str, "interface of the HTTP port (default 127.0.0.1)"),
    ("http_head_seconds", "TOKEND_HTTP_HEAD_SECONDS", float,
     "close an HTTP connection whose request head has not arrived within this"),
    ("http_max_connections", "TOKEND_HTTP_MAX_CONNECTIONS", int,
     "HTTP connections per worker; more are closed at once"),
    ("http_body_seconds", "TOKEND_HTTP_BODY_SECONDS", float,
     "refuse an HTTP request whose body has not arrived within this"),
    ("http_allowed_hosts", "TOKEND_HTTP_ALLOWED_HOSTS", str,
     "comma-separated Host names the HTTP API answers (default: loopback names on a loopback "
     "--http-host, the address otherwise)"),
    ("workers", "TOKEND_WORKERS", int, "worker processes sharing the port (default: CPUs)"),
    ("threads", "TOKEND_THREADS", int, "gRPC handler threads per worker"),
    ("busy_calls", "TOKEND_BUSY_CALLS", int,
     "calls a worker runs at once; more wait in line, and a call running over "
     f"{LONG_CALL_SECONDS * 1000:.0f} ms stops counting, so streams and huge texts never hold "
     "the others up"),
    ("max_message_bytes", "TOKEND_MAX_MESSAGE_BYTES", int, "largest gRPC message received"),
    ("max_batch", "TOKEND_MAX_BATCH", int, "most texts / sequences / messages per request"),
    ("max_text_bytes", "TOKEND_MAX_TEXT_BYTES", int, "largest single text (UTF-8 bytes)"),
    ("max_ids", "TOKEND_MAX_IDS", int, "most ids in one Decode request or Encode response"),
    ("max_detail_tokens", "TOKEND_MAX_DETAIL_TOKENS", int,
     "most tokens with details (pieces, offsets) in one Encode response"),
    ("max_stream_bytes", "TOKEND_MAX_STREAM_BYTES", int, "most text in one EncodeStream"),
    ("max_corpus_bytes", "TOKEND_MAX_CORPUS_BYTES", int, "largest training corpus"),
    ("max_report_tokenizers", "TOKEND_MAX_REPORT_TOKENIZERS", int,
     "most tokenizers one Report call compares"),
    ("max_lint_vocab", "TOKEND_MAX_LINT_VOCAB", int,
     "largest vocabulary a Lint or Diff call takes (each tokenizer; one encode per token)"),
    ("max_lint_findings", "TOKEND_MAX_LINT_FINDINGS", int,
     "most findings one Lint call may ask to list (the counts cover all)"),
    ("max_lint_calls", "TOKEND_MAX_LINT_CALLS", int,
     "Lint / Diff calls running at once per worker; one more is refused at once"),
    ("cache_entries", "TOKEND_CACHE_ENTRIES", int, "cache budget per encoding (chunks)"),
    ("stream_idle_seconds", "TOKEND_STREAM_IDLE_SECONDS", float,
     "end an EncodeStream or Train upload whose client sent nothing for this long"),
    ("max_streams", "TOKEND_MAX_STREAMS", int,
     "EncodeStream calls open at once per worker (default: half of --threads)"),
    ("admin_token", "TOKEND_ADMIN_TOKEN", str, "bearer token required by Train/CancelTrainJob"),
    ("allow_open_training", "TOKEND_ALLOW_OPEN_TRAINING", env_flag,
     "serve Train/CancelTrainJob without --admin-token on a non-loopback --host (refused "
     "otherwise)"),
    ("tls_cert", "TOKEND_TLS_CERT", Path, "PEM server certificate (enables TLS)"),
    ("tls_key", "TOKEND_TLS_KEY", Path, "PEM server private key"),
    ("tls_client_ca", "TOKEND_TLS_CLIENT_CA", Path, "PEM CA for client certificates (mTLS)"),
    ("train_dir", "TOKEND_TRAIN_DIR", Path, "the only folder server-side corpora are read from"),
    ("max_train_jobs", "TOKEND_MAX_TRAIN_JOBS", int, "most queued + running training jobs"),
    ("max_vocab_size", "TOKEND_MAX_VOCAB_SIZE", int, "largest vocab size Train accepts"),
    ("train_concurrency", "TOKEND_TRAIN_CONCURRENCY", int, "training processes at once"),
    ("train_workers", "TOKEND_TRAIN_WORKERS", int, "counting processes per training job"),
    ("grace_seconds", "TOKEND_GRACE_SECONDS", float, "SIGTERM grace period for in-flight RPCs"),
    ("drain_delay_seconds", "TOKEND_DRAIN_DELAY_SECONDS", float,
     "SIGTERM: seconds of UNAVAILABLE for new calls before the listener closes"),
    ("reload_seconds", "TOKEND_RELOAD_SECONDS", float, "registry polling interval"),
    ("log_level", "TOKEND_LOG_LEVEL", str, "DEBUG, INFO, WARNING or ERROR"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one flag per setting (defaults are None so the environment can fill in)."""
    defaults = {f.name: f for f in fields(ServerConfig)}
    for name, env, kind, help_text in _SETTINGS:
        assert name in defaults, name  # programming error, not user input
        default = defaults[name].default
        if kind is env_flag:  # a switch: present or not
            parser.add_argument("--" + name.replace("_", "-"), dest=name, action="store_true",
                                default=None, help=f"{help_text} [env {env}]")
            continue
        shown = "" if default is MISSING or default is None or "default" in help_text \
            else f" (default {default})"
        parser.add_argument(
            "--" + name.replace("_", "-"),
            dest=name,
            type=kind,
            default=None,
            help=f"{help_text}{shown} [env {env}]",
        )


def config_from(args: argparse.Namespace, env: Mapping[str, str]) -> ServerConfig:
    """Build the config: flag, else environment variable, else the dataclass default."""
    values: dict[str, object] = {}
    for name, env_name, kind, _ in _SETTINGS:
        value = getattr(args, name, None)
        if value is None and env.get(env_name):
            raw = env[env_name]
            try:
                value = kind(raw)
            except ValueError:
                what = getattr(kind, "__name__", "value")
                raise ValueError(f"{env_name}={raw!r} is not a valid {what}") from None
        if value is not None:
            values[name] = value
    return ServerConfig(**values)  # type: ignore[arg-type]
