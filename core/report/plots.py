"""The report as a figure (PNG or SVG by the file's suffix), drawn with matplotlib's Agg.

One figure, one panel per section that has data: bytes per token per tokenizer, token cost
per language relative to English, and held-out tokens against vocabulary size. matplotlib is
the optional ``plot`` extra (``pip install 'tokend[plot]'``); only this module imports it.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from tokend.core.errors import FailedPrecondition, InvalidInput
from tokend.core.formats import atomic_write_bytes
from tokend.core.report.report import Report

PLOT_FORMATS = ("png", "svg")


def _pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (no display needed), or a clear error."""
    try:
        import matplotlib  # noqa: PLC0415 - optional dependency, loaded only to draw

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        raise FailedPrecondition(
            "plots need matplotlib: pip install 'tokend[plot]' (tables and --json do not)"
        ) from None
    # A fixed salt keeps the SVG's element ids from changing with every run (clip-path ids
    # may still differ between runs; the drawing does not).
    plt.rcParams["svg.hashsalt"] = "tokend-report"
    return plt


def plot_format(path: str | os.PathLike[str]) -> str:
    """``png`` or ``svg`` from the file name, or InvalidInput saying which are known."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in PLOT_FORMATS:
        raise InvalidInput(
            f"plot file {os.fspath(path)!r} must end in .png or .svg (got {suffix or 'none'!r})"
        )
    return suffix


def _color(report: Report, name: str) -> str:
    """One colour per tokenizer, the same in every panel; training kinds take the next ones."""
    return f"C{report.tokenizers.index(name) % 10}"


def _metric_bars(ax: Any, report: Report, values: list[float], label: str, title: str) -> None:
    names = report.tokenizers
    bars = ax.barh(names, values, color=[_color(report, n) for n in names])
    ax.bar_label(bars, labels=[f"{v:.2f}" for v in values], padding=3, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(label, fontsize=9)
    ax.set_title(title, fontsize=10)
    ax.set_xlim(0, max([*values, 1.0]) * 1.25)


def _bytes_per_token(ax: Any, report: Report) -> None:
    _metric_bars(ax, report, [m.bytes_per_token for m in report.metrics],
                 "UTF-8 bytes per token (higher = fewer tokens)", "Bytes per token")


def _tokens_per_word(ax: Any, report: Report) -> None:
    _metric_bars(ax, report, [m.tokens_per_word for m in report.metrics],
                 "tokens per whitespace-separated word", "Tokens per word")
    ax.set_yticklabels([])


def _languages(ax: Any, report: Report) -> None:
    names = report.tokenizers
    codes: list[str] = []
    labels: list[str] = []
    rel: dict[tuple[str, str], float] = {}
    for row in report.languages:
        if row.language not in codes:
            codes.append(row.language)
            labels.append(row.name)
        rel[row.tokenizer, row.language] = row.relative
    height = 0.8 / len(names)
    for i, name in enumerate(names):
        ys = [j + (i - (len(names) - 1) / 2) * height for j in range(len(codes))]
        ax.barh(ys, [rel[name, code] for code in codes], height=height, label=name,
                color=_color(report, name))
    ax.set_yticks(range(len(codes)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.axvline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_xlabel("tokens relative to English for the same sentences (1.0 = parity)")
    ax.set_title("Token cost per language", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")


def _curve(ax: Any, report: Report) -> None:
    kinds: dict[str, list[tuple[int, int]]] = {}
    for point in report.curve:
        kinds.setdefault(point.kind, []).append((point.vocab_size, point.tokens))
    first = len(report.tokenizers)
    for j, (kind, points) in enumerate(kinds.items()):
        xs, ys = zip(*sorted(points), strict=True)
        ax.plot(xs, ys, marker="o", label=f"trained: {kind}", color=f"C{(first + j) % 10}")
        if len(kinds) == 1:  # with several kinds the numbers overlap; the table has them
            for x, y in zip(xs, ys, strict=True):
                ax.annotate(f"{y:,}", (x, y), textcoords="offset points", xytext=(4, 4),
                            fontsize=7)
    for name, tokens in report.heldout_tokens:
        ax.axhline(tokens, linestyle=":", linewidth=1.2, color=_color(report, name),
                   label=f"{name}: {tokens:,}")
    ax.set_xscale("log")
    sizes = sorted({p.vocab_size for p in report.curve})
    ax.set_xticks(sizes, [f"{s:,}" for s in sizes], fontsize=8)
    ax.minorticks_off()
    ylabel = "tokens of the held-out text"
    counts = [p.tokens for p in report.curve if p.tokens] + [t for _, t in report.heldout_tokens]
    if counts and max(counts) > 3 * min(counts):  # e.g. a flat char-level line far above
        from matplotlib.ticker import FuncFormatter, LogLocator  # noqa: PLC0415

        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:,.0f}"))
        ax.minorticks_off()
        ylabel += " (log scale)"
    ax.set_xlabel("vocabulary size (log scale)")
    ax.set_ylabel(ylabel)
    ax.set_title("Tokens vs vocabulary size", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)


def render_plot(report: Report, fmt: str) -> bytes:
    """The figure's bytes in ``fmt`` (``png`` or ``svg``)."""
    if fmt not in PLOT_FORMATS:
        raise InvalidInput(f"plot format {fmt!r} is not one of {', '.join(PLOT_FORMATS)}")
    plt = _pyplot()
    rows: list[list[str]] = [["bytes", "words"]]
    heights = [1.0 + 0.4 * len(report.metrics)]
    if report.languages:
        rows.append(["languages", "languages"])
        heights.append(1.5 + 0.22 * len({r.language for r in report.languages}) *
                       max(1.0, len(report.metrics) / 1.5))
    if report.curve:
        rows.append(["curve", "curve"])
        heights.append(4.5 if len({p.kind for p in report.curve}) == 1 else 6.0)
    fig, axes = plt.subplot_mosaic(rows, figsize=(10, sum(heights) + 0.6 * len(rows)),
                                   height_ratios=heights, layout="constrained")
    draw = {"bytes": _bytes_per_token, "words": _tokens_per_word, "languages": _languages,
            "curve": _curve}
    try:
        for key, ax in axes.items():
            draw[key](ax, report)
        fig.suptitle(f"tokend report: texts from {report.texts_source}", fontsize=11)
        out = io.BytesIO()
        metadata = {"Date": None} if fmt == "svg" else {"Software": None}
        fig.savefig(out, format=fmt, dpi=110, metadata=metadata)
    finally:
        plt.close(fig)
    return out.getvalue()


def write_plot(report: Report, path: str | os.PathLike[str]) -> Path:
    """Draw ``report`` into ``path`` (``.png`` or ``.svg``), written to a temp file then renamed."""
    fmt = plot_format(path)
    data = render_plot(report, fmt)
    target = Path(path)
    atomic_write_bytes(target, data)
    target.chmod(0o644)  # the temp file was private; a picture is for sharing
    return target
