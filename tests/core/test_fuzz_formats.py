"""Fuzzing every file-format reader: any bytes give a tokenizer or a documented error.

The readers behind ``tokend registry import`` (``read_tokenizer_files``: tiktoken rank files,
GPT-2 vocab.json + merges.txt, HF tokenizer.json) get valid files with bytes flipped, cut or
inserted, and structured nonsense (JSON of the wrong shapes, lines of the wrong form). The only
errors allowed are the documented ones: CorruptData (a file that cannot be parsed, naming it)
and InvalidInput (a file that parses but does not describe a usable tokenizer).
"""

from __future__ import annotations

import base64
import gzip
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokend.core.errors import CorruptData, InvalidInput
from tokend.core.formats.hf_bpe import format_hf_tokenizer_json
from tokend.core.formats.interop import FileParts, read_tokenizer_files
from tokend.core.training.byte_bpe import train_bpe

DOCUMENTED = (CorruptData, InvalidInput)
FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_TRAINED = train_bpe(iter(["hello world, the quick brown fox " * 30]), 280, ["<|endoftext|>"])
RANKS = _TRAINED.mergeable_ranks()
TIKTOKEN = b"".join(base64.b64encode(t) + b" %d\n" % r for t, r in sorted(
    RANKS.items(), key=lambda item: item[1]))
HF_JSON = format_hf_tokenizer_json(ranks=RANKS, pat_str=_TRAINED.pattern,
                                   special_tokens=_TRAINED.special_tokens)
_HF = json.loads(HF_JSON)
GPT2_VOCAB = json.dumps(_HF["model"]["vocab"]).encode()
GPT2_MERGES = ("#version: 0.2\n" + "\n".join(
    m if isinstance(m, str) else " ".join(m) for m in _HF["model"]["merges"]) + "\n").encode()

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 2**40) | st.floats(allow_nan=False)
    | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12,
)


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "cut", "insert", "truncate"]))
        at = draw(st.integers(0, len(buf)))
        if op == "flip" and at < len(buf):
            buf[at] ^= draw(st.integers(1, 255))
        elif op == "cut":
            del buf[at:at + draw(st.integers(1, 16))]
        elif op == "insert":
            buf[at:at] = draw(st.binary(min_size=1, max_size=16))
        else:
            del buf[at:]
    return bytes(buf)


def read(files: dict[str, bytes], fmt: str, pattern: str | None = "gpt2") -> None:
    """Write ``files`` to a temp dir and import them; only documented errors may escape."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, data in files.items():
            path = Path(tmp) / name
            path.write_bytes(data)
            paths.append(path)
        try:
            parts = read_tokenizer_files(paths, fmt=fmt, pattern=pattern)
        except DOCUMENTED:
            return
        if isinstance(parts, FileParts):  # a tokenizer.json kept whole: it loaded
            assert parts.data
            return
        assert isinstance(parts.ranks, dict)


class TestTiktokenFiles:
    def test_the_valid_file_reads(self) -> None:
        """The base file of the mutations is itself accepted (so mutations test something)."""
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "t.tiktoken"
            path.write_bytes(TIKTOKEN)
            assert read_tokenizer_files([path], fmt="tiktoken", pattern="gpt2").ranks == RANKS

    @FUZZ
    @given(data=st.data(), gz=st.booleans())
    def test_mutated(self, data: st.DataObject, gz: bool) -> None:
        raw = data.draw(mutated(gzip.compress(TIKTOKEN) if gz else TIKTOKEN))
        read({"t.tiktoken.gz" if gz else "t.tiktoken": raw}, "tiktoken")

    @FUZZ
    @given(lines=st.lists(st.tuples(st.binary(max_size=6), st.integers(-3, 2**70)), max_size=20),
           junk=st.sampled_from(["", " x", "  ", "\t1"]))
    def test_structured_nonsense(self, lines: list[tuple[bytes, int]], junk: str) -> None:
        text = b"".join(base64.b64encode(t) + b" " + str(r).encode() + junk.encode() + b"\n"
                        for t, r in lines)
        read({"t.tiktoken": text}, "tiktoken")


class TestGpt2Files:
    def test_the_valid_files_read(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "vocab.json").write_bytes(GPT2_VOCAB)
            (Path(tmp) / "merges.txt").write_bytes(GPT2_MERGES)
            parts = read_tokenizer_files([Path(tmp) / "vocab.json", Path(tmp) / "merges.txt"],
                                         fmt="gpt2")
            assert parts.ranks == RANKS

    @FUZZ
    @given(data=st.data(), which=st.sampled_from(["vocab", "merges", "both"]))
    def test_mutated(self, data: st.DataObject, which: str) -> None:
        vocab = data.draw(mutated(GPT2_VOCAB)) if which != "merges" else GPT2_VOCAB
        merges = data.draw(mutated(GPT2_MERGES)) if which != "vocab" else GPT2_MERGES
        read({"vocab.json": vocab, "merges.txt": merges}, "gpt2")

    @FUZZ
    @given(vocab=json_values, merges=st.lists(st.text(max_size=12), max_size=10))
    def test_structured_nonsense(self, vocab: object, merges: list[str]) -> None:
        read({"vocab.json": json.dumps(vocab).encode(),
              "merges.txt": "\n".join(merges).encode("utf-8", "surrogatepass")}, "gpt2")


class TestHfTokenizerJson:
    def test_the_valid_file_reads(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "tokenizer.json").write_bytes(HF_JSON)
            parts = read_tokenizer_files([Path(tmp) / "tokenizer.json"], fmt="hf-json")
            assert parts.ranks == RANKS

    @FUZZ
    @given(data=st.data())
    def test_mutated(self, data: st.DataObject) -> None:
        read({"tokenizer.json": data.draw(mutated(HF_JSON))}, "hf-json", pattern=None)

    @FUZZ
    @given(path=st.sampled_from(["model", "model.vocab", "model.merges", "added_tokens",
                                 "pre_tokenizer", "model.type", "decoder", "model.ignore_merges"]),
           value=json_values)
    def test_a_field_replaced(self, path: str, value: object) -> None:
        """One field of a valid tokenizer.json replaced by any JSON value."""
        doc = json.loads(HF_JSON)
        *parents, last = path.split(".")
        target = doc
        for key in parents:
            target = target[key]
        target[last] = value
        read({"tokenizer.json": json.dumps(doc).encode()}, "hf-json", pattern=None)
