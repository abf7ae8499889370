"""plots.Scatter: the bounding rect it keeps is always the one pyqtgraph would work out afresh."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QApplication

from inspector.ui import plots


def test_the_kept_bounding_rect_follows_data_zoom_resize_and_symbol_size(qtbot) -> None:  # noqa: ANN001
    widget = plots.make_plot_widget("tokens")
    qtbot.addWidget(widget)
    widget.resize(600, 300)
    widget.show()
    plot = widget.getPlotItem()
    item = plots.Scatter(np.arange(10.0), np.arange(10.0) ** 2, size=8)
    plot.addItem(item)
    QApplication.processEvents()

    def fresh() -> pg.QtCore.QRectF:
        return pg.ScatterPlotItem.boundingRect(item)

    def check(what: str) -> None:
        QApplication.processEvents()
        kept = item.boundingRect()
        assert item.boundingRect() == kept == fresh(), what

    check("first")
    item.setData(np.arange(5.0) * 3, np.arange(5.0) + 100)
    check("new data")
    plot.setXRange(0, 4, padding=0)
    check("zoomed in")
    widget.resize(300, 500)
    check("resized")
    item.setSize(20)
    check("bigger symbols")
    item.clear()
    check("cleared")
    item.addPoints(x=[1.0, 2.0], y=[3.0, 4.0])
    check("points added")
