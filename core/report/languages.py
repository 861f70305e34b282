"""What each language costs in tokens, relative to English, for the same meaning.

The shipped parallel corpus (``tokend/core/data/parallel.json``, written for tokend, under the
project's licence) holds the same five sentences in 20 languages. A tokenizer's cost for a
language is its token count over that language's sentences divided by the count for English:
1.0 is parity, 2.0 means the same message takes twice the tokens (and twice the price and
context window). Petrov et al. (2023) call this the tokenization premium.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from tokend.core.errors import CorruptData, InvalidInput
from tokend.core.report.metrics import encode_text
from tokend.core.tokenizer import Tokenizer

PARALLEL_FORMAT = "tokend-parallel-corpus-1"
REFERENCE_LANGUAGE = "en"


@dataclass(frozen=True)
class Language:
    """One language's sentences in a parallel corpus."""

    code: str  # ISO 639-1, e.g. "de"
    name: str  # English name, e.g. "German"
    sentences: tuple[str, ...]


@dataclass(frozen=True)
class ParallelCorpus:
    """Sentences with the same meaning in several languages; ``languages[0]`` is the reference."""

    title: str
    licence: str
    languages: tuple[Language, ...]

    def language(self, code: str) -> Language:
        """The language with this code, or InvalidInput listing the codes there are."""
        for lang in self.languages:
            if lang.code == code:
                return lang
        codes = ", ".join(lang.code for lang in self.languages)
        raise InvalidInput(f"language {code!r} is not in the parallel corpus; it has {codes}")


def load_parallel_corpus(path: str | Path | None = None) -> ParallelCorpus:
    """Read a parallel corpus file (default: the shipped one), checking its shape.

    Every language must have as many sentences as the first; errors name the file and entry.
    """
    if path is None:
        raw = resources.files("tokend.core.data").joinpath("parallel.json").read_bytes()
        source = "tokend/core/data/parallel.json"
    else:
        source = str(path)
        try:
            raw = Path(path).read_bytes()
        except OSError as exc:
            raise InvalidInput(
                f"{source}: cannot read the parallel corpus: {exc.strerror}"
            ) from None
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptData(f"{source}: not a JSON parallel corpus: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != PARALLEL_FORMAT:
        raise CorruptData(f"{source}: 'format' must be {PARALLEL_FORMAT!r}")
    entries = data.get("languages")
    if not isinstance(entries, list) or not entries:
        raise CorruptData(f"{source}: 'languages' must be a non-empty list")
    languages: list[Language] = []
    for i, entry in enumerate(entries):
        where = f"{source}: languages[{i}]"
        if not isinstance(entry, dict):
            raise CorruptData(f"{where} must be an object")
        code, name, sentences = entry.get("code"), entry.get("name"), entry.get("sentences")
        if not isinstance(code, str) or not code or not isinstance(name, str):
            raise CorruptData(f"{where} needs a 'code' and a 'name' (strings)")
        if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
            raise CorruptData(f"{where} ({code}): 'sentences' must be a list of strings")
        if languages and len(sentences) != len(languages[0].sentences):
            raise CorruptData(
                f"{where} ({code}) has {len(sentences)} sentences, the reference "
                f"{languages[0].code!r} has {len(languages[0].sentences)}: a parallel corpus "
                "needs the same sentences in every language"
            )
        if any(lang.code == code for lang in languages):
            raise CorruptData(f"{where}: language {code!r} appears twice")
        languages.append(Language(code, name, tuple(sentences)))
    return ParallelCorpus(
        title=str(data.get("title", "")),
        licence=str(data.get("licence", "")),
        languages=tuple(languages),
    )


@dataclass(frozen=True)
class LanguageCost:
    """One tokenizer on one language: its tokens and their ratio to the reference language's."""

    tokenizer: str
    language: str  # code
    name: str
    bytes: int  # UTF-8 bytes of the language's sentences
    tokens: int
    relative: float  # tokens / the reference language's tokens with the same tokenizer

    @property
    def bytes_per_token(self) -> float:
        """UTF-8 bytes per token for this language; 0 with no tokens."""
        return self.bytes / self.tokens if self.tokens else 0.0

    def to_dict(self) -> dict[str, object]:
        """Plain JSON-ready dict."""
        return {
            "tokenizer": self.tokenizer,
            "language": self.language,
            "name": self.name,
            "bytes": self.bytes,
            "tokens": self.tokens,
            "relative": self.relative,
            "bytes_per_token": self.bytes_per_token,
        }


def language_costs(
    tokenizers: Sequence[tuple[str, Tokenizer]],
    corpus: ParallelCorpus | None = None,
    *,
    reference: str = REFERENCE_LANGUAGE,
) -> list[LanguageCost]:
    """Tokens per language for each (name, tokenizer), relative to ``reference`` (English).

    Rows come language by language in the corpus's order, and within a language in the order
    of ``tokenizers``.
    """
    corpus = load_parallel_corpus() if corpus is None else corpus
    ref_lang = corpus.language(reference)
    counts: dict[tuple[str, str], int] = {}
    for name, tok in tokenizers:
        for lang in corpus.languages:
            counts[name, lang.code] = sum(len(encode_text(tok, s)) for s in lang.sentences)
    rows: list[LanguageCost] = []
    for lang in corpus.languages:
        n_bytes = sum(len(s.encode("utf-8")) for s in lang.sentences)
        for name, _ in tokenizers:
            base = counts[name, ref_lang.code]
            tokens = counts[name, lang.code]
            rows.append(LanguageCost(
                tokenizer=name,
                language=lang.code,
                name=lang.name,
                bytes=n_bytes,
                tokens=tokens,
                relative=tokens / base if base else 0.0,
            ))
    return rows
