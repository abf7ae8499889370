"""Provider errors, described as JSON and built the same way in both interpreters.

The classifier differential (``test_error_classifier.py``) builds each case here and in the Hermes
interpreter (``hermes_classifier_driver.py``) and compares the two verdicts. Standard library only.
A case names the exception's type (a class of that name is made, so type-name rules apply), its
builtin base, its text, the attributes SDKs set (``status_code``, ``status``, ``body``, a
``response`` whose ``json()`` answers ``response_json`` or fails), a ``cause`` (another case, set
as ``__cause__``) and the keywords of ``classify_api_error``.
"""

from __future__ import annotations

from typing import Any

_BASES = {"Exception": Exception, "RuntimeError": RuntimeError, "ValueError": ValueError,
          "OSError": OSError, "TimeoutError": TimeoutError, "ConnectionError": ConnectionError}


class _Response:
    def __init__(self, answer: Any):
        self._answer = answer

    def json(self) -> Any:
        if self._answer == "<not json>":
            raise ValueError("Expecting value: line 1 column 1 (char 0)")
        return self._answer


def build(case: dict[str, Any]) -> Exception:
    """The exception a case describes."""
    base = _BASES[case.get("base", "Exception")]
    error = type(case.get("type", "APIError"), (base,), {})(case.get("text", ""))
    for attr in ("status_code", "status", "body"):
        if attr in case:
            setattr(error, attr, case[attr])
    if "response_json" in case:
        error.response = _Response(case["response_json"])
    if "cause" in case:
        error.__cause__ = build(case["cause"])
    return error


def _openai(message: str, code: str | None = None, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _anthropic(message: str, kind: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


_OVERFLOW_TEXT = ("This model's maximum context length is 128000 tokens. However, your messages resulted in "
                  "131072 tokens. Please reduce the length of the messages.")
_LARGE = {"approx_tokens": 150000, "context_length": 200000, "num_messages": 120}
_SMALL = {"approx_tokens": 2000, "context_length": 200000, "num_messages": 6}

CASES: dict[str, dict[str, Any]] = {
    # Context overflow, in the shapes providers and local servers send it.
    "openai 400 context_length_exceeded": {
        "type": "BadRequestError", "status_code": 400, "text": f"Error code: 400 - {_OVERFLOW_TEXT}",
        "body": _openai(_OVERFLOW_TEXT, "context_length_exceeded")},
    "anthropic 400 prompt too long": {
        "type": "BadRequestError", "status_code": 400, "text": "Error code: 400",
        "body": _anthropic("prompt is too long: 210034 tokens > 200000 maximum", "invalid_request_error")},
    "anthropic bare 400 on a large session": {
        "type": "BadRequestError", "status_code": 400, "text": "Error code: 400",
        "body": _anthropic("Error", "invalid_request_error"), "kwargs": _LARGE},
    "bare 400 on a small session": {
        "type": "BadRequestError", "status_code": 400, "text": "Error code: 400",
        "body": _anthropic("Error", "invalid_request_error"), "kwargs": _SMALL},
    "bare 400 past 40% of a 1M window": {
        "type": "BadRequestError", "status_code": 400, "text": "Error code: 400", "body": {"message": "bad"},
        "kwargs": {"approx_tokens": 450000, "context_length": 1000000, "num_messages": 30}},
    "vllm 400 max_model_len": {
        "type": "BadRequestError", "status_code": 400,
        "text": "This model's max_model_len is 32768; the prompt has 40112 tokens"},
    "llama.cpp 500 context size": {
        "type": "InternalServerError", "status_code": 500,
        "text": "the request exceeds the available context size, try increasing it"},
    "503 with an overflow body": {
        "type": "APIStatusError", "status_code": 503, "text": "input is too long for requested model"},
    "413 payload": {"type": "APIStatusError", "status_code": 413, "text": "Request Entity Too Large"},
    "413 in the text only": {"type": "RuntimeError", "base": "RuntimeError",
                             "text": "Error code: 413 - request entity too large"},
    "overflow code without a status": {
        "type": "APIError", "text": "request failed", "body": _openai("too big", "context_length_exceeded")},
    "overflow text without a status": {"type": "RuntimeError", "base": "RuntimeError",
                                       "text": "context window exceeded: 140000 > 128000"},
    "aggregator-wrapped upstream overflow": {
        "type": "BadRequestError", "status_code": 400, "text": "Provider returned error",
        "body": {"error": {"message": "Provider returned error", "code": 400, "metadata": {
            "raw": '{"error": {"message": "context length exceeded for this model"}}', "provider_name": "X"}}}},
    "overflow body from response.json()": {
        "type": "HTTPStatusError", "status_code": 400, "text": "400 Bad Request",
        "response_json": {"error": {"message": "Maximum context length exceeded"}}},
    "disconnect on a large session": {
        "type": "RemoteProtocolError", "text": "peer closed connection without sending complete message body",
        "kwargs": {"approx_tokens": 190000, "context_length": 200000}},
    "disconnect on a small session": {
        "type": "RemoteProtocolError", "text": "peer closed connection without sending complete message body",
        "kwargs": _SMALL},
    "unsupported parameter mentioning max_tokens": {
        "type": "BadRequestError", "status_code": 400,
        "text": "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
        "body": _openai("Unsupported parameter: 'max_tokens'", "unsupported_parameter")},
    "gateway 502 for an unknown parameter": {
        "type": "APIStatusError", "status_code": 502, "text": "unknown parameter: 'store'"},

    # Rate limits and overload.
    "openai 429": {
        "type": "RateLimitError", "status_code": 429,
        "text": "Rate limit reached for gpt-4o on tokens per min (TPM). Please try again in 2.1s.",
        "body": _openai("Rate limit reached for gpt-4o", "rate_limit_exceeded", "tokens")},
    "RateLimitError without a status": {"type": "RateLimitError", "text": "slow down"},
    "429 that is server overload": {
        "type": "RateLimitError", "status_code": 429,
        "text": "The service may be temporarily overloaded, please try again later"},
    "anthropic 529 overloaded": {
        "type": "APIStatusError", "status_code": 529, "text": "Overloaded",
        "body": _anthropic("Overloaded", "overloaded_error")},
    "gemini 429 resource exhausted": {
        "type": "ClientError", "status_code": 429, "text": "429 RESOURCE_EXHAUSTED",
        "body": {"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).",
                           "status": "RESOURCE_EXHAUSTED"}}},
    "quota text without a status": {
        "type": "APIError", "text": "Resource has been exhausted (e.g. check quota)."},
    "rate-limit code without a status": {
        "type": "APIError", "text": "request failed", "body": {"error": {"code": "throttled", "message": "x"}}},
    "too many requests in the text": {"type": "RuntimeError", "base": "RuntimeError", "text": "Too Many Requests"},
    "402 usage limit that resets": {
        "type": "APIStatusError", "status_code": 402, "text": "Usage limit reached; resets at 14:00 UTC"},
    "402 out of credits": {"type": "APIStatusError", "status_code": 402, "text": "Insufficient credits"},
    "400 carrying a rate limit": {
        "type": "BadRequestError", "status_code": 400, "text": "rate limit exceeded for this organization"},
    "quota exhausted (billing)": {
        "type": "APIError", "text": "You exceeded your current quota, please check your plan and billing details."},

    # Auth.
    "openai 401": {
        "type": "AuthenticationError", "status_code": 401, "text": "Incorrect API key provided: sk-...abcd.",
        "body": _openai("Incorrect API key provided", "invalid_api_key")},
    "403 forbidden": {"type": "PermissionDeniedError", "status_code": 403, "text": "Forbidden"},
    "403 key limit": {"type": "PermissionDeniedError", "status_code": 403, "text": "Key limit exceeded"},
    "auth text without a status": {"type": "RuntimeError", "base": "RuntimeError", "text": "Invalid API key"},
    "401 under a wrapper": {
        "type": "RuntimeError", "base": "RuntimeError", "text": "summary call failed",
        "cause": {"type": "AuthenticationError", "status_code": 401, "text": "Unauthorized"}},
    "provider and model are echoed": {
        "type": "AuthenticationError", "status_code": 401, "text": "Unauthorized",
        "kwargs": {"provider": "openrouter", "model": "anthropic/claude-sonnet-4"}},

    # Timeouts and transport.
    "openai APITimeoutError": {"type": "APITimeoutError", "text": "Request timed out."},
    "httpx ReadTimeout": {"type": "ReadTimeout", "text": ""},
    "builtin TimeoutError": {"type": "TimeoutError", "base": "TimeoutError", "text": "the read operation"},
    "connection refused": {"type": "ConnectionRefusedError", "base": "ConnectionError",
                           "text": "[Errno 111] Connection refused"},
    "openai APIConnectionError": {"type": "APIConnectionError", "text": "Connection error."},
    "408": {"type": "APIStatusError", "status_code": 408, "text": "Request Timeout"},
    "deadline in the text": {"type": "RuntimeError", "base": "RuntimeError", "text": "deadline exceeded"},
    "tls alert": {"type": "SSLError", "base": "OSError", "text": "[SSL: BAD_RECORD_MAC] bad record mac (_ssl.c:2580)"},
    "certificate": {"type": "SSLCertVerificationError", "base": "OSError",
                    "text": "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate"},

    # Server errors.
    "500": {"type": "InternalServerError", "status_code": 500, "text": "Internal server error"},
    "502": {"type": "APIStatusError", "status_code": 502, "text": "Bad gateway"},
    "503": {"type": "APIStatusError", "status_code": 503, "text": "Service Unavailable"},
    "504": {"type": "APIStatusError", "status_code": 504, "text": "Gateway Timeout"},
    "status attribute (aiohttp style)": {"type": "ClientResponseError", "status": 503, "text": "Service Unavailable"},

    # The rest.
    "404 missing model": {"type": "NotFoundError", "status_code": 404, "text": "The model `gpt-9` does not exist"},
    "404 wrong path": {"type": "NotFoundError", "status_code": 404, "text": "Not Found"},
    "422": {"type": "UnprocessableEntityError", "status_code": 422, "text": "Unprocessable Entity"},
    "400 malformed": {"type": "BadRequestError", "status_code": 400,
                      "text": "messages[3].role must be one of user, assistant, tool, system"},
    "response without a JSON body": {"type": "HTTPStatusError", "status_code": 500, "text": "boom",
                                     "response_json": "<not json>"},
    "a plain bug": {"type": "ValueError", "base": "ValueError", "text": "unexpected value in response"},
    "long message is cut at 500": {"type": "RuntimeError", "base": "RuntimeError", "text": "x" * 900},
}


def verdict(classified: Any) -> dict[str, Any]:
    """A classification as JSON, every field the result carries."""
    return {
        "reason": classified.reason.value, "status_code": classified.status_code,
        "provider": classified.provider, "model": classified.model, "message": classified.message,
        "error_context": classified.error_context, "retryable": classified.retryable,
        "should_compress": classified.should_compress,
        "should_rotate_credential": classified.should_rotate_credential,
        "should_fallback": classified.should_fallback, "is_auth": classified.is_auth,
    }
