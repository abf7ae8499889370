"""The main window: one cursor, every panel a dock, files in and out, replays in the background.

The window owns the :class:`~inspector.ui.cursor.Cursor` and the panels. It never computes
anything about the trace itself: it routes (panel asks to jump → cursor → every panel), opens
and saves files, starts replays, and keeps the layout. Every error from loading or from an
engine ends up in the message bar at the top; nothing here lets an exception reach Qt.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QEvent, QObject, QSettings, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QDockWidget,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QScrollArea,
    QSizePolicy,
    QTabBar,
    QToolBar,
    QToolButton,
    QWidget,
)

from inspector.outputs import is_html_report, is_image, is_saved_file, write_atomic
from inspector.trace.model import Mark, Trace
from inspector.ui import dialogs, layout, loaders, theme
from inspector.ui import settings as settings_dialog
from inspector.ui.compare import CompareRequest, CompareRunner, CompareView, ask_specs
from inspector.ui.cursor import Cursor
from inspector.ui.document import MARKS, Document
from inspector.ui.jobs import JobRunner
from inspector.ui.panels import PANEL_CLASSES, Panel
from inspector.ui.panels.chat import ChatPanel
from inspector.ui.panels.doctor import DoctorPanel
from inspector.ui.panels.follow import FollowPanel
from inspector.ui.panels.runs import RunsPanel
from inspector.ui.replay import (
    LoadRunner,
    ReplayBar,
    ReplayRequest,
    ReplayRunner,
    available_engines,
    run_replay,
)

LAYOUT_VERSION = 4
MAX_RECENT = 10
ORG = "ContextEngineInspector"
APP = "Context Engine Inspector"

OPEN_FILTER = (
    "All supported (*.json *.jsonl *.gz *.db *.sqlite *.sqlite3);;Comparisons (*.json *.json.gz *.gz);;"
    "Traces (*.json *.json.gz *.gz);;Sessions (*.json *.jsonl *.gz);;Hermes state.db (*.db *.sqlite *.sqlite3);;All files (*)"
)


class MessageBar(QFrame):
    """A dismissible coloured strip for errors and notices (never a modal box)."""

    closed = Signal()

    COLOURS = {"error": ("#fdecea", "#b71c1c"), "warning": ("#fff8e1", "#8d6e00"), "info": ("#e3f2fd", "#0d47a1")}

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel()
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QToolButton()
        close.setText("✕")
        close.setAutoRaise(True)
        close.clicked.connect(self.closed)
        # the details (a traceback, every failed run) are in the tooltip and on the clipboard from here
        self.copy_button = QToolButton()
        self.copy_button.setText("Copy")
        self.copy_button.setAutoRaise(True)
        self.copy_button.setToolTip("Copy the message and its details (a traceback) to the clipboard")
        self.copy_button.clicked.connect(self.copy)
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 4, 4, 4)
        row.addWidget(self.label, 1)
        row.addWidget(self.copy_button, 0, Qt.AlignmentFlag.AlignTop)
        row.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self.details = ""
        self.level = ""
        self.active = False

    def show_message(self, text: str, level: str = "error", details: str = "") -> None:
        bg, fg = self.COLOURS.get(level, self.COLOURS["info"])
        self.setStyleSheet(f"MessageBar{{background:{bg};border:1px solid {fg};border-radius:3px}} QLabel{{color:{fg}}}")
        self.level = level
        self.label.setText(text)
        self.label.setToolTip(theme.plain_tooltip(details) if details else "")
        self.details = details
        self.active = True
        self._fit_height()

    def _fit_height(self) -> None:
        """As tall as the wrapped text at the width it has: a toolbar asks a word-wrapped label for
        its height at a narrow guess, which made one line of text take a 90-px band."""
        width = self.label.width()
        if width > 0:
            height = self.label.heightForWidth(width)
            if height > 0 and height != self.label.height():
                self.label.setFixedHeight(height)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._fit_height()

    def copy(self) -> str:
        """Put the message and its details on the clipboard; returns what was copied."""
        text = self.label.text() + (f"\n\n{self.details}" if self.details else "")
        QApplication.clipboard().setText(text)
        return text

    def text(self) -> str:
        """The message being shown ('' when dismissed)."""
        return self.label.text() if self.active else ""


# Panels whose content is a fixed form (rows of figures, headers, strips): in a small window
# their dock scrolls instead of setting a minimum height that pushes the window off screen.
SCROLLED_PANELS = frozenset({"counters", "cache", "request", "engine", "runs", "diff"})
_SCROLLED_MIN_HEIGHT = 90


def _catch_up_when_shown(dock: QDockWidget, panel: Panel) -> None:
    """A panel in a background tab skips cursor moves; it renders them when its tab comes forward."""

    def shown(visible: bool) -> None:
        if visible:
            panel.catch_up()

    dock.visibilityChanged.connect(shown)


class _ScrollingDock(QScrollArea):
    """Scrolls its panel vertically; keeps the panel's own minimum width (columns never hide).

    The panel is sized here, not by QScrollArea's widgetResizable: for a panel with a word-wrapped
    label that one lays it out at its *preferred* height for the width, so a panel that fits the
    dock (its tree could shrink) was laid out taller and its lower part hid below the fold.
    """

    def __init__(self, panel: QWidget) -> None:
        super().__init__()
        self.setObjectName(f"scroll_{panel.objectName()}")
        self.setWidgetResizable(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setWidget(panel)
        panel.installEventFilter(self)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        inner = self.widget().minimumSizeHint() if self.widget() is not None else QSize(0, 0)
        return QSize(inner.width() + self.verticalScrollBar().sizeHint().width(), _SCROLLED_MIN_HEIGHT)

    def _fit_panel(self) -> None:
        """The viewport's width, and its height unless the panel's minimum for that width is taller."""
        panel = self.widget()
        if panel is None:
            return
        width = max(self.viewport().width(), panel.minimumSizeHint().width())
        layout = panel.layout()
        if layout is not None and layout.hasHeightForWidth():
            needed = layout.totalMinimumHeightForWidth(width)
        else:
            needed = panel.minimumSizeHint().height()
        size = QSize(width, max(self.viewport().height(), needed))
        if panel.size() != size:
            panel.resize(size)

    def viewportEvent(self, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.Resize:  # the dock resized, or the scroll bar came or went
            self._fit_panel()
        return super().viewportEvent(event)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if watched is self.widget() and event.type() == QEvent.Type.LayoutRequest:
            self.updateGeometry()  # the panel's minimum width changed (a comparison's columns)
            self._fit_panel()
        return super().eventFilter(watched, event)


# The panels the default layout places itself; any other panel goes where it declares (Panel.area).
_ARRANGED = frozenset({"events", "bookmarks", "timeline", "counters", "compression", "diff", "request", "cache",
                       "engine"})

# Saved traces larger than this are read on a worker thread (a 2,000-turn trace is a few MB).
ASYNC_LOAD_BYTES = 4 * 1024 * 1024

_VIEW_KEYS = frozenset({Qt.Key.Key_Left, Qt.Key.Key_Right, Qt.Key.Key_Home, Qt.Key.Key_End})


class _KeysStayInViews(QObject):
    """Arrow, Home and End move within a focused table instead of the window's cursor.

    The window binds those keys to event navigation; a table the user is reading (the diff,
    the runs, the bookmarks) claims them first, as a text field does on its own.
    """

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.ShortcutOverride and event.key() in _VIEW_KEYS and \
                not event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier:
            event.accept()
        return False


class _DocumentField:
    """A window attribute that is the document's (``window.modified`` is ``window.document.modified``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, window: Any, owner: type | None = None) -> Any:
        return self if window is None else getattr(window.document, self.name)

    def __set__(self, window: Any, value: Any) -> None:
        setattr(window.document, self.name, value)


class MainWindow(QMainWindow):
    """Context Engine Inspector's window. ``settings`` is injectable so tests stay isolated."""

    def __init__(
        self,
        settings: QSettings | None = None,
        *,
        config_path: str | None = None,
        engines: list[str] | None = None,
        plugin_dirs: list[str] | None = None,
        restore_layout: bool = True,
    ) -> None:
        super().__init__()
        self.setWindowTitle(APP)
        self.setWindowIcon(theme.app_icon())
        self.setObjectName("MainWindow")
        self.setAcceptDrops(True)
        self.setDockNestingEnabled(True)
        self.setCorner(Qt.Corner.TopLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.settings = settings if settings is not None else QSettings(ORG, "inspector")
        self.plugin_dirs = list(plugin_dirs or [])
        self.cursor = Cursor(self)
        # what is open (source, file names, session, comparison, bookmarks, unsaved state): the
        # window observes it and keeps its title and the panels' marks in step
        self.document = Document()
        self.document.subscribe(self._document_changed)
        self.compare_view: CompareView | None = None
        self.config_path = config_path
        self.current_panel_id = "timeline"
        # replaceable prompts (tests answer them directly)
        self.pick_session: Callable[[list[Any], str], str | None] = lambda s, p: dialogs.pick_session(self, s, p)
        self.ask_turn: Callable[[int, int], int | None] = self._ask_turn
        self.ask_bookmark: Callable[[int, Mark | None], tuple[str, str] | str | None] = (
            lambda k, m: dialogs.edit_bookmark(self, k, m)
        )
        self.ask_open_path: Callable[[], str | None] = self._ask_open_path
        self.ask_save_path: Callable[[str], str | None] = self._ask_save_path
        self.ask_compare_specs: Callable[[list[str]], list[str] | None] = (
            lambda engines: ask_specs(self, engines, self._default_specs(engines))
        )
        self.ask_comparison_path: Callable[[str], str | None] = self._ask_comparison_path
        self.ask_html_path: Callable[[str], str | None] = self._ask_html_path
        self.ask_unsaved: Callable[[], str] = self._ask_unsaved  # "save", "discard" or "cancel"
        self.ask_unsaved_chat: Callable[[], str] = self._ask_unsaved_chat  # the same answers, for a live chat
        self.ask_settings: Callable[[dict[str, Any]], dict[str, Any] | None] = (
            lambda values: settings_dialog.ask_settings(self, values, self._engine_names()))
        self.ask_settings_path: Callable[[str], str | None] = self._ask_settings_path

        # Everything is a dock; the central widget stays hidden so the docks share the window.
        self.message_bar = MessageBar()
        central = QWidget()
        self.setCentralWidget(central)
        central.hide()

        self.panels: dict[str, Panel] = {}
        self.docks: dict[str, QDockWidget] = {}
        #: the one runner of every background job (replays, loads, comparisons, the docks' own work)
        self.jobs = JobRunner(self)
        self.jobs.error.connect(lambda message, details: self.show_message(message, "error", details))
        for cls in PANEL_CLASSES:
            panel = cls(self.cursor)
            panel.jobs = self.jobs
            dock = QDockWidget(cls.title, self)
            dock.setObjectName(f"dock_{cls.panel_id}")
            dock.setWidget(_ScrollingDock(panel) if cls.panel_id in SCROLLED_PANELS else panel)
            dock.setFeatures(
                QDockWidget.DockWidgetFeature.DockWidgetMovable
                | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                | QDockWidget.DockWidgetFeature.DockWidgetClosable
            )
            panel.jump_requested.connect(self.cursor.set)
            panel.run_jump_requested.connect(self.jump_to_run)
            _catch_up_when_shown(dock, panel)
            self.panels[cls.panel_id] = panel
            self.docks[cls.panel_id] = dock
        self.panels["bookmarks"].delete_requested.connect(self.delete_bookmark)  # type: ignore[attr-defined]
        self._link_x_views()
        self._build_tool_docks(list(engines or []))
        self._compact: bool | None = None  # None: compact below COMPACT_BELOW px wide, as a preset would
        self.dock_hold = layout.SideDockHold(self, self.docks)

        self.replay_runner = ReplayRunner(self, self.jobs)
        self.replay_runner.progress.connect(self._replay_progress)
        self.replay_runner.finished.connect(self._replay_finished)
        self.replay_runner.failed.connect(self._replay_failed)
        self.replay_runner.cancelled.connect(self._replay_cancelled)
        self.replay_runner.abandoned.connect(self._replay_abandoned)
        self.replay_bar = ReplayBar()
        self.replay_bar.set_config(config_path)
        self.replay_bar.set_engines(available_engines(config_path, self.plugin_dirs, list(engines or [])),
                                    (engines or [None])[0])
        self.replay_bar.replay_requested.connect(self.start_replay)
        self.replay_bar.cancel_requested.connect(self.replay_runner.cancel)
        self.replay_runner.running_changed.connect(self.replay_bar.set_running)
        self.load_runner = LoadRunner(self, self.jobs)
        self.load_runner.finished.connect(self._load_finished)
        self.load_runner.failed.connect(self._load_failed)
        self._pending_load: tuple[str, int] | None = None
        self.compare_runner = CompareRunner(self, self.jobs)
        self.compare_runner.progress.connect(self._compare_progress)
        self.compare_runner.finished.connect(self._compare_finished)
        self.compare_runner.failed.connect(self._compare_failed)
        self.compare_runner.running_changed.connect(self.replay_bar.set_running)
        self.replay_bar.cancel_requested.connect(self.compare_runner.cancel)
        engine_names = [self.replay_bar.engine_combo.itemText(i) for i in range(self.replay_bar.engine_combo.count())]
        self.follow_panel.set_engines(engine_names, self.replay_bar.engine())
        self.doctor_panel.set_engines(engine_names, self.replay_bar.engine())

        self._build_actions()
        self._build_menus()
        self._build_toolbars()
        self.message_bar.closed.connect(self.clear_message)
        self.position_label = theme.TextLine(1, align=Qt.AlignmentFlag.AlignRight)
        self.position_label.setMinimumWidth(460)
        # a readout ignores its size hint elsewhere; the status bar must reserve its width or it
        # pushes the label past the window's edge
        self.position_label.setSizePolicy(QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Fixed)
        self.statusBar().addPermanentWidget(self.position_label)

        self.cursor.trace_changed.connect(self._on_trace_changed)
        self.cursor.changed.connect(self._on_cursor_changed)
        app = QApplication.instance()
        if app is not None:
            app.focusChanged.connect(self._focus_changed)

        self.resize(1600, 1000)
        self.reset_layout()
        if restore_layout:
            self.restore_layout()
        self._update_title()
        self._on_trace_changed(None)
        self._view_keys = _KeysStayInViews(self)
        events_view = self.panels["events"].view
        for view in self.findChildren(QAbstractItemView):
            if view is not events_view:  # in the event list the keys are the cursor's own
                view.installEventFilter(self._view_keys)

    # -- the document: what is open ------------------------------------------------------------------
    source_path = _DocumentField("source_path")
    trace_path = _DocumentField("trace_path")
    bundle_run = _DocumentField("bundle_run")
    session = _DocumentField("session")
    comparison = _DocumentField("comparison")
    comparison_path = _DocumentField("comparison_path")
    modified = _DocumentField("modified")

    def _document_changed(self, what: str) -> None:
        if what == MARKS:
            for panel in self.panels.values():
                panel.on_marks_changed()
        self._update_title()

    # -- tool docks: runs, live chat, follow, doctor ------------------------------------------------
    def _build_tool_docks(self, engines: list[str]) -> None:
        """Docks beside the nine trace panels: the comparison's Runs panel and the trace sources.

        They live in :attr:`tool_docks` (not :attr:`docks`, which maps one-to-one onto the
        trace panels). Runs follows the cursor like a panel; chat and follow produce traces.
        """
        self.runs_panel = RunsPanel(self.cursor)
        self.runs_panel.jump_requested.connect(self.cursor.set)
        self.runs_panel.primary_requested.connect(self.set_primary_run)
        self.chat_panel = ChatPanel(self.cursor, jobs=self.jobs)
        self.chat_panel.trace_updated.connect(lambda t: self._source_trace(t, "live chat"))
        self.follow_panel = FollowPanel(self._config_and_plugins, engines, jobs=self.jobs)
        self.follow_panel.trace_updated.connect(lambda t: self._source_trace(t, "follow"))
        self.doctor_panel = DoctorPanel(self._config_and_plugins, engines, jobs=self.jobs)
        self.panels["engine"].doctor_requested.connect(self.run_doctor)  # type: ignore[attr-defined]
        self.tool_docks: dict[str, QDockWidget] = {}
        for key, widget, title in (("runs", self.runs_panel, "Runs"), ("chat", self.chat_panel, "Live chat"),
                                   ("follow", self.follow_panel, "Follow"), ("doctor", self.doctor_panel, "Engine doctor")):
            dock = QDockWidget(title, self)
            dock.setObjectName(f"dock_{key}")
            dock.setWidget(_ScrollingDock(widget) if key in SCROLLED_PANELS else widget)
            dock.setFeatures(
                QDockWidget.DockWidgetFeature.DockWidgetMovable
                | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                | QDockWidget.DockWidgetFeature.DockWidgetClosable
            )
            if isinstance(widget, Panel):
                _catch_up_when_shown(dock, widget)
            self.tool_docks[key] = dock

    def trace_panels(self) -> list[Panel]:
        """Every panel that follows the trace and the cursor (the nine, plus Runs)."""
        return [*self.panels.values(), self.runs_panel]

    def _config_and_plugins(self) -> tuple[dict[str, Any], list[str]]:
        """The config the replay bar points at, and every plugin directory (for chat, follow, doctor)."""
        from inspector.config import load_config

        config = load_config(self.replay_bar.config_path)
        dirs = list(self.plugin_dirs) + [str(d) for d in (config.get("inspector") or {}).get("plugin_dirs") or []]
        return config, dirs

    def show_tool(self, key: str) -> None:
        dock = self.tool_docks[key]
        dock.show()
        dock.raise_()

    # -- layout ----------------------------------------------------------------------------------
    def _link_x_views(self) -> None:
        """Keep every request-axis plot on the same x range.

        pyqtgraph's own ``setXLink`` lines views up *on screen* when they overlap horizontally,
        which shifts the range of plots in docks of different widths; here the data range is
        copied as is.
        """
        views = [v for v in (p.x_view() for p in self.panels.values()) if v is not None]
        self._x_views = views
        self._x_syncing = False

        def sync(source: Any, rng: Any) -> None:
            if self._x_syncing:
                return
            self._x_syncing = True
            try:
                for view in views:
                    if view is not source:
                        view.setXRange(float(rng[0]), float(rng[1]), padding=0)
            finally:
                self._x_syncing = False

        for view in views:
            view.sigXRangeChanged.connect(sync)

    def reset_zoom(self) -> None:
        """Every request back in view on the shared request axis, y fitted again."""
        rows = self.compare_view.row_count if self.compare_view is not None else (
            len(self.trace.requests) if self.trace is not None else 0)
        for panel in self.trace_panels():
            view = panel.x_view()
            if view is not None:
                view.enableAutoRange(axis="y")
                view.setXRange(-0.5, max(1, rows) - 0.5, padding=0.01)

    def reset_layout(self) -> None:
        """The default arrangement: navigator left, plots top, detail panels tabbed below."""
        self._arrange(tabbed=True)

    def tile_all(self) -> None:
        """Every panel visible at once, no tabs (the layout the benchmark measures), where the window
        holds them all; in a smaller window the panels that declare a tab stay tabs, rather than the
        window growing past the screen."""
        have = self.size()
        self._arrange(tabbed=False)
        self.layout().activate()  # grows the window now to what the arrangement needs
        if self.width() > have.width() or self.height() > have.height():
            self._arrange(tabbed=False, stack=False)
            self.resize(have)

    def _arrange(self, *, tabbed: bool, stack: bool = True) -> None:
        d = self.docks
        tools = self.tool_docks
        # Reset gives the default (tool docks closed); tiling keeps the ones the user opened.
        opened = set() if tabbed else {key for key in ("chat", "follow", "doctor") if tools[key].isVisible()}
        for dock in [*d.values(), *tools.values()]:
            self.removeDockWidget(dock)
            dock.setFloating(False)
        L, T, B = (Qt.DockWidgetArea.LeftDockWidgetArea, Qt.DockWidgetArea.TopDockWidgetArea,
                   Qt.DockWidgetArea.BottomDockWidgetArea)
        H, V = Qt.Orientation.Horizontal, Qt.Orientation.Vertical
        compact = self.compact and tabbed
        action = self.act.get("compact") if hasattr(self, "act") else None
        if action is not None and action.isChecked() != self.compact:
            action.setChecked(self.compact)
        self.addDockWidget(L, d["events"])
        self.addDockWidget(L, d["bookmarks"])
        if compact:  # a small screen: the bookmarks a tab behind the events, the counters one below
            self.tabifyDockWidget(d["events"], d["bookmarks"])
        else:
            self.splitDockWidget(d["events"], d["bookmarks"], V)
        self.addDockWidget(T, d["timeline"])
        if not compact:
            self.splitDockWidget(d["timeline"], d["counters"], H)
        self.splitDockWidget(d["timeline"], d["compression"], V)
        self.addDockWidget(B, d["diff"])
        if compact:
            self.tabifyDockWidget(d["diff"], d["counters"])
        if tabbed:
            for name in ("request", "cache", "engine"):
                self.tabifyDockWidget(d["diff"], d[name])
        else:
            self.splitDockWidget(d["diff"], d["request"], H)
            self.splitDockWidget(d["request"], d["cache"], H)
            self.splitDockWidget(d["counters"], d["engine"], V)
        # every other panel where it says it goes: a tab beside another panel, or its own area;
        # tiled and stacked, a would-be tab goes below a panel of the bottom row or the right
        # column instead, in turn, so that no panel is a background tab (nor measured as one)
        columns = [d["diff"], d["request"], d["cache"], d["engine"]]
        below = 0
        for panel_id, dock in d.items():
            if panel_id in _ARRANGED:
                continue
            cls = type(self.panels[panel_id])
            if cls.tab_with in d and cls.tab_with != panel_id:
                if tabbed or not stack:
                    self.tabifyDockWidget(d[cls.tab_with], dock)
                else:
                    self.splitDockWidget(columns[below % len(columns)], dock, V)
                    below += 1
            else:
                self.addDockWidget(cls.area, dock)
        # tool docks join the bottom tab group: shown, they are one more tab; hidden, they take no room
        for key in ("runs", "chat", "follow", "doctor"):
            self.tabifyDockWidget(d["diff"], tools[key])
        for dock in d.values():
            dock.show()
        tools["runs"].show()
        for key in ("chat", "follow", "doctor"):  # sources and tools: View menu, Live menu, Engine panel
            tools[key].setVisible(key in opened)
        (tools["runs"] if self.comparison is not None else d["diff"]).raise_()
        if compact:
            d["events"].raise_()
        self._apply_default_sizes()
        QTimer.singleShot(0, self._hide_stale_tab_bars)
        # Dock sizes only stick once the new arrangement has been laid out; apply them again then.
        QTimer.singleShot(0, self._apply_default_sizes)

    def _hide_stale_tab_bars(self) -> None:
        """Leaving compact mode, QMainWindow leaves the old tab group's bar on screen although its
        docks are split apart again; a bar whose docks are no longer tabified is hidden."""
        titles = {dock.windowTitle(): dock for dock in [*self.docks.values(), *self.tool_docks.values()]}
        for bar in self.findChildren(QTabBar, options=Qt.FindChildOption.FindDirectChildrenOnly):
            docks = [titles.get(bar.tabText(i)) for i in range(bar.count())]
            if bar.isVisible() and docks and any(d is not None and not self.tabifiedDockWidgets(d) for d in docks):
                bar.hide()

    def _apply_default_sizes(self) -> None:
        """The preset's proportions for the current window size; the plots get what is left."""
        d = self.docks
        H, V = Qt.Orientation.Horizontal, Qt.Orientation.Vertical
        width = max(900, self.width())
        height = max(560, self.height())
        preset = layout.preset_for(self.width(), self.height())
        bottom = preset.bottom_height
        self.resizeDocks([d["events"], d["bookmarks"]], [int(height * 0.8), int(height * 0.15)], V)
        side = [d["events"], d["timeline"]] + ([d["counters"]] if not self.compact else [])
        counters = 0.0 if self.compact else (preset.counters_width or 0.22)
        events = preset.events_width
        fractions = [events, 1 - events - counters, counters]
        self.resizeDocks(side, [int(width * f) for f in fractions[:len(side)]], H)
        self.resizeDocks([d["timeline"], d["compression"]],
                         [int(height * 0.3), int(height * (0.08 if self.compact else 0.13))], V)
        self.resizeDocks([d["timeline"], d["diff"]], [int(height * (0.92 - bottom)), int(height * bottom)], V)
        if not self.tabifiedDockWidgets(d["diff"]):  # tiled: share the bottom row
            third = int(width * 0.72 / 3)
            self.resizeDocks([d["events"], d["diff"], d["request"], d["cache"]],
                             [int(width * 0.25), third, third, third], H)
        self.dock_hold.remember()

    def apply_preset(self, key: str) -> None:
        """Size the window for a screen (View → Layout for…) and arrange the docks for it."""
        preset = layout.PRESETS[key]
        if not (self.isMaximized() or self.isFullScreen()):
            self.resize(*preset.size)
        self.set_compact(preset.compact)

    def set_compact(self, on: bool) -> None:
        """Compact mode: bookmarks behind the events, counters with the detail tabs (small screens)."""
        self._compact = bool(on)
        self.reset_layout()

    @property
    def compact(self) -> bool:
        """Compact mode as chosen, or — until the user chooses — whether the window is narrow."""
        return self._compact if self._compact is not None else self.width() < layout.COMPACT_BELOW

    def save_layout(self) -> None:
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState(LAYOUT_VERSION))
        self.settings.setValue("window/layout_version", LAYOUT_VERSION)

    def restore_layout(self) -> bool:
        """Restore the saved dock layout; an old or damaged one is ignored (defaults stay)."""
        state = self.settings.value("window/state")
        geometry = self.settings.value("window/geometry")
        try:
            version = int(self.settings.value("window/layout_version", 0) or 0)
        except (TypeError, ValueError):
            version = 0
        ok = False
        if isinstance(geometry, QByteArray | bytes):
            self.restoreGeometry(QByteArray(geometry))
        if version == LAYOUT_VERSION and isinstance(state, QByteArray | bytes):
            ok = self.restoreState(QByteArray(state), LAYOUT_VERSION)
        return ok

    # -- actions ---------------------------------------------------------------------------------
    def _action(self, text: str, slot: Callable[[], Any], shortcut: str | QKeySequence | None = None, tip: str = "") -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        if tip:
            action.setToolTip(tip)
            action.setStatusTip(tip)
        action.triggered.connect(lambda _checked=False: slot())
        self.addAction(action)
        return action

    def _build_actions(self) -> None:
        c = self.cursor
        nav = self._navigate
        self.act = {
            "open": self._action("&Open…", self.open_dialog, QKeySequence.StandardKey.Open, "Open a session, a Hermes state.db or a saved trace"),
            "save": self._action("&Save trace", self.save, QKeySequence.StandardKey.Save, "Save the trace (with bookmarks and notes)"),
            "save_as": self._action("Save trace &as…", self.save_as, "Ctrl+Shift+S"),
            "export": self._action("&Export current panel as PNG…", self.export_dialog, "Ctrl+E"),
            "corpus": self._action("Open &batch results (Corpus)…", self.corpus_dialog, None,
                                   "The results of `context-inspector batch --out DIR`: a session × engine grid"),
            "settings": self._action("Se&ttings…", self.settings_dialog, "Ctrl+,",
                                     "Threshold, context length, model, live endpoint, cache profile, engine keys"),
            "quit": self._action("&Quit", self.close, QKeySequence.StandardKey.Quit),
            "prev": self._action("Previous event", lambda: nav(lambda: c.step(-1), "first event"), "Left"),
            "next": self._action("Next event", lambda: nav(lambda: c.step(1), "last event"), "Right"),
            "prev_turn": self._action("Previous turn", lambda: nav(c.prev_turn, "no earlier turn"), "Shift+Left"),
            "next_turn": self._action("Next turn", lambda: nav(c.next_turn, "no later turn"), "Shift+Right"),
            "prev_compress": self._action("Previous compression", lambda: nav(self._across("compress", False, c.prev_compression), "no earlier compression"), "Ctrl+Left"),
            "next_compress": self._action("Next compression", lambda: nav(self._across("compress", True, c.next_compression), "no later compression"), "Ctrl+Right"),
            "next_miss": self._action("Next cache miss", lambda: nav(self._across("miss", True, c.next_cache_miss), "no later cache miss"), "F3"),
            "prev_miss": self._action("Previous cache miss", lambda: nav(self._across("miss", False, c.prev_cache_miss), "no earlier cache miss"), "Shift+F3"),
            "next_fault": self._action("Next fault", lambda: nav(self._across("fault", True, c.next_fault), "no later fault"), "F4"),
            "prev_fault": self._action("Previous fault", lambda: nav(self._across("fault", False, c.prev_fault), "no earlier fault"), "Shift+F4"),
            "next_mark": self._action("Next bookmark", lambda: nav(c.next_bookmark, "no later bookmark"), "F2"),
            "prev_mark": self._action("Previous bookmark", lambda: nav(c.prev_bookmark, "no earlier bookmark"), "Shift+F2"),
            "home": self._action("First event", lambda: nav(c.home, "first event"), "Home"),
            "end": self._action("Last event", lambda: nav(c.end, "last event"), "End"),
            "goto": self._action("Go to turn…", self.go_to_turn_dialog, "Ctrl+G"),
            "bookmark": self._action("Bookmark / note…", self.bookmark_dialog, "Ctrl+B"),
            "replay": self._action("&Replay session", self.start_replay, "Ctrl+R"),
            "cancel": self._action("&Cancel replay", self.replay_runner.cancel),
            "compare": self._action("Compare &engines…", self.compare_dialog, "Ctrl+Shift+R",
                                    "Replay the open session with 2–4 engines or configs, in lockstep"),
            "save_comparison": self._action("Save &comparison…", self.save_comparison_dialog, None,
                                            "Save every run of the comparison in one file"),
            "export_html": self._action("Export comparison &report (HTML)…", self.export_html_dialog, None,
                                        "A self-contained HTML report: summary table, plots, compressions, faults"),
            "new_chat": self._action("New &chat session", self.new_chat_session, None,
                                     "Chat with the configured live endpoint through the selected engine"),
            "follow": self._action("&Follow a session…", lambda: self.show_tool("follow"), None,
                                   "Replay a session another program is writing, as it grows"),
            "doctor": self._action("Engine &doctor…", lambda: self.run_doctor(None), None,
                                   "Check the selected engine the way Hermes would load and call it"),
            "reset_zoom": self._action("Reset &zoom", self.reset_zoom, "Ctrl+0",
                                       "Show every request again after zooming or panning a plot"),
            "reset_layout": self._action("Reset layout", self.reset_layout),
            "preset_small": self._action("Layout for 1024 × 640 (compact)", lambda: self.apply_preset("1024x640")),
            "preset_medium": self._action("Layout for 1280 × 800", lambda: self.apply_preset("1280x800")),
            "compact": self._action("Compact mode", lambda: self.set_compact(not self.compact), None,
                                    "Bookmarks behind the events and the counters with the detail tabs"),
            "tile": self._action("Show all panels (tiled)", self.tile_all),
            "about": self._action("About", self._about),
        }

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        file_menu.addAction(self.act["open"])
        self.recent_menu = QMenu("Open &recent", self)
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        file_menu.addMenu(self.recent_menu)
        file_menu.addSeparator()
        file_menu.addAction(self.act["corpus"])
        for name in ("save", "save_as", "export"):
            file_menu.addAction(self.act[name])
        file_menu.addSeparator()
        for name in ("save_comparison", "export_html"):
            file_menu.addAction(self.act[name])
        file_menu.addSeparator()
        file_menu.addAction(self.act["settings"])
        file_menu.addSeparator()
        file_menu.addAction(self.act["quit"])
        nav_menu = bar.addMenu("&Navigate")
        for name in ("prev", "next", "prev_turn", "next_turn", "prev_compress", "next_compress", "next_miss",
                     "prev_miss", "next_fault", "prev_fault", "home", "end", "goto", "bookmark", "next_mark", "prev_mark"):
            nav_menu.addAction(self.act[name])
        replay_menu = bar.addMenu("&Replay")
        replay_menu.addAction(self.act["replay"])
        replay_menu.addAction(self.act["cancel"])
        replay_menu.addSeparator()
        replay_menu.addAction(self.act["compare"])
        replay_menu.addSeparator()
        replay_menu.addAction(self.act["doctor"])
        live_menu = bar.addMenu("&Live")
        live_menu.addAction(self.act["new_chat"])
        live_menu.addAction(self.act["follow"])
        view_menu = bar.addMenu("&View")
        for dock in self.docks.values():
            view_menu.addAction(dock.toggleViewAction())
        view_menu.addSeparator()
        for dock in self.tool_docks.values():
            view_menu.addAction(dock.toggleViewAction())
        view_menu.addSeparator()
        view_menu.addAction(self.act["reset_zoom"])
        view_menu.addAction(self.act["reset_layout"])
        self.act["compact"].setCheckable(True)
        for name in ("preset_small", "preset_medium", "compact"):
            view_menu.addAction(self.act[name])
        view_menu.addAction(self.act["tile"])
        help_menu = bar.addMenu("&Help")
        help_menu.addAction(self.act["about"])

    def _build_toolbars(self) -> None:
        nav = QToolBar("Navigation", self)
        nav.setObjectName("toolbar_navigation")
        nav.setMovable(False)
        for name, text in (("home", "|◀ first"), ("prev_turn", "◀◀ turn"), ("prev", "◀ event"), ("next", "event ▶"),
                           ("next_turn", "turn ▶▶"), ("end", "last ▶|")):
            self.act[name].setIconText(text)
            nav.addAction(self.act[name])
        nav.addSeparator()
        for name, text in (("prev_compress", "◀ compress"), ("next_compress", "compress ▶"), ("next_miss", "cache miss ▶"),
                           ("next_fault", "fault ▶"), ("bookmark", "★ bookmark")):
            self.act[name].setIconText(text)
            nav.addAction(self.act[name])
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, nav)
        replay = QToolBar("Replay", self)
        replay.setObjectName("toolbar_replay")
        replay.setMovable(False)
        replay.addWidget(self.replay_bar)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, replay)
        self.insertToolBarBreak(replay)
        self.message_toolbar = QToolBar("Messages", self)
        self.message_toolbar.setObjectName("toolbar_messages")
        self.message_toolbar.setMovable(False)
        self.message_toolbar.addWidget(self.message_bar)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, self.message_toolbar)
        self.insertToolBarBreak(self.message_toolbar)
        self.message_toolbar.hide()

    # -- messages ----------------------------------------------------------------------------------
    def show_message(self, text: str, level: str = "error", details: str = "") -> None:
        """Show ``text`` in the message strip under the toolbars (errors never open a modal box)."""
        self.message_toolbar.show()  # first: the bar fits its height to the width it has when shown
        self.message_bar.show_message(text, level, details)

    def clear_message(self) -> None:
        self.message_bar.active = False
        self.message_toolbar.hide()

    # -- trace and cursor ---------------------------------------------------------------------------
    def set_trace(self, trace: Trace | None, *, cursor: int = 0, source: str | None = None) -> None:
        """Show ``trace``; every panel rebuilds once, then the cursor lands on ``cursor``.

        Showing a single trace ends comparison mode: the panels go back to one run.
        """
        self._set_compare_view(None)
        self.modified = False
        if source is not None:
            self.source_path = source
        self.cursor.set_trace(trace, cursor)
        self._update_title()

    @property
    def trace(self) -> Trace | None:
        return self.cursor.trace

    def _on_trace_changed(self, trace: Trace | None) -> None:
        self.document.trace = trace
        for panel in self.trace_panels():
            try:
                panel.set_trace(trace)
            except Exception as exc:  # noqa: BLE001 - one broken panel must not take the window down
                self.show_message(f"{panel.title} panel failed to render this trace: {type(exc).__name__}: {exc}")
        has = trace is not None and len(trace) > 0
        for name in ("save", "save_as", "export", "prev", "next", "prev_turn", "next_turn", "prev_compress",
                     "next_compress", "next_miss", "prev_miss", "next_fault", "prev_fault", "home", "end", "goto",
                     "bookmark", "next_mark", "prev_mark"):
            self.act[name].setEnabled(has if name not in ("export",) else True)
        for name in ("save_comparison", "export_html"):
            self.act[name].setEnabled(self.comparison is not None)
        self._update_position()

    def _on_cursor_changed(self, k: int) -> None:
        for panel in self.trace_panels():
            try:
                panel.set_cursor(k)
            except Exception as exc:  # noqa: BLE001
                self.show_message(f"{panel.title} panel failed at event {k}: {type(exc).__name__}: {exc}")
        self._update_position()

    def _update_position(self) -> None:
        trace = self.trace
        if trace is None or not len(trace):
            self.position_label.setText("no trace" if trace is None else "empty trace")
            return
        k = self.cursor.index
        ev = trace.events[k]
        # Short parts, most useful first: the status bar is narrow in a comparison at 1280 px.
        parts = [f"event {k:,}/{len(trace) - 1:,}", ev.kind]
        if ev.turn is not None:
            parts.append(f"turn {ev.turn}/{trace.turn_count - 1}")  # turns count from 0, as in the list
        req = trace.request_at(k)
        if req is not None:
            parts.append(f"req #{req.index}")
        view = self.compare_view
        if view is not None:
            parts.insert(0, view.label(view.primary))
            parts.append(view.describe_row(view.row_at(k)))
        self.position_label.setText(" · ".join(parts))

    def _navigate(self, move: Callable[[], bool], nothing: str) -> None:
        if self.trace is None or not len(self.trace):
            return
        bar = self.statusBar()
        if not move():
            bar.showMessage(nothing.capitalize(), 2500)
        elif bar.currentMessage() == getattr(self, "_nav_notice", None):
            bar.clearMessage()  # "No later turn" must not outlive a move that worked
        self._nav_notice = nothing.capitalize()

    def _across(self, what: str, forward: bool, single: Callable[[], bool]) -> Callable[[], bool]:
        """A navigation that, in a comparison, visits ``what`` in every run (switching the run the
        cursor follows to the one that has it), and in one trace is ``single``."""

        def move() -> bool:
            view = self.compare_view
            if view is None:
                return single()
            found = view.step_all(what, self.cursor.index, forward)
            return found is not None and self.jump_to_run(*found)

        return move

    def jump_to_run(self, run: int, event: int) -> bool:
        """Put the cursor on ``event`` of run ``run`` of the comparison (that run becomes the primary)."""
        view = self.compare_view
        if view is None:
            return self.cursor.set(event)
        if run not in view.runs:
            return False
        if run == view.primary:
            return self.cursor.set(event)
        view.primary = run
        self.cursor.set_trace(view.primary_trace, event)
        self._update_title()
        return True

    def _focus_changed(self, _old: QWidget | None, new: QWidget | None) -> None:
        widget = new
        while widget is not None:
            if isinstance(widget, Panel):
                self.current_panel_id = widget.panel_id
                return
            widget = widget.parentWidget()

    # -- go to turn, bookmarks --------------------------------------------------------------------------
    def _ask_turn(self, max_turn: int, current: int) -> int | None:
        value, ok = QInputDialog.getInt(self, "Go to turn", f"Turn (0–{max_turn}):", current, 0, max(0, max_turn), 1)
        return value if ok else None

    def go_to_turn_dialog(self) -> None:
        trace = self.trace
        if trace is None or not trace.turn_count:
            self.statusBar().showMessage("This trace has no turns", 2500)
            return
        turns = [trace.events[i].turn for i in range(len(trace)) if trace.events[i].kind == "turn"]
        max_turn = max((t for t in turns if t is not None), default=0)
        current = trace.turn_at(self.cursor.index)
        turn = self.ask_turn(max_turn, current if current is not None else 0)
        if turn is not None and not self.cursor.go_to_turn(turn):
            if trace.turn_event(turn) is None:
                self.statusBar().showMessage(f"No turn {turn} in this trace", 2500)

    def mark_at(self, k: int) -> Mark | None:
        return self.document.mark_at(k)

    def bookmark_dialog(self) -> None:
        trace = self.trace
        if trace is None or not len(trace):
            return
        k = self.cursor.index
        existing = self.mark_at(k)
        answer = self.ask_bookmark(k, existing)
        if answer is None:
            return
        if answer == dialogs.DELETE:
            self.delete_bookmark(k)
            return
        label, note = answer  # type: ignore[misc]
        self.set_bookmark(k, label or f"event {k}", note)

    def set_bookmark(self, k: int, label: str, note: str = "") -> Mark:
        """Add or update the mark at event ``k`` (saved with the trace)."""
        return self.document.set_bookmark(k, label, note)

    def delete_bookmark(self, k: int) -> None:
        self.document.delete_bookmark(k)

    # -- opening ---------------------------------------------------------------------------------------
    def _ask_open_path(self) -> str | None:
        start = str(Path(self.source_path.split("#")[0]).parent) if self.source_path else ""
        dialog = QFileDialog(self, "Open session, state.db or trace", start, OPEN_FILTER)
        # any name: ``FILE#3`` (session 3 of a trajectory file or a state.db) is not a file name the
        # dialog could find, but open_path reads it as on the command line
        dialog.setFileMode(QFileDialog.FileMode.AnyFile)
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptOpen)
        try:
            if dialog.exec() != QFileDialog.DialogCode.Accepted or not dialog.selectedFiles():
                return None
            return dialog.selectedFiles()[0] or None
        finally:
            dialog.deleteLater()

    def open_dialog(self) -> None:
        path = self.ask_open_path()
        if path:
            self.open_path(path)

    def corpus_dialog(self, folder: str | None = None) -> Any:
        """The Corpus view of a batch result folder (see inspector.ui.corpus); returns the dialog."""
        from inspector.batch.store import StoreError, read_results
        from inspector.ui.corpus import CorpusDialog

        if folder is None:
            folder = QFileDialog.getExistingDirectory(self, "Batch result folder (--out DIR)")
            if not folder:
                return None
        try:
            results = read_results(folder)
        except StoreError as exc:
            self.show_message(str(exc))
            return None
        dialog = CorpusDialog(results, folder, self.open_corpus_cell, self)
        dialog.show()
        return dialog

    def open_corpus_cell(self, result: dict[str, Any]) -> None:
        """One session × engine of a batch: its saved trace, else the session replayed with that engine."""
        trace_path = result.get("trace_path")
        if trace_path and os.path.isfile(trace_path):
            self.open_path(trace_path)
            return
        combo = self.replay_bar.engine_combo
        if combo.findText(result["engine"]) >= 0:
            combo.setCurrentText(result["engine"])
        if self.open_path(result["session"]) and result.get("setting") != "default":
            self.show_message(f"replayed with {result['engine']} under this window's config, not the batch's "
                              f"{result['setting']}: run the batch with --save-traces to open its own trace", "info")

    def open_path(self, path: str, *, sync_replay: bool = False, cursor: int = 0,
                  compare: list[str] | None = None) -> bool:
        """Open any supported file. Sessions are replayed (on a worker thread unless ``sync_replay``).

        With ``compare`` (2–4 ``--engine`` specs) a session is replayed once per spec and shown
        as a comparison. Returns False (with the reason in the message bar) when nothing could
        be opened.
        """
        path = os.fspath(path)
        try:
            kind = loaders.sniff(path)
            if kind == loaders.KIND_TRACE and not sync_replay and os.path.getsize(path) > ASYNC_LOAD_BYTES:
                self._stop_background_jobs()  # a big trace is read on a worker: the window stays live
                self._pending_load = (path, cursor)
                self.statusBar().showMessage(f"Loading {path}…")
                self.load_runner.start(path)
                return True
            if kind == loaders.KIND_TRACE:
                trace = loaders.load_trace_file(path)
                self._stop_background_jobs()
                self.session = None
                self.trace_path, self.bundle_run = path, None
                self.set_trace(trace, cursor=cursor, source=path)
                self.clear_message()
            elif kind == loaders.KIND_BUNDLE:
                comparison = loaders.load_comparison_file(path)
                with_trace = [r for r in comparison.runs if r.trace is not None]
                if not with_trace:
                    raise loaders.OpenError(f"{path}: the comparison bundle holds no runs with a trace")
                self._stop_background_jobs()
                self.session = None
                if len(with_trace) == 1:
                    self.trace_path, self.bundle_run = path, comparison.runs.index(with_trace[0])
                    self.set_trace(with_trace[0].trace, cursor=cursor, source=path)
                    self.show_message(f"Comparison bundle with one run ({with_trace[0].label}): shown as a trace.", "info")
                else:
                    self.trace_path, self.bundle_run = None, None
                    self.set_comparison(comparison, cursor=cursor, source=path)
                    self.comparison_path = path
                    self._report_failed_runs(comparison)
            else:
                spec = path
                db_path, sid = loaders.split_spec(path)
                if sid is None:  # a source with several sessions (state.db, trajectory file): ask which
                    summaries = loaders.list_many_sessions(db_path)
                    if kind == loaders.KIND_DB and not summaries:
                        raise loaders.OpenError(f"{db_path}: no sessions in this database")
                    if summaries:
                        sid = self.pick_session(summaries, db_path)
                        if sid is None:
                            return False
                        spec = f"{db_path}#{sid}"
                session = loaders.load_session_file(spec)
                self._stop_background_jobs()
                self.session = session
                self.trace_path, self.bundle_run = None, None
                self.source_path = spec
                self._update_title()
                warnings = list(getattr(session, "warnings", []) or [])
                if warnings:
                    self.show_message(f"{len(warnings)} warning(s) reading the session: {warnings[0]}", "warning",
                                      "\n".join(map(str, warnings[:50])))
                else:
                    self.clear_message()
                if compare:
                    self.start_comparison(list(compare), sync=sync_replay, cursor=cursor)
                else:
                    self.start_replay(sync=sync_replay, cursor=cursor)
        except loaders.OpenError as exc:
            self.show_message(f"Could not open {path}: {exc}")
            return False
        except Exception as exc:  # noqa: BLE001 - whatever a reader raises, the window survives
            self.show_message(f"Could not open {path}: {type(exc).__name__}: {exc}")
            return False
        self._add_recent(path)
        return True

    def _load_finished(self, trace: Trace) -> None:
        path, cursor = self._pending_load or ("", 0)
        self._pending_load = None
        self.session = None
        self.trace_path, self.bundle_run = path, None
        self.set_trace(trace, cursor=cursor, source=path)
        self.clear_message()
        self.statusBar().showMessage(f"Loaded {path}", 3000)
        self._add_recent(path)

    def _load_failed(self, message: str, details: str) -> None:
        path = self._pending_load[0] if self._pending_load else "the trace"
        self._pending_load = None
        self.show_message(f"Could not open {path}: {message}", "error", details)

    def _stop_background_jobs(self) -> None:
        """A new file replaces what is shown: the replay or comparison of the old one is abandoned."""
        for runner in (self.replay_runner, self.compare_runner, self.load_runner):
            if runner.running and not runner.wait(2_000):
                runner.abandon()
                self.show_message("The previous replay is still inside an engine hook; it finishes in the "
                                  "background and its result is discarded.", "warning")

    def _recent(self) -> list[str]:
        value = self.settings.value("recent_files", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or [])]

    def _add_recent(self, path: str) -> None:
        path = os.path.abspath(path) if os.path.exists(path) else path
        recent = [p for p in self._recent() if p != path]
        recent.insert(0, path)
        self.settings.setValue("recent_files", recent[:MAX_RECENT])

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        recent = self._recent()
        if not recent:
            action = self.recent_menu.addAction("(none)")
            action.setEnabled(False)
            return
        for path in recent:
            action = self.recent_menu.addAction(path)
            action.triggered.connect(lambda _c=False, p=path: self.open_path(p))

    # -- replay ----------------------------------------------------------------------------------------
    def start_replay(self, *, sync: bool = False, cursor: int = 0) -> None:
        """Replay the open session with the engine and config chosen in the replay bar."""
        if self.session is None:
            self.show_message("Open a session first: a replay needs a transcript (a saved trace is already replayed).",
                              "info")
            return
        if self.compare_runner.running:
            self.show_message("A comparison is running; cancel it first.", "warning")
            return
        if self.replay_runner.running:
            self.replay_runner.wait(5_000)
        req = ReplayRequest(self.session, self.replay_bar.engine(), self.replay_bar.config_path, self.plugin_dirs)
        self._pending_cursor = cursor
        if sync:
            try:
                trace = run_replay(req)
            except Exception as exc:  # noqa: BLE001
                self._replay_failed(f"{type(exc).__name__}: {exc}", "")
                return
            self._replay_finished(trace)
            return
        self.statusBar().showMessage(f"Replaying with {req.engine or 'the configured engine'}…")
        try:
            self.replay_runner.start(req)
        except RuntimeError as exc:
            self.show_message(str(exc), "warning")

    def _replay_progress(self, done: int, total: int) -> None:
        self.replay_bar.set_progress(done, total)

    def _replay_finished(self, trace: Trace) -> None:
        self.replay_bar.set_idle_text(f"done · {len(trace.requests):,} requests")
        self.statusBar().showMessage("Replay finished", 4000)
        self.set_trace(trace, cursor=getattr(self, "_pending_cursor", 0))
        faults = trace.fault_events
        if faults:
            self.show_message(f"The engine faulted {len(faults)} time(s) in this replay; F4 jumps to the next fault.",
                              "warning")

    def _replay_failed(self, message: str, details: str) -> None:
        self.replay_bar.set_idle_text("failed")
        self.show_message(f"Replay failed: {message}", "error", details)

    def _replay_cancelled(self, trace: Trace | None) -> None:
        self.replay_bar.set_idle_text("cancelled")
        if trace is not None and len(trace):
            self.set_trace(trace)
            self.show_message(f"Replay cancelled: showing the partial trace ({trace.turn_count} turns).", "warning")
        else:
            self.show_message("Replay cancelled.", "info")

    def _replay_abandoned(self, trace: Trace | None, message: str, stack: str) -> None:
        """The replay's worker was killed (a hook past its deadline) or died: show what it streamed, the fault last."""
        self.replay_bar.set_idle_text("abandoned")
        self.statusBar().showMessage("Replay abandoned", 4000)
        if trace is not None and len(trace):
            self.set_trace(trace)
            self.cursor.set(trace.fault_events[-1] if trace.fault_events else len(trace) - 1)
        self.show_message(f"Replay abandoned: {message}; the trace keeps the turns it finished.", "warning", stack)

    # -- comparison mode -------------------------------------------------------------------------------
    def _set_compare_view(self, view: CompareView | None) -> None:
        """Tell every comparison-aware panel what it is showing (before the trace arrives)."""
        leaving = view is None and self.compare_view is not None
        self.compare_view = view
        if view is None:
            self.comparison = None
        if leaving and not self.tool_docks["runs"].visibleRegion().isEmpty():
            self.docks["diff"].raise_()  # the Runs tab is empty outside a comparison: show the diff
        for panel in self.trace_panels():
            setter = getattr(panel, "set_comparison", None)
            if callable(setter):
                setter(view)

    def set_comparison(self, comparison: Any, *, primary: int | None = None, cursor: int = 0,
                       source: str | None = None) -> None:
        """Show a comparison: the cursor steps through the primary run, every run follows by row."""
        view = CompareView(comparison, primary)
        entering = self.compare_view is None
        self._set_compare_view(view)
        self.comparison = comparison
        self.modified = False
        if source is not None:
            self.source_path = source
        self.cursor.set_trace(view.primary_trace, cursor)
        self._update_title()
        self.tool_docks["runs"].show()
        self.tool_docks["runs"].raise_()
        if entering:
            # the comparison widgets (per-run counters, run tables) change the docks' minimum sizes,
            # and QMainWindow hands the difference to whichever dock it likes: restore the proportions
            QTimer.singleShot(0, self._apply_default_sizes)

    def set_primary_run(self, run: int) -> None:
        """Step through another run: the cursor keeps its alignment row, in the new run's events."""
        view = self.compare_view
        if view is None or run not in view.runs or run == view.primary:
            return
        k = self.cursor.index
        row = view.row_at(k)
        # The same hook of the row (e.g. its compress), not the row's request: switching runs
        # must not move the cursor within the step being compared.
        target = view.event_for(run, row) if row is None else view.alignment.event_at_phase(run, row, view.primary, k)
        k = target or 0
        view.primary = run
        self.cursor.set_trace(view.primary_trace, k)
        self._update_title()

    def row_events(self) -> dict[int, int | None]:
        """Every run's event at the cursor (comparison mode), for tests and the status bar."""
        view = self.compare_view
        return view.events_at(self.cursor.index) if view is not None else {}

    def _default_specs(self, engines: list[str]) -> list[str]:
        if self.comparison is not None:
            return [r.spec.describe() for r in self.comparison.runs][:4]
        demo = self._demo_engines()
        if demo:
            return demo
        current = self.replay_bar.engine()
        others = [e for e in engines if e != current]
        return [current, *others[:1]] if current else engines[:2]

    def _demo_engines(self) -> list[str]:
        try:
            config, _dirs = self._config_and_plugins()
        except Exception:  # noqa: BLE001
            return []
        names = (config.get("inspector") or {}).get("demo_engines") or []
        return [str(n) for n in names][:4] if isinstance(names, list) else []

    def compare_dialog(self) -> None:
        if self.session is None:
            self.show_message("Open a session first: a comparison replays one transcript with several engines.",
                              "info")
            return
        engines = [self.replay_bar.engine_combo.itemText(i) for i in range(self.replay_bar.engine_combo.count())]
        specs = self.ask_compare_specs(engines)
        if specs:
            self.start_comparison(specs)

    def start_comparison(self, specs: list[str], *, sync: bool = False, cursor: int = 0) -> bool:
        """Replay the open session once per spec (2–4) and show the runs in lockstep.

        On a worker thread with progress in the replay bar and Cancel, unless ``sync`` (tests,
        screenshots). False when nothing was started (no session, bad specs, already running).
        """
        from inspector.compare import SpecError
        from inspector.ui.compare import check_specs, run_compare

        if self.session is None:
            self.show_message("Open a session first: a comparison replays one transcript with several engines.",
                              "info")
            return False
        try:
            check_specs(specs)
        except SpecError as exc:
            self.show_message(f"Cannot compare: {exc}")
            return False
        if self.replay_runner.running or self.compare_runner.running:
            self.show_message("A replay or comparison is already running; cancel it first.", "warning")
            return False
        req = CompareRequest(self.session, list(specs), self.replay_bar.config_path, list(self.plugin_dirs))
        self._pending_cursor = cursor
        if sync:
            try:
                comparison = run_compare(req)
            except Exception as exc:  # noqa: BLE001
                self._compare_failed(f"{type(exc).__name__}: {exc}", "")
                return False
            self._compare_finished(comparison)
            return True
        self.statusBar().showMessage(f"Comparing {len(specs)} runs…")
        self.replay_bar.progress.setFormat(f"comparing {len(specs)} runs…")
        self.compare_runner.start(req)
        return True

    def _compare_progress(self, done: int, total: int, text: str) -> None:
        self.replay_bar.progress.setRange(0, max(1, total))
        self.replay_bar.progress.setValue(done)
        self.replay_bar.progress.setFormat(f"comparing: turn {done:,} / {total:,}")
        self.replay_bar.progress.setToolTip(text)

    def _compare_finished(self, comparison: Any) -> None:
        ok = [r for r in comparison.runs if r.trace is not None]
        if not ok:
            self.replay_bar.set_idle_text("failed")
            first = next((r.error for r in comparison.runs if r.error), "no run produced a trace")
            self.show_message(f"Comparison failed: {first}", "error",
                              "\n\n".join(f"{r.label}: {r.error}\n{r.details}" for r in comparison.runs))
            return
        cancelled = self.compare_runner.cancelled
        self.replay_bar.set_idle_text("cancelled" if cancelled else f"done · {len(ok)} runs")
        self.statusBar().showMessage("Comparison finished", 4000)
        self.trace_path, self.bundle_run, self.comparison_path = None, None, None
        if len(ok) == 1:
            self.set_trace(ok[0].trace, cursor=getattr(self, "_pending_cursor", 0))
        else:
            self.set_comparison(comparison, cursor=getattr(self, "_pending_cursor", 0))
        if cancelled:
            self.show_message("Comparison cancelled: showing the partial runs.", "warning")
        elif not self._report_failed_runs(comparison):
            self.clear_message()

    def _report_failed_runs(self, comparison: Any) -> bool:
        bad = [r for r in comparison.runs if r.status != "ok"]
        if bad:
            self.show_message("; ".join(f"{r.label}: {r.status}" + (f" ({r.error})" if r.error else "") for r in bad),
                              "warning", "\n\n".join(f"{r.label}: {r.error}\n{r.details}" for r in bad))
        return bool(bad)

    def _compare_failed(self, message: str, details: str) -> None:
        self.replay_bar.set_idle_text("failed")
        self.show_message(f"Comparison failed: {message}", "error", details)

    def _suggest(self, suffix: str) -> str:
        """Beside the source file, unless that is inside the app (the bundled demo): then home."""
        base = Path((self.source_path or "comparison").split("#")[0])
        stem = base.name.split(".")[0] or "comparison"
        folder = base.parent
        if folder.resolve().is_relative_to(theme.REPO_ROOT.resolve()):
            folder = Path.home()
        return str(folder / f"{stem}{suffix}")

    def _ask_comparison_path(self, suggestion: str) -> str | None:
        path, _ = QFileDialog.getSaveFileName(self, "Save comparison", suggestion,
                                              "Comparisons (*.json *.json.gz);;All files (*)")
        return path or None

    def _ask_html_path(self, suggestion: str) -> str | None:
        path, _ = QFileDialog.getSaveFileName(self, "Export comparison report", suggestion, "HTML (*.html)")
        return path or None

    def save_comparison_dialog(self) -> None:
        if self.comparison is None:
            self.show_message("No comparison open: Replay → Compare engines… first.", "info")
            return
        path = self.ask_comparison_path(self.comparison_path or self._suggest(".comparison.json.gz"))
        if path:
            self.save_comparison_to(path)

    def save_comparison_to(self, path: str) -> bool:
        """Write every run (with its bookmarks) and the specs into one file that File → Open reads back."""
        if self.comparison is None:
            return False
        problem = self._output_problem(path, ours=is_saved_file)
        if problem:
            self.show_message(f"Not saving to {path}: {problem}")
            return False
        try:
            from inspector.compare import save_comparison

            save_comparison(self.comparison, path)
        except Exception as exc:  # noqa: BLE001
            self.show_message(f"Could not save {path}: {type(exc).__name__}: {exc}")
            return False
        self.document.saved(path, comparison=True)
        self._add_recent(path)
        self.statusBar().showMessage(f"Saved comparison {path}", 4000)
        return True

    def export_html_dialog(self) -> None:
        if self.comparison is None:
            self.show_message("No comparison open: Replay → Compare engines… first.", "info")
            return
        path = self.ask_html_path(self._suggest(".report.html"))
        if path:
            self.export_html_to(path)

    def export_html_to(self, path: str) -> bool:
        """The self-contained HTML report of the comparison (escaped text, no scripts)."""
        if self.comparison is None:
            return False
        problem = self._output_problem(path, ours=is_html_report)
        if problem:
            self.show_message(f"Not writing {path}: {problem}")
            return False
        try:
            from inspector.compare.report import write_html_report

            write_html_report(self.comparison, path)
        except Exception as exc:  # noqa: BLE001
            self.show_message(f"Could not write {path}: {type(exc).__name__}: {exc}")
            return False
        self.statusBar().showMessage(f"Wrote report {path}", 4000)
        return True

    # -- live sources: chat and follow, and the doctor ------------------------------------------------
    def new_chat_session(self) -> bool:
        """Start a fresh chat: the session (a worker process) is made at the first Send, with the selected engine."""
        from inspector.live.responder import LiveSettings
        from inspector.live.worker_chat import WorkerChat

        try:
            config, dirs = self._config_and_plugins()
        except Exception as exc:  # noqa: BLE001
            self.show_message(f"Could not read the config: {exc}")
            return False
        if not self.keep_live_chat():
            return False
        if not self.chat_panel.reset(5_000):
            self.show_message("The chat is still waiting for a reply; cancel it first.", "warning")
            return False
        engine = self.replay_bar.engine() or None

        def factory() -> WorkerChat:  # the engine, its host and the openai client run in a worker process
            return WorkerChat(engine, config, plugin_dirs=dirs)

        settings = LiveSettings.from_config(config)
        self.chat_panel.set_session_factory(factory, settings)
        self.show_tool("chat")
        self.chat_panel.input.setFocus()
        if not settings.base_url or not settings.model:
            self.show_message("No live endpoint configured: set inspector.live.base_url and model in config.yaml "
                              "(the API key is read from the environment variable inspector.live.api_key_env).",
                              "warning")
        return True

    def _source_trace(self, trace: Trace | None, what: str) -> None:
        """A live chat or follow produced a new snapshot: show it, keeping the cursor at the end if it was there."""
        if trace is None:
            return
        current = self.trace
        at_end = current is None or not len(current) or self.cursor.index >= len(current) - 1 or self.comparison is not None
        cursor = len(trace) - 1 if at_end else self.cursor.index
        self.session = None
        self.trace_path, self.bundle_run, self.comparison_path = None, None, None
        self.set_trace(trace, cursor=cursor, source=self.source_path if what == "follow" and self.source_path else None)
        self.statusBar().showMessage(f"{what}: {len(trace.requests):,} requests", 3000)

    def run_doctor(self, engine: str | None = None) -> bool:
        """Run the engine doctor on ``engine`` (default: the replay bar's engine) in the Doctor dock."""
        self.show_tool("doctor")
        return self.doctor_panel.run(engine or self.replay_bar.engine() or None)

    # -- saving and export -----------------------------------------------------------------------------
    def _ask_save_path(self, suggestion: str) -> str | None:
        path, _ = QFileDialog.getSaveFileName(self, "Save trace", suggestion, "Traces (*.json *.json.gz);;All files (*)")
        return path or None

    def save(self) -> bool:
        if self.comparison is not None and self.comparison_path:
            return self.save_comparison_to(self.comparison_path)  # saved once: Ctrl+S saves again, no dialog
        if self.trace_path is None or self.comparison is not None:
            return self.save_as()
        return self.save_to(self.trace_path)

    def save_as(self) -> bool:
        if self.trace is None:
            return False
        if self.comparison is not None:  # a trace file holds one run: save the comparison, all runs
            self.save_comparison_dialog()
            return self.comparison_path is not None and not self.modified
        path = self.ask_save_path(self._suggest(".trace.json"))
        if not path:
            return False
        self.bundle_run = None
        return self.save_to(path)

    def save_to(self, path: str) -> bool:
        """Write the trace (and its bookmarks) to ``path``; a bundle only gets its marks rewritten."""
        trace = self.trace
        if trace is None:
            return False
        problem = self._output_problem(path, ours=is_saved_file)
        if problem:
            self.show_message(f"Not saving to {path}: {problem}")
            return False
        try:
            from inspector.trace.io import save_marks, save_trace

            if self.bundle_run is not None and path == self.trace_path:
                save_marks(path, trace.marks, run=self.bundle_run)
            else:
                save_trace(trace, path)
        except Exception as exc:  # noqa: BLE001 - disk full, permissions, missing module…
            self.show_message(f"Could not save {path}: {type(exc).__name__}: {exc}")
            return False
        self.document.saved(path)
        self._add_recent(path)
        self.statusBar().showMessage(f"Saved {path}", 4000)
        return True

    def export_dialog(self) -> None:
        name = self.current_panel_id
        path, _ = QFileDialog.getSaveFileName(self, f"Export {self.panels[name].title} as PNG", f"{name}.png", "PNG (*.png)")
        if path:
            self.export_panel(name, path)

    def export_panel(self, panel_id: str, path: str) -> bool:
        """Save a PNG of one panel (rendered at the cursor even when it is a background tab)."""
        panel: QWidget | None = self.panels.get(panel_id)
        dock = self.docks.get(panel_id)
        if panel is None and panel_id in self.tool_docks:
            dock = self.tool_docks[panel_id]
            panel = dock.widget()
            if isinstance(panel, QScrollArea):
                panel = panel.widget()
        if panel is None or dock is None:
            names = ", ".join([*self.panels, *self.tool_docks])
            self.show_message(f"No panel named {panel_id!r}; panels: {names}")
            return False
        if not dock.isVisible():
            dock.show()
        dock.raise_()
        QApplication.processEvents()
        if isinstance(panel, Panel):
            panel.refresh()
        ok = self._write_image(panel.grab(), path)
        if not ok:
            self.show_message(f"Could not write {path}")
        return ok

    def grab_window(self, path: str) -> bool:
        return self._write_image(self.grab(), path)

    def _write_image(self, pixmap: Any, path: str) -> bool:
        """Save ``pixmap`` as ``path`` without ever truncating a file it cannot replace.

        ``QPixmap.save`` empties an existing file before it finds it cannot encode the format,
        so the image goes to a temporary file first and replaces ``path`` only once written.
        """
        problem = self._output_problem(path, ours=is_image)
        if problem:
            self.show_message(f"Not writing {path}: {problem}")
            return False
        fmt = Path(path).suffix.lstrip(".").upper() or "PNG"
        from PySide6.QtCore import QBuffer, QByteArray, QIODevice

        encoded = QByteArray()
        buffer = QBuffer(encoded)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        if not pixmap.save(buffer, fmt):
            return False
        buffer.close()
        try:
            write_atomic(path, bytes(encoded.data()))
            return True
        except OSError:
            return False

    def _output_problem(self, path: str, *, ours: Callable[[bytes], bool]) -> str | None:
        """Why ``path`` must not be written: the session this window opened, its config, or a file
        the inspector did not write (the save dialog's overwrite question is no guard for those)."""
        from inspector.outputs import file_head, is_saved_file, output_problem

        inputs = [self.config_path] if self.config_path else []
        source = self.source_path
        if source:
            try:
                mine = os.path.isfile(source) and is_saved_file(file_head(source))
            except OSError:
                mine = False
            if not mine:  # a trace or comparison this window opened may be saved over; a session never
                inputs.append(source)
        return output_problem(path, inputs=inputs, ours=ours)

    # -- drag and drop, close, misc -----------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt override
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt override
        files = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if files:
            event.acceptProposedAction()
            QTimer.singleShot(0, lambda: self.open_path(files[0]))

    def _ask_unsaved(self) -> str:
        return self._ask_save("The bookmarks of this trace are not saved.",
                              "Save them in the trace file before closing?")

    def _ask_save(self, text: str, question: str) -> str:
        """Save / Discard / Cancel, Save by default: ``"save"``, ``"discard"`` or ``"cancel"``."""
        box = QMessageBox(QMessageBox.Icon.Question, APP, text, parent=self)
        box.setInformativeText(question)
        box.setStandardButtons(QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                               | QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Save)
        answer = box.exec()
        return {QMessageBox.StandardButton.Save: "save", QMessageBox.StandardButton.Discard: "discard"}.get(
            QMessageBox.StandardButton(answer), "cancel")

    # -- settings --------------------------------------------------------------------------------------
    def _engine_names(self) -> list[str]:
        combo = self.replay_bar.engine_combo
        return [combo.itemText(i) for i in range(combo.count())]

    def _ask_settings_path(self, suggestion: str) -> str | None:
        path, _ = QFileDialog.getSaveFileName(self, "Save settings as a config file", suggestion,
                                              "YAML (*.yaml *.yml);;All files (*)")
        return path or None

    def settings_dialog(self) -> bool:
        """Edit threshold, window, model, live endpoint, cache profile and the engine's keys; save
        them as a config file the replay bar (and ``--config``) then uses. True when saved."""
        source = self.replay_bar.config_path
        try:
            values = settings_dialog.current_values(source)
            data = settings_dialog.read_file_data(source)
        except Exception as exc:  # noqa: BLE001 - a broken config: say so, change nothing
            self.show_message(f"Could not read the config {source}: {exc}")
            return False
        edited = self.ask_settings(values)
        if edited is None:
            return False
        path = self.ask_settings_path(settings_dialog.suggested_path(source))
        if not path:
            return False
        inputs = [p for p in (source, self.source_path) if p]
        if source and os.path.abspath(path) == os.path.abspath(source) and settings_dialog.is_settings_file(
                Path(source).read_bytes()[:200]):
            inputs = [p for p in inputs if p != source]  # a settings file this dialog wrote may be saved again
        try:
            settings_dialog.write_settings(path, settings_dialog.apply_values(data, edited, values), inputs=inputs,
                                           keys=list(edited))
        except Exception as exc:  # noqa: BLE001 - refused path, invalid value, disk full
            self.show_message(f"Settings not saved: {exc}")
            return False
        self.replay_bar.set_config(path)
        self.show_message(f"Settings saved to {path}: the next replay uses them (context-inspector --config {path}).",
                          "info")
        return True

    def _ask_unsaved_chat(self) -> str:
        return self._ask_save("The live chat is not saved.",
                              "Save its transcript (OpenAI JSONL) before it is discarded?")

    def keep_live_chat(self) -> bool:
        """Before a live chat is discarded (quit, new chat): ask to save it. True when it may go."""
        if not self.chat_panel.unsaved or self.chat_panel.session is None:
            return True
        choice = self.ask_unsaved_chat()
        if choice == "cancel":
            return False
        if choice == "save":  # a reply still streaming: the panel says to wait, and nothing is lost
            return self.chat_panel.save_transcript() is not None
        return True

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt override
        if self.modified and self.trace is not None:
            choice = self.ask_unsaved()
            if choice == "cancel" or (choice == "save" and not self.save()):
                event.ignore()
                return
        if not self.keep_live_chat():
            event.ignore()
            return
        self.replay_runner.wait(10_000)
        self.compare_runner.wait(10_000)
        self.load_runner.wait(10_000)
        self.chat_panel.shutdown(10_000)
        self.follow_panel.shutdown(10_000)
        self.doctor_panel.shutdown(10_000)
        self.jobs.shutdown(2_000)  # anything else still running is cancelled; a stuck job is left behind
        try:
            self.save_layout()
        except Exception:  # noqa: BLE001 - a read-only settings file must not block closing
            pass
        app = QApplication.instance()
        if app is not None:
            try:
                app.focusChanged.disconnect(self._focus_changed)
            except (RuntimeError, TypeError):
                pass
        super().closeEvent(event)

    def _update_title(self) -> None:
        name = self.document.name
        engine = ""
        if self.trace is not None:
            eng = self.trace.meta.get("engine")
            engine = (eng.get("name") if isinstance(eng, dict) else str(eng or "")) or ""
        if self.compare_view is not None:
            view = self.compare_view
            engine = "compare " + " vs ".join(view.label(r) for r in view.runs)
        title = APP
        if name:
            title = f"{name}{' · ' + engine if engine else ''} — {APP}"
        elif engine and self.compare_view is not None:
            title = f"{engine} — {APP}"
        self.setWindowTitle(("* " if self.modified else "") + title)

    def _about(self) -> None:
        self.show_message(
            "Context Engine Inspector — step through what a context engine did, one event at a time. "
            "←/→ event · Shift+←/→ turn · Ctrl+←/→ compression · F3 cache miss · F4 fault · F2 bookmark (Shift: back) · Ctrl+G turn · Ctrl+B add bookmark",
            "info",
        )
