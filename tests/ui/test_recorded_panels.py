"""The window shows what the provider recorded beside what the replay simulated, and what each run was.

The trace is a real replay (the built-in compressor, calibrated usage) of a Claude Code session
of our own that auto-compacted: every call carries recorded usage, the transcript has its own
compaction, and the engine compacts too (tests/host/test_claude_code_compaction.py builds it).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QTreeWidgetItemIterator

from inspector.cache.accuracy import accuracy
from inspector.trace import model as tm
from inspector.trace.model import CacheInfo, Event, Trace
from inspector.ui import theme
from tests.host.test_claude_code_compaction import _with_usage


@pytest.fixture(scope="module")
def recorded_trace(tmp_path_factory: pytest.TempPathFactory) -> Trace:
    from inspector.config import load_config
    from inspector.engines.discovery import load_engine
    from inspector.host.replay import replay
    from inspector.sessions import load_session

    path = _with_usage(Path(tmp_path_factory.mktemp("recorded")))
    config = load_config(None)
    return replay(load_session(str(path)), load_engine("compressor", config), config)


def _tree_rows(tree) -> list[tuple[str, str, str]]:  # noqa: ANN001 - a QTreeWidget
    rows = []
    it = QTreeWidgetItemIterator(tree)
    while it.value() is not None:
        item = it.value()
        rows.append((item.text(0), item.text(1), item.foreground(1).color().name()))
        it += 1
    return rows


# -- token timeline ---------------------------------------------------------------------------------
def test_the_timeline_draws_the_recorded_prompt_beside_the_sent_and_calibrated_counts(shown, recorded_trace) -> None:
    from inspector.ui.panels.timeline import CALIBRATED_NAME, RECORDED_NAME, TimelinePanel

    cursor, make = shown
    panel = make(TimelinePanel, recorded_trace, width=1000, height=420)
    names = [label.text for _sample, label in panel.legend.items]
    assert RECORDED_NAME in " ".join(names) and "calibrated" in " ".join(names)
    recorded = [float(r.recorded["prompt_tokens"]) for r in recorded_trace.requests]
    _x, y = panel.curves["recorded"].getData()
    assert list(y) == recorded, "the recorded curve is the transcript's prompt tokens, request by request"
    cal = recorded_trace.meta["usage_model"]["calibration"]
    ours = np.array([r.tokens["tiktoken"] for r in recorded_trace.requests], dtype=float)
    _x, calibrated = panel.curves["calibrated"].getData()
    assert np.allclose(calibrated, np.round(cal["hidden_tokens"] + cal["ratio"] * ours))
    assert CALIBRATED_NAME.startswith("sent · calibrated")
    r = 5
    cursor.set(recorded_trace.requests[r].event)
    QApplication.processEvents()
    text = panel.readout.text()
    assert f"recorded (transcript) {int(recorded[r]):,}" in text
    assert f"engine fed {recorded_trace.requests[r].usage['prompt_tokens']:,} (recorded)" in text


def test_the_transcripts_own_compaction_is_a_marker_of_its_own(shown, recorded_trace) -> None:
    from inspector.ui.panels.timeline import ENGINE_COMPACTION_NAME, TRANSCRIPT_COMPACTION_NAME, TimelinePanel

    cursor, make = shown
    panel = make(TimelinePanel, recorded_trace, width=1000, height=420)
    [marker] = [ev for ev in recorded_trace.events if ev.kind == tm.EV_MARKER]
    lines = [m for m in panel.markers if hasattr(m, "value")]
    transcript = [m for m in lines if m.pen.style() == Qt.PenStyle.DashLine]
    engine = [m for m in lines if m.pen.style() == Qt.PenStyle.DotLine]
    assert [m.value() for m in transcript] == [marker.args["before_request"] - 0.5], "between the two requests"
    assert engine, "the engine's compactions are drawn too, dotted"
    assert transcript[0].pen.color().name() == theme.MARKER and engine[0].pen.color().name() != theme.MARKER
    names = " ".join(label.text for _sample, label in panel.legend.items)
    assert ENGINE_COMPACTION_NAME in names and TRANSCRIPT_COMPACTION_NAME.split(" (")[0] in names
    cursor.set(marker.index)
    QApplication.processEvents()
    assert "the transcript compacted here" in panel.readout.text()


def test_a_comparison_labels_each_runs_recorded_curve(shown, recorded_trace) -> None:
    from inspector.compare.runs import Comparison, RunResult, RunSpec
    from inspector.ui.compare import CompareView
    from inspector.ui.panels.timeline import TimelinePanel

    view = CompareView(Comparison(runs=[RunResult(spec=RunSpec(n, (), n), trace=recorded_trace) for n in ("a", "b")]))
    cursor, make = shown
    panel = make(TimelinePanel, None, width=1000, height=420)
    panel.set_comparison(view)
    cursor.set_trace(view.primary_trace)
    names = [label.text for _sample, label in panel.legend.items]
    assert "a · recorded (transcript)" in names and "b · recorded (transcript)" in names
    cursor.set(recorded_trace.requests[3].event)
    QApplication.processEvents()
    recorded = recorded_trace.requests[3].recorded["prompt_tokens"]
    assert panel.readout.text().count(f"recorded {recorded:,}") == 2, "each run's figure says its recorded one"


# -- cache ----------------------------------------------------------------------------------------
def test_the_cache_panel_puts_the_providers_figures_beside_the_simulators(shown, recorded_trace) -> None:
    from inspector.ui.panels.cache import CachePanel

    cursor, make = shown
    panel = make(CachePanel, recorded_trace, width=1000, height=640)
    req = recorded_trace.requests[4]
    cursor.set(req.event)
    QApplication.processEvents()
    simulated, recorded = panel.recorded.text().split("\n")
    c, rec = req.cache, req.recorded
    assert simulated.startswith("simulated:") and f"read {c.read:,}" in simulated and f"written {c.write:,}" in simulated
    one_hour = rec.get("cache_write_1h_tokens") or 0
    assert recorded.startswith("recorded (provider, transcript):")
    assert (f"read {rec['cache_read_tokens']:,} · written {rec['cache_write_tokens']:,} "
            f"(5m {rec['cache_write_tokens'] - one_hour:,} · 1h {one_hour:,})") in recorded
    assert "(recorded usage)" in panel.header.text(), "the engine was fed the transcript's usage here, and it says so"
    _x, y = panel.rec_read_curve.getData()
    assert list(y) == [float(r.recorded["cache_read_tokens"]) for r in recorded_trace.requests]
    names = " ".join(label.text for _s, label in panel.tok_legend.items)
    assert "simulated read" in names and "recorded read" in names and "recorded written" in names


def test_the_cache_panel_shows_the_runs_accuracy_as_the_cli_computes_it(shown, recorded_trace) -> None:
    from inspector.ui.panels.cache import CachePanel

    _cursor, make = shown
    panel = make(CachePanel, recorded_trace, width=1400, height=640)
    block = accuracy(recorded_trace)
    lines = panel.totals.text().split("\n")
    assert lines[0].startswith("Run recorded:") and lines[1].startswith("Run simulated:")
    assert (f"error mean {block['mean_error_points']:.2f} / p90 {block['p90_error_points']:.2f} pt" in lines[2]
            and f"false alarms {block['false_alarms']}" in lines[2])
    if block["real_misses"]:
        assert f"real misses caught {block['caught']}/{block['real_misses']}" in lines[2]


def test_a_disagreement_on_a_miss_is_flagged(shown, recorded_trace) -> None:
    from inspector.ui.panels.cache import beside_recorded

    trace = copy.deepcopy(recorded_trace)
    req = next(r for i, r in enumerate(trace.requests)
               if trace.meta["usage_model"]["same_request"][i] and r.cache.read > 0.9 * (r.cache.read + r.cache.write + r.cache.uncached))
    text, disagree = beside_recorded(trace, req)
    assert not disagree and "DISAGREE" not in text
    req.recorded = dict(req.recorded, cache_read_tokens=0)  # the provider read nothing: a real miss
    text, disagree = beside_recorded(trace, req)
    assert disagree and "the provider missed, the simulator did not" in text


def test_a_miss_has_words_of_its_own() -> None:
    from inspector.ui.panels.cache import reason_words

    text = reason_words(CacheInfo(reason_kind="miss", reason="miss: nothing was read from the cache; wrote 900"))
    assert text.startswith("Simulated cache: Miss: nothing was read") and "wrote 900" in text
    assert "hit" not in text.lower()
    assert "Lookback miss" in reason_words(CacheInfo(reason_kind="lookback", reason=""))


def test_each_run_of_a_comparison_has_its_own_recorded_line_and_accuracy(shown, recorded_trace) -> None:
    from inspector.compare.runs import Comparison, RunResult, RunSpec
    from inspector.ui.compare import CompareView
    from inspector.ui.panels.cache import CachePanel

    tokenizer = copy.deepcopy(recorded_trace)
    tokenizer.meta["usage_model"]["same_request"] = [False] * len(tokenizer.requests)  # nothing to compare
    view = CompareView(Comparison(runs=[RunResult(spec=RunSpec(n, (), n), trace=t)
                                        for n, t in (("calibrated", recorded_trace), ("other", tokenizer))]))
    cursor, make = shown
    panel = make(CachePanel, None, width=1000, height=900)
    panel.set_comparison(view)
    cursor.set_trace(view.primary_trace)
    cursor.set(recorded_trace.requests[4].event)
    QApplication.processEvents()
    first, second = (panel.run_views[r] for r in view.runs)
    assert first.title.text() == "calibrated" and second.title.text() == "other"
    assert "recorded (provider, transcript)" in first.recorded.text()
    assert "for the agent's request, which this one is not" in second.recorded.text()
    assert re.search(r"error mean [\d.]+ / p90", first.accuracy.text())
    assert "no request to compare" in second.accuracy.text()
    names = [label.text for _s, label in panel.run_legend.items]
    assert "recorded hit % (calibrated&#x27;s rows)" in names or "recorded hit % (calibrated's rows)" in names
    _x, read = panel.run_items[len(view.runs) + 1].getData()  # after the hit lines and the band: simulated read
    assert list(read) == [float(r.cache.read) for r in recorded_trace.requests], "the simulator's read, not the usage"


# -- what the run was -------------------------------------------------------------------------------
def test_the_run_tab_says_the_profile_settings_and_calibration(shown, recorded_trace) -> None:
    from inspector.ui.panels.run_info import RunInfoPanel

    _cursor, make = shown
    panel = make(RunInfoPanel, recorded_trace, width=1000, height=500)
    rows = {label: text for label, text, _colour in _tree_rows(panel.tree) if label}
    assert rows["host profile"] == recorded_trace.meta["host_profile"]
    cal = recorded_trace.meta["usage_model"]["calibration"]
    assert rows["usage"].startswith("calibrated (head ") and f"{cal['hidden_tokens']:,} tokens" in rows["usage"]
    assert f"ratio {cal['ratio']:.2f}" in rows["usage"] and cal["method"] in rows["usage"]
    assert "window 200,000" in rows["settings"], "the transcript defaults assumed (meta.assumed)"
    block = accuracy(recorded_trace)
    assert f"mean {block['mean_error_points']:.2f} points" in " ".join(t for _l, t, _c in _tree_rows(panel.tree))
    assert "first compacted before request" in rows["compaction timing"]
    assert "engine fallback" not in rows and "shadowed" not in rows


def test_a_fallback_and_a_shadowed_engine_are_said_in_the_fault_colour(shown, recorded_trace) -> None:
    from inspector.ui.panels.counters import CountersPanel
    from inspector.ui.panels.run_info import RunInfoPanel

    trace = copy.deepcopy(recorded_trace)
    trace.meta["engine"] = dict(trace.meta["engine"], fallback="plugin 'mine' is not in plugins.enabled",
                                requested="mine")
    note = ("engine loading: bundled example engine 'lcm' at /x/lcm is shadowed by yours at /y/lcm: yours runs")
    trace.add_event(Event(index=0, kind=tm.EV_NOTE, turn=0, t=0.0, note=note))
    _cursor, make = shown
    panel = make(RunInfoPanel, trace, width=1000, height=500)
    rows = {label: (text, colour) for label, text, colour in _tree_rows(panel.tree) if label}
    assert rows["engine fallback"][0].startswith("mine did not run: plugin 'mine' is not in plugins.enabled")
    assert rows["shadowed"][0].startswith("bundled example engine 'lcm'")
    assert rows["engine fallback"][1] == rows["shadowed"][1] == theme.FAULT
    assert rows["host profile"][1] != theme.FAULT
    counters = make(CountersPanel, trace, width=420, height=500)
    assert trace.meta["host_profile"] in counters.run_line.text()
    assert "fell back to its built-in compressor" in counters.run_line.text()
    assert "shadowed" in counters.run_line.text()
