"""tokend.client.Client against a real ``tokend serve``: every method, results equal tiktoken's."""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path

import pytest
import tiktoken

from tokend.client import (
    ChatMessage,
    Client,
    InvalidArgument,
    JobState,
    TrainingCancelled,
)
from tokend.core import errors as core


def chat_reference(enc: tiktoken.Encoding, messages: list[ChatMessage], *, plain: bool) -> int:
    """OpenAI's published rule for chat models, written out independently of the server."""
    total = 0
    for m in messages:
        values = [m.role, m.content] + ([m.name] if m.name else [])
        total += sum(len(enc.encode(v, disallowed_special=())) for v in values)
        if not plain:
            total += 3 + (1 if m.name else 0)  # tokens per message, per name
    return total + (3 if messages and not plain else 0)  # reply priming


class TestEncode:
    def test_ids_equal_tiktoken(
        self, client: Client, o200k: tiktoken.Encoding, sample_texts: list[str]
    ) -> None:
        """encode returns exactly tiktoken's ids and echoes the resolved tokenizer."""
        for text in sample_texts:
            result = client.encode("o200k_base", text)
            assert result.ids == o200k.encode(text), text
            assert result.tokenizer == "o200k_base"
            assert result.details is None

    def test_model_name_resolves(self, client: Client, o200k: tiktoken.Encoding) -> None:
        """A model name (gpt-4o) is served by its encoding, like tiktoken.encoding_for_model."""
        result = client.encode("gpt-4o", "model names work")
        assert result.ids == o200k.encode("model names work")
        assert result.tokenizer == "o200k_base"

    def test_batch_keeps_order(
        self, client: Client, cl100k: tiktoken.Encoding, sample_texts: list[str]
    ) -> None:
        """encode_batch: one result per text, in order, equal to tiktoken's encode_batch."""
        results = client.encode_batch("cl100k_base", sample_texts)
        assert [r.ids for r in results] == cl100k.encode_batch(sample_texts)

    def test_details_cover_the_text(self, client: Client, sample_texts: list[str]) -> None:
        """Per-token pieces concatenate to the UTF-8 text; offsets are contiguous."""
        for text in sample_texts:
            result = client.encode("o200k_base", text, details=True)
            assert result.details is not None
            data = text.encode("utf-8")
            assert b"".join(d.piece for d in result.details) == data
            assert [d.id for d in result.details] == result.ids
            position = 0
            for d in result.details:
                assert (d.start, d.end) == (position, position + len(d.piece))
                assert data[d.start : d.end] == d.piece
                position = d.end

    def test_special_token_policy(self, client: Client, o200k: tiktoken.Encoding) -> None:
        """tiktoken semantics: refused by default, allowed on request, or encoded as text."""
        text = "a <|endoftext|> b"
        with pytest.raises(InvalidArgument, match=r"<\|endoftext\|>"):
            client.encode("o200k_base", text)
        allowed = client.encode("o200k_base", text, allowed_special="all")
        assert allowed.ids == o200k.encode(text, allowed_special="all")
        listed = client.encode("o200k_base", text, allowed_special={"<|endoftext|>"})
        assert listed.ids == allowed.ids
        plain = client.encode("o200k_base", text, disallowed_special=())
        assert plain.ids == o200k.encode(text, disallowed_special=())
        assert plain.ids != allowed.ids

    def test_stream_equals_one_encode(self, client: Client, o200k: tiktoken.Encoding) -> None:
        """encode_stream over arbitrary chunk boundaries gives the ids of one encode."""
        text = "".join(f"line {i}: naïve café 東京 🙂 {i * 7919}\n" for i in range(400))
        expected = o200k.encode(text)
        assert list(client.encode_stream("o200k_base", text, chunk_chars=997)) == expected
        # Awkward cuts: inside words, between a letter and its combining mark, 1-char chunks.
        cuts = [0, 1, 2, 3, 50, 51, 1000, 1001, 1002, 5000, len(text)]
        chunks = [text[a:b] for a, b in itertools.pairwise(cuts)]
        assert list(client.encode_stream("o200k_base", iter(chunks))) == expected

    def test_stream_of_empty_text(self, client: Client) -> None:
        assert list(client.encode_stream("o200k_base", "")) == []


class TestDecode:
    def test_round_trip(
        self, client: Client, o200k: tiktoken.Encoding, sample_texts: list[str]
    ) -> None:
        """decode gives back the text and the exact bytes."""
        for text in sample_texts:
            result = client.decode("o200k_base", o200k.encode(text))
            assert result.text == text
            assert result.data == text.encode("utf-8")

    def test_partial_utf8_is_replaced_in_text_but_exact_in_data(
        self, client: Client, o200k: tiktoken.Encoding
    ) -> None:
        """A token holding half a character: text gets U+FFFD, data keeps the bytes."""
        ids = o200k.encode("🙂")
        first = ids[:1]
        expected = o200k.decode_bytes(first)
        result = client.decode("o200k_base", first)
        assert result.data == expected
        assert result.text == expected.decode("utf-8", errors="replace")

    def test_batch(self, client: Client, o200k: tiktoken.Encoding, sample_texts: list[str]) -> None:
        results = client.decode_batch("o200k_base", [o200k.encode(t) for t in sample_texts])
        assert [r.text for r in results] == sample_texts

    def test_unknown_id_is_invalid(self, client: Client, o200k: tiktoken.Encoding) -> None:
        """An id outside the vocabulary is INVALID_ARGUMENT naming the id."""
        bad = o200k.n_vocab + 1000
        with pytest.raises(core.InvalidInput, match=str(bad)):
            client.decode("o200k_base", [1, bad])


class TestCount:
    def test_text_and_texts(
        self, client: Client, o200k: tiktoken.Encoding, sample_texts: list[str]
    ) -> None:
        one = client.count_tokens("o200k_base", "hello world")
        assert one.counts == [len(o200k.encode("hello world"))]
        assert one.total == one.counts[0]
        assert (one.fits, one.remaining) == (True, 0)
        many = client.count_tokens("o200k_base", sample_texts)
        assert many.counts == [len(o200k.encode(t)) for t in sample_texts]
        assert many.total == sum(many.counts)

    def test_special_token_text_counts_as_plain_text(
        self, client: Client, o200k: tiktoken.Encoding
    ) -> None:
        """Counting never fails on user text that looks like a special token."""
        text = "x <|endoftext|> y"
        result = client.count_tokens("o200k_base", text)
        assert result.total == len(o200k.encode(text, disallowed_special=()))

    def test_chat_messages(self, client: Client, o200k: tiktoken.Encoding) -> None:
        """Messages follow OpenAI's rule; dicts and ChatMessage are both accepted."""
        messages = [
            ChatMessage("system", "You are terse."),
            ChatMessage("user", "Count me, café 🙂", name="ana"),
            ChatMessage("assistant", "Done."),
        ]
        framed = client.count_tokens("gpt-4o", messages)
        assert framed.messages_count == chat_reference(o200k, messages, plain=False)
        assert framed.total == framed.messages_count
        assert framed.counts == []
        as_dicts = [
            {"role": m.role, "content": m.content} | ({"name": m.name} if m.name else {})
            for m in messages
        ]
        assert client.count_tokens("gpt-4o", messages=as_dicts).total == framed.total
        plain = client.count_tokens("gpt-4o", messages, plain_text=True)
        assert plain.messages_count == chat_reference(o200k, messages, plain=True)

    def test_texts_and_messages_together(self, client: Client, o200k: tiktoken.Encoding) -> None:
        messages = [ChatMessage("user", "hi")]
        result = client.count_tokens("o200k_base", ["a b c"], messages=messages)
        assert result.counts == [len(o200k.encode("a b c"))]
        assert result.total == result.counts[0] + chat_reference(o200k, messages, plain=False)

    def test_max_tokens(self, client: Client, o200k: tiktoken.Encoding) -> None:
        """fits / remaining answer "does it fit" in the same call."""
        n = len(o200k.encode("one two three four"))
        fits = client.count_tokens("o200k_base", "one two three four", max_tokens=n)
        assert (fits.fits, fits.remaining) == (True, 0)
        over = client.count_tokens("o200k_base", "one two three four", max_tokens=n - 1)
        assert (over.fits, over.remaining) == (False, -1)

    def test_bad_message_shape_refused_locally(self, client: Client) -> None:
        with pytest.raises(core.InvalidInput, match="role"):
            client.count_tokens("o200k_base", messages=[{"content": "no role"}])


class TestRegistry:
    def test_list_tokenizers(self, client: Client, o200k: tiktoken.Encoding) -> None:
        """Built-ins are listed with their vocabulary size."""
        by_name = {t.name: t for t in client.list_tokenizers()}
        assert by_name["o200k_base"].builtin
        assert by_name["o200k_base"].vocab_size == o200k.n_vocab

    def test_get_tokenizer(self, client: Client, o200k: tiktoken.Encoding) -> None:
        manifest = client.get_tokenizer("o200k_base")
        assert manifest.name == "o200k_base"
        assert manifest.builtin
        assert manifest.vocab_size == o200k.n_vocab
        assert manifest.special_tokens == o200k._special_tokens
        assert manifest.pattern == o200k._pat_str

    def test_unknown_tokenizer(self, client: Client) -> None:
        """NOT_FOUND is UnknownTokenizer, and the message lists what exists."""
        with pytest.raises(core.UnknownTokenizer, match="o200k_base"):
            client.get_tokenizer("no-such-tokenizer")


class TestTraining:
    def test_train_stream_progress_and_publish(
        self,
        admin_client: Client,
        fixtures_dir: Path,
        o200k: tiktoken.Encoding,
    ) -> None:
        """A streamed corpus trains, progress is reported, and the result is served at once."""
        corpus = fixtures_dir / "corpora" / "tinystories_sample.txt"
        handle = admin_client.train("clienttok", corpus, vocab_size=300, special_tokens=["<|eot|>"])
        assert handle.job_id
        assert handle.job.name == "clienttok"
        snapshots = list(handle)
        assert snapshots, "WatchTrainJob sent nothing"
        assert snapshots[-1].finished
        published = handle.result(timeout=60)
        assert published.startswith("clienttok@")
        assert handle.job.state is JobState.SUCCEEDED
        manifest = admin_client.get_tokenizer(published)
        assert manifest.vocab_size == 300
        assert manifest.special_tokens == {"<|eot|>": 299}
        text = corpus.read_text(encoding="utf-8")[:500]
        ids = admin_client.encode(published, text).ids
        assert admin_client.decode(published, ids).text == text
        assert len(ids) < len(text.encode("utf-8"))  # it learned merges
        jobs = {j.job_id: j for j in admin_client.list_train_jobs()}
        assert jobs[handle.job_id].published == published
        assert admin_client.get_train_job(handle.job_id).state is JobState.SUCCEEDED

    def test_train_model_kind(self, admin_client: Client, fixtures_dir: Path) -> None:
        """model= reaches the server: a WordPiece job publishes a version served with ##."""
        corpus = fixtures_dir / "corpora" / "corpus.en"
        handle = admin_client.train("clientwp", corpus.read_bytes()[:30_000], vocab_size=400,
                                    model="wordpiece")
        assert handle.job.model == "wordpiece"
        published = handle.result(timeout=60)
        ids = admin_client.encode(published, "tokenization").ids
        assert admin_client.get_train_job(handle.job_id).model == "wordpiece"
        assert admin_client.decode(published, ids).text == "tokenization"
        with pytest.raises(core.InvalidInput, match="model 'bogus'"):
            admin_client.train("x", "text", vocab_size=300, model="bogus")

    def test_train_wordpiece_score(self, admin_client: Client, fixtures_dir: Path) -> None:
        """wordpiece_score= reaches the server and comes back in the job; a bad one is refused."""
        corpus = (fixtures_dir / "corpora" / "corpus.en").read_bytes()[:20_000]
        handle = admin_client.train("clientwpc", corpus, vocab_size=300, model="wordpiece",
                                    wordpiece_score="count")
        assert handle.job.wordpiece_score == "count"
        handle.result(timeout=60)
        assert admin_client.get_train_job(handle.job_id).wordpiece_score == "count"
        with pytest.raises(core.InvalidInput, match="applies to model wordpiece only"):
            admin_client.train("x", "text", vocab_size=300, model="char",
                               wordpiece_score="count")

    def test_train_from_server_side_file(
        self, admin_client: Client, tokend_service: object
    ) -> None:
        """corpus_path names a file under the server's --train-dir."""
        train_dir: Path = tokend_service.train_dir  # type: ignore[attr-defined]
        (train_dir / "small.txt").write_text("low lower lowest " * 200, encoding="utf-8")
        handle = admin_client.train("filetok", corpus_path="small.txt", vocab_size=270)
        assert handle.result(timeout=60).startswith("filetok@")

    def test_cancel(self, admin_client: Client, fixtures_dir: Path) -> None:
        """cancel stops a running job; result() raises TrainingCancelled; nothing published."""
        corpus = gzip.decompress((fixtures_dir / "corpora" / "shakespeare.txt.gz").read_bytes())
        handle = admin_client.train("canceltok", corpus, vocab_size=20000)
        handle.cancel()
        with pytest.raises(TrainingCancelled):
            handle.result(timeout=60)
        assert handle.job.state is JobState.CANCELLED
        with pytest.raises(core.UnknownTokenizer):
            admin_client.get_tokenizer("canceltok")

    def test_unknown_job(self, admin_client: Client) -> None:
        """A well-formed but unknown job id is NOT_FOUND (UnknownJob); a malformed one invalid."""
        missing = "0" * 32
        with pytest.raises(core.UnknownJob, match=missing):
            admin_client.get_train_job(missing)
        with pytest.raises(core.UnknownJob):
            admin_client.cancel(missing)
        with pytest.raises(core.InvalidInput, match="no-such-job"):
            admin_client.get_train_job("no-such-job")


class TestChannel:
    def test_wait_ready(self, client: Client) -> None:
        client.wait_ready(timeout=10)

    def test_wait_ready_times_out_naming_the_target(self) -> None:
        with Client("127.0.0.1:1", max_attempts=1) as dead, pytest.raises(TimeoutError) as info:
            dead.wait_ready(timeout=0.3)
        assert "127.0.0.1:1" in str(info.value)
