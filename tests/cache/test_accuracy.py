"""The simulator's accuracy block: error of the per-request hit rate, misses caught, false alarms."""

from __future__ import annotations

from inspector.cache.accuracy import accuracy, describe_accuracy, recorded_vs_simulated
from inspector.trace.model import CacheInfo, Request, Trace


def _trace(pairs, same=None):
    """Requests with (recorded read, simulated read) out of 1,000 prompt tokens each."""
    t = Trace()
    for k, (rec, sim) in enumerate(pairs):
        t.requests.append(Request(index=k, turn=0, call=k, event=0, assembled=0, selected=0,
                                  recorded={"prompt_tokens": 1000, "cache_read_tokens": rec, "cache_write_tokens": 0,
                                            "cache_write_1h_tokens": 0},
                                  cache=CacheInfo(read=sim, write=0, uncached=1000 - sim, reason_kind="hit")))
    t.meta["usage_model"] = {"same_request": same if same is not None else [True] * len(pairs)}
    return t


def test_errors_misses_and_false_alarms_are_counted_per_request():
    t = _trace([(0, 0), (900, 880), (500, 950), (950, 600), (990, 990)])
    block = accuracy(t)
    assert block["compared"] == 5
    assert block["mean_error_points"] == round((0 + 2 + 45 + 35 + 0) / 5, 2)
    assert block["real_misses"] == 2 and block["caught"] == 1 and block["missed_requests"] == [2]
    assert block["false_alarms"] == 1 and block["false_alarm_requests"] == [3]
    assert block["false_alarms_per_100"] == 20.0
    assert any("1 of 2 real misses caught" in line for line in describe_accuracy(block))


def test_a_request_that_is_not_the_agents_is_not_compared():
    t = _trace([(900, 900), (0, 900)], same=[True, False])
    block = accuracy(t)
    assert block["compared"] == 1 and block["real_misses"] == 0
    assert accuracy(_trace([(900, 900)], same=[False])) is None


def test_recorded_and_simulated_totals_side_by_side():
    both = recorded_vs_simulated(_trace([(500, 400), (1000, 900)]))
    assert both["recorded"]["read"] == 1500 and both["simulated"]["read"] == 1300
    assert both["recorded"]["hit_rate"] == 0.75 and both["simulated"]["hit_rate"] == 0.65


def test_the_compaction_timing_says_how_far_the_recorded_usage_stayed_from_a_threshold_it_never_reached():
    from inspector.cache.accuracy import describe_crossing

    never = {"threshold": 193_800, "recorded_crossed_at": None, "engine_compacted_before": None, "delta": None,
             "recorded_peak": 143_372, "recorded_peak_at": 80}
    assert describe_crossing(never) == ("recorded usage never reached the threshold (193,800); its highest was "
                                        "143,372 at request 80; the engine never compacted")
    crossed = dict(never, recorded_crossed_at=57, engine_compacted_before=58, delta=1)
    assert describe_crossing(crossed) == ("recorded usage first reached the threshold (193,800) at request 57; "
                                          "the engine first compacted before request 58 (+1 requests)")
