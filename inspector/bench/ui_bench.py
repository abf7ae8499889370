"""UI benchmark (not a test): open a 10,000-request trace and step the cursor with every panel visible.

Prints the time to build the window, load the trace into every panel and show it, and the
p50/p95/max time of one cursor step, measured until Qt has processed the resulting events
(including repaints). By default every panel is tiled on screen, the most a step can cost;
``--layout default`` measures the arrangement the app opens with, where the panels in background
tabs skip the step. Targets from issue 5: open under 1 s, p95 step under 16 ms; issue 21: random
jump p95 under 16 ms. It prints figures and asserts nothing.

The machine this runs on is shared, so the step series is repeated (``--rounds``) and each
round printed: compare figures from the same run, not across runs. Steps are also split by
whether the provider request changed, because those steps (one in five) repaint the request,
diff, cache and plot panels and so decide the p95. After opening, the main window is watched
while idle: a layout that keeps re-fitting the docks repaints everything many times a second.
``--breakdown`` then prints where a step's and a random jump's time goes, panel by panel (render
and paint).

    QT_QPA_PLATFORM=offscreen python -m inspector.bench.ui_bench [--requests 10000] [--steps 400]
"""

from __future__ import annotations

import argparse
import atexit
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from typing import Any


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _report(name: str, samples: list[float]) -> None:
    if not samples:
        print(f"  {name:<28} n=0")
        return
    ms = [s * 1000 for s in samples]
    print(f"  {name:<28} n={len(ms):<4} p50 {_pct(ms, 0.5):6.2f} ms   p95 {_pct(ms, 0.95):6.2f} ms   "
          f"max {max(ms):7.2f} ms   mean {statistics.fmean(ms):6.2f} ms")


def _count_relayouts(app: Any, window: Any, seconds: float) -> int:
    """Layout requests the main window receives while nothing happens (a settled window gets none)."""
    from PySide6.QtCore import QEvent, QObject

    seen = [0]

    class Watch(QObject):
        def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
            if obj is window and event.type() == QEvent.Type.LayoutRequest:
                seen[0] += 1
            return False

    watch = Watch()
    app.installEventFilter(watch)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.01)
    app.removeEventFilter(watch)
    return seen[0]


def _breakdown(app: Any, window: Any, trace: Any, steps: int) -> None:
    """Per-panel render time and per-widget paint time (CPU) of forward steps, by request change.

    Paint events are delivered from an event filter so each widget's own paint can be timed;
    that adds overhead, so these figures explain the headline ones rather than replace them.
    """
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QWidget

    def owner(widget: Any) -> str:
        names = []
        while widget is not None:
            name = widget.objectName() or type(widget).__name__
            if name.startswith("panel_"):
                return name[len("panel_"):] + ("/" + names[-1] if names else "")
            names.append(name)
            widget = widget.parentWidget()
        return "window/" + names[0]

    paint: Counter[str] = Counter()
    busy = [False]

    class Timer(QObject):
        def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
            if event.type() != QEvent.Type.Paint or busy[0] or not isinstance(obj, QWidget):
                return False
            busy[0] = True
            start = time.thread_time()
            try:
                area = obj.parentWidget()
                if area is not None and hasattr(area, "viewport") and area.viewport() is obj:
                    area.viewportEvent(event)  # item views and graphics views paint from here
                else:
                    obj.event(event)
            finally:
                busy[0] = False
            paint[owner(obj)] += time.thread_time() - start
            return True

    render: Counter[str] = Counter()
    originals: dict[str, Callable[[int], None]] = {}
    for name, panel in window.panels.items():
        originals[name] = panel.render_cursor

        def timed(k: int, name: str = name, original: Callable[[int], None] = panel.render_cursor) -> None:
            start = time.thread_time()
            original(k)
            render[name] += time.thread_time() - start

        panel.render_cursor = timed
    timer = Timer()
    app.installEventFilter(timer)
    groups: dict[str, tuple[Counter[str], Counter[str], list[float]]] = {
        "changed": (Counter(), Counter(), []), "stayed": (Counter(), Counter(), []), "jump": (Counter(), Counter(), []),
    }
    cursor = window.cursor
    rng = random.Random(1)
    for n in range(steps + steps // 4):
        before = trace.request_at(cursor.index)
        paint.clear()
        render.clear()
        start = time.thread_time()
        if n < steps:
            cursor.step(1)
        else:
            cursor.set(rng.randrange(len(trace)))
        app.processEvents()
        total = time.thread_time() - start
        group = "jump" if n >= steps else "changed" if trace.request_at(cursor.index) is not before else "stayed"
        g_render, g_paint, g_total = groups[group]
        g_render.update(render)
        g_paint.update(paint)
        g_total.append(total)
    app.removeEventFilter(timer)
    for name, panel in window.panels.items():
        panel.render_cursor = originals[name]
    print("breakdown (CPU ms per move, instrumented):")
    for group, (g_render, g_paint, g_total) in groups.items():
        n = len(g_total)
        if not n:
            continue
        what = "random jumps" if group == "jump" else f"steps where the request {group}"
        print(f"  {what}: n={n}, mean {statistics.fmean(g_total) * 1000:.1f} ms")
        print("    render_cursor: " + ", ".join(f"{k} {v * 1000 / n:.2f}" for k, v in g_render.most_common(6)))
        print("    paint:         " + ", ".join(f"{k} {v * 1000 / n:.2f}" for k, v in g_paint.most_common(8)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3, help="repeat the step series (shared machines are noisy)")
    parser.add_argument("--size", default="1600x1000")
    parser.add_argument("--layout", choices=("tiled", "default"), default="tiled",
                        help="tiled: every panel on screen; default: the app's own tabbed arrangement")
    parser.add_argument("--breakdown", action="store_true", help="also print per-panel render and paint times")
    args = parser.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from inspector.ui.app import make_app
    from inspector.ui.synthetic import build_trace
    from inspector.ui.window import MainWindow

    app = make_app()
    t0 = time.perf_counter()
    trace = build_trace(args.requests, context_length=32_000, seed=1)
    t_gen = time.perf_counter() - t0
    print(f"trace: {len(trace.requests):,} requests, {len(trace):,} events, {len(trace.store.messages):,} distinct "
          f"messages, {len(trace.compress_events)} compressions (generated in {t_gen:.2f} s, not counted)")

    w, h = (int(v) for v in args.size.split("x"))
    # A throwaway file: Qt saves settings by renaming a new file over the old one, which would
    # replace /dev/null itself when the benchmark runs as root.
    scratch = tempfile.mkdtemp(prefix="ui-bench-")
    atexit.register(shutil.rmtree, scratch, True)
    settings = QSettings(os.path.join(scratch, "inspector.ini"), QSettings.Format.IniFormat)
    t0 = time.perf_counter()
    window = MainWindow(settings, restore_layout=False)
    window.resize(w, h)
    t_ctor = time.perf_counter() - t0
    window.show()
    arrange = window.tile_all if args.layout == "tiled" else window.reset_layout
    arrange()  # after show: dock sizes only apply to a laid-out window
    app.processEvents()
    t_shown = time.perf_counter() - t0
    t1 = time.perf_counter()
    window.set_trace(trace)
    app.processEvents()
    t_loaded = time.perf_counter() - t1
    t_open = time.perf_counter() - t0
    # Background jobs the trace started (the message lifetimes, on the window's job runner) are
    # let finish first: the steps below are those of a settled window, not ones sharing the GIL.
    t2 = time.perf_counter()
    while window.jobs.running() and time.perf_counter() - t2 < 600:
        app.processEvents()
        time.sleep(0.01)
    print(f"background jobs after open: done in {time.perf_counter() - t2:.2f} s (not counted in open)")
    # on screen, not merely isVisible(): Qt 6 keeps a background dock tab "visible", moved out of the window
    visible = [name for name, p in window.panels.items() if p.isVisible() and not p.visibleRegion().isEmpty()]
    print(f"open: window {t_ctor * 1000:.0f} ms, shown {t_shown * 1000:.0f} ms, trace into all panels "
          f"{t_loaded * 1000:.0f} ms → open+show total {t_open:.3f} s (target < 1 s)")
    print(f"{args.layout} layout, panels on screen: {len(visible)}/{len(window.panels)} ({', '.join(visible)})")
    relayouts = _count_relayouts(app, window, 1.0)
    print(f"idle after open: {relayouts} main-window relayouts in 1 s (a settled window: 0)")

    cursor = window.cursor

    cpu: list[float] = []  # CPU time of every one-event step: less disturbed by other processes
    jump_cpu: list[float] = []  # the same for random jumps

    def timed(move: Callable[[], object], one_event: bool = False, jump: bool = False) -> float:
        start, start_cpu = time.perf_counter(), time.thread_time()
        move()
        app.processEvents()
        if one_event:
            cpu.append(time.thread_time() - start_cpu)
        elif jump:
            jump_cpu.append(time.thread_time() - start_cpu)
        return time.perf_counter() - start

    def forward() -> tuple[float, bool]:
        before = trace.request_at(cursor.index)
        took = timed(lambda: cursor.step(1), one_event=True)
        return took, trace.request_at(cursor.index) is not before

    all_steps: list[float] = []
    all_jumps: list[float] = []
    round_p95: list[float] = []
    rng = random.Random(0)
    for r in range(args.rounds):
        cursor.set(len(trace) * (r + 1) // (args.rounds + 1))
        app.processEvents()
        fwd = [forward() for _ in range(args.steps)]
        steps = [t for t, _ in fwd]
        back = [timed(lambda: cursor.step(-1), one_event=True) for _ in range(args.steps // 2)]
        jumps = [timed(lambda: cursor.set(rng.randrange(len(trace))), jump=True) for _ in range(args.steps // 4)]
        all_jumps += jumps
        cursor.set(0)
        misses = [timed(cursor.next_cache_miss) for _ in range(min(100, args.steps // 4))]
        print(f"round {r + 1}/{args.rounds} — cursor moves (until Qt is idle, repaint included):")
        _report("→ next event", steps)
        _report("  … request changed", [t for t, changed in fwd if changed])
        _report("  … same request", [t for t, changed in fwd if not changed])
        _report("← previous event", back)
        _report("random jump", jumps)
        _report("F3 next cache miss", misses)
        one = [s * 1000 for s in steps + back]
        round_p95.append(_pct(one, 0.95))
        all_steps += steps + back
    p95 = _pct([s * 1000 for s in all_steps], 0.95)
    print(f"one-event step p50 {_pct([s * 1000 for s in all_steps], 0.5):.2f} ms, p95 {p95:.2f} ms over "
          f"{len(all_steps)} steps (per round: {', '.join(f'{v:.1f}' for v in round_p95)}) (target < 16 ms)")
    cpu_ms = [c * 1000 for c in cpu]
    print(f"  same steps in CPU time of this thread: p50 {_pct(cpu_ms, 0.5):.2f} ms, p95 {_pct(cpu_ms, 0.95):.2f} ms")
    jump_ms = [j * 1000 for j in all_jumps]
    jump_cpu_ms = [c * 1000 for c in jump_cpu]
    print(f"random jump p50 {_pct(jump_ms, 0.5):.2f} ms, p95 {_pct(jump_ms, 0.95):.2f} ms over {len(jump_ms)} jumps "
          f"(target < 16 ms); CPU time p50 {_pct(jump_cpu_ms, 0.5):.2f} ms, p95 {_pct(jump_cpu_ms, 0.95):.2f} ms")
    if args.breakdown:
        cursor.set(len(trace) // 3)
        app.processEvents()
        _breakdown(app, window, trace, args.steps)
    window.close()
    window.deleteLater()
    app.processEvents()
    QApplication.processEvents()
    return 0


if __name__ == "__main__":
    sys.exit(main())
