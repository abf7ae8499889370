"""Cache: the request at the cursor as the provider's prompt cache saw it.

The strip is the request, left to right, one block per message with width proportional to its
tokens, coloured by the simulated outcome (read from cache, written to cache, uncached) with the
break point marked and the miss reason in words. Below it, the whole session: hit rate, cached
tokens and cost per request, on the same request axis as the token timeline.

Where the transcript recorded the provider's usage, the provider's figures stand beside the
simulator's everywhere, each labelled: a line per request (read, written with its 5m/1h split,
hit rate; whether they disagree on a miss), the recorded hit rate and tokens as heavier curves in
the session plots, and the run's totals with the simulator's accuracy over the requests that are
the agent's own (``inspector/cache/accuracy.py``). In a comparison each run's strip carries its own.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any, overload

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QLineF, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QHelpEvent, QPainter, QPaintEvent, QPen, QPolygonF
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QSizePolicy, QToolTip, QVBoxLayout, QWidget

from inspector.trace.model import Trace
from inspector.trace.run_facts import fed_kind
from inspector.ui import plots, theme
from inspector.ui.compare import CompareAware
from inspector.ui.cursor import Cursor
from inspector.ui.derive import TraceFigures, figures, message_preview
from inspector.ui.explain import SIMULATED, usage_kind
from inspector.ui.panels.base import Panel

_MINI_PLOT_HEIGHT = 60
STATUS_COLOURS = {"read": theme.CACHE_READ, "written": theme.CACHE_WRITE, "uncached": theme.CACHE_UNCACHED}

REASON_WORDS = {
    "cold": "Cold start: nothing was cached yet.",
    "ttl": "The cache entry expired (TTL lapsed) before this request.",
    "below_minimum": "The prefix is below the provider's minimum cacheable length.",
    "prefix_break": "The cached prefix broke: a message before the break changed.",
    "hit": "Cache hit.",
    "miss": "Miss: nothing was read from the cache, though no prefix broke or lapsed.",
    "lookback": "Lookback miss: the previous entry is too many blocks before the nearest breakpoint.",
    "disabled": "Prompt caching is off for this provider/profile.",
}


class CacheStrip(QWidget):
    """Paints one request as blocks; tooltips name the message under the mouse."""

    LEGEND_H = 18

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.blocks: list[int] = []
        self.labels: Sequence[str] = []
        self.read = 0
        self.write = 0
        self.break_index: int | None = None
        self.setMinimumHeight(64)
        self.setMouseTracking(True)
        # paintEvent fills the whole rectangle, so Qt need not paint the panel beneath it first
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(400, 70)

    def set_request(self, blocks: list[int], labels: Sequence[str], read: int, write: int, break_index: int | None) -> None:
        self.blocks, self.labels = blocks, labels
        self.read, self.write, self.break_index = read, write, break_index
        self.update()

    def _geometry(self) -> tuple[QRectF, float]:
        area = QRectF(6, 16, max(1, self.width() - 12), max(10, self.height() - 16 - self.LEGEND_H - 4))
        total = max(1, sum(self.blocks), self.read + self.write)
        return area, area.width() / total

    def status_of(self, start: int, end: int) -> str:
        """Where most of a block's tokens fall: read, written or uncached."""
        spans = {
            "read": max(0, min(end, self.read) - start),
            "written": max(0, min(end, self.read + self.write) - max(start, self.read)),
        }
        spans["uncached"] = (end - start) - spans["read"] - spans["written"]
        return max(spans, key=lambda k: spans[k])

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        p = QPainter(self)
        p.fillRect(self.rect(), self.palette().base())
        area, scale = self._geometry()
        font = QFont(self.font())
        font.setPixelSize(11)
        p.setFont(font)
        if not self.blocks:
            p.setPen(QColor("#78909c"))
            p.drawText(area, Qt.AlignmentFlag.AlignCenter, "No request at the cursor")
            p.end()
            return
        # token ranges first (exact figures), then block separators on top
        x0 = area.left()
        for name, a, b in (
            ("read", 0, self.read),
            ("written", self.read, self.read + self.write),
            ("uncached", self.read + self.write, max(sum(self.blocks), self.read + self.write)),
        ):
            if b > a:
                p.fillRect(QRectF(x0 + a * scale, area.top(), (b - a) * scale, area.height()), QColor(STATUS_COLOURS[name]))
        sep = QPen(QColor(255, 255, 255, 200))
        sep.setWidth(1)
        p.setPen(sep)
        # one call for every separator (a request has a hundred blocks; a call each cost ~0.3 ms)
        top, bottom = area.top(), area.bottom()
        separators: list[QLineF] = []
        pos = 0
        last_x = -10.0
        for tok in self.blocks[:-1]:
            pos += tok
            x = x0 + pos * scale
            if x - last_x >= 3:
                separators.append(QLineF(x, top, x, bottom))
                last_x = x
        if separators:
            p.drawLines(separators)
        if self.break_index is not None and 0 <= self.break_index <= len(self.blocks):
            bx = x0 + sum(self.blocks[: self.break_index]) * scale
            pen = QPen(QColor(theme.CACHE_BREAK))
            pen.setWidth(2)
            p.setPen(pen)
            p.drawLine(QPointF(bx, area.top() - 4), QPointF(bx, area.bottom() + 2))
            p.setBrush(QColor(theme.CACHE_BREAK))
            p.drawPolygon(QPolygonF([QPointF(bx - 5, 2), QPointF(bx + 5, 2), QPointF(bx, 10)]))
            text = f"cache read ends at message {self.break_index}"  # the first block not read (not where content changed)
            tw = p.fontMetrics().horizontalAdvance(text)
            tx = bx + 8 if bx + 8 + tw < self.width() else bx - 8 - tw
            p.setPen(QColor(theme.CACHE_BREAK))
            p.drawText(QPointF(tx, 11), text)
        # legend
        y = self.height() - self.LEGEND_H + 2
        x = area.left()
        total = max(1, sum(self.blocks), self.read + self.write)
        uncached = total - self.read - self.write
        for name, value in (("read", self.read), ("written", self.write), ("uncached", uncached)):
            p.fillRect(QRectF(x, y + 3, 10, 10), QColor(STATUS_COLOURS[name]))
            p.setPen(QColor(theme.PLOT_FG))
            label = f"{name} {value:,} tok"
            p.drawText(QPointF(x + 14, y + 12), label)
            x += 24 + p.fontMetrics().horizontalAdvance(label)
        p.drawText(QPointF(x, y + 12), f"· {len(self.blocks)} blocks")
        p.end()

    def block_at(self, x: float) -> int | None:
        area, scale = self._geometry()
        if not self.blocks or x < area.left() or x > area.right():
            return None
        tok = (x - area.left()) / scale
        pos = 0
        for i, n in enumerate(self.blocks):
            if pos <= tok < pos + n:
                return i
            pos += n
        return len(self.blocks) - 1

    def event(self, e: Any) -> bool:
        if e.type() == e.Type.ToolTip and isinstance(e, QHelpEvent):
            i = self.block_at(e.position().x() if hasattr(e, "position") else e.pos().x())
            if i is None:
                QToolTip.hideText()
                return True
            start = sum(self.blocks[:i])
            status = self.status_of(start, start + self.blocks[i])
            label = self.labels[i] if i < len(self.labels) else f"block {i}"
            QToolTip.showText(e.globalPos(), theme.plain_tooltip(f"{label}\n{self.blocks[i]:,} tok · {status}"), self)
            return True
        return super().event(e)


class BlockLabels(Sequence[str]):
    """A request's hover labels, one per strip block, each built only when it is read.

    Building every label means a text preview of every message of the request, about a
    millisecond on each request change; the strip needs one label, and only on hover.
    """

    def __init__(self, trace: Trace, keys: tuple[str, ...], n_blocks: int) -> None:
        self._trace = trace
        self._keys = keys
        self._n = n_blocks
        self._offset = n_blocks - len(keys)  # leading blocks without a message (tools, system)

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        j = i - self._offset
        if not 0 <= j < len(self._keys):
            return "tools / system block"
        msg = self._trace.store.messages.get(self._keys[j], {})
        return f"message {j} · {msg.get('role', '?')}: {message_preview(msg, 100)}"


def strip_args(trace: Trace, req: Any) -> tuple[list[int], Sequence[str], int, int, int | None]:
    """What :meth:`CacheStrip.set_request` needs for one request (blocks, labels, read, write, break)."""
    c = req.cache
    keys = trace.store.get_list(req.selected) if 0 <= req.selected < len(trace.store.lists) else ()
    blocks = list(c.block_tokens) or [trace.message_tokens(key) for key in keys]
    offset = len(blocks) - len(keys)
    labels = BlockLabels(trace, keys, len(blocks))
    return blocks, labels, c.read, c.write, (c.break_index + offset if c.break_index is not None else None)


def request_summary(req: Any, kind: str = SIMULATED) -> str:
    """One line of cache figures for a request; ``kind`` says what the usage is (simulated in a
    replay, provider-reported live), so it is never read as the strip's simulated outcome."""
    c = req.cache
    usage = req.usage or {}
    # The usage the engine was fed: its prompt includes the reply priming no cache block holds.
    total = int(usage.get("prompt_tokens") or (c.read + c.write + c.uncached))
    read, write = int(usage.get("cache_read_tokens", c.read)), int(usage.get("cache_write_tokens", c.write))
    uncached = max(0, total - read - write)
    rate = read / total if total else 0.0
    cost = f" · cost ${c.cost:.4f}" if c.cost is not None else ""
    # The strip below shows message blocks only; say what the request holds besides them.
    blocks_total = c.read + c.write + c.uncached
    extra = total - blocks_total if c.uncached is not None and total > blocks_total else 0
    beside = f" (incl. {extra:,} for reply priming/tools, outside the blocks)" if extra else ""
    return (f"Request #{req.index} (turn {req.turn}, call {req.call}) · {total:,} tok ({kind} usage) · "
            f"read {read:,} · written {write:,} · uncached {uncached:,}{beside} · hit {rate:.0%}{cost}")


def _pct(part: float, whole: float) -> str:
    return f"{part / whole:.0%}" if whole else "–"


def beside_recorded(trace: Trace, req: Any) -> tuple[str, bool]:
    """The simulator's read/written beside the provider's recorded figures for ``req`` (5m/1h kept),
    each labelled; True when they disagree on whether it was a miss (recorded hit < 80 %)."""
    from inspector.cache.accuracy import MISS_BELOW

    c = req.cache
    total = c.read + c.write + c.uncached
    sim = f"simulated: read {c.read:,} · written {c.write:,} · hit {_pct(c.read, total)}"
    rec = req.recorded
    if not rec:
        return sim + "\nrecorded: none for this request (the transcript holds no usage for it)", False
    prompt = int(rec.get("prompt_tokens") or 0)
    read, write = int(rec.get("cache_read_tokens") or 0), int(rec.get("cache_write_tokens") or 0)
    one_hour = int(rec.get("cache_write_1h_tokens") or 0)
    text = (f"{sim}\nrecorded (provider, transcript): read {read:,} · written {write:,} "
            f"(5m {write - one_hour:,} · 1h {one_hour:,}) · hit {_pct(read, prompt)}")
    same = (trace.meta.get("usage_model") or {}).get("same_request") or []
    if req.index < len(same) and not same[req.index]:
        return text + " · for the agent's request, which this one is not", False
    if not prompt or not total or c.reason_kind == "disabled":
        return text, False
    real_miss, simulated_miss = read / prompt < MISS_BELOW, c.read / total < MISS_BELOW
    if real_miss and not simulated_miss:
        return text + " · DISAGREE: the provider missed, the simulator did not", True
    if simulated_miss and not real_miss:
        return text + " · DISAGREE: a false alarm (the provider read from the cache)", True
    return text, False


def run_totals(trace: Trace, *, short: bool = False) -> str:
    """The run's recorded and simulated totals and the simulator's accuracy, in three labelled lines
    (``short``: the accuracy line alone, for a comparison's per-run strip)."""
    from inspector.cache.accuracy import accuracy, recorded_vs_simulated

    both = recorded_vs_simulated(trace)
    rec, sim = both["recorded"], both["simulated"]
    if rec is None:
        return "Run: no recorded usage in the transcript, so the simulator's figures cannot be checked"
    totals = (f"Run recorded: read {rec['read']:,} · written {rec['write']:,} (5m {rec['write_5m']:,} · "
              f"1h {rec['write_1h']:,}) · hit {_pct(rec['read'], rec['prompt'])}\nRun simulated: read {sim['read']:,} · "
              f"written {sim['write']:,} · hit {_pct(sim['read'], sim['prompt'])}")
    block = accuracy(trace)
    if short:
        totals = ""
    else:
        totals += "\n"
    if block is None:
        return totals + "Simulator accuracy: no request to compare (every request differs from the agent's)"
    caught = f"real misses caught {block['caught']}/{block['real_misses']}" if block["real_misses"] else "no real miss"
    return (totals + f"Simulator accuracy ({block['compared']:,} requests): hit-rate error mean "
            f"{block['mean_error_points']:.2f} / p90 {block['p90_error_points']:.2f} pt · {caught} · "
            f"false alarms {block['false_alarms']} ({block['false_alarms_per_100']:.1f}/100)")


def _recorded_hit(_trace: Trace, req: Any) -> float:
    rec = req.recorded or {}
    prompt = rec.get("prompt_tokens") or 0
    return float(rec.get("cache_read_tokens") or 0) / prompt * 100 if prompt else np.nan


def _simulated_read(_trace: Trace, req: Any) -> float:
    return float(req.cache.read)


def recorded_series(trace: Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per request: the recorded hit %, cache read and cache written (NaN where none was recorded)."""
    def column(key: str) -> np.ndarray:
        return np.fromiter((float(r.recorded.get(key) or 0) if r.recorded else np.nan for r in trace.requests),
                           dtype=np.float64, count=len(trace.requests))

    prompt, read, write = column("prompt_tokens"), column("cache_read_tokens"), column("cache_write_tokens")
    with np.errstate(invalid="ignore", divide="ignore"):
        hit = np.where(prompt > 0, read / prompt * 100, np.nan)
    return hit, read, write


def reason_words(c: Any) -> str:
    """The miss (or hit) reason as a sentence, said to be the simulator's."""
    return "Simulated cache: " + _reason_words(c)


def _reason_words(c: Any) -> str:
    words = REASON_WORDS.get(c.reason_kind, c.reason_kind or "No cache outcome recorded.")
    if c.reason and c.reason.lower().startswith(words.split(":")[0].lower()):
        words = c.reason[0].upper() + c.reason[1:] + "."  # the detail already says it ("cold start: …")
    elif c.reason and c.reason_kind != "hit":
        words = f"{words} {c.reason[0].upper()}{c.reason[1:]}."
    elif c.reason:
        words = c.reason[0].upper() + c.reason[1:] + "."
    return words


def reason_colour(c: Any) -> str:
    return theme.CACHE_READ if c.reason_kind == "hit" else (theme.FAULT if c.reason_kind == "prefix_break" else "#455a64")


class RunCacheView(QWidget):
    """Comparison mode: one run's request at the cursor (label, figures, strip, reason)."""

    def __init__(self, label: str, colour: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = theme.TextLine(1, bold=True)
        self.title.setText(label)
        self.title.set_colours("white", colour)
        self.title.setFixedWidth(min(220, self.title.fontMetrics().horizontalAdvance(label) + 16))
        self.title.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)  # TextLine ignores hints
        self.header = theme.readout_label(1)
        self.recorded = theme.readout_label(2)  # the simulator's figures beside the provider's, this run's
        self.accuracy = theme.readout_label(1)  # this run's simulator accuracy against the transcript
        self.strip = CacheStrip()
        self.strip.setMinimumHeight(46)
        self.reason = theme.readout_label(2)  # the cause in full: two lines, not clipped
        self.cause_button = QPushButton("Go to cause")
        self.cause_button.setEnabled(False)
        self.cause_button.setToolTip("Jump to the event of this run that changed the cached prefix")
        self.cause_button.setFixedWidth(self.cause_button.fontMetrics().horizontalAdvance("Go to cause (event 0,000,000)") + 24)
        self.cause: int | None = None
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.setSpacing(6)
        top.addWidget(self.title)
        top.addWidget(self.header, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 2)
        layout.setSpacing(1)
        layout.addLayout(top)
        layout.addWidget(self.recorded)
        layout.addWidget(self.strip)
        reason_row = QHBoxLayout()
        reason_row.setContentsMargins(0, 0, 0, 0)
        reason_row.addWidget(self.reason, 1)
        reason_row.addWidget(self.cause_button, 0, Qt.AlignmentFlag.AlignTop)
        layout.addLayout(reason_row)
        layout.addWidget(self.accuracy)
        self.shown: tuple[int, int] | None = None
        self._accuracy_of: int | None = None

    def show_request(self, trace: Trace | None, req: Any, exact: bool) -> None:
        key = (id(trace), -1 if req is None else req.index)
        if key == self.shown:
            return
        self.shown = key
        if trace is not None and id(trace) != self._accuracy_of:
            self._accuracy_of = id(trace)
            self.accuracy.setText(run_totals(trace, short=True))
        if trace is None or req is None:
            self.strip.set_request([], [], 0, 0, None)
            self.recorded.setText("")
            self.header.setText("No request yet")
            self.reason.setText("")
            self.cause = None
            self.cause_button.setEnabled(False)
            return
        self.strip.set_request(*strip_args(trace, req))
        self.header.setText(request_summary(req, fed_kind(trace, req.index, usage_kind(trace)))
                            + ("" if exact else " · no request at this row: its latest"))
        text, disagree = beside_recorded(trace, req)
        self.recorded.setText(text)
        self.recorded.set_colours(theme.FAULT if disagree else None)
        self.reason.setText(reason_words(req.cache))
        self.reason.set_colours(reason_colour(req.cache))
        self.cause = req.cache.cause_event
        self.cause_button.setEnabled(self.cause is not None)
        self.cause_button.setText(f"Go to cause (event {self.cause:,})" if self.cause is not None else "Go to cause")


class CachePanel(CompareAware, Panel):
    panel_id = "cache"
    title = "Cache"
    area = Qt.DockWidgetArea.BottomDockWidgetArea

    def __init__(self, cursor: Cursor, parent: QWidget | None = None) -> None:
        super().__init__(cursor, parent)
        # Room for a long line to wrap once: at 1024 × 640 the request's figures and the accuracy
        # line were cut off ("uncached 3,875 (in…", "false …").
        self.header = theme.readout_label(2)
        self.recorded = theme.readout_label(2)  # simulated beside the provider's recorded figures, this request
        self.totals = theme.readout_label(4)  # the run's totals, recorded and simulated, and the accuracy
        self.strip = CacheStrip()
        self.reason = theme.readout_label(2)
        self.cause_button = QPushButton("Go to cause")
        self.cause_button.setEnabled(False)
        self.cause_button.setToolTip("Jump to the event that changed the cached prefix")
        # a fixed size: changing the text then never re-lays out the window
        hint = self.cause_button.sizeHint()
        self.cause_button.setFixedSize(
            self.cause_button.fontMetrics().horizontalAdvance("Go to cause (event 0,000,000)") + 24, hint.height()
        )
        self.cause_button.clicked.connect(self._go_to_cause)
        self._cause: int | None = None
        reason_row = QHBoxLayout()
        reason_row.addWidget(self.reason, 1)
        reason_row.addWidget(self.cause_button)

        self.graphs = pg.GraphicsLayoutWidget()
        self.graphs.setBackground(theme.PLOT_BG)
        # Three stacked plots on one request axis: each tall enough for readable ticks (the dock
        # scrolls when the window is small), x ticks only under the last, legends above the data.
        self.graphs.setMinimumHeight(3 * _MINI_PLOT_HEIGHT + 90)  # + the request axis and a legend row
        self.hit_plot = self.graphs.addPlot(row=0, col=0)
        self.tok_plot = self.graphs.addPlot(row=1, col=0)
        self.cost_plot = self.graphs.addPlot(row=2, col=0)
        for item, label in ((self.hit_plot, "hit %"), (self.tok_plot, "tokens"), (self.cost_plot, "cost $")):
            plots.style_plot_item(item, label)
            plots.adopt_menus(item, self.graphs)
            item.setMinimumHeight(_MINI_PLOT_HEIGHT)
            left = item.getAxis("left")
            left.enableAutoSIPrefix(False)
            plots.sparse_ticks(left)
        for item in (self.hit_plot, self.tok_plot):
            item.getAxis("bottom").setStyle(showValues=False)
            item.getAxis("bottom").setHeight(4)
        self.tok_plot.setXLink(self.hit_plot)
        self.cost_plot.setXLink(self.hit_plot)
        self.cost_plot.setLabel("bottom", "request", color=theme.PLOT_FG)
        self.cost_plot.setMinimumHeight(_MINI_PLOT_HEIGHT + 36)  # the shared request axis lives under it
        plots.integer_ticks(self.cost_plot.getAxis("bottom"))
        self.hit_curve = plots.curve(self.hit_plot, theme.CACHE_READ)
        self.rec_hit_curve = plots.curve(self.hit_plot, theme.RECORDED)
        self.rec_hit_curve.setPen(plots.recorded_pen())
        self.tok_legend = plots.legend_above(self.tok_plot, columns=4)
        self.read_curve = plots.curve(self.tok_plot, theme.CACHE_READ, "simulated read")
        self.write_curve = plots.curve(self.tok_plot, theme.CACHE_WRITE, "simulated written")
        self.rec_read_curve = plots.curve(self.tok_plot, theme.RECORDED, "recorded read")
        self.rec_read_curve.setPen(plots.recorded_pen())
        self.rec_write_curve = plots.curve(self.tok_plot, theme.CACHE_WRITE, "recorded written")
        self.rec_write_curve.setPen(plots.recorded_pen(theme.CACHE_WRITE))
        for item in (self.rec_hit_curve, self.rec_read_curve, self.rec_write_curve):
            item.setZValue(-1)  # under the simulator's lines
        self.cost_curve = plots.curve(self.cost_plot, theme.SERIES[0])
        self.cursor_lines = [plots.CursorLine(pl, self._jump_to_x) for pl in (self.hit_plot, self.tok_plot, self.cost_plot)]
        self.graphs.scene().sigMouseClicked.connect(self._scene_clicked)
        self._fig: TraceFigures | None = None
        self._shown_request: int | None = None

        self.single_box = QWidget()
        single = QVBoxLayout(self.single_box)
        single.setContentsMargins(0, 0, 0, 0)
        single.setSpacing(4)
        single.addWidget(self.header)
        single.addWidget(self.recorded)
        single.addWidget(self.strip)
        single.addLayout(reason_row)
        single.addWidget(self.totals)
        self.runs_box = QWidget()  # comparison mode: the runs' requests stacked, same scale per strip
        self.runs_layout = QVBoxLayout(self.runs_box)
        self.runs_layout.setContentsMargins(0, 0, 0, 0)
        self.runs_layout.setSpacing(2)
        self.runs_box.hide()
        self.run_views: dict[int, RunCacheView] = {}
        self.run_items: list[Any] = []
        self.run_legend = plots.legend_above(self.hit_plot, columns=4)
        self._hit_keys = False  # the single-run hit curves are named in run_legend

        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.setSpacing(4)
        layout.addWidget(self.single_box)
        layout.addWidget(self.runs_box)
        layout.addWidget(self.graphs, 1)

    def x_view(self) -> pg.ViewBox:
        return self.hit_plot.getViewBox()

    def _render_compare(self) -> None:
        """Overlays per run (hit %, cached tokens read, cost) and a strip per run at the cursor."""
        view = self.compare
        assert view is not None
        for c in self._single_curves():
            c.setData([], [])
        self._name_hit_curves(False)
        self.run_items = plots.overlay_runs(self.hit_plot, view, view.hit_rate(), legend=self.run_legend)
        # the transcript's own hit rate on the primary run's rows (the same calls for every run that
        # sent the agent's requests): a band under the runs' lines
        recorded = view.series(_recorded_hit, "recorded_hit")[view.primary]
        if np.isfinite(recorded).any():
            # pyqtgraph renders legend names as rich text: a run's label is the user's text
            band = plots.curve(self.hit_plot, theme.RECORDED,
                               html.escape(f"recorded hit % ({view.label(view.primary)}'s rows)"))
            band.setPen(plots.recorded_pen())
            band.setZValue(-1)
            plots.set_xy(band, np.arange(recorded.shape[0], dtype=np.float64), recorded)
            self.run_legend.addItem(band, band.name())
            self.run_items.append(band)
        # the simulator's read (a run's usage may be the transcript's where its request is the agent's)
        self.run_items += plots.overlay_runs(self.tok_plot, view, view.series(_simulated_read, "simulated_read"))
        self.run_items += plots.overlay_runs(self.cost_plot, view, view.series("cost"))
        self.tok_plot.setLabel("left", "sim. read", color=theme.PLOT_FG)  # cached tokens read, per run
        self.hit_plot.setYRange(0, 100, padding=0.05)
        self.hit_plot.setXRange(-0.5, max(1, view.row_count) - 0.5, padding=0.01)
        self.cost_plot.setLabel("bottom", "aligned request (turn, call)", color=theme.PLOT_FG)
        for run in view.runs:
            box = RunCacheView(view.label(run), view.color(run))
            box.cause_button.clicked.connect(lambda _c=False, r=run, b=box: self._go_to_run_cause(r, b))
            self.runs_layout.addWidget(box)
            self.run_views[run] = box

    def _clear_compare(self) -> None:
        for item in list(self.run_items):
            for plot in (self.hit_plot, self.tok_plot, self.cost_plot):
                if item.scene() is not None and item in plot.listDataItems():
                    plot.removeItem(item)
            self.run_legend.removeItem(item)
        self.run_items = []
        for box in self.run_views.values():
            self.runs_layout.removeWidget(box)
            box.deleteLater()
        self.run_views = {}
        self.tok_plot.setLabel("left", "tokens", color=theme.PLOT_FG)
        self.cost_plot.setLabel("bottom", "request", color=theme.PLOT_FG)

    def render_trace(self, trace: Trace | None) -> None:
        self._fig = None
        self._shown_request = None
        self._clear_compare()
        comparing = self.compare is not None and trace is not None
        self.tok_legend.setVisible(not comparing)
        self.single_box.setVisible(not comparing)
        self.runs_box.setVisible(comparing)
        if comparing:
            self._render_compare()
            return
        if trace is None or not trace.requests:
            for c in self._single_curves():
                c.setData([], [])
            self._name_hit_curves(False)
            self.strip.set_request([], [], 0, 0, None)
            self.recorded.setText("")
            self.totals.setText("")
            self.header.setText("No provider requests in this trace" if trace is not None else "No trace loaded")
            self.reason.setText("")
            self.cause_button.setEnabled(False)
            for line in self.cursor_lines:
                line.set_x(None)
            return
        fig = figures(trace)
        self._fig = fig
        plots.set_xy(self.hit_curve, fig.x, fig.hit_rate * 100)
        plots.set_xy(self.read_curve, fig.x, fig.cache_read)
        plots.set_xy(self.write_curve, fig.x, fig.cache_write)
        plots.set_xy(self.cost_curve, fig.x, fig.cost)
        rec_hit, rec_read, rec_write = recorded_series(trace)
        recorded = bool(np.isfinite(rec_hit).any())
        for item, y in ((self.rec_hit_curve, rec_hit), (self.rec_read_curve, rec_read), (self.rec_write_curve, rec_write)):
            if recorded:
                plots.set_xy(item, fig.x, y)
            else:
                item.setData([], [])
        for item in (self.rec_read_curve, self.rec_write_curve):  # named only when drawn
            self.tok_legend.removeItem(item)
            if recorded:
                self.tok_legend.addItem(item, item.name())
        self._name_hit_curves(recorded)
        self.totals.setText(run_totals(trace))
        self.hit_plot.setYRange(0, 100, padding=0.05)
        self.hit_plot.setXRange(-0.5, fig.n - 0.5, padding=0.01)

    def _single_curves(self) -> tuple[Any, ...]:
        return (self.hit_curve, self.rec_hit_curve, self.read_curve, self.write_curve, self.rec_read_curve,
                self.rec_write_curve, self.cost_curve)

    def _name_hit_curves(self, recorded: bool) -> None:
        """With recorded usage the hit plot has two curves, so the legend says which is which."""
        if self._hit_keys:
            self.run_legend.removeItem(self.hit_curve)
            self.run_legend.removeItem(self.rec_hit_curve)
            self._hit_keys = False
        if recorded:
            self.run_legend.addItem(self.hit_curve, "simulated hit %")
            self.run_legend.addItem(self.rec_hit_curve, "recorded hit %")
            self._hit_keys = True

    def _render_compare_cursor(self, k: int) -> None:
        view = self.compare
        assert view is not None
        row = view.row_at(k)
        for line in self.cursor_lines:
            line.set_x(None if row is None else float(row))
        for run, box in self.run_views.items():
            trace = view.trace(run)
            if row is None or trace is None:
                box.show_request(trace, None, True)
                continue
            req = view.alignment.request(run, row)
            exact = req is not None
            if req is None:
                k_run = view.event_for(run, row)
                req = trace.request_at(k_run) if k_run is not None else None
            box.show_request(trace, req, exact)

    def render_cursor(self, k: int) -> None:
        if self.compare is not None:
            if self._trace is not None and len(self._trace):
                self._render_compare_cursor(k)
            return
        trace, fig = self._trace, self._fig
        if trace is None or fig is None:
            return
        x = fig.cursor_x(k)
        for line in self.cursor_lines:
            line.set_x(x)
        req = trace.request_at(k)
        if req is None:
            self._shown_request = None
            self.strip.set_request([], [], 0, 0, None)
            self.recorded.setText("")
            self.header.setText(f"Event {k}: no provider request yet")
            self.reason.setText("")
            self.cause_button.setEnabled(False)
            return
        if req.index == self._shown_request:
            return
        self._shown_request = req.index
        c = req.cache
        self.strip.set_request(*strip_args(trace, req))
        self.header.setText(request_summary(req, fed_kind(trace, req.index, usage_kind(trace))))
        text, disagree = beside_recorded(trace, req)
        self.recorded.setText(text)
        self.recorded.set_colours(theme.FAULT if disagree else None)
        self.reason.setText(reason_words(c))
        self.reason.set_colours(reason_colour(c))
        self._cause = c.cause_event
        self.cause_button.setEnabled(c.cause_event is not None)
        self.cause_button.setText(f"Go to cause (event {c.cause_event:,})" if c.cause_event is not None else "Go to cause")

    def _go_to_run_cause(self, run: int, box: RunCacheView) -> None:
        """Comparison mode: the cause is an event of that run (the window follows that run there)."""
        if box.cause is not None:
            self.run_jump_requested.emit(run, box.cause)

    def _go_to_cause(self) -> None:
        if self._cause is not None:
            self.jump_requested.emit(self._cause)

    def _scene_clicked(self, event: Any) -> None:
        if event.button() != Qt.MouseButton.LeftButton or event.double():
            return
        for plot in (self.hit_plot, self.tok_plot, self.cost_plot):
            vb = plot.getViewBox()
            if vb.sceneBoundingRect().contains(event.scenePos()):
                self._jump_to_x(float(vb.mapSceneToView(event.scenePos()).x()))
                return

