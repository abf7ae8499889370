"""With the real Hermes importable, its LLM entry points and compressor follow the inspector's rules.

Here fake ``agent.*`` modules stand for the installed Hermes (the real one must never be
importable in this environment); ``tests/differential/test_no_egress_with_hermes.py`` does the
same against the real wheel, end to end.
"""

from __future__ import annotations

import sys
import time
import types

from inspector.engines.compat import hermes_routing
from inspector.engines.run_context import RunContext, running
from inspector.llm import aux


def _fake_hermes(monkeypatch):
    def hermes_call_llm(*_a, **_k):
        raise AssertionError("Hermes' own call_llm must not run")

    async def hermes_async_call_llm(*_a, **_k):
        raise AssertionError("Hermes' own async_call_llm must not run")

    client = types.ModuleType("agent.auxiliary_client")
    client.call_llm, client.async_call_llm = hermes_call_llm, hermes_async_call_llm
    compressor = types.ModuleType("agent.context_compressor")
    compressor.call_llm = hermes_call_llm  # bound by name at import, as Hermes' module does
    compressor.time = time

    class ContextCompressor:
        def __init__(self):
            self.cooldowns, self.records = [], []

        def _record_compression_failure_cooldown(self, cooldown_seconds, error):
            self.cooldowns.append((cooldown_seconds, error, compressor.time.monotonic()))

        def record_completed_compaction(self, *, used_fallback=False):
            self.records.append(used_fallback)

    compressor.ContextCompressor = ContextCompressor
    package = types.ModuleType("agent")
    for name, module in (("agent", package), ("agent.auxiliary_client", client), ("agent.context_compressor", compressor)):
        monkeypatch.setitem(sys.modules, name, module)
    return client, compressor


def test_hermes_call_llm_is_the_inspectors_wherever_it_was_imported(monkeypatch):
    client, compressor = _fake_hermes(monkeypatch)
    routed = hermes_routing.route_hermes()
    assert client.call_llm is aux.call_llm and client.async_call_llm is aux.async_call_llm
    assert compressor.call_llm is aux.call_llm
    assert "agent.context_compressor.call_llm" in routed
    assert hermes_routing.route_hermes() == []  # once is enough


def test_hermes_compressor_runs_its_cooldown_on_the_runs_clock_and_follows_the_offline_rule(monkeypatch):
    _, compressor = _fake_hermes(monkeypatch)
    hermes_routing.route_hermes()
    c = compressor.ContextCompressor()
    with running(RunContext(clock=lambda: 12_345.0, offline_stand_in=True)):
        c._record_compression_failure_cooldown(600, "no auxiliary LLM provider configured")
        assert c.cooldowns == []  # the deterministic summary stands in: no cooldown...
        c.record_completed_compaction(used_fallback=True)
        assert c.records == []  # ...and no fallback-streak strike
        c._record_compression_failure_cooldown(60, "timed out")
        assert c.cooldowns == [(60, "timed out", 12_345.0)]  # a real failure counts, on the transcript clock
    with running(RunContext(clock=lambda: 5.0, offline_stand_in=False)):  # Hermes' strict rule
        c._record_compression_failure_cooldown(600, "no auxiliary LLM provider configured")
        c.record_completed_compaction(used_fallback=True)
    assert c.cooldowns[-1] == (600, "no auxiliary LLM provider configured", 5.0)
    assert c.records == [True]
