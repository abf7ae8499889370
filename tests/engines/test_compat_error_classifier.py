"""The ``agent.error_classifier`` stand-in, as an engine uses it: an exception from a provider call
in, a reason and the recovery out. (``tests/differential/test_error_classifier.py`` holds the same
function to Hermes 0.19.0's answers case by case; these read as the specification without Hermes.)"""

from __future__ import annotations

import sys

from inspector.engines.compat import install_compat, uninstall_compat
from inspector.engines.compat.mod_error_classifier import FailoverReason, classify_api_error


def _status_error(status: int, text: str, body: dict | None = None) -> Exception:
    error = Exception(text)
    error.status_code = status
    if body is not None:
        error.body = body
    return error


def test_an_engine_imports_the_classifier_where_hermes_exports_it(tmp_path):
    saved = {n: m for n, m in sys.modules.items() if n.partition(".")[0] in ("agent", "hermes_cli", "plugins")}
    for name in saved:
        del sys.modules[name]
    install_compat(None, tmp_path)
    try:
        from agent.context_compressor import FailoverReason as reexported
        from agent.context_compressor import classify_api_error as reexported_classify
        from agent.error_classifier import classify_api_error as own

        assert reexported is FailoverReason and reexported_classify is own is classify_api_error
    finally:
        uninstall_compat()
        sys.modules.update(saved)


def test_context_overflow_asks_for_compression_not_another_provider():
    verdict = classify_api_error(_status_error(400, "Error code: 400", {
        "error": {"message": "This model's maximum context length is 8192 tokens", "code": "context_length_exceeded"}}))
    assert verdict.reason is FailoverReason.context_overflow
    assert (verdict.retryable, verdict.should_compress, verdict.should_fallback) == (True, True, False)
    assert verdict.message == "This model's maximum context length is 8192 tokens"


def test_a_bare_400_is_an_overflow_only_on_a_large_session():
    bare = {"type": "error", "error": {"type": "invalid_request_error", "message": "Error"}}
    large = classify_api_error(_status_error(400, "400", bare), approx_tokens=150000, context_length=200000)
    small = classify_api_error(_status_error(400, "400", bare), approx_tokens=1000, context_length=200000)
    assert large.reason is FailoverReason.context_overflow
    assert small.reason is FailoverReason.format_error and not small.retryable


def test_rate_limits_retry_on_another_credential_and_overload_just_retries():
    limited = classify_api_error(_status_error(429, "Rate limit reached, please try again in 2s"))
    busy = classify_api_error(_status_error(429, "server is overloaded"))
    assert limited.reason is FailoverReason.rate_limit and limited.should_rotate_credential
    assert busy.reason is FailoverReason.overloaded and not busy.should_rotate_credential and busy.retryable


def test_auth_is_not_retried_and_is_found_under_a_wrapper():
    wrapper = RuntimeError("summary failed")
    wrapper.__cause__ = _status_error(401, "Unauthorized")
    verdict = classify_api_error(wrapper)
    assert verdict.is_auth and verdict.status_code == 401 and not verdict.retryable


def test_timeouts_and_server_errors_are_retried():
    assert classify_api_error(TimeoutError("read timed out")).reason is FailoverReason.timeout
    assert classify_api_error(ConnectionResetError("reset")).reason is FailoverReason.timeout
    server = classify_api_error(_status_error(500, "Internal server error"))
    assert server.reason is FailoverReason.server_error and server.retryable
    assert classify_api_error(ValueError("odd")).reason is FailoverReason.unknown
