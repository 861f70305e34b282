"""Every tokenizer kind trained by the Train RPC on a real ``tokend serve``, then served.

Each job streams the fixture corpus, publishes a version (the kind's tokenizer.json), and
every RPC serves it: Encode and EncodeStream ids equal HF ``tokenizers`` loading the stored
file, CountTokens counts them, Decode gives HF's text, Truncate keeps a prefix of those ids,
Chunk covers the text, GetTokenizer reports HF's vocabulary size. The kind is recorded in
the job and the manifest.
"""

from __future__ import annotations

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from tokenizers import Tokenizer

from tokend.core.registry import Registry
from tokend.core.training import train_tokenizer
from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

KINDS = ["char", "word-bpe", "wordpiece", "unigram"]
STATES = pb.TrainJobState
TEXTS = [
    "The quick brown fox jumps over the lazy dog. It's 3:45pm!",
    "Grüße aus München, naïve café; 日本語のテキスト 🎉 [MASK]",
    "  leading spaces\tand\nnewlines  ",
]


def train_requests(config: pb.TrainConfig, corpus: bytes):  # type: ignore[no-untyped-def]
    yield pb.TrainRequest(config=config)
    for i in range(0, len(corpus), 65536):
        yield pb.TrainRequest(corpus_chunk=corpus[i : i + 65536])


@pytest.mark.parametrize("kind", KINDS)
def test_kind_trains_publishes_and_serves(tokend_server, fixtures_dir, kind: str) -> None:
    admin = [("authorization", f"Bearer {tokend_server.admin_token}")]
    corpus = (fixtures_dir / "corpora" / "corpus.en").read_bytes()[:60_000]
    name = f"kind-{kind}"
    with grpc.insecure_channel(tokend_server.target) as channel:
        stub = pb_grpc.TokenizerServiceStub(channel)
        job = stub.Train(train_requests(pb.TrainConfig(
            name=name, vocab_size=500, special_tokens=["[MASK]"], model=kind), corpus),
            metadata=admin).job
        assert job.config.model == kind
        final = None
        for message in stub.WatchTrainJob(pb.WatchTrainJobRequest(job_id=job.job_id),
                                          timeout=120):
            final = message.job
        assert final is not None
        assert final.state == STATES.Value("TRAIN_JOB_STATE_SUCCEEDED"), final.error
        assert final.published == f"{name}@1" and final.config.model == kind
        policy = pb.SpecialTokenPolicy(allow_all=True)
        encoded = stub.Encode(pb.EncodeRequest(tokenizer=final.published, texts=TEXTS,
                                               special_tokens=policy))
        counted = stub.CountTokens(pb.CountTokensRequest(tokenizer=final.published,
                                                         texts=TEXTS, special_tokens=policy))
        decoded = [stub.Decode(pb.DecodeRequest(tokenizer=final.published,
                                                ids=r.ids)).text for r in encoded.results]
        long_text = " ".join(TEXTS[:1] * 8)
        streamed: list[int] = []
        for message in stub.EncodeStream(iter([pb.EncodeStreamRequest(
                tokenizer=final.published, text=long_text)])):
            streamed += message.ids
        cut = stub.Truncate(pb.TruncateRequest(tokenizer=final.published, text=long_text,
                                               max_tokens=10))
        chunks = [c for m in stub.Chunk(pb.ChunkRequest(
            tokenizer=final.published, text=long_text, max_tokens=16)) for c in m.chunks]
        manifest_rpc = stub.GetTokenizer(pb.GetTokenizerRequest(tokenizer=final.published))
    registry = Registry(tokend_server.registry)
    manifest = registry.manifest(final.published)
    assert manifest["training"]["model"] == kind
    assert manifest["training"]["job_id"] == job.job_id
    data = registry.load_data(final.published)
    assert data.fmt == "hf-json" and data.file is not None
    hf = Tokenizer.from_str(data.file.decode("utf-8"))
    long_ids = hf.encode(long_text, add_special_tokens=False).ids
    assert streamed == long_ids
    assert cut.truncated and cut.count <= 10 and list(cut.ids) == long_ids[: len(cut.ids)]
    assert "".join(c.text for c in chunks) == long_text
    assert all(c.count <= 16 for c in chunks)
    assert manifest_rpc.manifest.vocab_size == hf.get_vocab_size()
    for text, result, count, text_back in zip(TEXTS, encoded.results, counted.counts, decoded,
                                             strict=True):
        ids = hf.encode(text, add_special_tokens=False).ids
        assert list(result.ids) == ids, (kind, text)
        assert count == len(ids)
        assert text_back == hf.decode(ids, skip_special_tokens=False)


def test_unknown_model_names_the_field(tokend_server) -> None:
    """INVALID_ARGUMENT naming config.model, the value echoed as a bounded prefix."""
    admin = [("authorization", f"Bearer {tokend_server.admin_token}")]
    with grpc.insecure_channel(tokend_server.target) as channel:
        stub = pb_grpc.TokenizerServiceStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            stub.Train(train_requests(pb.TrainConfig(name="t", vocab_size=300,
                                                     model="bpe" * 5000), b"abc"),
                       metadata=admin)
    err = info.value
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "is not a tokenizer kind" in err.details() and len(err.details()) < 600
    assert "wordpiece" in err.details()
    status = rpc_status.from_call(err)
    assert status is not None
    fields = []
    for detail in status.details:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            fields += [v.field for v in bad.field_violations]
    assert fields == ["config.model"]


def test_wordpiece_count_score_equals_train_tokenizer(tokend_server, fixtures_dir,
                                                      tmp_path) -> None:
    """wordpiece_score="count" reaches the trainer: the published vocabulary equals
    train_tokenizer's with the same arguments (and differs from the default gain's), and the
    job echoes the score in GetTrainJob and ListTrainJobs."""
    admin = [("authorization", f"Bearer {tokend_server.admin_token}")]
    corpus = (fixtures_dir / "corpora" / "corpus.en").read_bytes()[:60_000]
    with grpc.insecure_channel(tokend_server.target) as channel:
        stub = pb_grpc.TokenizerServiceStub(channel)
        job = stub.Train(train_requests(pb.TrainConfig(
            name="wp-count", vocab_size=500, model="wordpiece", wordpiece_score="count"),
            corpus), metadata=admin).job
        final = None
        for message in stub.WatchTrainJob(pb.WatchTrainJobRequest(job_id=job.job_id),
                                          timeout=120):
            final = message.job
        got = stub.GetTrainJob(pb.GetTrainJobRequest(job_id=job.job_id)).job
        listed = [j for j in stub.ListTrainJobs(pb.ListTrainJobsRequest()).jobs
                  if j.job_id == job.job_id]
    assert final is not None
    assert final.state == STATES.Value("TRAIN_JOB_STATE_SUCCEEDED"), final.error
    assert job.config.wordpiece_score == "count" == got.config.wordpiece_score
    assert [j.config.wordpiece_score for j in listed] == ["count"]
    registry = Registry(tokend_server.registry)
    assert registry.manifest(final.published)["training"]["wordpiece_score"] == "count"
    data = registry.load_data(final.published)
    assert data.file is not None
    served = Tokenizer.from_str(data.file.decode("utf-8")).get_vocab()
    path = tmp_path / "corpus.txt"
    path.write_bytes(corpus)
    by_score = {score: train_tokenizer([str(path)], 500, model="wordpiece",
                                       wordpiece_score=score).vocab
                for score in ("count", "gain")}
    assert served == {text: i for i, text in by_score["count"].items()}
    assert served != {text: i for i, text in by_score["gain"].items()}
