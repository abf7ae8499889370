"""Scroll bars that repaint only their thumb when the thumb is all that changed.

``QAbstractSlider`` repaints the whole bar on every change of value, range or page step, and a
cursor move changes them on every list it refills: the event list's bar alone is as tall as the
window, and the bars were 6 % of a random jump's instructions, most of it Fusion's gradient down
the full length of each groove. In Fusion
nothing but the thumb depends on those three (the groove, its edge and the arrow buttons look the
same at any value, the first and last included), so ``ThumbScrollBar`` repaints where the thumb
was last drawn and where it is now, each grown by the thumb's outline. Anything else (a resize,
showing the bar, a new style or palette, hovering, pressing) repaints as Qt decides, and under
any other style every change repaints the whole bar, as before. The painted lists and tables use
it; a short bar whose thumb is most of its length (a message box's) gains less than asking the
style where the thumb is costs, so those keep Qt's.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QPaintEvent
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QAbstractSlider,
    QScrollBar,
    QStyle,
    QStyleOptionSlider,
    QWidget,
)

#: pixels the thumb's painting reaches past its rectangle (its outline), and a pixel to spare
OUTLINE = 2


class ThumbScrollBar(QScrollBar):
    """A QScrollBar whose value, range and page-step changes repaint its old and new thumb only."""

    def __init__(self, orientation: Qt.Orientation, parent: QWidget | None = None) -> None:
        super().__init__(orientation, parent)
        self._drawn: QRect | None = None  # the thumb as last painted; None: nothing painted yet
        self._option = QStyleOptionSlider()  # filled afresh for each question to the style

    def thumb_rect(self) -> QRect:
        """Where the style puts the thumb for the bar's present state."""
        option = self._option
        self.initStyleOption(option)
        return self.style().subControlRect(QStyle.ComplexControl.CC_ScrollBar, option,
                                           QStyle.SubControl.SC_ScrollBarSlider, self)

    def sliderChange(self, change: QAbstractSlider.SliderChange) -> None:  # noqa: N802 - Qt override
        drawn = self._drawn
        if drawn is None or not self.isVisible() or change == QAbstractSlider.SliderChange.SliderOrientationChange:
            super().sliderChange(change)  # hidden: nothing to repaint (shown again, it paints whole)
            return
        self.update(drawn.adjusted(-OUTLINE, -OUTLINE, OUTLINE, OUTLINE))
        self.update(self.thumb_rect().adjusted(-OUTLINE, -OUTLINE, OUTLINE, OUTLINE))

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        super().paintEvent(event)
        # None under another style: then every change repaints the whole bar
        self._drawn = self.thumb_rect() if self.style().name().lower() == "fusion" else None


def thumb_scroll_bars(area: QAbstractScrollArea) -> None:
    """Give ``area`` a vertical ThumbScrollBar (it owns and shows it as it did the stock one)."""
    area.setVerticalScrollBar(ThumbScrollBar(Qt.Orientation.Vertical))


def steady_scroll_bar(box: QAbstractScrollArea) -> None:
    """Keep a wrapped text box's vertical bar shown, so moving to a message of another length never
    changes the width its text is wrapped to: a bar that came or went made Qt wrap the whole new
    message a second time, which was a fifth of random jumps and the slowest of them."""
    box.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
