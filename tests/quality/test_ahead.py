"""The analysis made while a run streams in is the analysis made after it, however the events arrive."""

from __future__ import annotations

import gc
import json
import random
import weakref

import pytest

from inspector.config import load_config
from inspector.quality import ahead, lifetime
from inspector.quality.analysis import compute
from inspector.quality.retention import CompactionPoints, FactIndex

from .conftest import KeepLastTwo, Recaller, url, url_session


class Half(KeepLastTwo):
    after = 12
    keep = tuple(url(k) for k in range(0, 30, 2))


def _after_the_run(trace) -> str:
    assert ahead.made_ahead(trace) is None  # nothing followed it: computed from the trace alone
    return json.dumps(compute(trace).to_json({}), sort_keys=True)


def _followed(trace, sizes) -> str:
    """The analysis of ``trace`` from a follower told of its events in batches of ``sizes``."""
    follower = ahead.follow(trace)
    n = 0
    for size in sizes:
        n = min(len(trace.events), n + size)
        follower.arrived(n)
    return json.dumps(compute(trace).to_json({}), sort_keys=True)


@pytest.mark.parametrize("engine", [Half, Recaller])
def test_events_followed_in_any_batches_give_the_analysis_of_the_finished_run(run, engine):
    trace = run(engine(), url_session(30))
    expected = _after_the_run(trace)
    assert json.loads(expected)["retention"]["compactions"]  # there is something to measure ahead
    rng = random.Random(23)
    for sizes in ([1] * len(trace.events), [len(trace.events)], [rng.randint(1, 9) for _ in range(len(trace.events))],
                  [3, 0, 5]):  # the last stops early: the rest is fed when the analysis is asked for
        assert _followed(trace, sizes) == expected


def test_the_followed_analysis_is_used_and_nothing_is_computed_again(run, monkeypatch):
    trace = run(Half(), url_session(30))
    expected = _after_the_run(trace)
    follower = ahead.follow(trace)
    follower.arrived(len(trace.events))
    follower.end()
    follower._thread.join()
    monkeypatch.setattr("inspector.quality.analysis.message_lifetimes", lambda t: pytest.fail("lifetimes again"))
    monkeypatch.setattr("inspector.quality.analysis.fact_retention", lambda *a: pytest.fail("retention again"))
    assert json.dumps(compute(trace).to_json({}), sort_keys=True) == expected


def test_a_follower_that_fails_leaves_the_analysis_to_be_computed_after_the_run(run, monkeypatch):
    trace = run(Half(), url_session(30))
    expected = _after_the_run(trace)

    def broken(self, events):
        raise RuntimeError("a bug in the lifetime pass")

    monkeypatch.setattr(lifetime.LifetimeBuilder, "feed", broken)
    follower = ahead.follow(trace)
    follower.arrived(len(trace.events))
    follower.end()
    follower._thread.join()
    monkeypatch.undo()
    assert json.dumps(compute(trace).to_json({}), sort_keys=True) == expected


def test_a_point_the_finished_run_classifies_otherwise_is_measured_again(run):
    trace = run(Half(), url_session(30))
    expected = compute(trace).retention.to_json()
    builder = lifetime.LifetimeBuilder(trace)
    builder.feed(trace.events)
    points = CompactionPoints(trace, FactIndex(trace, builder.messages), builder)
    points.measure_ready()
    measured, carried = points._points[0]
    points._points[0] = (measured, carried[1:])  # as if a key had been unknown when it was measured
    for status in measured.facts:
        status.status = "lost"
    assert points.retention(builder.build()).to_json() == expected


def test_a_trace_nobody_analyses_is_freed_with_its_follower(run, tmp_path):
    from inspector.trace.io import load_trace, save_trace

    save_trace(run(Half(), url_session(30)), tmp_path / "run.trace.json")
    trace = load_trace(tmp_path / "run.trace.json")  # one that nothing else holds
    follower = ahead.follow(trace)
    follower.arrived(len(trace.events) // 2)
    ref = weakref.ref(trace)
    del trace
    gc.collect()
    assert ref() is None
    follower.end()
    follower._thread.join(5)
    assert not follower._thread.is_alive()


def test_a_replay_in_a_worker_is_analysed_as_it_streams_in(tmp_path, monkeypatch):
    from inspector.worker.replays import RunRequest, replay_in_workers

    config = load_config(None, {"compression": {"threshold_tokens": 300}})
    session = url_session(40)
    (outcome,) = replay_in_workers(session, [RunRequest("compressor", config, "compressor")], analyse=True)
    trace = outcome.trace
    assert trace is not None and trace in ahead._FOLLOWERS
    followed = json.dumps(compute(trace).to_json({}), sort_keys=True)
    assert trace not in ahead._FOLLOWERS
    assert json.loads(followed)["retention"]["compactions"]
    assert followed == _after_the_run(trace)
