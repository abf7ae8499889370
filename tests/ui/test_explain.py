"""Decisions explain themselves: a hook's arguments and return value, a gate's figure, its source and
its threshold's derivation; hooks sit under the request they prepare; every count says what it is."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication

from inspector.trace import model as tm
from inspector.trace.model import Trace


@pytest.fixture(scope="module")
def compressor_trace() -> Trace:
    """The built-in compressor over a short coding session in a 64K window: it compresses."""
    from inspector.config import load_config
    from inspector.engines.discovery import load_engine
    from inspector.host.replay import replay
    from tests.host.conftest import coding_session

    config = load_config(None)
    config["model"]["context_length"] = 64_000
    config["compression"]["threshold"] = 0.5
    loaded = load_engine("compressor", config, [])
    return replay(coding_session(30, tool_chars=12000), loaded, config)


def _gates(trace: Trace, site: str) -> list[tm.Event]:
    return [e for e in trace.events if e.kind == tm.EV_SHOULD and e.args.get("site") == site]


def test_a_gate_names_its_figure_its_source_and_the_threshold_it_compared(compressor_trace: Trace) -> None:
    from inspector.ui.explain import explain

    gate = _gates(compressor_trace, "pre_api")[-1]
    lines = {line.label: line.value for line in explain(compressor_trace, gate.index)}
    figure = gate.args["prompt_tokens"]
    assert lines["prompt_tokens"] == f"{figure:,}" and lines["site"] == "pre_api"
    assert lines["returned"] == str(gate.result).lower()
    threshold = compressor_trace.state_at(gate.index - 1)["threshold_tokens"]
    assert lines["compared"].startswith(f"{figure:,} {'≥' if figure >= threshold else '<'} threshold {threshold:,}")
    assert gate.args["figure"] in ("rough", "anchored") and lines["figure from"].startswith(gate.args["figure"])


def test_a_threshold_shows_how_it_follows_from_the_config(compressor_trace: Trace) -> None:
    from inspector.ui.explain import threshold_derivation

    k = len(compressor_trace) - 1
    derived = {line.label: line.value for line in threshold_derivation(compressor_trace, k)}["derived"]
    # 0.5 configured, raised to the 75 % floor below 512K, 64,000 × 75 % = 48,000 is under the 64K
    # minimum, which reaches the window itself: 85 % of it (agent/context_compressor.py:1266-1305 of hermes-agent 0.19.0)
    assert "configured compression.threshold 50%" in derived and "75% floor" in derived
    assert compressor_trace.state_at(k)["threshold_tokens"] == 54_400 and "85%" in derived


def test_the_preflight_gate_is_the_rough_estimate(compressor_trace: Trace) -> None:
    from inspector.ui.explain import figure_source

    gate = _gates(compressor_trace, "preflight")[0]
    assert figure_source(compressor_trace, gate).startswith("rough")


def test_hooks_that_prepare_a_request_sit_under_it_in_the_event_tree(compressor_trace: Trace) -> None:
    from inspector.ui.event_model import EventTreeModel

    model = EventTreeModel()
    model.set_trace(compressor_trace)
    for gate in _gates(compressor_trace, "pre_api"):
        parent = model.parent(model.index_for_event(gate.index))
        node = compressor_trace.events[model.event_of(parent)]
        following = next(e for e in compressor_trace.events[gate.index:] if e.kind == tm.EV_REQUEST)
        assert node.kind == tm.EV_REQUEST and node.index == following.index, \
            f"the pre-API check at {gate.index} sits under the request it prepares"
    for gate in _gates(compressor_trace, "post_tool"):
        parent = compressor_trace.events[model.event_of(model.parent(model.index_for_event(gate.index)))]
        before = max(e.index for e in compressor_trace.events[:gate.index] if e.kind == tm.EV_REQUEST)
        assert parent.index == before, "the post-tool check stays under the call whose tools it follows"


def test_the_event_tooltip_carries_arguments_and_return_value(compressor_trace: Trace) -> None:
    from inspector.ui import theme
    from inspector.ui.event_model import EventTreeModel

    model = EventTreeModel()
    model.set_trace(compressor_trace)
    gate = _gates(compressor_trace, "pre_api")[0]
    tip = model.data(model.index_for_event(gate.index), theme.ROLE_TOOLTIP)
    assert f"prompt_tokens: {gate.args['prompt_tokens']:,}" in tip and "returned: " in tip and "threshold" in tip


def test_a_request_lists_each_count_under_what_it_is(compressor_trace: Trace) -> None:
    from inspector.ui.explain import MESSAGES_ONLY, SENT, SIMULATED, request_counts

    req = compressor_trace.requests[3]
    labels = [line.label for line in request_counts(compressor_trace, req.index)]
    assert labels[:2] == [f"{SENT} (tokenizer)", MESSAGES_ONLY] and f"{SIMULATED} usage" in labels


def test_the_decision_panel_explains_the_event_at_the_cursor(shown, compressor_trace: Trace) -> None:
    from inspector.ui.panels.decision import DecisionPanel

    cursor, make = shown
    panel = make(DecisionPanel, compressor_trace)
    compress = compressor_trace.compress_events[0]
    cursor.set(compress)
    QApplication.processEvents()
    text = panel.text()
    assert "compress" in text and "figure tested" in text and "returned" in text
    cursor.set(compressor_trace.requests[2].event)
    assert "sent (tokenizer)" in panel.text() and "figure tested" not in panel.text()


def test_the_context_view_splits_the_request_into_its_parts(shown, compressor_trace: Trace) -> None:
    from inspector.ui.composition import FREE, RESERVE, composition
    from inspector.ui.panels.context import ContextPanel

    turn = next(e for e in compressor_trace.events if e.kind == tm.EV_TURN and e.turn == 4)
    comp = composition(compressor_trace, turn.index)
    first_of_turn = next(r for r in compressor_trace.requests if r.turn == 4)
    assert comp is not None and comp.request == first_of_turn.index and comp.prepared, \
        "at a turn's start the view shows the request that turn sends, not the previous turn's"
    req = compressor_trace.requests[comp.request]
    assert comp.parts["tool schemas"] == req.tokens["tools"] and comp.parts["system prompt"] > 0
    assert comp.parts["incoming message"] > 0
    assert comp.used == pytest.approx(req.tokens["tiktoken"] - 3, abs=3), "the parts add up to what was sent"
    rows = dict(comp.rows())
    assert rows[RESERVE] == comp.context_length - comp.threshold and rows[FREE] == comp.threshold - comp.used
    cursor, make = shown
    panel = make(ContextPanel, compressor_trace)
    cursor.set(turn.index)
    assert panel.table.item(panel.ROWS.index("tool schemas"), 0).text().startswith(f"{req.tokens['tools']:,}")
