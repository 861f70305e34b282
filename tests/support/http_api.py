"""A small client for tokend's HTTP JSON API (stdlib only), and a free loopback port."""

from __future__ import annotations

import json
import socket
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from tokend_process import ServedProcess


def free_port() -> int:
    """A loopback port nobody listens on right now (the server binds it a moment later)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class HttpServed:
    """A real ``tokend serve --http-port`` (two workers sharing both ports): ``base`` is its
    HTTP root (``http://127.0.0.1:PORT``), ``process`` the served process."""

    base: str
    process: ServedProcess


@dataclass
class Answer:
    status: int
    body: Any  # the parsed JSON (or the text, when it is not JSON)
    headers: dict[str, str]


def call(base: str, method: str, path: str, body: object = None, *,
         context: ssl.SSLContext | None = None, headers: dict[str, str] | None = None,
         timeout: float = 30.0) -> Answer:
    """``method path`` with ``body`` (raw bytes as they are, anything else as JSON)."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method,
                                     headers={"content-type": "application/json",
                                              **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            status, raw, got = response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as err:
        status, raw, got = err.code, err.read(), dict(err.headers)
    text = raw.decode("utf-8", errors="replace")
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = text
    return Answer(status, parsed, {k.lower(): v for k, v in got.items()})


def byte_fallback_tokenizer(corpus: str) -> Any:
    """A small HF BPE tokenizer as Llama's are built: ``<0xNN>`` byte-fallback tokens in the
    vocabulary (ordinary, not special), a ``<s> $A </s>`` post-processor; trained on
    ``corpus``. Returns the ``tokenizers.Tokenizer``."""
    import json

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=["<unk>", "<s>", "</s>"])
    tok.train_from_iterator([corpus], trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", 1), ("</s>", 2)])
    tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Metaspace()])
    raw = json.loads(tok.to_str())
    vocab = raw["model"]["vocab"]
    first = len(vocab)
    for byte in range(256):
        vocab.setdefault(f"<0x{byte:02X}>", first + byte)
    return Tokenizer.from_str(json.dumps(raw))
