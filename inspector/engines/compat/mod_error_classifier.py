"""Stand-in for ``agent.error_classifier``: why a provider call failed, as Hermes 0.19.0 names it.

Hermes' ``agent.context_compressor`` re-exports ``FailoverReason`` and ``classify_api_error``
(context_compressor.py:29 of hermes-agent 0.19.0) and its summary path asks the classifier whether
a failure is auth, billing or a rate limit (context_compressor.py:57-79). A subclass engine may do
the same with its own provider errors, so the stand-in gives the same names, enum members and
result fields (error_classifier.py:24-96), and classifies the families engines meet the way
Hermes does: context overflow (and 413 payloads), rate limits and overload, auth and billing,
timeouts and dropped connections, server errors, missing models, malformed requests.

It is deliberately shorter than Hermes' pipeline (error_classifier.py:554-921): each family keeps
the phrases providers commonly send, not Hermes' whole list, and the provider-specific recoveries
(content-policy blocks, Anthropic thinking signatures and tier gates, image and multimodal limits,
Responses replay blobs, llama.cpp grammars, OpenRouter upstream 429s, reasoning-model disconnects)
are not recognised: such an error gets the generic answer for its status or text. The
differential test (``tests/differential/test_error_classifier.py``) holds the families above to
Hermes' own answers.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from typing import Any, Optional


class FailoverReason(enum.Enum):
    """Why an API call failed; the recovery follows from it (error_classifier.py:24-72)."""

    auth = "auth"
    auth_permanent = "auth_permanent"
    billing = "billing"
    rate_limit = "rate_limit"
    upstream_rate_limit = "upstream_rate_limit"
    overloaded = "overloaded"
    server_error = "server_error"
    timeout = "timeout"
    ssl_cert_verification = "ssl_cert_verification"
    context_overflow = "context_overflow"
    payload_too_large = "payload_too_large"
    image_too_large = "image_too_large"
    model_not_found = "model_not_found"
    provider_policy_blocked = "provider_policy_blocked"
    content_policy_blocked = "content_policy_blocked"
    format_error = "format_error"
    invalid_encrypted_content = "invalid_encrypted_content"
    multimodal_tool_content_unsupported = "multimodal_tool_content_unsupported"
    thinking_signature = "thinking_signature"
    long_context_tier = "long_context_tier"
    oauth_long_context_beta_forbidden = "oauth_long_context_beta_forbidden"
    llama_cpp_grammar_pattern = "llama_cpp_grammar_pattern"
    unknown = "unknown"


@dataclass
class ClassifiedError:
    """A classified failure and what to do about it (error_classifier.py:77-96): retry it, shrink
    the context, try another credential, or fall back to another model or provider."""

    reason: FailoverReason
    status_code: Optional[int] = None
    provider: Optional[str] = None
    model: Optional[str] = None
    message: str = ""
    error_context: dict[str, Any] = field(default_factory=dict)
    retryable: bool = True
    should_compress: bool = False
    should_rotate_credential: bool = False
    should_fallback: bool = False

    @property
    def is_auth(self) -> bool:
        return self.reason in {FailoverReason.auth, FailoverReason.auth_permanent}


# Phrases per family, matched against the lower-cased error text and body message.
_OVERFLOW = (
    "context length", "context size", "context window", "maximum context", "token limit", "too many tokens",
    "reduce the length", "exceeds the limit", "prompt is too long", "max_tokens", "maximum number of tokens",
    "max_model_len", "prompt length", "input is too long", "maximum model length", "input token",
)
_RATE_LIMIT = (
    "rate limit", "rate_limit", "too many requests", "throttled", "requests per minute", "tokens per minute",
    "try again in", "please retry after", "resource_exhausted", "throttlingexception",
)
_OVERLOADED = ("overloaded", "at capacity", "over capacity")
_BILLING = (
    "insufficient credits", "insufficient_quota", "insufficient balance", "credit balance", "payment required",
    "billing hard limit", "exceeded your current quota", "out of funds",
)
_USAGE_LIMIT = ("usage limit", "quota", "limit exceeded")
_USAGE_LIMIT_PASSES = ("try again", "retry", "resets at", "reset in", "wait", "window")
_AUTH = (
    "invalid api key", "invalid_api_key", "authentication", "unauthorized", "forbidden", "invalid token",
    "token expired", "access denied",
)
_MODEL_MISSING = ("model not found", "model_not_found", "invalid model", "does not exist", "no such model", "unknown model")
_BAD_PARAMETER = ("unknown parameter", "unsupported parameter", "unrecognized request argument", "unknown_parameter",
                  "unsupported_parameter")
_PAYLOAD_TOO_LARGE = ("request entity too large", "payload too large", "error code: 413")
_TIMED_OUT = ("timed out", "deadline exceeded")
_DISCONNECT = (
    "server disconnected", "peer closed connection", "connection reset by peer", "connection was closed",
    "unexpected eof", "incomplete chunked read",
)
_BAD_CERTIFICATE = ("certificate verify failed", "certificate_verify_failed", "self-signed certificate",
                    "self signed certificate", "certificate has expired")
_TLS_ALERT = ("bad record mac", "ssl alert", "tls alert", "[ssl:")
_TRANSPORT_TYPES = frozenset({
    "ReadTimeout", "ConnectTimeout", "PoolTimeout", "ConnectError", "RemoteProtocolError", "ReadError",
    "APIConnectionError", "APITimeoutError", "ServerDisconnectedError", "SSLError",
})

_RATE_LIMIT_CODES = frozenset({"resource_exhausted", "throttled", "rate_limit_exceeded"})
_BILLING_CODES = frozenset({"insufficient_quota", "billing_not_active", "payment_required", "insufficient_credits"})
_MODEL_MISSING_CODES = frozenset({"model_not_found", "model_not_available", "invalid_model"})
_OVERFLOW_CODES = frozenset({"context_length_exceeded", "max_tokens_exceeded"})
_BAD_PARAMETER_CODES = frozenset({"unknown_parameter", "unsupported_parameter"})


def classify_api_error(
    error: Exception,
    *,
    provider: str = "",
    model: str = "",
    approx_tokens: int = 0,
    context_length: int = 200000,
    num_messages: int = 0,
) -> ClassifiedError:
    """Classify a failed provider call: status first, then the body's error code, then the text,
    then the transport (the order of error_classifier.py:554-921).

    ``approx_tokens``, ``context_length`` and ``num_messages`` size the session: a bare 400 or a
    dropped connection on a large one is taken for a context overflow, as in Hermes.
    """
    status = _status_of(error)
    if status is None and type(error).__name__ == "RateLimitError":
        status = 429
    body = _body_of(error)
    code = _code_of(body)
    text = _text_of(error, body)

    def verdict(reason: FailoverReason, **hints: Any) -> ClassifiedError:
        return ClassifiedError(reason=reason, status_code=status, provider=provider, model=model,
                               message=_message_of(error, body), **hints)

    def large(share: float, tokens: int, messages: int) -> bool:
        return approx_tokens > context_length * share or (
            context_length <= 256000 and (approx_tokens > tokens or num_messages > messages))

    found = None
    if status is not None:
        found = _by_status(status, text, code, verdict, generic_and_large=_is_generic(body) and large(0.4, 80000, 80))
    if found is None and code:
        found = _by_code(code.lower(), verdict)
    if found is None:
        found = _by_text(text, verdict)
    if found is not None:
        return found
    if _has(text, _BAD_CERTIFICATE):
        return verdict(FailoverReason.ssl_cert_verification, retryable=False)
    if _has(text, _TLS_ALERT):
        return verdict(FailoverReason.timeout)
    if _has(text, _DISCONNECT) and not status:
        if large(0.6, 120000, 200):
            return verdict(FailoverReason.context_overflow, should_compress=True)
        return verdict(FailoverReason.timeout)
    if type(error).__name__ in _TRANSPORT_TYPES or isinstance(error, OSError):
        return verdict(FailoverReason.timeout)
    return verdict(FailoverReason.unknown)


def _by_status(status: int, text: str, code: str, verdict: Any, *, generic_and_large: bool) -> ClassifiedError | None:
    """The HTTP status, refined by the text (error_classifier.py:924-1156, 1188-1355)."""
    R = FailoverReason
    if status == 401:
        return verdict(R.auth, retryable=False, should_rotate_credential=True, should_fallback=True)
    if status == 403:
        if "key limit exceeded" in text or "spending limit" in text or _has(text, _BILLING):
            return _billing(verdict)
        return verdict(R.auth, retryable=False, should_fallback=True)
    if status == 402:
        if _has(text, _USAGE_LIMIT) and _has(text, _USAGE_LIMIT_PASSES):
            return _rate_limited(verdict)
        return _billing(verdict)
    if status == 404:
        if _has(text, _BILLING):
            return _billing(verdict)
        if _has(text, _MODEL_MISSING):
            return verdict(R.model_not_found, retryable=False, should_fallback=True)
        return verdict(R.unknown)
    if status == 413:
        return verdict(R.payload_too_large, should_compress=True)
    if status == 429:
        return verdict(R.overloaded) if _has(text, _OVERLOADED) else _rate_limited(verdict)
    if status == 400:
        if _has(text, _BAD_PARAMETER) or code.lower() in _BAD_PARAMETER_CODES:
            return _malformed(verdict)
        if _has(text, _OVERFLOW):
            return verdict(R.context_overflow, should_compress=True)
        if _has(text, _MODEL_MISSING):
            return verdict(R.model_not_found, retryable=False, should_fallback=True)
        if _has(text, _RATE_LIMIT):
            return _rate_limited(verdict)
        if _has(text, _BILLING):
            return _billing(verdict)
        if generic_and_large:
            return verdict(R.context_overflow, should_compress=True)
        return _malformed(verdict)
    if status in (500, 502):
        if _has(text, _BAD_PARAMETER) or "invalid_request_error" in text \
                or code.lower() in _BAD_PARAMETER_CODES | {"invalid_request_error"}:
            return _malformed(verdict)
        if _has(text, _OVERFLOW):
            return verdict(R.context_overflow, should_compress=True)
        return verdict(R.server_error)
    if status in (503, 529):
        if _has(text, _OVERFLOW):
            return verdict(R.context_overflow, should_compress=True)
        return verdict(R.overloaded)
    if status == 408:
        return verdict(R.timeout)
    if 400 <= status < 500:
        return _malformed(verdict)
    if 500 <= status < 600:
        return verdict(R.server_error)
    return None


def _by_code(code: str, verdict: Any) -> ClassifiedError | None:
    """The body's structured error code (error_classifier.py:1358-1402)."""
    if code in _RATE_LIMIT_CODES:
        return verdict(FailoverReason.rate_limit, should_rotate_credential=True)
    if code in _BILLING_CODES:
        return _billing(verdict)
    if code in _MODEL_MISSING_CODES:
        return verdict(FailoverReason.model_not_found, retryable=False, should_fallback=True)
    if code in _OVERFLOW_CODES:
        return verdict(FailoverReason.context_overflow, should_compress=True)
    return None


def _by_text(text: str, verdict: Any) -> ClassifiedError | None:
    """The text alone, for errors without a status (error_classifier.py:1405-1544)."""
    R = FailoverReason
    if _has(text, _PAYLOAD_TOO_LARGE):
        return verdict(R.payload_too_large, should_compress=True)
    if _has(text, _USAGE_LIMIT):
        return _rate_limited(verdict) if _has(text, _USAGE_LIMIT_PASSES) else _billing(verdict)
    if _has(text, _OVERLOADED):
        return verdict(R.overloaded)
    if _has(text, _BILLING):
        return _billing(verdict)
    if _has(text, _RATE_LIMIT):
        return _rate_limited(verdict)
    if _has(text, _OVERFLOW):
        return verdict(R.context_overflow, should_compress=True)
    if _has(text, _AUTH):
        return verdict(R.auth, retryable=False, should_rotate_credential=True, should_fallback=True)
    if _has(text, _MODEL_MISSING):
        return verdict(R.model_not_found, retryable=False, should_fallback=True)
    if _has(text, _TIMED_OUT):
        return verdict(R.timeout)
    return None


def _rate_limited(verdict: Any) -> ClassifiedError:
    return verdict(FailoverReason.rate_limit, should_rotate_credential=True, should_fallback=True)


def _billing(verdict: Any) -> ClassifiedError:
    return verdict(FailoverReason.billing, retryable=False, should_rotate_credential=True, should_fallback=True)


def _malformed(verdict: Any) -> ClassifiedError:
    return verdict(FailoverReason.format_error, retryable=False, should_fallback=True)


def _has(text: str, phrases: tuple[str, ...]) -> bool:
    return any(p in text for p in phrases)


def _causes(error: BaseException):
    """The error and up to four causes below it (``__cause__``, else ``__context__``)."""
    current: BaseException | None = error
    for _ in range(5):
        if current is None:
            return
        yield current
        below = current.__cause__ or current.__context__
        if below is current:
            return
        current = below


def _status_of(error: BaseException) -> int | None:
    for current in _causes(error):
        code = getattr(current, "status_code", None)
        if isinstance(code, int):
            return code
        code = getattr(current, "status", None)
        if isinstance(code, int) and 100 <= code < 600:
            return code
    return None


def _body_of(error: BaseException) -> dict:
    """The provider's JSON error body: the SDK's ``body``, else ``response.json()``."""
    for current in _causes(error):
        body = getattr(current, "body", None)
        if isinstance(body, dict):
            return body
        response = getattr(current, "response", None)
        if response is not None:
            try:
                parsed = response.json()
            except Exception:  # a response without a JSON body says nothing here
                parsed = None
            if isinstance(parsed, dict):
                return parsed
    return {}


def _payload_code(payload: Any, *, nested_json: bool) -> str:
    """``error.code`` (or ``error.type``), else the top-level ``code``; "400" is not a code."""
    if not isinstance(payload, dict):
        return ""
    inner = payload.get("error")
    if isinstance(inner, dict):
        code = inner.get("code") or inner.get("type") or ""
        if isinstance(code, str) and code.strip() not in ("", "400"):
            return code.strip()
        message = inner.get("message")
        if nested_json and isinstance(message, str) and message.strip().startswith("{"):
            found = _payload_code(_json_or_none(message), nested_json=False)
            if found:
                return found
    code = payload.get("code") or payload.get("error_code") or ""
    if isinstance(code, (str, int)) and str(code).strip() not in ("", "400"):
        return str(code).strip()
    return ""


def _code_of(body: dict) -> str:
    return _payload_code(body, nested_json=True)


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return None


def _text_of(error: BaseException, body: dict) -> str:
    """What the phrases are matched against: the exception text, the body's message when the
    text lacks it, and an aggregator's wrapped upstream message (``error.metadata.raw``)."""
    raw = str(error).lower()
    body_msg = wrapped = ""
    inner = body.get("error") if isinstance(body, dict) else None
    if isinstance(inner, dict):
        body_msg = str(inner.get("message") or "").lower()
        metadata = inner.get("metadata")
        upstream = metadata.get("raw") if isinstance(metadata, dict) else None
        if isinstance(upstream, str) and upstream.strip():
            parsed = _json_or_none(upstream)
            upstream_error = parsed.get("error") if isinstance(parsed, dict) else None
            if isinstance(upstream_error, dict):
                wrapped = str(upstream_error.get("message") or "").lower()
    if not body_msg and isinstance(body, dict):
        body_msg = str(body.get("message") or "").lower()
    parts = [raw]
    if body_msg and body_msg not in raw:
        parts.append(body_msg)
    if wrapped and wrapped not in raw and wrapped not in body_msg:
        parts.append(wrapped)
    return " ".join(parts)


def _message_of(error: BaseException, body: dict) -> str:
    """The most telling message, at most 500 characters: the body's, else the exception's."""
    if body:
        inner = body.get("error")
        for candidate in ((inner.get("message") if isinstance(inner, dict) else None), body.get("message")):
            if isinstance(candidate, str) and candidate.strip():
                return candidate.strip()[:500]
    return str(error)[:500]


def _is_generic(body: dict) -> bool:
    """A body whose message says nothing (Anthropic answers a too-large request with "Error")."""
    message = ""
    if isinstance(body, dict):
        inner = body.get("error", {})
        if isinstance(inner, dict):
            message = str(inner.get("message") or "").strip().lower()
        if not message:
            message = str(body.get("message") or "").strip().lower()
    return len(message) < 30 or message == "error"


__all__ = ["ClassifiedError", "FailoverReason", "classify_api_error"]
