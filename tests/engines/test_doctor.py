"""The engine doctor: one finding per broken behaviour, never a crash or a hang."""

from __future__ import annotations

import time

import pytest

from inspector.engines.doctor import run_doctor
from inspector.engines.doctor_static import validate_messages

from .conftest import BASIC, GENERAL, needs_compressor

DIRS = [str(BASIC), str(GENERAL)]


def _doctor(name, config, timeout=5.0):
    return run_doctor(name, config, DIRS, timeout=timeout, include_project=False, include_entry_points=False)


def _has(report, status, check_prefix, text=""):
    return any(f.status == status and f.check.startswith(check_prefix) and text in f.message for f in report.findings)


def test_healthy_engine_passes(config):
    report = _doctor("fixture_simple", config)
    assert not report.failed, [f.to_json() for f in report.findings if f.status == "fail"]
    for check in ("load", "imports", "deepcopy", "abc", "hook:compress", "validate:compress", "thread:pool", "thread:concurrent", "tokens"):
        assert _has(report, "pass", check), check
    assert _has(report, "pass", "imports", "agent.context_engine")


@needs_compressor
def test_builtin_and_subclass_of_builtin(config):
    assert not _doctor("compressor", config).failed
    report = _doctor("fixture_compressor_sub", config)
    assert not report.failed, [f.to_json() for f in report.findings if f.status == "fail"]
    assert _has(report, "pass", "hook:compress")


def test_orphan_tool_results_fail(config):
    report = _doctor("fixture_orphans", config)
    assert report.failed
    assert _has(report, "fail", "validate:compress", "orphan tool result")


def test_load_failure_is_a_finding_with_traceback(config):
    report = _doctor("fixture_broken", config)
    (finding,) = report.findings
    assert finding.status == "fail" and "fixture_broken" in finding.message
    assert "Traceback" in finding.details and "Available engines" in finding.details


def test_missing_host_modules(config):
    report = _doctor("fixture_missing_host", config)
    assert _has(report, "warn", "imports", "get_text_auxiliary_client")  # guarded by try/except
    assert _has(report, "warn", "imports", "agent.memory_manager")  # inside a function


def test_deepcopy_failure_of_general_plugin(config):
    report = _doctor("fixture_nocopy", config)
    assert _has(report, "fail", "deepcopy", "Hermes deep-copies general-plugin engines")


def test_general_plugin_with_hooks_and_llm_extra_keywords(config):
    assert not _doctor("fixture_general", config).failed
    report = _doctor("fixture_llm", config)
    assert not report.failed
    assert _has(report, "pass", "aux", "called call_llm")


def test_register_with_unsupported_ctx_method_is_explained(config):
    report = _doctor("fixture_ctx_methods", config)
    assert _has(report, "warn", "load", "register_skill")


def test_hung_hook_times_out(config):
    start = time.perf_counter()
    report = _doctor("fixture_hang", config, timeout=0.3)
    assert time.perf_counter() - start < 2.5
    assert _has(report, "fail", "hook:select_context", "did not return within the timeout")


def test_a_hook_that_timed_out_twice_is_not_called_again(config):
    report = _doctor("fixture_hang", config, timeout=0.3)
    timed_out = [f for f in report.findings if f.check == "hook:select_context" and "did not return" in f.message]
    skipped = [f for f in report.findings if f.check == "hook:select_context" and "timed out 2 times" in f.message]
    assert len(timed_out) == 2 and skipped, "two timeouts, then skipped like a replay does"


def test_thread_unsafe_shared_instance_crosses(config):
    report = _doctor("fixture_thread_unsafe", config)
    assert _has(report, "fail", "thread:concurrent", "results crossed")


def test_sloppy_engine_findings(config):
    report = _doctor("fixture_sloppy", config)
    assert _has(report, "fail", "tokens", "last_prompt_tokens")
    assert _has(report, "fail", "validate:select_context", "not a non-empty list of dicts")
    assert _has(report, "warn", "mutation:compress")
    assert _has(report, "fail", "validate:compress", "mid-list")
    assert _has(report, "fail", "validate:compress", "never answered")
    assert _has(report, "warn", "validate:compress", "consecutive user")


@pytest.mark.parametrize(
    "messages, expected",
    [
        ([{"role": "user", "content": "a"}], []),
        ([], ["empty list"]),
        ("x", ["not a list"]),
        ([{"role": "robot", "content": "a"}], ["role 'robot'"]),
        ([{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "z", "content": "r"}], ["orphan"]),
        ([{"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function"}]},
          {"role": "user", "content": "q"}], ["no tool result before [1]"]),
    ],
)
def test_validate_messages(messages, expected):
    problems = [text for _, text in validate_messages(messages)]
    assert len(problems) == len(expected)
    for text, fragment in zip(problems, expected):
        assert fragment in text


def test_a_duck_typed_engine_hermes_accepts_is_a_warning_not_a_failure(config):
    report = _doctor("fixture_forwarding", config)
    assert not report.failed, [f.to_json() for f in report.findings if f.status == "fail"]
    assert _has(report, "warn", "abc", "ForwardingEngine is not a ContextEngine subclass")
    assert _has(report, "warn", "abc", "select_context and on_turn_complete reach Inner's base-class no-op")
    assert _has(report, "pass", "hook:compress")


def test_an_engine_that_reports_itself_unavailable_is_a_warning(monkeypatch, config):
    monkeypatch.delenv("FIXTURE_UNAVAILABLE_API_KEY", raising=False)
    report = _doctor("fixture_unavailable", config)
    assert not report.failed
    assert _has(report, "warn", "available", "reports itself unavailable (is_available() returned False)")
    assert _has(report, "pass", "hook:update_model")
    assert _has(_doctor("fixture_simple", config), "pass", "available", "no is_available()")


MINIMAL_DUCK = '''
class Minimal:
    """Only what Hermes calls unguarded, plus the attributes it reads; no __getattr__."""

    name = "minimal_duck"

    def __init__(self):
        self.last_prompt_tokens = self.last_completion_tokens = self.last_total_tokens = 0
        self.threshold_tokens = self.context_length = self.compression_count = 0
        self.protect_first_n, self.protect_last_n = 3, 6

    def update_model(self, model, context_length, base_url="", api_key="", provider="", api_mode=""):
        self.context_length, self.threshold_tokens = context_length, int(context_length * 0.75)

    def get_tool_schemas(self):
        return []

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return bool(self.threshold_tokens) and (prompt_tokens or 0) >= self.threshold_tokens

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        self.compression_count += 1
        return [{"role": "assistant", "content": "summary"}] + [dict(m) for m in messages[last_user:]]

    def on_session_reset(self):
        self.last_prompt_tokens = self.last_completion_tokens = self.last_total_tokens = self.compression_count = 0


def register(ctx):
    ctx.register_context_engine(Minimal())
'''


def test_a_duck_without_the_hooks_hermes_guards_still_passes(tmp_path, config):
    folder = tmp_path / "context_engine" / "minimal_duck"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(MINIMAL_DUCK, encoding="utf-8")
    report = run_doctor("minimal_duck", config, [str(tmp_path)], timeout=5.0, include_project=False,
                        include_entry_points=False)
    assert not report.failed, [f.to_json() for f in report.findings if f.status == "fail"]
    assert _has(report, "warn", "abc", "does not define")
    assert _has(report, "warn", "abc", "should_compress_info") and _has(report, "warn", "abc", "get_status")
    assert _has(report, "warn", "hook:get_status", "Hermes' host never calls it")
    assert _has(report, "warn", "hook:on_session_start", "Hermes swallows this")
    assert _has(report, "pass", "hook:compress")
