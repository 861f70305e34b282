"""The Unigram lattice: the compiled Viterbi and its pure-Python twin give the same paths, and
a real Unigram file gives HF's ids on either (core/pipeline/lattice.py)."""

from __future__ import annotations

import functools
from typing import Any

from family_texts import SAMPLES, random_text, real_file, tricky_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokend.core.engine import _compiled
from tokend.core.formats.tokenizer_json import load_tokenizer_json
from tokend.core.pipeline.lattice import PyUnigramLattice, f32

assert _compiled is not None, "these tests need the compiled engine (scripts/setup.sh builds it)"

ALPHABET = "ab▁é中\U0001f389"
pieces = st.text(alphabet=ALPHABET, min_size=0, max_size=4)
# few distinct scores, so ties (decided by the order paths are met) are common
scores = st.sampled_from([-1.0, -2.0, -2.5, -3.0, -0.5, -7.25])
big_scores = st.sampled_from([-30000.7, -45000.123, -2.1716766, -4.3433533, -8.6867065])


class TestTwins:
    @settings(max_examples=300, deadline=None)
    @given(
        vocab=st.lists(st.tuples(pieces, scores), max_size=25),
        word=st.text(alphabet=ALPHABET + "xy", max_size=24),
        unk_score=st.sampled_from([-11.0, -3.0, -1.0]),
    )
    def test_compiled_and_python_paths_are_identical(
        self, vocab: list[tuple[str, float]], word: str, unk_score: float
    ) -> None:
        """Random vocabularies (duplicates, empty pieces, tied scores) and words: same path,
        and it covers the word from 0 to its end."""
        names, values = [p for p, _ in vocab], [s for _, s in vocab]
        ours = _compiled.UnigramLattice(names, values, unk_score).best_path(word)
        twin = PyUnigramLattice(names, values, unk_score).best_path(word)
        assert ours == twin
        starts, ends = ours[0::3], ours[1::3]
        assert starts == [0, *ends[:-1]] if word else ours == []
        assert (ends[-1] if ends else 0) == len(word)

    @settings(max_examples=300, deadline=None)
    @given(
        vocab=st.lists(st.tuples(pieces, st.one_of(scores, big_scores)), max_size=25),
        word=st.text(alphabet=ALPHABET + "xy", max_size=40),
        unk_score=st.sampled_from([-11.0, -3.0, -40000.5]),
    )
    def test_float32_paths_are_identical(
        self, vocab: list[tuple[str, float]], word: str, unk_score: float
    ) -> None:
        """SentencePiece's arithmetic (float sums, path scores rebased past 1e5, which the
        big scores reach within a few characters): same path on both."""
        names, values = [p for p, _ in vocab], [f32(s) for _, s in vocab]
        ours = _compiled.UnigramLattice(names, values, unk_score, True).best_path(word)
        twin = PyUnigramLattice(names, values, unk_score, True).best_path(word)
        assert ours == twin

    def test_float32_keeps_float_rounding(self) -> None:
        """A tie that only float makes: a + b = -1.00000001 beats ab = -1.00000003 in f64,
        both are -1.0 in float, so SentencePiece's mode keeps the first candidate met (ab)."""
        names, values = ["a", "b", "ab"], [-1.0, -1e-8, -1.00000003]
        for make in (_compiled.UnigramLattice, PyUnigramLattice):
            assert make(names, [f32(v) for v in values], -11.0, True).best_path("ab") == [0, 2, 2]
            assert make(names, values, -11.0).best_path("ab") == [0, 1, 0, 1, 2, 1]


@functools.cache
def unigram_on(engine: str) -> tuple[Any, Any]:
    """The real Unigram file loaded while ``engine`` is the default, and HF's tokenizer."""
    from tokenizers import Tokenizer

    data = real_file("mon-unigram.json").read_bytes()
    ref = Tokenizer.from_str(data.decode("utf-8"))
    ref.no_truncation()
    ref.no_padding()
    return load_tokenizer_json(data, name=f"unigram-{engine}"), ref


class TestRealUnigram:
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(text=st.one_of(random_text, tricky_text))
    def test_both_engines_match_hf(self, each_engine: str, text: str) -> None:
        """mon-tokenizer (Unigram, byte fallback): HF's ids and offsets on either lattice."""
        ours, ref = unigram_on(each_engine)
        expected_type = _compiled.UnigramLattice if each_engine == "compiled" \
            else PyUnigramLattice
        assert isinstance(ours.model._lattice, expected_type)
        for sample in [text, *SAMPLES.values()]:
            hf = ref.encode(sample, add_special_tokens=False)
            assert ours.encode(sample, allowed_special="all") == hf.ids, sample
            assert ours.encode_with_offsets(sample, allowed_special="all") == (hf.ids,
                                                                               hf.offsets)
