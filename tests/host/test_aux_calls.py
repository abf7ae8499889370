"""Auxiliary LLM calls an engine makes (call_llm) appear in the trace next to the hook."""

from __future__ import annotations

from inspector.engines.discovery import load_engine
from inspector.host.replay import replay
from inspector.trace.model import EV_AUX_LLM, EV_COMPRESS

from .conftest import coding_session


def test_the_compressor_summary_call_is_recorded_during_compress(config, nocache):
    config["compression"]["threshold"] = 0.5
    loaded = load_engine("compressor", config)
    try:
        loaded.engine.threshold_tokens = 3000  # compress early in a small session
        trace = replay(coding_session(8), loaded, config, simulator=nocache)
    finally:
        loaded.close()
    aux = [e for e in trace.events if e.kind == EV_AUX_LLM]
    assert aux, "the compressor asks call_llm for a summary before falling back"
    first = aux[0]
    parent = trace.events[first.args["during"]]
    assert parent.kind == EV_COMPRESS and first.index > parent.index
    assert first.args["task"] == "compression"
    # Offline, call_llm raises Hermes' "no provider" error: recorded, but not an engine fault.
    assert first.fault is None and "No LLM provider" in first.result["error"]
    prompt = trace.store.materialise(first.args["prompt"]["$list"])
    assert prompt[0]["role"] == "user" and "TURNS TO SUMMARIZE" in prompt[0]["content"]
    assert "api_key" not in str(first.args["kwargs"])


def _compressions(config, nocache, strict: bool):
    from inspector.trace.model import EV_COMPRESS

    config["inspector"]["offline_fallback_counts"] = strict
    loaded = load_engine("compressor", config)
    try:
        loaded.engine.threshold_tokens = 3000
        trace = replay(coding_session(12), loaded, config, simulator=nocache)
    finally:
        loaded.close()
    return trace, [e for e in trace.events if e.kind == EV_COMPRESS and isinstance(e.result, dict)
                   and "$list" in e.result and not e.result.get("unchanged")]


def test_offline_fallback_summaries_stand_in_for_the_auxiliary_model_by_default(config, nocache):
    trace, committed = _compressions(config, nocache, strict=False)
    assert len(committed) > 2
    aux = [e for e in trace.events if e.kind == "call_llm"]
    assert aux and all("No LLM provider" in e.result["error"] for e in aux)


def test_hermes_strict_rule_on_request(config, nocache):
    _, default = _compressions(config, nocache, strict=False)
    trace, strict = _compressions(config, nocache, strict=True)
    # Hermes' own rule offline: a no-provider cooldown (600 s of transcript time) after the first
    # fallback summary, and a block after two in a row (hermes-host.md §6.8).
    assert 1 <= len(strict) < len(default)
    assert any("cooldown" in (e.note or "") or "fallback_streak" in (e.note or "") for e in trace.events)
