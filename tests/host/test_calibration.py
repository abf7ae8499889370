"""Usage as the provider counted it: the fitted head and ratio, and what the engine is fed."""

from __future__ import annotations

import pytest

from inspector.host.calibration import UsageModeError, fit, request_counts, usage_mode, usage_model_for
from inspector.host.replay import replay
from inspector.sessions.model import ApiCall, Compaction, Usage
from inspector.tokens.counter import TokenCounter
from inspector.trace.model import EV_RESPONSE

from .conftest import CountingEngine, coding_session

HEAD, RATIO = 7_000, 1.25


def _recorded(turns: int = 5, *, warm: int = 0, head: int = HEAD, ratio: float = RATIO):
    """A session whose calls carry the usage a provider with an unrecorded head would report."""
    s = coding_session(turns)
    counter = TokenCounter("cl100k_base")
    s.api_calls = [ApiCall(message_index=i) for i, m in enumerate(s.messages) if m["role"] == "assistant"]
    sent, _ = request_counts(s, counter)
    for k, call in enumerate(s.api_calls):
        prompt = int(head + ratio * sent[call.message_index])
        call.usage = Usage(prompt_tokens=prompt, completion_tokens=11, cache_read_tokens=warm if k == 0 else prompt // 2)
    return s, counter


def test_the_head_and_ratio_are_recovered_from_the_recorded_calls():
    s, counter = _recorded()
    cal = fit(s, counter)
    assert abs(cal.hidden_tokens - HEAD) <= 2 and abs(cal.ratio - RATIO) < 0.001
    assert cal.calls == len(s.api_calls) and cal.p90_error_pct < 0.1 and cal.warnings == []


def test_one_odd_call_does_not_move_the_fit():
    s, counter = _recorded(8)
    s.api_calls[3].usage.prompt_tokens *= 3  # a call whose transcript text is incomplete
    cal = fit(s, counter)
    assert abs(cal.hidden_tokens - HEAD) < 100 and abs(cal.ratio - RATIO) < 0.02


def test_the_first_calls_cache_read_is_the_warm_head_and_a_huge_head_is_warned_about():
    s, counter = _recorded(warm=5_000)
    assert fit(s, counter).warm_tokens == 5_000
    s, counter = _recorded(head=150_000)
    [warning] = fit(s, counter).warnings
    assert "far smaller than its recorded usage" in warning


def test_the_mode_defaults_to_calibrated_only_when_the_source_has_usage():
    s, _ = _recorded()
    assert usage_mode({}, s) == "calibrated"
    assert usage_mode({}, coding_session(2)) == "tokenizer"
    assert usage_mode({"inspector": {"usage": "recorded"}}, s) == "recorded"
    with pytest.raises(UsageModeError, match="'bogus' is not one of calibrated, tokenizer, recorded"):
        usage_mode({"inspector": {"usage": "bogus"}}, s)


def _fed(trace):
    return [e.args["usage"] for e in trace.events if e.kind == EV_RESPONSE]


def test_the_engine_gets_the_recorded_usage_while_its_request_is_the_agents(config, nocache):
    s, counter = _recorded()
    trace = replay(s, CountingEngine(), config, simulator=nocache, counter=counter)
    assert trace.meta["usage_model"]["mode"] == "calibrated"
    assert trace.meta["usage_model"]["fed"] == {"recorded": len(s.api_calls)}
    assert [u["prompt_tokens"] for u in _fed(trace)] == [c.usage.prompt_tokens for c in s.api_calls]


def test_after_the_agents_own_compaction_the_engine_gets_the_calibrated_count(config, nocache):
    s, counter = _recorded(4)
    cut = s.api_calls[2].message_index - 1  # the agent compacted before its third call
    s.compactions = [Compaction(message_index=cut, kind="claude-compact-boundary")]
    model = usage_model_for(config, s, counter)
    trace = replay(s, CountingEngine(), config, simulator=nocache, counter=counter)
    fed = trace.meta["usage_model"]["fed_per_request"]
    assert fed[:2] == ["recorded", "recorded"] and set(fed[2:]) == {"calibrated"}
    for req, usage in list(zip(trace.requests, _fed(trace)))[2:]:
        assert usage["prompt_tokens"] == model.calibration.provider_tokens(req.tokens["tiktoken"])
        assert usage["prompt_tokens"] > req.tokens["tiktoken"] + HEAD - 10


def test_tokenizer_mode_is_our_count_alone(config, nocache):
    s, counter = _recorded(3)
    chosen = {**config, "inspector": {**config["inspector"], "usage": "tokenizer"}}
    trace = replay(s, CountingEngine(), chosen, simulator=nocache, counter=counter)
    assert [u["prompt_tokens"] for u in _fed(trace)] == [r.tokens["tiktoken"] for r in trace.requests]
    assert trace.meta["usage_model"]["calibration"] is None


def test_the_recorded_cache_write_split_is_kept_beside_the_simulated_figures(config, nocache):
    s, counter = _recorded(2)
    s.api_calls[0].usage.cache_write_tokens, s.api_calls[0].usage.cache_write_1h_tokens = 900, 600
    trace = replay(s, CountingEngine(), config, simulator=nocache, counter=counter)
    assert trace.requests[0].recorded["cache_write_1h_tokens"] == 600
    assert "cache_write_1h_tokens" not in _fed(trace)[0], "the engine gets exactly Hermes' usage dict"


def test_the_window_check_counts_the_head_the_provider_saw(config, nocache):
    s, counter = _recorded(3, head=66_000)  # the window is 64,000: every real request was over it
    faults = [e.fault for e in replay(s, CountingEngine(), config, simulator=nocache, counter=counter).events
              if e.fault is not None and e.fault.kind in ("context_overflow", "compression_exhausted")]
    assert faults, "the head alone is over the window"
    over = int(faults[0].message.split(" tokens")[0].split()[-1].replace(",", ""))
    assert over > 66_000
    chosen = {**config, "inspector": {**config["inspector"], "usage": "tokenizer"}}
    trace = replay(s, CountingEngine(), chosen, simulator=nocache, counter=counter)
    assert not [e for e in trace.events if e.fault is not None and e.fault.kind == "context_overflow"]


def test_after_the_agent_reloads_its_tools_the_head_is_new_to_the_cache_but_its_warm_part():
    from inspector.cache.simulator import CacheSimulator
    from inspector.host.calibration import Calibration, UsageModel

    sim = CacheSimulator("anthropic", model="claude-opus-4-6")
    cal = Calibration(hidden_tokens=20_000, ratio=1.0, warm_tokens=15_000, calls=3, method="test")
    model = UsageModel("calibrated", cal, {}, sim, head_changes=[5])

    def run(index, blocks):
        key, tools, tokens = model.cache_view("", 0, blocks, index)
        return sim.simulate(block_keys=[f"m{i}" for i in range(len(blocks))], block_tokens=tokens, tools_key=key,
                            tools_tokens=tools, timestamp=float(index))

    assert run(1, [500]).read == 15_000, "the warm part of the head on the first call"
    assert run(3, [500, 500]).read == 20_500, "the session's own cache after it"
    reloaded = run(7, [500, 500, 500])
    assert reloaded.read == 15_000 and reloaded.reason_kind == "prefix_break"
    assert "the agent's own head" in reloaded.reason


def test_the_cache_view_scales_every_block_and_the_tools_as_the_calibration_does():
    import random

    from inspector.host.calibration import Calibration, UsageModel

    cal = Calibration(hidden_tokens=1_000, ratio=0.73, warm_tokens=0, calls=3, method="test")
    model = UsageModel("calibrated", cal)
    rng = random.Random(7)
    for _ in range(50):  # the same counts come back request after request
        blocks = [rng.randint(0, 3_000) for _ in range(rng.randint(0, 40))]
        _key, tools, scaled = model.cache_view("tools", 2_345, blocks)
        assert scaled == [int(round(0.73 * t)) for t in blocks]
        assert tools == int(round(0.73 * 2_345)) + 1_000
    model.calibration = refit = Calibration(hidden_tokens=0, ratio=1.5, warm_tokens=0, calls=3, method="test")
    assert model.cache_view("tools", 10, [100, 3])[1:] == (refit.scaled(10), [150, 4])  # a refit scales anew


def test_the_calibration_counts_each_message_under_the_replays_key_so_the_replay_counts_none_again(config, nocache):
    s, _ = _recorded(4)
    counter = TokenCounter("cl100k_base")
    counter.count_ahead = False
    request_counts(s, counter)
    counted: list[dict] = []
    walk = counter._message_tokens
    counter._message_tokens = lambda message: counted.append(message) or walk(message)
    trace = replay(s, CountingEngine(), config, simulator=nocache, counter=counter)
    transcript = {m["content"] for m in s.messages if isinstance(m.get("content"), str)}
    assert trace.requests and not [m for m in counted if m.get("content") in transcript]


def test_a_replay_hashes_each_transcript_message_once_the_calibrations_key_kept_for_the_host(config, nocache, monkeypatch):
    import inspector.host.responders as responders
    import inspector.trace.model as model

    s, _ = _recorded(4)
    hashed: list[dict] = []
    measure = model.measured_key
    monkeypatch.setattr(model, "measured_key", lambda message: hashed.append(message) or measure(message))
    sent = responders.WireMessages.sent_form
    calibrated: list[str] = []
    monkeypatch.setattr(responders.WireMessages, "sent_form",
                        lambda self, i: (lambda form: calibrated.append(form[1]) or form)(sent(self, i)))
    trace = replay(s, CountingEngine(), config, simulator=nocache)
    texts = [m["content"].strip() for m in s.messages if isinstance(m.get("content"), str) and m["role"] != "system"]
    assert trace.requests and len(calibrated) == len(s.messages)
    assert sorted(m["content"] for m in hashed if m.get("content") in texts) == sorted(texts)  # each once
    assert set(calibrated) <= set(trace.store.messages)


def test_calls_recording_the_same_usage_share_one_recorded_dict_and_different_ones_do_not(config, nocache):
    s, counter = _recorded(4)
    for call in s.api_calls[1:3]:
        call.usage = Usage(prompt_tokens=0, source="aggregate-only")
    trace = replay(s, CountingEngine(), config, simulator=nocache, counter=counter)
    first, second, third, fourth = (r.recorded for r in trace.requests[:4])
    assert second is third and second == {**second, "prompt_tokens": 0}
    assert first is not second and first["prompt_tokens"] == s.api_calls[0].usage.prompt_tokens
    assert fourth["prompt_tokens"] == s.api_calls[3].usage.prompt_tokens != first["prompt_tokens"]
