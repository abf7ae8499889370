"""Colours, icons and text helpers shared by every panel.

One place decides what a compression, a fault or a cache read looks like, so the event list,
the plots and the cache strip agree and a reader learns the colour code once. Icons are painted
at run time (a coloured badge with a glyph) so the package needs no image files to look right.
"""

from __future__ import annotations

import html
from functools import lru_cache
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEvent, QRectF, QSize, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetrics,
    QIcon,
    QPainter,
    QPaintEvent,
    QPalette,
    QPixmap,
    QTextLayout,
    QTextOption,
)
from PySide6.QtWidgets import QAbstractScrollArea, QSizePolicy, QWidget

from inspector.trace import model as tm
from inspector.ui.figures import figure_advances, fits_whole

# Repository root (…/inspector/ui/theme.py → parents[2]); resources live beside the package.
REPO_ROOT = Path(__file__).resolve().parents[2]
RESOURCES = REPO_ROOT / "resources"

# -- colours -----------------------------------------------------------------------------
FAULT = "#d32f2f"
COMPRESS = "#8e24aa"
SELECT = "#1e88e5"
REQUEST = "#455a64"
TURN = "#2e7d32"
RESPONSE = "#00897b"
SHOULD = "#9e9d24"
TOOL = "#ef6c00"
LIFECYCLE = "#6d4c41"
NOTE = "#757575"
MARKER = "#c2185b"
RECORDED = "#263238"  # the provider's own figures, recorded in the transcript (plots.recorded_pen)
BOOKMARK = "#f9a825"

CACHE_READ = "#43a047"
CACHE_WRITE = "#fb8c00"
CACHE_UNCACHED = "#90a4ae"
CACHE_BREAK = "#d32f2f"

DIFF_ADDED = "#e3f6e5"
DIFF_REMOVED = "#fde7e9"
DIFF_CHANGED = "#fff6d6"
DIFF_SUMMARISED = "#ede4f7"
DIFF_WORD_ADDED = "#a5d6a7"
DIFF_WORD_REMOVED = "#ef9a9a"

PLOT_BG = "#ffffff"
PLOT_FG = "#37474f"
GRID_ALPHA = 0.15

# Series colours for the token plots; colour-blind friendly (Okabe–Ito) and distinct on white.
SERIES = ["#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00"]
THRESHOLD = "#d55e00"
CONTEXT = "#555555"
CURSOR = "#e53935"

# kind → (colour, glyph)
_KIND_STYLE: dict[str, tuple[str, str]] = {
    tm.EV_TURN: (TURN, "T"),
    tm.EV_REQUEST: (REQUEST, "R"),
    tm.EV_SELECT: (SELECT, "S"),
    tm.EV_RESPONSE: (RESPONSE, "U"),
    tm.EV_SHOULD: (SHOULD, "?"),
    tm.EV_SHOULD_INFO: (SHOULD, "?"),
    tm.EV_DEFER: (SHOULD, "D"),
    tm.EV_COMPRESS: (COMPRESS, "C"),
    tm.EV_PRUNE: (COMPRESS, "P"),
    tm.EV_TOOL: (TOOL, "t"),
    tm.EV_TURN_COMPLETE: (TURN, "✓"),
    tm.EV_AUX_LLM: (TOOL, "L"),
    tm.EV_PLUGIN_HOOK: (LIFECYCLE, "h"),
    tm.EV_MARKER: (MARKER, "M"),
    tm.EV_FAULT: (FAULT, "!"),
    tm.EV_NOTE: (NOTE, "i"),
    tm.EV_SESSION_START: (LIFECYCLE, "▶"),
    tm.EV_SESSION_END: (LIFECYCLE, "■"),
    tm.EV_SESSION_RESET: (LIFECYCLE, "↺"),
    tm.EV_UPDATE_MODEL: (LIFECYCLE, "m"),
    tm.EV_TOOL_SCHEMAS: (LIFECYCLE, "s"),
}


def kind_colour(kind: str) -> str:
    """The colour an event kind is drawn in everywhere (unknown kinds are grey)."""
    return _KIND_STYLE.get(kind, (NOTE, "·"))[0]


@lru_cache(maxsize=128)
def badge_icon(colour: str, glyph: str, size: int = 16) -> QIcon:
    """A rounded coloured square with a one-character glyph; cached because views ask per row."""
    pix = QPixmap(size, size)
    pix.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pix)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(QColor(colour))
    painter.drawRoundedRect(QRectF(1, 1, size - 2, size - 2), 3, 3)
    font = QFont()
    font.setPixelSize(int(size * 0.62))
    font.setBold(True)
    painter.setFont(font)
    painter.setPen(QColor("white"))
    painter.drawText(QRectF(0, 0, size, size), Qt.AlignmentFlag.AlignCenter, glyph)
    painter.end()
    return QIcon(pix)


def kind_icon(kind: str, faulted: bool = False) -> QIcon:
    """Icon for an event row; a faulted event is always red whatever its kind."""
    colour, glyph = _KIND_STYLE.get(kind, (NOTE, "·"))
    if faulted:
        colour = FAULT
    return badge_icon(colour, glyph)


def app_icon() -> QIcon:
    """The window icon: the bundled SVG if present, else a painted badge."""
    path = RESOURCES / "icons" / "app.svg"
    if path.exists():
        icon = QIcon(str(path))
        if not icon.isNull():
            return icon
    return badge_icon(REQUEST, "C", 64)


def apply_palette(app) -> None:  # noqa: ANN001 - QApplication, kept loose for tests
    """A light Fusion look so plots (white) and widgets match and screenshots read well."""
    app.setStyle("Fusion")
    pal = app.palette()
    pal.setColor(QPalette.ColorRole.Window, QColor("#f3f4f6"))
    pal.setColor(QPalette.ColorRole.Base, QColor("#ffffff"))
    pal.setColor(QPalette.ColorRole.AlternateBase, QColor("#f6f8fa"))
    pal.setColor(QPalette.ColorRole.Highlight, QColor("#1e88e5"))
    pal.setColor(QPalette.ColorRole.HighlightedText, QColor("#ffffff"))
    pal.setColor(QPalette.ColorRole.ToolTipBase, QColor("#fffde7"))
    pal.setColor(QPalette.ColorRole.ToolTipText, QColor("#212121"))
    app.setPalette(pal)


# -- item-model roles as plain ints ------------------------------------------------------
# Views call data() hundreds of times per repaint; comparing the int role against these is
# several times cheaper than comparing against the Qt enum members.
ROLE_DISPLAY = Qt.ItemDataRole.DisplayRole.value
ROLE_DECORATION = Qt.ItemDataRole.DecorationRole.value
ROLE_TOOLTIP = Qt.ItemDataRole.ToolTipRole.value
ROLE_FONT = Qt.ItemDataRole.FontRole.value
ROLE_ALIGN = Qt.ItemDataRole.TextAlignmentRole.value
ROLE_BACKGROUND = Qt.ItemDataRole.BackgroundRole.value
ROLE_FOREGROUND = Qt.ItemDataRole.ForegroundRole.value
ALIGN_RIGHT = (Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter).value
ALIGN_CENTER = Qt.AlignmentFlag.AlignCenter.value


def set_style(widget, css: str) -> None:  # noqa: ANN001 - any QWidget
    """Set a style sheet only when it changes: re-polishing on every cursor step costs time."""
    if widget.styleSheet() != css:
        widget.setStyleSheet(css)


def settle_scroll_bars(area: QAbstractScrollArea) -> None:
    """Show or hide ``area``'s scroll bars now, not from the event queue.

    A scroll area reacts to a range change through a queued call, which Qt delivers after the
    pending repaint: a table or text box whose scroll bar comes or goes is then painted, resized
    and painted again. Call this after changing the content and before returning to the loop.
    """
    QCoreApplication.sendPostedEvents(area, QEvent.Type.MetaCall)


class TextLine(QWidget):
    """Plain text painted in a fixed number of lines; changing it never re-lays out the window.

    A QLabel's ``setText`` invalidates every layout up to the main window, and a QMainWindow
    re-fitting its docks on every cursor step costs tens of milliseconds (and makes the docks
    drift). This widget only repaints itself. Text is drawn literally (no HTML), word-wrapped
    when ``lines > 1``; what does not fit ends in "…" and the whole text is the tooltip.
    """

    def __init__(self, lines: int = 1, *, bold: bool = False, align: Qt.AlignmentFlag = Qt.AlignmentFlag.AlignLeft,
                 elide: Qt.TextElideMode = Qt.TextElideMode.ElideRight, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._text = ""
        self._elide = elide  # of a one-line text (ElideLeft keeps the end of a path)
        self._lines = lines
        self._fit_key: tuple[str, int] | None = None
        self._fit: list[str] = []
        self._fit_cut = False
        self._own_tip = ""
        self._align = align
        # drawText's flags as a plain int (combining Qt enums in Python costs microseconds a paint)
        self._flags = (align | (Qt.AlignmentFlag.AlignTop if lines > 1 else Qt.AlignmentFlag.AlignVCenter)).value
        self._fg = QColor(PLOT_FG)
        self._bg: QColor | None = None
        self._metrics: tuple[QFontMetrics, int, dict[str, float] | None] | None = None  # of the current font
        if bold:
            font = QFont(self.font())
            font.setBold(True)
            self.setFont(font)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(self.fontMetrics().lineSpacing() * lines + 4)
        # Opaque (the window colour, as behind it): a text change then repaints this widget only.
        # A transparent one makes Qt repaint the dock and panel beneath it first, on every step.
        self.setAutoFillBackground(True)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(max(40, self.fontMetrics().horizontalAdvance(self._text[:80]) + 8), self.height())

    def text(self) -> str:
        return self._text

    def setText(self, text: str) -> None:  # noqa: N802 - QLabel-compatible name
        if text != self._text:
            self._text = text
            self.update()

    def set_colours(self, fg: str | None = None, bg: str | None = None) -> None:
        new_fg = QColor(fg or PLOT_FG)
        new_bg = QColor(bg) if bg else None
        if new_fg != self._fg or new_bg != self._bg:
            self._fg, self._bg = new_fg, new_bg
            self.update()

    def _font_metrics(self) -> tuple[QFontMetrics, int, dict[str, float] | None]:
        """The font's metrics, line spacing and figure advances, kept until the font changes."""
        if self._metrics is None:
            metrics = self.fontMetrics()
            self._metrics = (metrics, metrics.lineSpacing(), figure_advances(self.font()))
        return self._metrics

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.FontChange:
            self._metrics = None
            self._fit_key = None  # fitted in the old font
        super().changeEvent(event)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        p = QPainter(self)
        rect = self.rect()
        bg = self._bg
        if bg is not None and self._text:
            p.setRenderHint(QPainter.RenderHint.Antialiasing)
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(bg)
            p.drawRoundedRect(QRectF(rect), 3, 3)
        p.setPen(self._fg)
        inner = rect.adjusted(4, 2, -4, -2) if bg is not None else rect.adjusted(0, 2, 0, -2)
        lines, truncated = self._fitted(inner.width())
        flags = self._flags
        if self._lines > 1:
            step = self._font_metrics()[1]
            for i, line in enumerate(lines):
                p.drawText(inner.adjusted(0, i * step, 0, 0), flags, line)
        else:
            for line in lines:
                p.drawText(inner, flags, line)
        p.end()
        # the whole text on hover when some of it was cut (a tooltip the caller set is kept)
        current = self.toolTip()
        if current in ("", self._own_tip):
            wanted = plain_tooltip(self._text) if truncated else ""
            if wanted != current:
                self._own_tip = wanted
                self.setToolTip(wanted)

    def _fitted(self, width: int) -> tuple[list[str], bool]:
        """(the text as drawn, whether some was cut): word-wrapped into at most ``lines`` lines,
        the last one elided."""
        key = (self._text, width)
        if key == self._fit_key:
            return self._fit, self._fit_cut
        fm, _, figures = self._font_metrics()
        elide = self._elide if self._lines == 1 else Qt.TextElideMode.ElideRight
        out: list[str] = []
        cut = False
        if self._lines == 1:
            flat = " ".join(self._text.split("\n"))
            out = [flat if fits_whole(flat, figures, width) else fm.elidedText(flat, elide, width)]
            cut = out[0] != flat
        else:
            layout = QTextLayout(self._text.replace("\n", "\u2028"), self.font())
            option = QTextOption()
            option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
            layout.setTextOption(option)
            layout.beginLayout()
            starts: list[int] = []
            while len(starts) <= self._lines:
                line = layout.createLine()
                if not line.isValid():
                    break
                line.setLineWidth(width)
                starts.append(line.textStart())
            layout.endLayout()
            text = self._text
            for i, start in enumerate(starts[: self._lines]):
                end = starts[i + 1] if i + 1 < len(starts) else len(text)
                if i == self._lines - 1 and end < len(text):
                    cut = True
                    out.append(fm.elidedText(" ".join(text[start:].split()), elide, width))
                    if not out[-1].endswith("…"):  # the rest fitted once spaces were merged: mark the cut
                        out[-1] = fm.elidedText(out[-1] + " …", elide, width)
                else:
                    out.append(text[start:end].rstrip("\n "))
        self._fit_key, self._fit, self._fit_cut = key, out, cut
        return out, cut


def readout_label(lines: int = 1) -> TextLine:
    """A plain-text status line for values that change on every cursor step."""
    return TextLine(lines)


# -- text ------------------------------------------------------------------------------
TOOLTIP_LIMIT = 1500  # characters; a longer tooltip covers the screen


def plain_tooltip(text: str, limit: int = TOOLTIP_LIMIT) -> str:
    """A tooltip that shows ``text`` literally: Qt would otherwise guess HTML in user content."""
    if len(text) > limit:
        text = text[:limit] + " …"
    return "<qt><pre style='white-space:pre-wrap'>" + html.escape(text) + "</pre></qt>"


def fmt_int(n: float | int | None) -> str:
    """Thousands-separated integer, or an en dash when the figure is missing."""
    if n is None:
        return "–"
    try:
        return f"{int(n):,}"
    except (TypeError, ValueError):
        return str(n)


def fmt_delta(n: int | None) -> str:
    """Signed change with separators; zero shows as a quiet ``±0``."""
    if n is None:
        return ""
    if n == 0:
        return "±0"
    return f"{n:+,}"


def one_line(text: str, limit: int = 160) -> str:
    """First ``limit`` characters of ``text`` on one line, for previews in tables."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
