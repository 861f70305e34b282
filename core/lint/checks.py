"""The per-token checks: holes, partial UTF-8, unreachable tokens, broken special tokens,
round trips. Each adds its findings to a ``LintReport`` and marks itself as run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

from tokend.core.errors import TokendError
from tokend.core.lint.model import Finding, LintReport
from tokend.core.lint.vocab import Vocabulary
from tokend.core.tokenizer import Tokenizer


def check_holes(vocab: Vocabulary, report: LintReport) -> None:
    """Ids below ``n_vocab`` with no token (an embedding row nothing can produce or decode)."""
    for token_id, data in enumerate(vocab.tokens):
        if data is None:
            report.add(Finding("hole", token_id, None, f"id {token_id} has no token"))
    report.checks["hole"] = "ran"


def check_partial_utf8(vocab: Vocabulary, report: LintReport, *, listed: bool) -> set[int]:
    """Tokens whose bytes alone are not valid UTF-8 (normal for byte-level BPE); their ids."""
    partial: set[int] = set()
    texts = vocab.texts
    for token_id, data in vocab.ordinary:
        if token_id not in texts:
            partial.add(token_id)
            report.add(
                Finding("partial-utf8", token_id, data,
                        "bytes of a character split across tokens; not text on their own"),
                listed=listed,
            )
    report.checks["partial-utf8"] = "ran"
    return partial


CHECK_EVERY = 2048  # tokens encoded between two calls of a lint's ``check``


def check_unreachable(tokenizer: Tokenizer, vocab: Vocabulary, report: LintReport,
                      check: Callable[[], None] | None = None) -> set[int]:
    """Ordinary tokens whose own text does not encode back to that one id; their ids.

    Only for vocabularies whose tokens stand alone (byte-level BPE): a WordPiece ``##ing`` or a
    SentencePiece piece without ``▁`` means something only inside a word. ``check`` is called
    every ``CHECK_EVERY`` tokens (it raises to stop: a server's deadline).
    """
    if not vocab.standalone:
        report.checks["unreachable"] = (
            "skipped: tokens of this family are word pieces, not standalone texts"
        )
        return set()
    unreachable: set[int] = set()
    encode = tokenizer.encode_ordinary
    for n, (token_id, text) in enumerate(vocab.texts.items()):
        if check is not None and n % CHECK_EVERY == 0:
            check()
        ids = encode(text)
        if ids != [token_id]:
            unreachable.add(token_id)
            report.add(Finding(
                "unreachable", token_id, text.encode("utf-8"),
                f"its text encodes to {_ids_shown(ids)}, so no text produces id {token_id}",
                {"encodes_to": ids[:16]},
            ))
    report.checks["unreachable"] = "ran"
    return unreachable


def check_specials(tokenizer: Tokenizer, vocab: Vocabulary, report: LintReport) -> None:
    """Special tokens: two on one id (error); produced by ordinary text, changed by the
    normalizer, holding whitespace or non-ASCII characters (warnings)."""
    by_id: dict[int, list[str]] = defaultdict(list)
    for text, token_id in vocab.specials.items():
        by_id[token_id].append(text)
    for token_id, texts in sorted(by_id.items()):
        if len(texts) > 1:
            names = ", ".join(repr(t) for t in sorted(texts))
            report.add(Finding(
                "duplicate-special-id", token_id, None,
                f"special tokens {names} share id {token_id}: decoding it cannot tell them apart",
                {"texts": sorted(texts)},
            ))
    for text, token_id in sorted(vocab.specials.items(), key=lambda item: item[1]):
        data = text.encode("utf-8", "surrogatepass")
        try:
            ids = tokenizer.encode_ordinary(text)
        except TokendError:
            ids = []
        if ids == [token_id] or (len(ids) == 1 and vocab.tokens[ids[0]] == data):
            report.add(Finding(
                "special-in-text", token_id, data,
                f"ordinary text {text!r} encodes to {_ids_shown(ids)}: user text can yield it",
            ))
        if (vocab.normalize is not None and text in vocab.normalized_specials
                and vocab.normalize(text) != text):
            report.add(Finding(
                "special-normalized", token_id, data,
                f"the normalizer turns {text!r} into {vocab.normalize(text)!r} before special "
                "tokens are matched",
            ))
        if any(c.isspace() for c in text):
            report.add(Finding("special-whitespace", token_id, data,
                               f"{text!r} holds whitespace; pretokenizers may split it"))
        if not text.isascii():
            report.add(Finding("special-non-ascii", token_id, data,
                               f"{text!r} holds non-ASCII characters; servers have dropped such"
                               " tokens"))
    for kind in ("duplicate-special-id", "special-in-text", "special-whitespace",
                 "special-non-ascii"):
        report.checks[kind] = "ran"
    report.checks["special-normalized"] = (
        "ran" if vocab.normalize is not None else "skipped: no normalizer"
    )


def check_round_trip(tokenizer: Tokenizer, texts: Iterable[str], report: LintReport) -> None:
    """Texts that do not come back from ``decode(encode(text))`` (lowercasing, unknown tokens)."""
    for text in texts:
        back = tokenizer.decode(tokenizer.encode_ordinary(text))
        if back != text:
            report.add(Finding(
                "round-trip", None, None, "decode(encode(text)) differs from the text",
                {"text": text[:80], "decoded": back[:80]},
            ))
    report.checks["round-trip"] = "ran"


def _ids_shown(ids: list[int]) -> str:
    return repr(ids) if len(ids) <= 8 else f"{ids[:8]!r}[... {len(ids)} ids]"
