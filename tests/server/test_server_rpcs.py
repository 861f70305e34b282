"""The tokenization RPCs against an in-process server: exact ids, every error path, limits."""

from __future__ import annotations

import gzip
import itertools
import json
import queue
import random
import string
import threading
import time
from collections.abc import Callable, Iterator

import grpc
import pytest
import tiktoken
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.registry import Registry
from tokend.core.training.byte_bpe import train_bpe
from tokend.server import metrics
from tokend.v1 import tokenizer_pb2 as pb
from tokend.v1 import tokenizer_pb2_grpc as pb_grpc

TEXTS = [
    "hello world",
    "  leading spaces and trailing   ",
    "Don't you'll we've 1234567 numbers\n\n\ttabs",
    "héllo wörld — ünïcödé 日本語 🎉🎉 emoji",
    "",
    "a" * 3000,
]


def rpc_error(call: Callable[[], object]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value


def violations(err: grpc.RpcError) -> list[str]:
    """The BadRequest field names in the status details."""
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    fields = []
    for detail in status.details if status else []:
        bad = error_details_pb2.BadRequest()
        if detail.Unpack(bad):
            fields += [v.field for v in bad.field_violations]
    return fields


def metric_value(name: str, **labels: str) -> float:
    from prometheus_client import REGISTRY

    value = REGISTRY.get_sample_value(name, labels)
    return value or 0.0


class TestEncode:
    @pytest.mark.parametrize("name", ["r50k_base", "cl100k_base", "o200k_base"])
    def test_ids_equal_tiktoken(self, inproc, tiktoken_ref, name: str) -> None:
        """Every text of a batch gets tiktoken's ids, in order; the response names the encoding."""
        response = inproc.stub.Encode(pb.EncodeRequest(tokenizer=name, texts=TEXTS))
        assert response.tokenizer == name
        assert [list(r.ids) for r in response.results] == [
            tiktoken_ref(name).encode(t) for t in TEXTS
        ]

    def test_fixture_corpora_equal_tiktoken(self, inproc, tiktoken_ref, fixtures_dir) -> None:
        """Real text (German, addresses, stories) gives tiktoken's ids."""
        corpora = fixtures_dir / "corpora"
        texts = [(corpora / f).read_text()[:20000] for f in ("german.txt", "address.txt")]
        texts.append(gzip.decompress((corpora / "shakespeare.txt.gz").read_bytes())[:30000]
                     .decode("utf-8", "ignore"))
        response = inproc.stub.Encode(pb.EncodeRequest(tokenizer="o200k_base", texts=texts))
        assert [list(r.ids) for r in response.results] == [
            tiktoken_ref("o200k_base").encode(t) for t in texts
        ]

    def test_model_name_resolves_like_tiktoken(self, inproc) -> None:
        """A model name is served by the encoding tiktoken maps it to."""
        for model in ("gpt-4o", "gpt-4", "text-davinci-003"):
            response = inproc.stub.Encode(pb.EncodeRequest(tokenizer=model, texts=["x"]))
            assert response.tokenizer == tiktoken.encoding_name_for_model(model)

    def test_details_give_pieces_and_byte_offsets(self, inproc, tiktoken_ref) -> None:
        """Pieces concatenate to the UTF-8 text; offsets are cumulative; specials flagged."""
        text = "héllo 🎉 <|endoftext|> wörld"
        response = inproc.stub.Encode(pb.EncodeRequest(
            tokenizer="cl100k_base", texts=[text], include_details=True,
            special_tokens=pb.SpecialTokenPolicy(allow_all=True)))
        result = response.results[0]
        ref = tiktoken_ref("cl100k_base")
        assert list(result.ids) == ref.encode(text, allowed_special="all")
        assert [d.id for d in result.details] == list(result.ids)
        assert [d.piece for d in result.details] == ref.decode_tokens_bytes(list(result.ids))
        assert b"".join(d.piece for d in result.details) == text.encode()
        position = 0
        for d in result.details:
            assert (d.start, d.end) == (position, position + len(d.piece))
            position = d.end
            assert d.special == (d.id == ref.eot_token)

    @pytest.mark.parametrize(
        ("policy", "kwargs"),
        [
            (pb.SpecialTokenPolicy(allowed=["<|endoftext|>"]),
             {"allowed_special": {"<|endoftext|>"}}),
            (pb.SpecialTokenPolicy(allow_all=True), {"allowed_special": "all"}),
            (pb.SpecialTokenPolicy(disallowed_mode=pb.DISALLOWED_SPECIAL_NONE),
             {"disallowed_special": ()}),
            (pb.SpecialTokenPolicy(disallowed_mode=pb.DISALLOWED_SPECIAL_LISTED,
                                   disallowed=["<|fim_prefix|>"]),
             {"disallowed_special": {"<|fim_prefix|>"}}),
        ],
    )
    def test_special_policies_match_tiktoken(self, inproc, tiktoken_ref, policy, kwargs) -> None:
        """allowed / allow_all / NONE / LISTED give tiktoken's ids, or refuse when it does."""
        for text in ("a <|endoftext|> b <|fim_middle|> c", "a <|endoftext|> b", "<|fim_prefix|>"):
            request = pb.EncodeRequest(tokenizer="cl100k_base", texts=[text],
                                       special_tokens=policy)
            try:
                expected = tiktoken_ref("cl100k_base").encode(text, **kwargs)
            except ValueError:
                err = rpc_error(lambda request=request: inproc.stub.Encode(request))
                assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
                continue
            assert list(inproc.stub.Encode(request).results[0].ids) == expected

    def test_disallowed_special_is_invalid_argument_naming_it(self, inproc) -> None:
        """By default special-token text is refused, naming the token and the text index."""
        err = rpc_error(lambda: inproc.stub.Encode(pb.EncodeRequest(
            tokenizer="cl100k_base", texts=["fine", "bad <|endoftext|>"])))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "<|endoftext|>" in err.details()
        assert violations(err) == ["texts[1]"]

    def test_unknown_special_name_is_refused(self, inproc) -> None:
        """A typo in the allowed list is an error listing the real special tokens."""
        err = rpc_error(lambda: inproc.stub.Encode(pb.EncodeRequest(
            tokenizer="r50k_base", texts=["x"],
            special_tokens=pb.SpecialTokenPolicy(allowed=["<|endoftxt|>"]))))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "<|endoftxt|>" in err.details() and "<|endoftext|>" in err.details()

    @pytest.mark.parametrize(
        ("ref", "code"),
        [
            ("no-such-tokenizer", grpc.StatusCode.NOT_FOUND),
            ("gpt-99", grpc.StatusCode.NOT_FOUND),
            ("", grpc.StatusCode.INVALID_ARGUMENT),
            ("Bad Name", grpc.StatusCode.INVALID_ARGUMENT),
            ("x@", grpc.StatusCode.INVALID_ARGUMENT),
            ("../etc", grpc.StatusCode.INVALID_ARGUMENT),
            ("cl100k_base@2", grpc.StatusCode.INVALID_ARGUMENT),
        ],
    )
    def test_bad_references(self, inproc, ref: str, code: grpc.StatusCode) -> None:
        """Unknown names are NOT_FOUND, malformed ones INVALID_ARGUMENT; the message names it."""
        err = rpc_error(lambda: inproc.stub.Encode(pb.EncodeRequest(tokenizer=ref, texts=["x"])))
        assert err.code() == code
        assert repr(ref.partition("@")[0])[1:-1] in err.details()
        assert violations(err) == ["tokenizer"]

    def test_empty_batch_is_invalid_argument(self, inproc) -> None:
        err = rpc_error(lambda: inproc.stub.Encode(pb.EncodeRequest(tokenizer="gpt2")))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "texts" in err.details()

    def test_batch_limit(self, inproc) -> None:
        """Over --max-batch is RESOURCE_EXHAUSTED naming the size, the limit and the flag."""
        limit = inproc.config.max_batch
        before = metric_value("tokend_limit_hits_total", limit="max-batch")
        err = rpc_error(lambda: inproc.stub.Encode(
            pb.EncodeRequest(tokenizer="gpt2", texts=["x"] * (limit + 1))))
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert str(limit + 1) in err.details() and str(limit) in err.details()
        assert "--max-batch" in err.details()
        assert metric_value("tokend_limit_hits_total", limit="max-batch") == before + 1

    def test_text_size_limit(self, inproc) -> None:
        limit = inproc.config.max_text_bytes
        err = rpc_error(lambda: inproc.stub.Encode(
            pb.EncodeRequest(tokenizer="gpt2", texts=["ok", "é" * limit])))
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert str(2 * limit) in err.details() and "--max-text-bytes" in err.details()
        assert violations(err) == ["texts[1]"]

    def test_response_ids_limit(self, inproc) -> None:
        """An Encode answer may not hold more than --max-ids ids."""
        per_text = inproc.config.max_ids // 4 + 1
        text = " a" * per_text  # one id per " a"
        err = rpc_error(lambda: inproc.stub.Encode(
            pb.EncodeRequest(tokenizer="gpt2", texts=[text] * 4)))
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "--max-ids" in err.details()

    def test_message_size_limit(self, inproc) -> None:
        """A request over --max-message-bytes is refused by gRPC itself, naming both sizes."""
        big = "x" * (inproc.config.max_message_bytes + 10)
        err = rpc_error(lambda: inproc.stub.Encode(pb.EncodeRequest(tokenizer="gpt2",
                                                                    texts=[big])))
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert str(inproc.config.max_message_bytes) in err.details()


class TestDecode:
    def test_round_trip_and_exact_bytes(self, inproc, tiktoken_ref) -> None:
        """text equals tiktoken's decode (replacement chars), data the exact bytes."""
        ref = tiktoken_ref("cl100k_base")
        ids = ref.encode("héllo 🎉 wörld")
        partial = ids[:5]
        response = inproc.stub.Decode(pb.DecodeRequest(
            tokenizer="cl100k_base", ids=ids, batch=[pb.TokenIds(ids=partial), pb.TokenIds()]))
        assert response.text == ref.decode(ids) and response.data == ref.decode_bytes(ids)
        assert [(r.text, r.data) for r in response.results] == [
            (ref.decode(partial), ref.decode_bytes(partial)), ("", b"")]

    def test_split_character_is_replaced_in_text_exact_in_data(self, inproc, tiktoken_ref) -> None:
        ref = tiktoken_ref("r50k_base")
        ids = ref.encode("🎉")
        assert len(ids) > 1
        response = inproc.stub.Decode(pb.DecodeRequest(tokenizer="r50k_base", ids=ids[:1]))
        assert response.text == ref.decode(ids[:1]) and "\ufffd" in response.text
        assert response.data == ref.decode_bytes(ids[:1])

    def test_unknown_id_names_it_and_its_index(self, inproc) -> None:
        err = rpc_error(lambda: inproc.stub.Decode(
            pb.DecodeRequest(tokenizer="r50k_base", ids=[1, 2, 999_999])))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "999999" in err.details()
        assert violations(err) == ["ids[2]"]
        err = rpc_error(lambda: inproc.stub.Decode(pb.DecodeRequest(
            tokenizer="r50k_base", batch=[pb.TokenIds(ids=[1]), pb.TokenIds(ids=[50300])])))
        assert violations(err) == ["batch[1].ids[0]"]

    def test_ids_limit(self, inproc) -> None:
        n = inproc.config.max_ids + 1
        err = rpc_error(lambda: inproc.stub.Decode(pb.DecodeRequest(tokenizer="gpt2",
                                                                    ids=[1] * n)))
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert str(n) in err.details() and "--max-ids" in err.details()


def chat_reference(enc: tiktoken.Encoding, messages: list[dict[str, str]]) -> int:
    """OpenAI cookbook's num_tokens_from_messages for gpt-4o-style models."""
    total = 0
    for message in messages:
        total += 3
        for key, value in message.items():
            total += len(enc.encode(value, disallowed_special=()))
            if key == "name":
                total += 1
    return total + 3


class TestCountTokens:
    def test_counts_equal_tiktoken_and_specials_count_as_text(self, inproc, tiktoken_ref) -> None:
        """By default special-token text is counted as plain text, never an error."""
        texts = [*TEXTS, "a <|endoftext|> b"]
        response = inproc.stub.CountTokens(pb.CountTokensRequest(tokenizer="o200k_base",
                                                                 texts=texts))
        ref = tiktoken_ref("o200k_base")
        expected = [len(ref.encode(t, disallowed_special=())) for t in texts]
        assert list(response.counts) == expected
        assert response.total == sum(expected) and response.fits and response.remaining == 0

    def test_chat_messages_follow_openai_rule(self, inproc, tiktoken_ref) -> None:
        messages = [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "Hi <|endoftext|> there", "name": "bob"},
            {"role": "assistant", "content": ""},
        ]
        request = pb.CountTokensRequest(
            tokenizer="gpt-4o", texts=["extra text"],
            messages=[pb.ChatMessage(**m) for m in messages])
        response = inproc.stub.CountTokens(request)
        ref = tiktoken_ref("o200k_base")
        assert response.messages_count == chat_reference(ref, messages)
        assert response.total == response.messages_count + len(ref.encode("extra text"))
        request.plain_text = True
        plain = inproc.stub.CountTokens(request)
        assert plain.messages_count == sum(
            len(ref.encode(v, disallowed_special=())) for m in messages for v in m.values())

    def test_max_tokens_answers_fits(self, inproc) -> None:
        request = pb.CountTokensRequest(tokenizer="gpt2", texts=["one two three"], max_tokens=3)
        response = inproc.stub.CountTokens(request)
        assert (response.total, response.fits, response.remaining) == (3, True, 0)
        request.max_tokens = 2
        response = inproc.stub.CountTokens(request)
        assert (response.fits, response.remaining) == (False, -1)

    def test_special_policy_all_refuses(self, inproc) -> None:
        err = rpc_error(lambda: inproc.stub.CountTokens(pb.CountTokensRequest(
            tokenizer="gpt2", texts=["<|endoftext|>"],
            special_tokens=pb.SpecialTokenPolicy(disallowed_mode=pb.DISALLOWED_SPECIAL_ALL))))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT

    def test_nothing_to_count_is_invalid(self, inproc) -> None:
        err = rpc_error(lambda: inproc.stub.CountTokens(pb.CountTokensRequest(tokenizer="gpt2")))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT


def stream_requests(
    name: str, chunks: list[str], **first: object
) -> Iterator[pb.EncodeStreamRequest]:
    yield pb.EncodeStreamRequest(tokenizer=name, text=chunks[0] if chunks else "", **first)
    for chunk in chunks[1:]:
        yield pb.EncodeStreamRequest(text=chunk)


class TestEncodeStream:
    @settings(max_examples=15, deadline=None)
    @given(text=st.text(alphabet=st.sampled_from(list("ab cd\n 1é🎉'")), max_size=300),
           cuts=st.lists(st.integers(0, 300), max_size=8))
    def test_any_chunking_equals_encode(self, inproc, tiktoken_ref, text: str,
                                        cuts: list[int]) -> None:
        """Ids of any chunking equal tiktoken's ids of the whole text; count and done agree."""
        bounds = sorted({0, len(text), *(c for c in cuts if c <= len(text))})
        chunks = [text[a:b] for a, b in itertools.pairwise(bounds)] or [""]
        out = list(inproc.stub.EncodeStream(stream_requests("cl100k_base", chunks)))
        ids = [i for message in out for i in message.ids]
        assert ids == tiktoken_ref("cl100k_base").encode(text)
        assert out[-1].done and not any(m.done for m in out[:-1])
        assert out[-1].count == len(ids)
        assert {m.tokenizer for m in out} == {"cl100k_base"}

    def test_ids_arrive_before_the_stream_ends(self, inproc, tiktoken_ref) -> None:
        """Bidirectional: final ids come back while the client is still sending."""
        outbox: queue.Queue[pb.EncodeStreamRequest | None] = queue.Queue()

        def requests() -> Iterator[pb.EncodeStreamRequest]:
            while (item := outbox.get()) is not None:
                yield item

        # Long enough to pass the encoder's flush size (ids are final from there on).
        text = "The quick brown fox jumps over the lazy dog. " * 2000
        outbox.put(pb.EncodeStreamRequest(tokenizer="o200k_base", text=text))
        outbox.put(pb.EncodeStreamRequest(text="and more"))
        responses = inproc.stub.EncodeStream(requests(), timeout=30)
        first = next(responses)  # arrives although the client has not closed its side
        assert len(first.ids) > 0 and not first.done
        outbox.put(None)
        rest = list(responses)
        ids = list(first.ids) + [i for m in rest for i in m.ids]
        assert ids == tiktoken_ref("o200k_base").encode(text + "and more")

    def test_disallowed_special_in_a_later_chunk(self, inproc) -> None:
        err = rpc_error(lambda: list(inproc.stub.EncodeStream(
            stream_requests("gpt2", ["hello ", "<|endof", "text|> world"]))))
        assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "<|endoftext|>" in err.details()

    def test_allowed_special_across_a_boundary(self, inproc, tiktoken_ref) -> None:
        chunks = ["hello ", "<|endof", "text|> world"]
        out = inproc.stub.EncodeStream(stream_requests(
            "gpt2", chunks, special_tokens=pb.SpecialTokenPolicy(allow_all=True)))
        ids = [i for m in out for i in m.ids]
        assert ids == tiktoken_ref("r50k_base").encode("".join(chunks), allowed_special="all")

    def test_stream_size_limit(self, inproc) -> None:
        limit = inproc.config.max_stream_bytes
        chunk = "word " * 10_000
        n = limit // len(chunk) + 2
        err = rpc_error(lambda: list(inproc.stub.EncodeStream(
            stream_requests("gpt2", [chunk] * n))))
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "--max-stream-bytes" in err.details()

    def test_custom_pattern_streams_are_bounded_like_one_text(self, fresh_server,
                                                             fixtures_dir) -> None:
        """A custom pattern makes the encoder hold the whole text, so --max-text-bytes bounds
        the stream; under it the ids still equal tiktoken's."""
        server = fresh_server()
        corpus = (fixtures_dir / "corpora" / "corpus.en").read_text()
        pattern = r"\w+|\s+|[^\w\s]+"
        result = train_bpe(iter([corpus]), 300, pattern=pattern)
        ref = Registry(server.config.registry).publish(
            "custom", ranks=result.mergeable_ranks(), pat_str=result.pattern,
            special_tokens=result.special_tokens).ref
        reference = tiktoken.Encoding("custom", pat_str=pattern,
                                      mergeable_ranks=result.mergeable_ranks(),
                                      special_tokens={})
        chunks = [corpus[i:i + 5000] for i in range(0, 30000, 5000)]
        ids = [i for m in server.stub.EncodeStream(stream_requests(ref, chunks)) for i in m.ids]
        assert ids == reference.encode("".join(chunks))
        too_long = chunks * (server.config.max_text_bytes // 30000 + 1)
        err = rpc_error(lambda: list(server.stub.EncodeStream(stream_requests(ref, too_long))))
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "--max-text-bytes" in err.details()

    def test_unknown_tokenizer(self, inproc) -> None:
        err = rpc_error(lambda: list(inproc.stub.EncodeStream(stream_requests("nope", ["x"]))))
        assert err.code() == grpc.StatusCode.NOT_FOUND


class TestCatalog:
    def test_list_has_every_builtin(self, inproc, tiktoken_ref) -> None:
        listed = {t.name: t for t in inproc.stub.ListTokenizers(pb.ListTokenizersRequest())
                  .tokenizers}
        for name in ("gpt2", "r50k_base", "p50k_base", "p50k_edit", "cl100k_base",
                     "o200k_base", "o200k_harmony"):
            assert listed[name].builtin
            assert listed[name].vocab_size == tiktoken_ref(name).n_vocab, name

    def test_get_builtin(self, inproc, tiktoken_ref) -> None:
        manifest = inproc.stub.GetTokenizer(pb.GetTokenizerRequest(tokenizer="gpt-4o")).manifest
        ref = tiktoken_ref("o200k_base")
        assert (manifest.name, manifest.ref, manifest.builtin) == ("o200k_base", "o200k_base",
                                                                   True)
        assert manifest.vocab_size == ref.n_vocab
        assert dict(manifest.special_tokens) == ref._special_tokens
        assert manifest.pattern == ref._pat_str

    def test_get_and_list_a_trained_version(self, fresh_server, fixtures_dir) -> None:
        """The manifest of a registry version: ref, hashes, training parameters, aliases."""
        server = fresh_server()
        corpus = (fixtures_dir / "corpora" / "corpus.en").read_text()
        result = train_bpe(iter([corpus]), 300, ["<|endoftext|>"])
        registry = Registry(server.config.registry)
        for _ in range(2):
            registry.publish("mine", ranks=result.mergeable_ranks(), pat_str=result.pattern,
                             special_tokens=result.special_tokens,
                             training={"vocab_size": 300}, corpus={"bytes": len(corpus)})
        registry.set_alias("mine", "stable", 1)
        manifest = server.stub.GetTokenizer(
            pb.GetTokenizerRequest(tokenizer="mine@stable")).manifest
        on_disk = registry.manifest("mine@1")
        assert (manifest.name, manifest.version, manifest.ref, manifest.builtin) == (
            "mine", 1, "mine@1", False)
        assert manifest.vocab_size == on_disk["n_vocab"] == 300
        assert manifest.pattern == result.pattern
        assert dict(manifest.special_tokens) == result.special_tokens
        assert dict(manifest.sha256) == {f: i["sha256"] for f, i in on_disk["files"].items()}
        assert json.loads(manifest.training_json) == {"training": {"vocab_size": 300},
                                                      "corpus": {"bytes": len(corpus)}}
        assert manifest.created_at == on_disk["created_at"]
        assert list(manifest.versions) == [1, 2] and dict(manifest.aliases) == {"stable": 1}
        listed = {t.name: t for t in server.stub.ListTokenizers(
            pb.ListTokenizersRequest()).tokenizers}
        mine = listed["mine"]
        assert (mine.builtin, list(mine.versions), mine.latest_version, dict(mine.aliases),
                mine.vocab_size) == (False, [1, 2], 2, {"stable": 1}, 300)

    def test_get_unknown(self, inproc) -> None:
        err = rpc_error(lambda: inproc.stub.GetTokenizer(pb.GetTokenizerRequest(tokenizer="zz")))
        assert err.code() == grpc.StatusCode.NOT_FOUND


class TestCallHandling:
    def test_request_id_is_echoed(self, inproc) -> None:
        """A caller's x-request-id comes back in the trailing metadata (streams: also the
        initial), also on errors."""
        _, call = inproc.stub.Encode.with_call(
            pb.EncodeRequest(tokenizer="gpt2", texts=["x"]), metadata=[("x-request-id", "abc-1")])
        assert ("x-request-id", "abc-1") in [tuple(m) for m in call.trailing_metadata()]
        stream = inproc.stub.EncodeStream(stream_requests("gpt2", ["a b"]),
                                          metadata=[("x-request-id", "abc-3")])
        assert ("x-request-id", "abc-3") in [tuple(m) for m in stream.initial_metadata()]
        assert list(stream)[-1].done
        assert ("x-request-id", "abc-3") in [tuple(m) for m in stream.trailing_metadata()]
        err = rpc_error(lambda: inproc.stub.Encode(
            pb.EncodeRequest(tokenizer="nope", texts=["x"]), metadata=[("x-request-id", "abc-2")]))
        assert ("x-request-id", "abc-2") in [tuple(m) for m in err.trailing_metadata()]

    def test_request_id_is_made_when_missing(self, inproc) -> None:
        _, call = inproc.stub.Encode.with_call(pb.EncodeRequest(tokenizer="gpt2", texts=["x"]))
        ids = [m.value for m in call.trailing_metadata() if m.key == "x-request-id"]
        assert len(ids) == 1 and len(ids[0]) == 32

    def test_deadline_stops_a_batch(self, fresh_server) -> None:
        """The server checks the deadline between texts and gives up (DEADLINE_EXCEEDED)."""
        # 128 texts of ~60 KB: ~0.5 s of counting even for the compiled engine on an idle
        # machine, ten times the first deadline (16 texts, the shared server's limit, took
        # ~40-70 ms and sometimes finished within it).
        server = fresh_server(max_batch=256, max_message_bytes=16 << 20)
        rng = random.Random(7)  # fresh random words: the block cache cannot make it fast
        texts = [" ".join("".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 12)))
                          for _ in range(7000)) for _ in range(128)]

        def outcomes() -> tuple[float, float]:
            return (metric_value("tokend_rpcs_total", method="CountTokens",
                                 code="DEADLINE_EXCEEDED"),
                    metric_value("tokend_rpcs_total", method="CountTokens", code="OK"))

        # subtle: on a loaded machine grpc may drop a call whose deadline passes before a
        # handler thread takes it (nothing of ours runs, nothing is recorded); such a try
        # proves nothing either way, so the deadline grows until the call reaches the server.
        for timeout in (0.05, 0.2, 0.8):
            before = outcomes()
            err = rpc_error(lambda t=timeout: server.stub.CountTokens(
                pb.CountTokensRequest(tokenizer="cl100k_base", texts=texts), timeout=t))
            assert err.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            give_up = time.monotonic() + 10
            while outcomes() == before and time.monotonic() < give_up:
                time.sleep(0.05)
            deadline_exceeded, ok = (now - then for now, then in zip(outcomes(), before,
                                                                      strict=True))
            assert not ok, "the server counted the whole batch after the deadline had passed"
            if deadline_exceeded:
                return
        pytest.fail("the call never reached the server's handler, even with a 0.8 s deadline")

    def test_client_cancel_stops_a_stream(self, inproc) -> None:
        """Cancelling an EncodeStream ends the server side (recorded as CANCELLED)."""
        before = metric_value("tokend_rpcs_total", method="EncodeStream", code="CANCELLED")
        release = threading.Event()

        def requests() -> Iterator[pb.EncodeStreamRequest]:
            yield pb.EncodeStreamRequest(tokenizer="gpt2", text="hello there " * 10_000)
            release.wait(10)

        call = inproc.stub.EncodeStream(requests())
        next(call)
        call.cancel()
        release.set()
        deadline = time.monotonic() + 10
        while metric_value("tokend_rpcs_total", method="EncodeStream",
                           code="CANCELLED") == before:
            assert time.monotonic() < deadline, "the server never noticed the cancel"
            time.sleep(0.05)

    def test_metrics_record_calls_and_tokens(self, inproc) -> None:
        before = metric_value("tokend_rpcs_total", method="Encode", code="OK")
        tokens = metric_value("tokend_tokens_encoded_total", method="Encode")
        inproc.stub.Encode(pb.EncodeRequest(tokenizer="gpt2", texts=["a b c"]))
        assert metric_value("tokend_rpcs_total", method="Encode", code="OK") == before + 1
        assert metric_value("tokend_tokens_encoded_total", method="Encode") == tokens + 3
        assert b"tokend_rpc_seconds_bucket" in metrics.render()



class TestDraining:
    def test_drain_finishes_in_flight_and_refuses_new_calls(self, fresh_server,
                                                           tiktoken_ref) -> None:
        """drain(): health NOT_SERVING and watches closed, new calls UNAVAILABLE, the in-flight
        stream completes."""
        server = fresh_server(drain_delay_seconds=3.0)
        outbox: queue.Queue[pb.EncodeStreamRequest | None] = queue.Queue()

        def requests() -> Iterator[pb.EncodeStreamRequest]:
            while (item := outbox.get()) is not None:
                yield item

        head = "in flight while draining. " * 4000
        outbox.put(pb.EncodeStreamRequest(tokenizer="cl100k_base", text=head))
        outbox.put(pb.EncodeStreamRequest(text=" more"))
        call = server.stub.EncodeStream(requests(), timeout=30)
        ids = list(next(call).ids)
        watcher = health_pb2_grpc.HealthStub(server.channel).Watch(
            health_pb2.HealthCheckRequest(service=""), timeout=30)
        assert next(watcher).status == health_pb2.HealthCheckResponse.SERVING
        draining = threading.Thread(target=server.server.drain, args=(20,))
        draining.start()
        assert next(watcher).status == health_pb2.HealthCheckResponse.NOT_SERVING
        # The watch is closed by the server, not left open to hold the drain for its grace.
        assert list(watcher) == []
        with grpc.insecure_channel(server.target) as fresh:
            err = rpc_error(lambda: pb_grpc.TokenizerServiceStub(fresh).Encode(
                pb.EncodeRequest(tokenizer="gpt2", texts=["x"]), timeout=5))
        assert err.code() == grpc.StatusCode.UNAVAILABLE
        assert "shutting down" in err.details()  # refused by the draining worker, retryable
        outbox.put(pb.EncodeStreamRequest(text=" end"))
        outbox.put(None)
        ids += [i for m in call for i in m.ids]
        assert ids == tiktoken_ref("cl100k_base").encode(head + " more end")
        draining.join(30)
        assert not draining.is_alive()
