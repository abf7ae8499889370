"""The built-in compressor offline writes Hermes' deterministic fallback summary: what it keeps and
what it loses must be visible in the request that follows the compaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from inspector.config import load_config
from inspector.engines.discovery import load_engine
from inspector.host.replay import replay
from inspector.quality.analysis import compute
from inspector.quality.facts import searchable_text
from inspector.quality.retention import LOST, SUMMARY
from inspector.sessions import load_session, require_conversation

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo" / "demo_session.json"


@pytest.fixture(scope="module")
def compressor_run():
    config = load_config(None, {})
    session = require_conversation(load_session(str(DEMO)))
    trace = replay(session, load_engine("compressor", config), config, label="compressor")
    return trace, compute(trace)


def _texts(trace, request):
    return [searchable_text(m) for m in trace.request_messages(trace.requests[request])]


def test_every_lost_fact_is_absent_from_the_next_request(compressor_run):
    trace, analysis = compressor_run
    assert analysis.retention.compactions, "the demo compacts"
    for point in analysis.retention.compactions:
        text = "\n".join(_texts(trace, point.request)).casefold()
        lost = [f for f in point.facts if f.status == LOST]
        assert lost, "the fallback summary cannot keep every fact"
        for f in lost:
            assert f.fact.text.casefold() not in text, f.fact.text


def test_facts_credited_to_the_summary_are_in_the_summary_message(compressor_run):
    trace, analysis = compressor_run
    credited = 0
    for comp, point in zip(analysis.lifetimes.compactions, analysis.retention.compactions):
        summary = "\n".join(searchable_text(trace.store.messages[k]) for k in comp.summaries).casefold()
        for f in point.facts:
            if f.status == SUMMARY:
                credited += 1
                assert f.fact.text.casefold() in summary or f.fact.norm in summary
    assert credited > 0  # the fallback keeps a few things (the last asks), and they are credited to it


def test_the_run_figure_is_the_end_point(compressor_run):
    _trace, analysis = compressor_run
    end = analysis.retention.end
    assert 0.0 < analysis.run_retention < 1.0
    assert analysis.run_retention == pytest.approx((end.total - end.count(LOST)) / end.total)
