"""The compiled engine's own machinery: block cache, custom patterns, threads, decode.

Exactness of the ids is covered for both engines by the encoder tests (``each_engine``); these
tests look at what only the compiled engine has.
"""

from __future__ import annotations

import random
import threading

import pytest
from fresh_encoding import fresh, shakespeare_text
from tiktoken_reference import reference

from tokend.core import Encoding, UnknownTokenId, get_encoding
from tokend.core.patterns import GPT2_PATTERN


def compiled(name: str, cache_entries: int = 1 << 16) -> Encoding:
    return fresh(name, cache_entries=cache_entries, engine="compiled")


class TestBlockCache:
    """Blocks are cached, bounded, and never change an id."""

    def test_repeat_hits_and_new_text_misses(self) -> None:
        """A text met again is answered from the cache; its ids stay tiktoken's."""
        text = shakespeare_text()[:50_000]
        enc = compiled("o200k_base")
        expected = reference("o200k_base").encode_ordinary(text)
        assert enc.encode_ordinary(text) == expected
        first = enc.cache_info()
        assert first.misses > 100 and first.hits == 0 and first.entries == first.misses
        assert enc.encode_ordinary(text) == expected
        assert enc.count(text) == len(expected)
        again = enc.cache_info()
        assert again.hits == 2 * first.misses and again.misses == first.misses

    def test_bounded_with_evictions(self) -> None:
        """A small cache turns over (counting evictions) and keeps giving tiktoken's ids."""
        text = shakespeare_text()[:300_000]
        enc = compiled("cl100k_base", cache_entries=160)  # 20 blocks
        ref = reference("cl100k_base")
        for start in range(0, len(text), 60_000):
            part = text[start : start + 60_000]
            assert enc.encode_ordinary(part) == ref.encode_ordinary(part)
            info = enc.cache_info()
            assert info.entries <= info.max_entries == 20
        assert enc.cache_info().evictions > 0

    def test_count_and_encode_share_promotions(self) -> None:
        """Counting and encoding interleaved over a working set larger than the young
        generation: hits in the old generation are promoted by both paths (counting copies
        the ids out before the turnover frees them), and ids and counts stay tiktoken's."""
        paragraphs = [p for p in shakespeare_text()[:200_000].split("\n\n") if len(p) > 200][:60]
        enc = compiled("o200k_base", cache_entries=256)  # 32 blocks: 16 per generation
        ref = reference("o200k_base")
        expected = [ref.encode_ordinary(p) for p in paragraphs]
        rng = random.Random(5)
        for _ in range(400):
            i = rng.randrange(len(paragraphs))
            if rng.random() < 0.5:
                assert enc.count(paragraphs[i]) == len(expected[i])
            else:
                assert enc.encode_ordinary(paragraphs[i]) == expected[i]
        info = enc.cache_info()
        assert info.hits > 0 and info.evictions > 0 and info.entries <= info.max_entries

    def test_disabled(self) -> None:
        """cache_entries=0 caches nothing."""
        enc = compiled("o200k_base", cache_entries=0)
        text = shakespeare_text()[:20_000]
        for _ in range(2):
            assert enc.encode_ordinary(text) == reference("o200k_base").encode_ordinary(text)
        assert enc.cache_info().entries == 0

    def test_same_block_in_other_contexts(self) -> None:
        """Blocks recur at other offsets, after other text, at the end of a text: same ids."""
        rng = random.Random(7)
        words = shakespeare_text()[:200_000].split(" ")
        enc = compiled("o200k_base")
        ref = reference("o200k_base")
        pieces = [" ".join(words[i : i + 400]) for i in range(0, 40_000, 400)]
        for _ in range(60):
            text = "".join(rng.choice(["", " ", "\n", "  "]) + rng.choice(pieces) for _ in range(4))
            text = text[rng.randrange(50) :]
            assert enc.encode_ordinary(text) == ref.encode_ordinary(text)

    def test_block_boundaries_from_every_start(self) -> None:
        """Cut points depend on content: prefixes of a text give tiktoken's ids at every
        length (each one is cut, cached and looked up again)."""
        text = shakespeare_text()[100_000:104_000]
        enc = compiled("cl100k_base")
        ref = reference("cl100k_base")
        for end in range(0, len(text), 37):
            assert enc.encode_ordinary(text[:end]) == ref.encode_ordinary(text[:end])
            assert enc.count(text[:end]) == len(ref.encode_ordinary(text[:end]))


class TestCustomPattern:
    """A pattern without the safe-point proof runs the regex over the whole segment."""

    def test_custom_pattern_matches_the_python_engine(self) -> None:
        """Both engines give the same ids for a custom pattern (no reference library has it)."""
        base = get_encoding("r50k_base")
        text = shakespeare_text()[:30_000] + " 12345 naïve café 日本語 "
        encodings = [
            Encoding(
                "custom",
                pat_str=r"\w+|\s+|[^\w\s]+",
                mergeable_ranks=base.mergeable_ranks,
                special_tokens=base.special_tokens,
                engine=engine,
            )
            for engine in ("compiled", "python")
        ]
        ids = [enc.encode_ordinary(text) for enc in encodings]
        assert ids[0] == ids[1]
        assert encodings[0].decode(ids[0]) == text

    def test_vocab_merges_with_other_ids(self) -> None:
        """Merge order and output ids may differ (GPT-2 style files): ids follow the vocab."""
        ranks = sorted(get_encoding("gpt2").mergeable_ranks.items(), key=lambda item: item[1])
        kept = dict(ranks[:3000])  # the first 3,000 tokens are closed under their merges
        merges = []
        for token, _ in ranks[256:3000]:
            cut = next(c for c in range(1, len(token)) if token[:c] in kept and token[c:] in kept)
            merges.append((token[:cut], token[cut:]))
        tokens = list(kept)
        ids = random.Random(3).sample(range(len(tokens)), len(tokens))
        vocab = dict(zip(ids, tokens, strict=True))
        text = shakespeare_text()[:20_000]
        results = []
        for engine in ("compiled", "python"):
            enc = Encoding.from_vocab_merges(vocab, merges, pat_str=GPT2_PATTERN, engine=engine)
            assert enc.engine == engine
            results.append(enc.encode_ordinary(text))
            assert enc.decode(results[-1]) == text
        assert results[0] == results[1]


class TestThreads:
    """Threads sharing one engine (and its cache) get the ids each would get alone."""

    def test_concurrent_encodes_and_counts(self) -> None:
        text = shakespeare_text()
        enc = compiled("o200k_base", cache_entries=800)  # small: the cache turns over often
        ref = reference("o200k_base")
        docs = [text[i : i + 20_000] for i in range(0, 600_000, 20_000)]
        expected = [ref.encode_ordinary(doc) for doc in docs]
        errors: list[str] = []

        def work(seed: int) -> None:
            order = random.Random(seed).sample(range(len(docs)), len(docs))
            for k in order * 2:
                if enc.encode_ordinary(docs[k]) != expected[k]:
                    errors.append(f"encode {k}")
                if enc.count(docs[k]) != len(expected[k]):
                    errors.append(f"count {k}")

        threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []


class TestDecode:
    """Decoding from the compiled bytes table."""

    @pytest.mark.parametrize("bad", [-1, 10**30, 200_000, "7", 1.5])
    def test_unknown_ids(self, bad: object) -> None:
        """Anything that is not a known id raises UnknownTokenId naming it."""
        enc = compiled("cl100k_base")
        with pytest.raises(UnknownTokenId) as info:
            enc.decode_bytes([1, 2, bad])  # type: ignore[list-item]
        assert info.value.token_id == bad

    def test_specials_and_gaps(self) -> None:
        """Special ids decode to their text; ids in gaps of the id space raise."""
        enc = compiled("cl100k_base")
        eot = enc.eot_token
        assert enc.decode_bytes([eot, 15339]) == b"<|endoftext|>hello"
        gap = next(i for i in range(100_256, enc.n_vocab) if i not in enc.special_tokens.values())
        with pytest.raises(UnknownTokenId):
            enc.decode_bytes([gap])


class TestScannerCoverage:
    """Every pattern with the safe-point proof has a compiled scanner, and no other."""

    def test_scanners_are_the_chunkable_patterns(self) -> None:
        from tokend.core.engine.pretokenize import CHUNKABLE_PATTERNS, SCANNER_KINDS

        assert set(SCANNER_KINDS) == set(CHUNKABLE_PATTERNS)


class TestLongPieces:
    """Pieces past the scan's limit go through the heap (with its pair memo): tiktoken's ids."""

    @pytest.mark.parametrize("name", ["o200k_base", "cl100k_base", "r50k_base"])
    def test_long_single_pretokens(self, name: str) -> None:
        rng = random.Random(11)
        enc = compiled(name)
        ref = reference(name)
        alphabets = ["a", "ab", "abcdefghijklmnopqrstuvwxyz", "0123456789", "éà", "日本語"]
        for alphabet in alphabets:
            for size in (65, 200, 3_000, 16_384, 40_000):
                text = "".join(rng.choice(alphabet) for _ in range(size))
                assert enc.encode_ordinary(text) == ref.encode_ordinary(text), (alphabet, size)
        spaces = " " * 5_000 + "x"
        assert enc.encode_ordinary(spaces) == ref.encode_ordinary(spaces)
