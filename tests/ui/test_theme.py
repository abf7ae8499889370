"""theme.TextLine: readouts that never re-lay out the window, and never lose text silently."""

from __future__ import annotations

from inspector.ui import theme

LONG = "Prefix broke at message 3 of 50 (was 'tool' key 1a2b3c4d…, now 'user' key 5e6f7a8b…); " * 4


def _drawn(qtbot, lines: int, text: str, width: int = 260) -> theme.TextLine:
    line = theme.TextLine(lines)
    qtbot.addWidget(line)
    line.resize(width, line.height())
    line.setText(text)
    line.grab()  # paints, as showing it would
    return line


def test_text_that_does_not_fit_ends_in_an_ellipsis_and_is_the_tooltip(qtbot):
    for lines in (1, 3):
        line = _drawn(qtbot, lines, LONG + "<b>the end</b>")
        drawn, cut = line._fitted(line.width())
        assert cut and len(drawn) == lines and drawn[-1].endswith("…")
        assert all(line.fontMetrics().horizontalAdvance(d) <= line.width() for d in drawn)
        tip = line.toolTip()
        assert "the end" in tip and "&lt;b&gt;" in tip  # the whole text, shown literally


def test_text_that_fits_is_drawn_whole_with_no_tooltip(qtbot):
    line = _drawn(qtbot, 3, "read 1,200 of 3,400 tokens (messages 0–4)\nwrote 2,200", width=600)
    drawn, cut = line._fitted(line.width())
    assert not cut and drawn == ["read 1,200 of 3,400 tokens (messages 0–4)", "wrote 2,200"]
    assert line.toolTip() == ""
    line.setText(LONG)
    line.grab()
    assert line.toolTip()
    line.setText("short")
    line.grab()
    assert line.toolTip() == ""  # the tooltip follows the text


def test_a_tooltip_the_caller_set_is_kept(qtbot):
    line = theme.TextLine(1)
    qtbot.addWidget(line)
    line.resize(80, line.height())
    line.setToolTip("what this value means")
    line.setText(LONG)
    line.grab()
    assert line.toolTip() == "what this value means"


def test_figures_are_fitted_exactly_as_elided_text_fits_them(qtbot):
    from PySide6.QtCore import Qt

    line = _drawn(qtbot, 1, "0")
    metrics = line.fontMetrics()
    for text in ("0", "+280", "-1", "9,529", "121,600", "96.0", "+1,234,567"):
        line.setText(text)
        for width in range(0, metrics.horizontalAdvance(text) + 12):
            expected = metrics.elidedText(text, Qt.TextElideMode.ElideRight, width)
            assert line._fitted(width) == ([expected], expected != text), (text, width)


def test_a_font_change_fits_the_text_again(qtbot):
    from PySide6.QtGui import QFont

    line = _drawn(qtbot, 1, LONG)
    before, _ = line._fitted(line.width())
    bigger = QFont(line.font())
    bigger.setPointSize(bigger.pointSize() * 2)
    line.setFont(bigger)
    after, cut = line._fitted(line.width())
    assert cut and len(after[0]) < len(before[0]), "cut for the font it is now drawn in"
    assert line.fontMetrics().horizontalAdvance(after[0]) <= line.width()
