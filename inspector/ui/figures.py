"""Numbers measured from their glyphs' advances, so drawing one that fits needs no text layout.

Figures (event indices, token counts, durations, deltas) fill whole columns of the event list and
the tables, and most readouts of the counters panel, and they nearly always fit where they are
drawn. Asking ``QFontMetrics.elidedText`` whether one fits lays it out (shapes it) once more
before it is drawn. When a font places every pair of figure characters side by side without
kerning or joining them (checked once per font), a figure's width is the sum of its characters'
advances, and one that fits with a pixel to spare is drawn as it is; anything else is measured
the usual way. A right-aligned figure's width comes from the same sum (``rounded_width``).
"""

from __future__ import annotations

from PySide6.QtGui import QFont, QFontMetrics, QFontMetricsF

#: the characters of a figure
FIGURES = "0123456789.,+-"

_ADVANCES: dict[str, dict[str, float] | None] = {}  # QFont.key() → advances, None when the font kerns figures


def figure_advances(font: QFont) -> dict[str, float] | None:
    """Each of FIGURES' advance in ``font``, or None when some pair of them is not the sum of its
    two advances (kerned or joined): then a figure's width cannot be told without laying it out."""
    key = font.key()
    if key in _ADVANCES:
        return _ADVANCES[key]
    metrics, whole = QFontMetricsF(font), QFontMetrics(font)
    advances: dict[str, float] | None = {c: metrics.horizontalAdvance(c) for c in FIGURES}
    assert advances is not None
    for a in FIGURES:
        for b in FIGURES:
            pair = advances[a] + advances[b]
            if abs(metrics.horizontalAdvance(a + b) - pair) > 1e-3 or whole.horizontalAdvance(a + b) != int(pair + 0.5):
                advances = None
                break
        if advances is None:
            break
    _ADVANCES[key] = advances
    return advances


def rounded_width(text: str, advances: dict[str, float]) -> int:
    """The width ``QFontMetrics.horizontalAdvance`` gives a figure (its advances' sum, rounded as Qt
    rounds: half up), without laying it out; ``text`` must be made of FIGURES."""
    return int(sum(map(advances.__getitem__, text)) + 0.5)


def fits_whole(text: str, advances: dict[str, float] | None, width: float) -> bool:
    """True when ``text`` is a figure that surely fits ``width`` pixels (False: measure it)."""
    if advances is None or not text or text.strip(FIGURES):
        return False
    return sum(map(advances.__getitem__, text)) + 1 <= width
