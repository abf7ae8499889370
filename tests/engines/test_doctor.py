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


def test_orphan_tool_results_are_a_warning_saying_hermes_drops_them(config):
    report = _doctor("fixture_orphans", config)
    assert not report.failed, [f.to_json() for f in report.findings if f.status == "fail"]
    assert _has(report, "warn", "validate:compress", "orphan tool result: no assistant message calls 'call_x_0_a'; "
                "Hermes' sanitiser drops it before every request")


def test_tool_results_hermes_cannot_repair_fail(config):
    report = _doctor("fixture_misplaced", config)
    assert report.failed
    assert _has(report, "fail", "validate:compress", "does not follow the assistant message that made the call: "
                "Hermes does not move it and the provider rejects the request")


def test_load_failure_is_a_finding_with_traceback(config):
    report = _doctor("fixture_broken", config)
    (finding,) = report.findings
    assert finding.status == "fail" and "fixture_broken" in finding.message
    assert "Traceback" in finding.details and "Available engines" in finding.details


def test_a_load_failure_says_hermes_would_carry_on_with_the_built_in_compressor(config):
    (finding,) = _doctor("fixture_broken", config).findings
    assert "failed to load" in finding.message
    assert "Hermes would not stop: it logs a warning" in finding.message
    assert "runs the session with the built-in compressor" in finding.message


SCAN_ORDER = '''
from agent.context_compressor import ContextCompressor  # noqa: F401  scanned first; needs a model
from agent.context_engine import ContextEngine


class ZEngine(ContextEngine):
    @property
    def name(self):
        return "scan_order"

    def update_from_response(self, usage):
        self.last_prompt_tokens = int(usage.get("prompt_tokens", 0) or 0)

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        return messages
'''


def test_a_subclass_the_scan_could_not_construct_is_a_warning_with_its_reason(tmp_path, config):
    folder = tmp_path / "context_engine" / "scan_order"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(SCAN_ORDER, encoding="utf-8")
    report = run_doctor("scan_order", config, [str(tmp_path)], timeout=5.0, include_project=False, include_entry_points=False)
    (warning,) = [f for f in report.findings if f.status == "warn" and f.check == "load"]
    # The one line shown without -v says why, not just that it failed.
    assert warning.message.startswith("ContextCompressor() failed (TypeError: ")
    assert "'model'" in warning.message and warning.message.endswith("trying the next subclass:")
    assert "Traceback" in warning.details
    assert _has(report, "pass", "load", "subclass scan: ZEngine()")


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
    assert _has(report, "warn", "validate:compress", "system message in mid-list: Hermes sends it where it is")
    assert _has(report, "warn", "validate:compress", "tool call 'c9' has no result: Hermes adds a stub result")
    assert _has(report, "warn", "validate:compress", "consecutive user messages: Hermes merges them")
    assert not any(f.status == "fail" and f.check == "validate:compress" for f in report.findings)


USER = {"role": "user", "content": "q"}
SYSTEM = {"role": "system", "content": "s"}


def _asst(*ids):
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids]}


def _result(cid):
    return {"role": "tool", "tool_call_id": cid, "content": "r"}


@pytest.mark.parametrize(
    "messages, expected",
    [
        ([USER], []),
        ([], [("fail", "empty list")]),
        ("x", [("fail", "not a list")]),
        ([USER, "m"], [("fail", "[1] is a str, not a message dict")]),
        ([USER, {"role": "assistant", "content": {"text": "a"}}], [("fail", "content is a dict: Hermes sends it unchanged")]),
        # Hermes' sanitiser repairs these silently (run_agent.py:3848 of hermes-agent 0.19.0): warnings saying how.
        ([{"role": "robot", "content": "a"}, USER], [("warn", "[0] has role 'robot': Hermes' sanitiser drops the message")]),
        ([USER, SYSTEM], [("warn", "[1] is a system message in mid-list: Hermes sends it where it is, after its own system prompt")]),
        ([SYSTEM, USER], [("warn", "[0] is a system message in mid-list")]),  # a transcript comes after Hermes' system prompt
        ([USER, _result("z")], [("warn", "[1] orphan tool result: no assistant message calls 'z'; Hermes' sanitiser drops it")]),
        ([_asst("c"), USER], [("warn", "[0] tool call 'c' has no result: Hermes adds a stub result "
                                       "('[Result unavailable — see context summary above]') right after [0]")]),
        ([_asst("a", "b"), _result("b"), USER], [("warn", "tool call 'a' has no result")]),  # the stub goes before b's result
        ([_asst("c"), {"role": "robot", "content": "x"}, _result("c")], [("warn", "role 'robot'")]),  # dropped, pair intact
        ([USER, {"role": "user", "content": "b"}], [("warn", "[0] and [1] are consecutive user messages: Hermes merges them")]),
        # What stays broken after the sanitiser: the provider rejects the request.
        ([_asst("c"), USER, _result("c")], [("fail", "[0] tool call 'c' is not answered right after [0]")]),
        ([_result("c"), _asst("c")], [("fail", "[0] tool result for 'c' does not follow the assistant message")]),
        ([_asst("c"), _result("c"), _result("c")], [("fail", "[2] is a second result for tool call 'c'")]),
        ([_asst("c"), SYSTEM, _result("c")], [("warn", "system message in mid-list"), ("fail", "tool call 'c' is not answered right after")]),
        ([_asst(""), USER], [("fail", "[0] has a tool call without an id")]),
        ([{"role": "tool", "content": "r"}], [("fail", "[0] tool result has no tool_call_id")]),
    ],
)
def test_validate_messages_grades_each_problem_by_what_hermes_does(messages, expected):
    problems = validate_messages(messages)
    assert len(problems) == len(expected), problems
    for (status, text), (want_status, fragment) in zip(problems, expected):
        assert status == want_status and fragment in text, (status, text)


def test_a_request_may_start_with_its_system_prompt():
    assert validate_messages([SYSTEM, USER], request=True) == []
    (problem,) = validate_messages([SYSTEM, USER, SYSTEM], request=True)
    assert problem[0] == "warn" and "[2] is a system message in mid-list" in problem[1] and "its own system prompt" not in problem[1]
    assert "before sending this request" in validate_messages([SYSTEM, _asst("c"), USER], request=True)[0][1]


def test_what_the_doctor_calls_repaired_the_hosts_sanitiser_does_repair():
    """A head + marker + tail compression (as a real LCM engine returns): only warnings, and none left once sanitised."""
    from inspector.host.shaping import sanitize_request

    compressed = [USER, _asst("a", "b"), SYSTEM, _result("gone"), {"role": "assistant", "content": "done"}, USER]
    problems = validate_messages(compressed)
    assert [s for s, _ in problems] == ["warn"] * 4, problems
    repaired, done = sanitize_request(compressed)
    assert done == {"roles": 0, "orphans": 1, "stubs": 2}
    (left,) = validate_messages(repaired)  # the stubs moved it from [2] to [4]; it is sent as it is
    assert left[0] == "warn" and "[4] is a system message in mid-list" in left[1]


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
