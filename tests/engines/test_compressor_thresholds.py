"""Built-in compressor: thresholds, usage, gating, cooldowns, anti-thrash (agent/context_compressor.py:1013-1567 of hermes-agent 0.19.0)."""

from __future__ import annotations

import inspect
import json
import sys

import pytest

import inspector.llm
from inspector.engines.compressor import (
    ContextCompressor,
    compute_threshold_tokens,
    effective_threshold_percent,
    lookup_context_length,
)
from inspector.engines.contract import ContextEngine
from tests.engines.compressor_fakes import NO_PROVIDER, FakeAux, completion, hermetic, install_aux  # noqa: F401


def cooldown_left(c, **kwargs):
    """Seconds left in the engine's summary-failure cooldown (Hermes' dict), or None."""
    state = c.get_active_compression_failure_cooldown(**kwargs)
    return state["remaining_seconds"] if state else None


# ---------------------------------------------------------------------------------------------
# helpers (kept local: each compressor test module is self-contained)
# ---------------------------------------------------------------------------------------------



class Clock:
    def __init__(self, t: float = 1000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def engine(ctx: int = 200_000, **kw) -> ContextCompressor:
    kw.setdefault("quiet_mode", True)
    kw.setdefault("now", "2026-03-14")
    return ContextCompressor("test-model", config_context_length=ctx, **kw)


def chat(n: int) -> list[dict]:
    return [
        {"role": "user", "content": f"user {i}"} if i % 2 == 0 else {"role": "assistant", "content": f"reply {i}"}
        for i in range(n)
    ]


# ---------------------------------------------------------------------------------------------
# constructor, thresholds, budgets (context_compressor.py:1249-1321)
# ---------------------------------------------------------------------------------------------


def test_constructor_defaults_match_hermes():
    params = inspect.signature(ContextCompressor.__init__).parameters
    expected = {
        "threshold_percent": 0.50,
        "protect_first_n": 3,
        "protect_last_n": 20,
        "summary_target_ratio": 0.20,
        "quiet_mode": False,
        "summary_model_override": None,
        "base_url": "",
        "api_key": "",
        "config_context_length": None,
        "provider": "",
        "api_mode": "",
        "abort_on_summary_failure": False,
        "max_tokens": None,
    }
    for name, default in expected.items():
        assert params[name].default == default, name
    positional = [p for p in params if params[p].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    assert positional == ["self", "model", *expected]


def test_is_a_context_engine_named_compressor():
    c = engine()
    assert isinstance(c, ContextEngine)
    assert c.name == "compressor"
    assert c.protect_first_n == 3 and c.protect_last_n == 20


@pytest.mark.parametrize(
    ("ctx", "threshold"),
    [(1_000_000, 500_000), (400_000, 300_000), (200_000, 150_000), (128_000, 96_000), (64_000, 54_400)],
)
def test_threshold_examples(ctx, threshold):
    assert engine(ctx).threshold_tokens == threshold


def test_small_window_floor_raises_percent_only_below_512k():
    assert engine(511_999, threshold_percent=0.6).threshold_percent == 0.75
    assert engine(512_000, threshold_percent=0.6).threshold_percent == 0.6
    assert engine(512_000, threshold_percent=0.6).threshold_tokens == 307_200
    # raise-only: a higher configured percent stays
    assert engine(200_000, threshold_percent=0.9).threshold_percent == 0.9
    assert engine(200_000, threshold_percent=0.9).threshold_tokens == 180_000
    assert effective_threshold_percent(0.5, 100_000) == 0.75


def test_max_tokens_is_subtracted_from_window():
    assert engine(200_000, max_tokens=32_000).threshold_tokens == int(168_000 * 0.75)
    # what int() makes a positive number reserves that much (Hermes' _coerce_max_tokens); the rest none
    for bogus in (0, -5, "many", None, [1]):
        assert engine(200_000, max_tokens=bogus).threshold_tokens == 150_000
    assert engine(200_000, max_tokens="32000").threshold_tokens == int(168_000 * 0.75)
    assert engine(200_000, max_tokens=True).max_tokens == 1
    # reservation as large as the window: the window itself is used
    assert compute_threshold_tokens(200_000, 0.75, 200_000) == 150_000


def test_64k_minimum_and_085_rule():
    # 80K * 0.75 = 60 000 -> raised to the 64K minimum, still below the window
    assert engine(80_000).threshold_tokens == 64_000
    # usable 70 000: 52 500 -> 64 000 < 70 000
    assert compute_threshold_tokens(100_000, 0.75, 30_000) == 64_000
    # usable 60 000: 64 000 >= 60 000 -> min(int(60 000 * 0.85), 59 999)
    assert compute_threshold_tokens(100_000, 0.75, 40_000) == 51_000
    # tiny windows never go below 1 and stay below the window
    assert compute_threshold_tokens(1, 0.75) == 1
    assert compute_threshold_tokens(2, 0.75) == 1


def test_tail_and_summary_budgets():
    c = engine(200_000)
    assert c.tail_token_budget == 30_000
    assert c.max_summary_tokens == 10_000
    c = engine(128_000)
    assert c.tail_token_budget == 19_200
    assert c.max_summary_tokens == 6_400
    assert engine(1_000_000, summary_target_ratio=0.3).tail_token_budget == 150_000


def test_summary_target_ratio_is_clamped():
    assert engine(summary_target_ratio=0.01).summary_target_ratio == 0.10
    assert engine(summary_target_ratio=0.95).summary_target_ratio == 0.80


def test_context_length_lookup_is_offline_and_deterministic():
    assert lookup_context_length("some-unknown-model") == 256_000
    assert lookup_context_length("anthropic/claude-sonnet-4") == 200_000
    assert lookup_context_length("openai/gpt-4.1-mini") == 1_047_576  # longest key beats "gpt-4"
    assert lookup_context_length("claude", 77_000) == 77_000
    assert ContextCompressor("mystery", quiet_mode=True).context_length == 256_000
    assert ContextCompressor("mystery", config_context_length=90_000).context_length == 90_000


def test_model_thresholds_override_then_floor():
    c = ContextCompressor(
        "openai/gpt-4.1", config_context_length=1_000_000, model_thresholds={"gpt-4.1": 0.6, "gpt": 0.9}
    )
    assert c.threshold_percent == 0.6
    assert c.threshold_tokens == 600_000
    # below 512K the floor still applies to the override
    small = ContextCompressor("x-gpt", config_context_length=200_000, model_thresholds={"gpt": 0.55})
    assert small.threshold_percent == 0.75


def test_update_model_rederives_from_configured_percent():
    c = engine(200_000, model_thresholds={"big-model": 0.6})
    assert c.threshold_percent == 0.75  # 0.50 floored
    c.update_model("other", 1_000_000)
    assert c.threshold_percent == 0.50  # configured value, not the previous floor
    assert c.threshold_tokens == 500_000
    assert c.tail_token_budget == 100_000
    assert c.max_summary_tokens == 10_000
    c.update_model("big-model", 1_000_000)
    assert c.threshold_percent == 0.6
    c.update_model("other", 1_000_000)
    assert c.threshold_percent == 0.50  # never the previous model's override


def test_threshold_tokens_cap_lowers_the_trigger_and_the_tail_budget_with_it():
    c = engine(1_000_000, threshold_tokens_cap=300_000)
    assert c.threshold_tokens_cap == 300_000
    assert c.threshold_percent == 0.50  # the percent is untouched: only the token figure is capped
    assert c.threshold_tokens == 300_000
    assert c.tail_token_budget == 60_000  # 20 % of the capped threshold
    assert c.should_compress(299_999) is False and c.should_compress(300_000) is True
    # a cap above the ratio threshold changes nothing
    assert engine(1_000_000, threshold_tokens_cap=700_000).threshold_tokens == 500_000


def test_threshold_tokens_cap_wins_over_the_64k_minimum_and_is_bounded_by_the_window():
    assert engine(200_000, threshold_tokens_cap=40_000).threshold_tokens == 40_000
    # a cap beyond the window is a no-op: the ratio threshold stays
    assert engine(64_000, threshold_tokens_cap=10_000_000).threshold_tokens == 54_400


@pytest.mark.parametrize(("value", "cap"), [(None, None), (0, None), (-5, None), ("lots", None), ([1], None),
                                            (float("inf"), None), ("70000", 70_000), (70_000.9, 70_000)])
def test_threshold_tokens_cap_takes_what_int_makes_positive_and_nothing_else(value, cap):
    c = engine(1_000_000, threshold_tokens_cap=value)
    assert c.threshold_tokens_cap == cap
    assert c.threshold_tokens == (cap or 500_000)


def test_threshold_tokens_cap_applies_over_per_model_overrides_and_survives_model_switches():
    c = engine(1_000_000, model_thresholds={"big-model": 0.9}, threshold_tokens_cap=250_000)
    assert c.threshold_tokens == 250_000
    c.update_model("big-model", 1_000_000)
    assert (c.threshold_percent, c.threshold_tokens, c.tail_token_budget) == (0.9, 250_000, 50_000)
    c.update_model("small-model", 128_000)  # 96 000 is already below the cap
    assert c.threshold_tokens == 96_000
    c.update_model("other", 2_000_000)
    assert c.threshold_tokens == 250_000
    c.model_thresholds = {"other": 0.7}  # the map's own re-derivation keeps the cap too
    assert (c.threshold_percent, c.threshold_tokens) == (0.7, 250_000)


def test_threshold_tokens_cap_set_later_is_applied_on_the_next_update_model():
    c = engine(1_000_000)
    c.threshold_tokens_cap = 123_456
    assert c.threshold_tokens == 500_000  # a plain attribute, as in Hermes
    c.update_model("test-model", 1_000_000)
    assert c.threshold_tokens == 123_456


def test_newer_hermes_constructor_keywords_are_accepted():
    c = engine(threshold_tokens_cap=None, min_tail_user_messages=3, tail_mode="legacy")
    assert (c.threshold_tokens_cap, c.min_tail_user_messages, c.tail_mode) == (None, 3, "legacy")
    d = engine()
    assert (d.threshold_tokens_cap, d.min_tail_user_messages, d.tail_mode) == (None, 1, "legacy")


def test_a_lean_tail_request_is_recorded_and_said_not_to_be_modelled(caplog):
    with caplog.at_level("WARNING", logger="inspector.engines.compressor"):
        c = engine(tail_mode="lean")
    assert c.tail_mode == "lean"
    assert c.tail_token_budget == engine().tail_token_budget  # the legacy budget
    assert "tail_mode 'lean' is not modelled" in caplog.text
    assert engine(tail_mode="sideways").tail_mode == "legacy"


def test_update_model_zeroes_token_tracking_and_applies_max_tokens():
    c = engine(200_000)
    c.update_from_response({"prompt_tokens": 1000, "completion_tokens": 10})
    c.last_prompt_tokens = -1
    c.update_model("test-model", 200_000, max_tokens=32_000)
    assert (c.last_prompt_tokens, c.last_completion_tokens, c.last_total_tokens) == (0, 0, 0)
    assert c.last_real_prompt_tokens == 0
    assert c.threshold_tokens == 126_000
    c.update_model("test-model", 200_000)  # None keeps the reservation
    assert c.threshold_tokens == 126_000


def test_update_model_route_change_resets_streak_and_cooldown():
    clock = Clock()
    c = engine(200_000, clock=clock, provider="p", base_url="http://a")
    c._fallback_compression_streak = 2
    c._set_failure_cooldown(600, "no_provider")
    c.update_model("test-model", 200_000, base_url="http://a", provider="p")
    assert c._fallback_compression_streak == 2
    assert cooldown_left(c) == 600
    c.update_model("test-model", 200_000, base_url="http://b", provider="p")
    assert c._fallback_compression_streak == 0
    assert cooldown_left(c) is None


# ---------------------------------------------------------------------------------------------
# update_from_response (context_compressor.py:1459-1513)
# ---------------------------------------------------------------------------------------------


def test_update_from_response_reads_legacy_keys():
    c = engine()
    c.update_from_response({"prompt_tokens": 120, "completion_tokens": 30, "input_tokens": 9999})
    assert (c.last_prompt_tokens, c.last_completion_tokens, c.last_total_tokens) == (120, 30, 150)
    assert c.last_real_prompt_tokens == 120
    c.update_from_response({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 99})
    assert c.last_total_tokens == 99


def test_update_from_response_accepts_empty_dict_and_clears_awaiting():
    c = engine()
    c.last_prompt_tokens = -1
    c.awaiting_real_usage_after_compression = True
    c.record_completed_compaction(used_fallback=False)
    c.update_from_response({})
    assert c.awaiting_real_usage_after_compression is False
    assert c._verify_compaction_cleared_threshold is False
    assert c.last_prompt_tokens == 0
    assert c.last_real_prompt_tokens == 0
    assert c._ineffective_compression_count == 0


def test_real_count_below_threshold_resets_ineffective_counter():
    c = engine()
    c._ineffective_compression_count = 1
    c.update_from_response({"prompt_tokens": 149_999})
    assert c._ineffective_compression_count == 0


def test_verdict_after_compaction_counts_ineffective():
    c = engine()
    c.record_completed_compaction(used_fallback=False)
    c.update_from_response({"prompt_tokens": 150_000})
    assert c._ineffective_compression_count == 1
    # no verdict pending: an over-threshold reading alone does not count
    c.update_from_response({"prompt_tokens": 160_000})
    assert c._ineffective_compression_count == 1
    c.record_completed_compaction(used_fallback=False)
    c.update_from_response({"prompt_tokens": 160_000})
    assert c._ineffective_compression_count == 2
    assert c.should_compress(160_000) is False


# ---------------------------------------------------------------------------------------------
# should_compress (context_compressor.py:1557-1567) / should_compress_info (docs/host-contract.md §1)
# ---------------------------------------------------------------------------------------------


def test_should_compress_threshold_edge_and_default_argument():
    c = engine()
    assert c.should_compress(149_999) is False
    assert c.should_compress(150_000) is True
    c.last_prompt_tokens = 150_000
    assert c.should_compress() is True
    c.last_prompt_tokens = -1
    assert c.should_compress() is False


def test_should_compress_info_reasons():
    clock = Clock()
    c = engine(clock=clock)
    assert c.should_compress_info(10) == (False, None)
    assert c.should_compress_info(150_000) == (True, None)
    c._set_failure_cooldown(59.2, "other")
    assert c.should_compress_info(150_000) == (False, "cooldown:60")
    assert c._automatic_compression_blocked() is True
    clock.t += 60
    assert c.should_compress_info(150_000) == (True, None)
    c._ineffective_compression_count = 2
    assert c.should_compress_info(150_000) == (False, "anti_thrash:ineffective_compressions=2")
    c._ineffective_compression_count = 0
    c._fallback_compression_streak = 2
    assert c.should_compress_info(150_000) == (False, "anti_thrash:fallback_streak=2")
    assert c.should_compress(150_000) is False


def test_fallback_streak_counts_and_resets():
    c = engine()
    c.record_completed_compaction(used_fallback=True)
    assert c._fallback_compression_streak == 1 and c.should_compress(150_000)
    c.record_completed_compaction(used_fallback=True)
    assert c._fallback_compression_streak == 2 and not c.should_compress(150_000)
    c.record_completed_compaction(used_fallback=False)
    assert c._fallback_compression_streak == 0 and c.should_compress(150_000)


def test_ineffective_compress_calls_block_automatic_compaction():
    c = engine()
    tiny = chat(7)  # 7 <= 3 + 4
    assert c.compress(tiny) is tiny
    assert c.compress(tiny) is tiny
    assert c._ineffective_compression_count == 2
    assert c.should_compress(200_000) is False
    c.update_from_response({"prompt_tokens": 1000})
    assert c.should_compress(200_000) is True


# ---------------------------------------------------------------------------------------------
# should_defer_preflight_to_real_usage (context_compressor.py:1515-1555)
# ---------------------------------------------------------------------------------------------


def test_defer_rules():
    c = engine()  # threshold 150 000, slack max(4096, 7500) = 7500
    assert c.should_defer_preflight_to_real_usage(100_000) is False
    assert c.should_defer_preflight_to_real_usage(160_000) is False  # no real usage yet
    c.awaiting_real_usage_after_compression = True
    assert c.should_defer_preflight_to_real_usage(160_000) is True
    assert c.should_defer_preflight_to_real_usage(149_999) is False  # below threshold never defers
    c.awaiting_real_usage_after_compression = False
    c.update_from_response({"prompt_tokens": 155_000})  # real count already over
    assert c.should_defer_preflight_to_real_usage(160_000) is False


def test_defer_while_rough_estimate_barely_grew_since_the_compacted_transcript_fitted():
    c = engine()
    # the host's bookkeeping after a compaction (conversation_compression.py:1457 of Hermes 0.19.0)
    c.last_compression_rough_tokens = 145_000
    c.awaiting_real_usage_after_compression = True
    c.update_from_response({"prompt_tokens": 140_000})  # the compacted transcript fits: baseline 145 000
    assert c.last_rough_tokens_when_real_prompt_fit == 145_000
    assert c.should_defer_preflight_to_real_usage(152_500) is True  # +7 500 == slack
    assert c.should_defer_preflight_to_real_usage(160_000) is True  # baseline moved to 152 500
    assert c.should_defer_preflight_to_real_usage(167_501) is False  # +7 501
    assert c.should_compress(167_501) is True


def test_no_defer_before_the_first_compaction():
    c = engine()
    c.update_from_response({"prompt_tokens": 120_000})  # fits, but there is no baseline yet
    assert c.should_defer_preflight_to_real_usage(151_000) is False
    c2 = engine()
    c2.update_from_response({"prompt_tokens": 11_000})
    assert c2.should_defer_preflight_to_real_usage(c2.threshold_tokens) is False


# ---------------------------------------------------------------------------------------------
# cooldowns (context_compressor.py:1028-1141)
# ---------------------------------------------------------------------------------------------


def _turns() -> list[dict]:
    return chat(6)


def test_no_provider_cooldown_600s():
    clock = Clock()
    c = engine(clock=clock)
    assert c._generate_summary(_turns()) is None
    assert c._last_summary_error == "no auxiliary LLM provider configured"
    assert cooldown_left(c) == 600
    clock.t += 599.5
    assert cooldown_left(c) == pytest.approx(0.5)
    clock.t += 0.5
    assert cooldown_left(c) is None


def test_missing_aux_module_counts_as_no_provider(monkeypatch):
    monkeypatch.setitem(sys.modules, "inspector.llm.aux", None)
    monkeypatch.delattr(inspector.llm, "aux", raising=False)
    c = engine()
    assert c._generate_summary(_turns()) is None
    assert c._last_summary_error == "no auxiliary LLM provider configured"


def test_no_call_during_cooldown(monkeypatch):
    fake = install_aux(monkeypatch, FakeAux("## Goal\nok"))
    clock = Clock()
    c = engine(clock=clock)
    c._set_failure_cooldown(30, "json")
    assert c._generate_summary(_turns()) is None
    assert fake.calls == []
    clock.t += 30
    assert c._generate_summary(_turns()) is not None
    assert len(fake.calls) == 1


def test_timeout_ladder(monkeypatch):
    install_aux(monkeypatch, FakeAux(TimeoutError("Request timed out.")))
    clock = Clock()
    c = engine(clock=clock)
    seen = []
    for _ in range(4):
        assert c._generate_summary(_turns()) is None
        remaining = cooldown_left(c)
        seen.append(remaining)
        clock.t += remaining
    assert seen == [60, 300, 900, 900]


def test_http_status_classes(monkeypatch):
    class HTTPError(Exception):
        def __init__(self, status, msg="err"):
            super().__init__(msg)
            self.status_code = status

    cases = [
        (HTTPError(429), 60, "timeout"),
        (HTTPError(504), 60, "timeout"),
        (json.JSONDecodeError("Expecting value", "", 0), 30, "json"),
        (ConnectionError("Connection closed by peer"), 30, "connection"),
        (HTTPError(401), 60, "auth"),
        (RuntimeError("insufficient_quota: you exceeded your quota"), 60, "auth"),
        (ValueError("boom"), 60, "other"),
    ]
    for exc, cooldown, kind in cases:
        install_aux(monkeypatch, FakeAux(exc))
        c = engine(clock=Clock())
        assert c._generate_summary(_turns()) is None
        assert cooldown_left(c) == cooldown, exc
        assert c._summary_failure_kind == kind, exc
        assert c._last_summary_auth_failure is (kind == "auth")
        assert c._last_summary_network_failure is (kind == "connection")


def test_record_timeout_failure_uses_ladder_and_success_resets_it(monkeypatch):
    clock = Clock()
    c = engine(clock=clock)
    c.record_timeout_failure("compress exceeded 120s", failure_kind="stalled")
    assert cooldown_left(c) == 60
    assert c._last_summary_error == "stalled: compress exceeded 120s"
    c.record_timeout_failure("again", failure_kind="ceiling_exhausted")
    assert cooldown_left(c) == 300
    clock.t += 300
    install_aux(monkeypatch, FakeAux("## Goal\nfine"))
    assert c._generate_summary(_turns()) is not None
    assert c._last_summary_error is None
    c.record_timeout_failure("x")
    assert cooldown_left(c) == 60


def test_force_clears_cooldown(monkeypatch):
    fake = install_aux(monkeypatch, FakeAux("## Goal\nforced"))
    c = engine(clock=Clock())
    c._set_failure_cooldown(600, "no_provider")
    out = c.compress(chat(40), force=True)
    assert len(fake.calls) == 1
    assert c._last_summary_fallback_used is False
    assert any("forced" in str(m.get("content")) for m in out)


def test_summary_model_failure_falls_back_to_main_model_once(monkeypatch):
    fake = install_aux(monkeypatch, FakeAux(ValueError("model_not_found: aux-small"), "## Goal\nfrom main"))
    c = engine(summary_model_override="aux-small")
    out = c._generate_summary(_turns())
    assert out is not None and "from main" in out
    assert fake.calls[0]["model"] == "aux-small"
    assert "model" not in fake.calls[1]
    assert c._last_aux_model_failure_model == "aux-small"
    assert "model_not_found" in c._last_aux_model_failure_error
    assert c.summary_model == ""


# ---------------------------------------------------------------------------------------------
# lifecycle and status
# ---------------------------------------------------------------------------------------------


def test_on_session_end_clears_previous_summary_only():
    c = engine()
    c._previous_summary = "body"
    c.compression_count = 2
    c.on_session_end("sid", [])
    assert c._previous_summary is None
    assert c.compression_count == 2


def test_on_session_reset_zeroes_counters():
    c = engine(clock=Clock())
    c.compression_count = 3
    c.last_prompt_tokens = 10
    c._previous_summary = "x"
    c._fallback_compression_streak = 2
    c._ineffective_compression_count = 2
    c._set_failure_cooldown(600, "no_provider")
    c.on_session_reset()
    assert c.compression_count == 0 and c.last_prompt_tokens == 0
    assert c._previous_summary is None
    assert c.should_compress(150_000) is True


def test_get_status_clamps_sentinel():
    c = engine()
    c.last_prompt_tokens = -1
    status = c.get_status()
    assert status["last_prompt_tokens"] == 0
    assert status["usage_percent"] == 0
    assert status["threshold_tokens"] == 150_000 and status["context_length"] == 200_000
    c.last_prompt_tokens = 50_000
    assert c.get_status()["usage_percent"] == 25.0


def test_assigning_model_thresholds_takes_effect():
    c = ContextCompressor("openai/gpt-4.1", config_context_length=1_000_000, quiet_mode=True)
    assert c.threshold_tokens == 500_000
    c.model_thresholds = {"gpt-4.1": 0.6}
    assert c.threshold_tokens == 600_000 and c.tail_token_budget == 120_000
    c.model_thresholds = None
    assert c.model_thresholds == {} and c.threshold_tokens == 500_000


def test_engine_deep_copies_with_its_state():
    import copy

    clock = Clock()
    c = engine(clock=clock)
    c._previous_summary = "body"
    c.compression_count = 1
    twin = copy.deepcopy(c)
    assert twin is not c and twin._previous_summary == "body" and twin.compression_count == 1
    assert twin._compress_lock is not c._compress_lock
    assert twin.compress(chat(30)) is not None
    assert c.compression_count == 1 and twin.compression_count == 2


@pytest.mark.parametrize(("model", "window", "threshold"), [
    ("google/gemini-2.5-pro", 1_048_576, 524_288),
    ("anthropic/claude-opus-4", 200_000, 150_000),
])
def test_a_hermes_config_without_a_window_gets_the_models_own(model, window, threshold):
    from inspector.config import load_config
    from inspector.engines.loading import build_builtin_compressor
    from inspector.host.host import HostSettings

    config = load_config(None, {"model": {"default": model, "provider": "openrouter"}})
    engine = build_builtin_compressor(config)
    assert (engine.context_length, engine.threshold_tokens) == (window, threshold)
    assert HostSettings(config).context_length == window, "the host tells update_model the same window"
    config = load_config(None, {"model": {"default": model, "context_length": 128000}})
    assert build_builtin_compressor(config).context_length == 128000, "an explicit window wins"


def test_switching_to_a_model_without_an_override_falls_back_to_the_configured_percent():
    from inspector.config import load_config
    from inspector.engines.loading import build_builtin_compressor

    config = load_config(None, {"model": {"default": "anthropic/claude-sonnet-4.5", "context_length": 1_000_000},
                                "compression": {"threshold": 0.6, "model_thresholds": {"claude": 0.8}}})
    engine = build_builtin_compressor(config)
    assert (engine.threshold_percent, engine.threshold_tokens) == (0.8, 800_000)
    engine.update_model("openai/gpt-4.1", 1_000_000, provider="openai")
    assert (engine.threshold_percent, engine.threshold_tokens) == (0.6, 600_000)


@pytest.mark.parametrize(("value", "cap"), [(250_000, 250_000), ("250000", 250_000), (0, None), (-1, None),
                                            ("soon", None), (None, None)])
def test_compression_threshold_tokens_reaches_the_builtin_as_its_cap(value, cap):
    from inspector.config import load_config
    from inspector.engines.loading import build_builtin_compressor

    config = load_config(None, {"model": {"default": "some-model", "context_length": 1_000_000},
                                "compression": {"threshold_tokens": value}})
    engine = build_builtin_compressor(config)
    assert engine.threshold_tokens_cap == cap
    assert engine.threshold_tokens == (cap or 500_000)
    engine.update_model("other-model", 2_000_000)
    assert engine.threshold_tokens == (cap or 1_000_000)


@pytest.mark.parametrize(("value", "wanted"), [(3, 3), (3.0, 3), ("4", 4), (2.5, 1), (True, 1), (0, 1), (-2, 1),
                                               ("many", 1), (None, 1)])
def test_compression_min_tail_user_messages_reaches_the_builtin_as_hermes_reads_it(value, wanted):
    from inspector.config import load_config
    from inspector.engines.loading import build_builtin_compressor

    config = load_config(None, {"compression": {"min_tail_user_messages": value}})
    assert build_builtin_compressor(config).min_tail_user_messages == wanted
