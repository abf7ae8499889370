"""The compaction gates: where in a turn the host asks whether to compress, and how often."""

from __future__ import annotations

from inspector.config import load_config
from inspector.host.assembly import RequestAssembly
from inspector.host.calibration import UsageModel
from inspector.host.gates import CompactionGates
from inspector.host.profiles import PROFILES
from inspector.host.recorder import HookRecorder
from inspector.host.settings import HostSettings
from inspector.trace.model import EV_FAULT, EV_SHOULD, Trace

from .conftest import CountingEngine


class Passes:
    """Stands in for the compaction pass: records each run and commits as told."""

    def __init__(self, commits=True):
        self.runs: list[str] = []
        self.commits = commits
        self.turn_exit = None

    def run(self, tokens, *, site, focus_topic=None, force=False):
        self.runs.append(site)
        return self.commits

    def blocked_reason(self, tokens):
        return "blocked"


class Always(CountingEngine):
    def should_compress(self, prompt_tokens=None):
        return True


class Counter:
    def count_message(self, message, key=None):
        return 10

    def count_tools(self, tools):
        return 0


def _gates(engine, *, window=64_000, commits=True, **compression):
    config = load_config(None, {"model": {"context_length": window}, "compression": compression,
                                "inspector": {"host_profile": "hermes-main"}})
    rec = HookRecorder(engine, PROFILES["hermes-main"], Trace(), hook_timeout=2)
    asm = RequestAssembly(rec, counter=Counter(), usage_model=UsageModel(), pre_api_tokens="rough", system_prompt=None,
                          tools=[])
    asm.history.extend([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    passes = Passes(commits)
    return CompactionGates(rec, asm, passes, HostSettings(config), PROFILES["hermes-main"].gates,
                           usage_model=UsageModel()), passes, rec


def test_the_pre_api_gate_compresses_at_most_max_attempts_times_a_turn():
    gates, passes, rec = _gates(Always(), max_attempts=2)
    assert [gates.pre_api(1_000, "rough") for _ in range(3)] == [True, True, False]
    assert passes.runs == ["pre_api", "pre_api"]
    asked = [e for e in rec.trace.events if e.kind == EV_SHOULD]
    assert len(asked) == 2 and asked[0].args == {"prompt_tokens": 1_000, "site": "pre_api", "figure": "rough"}
    gates.begin_turn()  # a new turn has its own attempts
    assert gates.pre_api(1_000, "rough")


def test_the_pre_api_gate_does_not_ask_with_compression_disabled():
    gates, passes, rec = _gates(Always(), enabled=False)
    assert not gates.pre_api(1_000, "rough")
    assert passes.runs == [] and not [e for e in rec.trace.events if e.kind == EV_SHOULD]


def test_a_request_over_the_window_is_compressed_and_retried_three_times_then_the_turn_is_exhausted():
    gates, passes, rec = _gates(CountingEngine(), commits=False)
    assert gates.overflow(70_000, 70_000) is False
    assert passes.runs == ["overflow"]  # a pass that commits nothing ends the retries at once
    faults = [e.fault.kind for e in rec.trace.events if e.kind == EV_FAULT]
    assert faults == ["context_overflow", "compression_exhausted"]
    gates, passes, _ = _gates(CountingEngine(), commits=True)
    assert [gates.overflow(70_000, 70_000) for _ in range(4)] == [True, True, True, False]
    assert passes.runs == ["overflow"] * 3
    assert gates.overflow(60_000, 60_000) is False  # under the window: the provider accepts it
