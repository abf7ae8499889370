"""Figures measured from their glyphs' advances: only ever a figure that surely fits."""

from __future__ import annotations

from PySide6.QtGui import QFont, QFontMetrics, QFontMetricsF

from inspector.ui.figures import FIGURES, figure_advances, fits_whole, rounded_width


def test_the_app_fonts_place_figures_side_by_side(qapp) -> None:  # noqa: ANN001
    for bold in (False, True):
        font = QFont(qapp.font())
        font.setBold(bold)
        advances = figure_advances(font)
        assert advances is not None and set(advances) == set(FIGURES)
        metrics = QFontMetricsF(font)
        for text in ("1,234,567", "+48.25", "-0.5", "2026"):
            assert abs(sum(advances[c] for c in text) - metrics.horizontalAdvance(text)) < 1e-3


def test_only_a_figure_that_fits_with_room_to_spare_is_taken_whole(qapp) -> None:  # noqa: ANN001
    font = QFont(qapp.font())
    advances = figure_advances(font)
    width = QFontMetricsF(font).horizontalAdvance("12,345")
    assert fits_whole("12,345", advances, width + 1)
    assert not fits_whole("12,345", advances, width + 0.5), "within a pixel: measured the usual way"
    assert not fits_whole("12,345 tok", advances, 1000), "not a figure"
    assert not fits_whole("", advances, 1000)
    assert not fits_whole("12", None, 1000), "a font that kerns figures: always measured"


def test_a_figure_s_width_is_the_one_qt_measures(qapp) -> None:  # noqa: ANN001
    """Right-aligned numbers are placed by this width: it must be QFontMetrics' to the pixel."""
    import random

    rng = random.Random(5)
    texts = ["", "0", "7", "1.5", "-3", "+12"] + [f"{rng.randrange(10 ** rng.randrange(1, 9)):,}" for _ in range(300)]
    texts += [f"{rng.random() * 1000:.1f}" for _ in range(100)]
    for bold in (False, True):
        font = QFont(qapp.font())
        font.setBold(bold)
        advances = figure_advances(font)
        assert advances is not None
        metrics = QFontMetrics(font)
        for text in texts:
            assert rounded_width(text, advances) == metrics.horizontalAdvance(text), (bold, text)
