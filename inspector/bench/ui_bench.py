"""UI benchmark (not a test): open a 10,000-request trace and step the cursor with every panel visible.

Prints the time to build the window, load the trace into every panel and show it, and the
p50/p95/max time of one cursor step, measured until Qt has processed the resulting events
(including repaints), with all panels tiled so none is skipped as a hidden tab. Targets from
issue 5: open under 1 s, p95 step under 16 ms. It prints figures and asserts nothing.

    QT_QPA_PLATFORM=offscreen python -m inspector.bench.ui_bench [--requests 10000] [--steps 400]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _report(name: str, samples: list[float]) -> None:
    ms = [s * 1000 for s in samples]
    print(f"  {name:<28} n={len(ms):<4} p50 {_pct(ms, 0.5):6.2f} ms   p95 {_pct(ms, 0.95):6.2f} ms   "
          f"max {max(ms):7.2f} ms   mean {statistics.fmean(ms):6.2f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--size", default="1600x1000")
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
    settings = QSettings(os.devnull, QSettings.Format.IniFormat)
    t0 = time.perf_counter()
    window = MainWindow(settings, restore_layout=False)
    window.resize(w, h)
    t_ctor = time.perf_counter() - t0
    window.show()
    window.tile_all()  # after show: dock sizes only apply to a laid-out window
    app.processEvents()
    t_shown = time.perf_counter() - t0
    t1 = time.perf_counter()
    window.set_trace(trace)
    app.processEvents()
    t_loaded = time.perf_counter() - t1
    t_open = time.perf_counter() - t0
    visible = [name for name, p in window.panels.items() if p.isVisible()]
    print(f"open: window {t_ctor * 1000:.0f} ms, shown {t_shown * 1000:.0f} ms, trace into all panels "
          f"{t_loaded * 1000:.0f} ms → open+show total {t_open:.3f} s (target < 1 s)")
    print(f"visible panels: {len(visible)}/{len(window.panels)} ({', '.join(visible)})")

    cursor = window.cursor
    cursor.set(len(trace) // 2)
    app.processEvents()

    def timed(move) -> float:  # noqa: ANN001
        start = time.perf_counter()
        move()
        app.processEvents()
        return time.perf_counter() - start

    steps = [timed(lambda: cursor.step(1)) for _ in range(args.steps)]
    back = [timed(lambda: cursor.step(-1)) for _ in range(args.steps // 2)]
    rng = random.Random(0)
    jumps = [timed(lambda: cursor.set(rng.randrange(len(trace)))) for _ in range(args.steps // 4)]
    cursor.set(0)
    misses = [timed(cursor.next_cache_miss) for _ in range(min(100, args.steps // 4))]
    print("cursor moves (until Qt is idle, repaint included):")
    _report("→ next event", steps)
    _report("← previous event", back)
    _report("random jump", jumps)
    _report("F3 next cache miss", misses)
    p95 = _pct([s * 1000 for s in steps + back], 0.95)
    print(f"one-event step p95 {p95:.2f} ms (target < 16 ms)")
    window.close()
    window.deleteLater()
    app.processEvents()
    QApplication.processEvents()
    return 0


if __name__ == "__main__":
    sys.exit(main())
