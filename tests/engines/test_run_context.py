"""A compressor that was given no clock or offline rule of its own takes the current run's."""

from __future__ import annotations

import time

from inspector.config import load_config
from inspector.engines.compressor import ContextCompressor
from inspector.engines.run_context import RunContext, current_run, offline_stand_in_for, run_clock, running
from tests.engines.compressor_fakes import NO_PROVIDER, FakeAux, hermetic, install_aux  # noqa: F401


class Clock:
    def __init__(self, t: float = 5000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def cooldown_left(c, **kwargs):
    """Seconds left in the engine's summary-failure cooldown (Hermes' dict), or None."""
    state = c.get_active_compression_failure_cooldown(**kwargs)
    return state["remaining_seconds"] if state else None


def engine(**kw) -> ContextCompressor:
    return ContextCompressor("test-model", quiet_mode=True, config_context_length=200_000, **kw)


def test_a_compressor_built_before_the_run_runs_its_cooldown_on_the_runs_clock():
    c = engine()  # built at plugin load time, no run yet
    clock = Clock()
    with running(RunContext(clock=clock)):
        c._record_compression_failure_cooldown(600, "no auxiliary LLM provider configured")
        assert cooldown_left(c) == 600
        clock.t += 599
        assert cooldown_left(c) == 1
        clock.t += 1
        assert cooldown_left(c) is None


def test_outside_a_run_it_reads_the_wall_clock_and_hermes_strict_rule():
    c = engine()
    assert current_run() is None
    before = time.monotonic()
    assert before <= c._clock() <= time.monotonic()
    assert c.offline_stand_in is False
    assert c._generate_summary([{"role": "user", "content": "hi"}]) is None
    assert cooldown_left(c) is not None  # Hermes' 600 s no-provider cooldown


def test_the_offline_rule_follows_the_run():
    c = engine()
    with running(RunContext(offline_stand_in=True)):
        assert c._generate_summary([{"role": "user", "content": "hi"}]) is None
        assert c._last_summary_offline_stand_in is True
        assert cooldown_left(c) is None


def test_a_clock_or_offline_rule_given_to_the_instance_wins():
    mine = Clock(10.0)
    c = engine(clock=mine, offline_stand_in=False)
    with running(RunContext(clock=Clock(99_999.0), offline_stand_in=True)):
        assert c._clock() == 10.0
        assert c.offline_stand_in is False


def test_runs_nest_and_restore():
    with running(RunContext(clock=lambda: 1.0)):
        with running(RunContext(clock=lambda: 2.0)):
            assert run_clock() == 2.0
        assert run_clock() == 1.0
    assert current_run() is None


def test_the_offline_rule_comes_from_offline_fallback_counts():
    assert offline_stand_in_for(load_config(None)) is True
    assert offline_stand_in_for(load_config(None, {"inspector": {"offline_fallback_counts": True}})) is False
