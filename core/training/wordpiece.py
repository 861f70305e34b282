"""WordPiece (BERT): merge the pair that most raises the corpus likelihood.

Text is normalized and split as BERT's uncased tokenizer does (HF ``BertNormalizer``:
clean text, pad CJK characters, lowercase, strip accents; ``BertPreTokenizer``: whitespace
and punctuation). A word's first character is a symbol ``c``, every later one ``##c``. Each
round merges the adjacent pair ``(a, b)`` that most raises the likelihood of the corpus under
a unigram model of the symbols (``score="gain"``, the default: about
``count(ab) * log(N * count(ab) / (count(a) * count(b)))``, exact formula in ``pair_merge``),
or with the highest ``count(ab) / (count(a) * count(b))`` alone (``score="ratio"``, the
textbook shortcut: it favours pairs of rare symbols and needs ~2x the tokens per byte of
HF's trainer, see docs/training.md), or with the highest ``count(ab)`` (``score="count"``,
what HF's ``WordPieceTrainer`` does: it wraps its BPE trainer). Counts are weighted by word
frequency; ties: the pair seen first, as for word-level BPE. The new token is ``a`` followed by
``b`` without ``##``. A merge that yields a token already in the vocabulary merges the symbols
but adds no entry.

Served by HF's WordPiece model (greedy longest match, ``##`` continuation, ``[UNK]`` for a word
with a part outside the vocabulary or longer than 100 characters). Vocabulary ids: special
tokens, the alphabet (the most frequent symbols, ``c`` and ``##c`` forms as they occur), then
the merged tokens in the order learned; ``vocab_size`` counts them all.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from tokend.core.pipeline.normalizers import BertNormalizer
from tokend.core.pipeline.pre_tokenizers import BertPreTokenizer
from tokend.core.training.corpus import CorpusInput
from tokend.core.training.merge_kernel import make_merger
from tokend.core.training.progress import Throttle
from tokend.core.training.result import TrainedTokenizer, tokenizer_json
from tokend.core.training.spec import DEFAULT_WORDPIECE_SCORE
from tokend.core.training.words import count_words

PREFIX = "##"
MAX_INPUT_CHARS_PER_WORD = 100
NORMALIZER = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
              "strip_accents": None, "lowercase": True}


class _BertWords:
    """BERT-uncased normalization + pre-tokenization of one piece of text."""

    def __init__(self) -> None:
        self._norm = BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                    strip_accents=None, lowercase=True)
        self._pre = BertPreTokenizer()

    def __call__(self, piece: str) -> list[str]:
        text = self._norm.normalize(piece)
        return [word for word, _ in self._pre.pre_tokenize([(text, True)])]


def train_wordpiece(
    corpus: CorpusInput,
    vocab_size: int,
    specials: Sequence[str],
    *,
    unk_token: str,
    throttle: Throttle,
    score: str = DEFAULT_WORDPIECE_SCORE,
) -> TrainedTokenizer[str]:
    """Learn WordPiece merges by ``score`` (kinds.WORDPIECE_SCORES) on BERT-normalized words."""
    start = time.perf_counter()
    counted = count_words(corpus, list(specials), _BertWords(), throttle,
                          split_first=True)
    seconds = {"count": time.perf_counter() - start}
    start = time.perf_counter()
    symbols: Counter[str] = Counter()
    for word, n in counted.counts.items():
        for i, c in enumerate(word):
            symbols[PREFIX + c if i else c] += n
    room = max(0, vocab_size - len(specials))
    alphabet = sorted(symbols, key=lambda s: (-symbols[s], s))[:room]
    vocab: dict[str, int] = {text: i for i, text in enumerate(specials)}
    for s in alphabet:
        vocab.setdefault(s, len(vocab))
    tokens: list[str] = list(alphabet)
    sym = {s: i for i, s in enumerate(alphabet)}
    words: list[list[int]] = []
    freqs: list[int] = []
    for word, n in counted.counts.items():
        ids = [sym.get(PREFIX + c if i else c, -1) for i, c in enumerate(word)]
        if -1 not in ids:  # a word with a symbol outside the alphabet is not learned from
            words.append(ids)
            freqs.append(n)
    lengths = [1] * len(tokens)
    merger = make_merger(words, freqs, lengths, score=score,
                         check=lambda: throttle.check("index"))
    seconds["index"] = time.perf_counter() - start
    start = time.perf_counter()
    merges: list[tuple[str, str]] = []
    ran_out = False
    while len(vocab) < vocab_size:
        throttle.check("merge")
        throttle.report("merge", len(vocab), vocab_size)
        best = merger.pop_best()
        if best is None:
            ran_out = True
            break
        a, b = tokens[best[0]], tokens[best[1]]
        merged = a + b.removeprefix(PREFIX)
        merges.append((a, b))
        vocab.setdefault(merged, len(vocab))
        tokens.append(merged)
        lengths.append(lengths[best[0]] + lengths[best[1]])
        merger.merge(best[0], best[1], len(tokens) - 1)
    seconds["merge"] = time.perf_counter() - start
    seconds["total"] = sum(seconds.values())
    throttle.report("merge", len(vocab), vocab_size, force=True)
    special_ids = {text: vocab[text] for text in specials}
    model: dict[str, Any] = {
        "type": "WordPiece", "unk_token": unk_token, "continuing_subword_prefix": PREFIX,
        "max_input_chars_per_word": MAX_INPUT_CHARS_PER_WORD, "vocab": vocab,
    }
    stats = counted.stats(steps=len(merges), stopped_early=ran_out, seconds=seconds)
    return TrainedTokenizer(
        model="wordpiece",
        vocab={i: t for t, i in vocab.items()},
        merges=merges,
        special_tokens=special_ids,
        vocab_size=vocab_size,
        stats=stats,
        tokenizer_json=tokenizer_json(
            model=model, special_tokens=special_ids, normalizer=dict(NORMALIZER),
            pre_tokenizer={"type": "BertPreTokenizer"},
            decoder={"type": "WordPiece", "prefix": PREFIX, "cleanup": True},
        ),
    )
