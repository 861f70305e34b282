"""The report as terminal tables: one per section, columns aligned, figures rounded."""

from __future__ import annotations

from collections.abc import Sequence

from tokend.core.report.report import Report


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Aligned columns: the first left-aligned, the rest right-aligned (they hold numbers).

    >>> print(table(["a", "n"], [["x", "1"], ["yy", "10"]]))
    a    n
    --  --
    x    1
    yy  10
    """
    widths = [max(len(str(cell)) for cell in col) for col in zip(header, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        parts = [
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def format_report(report: Report) -> str:
    """Every section of ``report`` that has rows, as text for a terminal."""
    sections = [f"Tokenizers on {report.texts_source}:", table(
        ["tokenizer", "vocab", "tokens", "bytes/token", "chars/token", "tokens/word",
         "vocab used"],
        [[m.tokenizer, f"{m.n_vocab:,}", f"{m.tokens:,}", f"{m.bytes_per_token:.2f}",
          f"{m.chars_per_token:.2f}", f"{m.tokens_per_word:.2f}", f"{m.vocab_used:.2%}"]
         for m in report.metrics],
    )]
    if report.languages:
        names = report.tokenizers
        by_lang: dict[str, dict[str, float]] = {}
        tokens: dict[str, dict[str, int]] = {}
        labels: dict[str, str] = {}
        for row in report.languages:
            by_lang.setdefault(row.language, {})[row.tokenizer] = row.relative
            tokens.setdefault(row.language, {})[row.tokenizer] = row.tokens
            labels[row.language] = f"{row.name} ({row.language})"
        sections += ["", "Token cost relative to English, same meaning (tokens in brackets):",
                     table(["language", *names],
                           [[labels[code], *(f"{by_lang[code][n]:.2f}x ({tokens[code][n]})"
                                             for n in names)]
                            for code in by_lang])]
    if report.curve:
        sections += ["", "Held-out tokens by vocabulary size:", table(
            ["kind", "vocab size", "trained", "tokens", "bytes/token", "seconds"],
            [[p.kind, f"{p.vocab_size:,}", f"{p.n_vocab:,}", f"{p.tokens:,}",
              f"{p.bytes_per_token:.2f}", f"{p.seconds:.1f}" if p.seconds else "-"]
             for p in report.curve],
        )]
        if report.heldout_tokens:
            sections.append("compared on the same held-out text: " + ", ".join(
                f"{name} {tokens:,}" for name, tokens in report.heldout_tokens))
    if report.lint:
        names = [name for name, _ in report.lint]
        kinds = list(dict.fromkeys(k for _, counts in report.lint for k in counts))
        sections += ["", "Lint findings (tokend registry lint NAME for the list):", table(
            ["finding", *names],
            [[kind, *(f"{dict(report.lint)[n].get(kind, 0):,}" if kind in dict(report.lint)[n]
                      else "-" for n in names)] for kind in kinds],
        )]
    return "\n".join(sections)
