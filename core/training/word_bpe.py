"""Word-level BPE with an end-of-word marker (Sennrich et al. 2016, Algorithm 1).

Training follows the paper's reference code: words are split on whitespace and punctuation
(HF's ``Whitespace`` pre-tokenizer), each word becomes its characters plus a separate
``</w>`` symbol, and each round merges the most frequent adjacent pair (weighted by word
counts; ties: the pair seen first). ``merges`` lists those merges as learned, e.g.
``(e, s), (es, t), (est, </w>)``.

Serving uses HF's BPE model with ``end_of_word_suffix: "</w>"``, where the marker is glued
to a word's last character from the start (``t</w>``) instead of being a symbol of its own.
The tokenizer.json therefore holds the learned merges translated into that form: a merge
``(a, b)`` also yields ``(a, b</w>)`` (the same merge at the end of a word) unless ``(b, </w>)``
was learned before it, and ``(x, </w>)`` itself needs no entry. A served word is then the
paper's segmentation with a trailing ``</w>`` joined to the token before it. Vocabulary
ids: special tokens, the alphabet (most frequent characters first), the alphabet with
``</w>``, then each new token of the translated merges; ``vocab_size`` counts them all.

A merge adds no id (``(x, </w>)``), one, or two (``ab`` and ``ab</w>``). When one id is left
and the best pair needs two, that pair is left unmerged and the best pair that fits is
taken instead (greedy under the size limit), so the vocabulary has exactly ``vocab_size``
entries unless the corpus runs out of pairs; every listed merge is exported whole.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from tokend.core.pipeline.pre_tokenizers import Whitespace
from tokend.core.training.corpus import CorpusInput
from tokend.core.training.merge_kernel import make_merger
from tokend.core.training.progress import Throttle
from tokend.core.training.result import TrainedTokenizer, tokenizer_json
from tokend.core.training.words import count_words

EOW = "</w>"


def _words(piece: str, _pre: Whitespace = Whitespace()) -> list[str]:  # noqa: B008 - shared
    return [text for text, _ in _pre.pre_tokenize([(piece, True)])]


def train_word_bpe(
    corpus: CorpusInput,
    vocab_size: int,
    specials: Sequence[str],
    *,
    unk_token: str,
    throttle: Throttle,
) -> TrainedTokenizer[str]:
    """Learn the paper's merges on the corpus' words; export them in HF's suffix form."""
    start = time.perf_counter()
    counted = count_words(corpus, list(specials), _words, throttle, split_first=True)
    seconds = {"count": time.perf_counter() - start}
    start = time.perf_counter()
    chars: Counter[str] = Counter()
    for word, n in counted.counts.items():
        for c in word:
            chars[c] += n
    room = max(0, (vocab_size - len(specials)) // 2)  # each character also needs c</w>
    alphabet = sorted(chars, key=lambda c: (-chars[c], ord(c)))[:room]
    tokens: list[str] = [*alphabet, EOW]  # paper symbols: id -> string
    sym = {c: i for i, c in enumerate(alphabet)}
    eow = len(alphabet)
    words: list[list[int]] = []
    freqs: list[int] = []
    for word, n in counted.counts.items():
        ids = [sym.get(c, -1) for c in word]
        if -1 not in ids:  # a word with a character outside the alphabet is not learned from
            words.append([*ids, eow])
            freqs.append(n)
    lengths = [1] * len(tokens)
    merger = make_merger(words, freqs, lengths, score="count",
                         check=lambda: throttle.check("index"))
    hf_vocab: dict[str, int] = {text: i for i, text in enumerate(specials)}
    for c in alphabet:
        hf_vocab.setdefault(c, len(hf_vocab))
    for c in alphabet:
        hf_vocab.setdefault(c + EOW, len(hf_vocab))
    hf_merges: list[tuple[str, str]] = []
    hf_pairs: set[tuple[str, str]] = set()
    fused: set[str] = set()  # tokens t whose merge (t, </w>) has been learned
    merges: list[tuple[str, str]] = []
    seconds["index"] = time.perf_counter() - start
    start = time.perf_counter()
    while True:
        throttle.check("merge")
        throttle.report("merge", len(hf_vocab), vocab_size)
        best = merger.pop_best()
        if best is None:
            break
        a, b = tokens[best[0]], tokens[best[1]]
        wanted = _translate(a, b, fused, hf_vocab)
        wanted = [p for p in wanted
                  if p not in hf_pairs and p[0] in hf_vocab and p[1] in hf_vocab]
        new_tokens = {x + y for x, y in wanted if x + y not in hf_vocab}
        if len(hf_vocab) + len(new_tokens) > vocab_size:
            if len(hf_vocab) < vocab_size:
                # subtle: one id is left and this merge needs two (ab and ab</w>): leave it
                # unmerged and take the best pair that fits, so the vocabulary comes out full
                continue
            break
        for x, y in wanted:
            hf_pairs.add((x, y))
            hf_merges.append((x, y))
            hf_vocab.setdefault(x + y, len(hf_vocab))
        if b == EOW:
            fused.add(a)
        merges.append((a, b))
        tokens.append(a + b)
        lengths.append(lengths[best[0]] + lengths[best[1]])
        merger.merge(best[0], best[1], len(tokens) - 1)
    seconds["merge"] = time.perf_counter() - start
    seconds["total"] = sum(seconds.values())
    throttle.report("merge", len(hf_vocab), vocab_size, force=True)
    special_ids = {text: hf_vocab[text] for text in specials}
    model: dict[str, Any] = {
        "type": "BPE", "dropout": None, "unk_token": unk_token,
        "continuing_subword_prefix": None, "end_of_word_suffix": EOW, "fuse_unk": False,
        "byte_fallback": False, "ignore_merges": False, "vocab": hf_vocab,
        "merges": [[x, y] for x, y in hf_merges],
    }
    stats = counted.stats(steps=len(merges), stopped_early=len(hf_vocab) < vocab_size,
                          seconds=seconds)
    return TrainedTokenizer(
        model="word-bpe",
        vocab={i: t for t, i in hf_vocab.items()},
        merges=merges,
        special_tokens=special_ids,
        vocab_size=vocab_size,
        stats=stats,
        tokenizer_json=tokenizer_json(
            model=model, special_tokens=special_ids, pre_tokenizer={"type": "Whitespace"},
            decoder={"type": "BPEDecoder", "suffix": EOW},
        ),
    )


def _translate(
    a: str, b: str, fused: set[str], hf_vocab: dict[str, int]
) -> list[tuple[str, str]]:
    """The HF-form merges of the paper's merge ``(a, b)`` (see the module docstring).

    >>> _translate("es", "t", set(), {"t</w>": 0})
    [('es', 't'), ('es', 't</w>')]
    >>> _translate("est", "</w>", set(), {})
    []
    """
    if b == EOW:
        return []  # the marker is already glued to the last character when serving
    out = [(a, b)]
    if not b.endswith(EOW) and b not in fused and b + EOW in hf_vocab:
        out.append((a, b + EOW))
    return out
