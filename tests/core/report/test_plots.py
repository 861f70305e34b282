"""Plots: a PNG and an SVG are written, non-empty, parseable, and the SVG is reproducible."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tokend.core import get_encoding
from tokend.core.errors import InvalidInput
from tokend.core.report import CurvePoint, build_report
from tokend.core.report.plots import render_plot, write_plot

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def report():  # type: ignore[no-untyped-def]
    curve = [CurvePoint("byte-bpe", s, s, 1000 // (i + 1), 4000, 0.0)
             for i, s in enumerate([300, 500, 1000])]
    return build_report([(n, get_encoding(n)) for n in ("o200k_base", "r50k_base")], curve=curve)


class TestPlots:
    def test_png_is_written_with_a_png_header(self, report, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
        path = write_plot(report, tmp_path / "r.png")
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC)
        assert len(data) > 10_000

    def test_svg_parses_and_shows_every_panel(self, report, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
        """Four panels (axes) with their titles."""
        path = write_plot(report, tmp_path / "r.svg")
        root = ET.parse(path).getroot()
        assert root.tag == f"{SVG}svg"
        axes = [g for g in root.iter(f"{SVG}g") if g.get("id", "").startswith("axes_")]
        assert len(axes) == 4
        text = path.read_text("utf-8")
        for title in ("Bytes per token", "Tokens per word", "Token cost per language",
                      "Tokens vs vocabulary size"):
            assert title in text

    def test_only_panels_with_data_are_drawn(self, tmp_path: Path) -> None:
        small = build_report([("o200k_base", get_encoding("o200k_base"))], ["hi"],
                             languages=False)
        root = ET.fromstring(render_plot(small, "svg"))
        axes = [g for g in root.iter(f"{SVG}g") if g.get("id", "").startswith("axes_")]
        assert len(axes) == 2

    def test_unknown_suffix_is_refused(self, report, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
        with pytest.raises(InvalidInput, match=r"must end in \.png or \.svg"):
            write_plot(report, tmp_path / "r.pdf")
        assert not (tmp_path / "r.pdf").exists()
