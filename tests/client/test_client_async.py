"""tokend.client.AsyncClient against a real ``tokend serve``: the same methods, awaited."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import tiktoken

from tokend.client import AsyncClient, ChatMessage, JobState, TrainingCancelled
from tokend.core import errors as core


def run(
    target: str, body: Callable[[AsyncClient], Awaitable[Any]], *, token: str | None = None
) -> Any:
    """Run ``body`` with a fresh AsyncClient on a fresh event loop (aio channels are per-loop)."""

    async def main() -> Any:
        async with AsyncClient(target, timeout=30, token=token) as client:
            return await body(client)

    return asyncio.run(main())


class TestAsyncClient:
    def test_encode_decode_count(
        self, tokend_service: Any, o200k: tiktoken.Encoding, sample_texts: list[str]
    ) -> None:
        """encode / encode_batch / decode / decode_batch / count_tokens equal tiktoken."""

        async def body(client: AsyncClient) -> None:
            one = await client.encode("o200k_base", sample_texts[1], details=True)
            assert one.ids == o200k.encode(sample_texts[1])
            assert one.details is not None
            assert b"".join(d.piece for d in one.details) == sample_texts[1].encode()
            batch = await client.encode_batch("o200k_base", sample_texts)
            assert [r.ids for r in batch] == o200k.encode_batch(sample_texts)
            decoded = await client.decode("o200k_base", one.ids)
            assert decoded.text == sample_texts[1]
            texts = await client.decode_batch("o200k_base", [r.ids for r in batch])
            assert [d.text for d in texts] == sample_texts
            counted = await client.count_tokens("o200k_base", sample_texts, max_tokens=10)
            assert counted.counts == [len(ids) for ids in o200k.encode_batch(sample_texts)]
            assert counted.fits == (counted.total <= 10)
            chat = await client.count_tokens("o200k_base", [ChatMessage("user", "hi")])
            assert chat.messages_count == 3 + len(o200k.encode("user")) + 1 + 3

        run(tokend_service.target, body)

    def test_concurrent_calls_share_one_channel(
        self, tokend_service: Any, o200k: tiktoken.Encoding
    ) -> None:
        """Many calls in flight at once on one client all get their own right answer."""
        texts = [f"request {i}: {'word ' * (i % 17)}{i * 31337}" for i in range(100)]

        async def body(client: AsyncClient) -> list[list[int]]:
            results = await asyncio.gather(*(client.encode("o200k_base", t) for t in texts))
            return [r.ids for r in results]

        assert run(tokend_service.target, body) == o200k.encode_batch(texts)

    def test_encode_stream_from_async_chunks(
        self, tokend_service: Any, o200k: tiktoken.Encoding
    ) -> None:
        """encode_stream takes an async iterable of chunks and yields the ids of one encode."""
        text = "".join(f"{i} naïve 東京 🙂 tokens\n" for i in range(300))

        async def chunks() -> AsyncIterator[str]:
            for start in range(0, len(text), 333):
                yield text[start : start + 333]

        async def body(client: AsyncClient) -> tuple[list[int], list[int]]:
            from_async = [i async for i in client.encode_stream("o200k_base", chunks())]
            from_str = [i async for i in client.encode_stream("o200k_base", text, chunk_chars=50)]
            return from_async, from_str

        from_async, from_str = run(tokend_service.target, body)
        assert from_async == from_str == o200k.encode(text)

    def test_registry_and_errors(self, tokend_service: Any, o200k: tiktoken.Encoding) -> None:
        async def body(client: AsyncClient) -> None:
            names = {t.name for t in await client.list_tokenizers()}
            assert {"o200k_base", "cl100k_base"} <= names
            manifest = await client.get_tokenizer("gpt-4o")
            assert (manifest.name, manifest.vocab_size) == ("o200k_base", o200k.n_vocab)
            with pytest.raises(core.UnknownTokenizer):
                await client.encode("missing-tokenizer", "x")
            with pytest.raises(core.InvalidInput):
                await client.encode("o200k_base", "<|endoftext|>")

        run(tokend_service.target, body)

    def test_train_progress_result_and_cancel(
        self, tokend_service: Any, fixtures_dir: Path
    ) -> None:
        """train -> async progress -> result(); a second job is cancelled."""
        corpus = (fixtures_dir / "corpora" / "corpus.en").read_bytes()

        async def body(client: AsyncClient) -> None:
            handle = await client.train("asynctok", corpus, vocab_size=400)
            seen = [job async for job in handle]
            assert seen and seen[-1].finished
            published = await handle.result(timeout=60)
            assert published.startswith("asynctok@")
            assert (await client.get_train_job(handle.job_id)).state is JobState.SUCCEEDED
            assert handle.job_id in {j.job_id for j in await client.list_train_jobs()}

            charjob = await client.train("asyncchar", corpus[:5000], vocab_size=60, model="char")
            assert charjob.job.model == "char"
            char_ref = await charjob.result(timeout=60)
            assert (await client.decode(char_ref, (await client.encode(char_ref, "the cat")).ids)
                    ).text == "the cat"

            doomed = await client.train("asynccancel", corpus * 20, vocab_size=20000)
            await doomed.cancel()
            with pytest.raises(TrainingCancelled):
                await doomed.result(timeout=60)
            reattached = await client.train_job(doomed.job_id)
            assert reattached.job.state is JobState.CANCELLED

        run(tokend_service.target, body, token=tokend_service.admin_token)
