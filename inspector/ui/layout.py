"""Layout that holds: when the window grows or shrinks, the plots take the difference.

With every panel a dock (no central widget) ``QMainWindow`` hands a window's extra width to
whichever dock area it likes — in practice the Events dock, which reached 1,000–1,270 px while
the plots shrank to 150–300 px — and the docks never give it back. :class:`SideDockHold`
remembers the width of the side docks (the event list, the counters), the height of the
compression strip and the detail tabs' share of the height whenever the *user* changes them (a
separator drag: the window kept its size) and puts them back after every window resize, so the
token timeline takes the difference and a grow-shrink-grow ends where it started.

:data:`PRESETS` are the window sizes the layout is tuned for; compact mode stacks the detail
panels and the counters into one tab group for small screens.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, QSize, Qt, QTimer
from PySide6.QtWidgets import QApplication, QDockWidget, QMainWindow


@dataclass(frozen=True, slots=True)
class Preset:
    """A window size and the fractions of it the side docks get (the plots take the rest)."""

    name: str
    size: tuple[int, int]
    events_width: float
    counters_width: float
    bottom_height: float
    compact: bool


PRESETS: dict[str, Preset] = {
    "1024x640": Preset("1024 × 640 (compact)", (1024, 640), 0.27, 0.0, 0.50, True),
    "1280x800": Preset("1280 × 800", (1280, 800), 0.24, 0.22, 0.50, False),
    "1920x1080": Preset("1920 × 1080", (1920, 1080), 0.22, 0.18, 0.48, False),
}

# a window narrower than this opens (and resets) in compact mode until the user chooses
COMPACT_BELOW = 1200

# the docks held across window resizes: (dock name, orientation of the size that is held)
HELD: tuple[tuple[str, Qt.Orientation], ...] = (
    ("events", Qt.Orientation.Horizontal),
    ("counters", Qt.Orientation.Horizontal),
    ("compression", Qt.Orientation.Vertical),
    ("diff", Qt.Orientation.Vertical),
)


class SideDockHold(QObject):
    """Keeps the side docks at the size the user gave them while the window is resized."""

    def __init__(self, window: QMainWindow, docks: dict[str, QDockWidget]) -> None:
        super().__init__(window)
        self.window = window
        self.docks = docks
        self.held: dict[str, int] = {}
        self._window_size = QSize()
        self._restoring = False
        self._diff_share: float | None = None
        self._correcting = False
        self._passes = 0
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self.restore)
        # QMainWindow applies a resize over a few event-loop passes: what the docks do meanwhile
        # is the window's doing, not the user's
        self._settle = QTimer(self)
        self._settle.setSingleShot(True)
        self._settle.setInterval(150)
        self._settle.timeout.connect(self._settled)
        self._reread = False
        window.installEventFilter(self)
        for name, _o in HELD:
            docks[name].installEventFilter(self)

    def _size_of(self, name: str, orientation: Qt.Orientation) -> int:
        dock = self.docks[name]
        return dock.width() if orientation == Qt.Orientation.Horizontal else dock.height()

    def remember(self) -> None:
        """Take the docks' current sizes as the ones to hold (after a reset, a preset, a drag)."""
        self._timer.stop()  # the sizes being remembered replace any restore still pending
        self._window_size = self.window.size()
        self._read_held()
        self._reread = True  # once the arrangement has settled: what it settled to is what is held
        self._settle.start()

    def _read_held(self) -> None:
        self.held = {name: self._size_of(name, o) for name, o in HELD if self._in_row(name)}
        self._note_share()

    def _settled(self) -> None:
        if self._reread and self.window.size() == self._window_size:
            self._read_held()
        self._reread = False

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.Resize:
            if watched is self.window:
                if self.held and self.window.size() != self._window_size:
                    self._settle.start()
                    self._timer.start()  # once the window's own layout has settled
            elif not self._restoring and self.window.size() == self._window_size and not self._timer.isActive() \
                    and not self._settle.isActive() and QApplication.mouseButtons() != Qt.MouseButton.NoButton:
                # the window kept its size and a button is down: the user dragged a separator; hold
                # that (a panel whose content grew is not a reason for its dock to stay wider)
                name = watched.objectName().removeprefix("dock_")
                for held_name, o in HELD:
                    if held_name == name and self.docks[name].isVisible():
                        self.held[name] = self._size_of(name, o)
                        self._note_share()
        return False

    def restore(self) -> None:
        """Put the held docks back. QMainWindow rounds what ``resizeDocks`` asks (by a separator,
        or more for a dock in a tab group, and applies it over several passes), so it is asked
        again, up to twice, while a dock is not where it was held."""
        self._restore_once()
        if not self._correcting:
            self._correcting = True
            self._passes = 0
            QTimer.singleShot(60, self._correct)

    def _correct(self) -> None:
        self._passes += 1
        missed = {n: self.held[n] - self._size_of(n, o) for n, o in HELD if n in self.held and self._in_row(n)}
        if any(abs(v) > 1 for v in missed.values()) and self._passes <= 2:
            self._restore_once()
            QTimer.singleShot(60, self._correct)
            return
        self._correcting = False

    def _restore_once(self) -> None:
        """Put the held docks back at their sizes; the plot docks absorb the difference.

        ``resizeDocks`` is given every dock of a row (or column) at once: given only the side
        dock, QMainWindow hands the freed space straight back to it.
        """
        if not self.held:
            return
        d, held = self.docks, self.held
        self._restoring = True
        self._settle.start()
        try:
            row = [n for n in ("events", "timeline", "counters") if self._in_row(n)]
            if "timeline" in row and any(n in held for n in row if n != "timeline"):
                total = sum(d[n].width() for n in row)
                sizes = {n: held.get(n, d[n].width()) for n in row if n != "timeline"}
                sizes["timeline"] = max(200, total - sum(sizes.values()))
                self.window.resizeDocks([d[n] for n in row], [sizes[n] for n in row], Qt.Orientation.Horizontal)
            if "diff" in held and self._in_row("diff") and self._in_row("timeline") and self._in_row("compression"):
                # the detail tabs keep their share of the column (a taller window shows more diff
                # rows too); the compression strip keeps its height; the token timeline takes the rest
                total = d["timeline"].height() + d["compression"].height() + d["diff"].height()
                compression = held.get("compression", d["compression"].height())
                share = self._diff_share or 0.4
                timeline = max(120, total - int(total * share) - compression)
                self.window.resizeDocks([d["timeline"], d["compression"], d["diff"]],
                                        [timeline, compression, max(1, total - timeline - compression)],
                                        Qt.Orientation.Vertical)
        finally:
            self._restoring = False
        self._window_size = self.window.size()

    def _note_share(self) -> None:
        """The detail tabs' share of the plot column's height, as the user left it."""
        d = self.docks
        if all(self._in_row(n) for n in ("timeline", "compression", "diff")):
            total = d["timeline"].height() + d["compression"].height() + d["diff"].height()
            self._diff_share = d["diff"].height() / total if total else None

    def _in_row(self, name: str) -> bool:
        """Docked, shown, and where the default layout puts it beside the plots (in compact mode the
        counters are one of the detail tabs below: not in the plots' row)."""
        dock = self.docks[name]
        if not (dock.isVisible() and not dock.isFloating() and dock.width() and dock.height()):
            return False
        if name == "counters":
            return self.window.dockWidgetArea(dock) == self.window.dockWidgetArea(self.docks["timeline"])
        return True


def preset_for(width: int, height: int) -> Preset:
    """The preset tuned for the screen size nearest ``width`` × ``height`` (from below)."""
    fitting = [p for p in PRESETS.values() if p.size[0] <= max(width, 1024) and p.size[1] <= max(height, 640)]
    return max(fitting, key=lambda p: p.size) if fitting else PRESETS["1024x640"]
