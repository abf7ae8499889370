"""Cache misses name the engine action that broke the prefix (DESIGN decision 5)."""

from __future__ import annotations

import pytest

from inspector.cache.simulator import CacheSimulator
from inspector.host.replay import replay
from inspector.trace.model import EV_COMPRESS, EV_SELECT

from .conftest import CountingEngine, coding_session


class LowThreshold(CountingEngine):
    def update_model(self, *a, **kw):
        super().update_model(*a, **kw)
        self.threshold_tokens = 6000


def test_append_only_requests_hit_after_the_first(config):
    trace = replay(coding_session(4), CountingEngine(), config, simulator=CacheSimulator("anthropic", model="claude-sonnet-4.5"))
    kinds = [r.cache.reason_kind for r in trace.requests]
    # The first request is under Anthropic's minimum prefix; from the third on, each request
    # reads what the previous one wrote.
    assert kinds[:2] == ["cold", "below_minimum"]
    assert all(k == "hit" for k in kinds[2:])
    assert all(r.usage["cache_read_tokens"] > 0 for r in trace.requests[2:])
    assert all(r.usage["cache_read_tokens"] + r.usage["cache_write_tokens"] <= r.usage["prompt_tokens"]
               for r in trace.requests)


def test_a_compression_is_named_as_the_cause_of_the_miss_after_it(config):
    trace = replay(coding_session(8), LowThreshold(), config, simulator=CacheSimulator("anthropic", model="claude-sonnet-4.5"))
    committed = [e for e in trace.events if e.kind == EV_COMPRESS and isinstance(e.result, dict)
                 and "$list" in e.result and not e.result.get("unchanged")]
    assert committed
    after = next(r for r in trace.requests if r.event > committed[0].index)
    assert after.cache.reason_kind == "prefix_break"
    assert after.cache.cause_event == committed[0].index
    assert "compress" in after.cache.reason


def test_select_context_rewriting_history_is_named(config):
    class Rewrites(CountingEngine):
        def select_context(self, request_messages, **kw):
            if len(request_messages) < 6:
                return None
            out = list(request_messages)
            out[2] = {**out[2], "content": "rewritten by the engine"}
            return out

    trace = replay(coding_session(4), Rewrites(), config, simulator=CacheSimulator("anthropic", model="claude-sonnet-4.5"))
    broken = [r for r in trace.requests if r.cache.reason_kind == "prefix_break"]
    assert broken
    cause = trace.events[broken[0].cache.cause_event]
    assert cause.kind == EV_SELECT


def test_the_cache_ttl_counts_from_when_requests_were_sent_not_answered(config):
    """A long generation must not look like an idle cache: the request went out at its last input."""
    session = coding_session(2)
    times = [None, 1000.0, 1250.0, 1251.0, 1500.0, 1520.0, 1850.0, 1851.0, 1900.0]
    for message, ts in zip(session.messages, times):
        if ts is not None:
            message["x_timestamp"] = ts
    trace = replay(session, CountingEngine(), config, simulator=CacheSimulator("anthropic", model="claude-sonnet-4.5"))
    second_turn = trace.requests[2]
    # Last use: the request sent at 1251 (after the tool result); the next went out at 1520, 269 s
    # later. Timed by the answers (1500 → 1850) it would be 350 s and look lapsed.
    assert second_turn.cache.reason_kind == "hit", second_turn.cache.reason
    assert second_turn.timestamp == 1850.0, "the request keeps its answer's time"


def test_the_estimated_cost_prices_exactly_the_usage_the_engine_was_given(config):
    from inspector.host.replay import make_simulator

    simulator = make_simulator(config, "anthropic/claude-sonnet-4.5")
    trace = replay(coding_session(4), CountingEngine(), config, simulator=simulator)
    for r in trace.requests:
        u = r.usage
        expected = simulator.cost(u["cache_read_tokens"], u["cache_write_tokens"], u["input_tokens"],
                                  u["completion_tokens"])
        assert r.cache.cost == pytest.approx(expected)
        assert u["input_tokens"] > 0, "reply priming and tool schemas are priced as input"
