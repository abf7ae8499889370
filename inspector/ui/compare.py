"""Comparison mode for the window: what a "cursor" means across runs, and running comparisons.

A comparison (``inspector.compare``) holds 2–4 runs of one session. The window still has one
:class:`~inspector.ui.cursor.Cursor`, an event index into the *primary* run's trace; every
panel that understands comparisons turns that event into an alignment row with
:meth:`CompareView.row_at` and then into each run's event with :meth:`CompareView.event_for`.
So all runs move in lockstep from a single source of truth, and the panels that do not know
about comparisons (the event list, the request view) simply show the primary run.

Replays take seconds, so :class:`CompareRunner` runs :func:`inspector.compare.run_comparison`
on the window's job runner; its progress callback fires on the replay threads and is marshalled to
the GUI thread through a queued signal. :class:`CompareDialog` collects the run specs.
"""

from __future__ import annotations

import math
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QGridLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from inspector.compare import (
    RUN_COLORS,
    Comparison,
    RunSpec,
    SpecError,
    aligned_series,
    compression_points,
    parse_specs,
)
from inspector.trace.model import Request, Trace
from inspector.ui.derive import is_cache_miss
from inspector.ui.jobs import JobRunner
from inspector.ui.replay import ThreadedRunner

MIN_RUNS = 2
MAX_RUNS = 4


def run_color(run: int) -> str:
    """The run's colour everywhere (plots, tables, the HTML report use the same list)."""
    return RUN_COLORS[run % len(RUN_COLORS)]


def _hit_percent(trace: Trace, req: Request) -> float:
    c = req.cache
    total = c.read + c.write + c.uncached
    return 100.0 * c.read / total if total else math.nan


def forward_fill(values: Sequence[float]) -> np.ndarray:
    """NaN gaps (rows where a run sent nothing) take the last known value: a state, not a sample."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return arr
    idx = np.where(np.isfinite(arr), np.arange(arr.size), 0)
    np.maximum.accumulate(idx, out=idx)
    out = arr[idx]
    first = np.flatnonzero(np.isfinite(arr))
    if first.size:
        out[: first[0]] = np.nan
    return out


class CompareView:
    """A comparison as the panels see it: runs with a trace, the primary run, and cursor mapping.

    Runs that produced no trace (an engine that failed to load) are kept in the summary table
    but have no curve; :attr:`runs` lists the indices that do have one.
    """

    def __init__(self, comparison: Comparison, primary: int | None = None) -> None:
        self.comparison = comparison
        self.alignment = comparison.alignment
        self.runs = [i for i, t in enumerate(comparison.traces) if t is not None]
        if not self.runs:
            raise ValueError("no run of this comparison produced a trace")
        self.primary = primary if primary in self.runs else self.runs[0]
        self._series: dict[str, list[np.ndarray]] = {}
        self._points: list[list[dict[str, Any]]] | None = None
        self._calls: list[list[dict[str, Any]]] | None = None
        self._nav: dict[str, tuple[list[tuple[float, int]], list[int]]] = {}

    # -- identity -------------------------------------------------------------------------------
    @property
    def labels(self) -> list[str]:
        return self.comparison.labels

    def label(self, run: int) -> str:
        return self.comparison.labels[run]

    def color(self, run: int) -> str:
        return run_color(run)

    def trace(self, run: int) -> Trace | None:
        return self.comparison.traces[run]

    @property
    def primary_trace(self) -> Trace:
        trace = self.comparison.traces[self.primary]
        assert trace is not None
        return trace

    @property
    def row_count(self) -> int:
        return len(self.alignment.rows)

    # -- cursor mapping ---------------------------------------------------------------------------
    def row_at(self, k: int) -> int | None:
        """The alignment row for event ``k`` of the primary run (None when nothing was requested)."""
        return self.alignment.row_for(self.primary, k)

    def event_for(self, run: int, row: int | None) -> int | None:
        """Run ``run``'s event at ``row``: its request there, else the state in force then."""
        if row is None:
            return 0 if self.trace(run) is not None and len(self.trace(run) or ()) else None
        return self.alignment.event_for(run, row)

    def events_at(self, k: int) -> dict[int, int | None]:
        """Every run's event for primary event ``k`` (the primary keeps ``k`` itself)."""
        row = self.row_at(k)
        out = {run: self.event_for(run, row) for run in self.runs}
        out[self.primary] = k
        return out

    def row_for_x(self, x: float) -> int | None:
        """The row nearest a plot x (rows are the x axis in comparison mode)."""
        if not self.row_count:
            return None
        return int(max(0, min(self.row_count - 1, round(x))))

    def primary_event_for_x(self, x: float) -> int | None:
        """Where the cursor goes for a click at plot x: the primary run's event at that row."""
        row = self.row_for_x(x)
        return None if row is None else self.event_for(self.primary, row)

    def describe_row(self, row: int | None) -> str:
        if row is None or not 0 <= row < self.row_count:
            return "before the first request"
        turn, call = self.alignment.rows[row]
        return f"row {row} (turn {turn}, call {call})"

    # -- navigation across every run ----------------------------------------------------------------
    def _positions(self, run: int, what: str) -> tuple[list[tuple[float, int]], list[int]]:
        """(sorted (x, event) of run's ``what`` events, their events), cached per run and kind."""
        key = f"nav:{what}:{run}"
        hit = self._nav.get(key)
        if hit is None:
            trace = self.trace(run)
            if trace is None:
                events: list[int] = []
            elif what == "compress":
                events = trace.compress_events
            elif what == "fault":
                events = trace.fault_events
            else:  # what F3 stops at (derive.is_cache_miss)
                events = [r.event for r in trace.requests if is_cache_miss(trace, trace.events[r.event])]
            pairs = sorted((self.alignment.event_x(run, e), e) for e in events)
            hit = (pairs, [e for _x, e in pairs])
            self._nav[key] = hit
        return hit

    def step_all(self, what: str, k: int, forward: bool) -> tuple[int, int] | None:
        """The next (or previous) ``what`` — "compress", "miss" or "fault" — in ANY run after primary
        event ``k``, as (run, event); None when no run has one. Runs are ordered by their position on
        the shared row axis, then by run order (two runs compressing at one row are visited in turn)."""
        order = {run: i for i, run in enumerate(self.runs)}
        here = (self.alignment.event_x(self.primary, k), order[self.primary], k)
        best: tuple[float, int, int] | None = None
        for run in self.runs:
            pairs, _events = self._positions(run, what)
            for x, event in (pairs if forward else reversed(pairs)):
                key = (x, order[run], event)
                if (key > here) if forward else (key < here):
                    if best is None or ((key < best) if forward else (key > best)):
                        best = key
                    break
        if best is None:
            return None
        run = next(r for r, i in order.items() if i == best[1])
        return run, best[2]

    # -- series (cached: the comparison is immutable once shown) ----------------------------------
    def series(self, key: str | Callable[[Trace, Request], float], name: str | None = None) -> list[np.ndarray]:
        """One float64 array per run (all runs, NaN-filled for runs without a trace), x = row."""
        cache_key = name or (key if isinstance(key, str) else repr(key))
        hit = self._series.get(cache_key)
        if hit is None:
            hit = [np.asarray(v, dtype=np.float64) for v in aligned_series(self.comparison, key, self.alignment)]
            self._series[cache_key] = hit
        return hit

    def hit_rate(self) -> list[np.ndarray]:
        return self.series(_hit_percent, "hit_percent")

    def compressions(self) -> list[list[dict[str, Any]]]:
        if self._points is None:
            self._points = compression_points(self.comparison, self.alignment)
        return self._points

    def compress_calls(self) -> list[list[dict[str, Any]]]:
        """Every compress call per run, the ones Hermes kept nothing of flagged (see compression_points)."""
        if self._calls is None:
            self._calls = compression_points(self.comparison, self.alignment, every_call=True)
        return self._calls


# -- running a comparison ------------------------------------------------------------------------


@dataclass
class CompareRequest:
    """What the worker needs: the session, the specs as typed, config and plugin directories."""

    session: Any
    specs: list[str]
    config_path: str | None = None
    plugin_dirs: list[str] = field(default_factory=list)
    max_workers: int = 4


def check_specs(texts: Sequence[str]) -> list[RunSpec]:
    """Parse and validate 2–4 specs; raises :class:`SpecError` with a sentence for the user."""
    texts = [t.strip() for t in texts if t and t.strip()]
    if not MIN_RUNS <= len(texts) <= MAX_RUNS:
        raise SpecError(f"a comparison needs {MIN_RUNS} to {MAX_RUNS} runs, got {len(texts)}")
    return parse_specs(texts)


def run_compare(req: CompareRequest, progress: Any = None, cancel: threading.Event | None = None) -> Comparison:
    """Load the config and run the comparison (any thread); the window shows the result."""
    from inspector.compare import run_comparison
    from inspector.config import load_config

    specs = check_specs(req.specs)
    config = load_config(req.config_path)
    plugin_dirs = list(req.plugin_dirs) + [str(d) for d in (config.get("inspector") or {}).get("plugin_dirs") or []]
    return run_comparison(req.session, specs, config, plugin_dirs=plugin_dirs, progress=progress, cancel=cancel,
                          max_workers=req.max_workers)


class _Worker(QObject):
    progress = Signal(str, int, int)
    done = Signal(object)
    failed = Signal(str, str)

    def __init__(self, req: CompareRequest, cancel: threading.Event) -> None:
        super().__init__()
        self.req = req
        self.cancel = cancel

    @Slot()
    def run(self) -> None:
        try:
            # progress() is called from the replay pool's threads; a signal emit queues it to the GUI
            comparison = run_compare(self.req, progress=lambda label, d, t: self.progress.emit(str(label), int(d), int(t)),
                                     cancel=self.cancel)
        except BaseException as exc:  # noqa: BLE001 - a spec error, a reader error, anything: reported
            self.failed.emit(f"{type(exc).__name__}: {exc}" if not isinstance(exc, SpecError) else str(exc),
                             traceback.format_exc())
        else:
            from inspector.quality.analysis import analyse_quietly

            for run in comparison.runs:  # retention for the Runs table, here rather than on the GUI thread
                analyse_quietly(run.trace)
            self.done.emit(comparison)


class CompareRunner(ThreadedRunner):
    """Runs one comparison at a time on a worker thread; progress sums every run's turns.

    ``finished`` carries the Comparison (possibly with cancelled runs).
    """

    progress = Signal(int, int, str)  # turns done (all runs), turns total, text
    thread_name = "inspector-compare"

    def __init__(self, parent: QObject | None = None, jobs: JobRunner | None = None) -> None:
        super().__init__(parent, jobs)
        self._done: dict[str, tuple[int, int]] = {}
        self.cancelled = False

    def start(self, req: CompareRequest) -> None:
        worker = _Worker(req, self._new_cancel_event())
        self.cancelled = False
        self._done = {}
        worker.progress.connect(self._on_progress)
        self._launch(worker)

    def cancel(self) -> None:
        if self.running:
            self.cancelled = True
            self._cancel.set()

    def _on_progress(self, label: str, done: int, total: int) -> None:
        if not self._current():
            return
        self._done[label] = (done, total)
        d = sum(v[0] for v in self._done.values())
        t = sum(v[1] for v in self._done.values())
        parts = " · ".join(f"{name} {v[0]}/{v[1]}" for name, v in self._done.items())
        self.progress.emit(d, t, parts)


# -- the dialog ----------------------------------------------------------------------------------

NONE_ENTRY = "(none)"


class CompareDialog(QDialog):
    """Up to four runs: an engine each and optional overrides (``compression.threshold=0.6``).

    The result is a list of spec strings exactly as ``--engine`` takes them, so the command
    line, the dialog and a saved comparison speak one language.
    """

    def __init__(self, engines: list[str], initial: Sequence[str] = (), parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Compare engines")
        self.setMinimumWidth(640)
        intro = QLabel("Replay the open session with 2–4 engines (or one engine under different configs) and "
                       "compare them in lockstep. Overrides are dotted config keys, comma separated.")
        intro.setTextFormat(Qt.TextFormat.PlainText)
        intro.setWordWrap(True)
        grid = QGridLayout()
        grid.addWidget(QLabel("Run"), 0, 0)
        grid.addWidget(QLabel("Engine"), 0, 1)
        grid.addWidget(QLabel("Config overrides (optional)"), 0, 2)
        self.engine_boxes: list[QComboBox] = []
        self.override_edits: list[QLineEdit] = []
        for i in range(MAX_RUNS):
            swatch = QLabel(f"  {i + 1}  ")
            swatch.setStyleSheet(f"background:{run_color(i)};color:white;border-radius:3px")
            box = QComboBox()
            box.setEditable(True)
            box.setMinimumWidth(170)
            box.addItems(([NONE_ENTRY] if i >= MIN_RUNS else []) + list(engines))
            edit = QLineEdit()
            edit.setPlaceholderText("e.g. compression.threshold=0.6, compression.protect_last_n=10")
            if i < len(initial):
                name, _, rest = initial[i].partition(":")
                box.setCurrentText(name)
                edit.setText(rest)
            elif i >= MIN_RUNS:
                box.setCurrentText(NONE_ENTRY)
            elif i < len(engines):
                box.setCurrentIndex(i)
            grid.addWidget(swatch, i + 1, 0)
            grid.addWidget(box, i + 1, 1)
            grid.addWidget(edit, i + 1, 2)
            self.engine_boxes.append(box)
            self.override_edits.append(edit)
        grid.setColumnStretch(2, 1)
        self.error = QLabel("")
        self.error.setTextFormat(Qt.TextFormat.PlainText)
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color:#b71c1c")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Compare")
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(grid)
        layout.addWidget(self.error)
        layout.addWidget(buttons)

    def specs(self) -> list[str]:
        """The runs as ``--engine`` specs, in order, skipping empty rows."""
        out = []
        for box, edit in zip(self.engine_boxes, self.override_edits):
            name = box.currentText().strip()
            if not name or name == NONE_ENTRY:
                continue
            rest = edit.text().strip()
            out.append(f"{name}:{rest}" if rest else name)
        return out

    def _accept(self) -> None:
        try:
            check_specs(self.specs())
        except SpecError as exc:
            self.error.setText(str(exc))
            return
        self.accept()


def ask_specs(parent: QWidget, engines: list[str], initial: Sequence[str] = ()) -> list[str] | None:
    """Modal: the specs to compare, or None when cancelled."""
    dialog = CompareDialog(engines, initial, parent)
    try:
        return dialog.specs() if dialog.exec() == QDialog.DialogCode.Accepted else None
    finally:
        dialog.deleteLater()


class CompareAware:
    """Mixin for panels with a comparison mode: the window sets :attr:`compare` before the trace.

    ``compare`` is None in single-trace mode, and the panel then behaves exactly as before.
    """

    compare: CompareView | None = None

    def set_comparison(self, view: CompareView | None) -> None:
        self.compare = view

    def _jump_to_marker(self, x: float, span: float, y: float | None = None,
                        level: Callable[[int, int, dict[str, Any]], float] | None = None) -> bool:
        """A click within ``span`` of a run's compress marker: that run's compress event, whichever run
        it is (the window makes it the run the cursor follows). Where several runs have a marker at
        that x, the one whose ``level(run, i, point)`` is nearest the click's ``y`` wins. False when
        no marker is that near."""
        view = self.compare
        if view is None:
            return False
        near = []
        for run, points in enumerate(view.compress_calls()):
            if run not in view.runs:
                continue
            for i, p in enumerate(points):
                dx = abs(p["x"] - x)
                if dx <= span:
                    dy = abs(level(run, i, p) - y) if y is not None and level is not None else 0.0
                    near.append((round(dx, 6), dy, view.runs.index(run), run, p["event"]))
        if not near:
            return False
        closest = min(n[0] for n in near)
        _dx, _dy, _order, run, event = min((n for n in near if n[0] == closest), key=lambda n: (n[1], n[2]))
        self.run_jump_requested.emit(int(run), int(event))  # type: ignore[attr-defined]
        return True

    def _jump_to_x(self, x: float) -> None:
        """A click or drag on a request-axis plot: move the cursor to the request at x.

        In comparison mode x is an alignment row, mapped to the primary run's event; otherwise
        it is the request index of the panel's figures (``self._fig``).
        """
        if self.compare is not None:
            k = self.compare.primary_event_for_x(x)
            if k is not None:
                self.jump_requested.emit(int(k))  # type: ignore[attr-defined]
            return
        fig = getattr(self, "_fig", None)
        if fig is None:
            return
        r = fig.request_for_x(x)
        if r is not None:
            self.jump_requested.emit(int(fig.request_event[r]))  # type: ignore[attr-defined]
