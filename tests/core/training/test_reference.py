"""The merge loops against the textbook algorithms they speed up (recount every round).

``paper_bpe`` is Sennrich et al.'s reference code (their Algorithm 1: ``get_stats`` over a
dict of space-separated symbols, ``max`` picks the first-seen pair on ties); ``naive_wordpiece``
is the same loop with BERT's likelihood score. Hypothesis draws small word-count corpora.
Every test runs under both merge kernels (``merge_kernel``: compiled and pure Python).
"""

from __future__ import annotations

import collections
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokend.core.training import merge_kernel, train_tokenizer
from tokend.core.training.spec import WORDPIECE_SCORES
from tokend.core.training.wordpiece import _BertWords


@pytest.fixture(scope="module", autouse=True, params=["compiled", "python"])
def each_merge_kernel(request: pytest.FixtureRequest) -> Iterator[str]:
    """Train with each merge kernel (TOKEND_ENGINE is read at every training)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOKEND_ENGINE", "python" if request.param == "python" else "")
        assert merge_kernel.default_kernel() == request.param
        yield request.param


def paper_bpe(vocab: dict[str, int], n: int) -> list[tuple[str, str]]:
    """Sennrich et al. 2016, Algorithm 1, verbatim apart from returning the merges."""

    def get_stats(vocab: dict[str, int]) -> dict[tuple[str, str], int]:
        pairs: dict[tuple[str, str], int] = collections.defaultdict(int)
        for word, freq in vocab.items():
            symbols = word.split()
            for i in range(len(symbols) - 1):
                pairs[symbols[i], symbols[i + 1]] += freq
        return pairs

    def merge_vocab(pair: tuple[str, str], v_in: dict[str, int]) -> dict[str, int]:
        v_out = {}
        bigram = re.escape(" ".join(pair))
        p = re.compile(r"(?<!\S)" + bigram + r"(?!\S)")
        for word in v_in:  # noqa: PLC0206 - the paper's code, verbatim
            w_out = p.sub("".join(pair), word)
            v_out[w_out] = v_in[word]
        return v_out

    merges = []
    for _ in range(n):
        pairs = get_stats(vocab)
        if not pairs:
            break
        best = max(pairs, key=pairs.get)  # type: ignore[arg-type]
        vocab = merge_vocab(best, vocab)
        merges.append(best)
    return merges


def xlogx(x: int) -> float:
    return x * math.log(x) if x > 0 else 0.0


def gain(c: int, na: int, nb: int, n: int, same: bool) -> float:
    """Log-likelihood change of a unigram model when c pairs (a, b) merge (pair_merge's)."""
    change = (xlogx(na - 2 * c) - xlogx(na) if same
              else xlogx(na - c) - xlogx(na) + xlogx(nb - c) - xlogx(nb))
    return xlogx(c) + change - (xlogx(n - c) - xlogx(n))


def naive_wordpiece(words: dict[str, int], n: int, score: str) -> list[tuple[str, str]]:
    """Recount pairs and symbols every round; merge the best-scoring pair (first seen wins)."""
    split = {w: [c if i == 0 else "##" + c for i, c in enumerate(w)] for w in words}
    merges = []
    for _ in range(n):
        pairs: dict[tuple[str, str], int] = {}
        symbols: dict[str, int] = collections.defaultdict(int)
        for w, f in words.items():
            s = split[w]
            for i, sym in enumerate(s):
                symbols[sym] += f
                if i + 1 < len(s):
                    pairs[sym, s[i + 1]] = pairs.get((sym, s[i + 1]), 0) + f
        if not pairs:
            break
        total = sum(symbols.values())
        if score == "count":  # HF's WordPieceTrainer: the most frequent pair
            best = max(pairs, key=pairs.__getitem__)
        elif score == "ratio":
            best = max(pairs, key=lambda p: pairs[p] / (symbols[p[0]] * symbols[p[1]]))
        else:
            best = max(pairs, key=lambda p: gain(pairs[p], symbols[p[0]], symbols[p[1]], total,
                                                 p[0] == p[1]))
        merged = best[0] + best[1][2:]
        merges.append(best)
        for w in words:
            s = split[w]
            out, i = [], 0
            while i < len(s):
                if i + 1 < len(s) and (s[i], s[i + 1]) == best:
                    out.append(merged)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            split[w] = out
    return merges


def corpus_text(words: dict[str, int]) -> str:
    return " ".join(" ".join([w] * n) for w, n in words.items())


word_counts = st.dictionaries(
    st.text(alphabet="abcde", min_size=1, max_size=7), st.integers(1, 6), min_size=1,
    max_size=12,
)


class TestWorkedExample:
    def test_sennrich_example(self) -> None:
        """The paper's example: merges in order, then "lowest" -> [low, est</w>]."""
        text = corpus_text({"low": 5, "lower": 2, "newest": 6, "widest": 3})
        result = train_tokenizer(iter([text]), 64, model="word-bpe")
        assert result.merges[:5] == [("e", "s"), ("es", "t"), ("est", "</w>"), ("l", "o"),
                                     ("lo", "w")]
        enc = result.to_encoding("example")
        assert [result.vocab[i] for i in enc.encode("lowest")] == ["low", "est</w>"]


class TestAgainstReference:
    @settings(max_examples=int(os.environ.get("TOKEND_REF_EXAMPLES", "60")), deadline=None)
    @given(word_counts)
    def test_word_bpe_merges_equal_the_papers(self, words: dict[str, int]) -> None:
        """Every merge, in order, as the paper's code learns it (ties: first seen)."""
        expected = paper_bpe({" ".join(w) + " </w>": n for w, n in words.items()}, 400)
        result = train_tokenizer(iter([corpus_text(words)]), 10_000, model="word-bpe")
        assert result.merges == expected

    @pytest.mark.parametrize("score", WORDPIECE_SCORES)
    @settings(max_examples=int(os.environ.get("TOKEND_REF_EXAMPLES", "60")), deadline=None)
    @given(words=word_counts)
    def test_wordpiece_merges_equal_the_naive_loop(
        self, score: str, words: dict[str, int]
    ) -> None:
        """Incremental scores pick the same pairs, in order, as recounting every round."""
        result = train_tokenizer(iter([corpus_text(words)]), 10_000, model="wordpiece",
                                 wordpiece_score=score)
        assert result.merges == naive_wordpiece(words, 400, score)


class TestRealText:
    @pytest.mark.parametrize("score", WORDPIECE_SCORES)
    def test_wordpiece_on_real_words(self, score: str) -> None:
        """A real word distribution (most pairs parked under "gain"): 200 merges as naive."""
        path = Path(__file__).resolve().parents[2] / "fixtures" / "corpora" / "corpus.en"
        text = "\n".join(path.read_text(encoding="utf-8").splitlines()[:200])
        words: dict[str, int] = {}
        for word in _BertWords()(text):
            words[word] = words.get(word, 0) + 1
        alphabet = {c if i == 0 else "##" + c for w in words for i, c in enumerate(w)}
        result = train_tokenizer(iter([text]), 1 + len(alphabet) + 200, model="wordpiece",
                                 wordpiece_score=score)
        assert result.merges == naive_wordpiece(words, 200, score)
