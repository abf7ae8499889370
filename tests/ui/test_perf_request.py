"""Request panel: the cached table cells say exactly what the request holds.

Cells are built once per row, and each message's role, token count and preview are kept per
message key while the trace stays the same; the preview is handed to the view cut to its column.
These tests check the cells against the trace at every request (sent and assembled views) and
that nothing cached outlives its trace.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QFont
from PySide6.QtWidgets import QApplication

from inspector.trace.model import Trace
from inspector.ui import theme
from inspector.ui.cursor import Cursor
from inspector.ui.derive import message_preview
from inspector.ui.panels.request import RequestPanel
from inspector.ui.synthetic import build_trace

ROLES = Qt.ItemDataRole


@pytest.fixture
def panel(qapp) -> Iterator[tuple[Cursor, RequestPanel]]:  # noqa: ANN001
    cursor = Cursor()
    made = RequestPanel(cursor)
    cursor.trace_changed.connect(made.set_trace)
    cursor.changed.connect(made.set_cursor)
    made.resize(700, 500)
    made.show()
    yield cursor, made
    made.close()
    made.deleteLater()
    cursor.deleteLater()


def _expected_row(trace: Trace, row: int, key: str, dropped: bool) -> list[object]:
    msg = trace.store.messages[key]
    preview = message_preview(msg, 200)
    return [str(row), str(msg.get("role", "?")), f"{trace.message_tokens(key):,}",
            ("[not sent] " + preview) if dropped else preview]


def _check_table(panel: RequestPanel, trace: Trace) -> int:
    model = panel.model
    dropped_rows = 0
    for row, key in enumerate(model.keys):
        dropped = key in model.dropped
        dropped_rows += dropped
        cells = [model.index(row, c) for c in range(4)]
        shown = [model.data(i) for i in cells]
        expected = _expected_row(trace, row, key, dropped)
        assert shown[:3] == expected[:3]
        # the preview comes cut to its column (the pixels are the same: test_perf_panels); a
        # removed message is drawn in italics, which elide elsewhere, so it comes in full
        text, full = shown[3], expected[3]
        assert text == full or (not dropped and text.endswith("…") and full.startswith(text[:-1]))
        fonts = [model.data(i, ROLES.FontRole) for i in cells]
        fgs = [model.data(i, ROLES.ForegroundRole) for i in cells]
        if dropped:
            assert all(isinstance(f, QFont) and f.italic() for f in fonts)
            assert all(isinstance(b, QBrush) and b.color().name() == "#90a4ae" for b in fgs)
        else:
            assert fonts == [None] * 4
            role = str(trace.store.messages[key].get("role"))
            assert fgs[0] is None and fgs[2] is None and fgs[3] is None
            assert (fgs[1] is None) == (role not in ("system", "user", "assistant", "tool"))
        assert [model.data(i, ROLES.TextAlignmentRole) for i in cells] == [
            theme.ALIGN_RIGHT, None, theme.ALIGN_RIGHT, None,
        ]
        assert all(model.data(i, ROLES.BackgroundRole) is None for i in cells)
        assert all(model.data(i, ROLES.DecorationRole) is None for i in cells)
    return dropped_rows


def test_table_cells_match_every_request(panel, demo_trace: Trace) -> None:
    cursor, view = panel
    cursor.set_trace(demo_trace)
    dropped_total = 0
    for assembled in (False, True):
        view.show_assembled.setChecked(assembled)
        for req in demo_trace.requests:
            cursor.set(req.event)
            QApplication.processEvents()
            if not assembled:
                assert view.model.keys == demo_trace.store.get_list(req.selected)
            dropped_total += _check_table(view, demo_trace)
            last = view.model.rowCount() - 1
            assert view.message_text.toPlainText().startswith(f"#{last} · "), "the last message is shown in full"
    assert dropped_total > 0, "the assembled view was exercised with removed messages"


def test_cached_summaries_do_not_outlive_their_trace(panel) -> None:
    cursor, view = panel
    first = build_trace(12, seed=4)
    second = build_trace(12, seed=4)  # same messages, so the same keys
    key = first.store.get_list(first.requests[-1].selected)[-1]
    second.store.tokens[key] = {"tiktoken": 987_654}
    cursor.set_trace(first)
    cursor.set(first.requests[-1].event)
    QApplication.processEvents()
    row = view.model.keys.index(key)
    assert view.model.data(view.model.index(row, 2)) == f"{first.message_tokens(key):,}"
    cursor.set_trace(second)
    cursor.set(second.requests[-1].event)
    QApplication.processEvents()
    row = view.model.keys.index(key)
    assert view.model.data(view.model.index(row, 2)) == "987,654"
