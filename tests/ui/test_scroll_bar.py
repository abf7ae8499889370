"""ThumbScrollBar: repainting only the thumb leaves on screen exactly what a full repaint draws."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QApplication, QPlainTextEdit, QWidget

from inspector.ui.scroll_bar import ThumbScrollBar, thumb_scroll_bars


class _PaintedArea(QObject):
    """Records the area of each paint a widget gets."""

    def __init__(self, widget: QWidget) -> None:
        super().__init__()
        self.widget, self.areas, self.on = widget, [], False

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if self.on and obj is self.widget and event.type() == QEvent.Type.Paint:
            self.areas.append(sum(r.width() * r.height() for r in event.region()))
        return False


def test_on_screen_the_bar_is_what_a_full_repaint_draws_after_every_change(qtbot) -> None:  # noqa: ANN001
    host = QWidget()
    qtbot.addWidget(host)
    host.resize(60, 600)
    bar = ThumbScrollBar(Qt.Orientation.Vertical, host)
    bar.setGeometry(20, 10, 14, 580)
    bar.setAutoFillBackground(True)
    bar.setRange(0, 100)
    bar.setPageStep(10)
    host.show()
    QApplication.processEvents()
    paints = _PaintedArea(bar)
    QApplication.instance().installEventFilter(paints)
    changes = [("value", 0), ("value", 100), ("value", 37), ("range", 5), ("page", 200), ("range", 10_000),
               ("value", 9_000), ("page", 1), ("value", 0), ("range", 0), ("range", 50), ("value", 50)]
    try:
        for what, v in changes:
            {"value": bar.setValue, "range": lambda n: bar.setRange(0, n), "page": bar.setPageStep}[what](v)
            paints.on = True  # the repaints the change caused (a grab paints the whole bar)
            QApplication.processEvents()
            paints.on = False
            on_screen = host.screen().grabWindow(host.winId()).toImage().copy(bar.geometry())
            assert on_screen == bar.grab().toImage(), f"after {what} {v}"
    finally:
        QApplication.instance().removeEventFilter(paints)
    whole = bar.width() * bar.height()
    moves = paints.areas[:2]  # 0 -> 100 -> 37 with a short thumb: two short strips each
    assert len(moves) == 2 and max(moves) < whole / 4, "only the thumb's old and new places were repainted"


def test_a_text_box_gets_one_and_keeps_its_policy(qtbot) -> None:  # noqa: ANN001
    edit = QPlainTextEdit()
    qtbot.addWidget(edit)
    thumb_scroll_bars(edit)
    assert isinstance(edit.verticalScrollBar(), ThumbScrollBar)
    assert edit.verticalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAsNeeded
    edit.resize(200, 80)
    edit.show()
    edit.setPlainText("\n".join(f"line {i}" for i in range(100)))
    QApplication.processEvents()
    assert edit.verticalScrollBar().isVisible() and edit.verticalScrollBar().maximum() > 0


def test_a_jump_in_the_event_list_repaints_only_the_thumb_of_its_scroll_bar(shown) -> None:  # noqa: ANN001
    """QTreeView repaints its whole scroll bar on a scroll longer than a page; the event list's
    tree leaves that to the bar, which repaints the thumb's old and new places only."""
    from inspector.ui.panels.events import EventsPanel
    from inspector.ui.synthetic import build_trace

    trace = build_trace(1500, seed=4)  # a long list: a short thumb
    cursor, make = shown
    panel = make(EventsPanel, trace, 500, 600)
    bar = panel.view.verticalScrollBar()
    assert isinstance(bar, ThumbScrollBar)
    cursor.set(1)  # the bar is on screen and painted once
    QApplication.processEvents()
    paints = _PaintedArea(bar)
    QApplication.instance().installEventFilter(paints)
    try:
        for k in (len(trace) - 1, 5, len(trace) // 2):
            before = bar.value()
            cursor.set(k)
            paints.on = True
            QApplication.processEvents()
            paints.on = False
            assert bar.value() != before, "the list scrolled"
            window = panel.window()
            on_screen = window.screen().grabWindow(window.winId()).toImage().copy(
                bar.geometry().translated(bar.parentWidget().mapTo(window, bar.geometry().topLeft()) - bar.geometry().topLeft()))
            assert on_screen == bar.grab().toImage(), f"after the jump to {k}"
    finally:
        QApplication.instance().removeEventFilter(paints)
    whole = bar.width() * bar.height()
    assert paints.areas and max(paints.areas) < whole / 2


def test_under_another_style_every_change_repaints_the_whole_bar(qtbot) -> None:  # noqa: ANN001
    from PySide6.QtWidgets import QStyleFactory

    bar = ThumbScrollBar(Qt.Orientation.Vertical)
    qtbot.addWidget(bar)
    style = QStyleFactory.create("Windows")
    bar.setStyle(style)
    bar.resize(14, 400)
    bar.setRange(0, 100)
    bar.show()
    QApplication.processEvents()
    paints = _PaintedArea(bar)
    QApplication.instance().installEventFilter(paints)
    try:
        paints.on = True
        bar.setValue(60)
        QApplication.processEvents()
    finally:
        QApplication.instance().removeEventFilter(paints)
    assert paints.areas == [bar.width() * bar.height()]


def test_a_message_box_wraps_every_message_to_one_width_whatever_its_length(shown) -> None:  # noqa: ANN001
    """A bar that came and went with the message's length made Qt wrap the new text twice."""
    from inspector.ui.panels.decision import DecisionPanel
    from inspector.ui.panels.diff import DiffPanel
    from inspector.ui.panels.request import RequestPanel
    from inspector.ui.synthetic import build_trace

    trace = build_trace(40, seed=2)
    cursor, make = shown
    request, diff, decision = (make(cls, trace, 700, 500) for cls in (RequestPanel, DiffPanel, DecisionPanel))
    boxes = [request.message_text, diff.before_text, diff.after_text, decision.browser]
    widths = {id(box): set() for box in boxes}
    for text in ("short", "\n".join(f"line {i} of a long message" for i in range(400)), "short again"):
        for box in boxes:
            box.setPlainText(text)
        QApplication.processEvents()
        for box in boxes:
            widths[id(box)].add(box.viewport().width())
    assert all(len(w) == 1 for w in widths.values())
