"""Every compressor in a run, the built-in's or one a plugin builds itself, runs on the run's clock
and offline rule (agent/context_compressor.py:1028-1141, 1557-1647 of hermes-agent 0.19.0: in Hermes they are one class on one clock)."""

from __future__ import annotations

import json
import threading

import pytest

from inspector.engines.compressor import ContextCompressor
from inspector.engines.contract import ContextEngine
from inspector.engines.discovery import load_engine
from inspector.host.guard import call_on_pool
from inspector.host.replay import replay
from inspector.sessions.model import Session, compute_turns
from inspector.trace.model import EV_COMPRESS

_FORWARDED = ("last_prompt_tokens", "last_completion_tokens", "last_total_tokens", "threshold_tokens",
              "context_length", "compression_count", "threshold_percent", "protect_first_n", "protect_last_n")
_HOST_WRITES = ("last_compression_rough_tokens", "awaiting_real_usage_after_compression")


def _forward(name: str) -> property:
    return property(lambda self: getattr(self.inner, name), lambda self, value: setattr(self.inner, name, value))


class WrapsCompressor(ContextEngine):
    """A plugin in the style of hindsight_archive or context-tuner: it builds Hermes' compressor
    itself when it is loaded, before any host exists, and hands every hook to it."""

    name = "wraps_compressor"
    locals().update({attr: _forward(attr) for attr in _FORWARDED})

    def __init__(self, on_hook=None):
        self.__dict__["inner"] = ContextCompressor("placeholder-model", quiet_mode=True)
        self.__dict__["on_hook"] = on_hook or (lambda inner: None)

    def __getattr__(self, attr):  # flags the host reads after compress (_last_compress_aborted, ...)
        return getattr(self.__dict__["inner"], attr)

    def __setattr__(self, attr, value):  # what the host writes after a compaction reaches the inner one
        target = self.inner if attr in _HOST_WRITES else self
        object.__setattr__(target, attr, value) if target is self else setattr(target, attr, value)

    def update_from_response(self, usage):
        self.on_hook(self.inner)
        self.inner.update_from_response(usage)

    def should_compress(self, prompt_tokens=None):
        return self.inner.should_compress(prompt_tokens)

    def should_compress_info(self, prompt_tokens=None):
        return self.inner.should_compress_info(prompt_tokens)

    def should_defer_preflight_to_real_usage(self, rough_tokens):
        return self.inner.should_defer_preflight_to_real_usage(rough_tokens)

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        self.on_hook(self.inner)  # on the compress pool thread
        return self.inner.compress(messages, current_tokens=current_tokens, focus_topic=focus_topic, force=force,
                                   memory_context=memory_context)

    def update_model(self, model, context_length, base_url="", api_key="", provider="", api_mode=""):
        self.inner.update_model(model, context_length, base_url, api_key, provider, api_mode)

    def on_session_start(self, session_id, **kwargs):
        self.inner.on_session_start(session_id, **kwargs)

    def on_session_end(self, session_id, messages):
        self.inner.on_session_end(session_id, messages)

    def get_active_compression_failure_cooldown(self):
        return self.inner.get_active_compression_failure_cooldown()

    def _automatic_compression_blocked(self):
        return self.inner._automatic_compression_blocked()

    def record_completed_compaction(self, *, used_fallback):
        self.inner.record_completed_compaction(used_fallback=used_fallback)


def long_session(turns: int = 40, spacing: float = 300.0, start: float = 1_000_000.0) -> Session:
    """A coding session whose turns are ``spacing`` seconds apart: over three hours at 300 s."""
    msgs = [{"role": "system", "content": "You are a careful coding agent."}]
    for t in range(turns):
        ts = start + spacing * t
        msgs.append({"role": "user", "content": f"Please look at module {t} and fix the bug.", "x_timestamp": ts})
        msgs.append({"role": "assistant", "content": None, "x_timestamp": ts + 1, "tool_calls": [
            {"id": f"call_{t}", "type": "function",
             "function": {"name": "read_file", "arguments": json.dumps({"path": f"m{t}.py"})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"call_{t}", "content": f"# module {t}\n" + "line of code\n" * 1200})
        msgs.append({"role": "assistant", "content": f"Fixed module {t}.", "x_timestamp": ts + 2})
    session = Session(id=f"spaced-{spacing:g}", source_format="test", messages=msgs)
    session.turns = compute_turns(msgs)
    return session


def compaction_turns(trace) -> list[int]:
    return [e.turn for e in trace.events if e.kind == EV_COMPRESS and isinstance(e.result, dict)
            and "$list" in e.result and not e.result.get("unchanged")]


def replay_builtin(session, config, nocache):
    loaded = load_engine("compressor", config)
    try:
        return replay(session, loaded, config, simulator=nocache)
    finally:
        loaded.close()


@pytest.mark.parametrize("strict", [False, True], ids=["offline-stand-in", "offline-fallback-counts"])
def test_a_compressor_a_plugin_builds_at_load_time_compacts_where_the_builtin_does(config, nocache, strict):
    config["inspector"]["offline_fallback_counts"] = strict
    session = long_session()
    builtin = compaction_turns(replay_builtin(session, config, nocache))
    readings: list[float] = []
    plugin = WrapsCompressor(on_hook=lambda inner: readings.append(inner._clock()))
    wrapped = compaction_turns(replay(session, plugin, config, simulator=nocache))
    # Offline stand-in: a compaction every few turns. Strict: a 600 s no-provider cooldown of
    # transcript time after each fallback summary, then the block after two in a row.
    assert len(builtin) >= (2 if strict else 4)
    assert wrapped == builtin
    # Its cooldown clock is the transcript's: hours went by in a replay of seconds.
    assert max(readings) - min(readings) >= 0.9 * 300.0 * 39


def test_two_runs_at_once_each_see_their_own_clock(config, nocache):
    """A comparison: two replays on two threads, each engine built before its run started."""
    both_running = threading.Barrier(2, timeout=10)
    readings: dict[str, list[float]] = {"minutes": [], "hours": []}

    class Meeting(WrapsCompressor):
        def on_session_start(self, session_id, **kwargs):
            both_running.wait()  # neither run goes on until both have started
            super().on_session_start(session_id, **kwargs)

    engines = {key: Meeting(on_hook=lambda inner, key=key: readings[key].append(inner._clock()))
               for key in readings}
    sessions = {"minutes": long_session(spacing=60.0), "hours": long_session(spacing=3600.0)}
    errors: list[BaseException] = []

    def run(key: str) -> None:
        try:
            replay(sessions[key], engines[key], config, simulator=nocache)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(key,)) for key in readings]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    span = {key: max(values) - min(values) for key, values in readings.items()}
    assert 0.9 * 60 * 39 <= span["minutes"] <= 60 * 40
    assert 0.9 * 3600 * 39 <= span["hours"] <= 3600 * 40


def test_the_compress_pool_runs_in_the_callers_run():
    from inspector.engines.run_context import RunContext, running

    inner = ContextCompressor("test-model", quiet_mode=True)
    with running(RunContext(clock=lambda: 42.0, offline_stand_in=True)):
        outcome = call_on_pool(lambda: (inner._clock(), inner.offline_stand_in, threading.current_thread().name), 5)
    assert outcome.ok
    now, offline, thread = outcome.value
    assert (now, offline) == (42.0, True) and thread != threading.current_thread().name
