"""``run_gui(args)``: the window for ``context-inspector [FILE]``, or an offscreen screenshot.

With no file the bundled demo session is opened as a comparison of the engines listed in
``inspector.demo_engines`` of the project's config.yaml (``make run`` shows compressor, lcm
and recall side by side), or replayed with the configured engine when none are listed. Two or
more ``--engine`` specs open FILE (or the demo) as a comparison. The window is shown before
anything is replayed; replays run on worker threads with progress in the replay bar. With
``--screenshot OUT.png`` everything happens synchronously (load, replay, move the cursor,
render) and the process exits 0 after writing the PNG, so it works on machines without a
display and in tests.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from inspector.ui.theme import RESOURCES

DEMO_SESSION = RESOURCES / "demo" / "demo_session.json"
PROJECT_CONFIG = RESOURCES.parent / "config.yaml"


def demo_engines(config_path: str | None) -> list[str]:
    """``inspector.demo_engines`` from the config (the runs ``make run`` compares); [] if unset or unreadable."""
    try:
        from inspector.config import load_config

        names = (load_config(config_path).get("inspector") or {}).get("demo_engines") or []
    except Exception:  # noqa: BLE001 - a broken config must not stop the window from opening
        return []
    return [str(n) for n in names if str(n).strip()][:4] if isinstance(names, list) else []


def _parse_size(text: str | None) -> tuple[int, int]:
    """``WxH`` for ``--size``; a ValueError that says what is wrong, rather than another size silently."""
    try:
        w, h = (int(v) for v in str(text or "1600x1000").lower().split("x", 1))
    except ValueError:
        raise ValueError(f"--size {text!r}: expected WIDTHxHEIGHT in pixels, e.g. 1280x800") from None
    if w <= 0 or h <= 0:
        raise ValueError(f"--size {text}: width and height must be positive")
    return w, h


def make_app(argv: list[str] | None = None) -> Any:
    """The QApplication (created once), styled; pyqtgraph options set before any plot exists."""
    import pyqtgraph as pg
    from PySide6.QtWidgets import QApplication

    from inspector.ui import theme

    app = QApplication.instance()
    if app is None:
        # Qt spreads some raster painting (scroll-bar and background fills) over a thread pool.
        # For a window of small widgets that is hand-offs, not speed: with it off, the p95 of a
        # cursor step fell from 27-41 ms to 22-24 ms on a 2-core machine (inspector.bench.ui_bench).
        # A user's own setting wins.
        os.environ.setdefault("QT_NO_GUI_THREADPOOL", "1")
        app = QApplication(argv if argv is not None else [sys.argv[0] if sys.argv else "context-inspector"])
        app.setApplicationName("Context Engine Inspector")
        app.setOrganizationName("ContextEngineInspector")
        theme.apply_palette(app)
    pg.setConfigOptions(antialias=False, background=theme.PLOT_BG, foreground=theme.PLOT_FG)
    return app


def run_gui(args: Any) -> int:
    """Entry point used by ``inspector.cli``; returns the process exit code."""
    screenshot = getattr(args, "screenshot", None)
    if screenshot and not os.environ.get("QT_QPA_PLATFORM") and not os.environ.get("DISPLAY") and sys.platform.startswith("linux"):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    app = make_app()
    from PySide6.QtCore import QSettings

    from inspector.ui.window import MainWindow

    engines = list(getattr(args, "engine", None) or [])
    path = getattr(args, "file", None)
    config_path = getattr(args, "config", None)
    if not path and config_path is None and PROJECT_CONFIG.exists():
        config_path = str(PROJECT_CONFIG)  # the demo is configured by the project's own config.yaml
    compare = engines if len(engines) > 1 else []
    if not path and not engines:
        compare = demo_engines(config_path)
        compare = compare if len(compare) > 1 else []
    settings = QSettings("ContextEngineInspector", "inspector")
    window = MainWindow(
        settings,
        config_path=config_path,
        engines=[e.split(":", 1)[0] for e in engines],
        plugin_dirs=list(getattr(args, "plugin_dir", None) or []),
        restore_layout=not screenshot,
    )
    cursor = getattr(args, "cursor", None)
    if screenshot:
        try:
            size = _parse_size(getattr(args, "size", None))
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return _screenshot(app, window, path, screenshot, cursor, getattr(args, "panel", None), size, compare)
    window.show()
    source = path or (str(DEMO_SESSION) if DEMO_SESSION.exists() else None)
    if source:
        from PySide6.QtCore import QTimer

        # after the first paint: the window is up at once, the replays follow on worker threads
        QTimer.singleShot(0, lambda: window.open_path(source, cursor=cursor or 0, compare=compare or None))
    else:
        window.show_message(
            f"The bundled demo ({DEMO_SESSION}) is missing. Open a session, a Hermes state.db or a saved trace "
            "with File → Open, or drop one on the window.",
            "info",
        )
    code = app.exec()
    return int(code or 0)


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")


def _screenshot(app: Any, window: Any, path: str | None, out: str, cursor: int | None, panel: str | None,
                size: tuple[int, int], compare: list[str] | None = None) -> int:
    """Render offscreen and write ``out``; exit code 0 when the PNG was written (2 otherwise)."""
    from inspector.outputs import is_image, output_problem

    problem = None if Path(out).suffix.lower() in IMAGE_SUFFIXES else \
        f"give an image file name ({', '.join(IMAGE_SUFFIXES)})"
    problem = problem or output_problem(out, inputs=[path or ""], ours=is_image, what="(.png)")
    if problem:
        print(f"error: --screenshot {out}: {problem}", file=sys.stderr)
        return 2
    window.resize(*size)
    window.reset_layout()
    window.show()
    app.processEvents()
    if (window.width(), window.height()) != tuple(size):
        print(f"note: the window cannot be {size[0]}x{size[1]}; its smallest size is used: "
              f"{window.width()}x{window.height()}", file=sys.stderr)
    source = path or (str(DEMO_SESSION) if DEMO_SESSION.exists() else None)

    def no_picker(summaries: list[Any], db: str) -> str | None:  # nobody can answer a dialog offscreen
        ids = ", ".join(str(getattr(s, "id", s)) for s in summaries[-20:])
        from inspector.ui.loaders import KIND_DB, sniff

        if sniff(db) != KIND_DB:  # a transcript file: its first session, as the headless commands do
            first = str(getattr(summaries[0], "id", summaries[0]))
            print(f"note: {db} holds {len(summaries)} sessions; showing {first} (pick one with "
                  f"{Path(db).name}#<id>: {ids})", file=sys.stderr)
            return first
        print(f"error: {db} holds {len(summaries)} sessions; pick one with {Path(db).name}#<id> ({ids})", file=sys.stderr)
        return None

    window.pick_session = no_picker
    from inspector.host.guard import wake_main_thread_on_timeout

    wake_main_thread_on_timeout()  # the replay below runs its hooks on this thread, as the headless commands do
    if source and not window.open_path(source, sync_replay=True, cursor=cursor or 0, compare=compare or None):
        if window.message_bar.text():
            print(window.message_bar.text(), file=sys.stderr)
        window.close()
        return 2  # nothing of what was asked for to picture
    if not source:
        window.show_message(f"The bundled demo ({DEMO_SESSION}) is missing; nothing to show.", "info")
    if cursor is not None and window.trace is not None:
        window.cursor.set(cursor)
    app.processEvents()
    window.reset_layout()
    app.processEvents()
    Path(out).parent.mkdir(parents=True, exist_ok=True) if Path(out).parent != Path("") else None
    if panel:
        ok = window.export_panel(panel, out)
    else:
        for p in window.panels.values():
            p.refresh() if p.isVisible() else None
        app.processEvents()
        ok = window.grab_window(out)
    message = window.message_bar.text()
    if message:
        print(message, file=sys.stderr)
    window.replay_runner.wait(1_000)
    window.compare_runner.wait(1_000)
    window.close()
    window.deleteLater()
    app.processEvents()
    if not ok:
        print(f"error: could not write {out}", file=sys.stderr)
        return 2
    print(out)
    return 0
