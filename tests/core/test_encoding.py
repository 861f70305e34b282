"""Differential tests: tokend.core.Encoding gives tiktoken's ids for every built-in encoding."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import tiktoken
from fresh_encoding import fresh, shakespeare_text
from tiktoken_reference import reference

from tokend.core import (
    DisallowedSpecialToken,
    Encoding,
    UnknownTokenId,
    get_encoding,
    list_encoding_names,
)

# Every test here runs once per engine (compiled, python): see tests/conftest.py.
pytestmark = pytest.mark.usefixtures("each_engine")

ALL_NAMES = list_encoding_names()


EDGE_TEXTS = [
    "",
    " ",
    "  ",
    "\n",
    "\r\n",
    "a",
    "hello world",
    "Hello, World! How's it going? I'M FINE, THEY'LL SEE, WE'VE 'S 'LL 'Re",
    "don't can't won't shouldn't y'all o'clock rock'n'roll 'tis",
    "x's X'S x'Ll 'd 'D 'm 'M 've 'VE 're 'RE 't 'T",
    "  leading spaces and trailing   ",
    "tabs\tand\t\ttabs \t mixed \t",
    "line1\nline2\r\nline3\rline4\n\n\n  indented\n\t\ttabbed\n",
    "trailing newline \n",
    "a \n b",
    "a\n \nb",
    "word \n\n  word",
    " " * 17 + "x" + " " * 33,
    "\n" * 7 + " " * 3 + "\r\n" * 4,
    "1234567890 12 123 1234 12345 3.14159 -42 1,000,000 0x1F 1e-9",
    "٠١٢٣٤٥٦٧٨٩ ⅫⅣ ½¾ ²³",
    "def f(x):\n    return x ** 2  # square\n\nclass A:\n\tpass\n",
    "if (a && b || !c) { x += 1; } else { y -= 2; }\n",
    "https://example.com/path?query=1&b=2#frag /usr/local/bin//x",
    "Grüße aus München! Straße, Fußgänger, Ärger, Öl, Übel.",
    "日本語のテキストとカタカナ、ひらがな。中文文本測試。한국어 텍스트입니다.",
    "العربية نص تجريبي مع أرقام ١٢٣",
    "हिन्दी पाठ का परीक्षण है। संख्या १२३",
    "Ελληνικά κείμενα και Русский текст, ЗАГЛАВНЫЕ буквы",
    "emoji 👨‍👩‍👧‍👦 family 🏳️‍🌈 flag 👍🏽 thumbs 🇯🇵 jp 😀😃😄",
    "combining é vs e\u0301, a\u0308\u0304 and ℌ𝔢𝔩𝔩𝔬 𝕨𝕠𝕣𝕝𝕕",
    "zero\u200bwidth\u200cjoiner\u200d and nbsp\u00a0here and\u2003em space\u3000ideographic",
    "control \x00\x01\x1c\x1d\x1e\x1f\x7f chars \x0b\x0c",
    "mixedCaseWordsLikeThisOne and HTTPServerError and iPhone and McDonald's",
    "!!! ??? ... --- *** /// \\\\\\ ||| ~~~ ``` ''' \"\"\" ,,, ;;; :::",
    "'''quoted''' 's 'S'",
    "<|endoftext|> is ordinary here? <|fim_prefix|>",
    "a" * 300,
    "ab" * 200 + " " + "xyz" * 120,
]


@pytest.mark.parametrize("name", ALL_NAMES)
class TestDifferential:
    """Every built-in encoding matches tiktoken."""

    def test_edge_texts(self, name: str) -> None:
        """Edge cases (whitespace, contractions, digits, scripts, emoji) give tiktoken's ids."""
        ours, ref = fresh(name), reference(name)
        for text in EDGE_TEXTS:
            expected = ref.encode_ordinary(text)
            assert ours.encode_ordinary(text) == expected, text
            assert ours.encode_ordinary(text) == expected, text  # warm cache
            assert ours.encode(text, disallowed_special=()) == expected, text
            assert ours.count(text, disallowed_special=()) == len(expected)
            assert ours.decode(expected) == ref.decode(expected)

    def test_shakespeare(self, name: str) -> None:
        """A slice of the shakespeare corpus (all of it for o200k_base), cold then warm."""
        text = shakespeare_text()
        if name != "o200k_base":
            text = text[:400_000]
        ours, ref = fresh(name), reference(name)
        expected = ref.encode(text)
        assert ours.encode(text) == expected
        assert ours.encode(text) == expected
        assert ours.count(text) == len(expected)
        assert ours.decode(expected) == text

    def test_multilingual_fixtures(self, name: str, fixtures_dir: Path) -> None:
        """The German, address, tinystories and corpus.en fixtures give tiktoken's ids."""
        ours, ref = get_encoding(name), reference(name)
        for fixture in ("german.txt", "address.txt", "tinystories_sample.txt", "corpus.en"):
            text = (fixtures_dir / "corpora" / fixture).read_text(encoding="utf-8")
            for policy in ({"disallowed_special": ()}, {"allowed_special": "all"}):
                assert ours.encode(text, **policy) == ref.encode(text, **policy), fixture

    def test_properties_match_tiktoken(self, name: str) -> None:
        """n_vocab, max_token_value, eot_token and the special token set equal tiktoken's."""
        ours, ref = get_encoding(name), reference(name)
        assert ours.n_vocab == ref.n_vocab
        assert ours.max_token_value == ref.max_token_value
        assert ours.eot_token == ref.eot_token
        assert ours.special_tokens_set == ref.special_tokens_set
        assert ours.token_byte_values() == ref.token_byte_values()


class TestSpecialTokens:
    """allowed_special / disallowed_special behave exactly like tiktoken."""

    @pytest.mark.parametrize("name", ["cl100k_base", "o200k_harmony", "p50k_edit"])
    def test_policies_match(self, name: str) -> None:
        """Every combination of policies gives tiktoken's ids or tiktoken's refusal."""
        ours, ref = get_encoding(name), reference(name)
        specials = sorted(ref.special_tokens_set)[:3]
        texts = [
            "plain text",
            f"a{specials[0]}b",
            f"{specials[0]}{specials[-1]} x {specials[0]}",
            f"  {specials[-1]}\n\n{specials[0]}  ",
            f"<|{specials[0]}|>",
            f"{specials[0][:-1]} partial",
        ]
        policies: list[dict[str, object]] = [
            {},
            {"allowed_special": "all"},
            {"disallowed_special": ()},
            {"allowed_special": {specials[0]}},
            {"allowed_special": {specials[0]}, "disallowed_special": ()},
            {"disallowed_special": {specials[-1]}},
            {"allowed_special": "all", "disallowed_special": "all"},
            {"allowed_special": {"<|not_special|>"}, "disallowed_special": ()},
        ]
        for text in texts:
            for policy in policies:
                try:
                    expected: object = ref.encode(text, **policy)  # type: ignore[arg-type]
                except ValueError as exc:
                    expected = type(exc)
                try:
                    got: object = ours.encode(text, **policy)  # type: ignore[arg-type]
                except DisallowedSpecialToken:
                    got = ValueError
                assert got == expected, (text, policy)
                if isinstance(expected, list):
                    assert ours.count(text, **policy) == len(expected)  # type: ignore[arg-type]

    def test_disallowed_names_the_token(self) -> None:
        """The error is a ValueError naming the offending token."""
        enc = get_encoding("cl100k_base")
        with pytest.raises(ValueError, match="<\\|endofprompt\\|>"):
            enc.encode("hi <|endofprompt|> there")
        with pytest.raises(DisallowedSpecialToken) as info:
            enc.count("<|fim_middle|>")
        assert info.value.token == "<|fim_middle|>"

    def test_allowed_special_becomes_its_id(self) -> None:
        """An allowed special token encodes to its id, the rest stays ordinary text."""
        enc = get_encoding("o200k_base")
        ids = enc.encode("a<|endoftext|>b", allowed_special={"<|endoftext|>"})
        assert ids == reference("o200k_base").encode("a<|endoftext|>b", allowed_special="all")
        assert enc.eot_token in ids
        assert enc.decode(ids) == "a<|endoftext|>b"


class TestSurrogates:
    """Lone surrogates are replaced the way tiktoken replaces them."""

    @pytest.mark.parametrize(
        "text",
        ["\ud800", "a\udfffb", "x \ud83d\ude00 y", "\ud83d \ude00", "ok \udc80\udc80 ok"],
    )
    def test_surrogates(self, text: str) -> None:
        """Paired surrogates combine, lone ones become U+FFFD, in encode and encode_ordinary."""
        ours, ref = fresh("o200k_base"), reference("o200k_base")
        assert ours.encode(text) == ref.encode(text)
        assert ours.encode_ordinary(text) == ref.encode_ordinary(text)
        assert ours.count(text) == len(ref.encode(text))


class TestDecode:
    """Decoding mirrors tiktoken and names unknown ids."""

    def test_decode_variants(self) -> None:
        """decode, decode_bytes, decode_tokens_bytes and single-token decode agree with tiktoken."""
        ours, ref = get_encoding("cl100k_base"), reference("cl100k_base")
        ids = ref.encode("héllo wörld 👍 <|endoftext|>", allowed_special="all")
        assert ours.decode_bytes(ids) == ref.decode_bytes(ids)
        assert ours.decode(ids) == ref.decode(ids)
        assert ours.decode_tokens_bytes(ids) == ref.decode_tokens_bytes(ids)
        assert ours.decode_single_token_bytes(ids[0]) == ref.decode_single_token_bytes(ids[0])
        partial = [ref.encode_single_token(b"\xf0"), *ids]
        assert ours.decode(partial) == ref.decode(partial)

    @pytest.mark.parametrize(
        "text", ["hello world", "héllo wörld", "日本語 テキスト", "👨‍👩‍👧 and 🏳️‍🌈", "a\u0301b"]
    )
    def test_decode_with_offsets(self, text: str) -> None:
        """Offsets are tiktoken's, including tokens that split a character."""
        for name in ("cl100k_base", "o200k_base", "r50k_base"):
            ours, ref = get_encoding(name), reference(name)
            ids = ref.encode(text)
            assert ours.decode_with_offsets(ids) == ref.decode_with_offsets(ids)

    def test_unknown_id(self) -> None:
        """An id outside the vocabulary raises UnknownTokenId, a ValueError naming it."""
        enc = get_encoding("r50k_base")
        for bad in (50257, -1, 10**9):
            with pytest.raises(ValueError, match=str(bad)):
                enc.decode([1, bad])
            with pytest.raises(UnknownTokenId, match=str(bad)):
                enc.decode_single_token_bytes(bad)


class TestIterableAndCount:
    """encode_iterable and count agree with encode."""

    def test_encode_iterable_line_by_line(self) -> None:
        """Streaming the corpus line by line (past the flush size) equals encoding it whole."""
        text = shakespeare_text()[:300_000]
        enc = get_encoding("o200k_base")
        lines = text.splitlines(keepends=True)
        assert list(enc.encode_iterable(lines)) == enc.encode(text)
        assert list(enc.encode_iterable(iter(text[i : i + 7] for i in range(0, 300_000, 7)))) == (
            enc.encode(text)
        )

    def test_streams_in_bounded_memory(self) -> None:
        """The property says whether streaming keeps a bounded tail, and it does."""
        import tracemalloc

        base = get_encoding("cl100k_base")
        custom = Encoding(
            "words",
            pat_str=r"\S+|\s+",
            mergeable_ranks=base.mergeable_ranks,
            special_tokens={},
        )
        spaced = Encoding(
            "spaced",
            pat_str=base.pat_str,
            mergeable_ranks=base.mergeable_ranks,
            special_tokens={"<|a b|>": base.n_vocab},
        )
        assert base.streams_in_bounded_memory
        assert not custom.streams_in_bounded_memory
        assert not spaced.streams_in_bounded_memory

        def peak_bytes(enc: Encoding, chunks: int) -> int:
            texts = ("hello world, again " * 3000 for _ in range(chunks))  # 57 KB each
            tracemalloc.start()
            try:
                for _ in enc.encode_iterable(texts):
                    pass
                return tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()

        # four times the text: the same peak when streaming, four times it when buffering
        assert peak_bytes(base, 60) < 1.5 * peak_bytes(base, 15)
        assert peak_bytes(custom, 60) > 3 * peak_bytes(custom, 15)

    def test_encode_iterable_whitespace_runs(self) -> None:
        """Long runs without safe points still stream correctly."""
        enc = get_encoding("cl100k_base")
        text = ("word  " * 20_000) + (" " * 70_000) + "end\n" + ("x y" * 30_000)
        pieces = [text[i : i + 1000] for i in range(0, len(text), 1000)]
        assert list(enc.encode_iterable(pieces)) == reference("cl100k_base").encode(text)

    def test_encode_iterable_specials(self) -> None:
        """Specials split across chunks are still found (allowed) or refused (disallowed)."""
        enc = get_encoding("cl100k_base")
        text = ("abc <|endoftext|> def " * 5000) + "<|endoftext|>"
        pieces = [text[i : i + 5] for i in range(0, len(text), 5)]
        got = list(enc.encode_iterable(pieces, allowed_special="all"))
        assert got == enc.encode(text, allowed_special="all")
        with pytest.raises(DisallowedSpecialToken):
            list(enc.encode_iterable(pieces))

    def test_batch(self) -> None:
        """encode_batch equals encoding each text."""
        enc = get_encoding("o200k_base")
        texts = [f"text number {i} " * (i + 1) for i in range(20)]
        assert enc.encode_batch(texts) == [enc.encode(t) for t in texts]


class TestFromVocabMerges:
    """GPT-2's vocab.json + merges.txt give tiktoken's gpt2 ids."""

    def test_gpt2_files(self, fixtures_dir: Path) -> None:
        """Same ids as tiktoken's gpt2 on the corpus and edge texts; specials by vocab id."""
        from tokend.core.formats import read_gpt2_merges, read_gpt2_vocab

        vocab = read_gpt2_vocab(fixtures_dir / "encodings" / "gpt2_vocab.json.gz")
        merges = read_gpt2_merges(fixtures_dir / "encodings" / "gpt2_merges.txt.gz")
        enc = Encoding.from_vocab_merges(vocab, merges, ["<|endoftext|>"], name="gpt2-files")
        ref = reference("gpt2")
        assert enc.eot_token == 50256
        assert enc.n_vocab == ref.n_vocab
        text = shakespeare_text()[:100_000] + "".join(EDGE_TEXTS)
        assert enc.encode(text, disallowed_special=()) == ref.encode(text, disallowed_special=())
        assert enc.encode("<|endoftext|>", allowed_special="all") == [50256]

    def test_ids_differ_from_ranks(self) -> None:
        """Output ids follow vocab even when they do not increase with merge order."""
        byte_ids = {bytes([b]): 1000 + b for b in range(256)}
        vocab = {i: t for t, i in byte_ids.items()}
        merges = [(b"a", b"b"), (b"ab", b"c"), (b"b", b"c")]
        vocab.update({7: b"ab", 5: b"abc", 9: b"bc"})
        enc = Encoding.from_vocab_merges(vocab, merges, ["<s>"], pat_str=r"\S+|\s+")
        # "abc": (a,b) has priority 0 -> "ab", then (ab,c) -> "abc"
        assert enc.encode("abc") == [5]
        # "bcab": (a,b) first -> b c ab ; then (b,c) -> bc ab
        assert enc.encode("bcab") == [9, 7]
        assert enc.encode("<s>", allowed_special="all") == [1256]
        assert enc.decode([9, 7, 1256]) == "bcab<s>"


class TestThreads:
    """Concurrent encoding on one shared Encoding gives identical results."""

    def test_threads_agree(self) -> None:
        """Eight threads hammering a small cache all get tiktoken's ids."""
        text = shakespeare_text()[:60_000]
        enc = fresh("o200k_base", cache_entries=512)
        expected = reference("o200k_base").encode(text)
        chunks = [text[i : i + 3000] for i in range(0, len(text), 3000)]
        expected_chunks = [reference("o200k_base").encode(c) for c in chunks]
        errors: list[str] = []

        def work(seed: int) -> None:
            order = chunks[seed:] + chunks[:seed]
            exp = expected_chunks[seed:] + expected_chunks[:seed]
            for chunk, want in zip(order, exp, strict=True):
                try:
                    if enc.encode(chunk) != want:
                        errors.append(chunk[:40])
                except Exception as exc:  # a thread's exception would otherwise only warn
                    errors.append(f"{chunk[:40]!r}: {exc!r}")

        threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert enc.encode(text) == expected
        info = enc.cache_info()
        assert info.entries <= 512
        assert info.evictions > 0


class TestPickle:
    """Encodings survive pickling (for process pools), built-ins by name."""

    def test_pickle_roundtrip(self) -> None:
        """A built-in unpickles to the shared instance; a custom one to an equal encoder."""
        import pickle

        builtin = get_encoding("cl100k_base")
        assert pickle.loads(pickle.dumps(builtin)).__dict__ is builtin.__dict__
        assert pickle.loads(pickle.dumps(builtin)).encode("hi there") == builtin.encode("hi there")
        custom = fresh("r50k_base", cache_entries=100)
        custom.encode("warm the cache")
        clone = pickle.loads(pickle.dumps(custom))
        assert clone.encode("hello world  again") == custom.encode("hello world  again")
        assert clone.cache_info().max_entries == custom.cache_info().max_entries
        assert clone.n_vocab == custom.n_vocab


class TestUnicodeData:
    """Code points newer than tiktoken's Unicode data are classified the way tiktoken does."""

    def test_newly_assigned_code_points(self) -> None:
        """A sample of the letters/digits/marks regex knows but tiktoken's regex does not."""
        from tokend.core.engine.pretokenize import _TIKTOKEN_UNASSIGNED_RANGES

        points = []
        for item in "".join(_TIKTOKEN_UNASSIGNED_RANGES).split():
            lo, _, hi = item.partition("-")
            points += range(int(lo, 16), int(hi or lo, 16) + 1, 97)
        assert len(points) > 150
        probes = "".join(
            f"{chr(c)}:A\nx{chr(c)}x {chr(c)}1 a{chr(c)}B '{chr(c)}s\n" for c in points
        )
        for name in ("o200k_base", "cl100k_base", "r50k_base"):
            assert fresh(name).encode_ordinary(probes) == reference(name).encode_ordinary(probes)
        assert get_encoding("o200k_base").encode("\U0003d000:A") == reference("o200k_base").encode(
            "\U0003d000:A"
        )


class TestCustomPatterns:
    """Custom pretokenization regexes (trained or imported tokenizers) pretokenize like tiktoken."""

    PATTERNS = (
        r"(?P<word>\p{L}+)|\s+|[^\s\p{L}]",  # a named capturing group: whole matches count
        r"(\p{L}+)|(\p{N})|\s+|.",  # several groups, one of which may not take part
        r"\S+|\s+",
    )

    @pytest.mark.parametrize("pat_str", PATTERNS)
    def test_matches_tiktoken(self, pat_str: str) -> None:
        ranks = get_encoding("r50k_base").mergeable_ranks
        ours = Encoding("custom", pat_str=pat_str, mergeable_ranks=ranks, special_tokens={})
        theirs = tiktoken.Encoding(
            "custom", pat_str=pat_str, mergeable_ranks=ranks, special_tokens={}
        )
        for text in ("ab 1", "Hello, world!  42 times\n\tdone.", "naïve café 日本語 x1y2"):
            assert ours.encode(text) == theirs.encode(text)
            assert ours.decode(ours.encode(text)) == text

    def test_empty_matches_lose_no_text(self) -> None:
        """A custom pattern that matches the empty string mid-text still encodes every byte
        (validation only tests the empty string, so such patterns get through)."""
        ranks = get_encoding("r50k_base").mergeable_ranks
        for pat_str in (r"(?=b)|\w+|\s", r"(?=b)|(\w+)|\s"):
            enc = Encoding("custom", pat_str=pat_str, mergeable_ranks=ranks, special_tokens={})
            for text in ("a b", "bb abba b", "b"):
                assert enc.decode(enc.encode(text)) == text
                assert enc.count(text, disallowed_special=()) == len(enc.encode(text))
