"""The doctor's checking observer: the contract judged at each hook the one host loop calls."""

from __future__ import annotations

import pytest

from inspector.config import load_config
from inspector.engines.contract import ContextEngine
from inspector.engines.doctor import (
    DoctorReport,
    DoctorResponder,
    doctor_session,
    run_doctor,
)
from inspector.engines.doctor_observer import ContractObserver
from inspector.host.profiles import PROFILES
from inspector.host.replay import host_for, make_counter

from .conftest import BASIC, GENERAL


class Plain(ContextEngine):
    name = "plain"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return bool(self.threshold_tokens) and (prompt_tokens or 0) >= self.threshold_tokens

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        self.compression_count += 1
        last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        return [{"role": "user", "content": "[CONTEXT SUMMARY]: earlier steps"}] + messages[last_user + 1:]


class Told(ContractObserver):
    """Also keeps the names of the hooks it was told of."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.hooks: list[str] = []

    def after(self, hook, args, kwargs, event, outcome, before):
        self.hooks.append(hook)
        super().after(hook, args, kwargs, event, outcome, before)


def _drive(engine, profile, turns=8):
    config = load_config(None, {"model": {"context_length": 64000}, "compression": {"context_timeout_seconds": 5},
                                "inspector": {"hook_timeout_seconds": 2, "host_profile": profile}})
    host = host_for(engine, config, session_id="s", system_prompt="sys", counter=make_counter(config))
    report = DoctorReport(engine=engine.name)
    observer = Told(engine, report, host.profile, timeout=2, context_length=64000, recorder=host.rec)
    host.rec.observer = observer
    assert host.start()
    session = doctor_session(turns=turns)
    for turn in session:
        host.play_turn([dict(turn[0])], DoctorResponder(turn, 64000))
    host.end()
    return host.trace, report, observer


def _has(report, status, check, text=""):
    return any(f.status == status and f.check.startswith(check) and text in f.message for f in report.findings)


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_the_observer_is_told_of_every_engine_hook_the_host_records_in_order(profile):
    trace, report, observer = _drive(Plain(), profile)
    hook_events = {row.event for row in PROFILES[profile].hooks}
    assert observer.hooks == [e.kind for e in trace.events if e.kind in hook_events]
    assert "compress" in observer.hooks and observer.compressed
    assert _has(report, "pass", "hook:compress") and _has(report, "pass", "validate:compress")
    assert not report.failed, [f.to_json() for f in report.findings if f.status == "fail"]


class Sloppy(Plain):
    name = "sloppy"

    def update_from_response(self, usage):
        usage["prompt_tokens"] = 0  # edits the dict it was handed
        self.last_prompt_tokens = 0.5  # and keeps a float

    def select_context(self, request_messages, **kw):
        return {"not": "a list"}


def test_each_problem_is_a_finding_graded_by_what_hermes_does():
    trace, report, _ = _drive(Sloppy(), "hermes-main", turns=2)
    assert _has(report, "warn", "mutation:update_from_response", "usage dict")
    assert _has(report, "fail", "tokens", "last_prompt_tokens is 0.5")
    assert _has(report, "fail", "validate:select_context", "not a non-empty list of dicts")
    # The host, for its part, sent the unmodified request (as Hermes does) and recorded why.
    select = [e for e in trace.events if e.kind == "select_context"]
    assert select and all(e.fault is not None and e.fault.kind == "invalid_return" for e in select)


class InPlace(Plain):
    name = "in_place"

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        kept = super().compress(messages)
        messages[:] = kept
        return messages


def test_an_in_place_compaction_is_judged_by_the_profile():
    _, report, _ = _drive(InPlace(), "hermes-0.19.0")
    assert _has(report, "pass", "hook:compress", "hermes-0.19.0 commits that")
    _, report, _ = _drive(InPlace(), "hermes-main")
    assert _has(report, "fail", "hook:compress", "returned its own (changed) input list")


def test_the_doctor_plays_its_session_through_the_host_loop(tmp_path):
    """One select_context per request and should_compress at the host's gates: the doctor has no loop of its own."""
    folder = tmp_path / "context_engine" / "logged"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(LOGGED, encoding="utf-8")
    cfg = load_config(None, {"inspector": {"host_profile": "hermes-main"}})
    report = run_doctor("logged", cfg, [str(tmp_path), str(BASIC), str(GENERAL)], timeout=5.0,
                        include_project=False, include_entry_points=False)
    assert not report.failed, [f.to_json() for f in report.findings if f.status == "fail"]
    calls = [line.split() for line in (tmp_path / "calls.log").read_text().splitlines()]
    session = [c for c in calls if c[0] in ("select_context", "update_from_response", "should_compress")]
    requests = [c for c in session if c[0] == "update_from_response" and c[1] != "0"]
    assert len(requests) == 16  # 8 turns, two provider calls each
    assert sum(c[0] == "select_context" for c in session) == len(requests)
    # The pre-API gate asks before every request, the post-tool check after each tool round.
    assert sum(c[0] == "should_compress" for c in session) >= len(requests) + 8


LOGGED = '''
import os

from agent.context_engine import ContextEngine

LOG = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "calls.log")


def _log(*parts):
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(" ".join(str(p) for p in parts) + "\\n")


class Logged(ContextEngine):
    name = "logged"

    def update_from_response(self, usage):
        _log("update_from_response", usage.get("prompt_tokens", 0))
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        _log("should_compress", int(prompt_tokens or 0))
        return False

    def select_context(self, request_messages, **kw):
        _log("select_context", len(request_messages))
        return None

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        _log("compress", len(messages))
        return messages[-2:]


def register(ctx):
    ctx.register_context_engine(Logged())
'''
