"""Fixtures for the window tests: isolated settings, synthetic traces, a window, a leak check.

Traces come from :mod:`inspector.ui.synthetic` (built directly through the Trace model), so the
panels are tested without running an engine; one test in ``test_window`` also runs the real
host on a tiny session to cover the replay path end to end.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QCoreApplication, QEvent, QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication, QWidget  # noqa: E402

import inspector.ui  # noqa: E402,F401 - applies the PySide6 refcount guard before any signal
from inspector.trace.model import Trace  # noqa: E402
from inspector.ui.cursor import Cursor  # noqa: E402
from inspector.ui.panels.base import Panel  # noqa: E402
from inspector.ui.synthetic import build_trace, empty_trace  # noqa: E402


def _flush_deletes() -> None:
    """Run pending deleteLater() calls (Qt only does it from the event loop)."""
    for _ in range(3):
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        QApplication.processEvents()
    gc.collect()


@pytest.fixture(scope="session", autouse=True)
def _isolated_settings(tmp_path_factory: pytest.TempPathFactory) -> None:
    """QSettings write under a temp dir, never into the developer's real config."""
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path_factory.mktemp("settings")))


@pytest.fixture(autouse=True)
def no_leaked_widgets(qapp: QApplication) -> Iterator[None]:
    """Fail a test that leaves top-level widgets alive after it closed what it opened (napari's idea)."""
    from inspector.ui.app import make_app

    make_app()
    _flush_deletes()
    before = {id(w) for w in QApplication.topLevelWidgets()}
    yield
    _flush_deletes()
    leaked = [w for w in QApplication.topLevelWidgets() if id(w) not in before]
    names = [f"{type(w).__name__}({w.objectName() or w.windowTitle()!r})" for w in leaked]
    for w in leaked:  # clean up so one failure does not cascade into the next tests
        w.close()
        w.deleteLater()
    _flush_deletes()
    assert not leaked, f"top-level widgets leaked: {names}"


@pytest.fixture
def settings(tmp_path: Path) -> QSettings:
    return QSettings(str(tmp_path / "inspector.ini"), QSettings.Format.IniFormat)


@pytest.fixture(scope="session")
def demo_trace() -> Trace:
    """Demo-like: several compressions, a model switch, cache hits and prefix breaks, no faults."""
    return build_trace(60, faults=False, seed=3)


@pytest.fixture(scope="session")
def faulty_trace() -> Trace:
    """Engine exceptions in select_context, a timed-out compress and host faults."""
    return build_trace(60, faults=True, seed=7)


@pytest.fixture(scope="session")
def lifecycle_only_trace() -> Trace:
    """Events but no provider request: panels must not assume a request exists."""
    return build_trace(0)


TRACE_KINDS = ("empty", "lifecycle", "demo", "faulty")


@pytest.fixture(params=TRACE_KINDS)
def any_trace(request: pytest.FixtureRequest, demo_trace: Trace, faulty_trace: Trace, lifecycle_only_trace: Trace) -> Trace:
    return {"empty": empty_trace(), "lifecycle": lifecycle_only_trace, "demo": demo_trace, "faulty": faulty_trace}[
        request.param
    ]


@pytest.fixture
def make_window(qapp: QApplication, settings: QSettings) -> Iterator:
    """Factory for shown MainWindows that are closed and deleted at teardown."""
    from inspector.ui.window import MainWindow

    made: list[QWidget] = []

    def make(**kwargs) -> MainWindow:
        kwargs.setdefault("restore_layout", False)
        window = MainWindow(kwargs.pop("settings", settings), **kwargs)
        window.ask_unsaved = lambda: "discard"  # teardown closes windows; never a modal question
        window.ask_unsaved_chat = lambda: "discard"
        window.resize(1400, 900)
        window.show()
        QApplication.processEvents()
        made.append(window)
        return window

    yield make
    for window in made:
        window.close()
        window.deleteLater()
    _flush_deletes()


@pytest.fixture
def window(make_window):
    return make_window()


@pytest.fixture
def shown(qapp) -> Iterator:  # noqa: ANN001
    """A cursor plus panels wired like the window does, shown at a given size; deleted at teardown."""
    made: list[Panel] = []
    cursor = Cursor()

    def make(cls: type[Panel], trace: Trace | None, width: int = 900, height: int = 500) -> Panel:
        panel = cls(cursor)
        cursor.trace_changed.connect(panel.set_trace)
        cursor.changed.connect(panel.set_cursor)
        panel.jump_requested.connect(cursor.set)
        panel.resize(width, height)
        panel.show()
        cursor.set_trace(trace)
        QApplication.processEvents()
        made.append(panel)
        return panel

    yield cursor, make
    for panel in made:
        panel.close()
        panel.deleteLater()
    cursor.deleteLater()
