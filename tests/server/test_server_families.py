"""Every tokenizer family through the running server: real files published into its registry,
then Encode (with details), Decode, CountTokens and EncodeStream against each reference."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from family_texts import SAMPLES, real_file

from tokend.core.registry import Registry
from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

TEXT = "\n".join(v for v in SAMPLES.values() if v.strip())


def hf_reference(file: str) -> tuple[Callable[[str], list[int]], Callable[[list[int]], str], Any]:
    from tokenizers import Tokenizer

    ref = Tokenizer.from_str(real_file(file).read_text(encoding="utf-8"))
    ref.no_truncation()
    ref.no_padding()
    return (lambda t: ref.encode(t, add_special_tokens=False).ids,
            lambda ids: ref.decode(ids, skip_special_tokens=False), ref)


def sp_reference(file: str) -> tuple[Callable[[str], list[int]], Callable[[list[int]], str], Any]:
    import sentencepiece

    ref = sentencepiece.SentencePieceProcessor(model_file=str(real_file(file)))
    return ref.encode, ref.decode, ref


def tekken_reference(file: str) -> tuple[Callable[[str], list[int]],
                                         Callable[[list[int]], str], Any]:
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    ref = Tekkenizer.from_file(real_file(file))
    return lambda t: ref.encode(t, bos=False, eos=False), ref.decode, ref


def reference_byte_spans(family: tuple[str, str, Any], text: str) -> list[tuple[int, int]]:
    """The reference's per-token offsets into ``text`` as UTF-8 byte spans."""
    file, fmt, reference = family
    ref = reference(file)[2]
    if fmt == "sentencepiece":
        return [(p.begin, p.end) for p in ref.encode(text, return_type="proto").pieces]
    starts = [len(text[:i].encode("utf-8")) for i in range(len(text) + 1)]
    return [(starts[s], starts[e]) for s, e in ref.encode(text, add_special_tokens=False).offsets]


# registry name -> (file, format, reference)
FAMILIES: dict[str, tuple[str, str, Callable[[str], Any]]] = {
    "mistral-7b": ("mistral-v1.model", "sentencepiece", sp_reference),
    "mistral-tekken": ("tekken-240911.json", "tekken", tekken_reference),
    "deepseek": ("deepseek.json", "hf-json", hf_reference),
    "minilm": ("minilm-bert.json", "hf-json", hf_reference),
    "mon-unigram": ("mon-unigram.json", "hf-json", hf_reference),
}


@functools.cache
def published(registry: Path, name: str) -> str:
    """Publish the family's file once per server; aliased as ``name@stable``."""
    file, fmt, _ = FAMILIES[name]
    reg = Registry(registry)
    info = reg.publish_file(name, fmt=fmt, data=real_file(file).read_bytes())
    reg.set_alias(name, "stable", info.version)
    return f"{name}@stable"


@pytest.fixture(scope="module")
def stub(tokend_server: Any) -> Any:
    with grpc.insecure_channel(tokend_server.target) as channel:
        yield pb_grpc.TokenizerServiceStub(channel)


@pytest.mark.parametrize("name", sorted(FAMILIES))
class TestFamiliesServed:
    def test_every_rpc_matches_the_reference(self, name: str, stub: Any,
                                             tokend_server: Any) -> None:
        """Encode, Decode, CountTokens and EncodeStream give the reference's ids and text."""
        ref = published(tokend_server.registry, name)
        encode, decode, _ = FAMILIES[name][2](FAMILIES[name][0])
        want = encode(TEXT)
        policy = pb.SpecialTokenPolicy(disallowed_mode=pb.DISALLOWED_SPECIAL_NONE)
        got = stub.Encode(pb.EncodeRequest(tokenizer=ref, texts=[TEXT], special_tokens=policy,
                                           include_details=True), timeout=60)
        assert got.tokenizer == f"{name}@1"
        result = got.results[0]
        assert list(result.ids) == want
        assert [d.id for d in result.details] == want
        spans = [(d.start, d.end) for d in result.details]
        if FAMILIES[name][1] == "tekken":  # tiktoken-style: each piece where the last ended
            assert [s for s, _ in spans] == [0, *[e for _, e in spans[:-1]]]
            assert all(d.end - d.start == len(d.piece) for d in result.details)
        else:  # normalized text: the reference's offsets into the request, as UTF-8 bytes
            assert spans == reference_byte_spans(FAMILIES[name], TEXT)
        decoded = stub.Decode(pb.DecodeRequest(tokenizer=ref, ids=want), timeout=60)
        assert decoded.text == decode(want)
        counted = stub.CountTokens(pb.CountTokensRequest(tokenizer=ref, texts=[TEXT, "x y"]),
                                   timeout=60)
        assert list(counted.counts) == [len(want), len(encode("x y"))]
        chunks = [TEXT[i : i + 50] for i in range(0, len(TEXT), 50)]
        requests = [pb.EncodeStreamRequest(tokenizer=ref, text=chunks[0], special_tokens=policy)]
        requests += [pb.EncodeStreamRequest(text=c) for c in chunks[1:]]
        streamed = [i for m in stub.EncodeStream(iter(requests), timeout=60) for i in m.ids]
        assert streamed == want


def test_add_special_tokens_frames_like_the_post_processor(stub: Any,
                                                          tokend_server: Any) -> None:
    """add_special_tokens on Encode / CountTokens: BERT's [CLS] ... [SEP], as HF adds them."""
    ref = published(tokend_server.registry, "minilm")
    _, _, hf = hf_reference("minilm-bert.json")
    text = SAMPLES["english"]
    want = hf.encode(text).ids
    assert want[0] == 101 and want[-1] == 102
    got = stub.Encode(pb.EncodeRequest(tokenizer=ref, texts=[text], add_special_tokens=True))
    assert list(got.results[0].ids) == want
    plain = stub.Encode(pb.EncodeRequest(tokenizer=ref, texts=[text]))
    assert list(plain.results[0].ids) == want[1:-1]
    counted = stub.CountTokens(pb.CountTokensRequest(tokenizer=ref, texts=[text],
                                                     add_special_tokens=True))
    assert list(counted.counts) == [len(want)]
    # [CLS] and [SEP] are framing; the text's own ids are the texts part.
    assert (counted.breakdown.framing, counted.breakdown.texts) == (2, len(want) - 2)


def test_node_client_passes_add_special_tokens(tokend_server: Any) -> None:
    """The Node client's encode / countTokens take addSpecialTokens (cli.js: add_special_tokens)."""
    from node_client import run_node

    ref = published(tokend_server.registry, "minilm")
    _, _, hf = hf_reference("minilm-bert.json")
    texts = [SAMPLES["german"], SAMPLES["english"]]
    want = [hf.encode(t).ids for t in texts]
    status, out, err = run_node(tokend_server.target, {"tokenizer": ref, "texts": texts,
                                                       "add_special_tokens": True})
    assert status == 0, err
    assert out["ids"] == want
    assert out["counts"] == [len(ids) for ids in want]
    status, plain, err = run_node(tokend_server.target, {"tokenizer": ref, "texts": texts})
    assert status == 0, err
    assert plain["ids"] == [ids[1:-1] for ids in want]
    assert plain["counts"] == [len(ids) - 2 for ids in want]


def test_python_clients_pass_add_special_tokens(tokend_server: Any) -> None:
    """Client.encode / count_tokens and AsyncClient.encode take add_special_tokens."""
    import asyncio

    from tokend.client import AsyncClient, Client

    ref = published(tokend_server.registry, "minilm")
    _, _, hf = hf_reference("minilm-bert.json")
    text = SAMPLES["german"]
    want = hf.encode(text).ids
    with Client(tokend_server.target, timeout=30) as client:
        assert list(client.encode(ref, text, add_special_tokens=True).ids) == want
        assert client.count_tokens(ref, text, add_special_tokens=True).total == len(want)
        assert client.count_tokens(ref, text).total == len(want) - 2

    async def run() -> list[int]:
        async with AsyncClient(tokend_server.target, timeout=30) as client:
            return list((await client.encode(ref, text, add_special_tokens=True)).ids)

    assert asyncio.run(run()) == want
