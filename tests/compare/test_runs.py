"""Run specs, labels and the parallel comparison runner (real replays of tiny engines)."""

from __future__ import annotations

import threading

import pytest

from inspector.compare import (
    RunSpec,
    SpecError,
    parse_engine_spec,
    parse_specs,
    run_comparison,
    unique_labels,
)
from inspector.compare.runs import STATUS_ABANDONED, STATUS_CANCELLED, STATUS_LOAD_FAILED
from inspector.host.replay import replay
from inspector.trace.summary import summarise

from .conftest import make_session


def test_parse_plain_name():
    spec = parse_engine_spec("compressor")
    assert spec == RunSpec("compressor", (), "")


def test_parse_overrides_are_typed_yaml_scalars():
    spec = parse_engine_spec("compressor:compression.threshold=0.6,compression.enabled=false,model.default=gpt-4o")
    assert spec.engine == "compressor"
    assert dict(spec.overrides) == {"compression.threshold": 0.6, "compression.enabled": False,
                                    "model.default": "gpt-4o"}


def test_parse_value_with_commas_and_explicit_label():
    spec = parse_engine_spec("x:compression.model_thresholds={a: 0.5, b: 0.7},label=mine")
    assert dict(spec.overrides) == {"compression.model_thresholds": {"a": 0.5, "b": 0.7}}
    assert spec.label == "mine"


@pytest.mark.parametrize("bad", ["", "  ", ":a=1", "name:", "name:threshold", "name:=3", "name:a..b=1"])
def test_parse_errors_are_clear(bad):
    with pytest.raises(SpecError) as err:
        parse_engine_spec(bad)
    assert "engine" in str(err.value)


def test_config_for_merges_without_touching_base(base_config):
    spec = parse_engine_spec("compressor:compression.threshold=0.6,inspector.tokenizer=approx")
    cfg = spec.config_for(base_config)
    assert cfg["compression"]["threshold"] == 0.6
    assert cfg["inspector"]["tokenizer"] == "approx"
    assert cfg["compression"]["protect_last_n"] == base_config["compression"]["protect_last_n"]
    assert base_config["compression"]["threshold"] == 0.5


def test_labels_are_unique_with_suffixes():
    specs = parse_specs(["a", "a", "a:compression.threshold=0.6", "b:label=a", "a"])
    labels = [s.label for s in specs]
    assert labels == ["a", "a #2", "a[threshold=0.6]", "a #3", "a #4"]
    assert len(set(labels)) == len(labels)


def test_unique_labels_keeps_spec_contents():
    out = unique_labels([RunSpec("e", (("x.y", 1),), "L"), RunSpec("e", (), "L")])
    assert [(s.engine, s.overrides, s.label) for s in out] == [("e", (("x.y", 1),), "L"), ("e", (), "L #2")]


def test_describe_round_trips_through_the_parser():
    text = "compressor:compression.threshold=0.6,model.default=gpt-4o"
    spec = parse_engine_spec(text)
    assert spec.describe() == text
    assert parse_engine_spec(spec.describe()) == spec


def test_comparison_runs_in_parallel_and_keeps_failures_apart(plugin_dir, base_config):
    """Each run is its own worker process; one that does not load fails alone."""
    seen: list[tuple[str, int]] = []

    def progress(label, done, total):
        seen.append((label, done))

    session = make_session()
    specs = parse_specs(["cmp_tail", "cmp_broken", "cmp_never", "no_such_engine"])
    comp = run_comparison(session, specs, base_config, plugin_dirs=[str(plugin_dir)], progress=progress)
    by = {r.label: r for r in comp.runs}
    assert comp.labels == ["cmp_tail", "cmp_broken", "cmp_never", "no_such_engine"]
    assert by["cmp_tail"].ok and by["cmp_never"].ok
    assert by["cmp_broken"].status == STATUS_LOAD_FAILED and "cmp_broken" in by["cmp_broken"].error
    assert by["no_such_engine"].status == STATUS_LOAD_FAILED and by["no_such_engine"].trace is None
    assert ("cmp_tail", len(session.turns)) in seen and ("cmp_never", len(session.turns)) in seen
    assert by["cmp_tail"].trace.meta["worker"]["isolation"] in ("bubblewrap", "process")
    tail = by["cmp_tail"].trace
    assert tail.meta["label"] == "cmp_tail"
    assert len(tail.requests) == 2 * len(session.turns)
    assert summarise(tail)["compressions"] >= 1
    assert summarise(by["cmp_never"].trace)["compressions"] == 0
    assert comp.session["turns"] == len(session.turns)


def test_parallel_runs_match_a_run_alone(plugin_dir, base_config):
    """Each run has its own cache simulator: the same engine twice gives the figures of one replay."""
    from inspector.engines.discovery import load_engine

    session = make_session()
    comp = run_comparison(session, parse_specs(["cmp_tail", "cmp_tail", "cmp_never"]), base_config,
                          plugin_dirs=[str(plugin_dir)], max_workers=3)
    loaded = load_engine("cmp_tail", base_config, plugin_dirs=[str(plugin_dir)])
    with loaded.activate():
        alone = replay(session, loaded, base_config)
    loaded.close()
    expected = summarise(alone)
    for run in comp.runs[:2]:
        got = summarise(run.trace)
        for key in ("requests", "compressions", "tokens_sent", "cache_read", "cache_write", "peak_prompt", "cost"):
            assert got[key] == expected[key], key


def test_cancel_keeps_partial_traces(plugin_dir, base_config):
    cancel = threading.Event()

    def progress(label, done, total):
        if label == "cmp_slow" and done >= 2:  # the worker reports turns in batches
            cancel.set()

    session = make_session(turns=6)
    comp = run_comparison(session, parse_specs(["cmp_slow", "cmp_tail"]), base_config,
                          plugin_dirs=[str(plugin_dir)], progress=progress, cancel=cancel, max_workers=1)
    first, second = comp.runs
    assert first.status == STATUS_CANCELLED and first.trace is not None
    assert 0 < len(first.trace.requests) < 2 * len(session.turns)
    # The shared cancel reached the run queued after it before it started: no trace at all.
    assert second.status == STATUS_CANCELLED
    assert second.trace is None or second.trace.requests == []


def test_a_run_frozen_in_a_hook_is_killed_with_its_stack_and_the_others_complete(plugin_dir, base_config):
    """A hook blocked in C holds the interpreter lock: its worker is killed past the deadline."""
    import time

    base_config["inspector"]["hook_timeout_seconds"] = 0.5
    session = make_session(turns=3)
    start = time.monotonic()
    comp = run_comparison(session, parse_specs(["cmp_frozen", "cmp_never"]), base_config,
                          plugin_dirs=[str(plugin_dir)])
    assert time.monotonic() - start < 20
    stuck, other = comp.runs
    assert other.ok and len(other.trace.requests) == 2 * len(session.turns)
    assert stuck.status == STATUS_ABANDONED and "should_compress" in stuck.error
    fault = stuck.trace.events[stuck.trace.fault_events[-1]].fault
    assert fault.kind == "timeout" and "cmp_frozen" in fault.traceback
    assert "cmp_frozen" in fault.where and fault.where.endswith(" in should_compress")
    assert stuck.trace.meta["label"] == "cmp_frozen" and stuck.trace.meta["worker_status"] == "timeout"


def test_no_specs_is_an_error(base_config):
    with pytest.raises(ValueError):
        run_comparison(make_session(), [], base_config)
