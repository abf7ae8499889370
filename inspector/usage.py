"""One usage normaliser for every provider shape (agent/usage_pricing.py:1107 of hermes-agent 0.19.0, docs/formats.md §1.2).

OpenAI (Chat and Responses) and Gemini report cached tokens as a *subset* of the prompt;
Anthropic reports ``input_tokens`` *excluding* cache reads and writes; DeepSeek reports hit and
miss counts. Everything lands on :class:`~inspector.sessions.model.Usage`, whose
``prompt_tokens`` is all input, so cached tokens are never counted twice.
"""

from __future__ import annotations

from typing import Any

from inspector.sessions.model import Usage

SHAPES = ("anthropic", "responses", "chat", "deepseek", "gemini")


def _first(raw: Any, *names: str) -> Any:
    """The first field present under any of ``names`` (Gemini's REST JSON is camelCase, its SDKs snake_case)."""
    for name in names:
        value = _get(raw, name)
        if value is not None:
            return value
    return None


def _get(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


# No request has ever held this many tokens: a larger figure is damage (or 1e308), not usage.
MAX_TOKENS = 10**12


def token_count(value: Any) -> int:
    """A recorded token figure as a non-negative int; junk, infinities and absurd values are 0."""
    try:
        n = max(0, int(value or 0))
    except (TypeError, ValueError, OverflowError):  # OverflowError: Infinity in the JSON
        return 0
    return n if n <= MAX_TOKENS else 0


def detect_shape(raw: Any, provider: str = "", api_mode: str = "") -> str:
    """Hermes selects by route; without one, the field names tell the shape apart."""
    if api_mode == "anthropic_messages" or (provider or "").lower() == "anthropic":
        return "anthropic"
    if api_mode == "codex_responses":
        return "responses"
    if _get(raw, "prompt_tokens") is None and _get(raw, "input_tokens") is not None:
        if _get(raw, "cache_read_input_tokens") is not None or _get(raw, "cache_creation_input_tokens") is not None:
            return "anthropic"
        return "responses"
    if _get(raw, "prompt_cache_hit_tokens") is not None and _get(raw, "prompt_tokens_details") is None:
        return "deepseek"
    if _get(raw, "prompt_tokens") is None and _first(raw, "prompt_token_count", "promptTokenCount") is not None:
        return "gemini"
    return "chat"


def normalize_usage(raw: Any, *, shape: str | None = None, provider: str = "", api_mode: str = "") -> Usage:
    """Map a provider usage object or dict onto the canonical :class:`Usage`."""
    shape = shape or detect_shape(raw, provider, api_mode)
    if shape == "anthropic":
        uncached = token_count(_get(raw, "input_tokens"))
        read = token_count(_get(raw, "cache_read_input_tokens"))
        write = token_count(_get(raw, "cache_creation_input_tokens"))
        creation = _get(raw, "cache_creation")
        write_1h = token_count(_get(creation, "ephemeral_1h_input_tokens"))
        # The TTL split is a breakdown of the creation total; if only the split is present, use it.
        write = max(write, write_1h + token_count(_get(creation, "ephemeral_5m_input_tokens")))
        return Usage(
            prompt_tokens=uncached + read + write,
            completion_tokens=token_count(_get(raw, "output_tokens")),
            cache_read_tokens=read,
            cache_write_tokens=write,
            cache_write_1h_tokens=write_1h,
            reasoning_tokens=_reasoning(raw),
        )
    if shape == "responses":
        total_in = token_count(_get(raw, "input_tokens"))
        details = _get(raw, "input_tokens_details")
        read = token_count(_get(details, "cached_tokens")) or token_count(_get(raw, "cached_input_tokens"))
        write = token_count(_get(details, "cache_creation_tokens"))
        read, write = _clamp(total_in, read, write)
        return Usage(
            prompt_tokens=total_in,
            completion_tokens=token_count(_get(raw, "output_tokens")),
            cache_read_tokens=read,
            cache_write_tokens=write,
            reasoning_tokens=_reasoning(raw) or token_count(_get(raw, "reasoning_output_tokens")),
        )
    if shape == "gemini":
        # usage_metadata: cached_content_token_count is a subset of prompt_token_count (docs/prompt-caching.md §5.3).
        prompt = token_count(_first(raw, "prompt_token_count", "promptTokenCount"))
        read, _ = _clamp(prompt, token_count(_first(raw, "cached_content_token_count", "cachedContentTokenCount")), 0)
        thoughts = token_count(_first(raw, "thoughts_token_count", "thoughtsTokenCount"))
        return Usage(  # thoughts are billed as output, as reasoning tokens are in OpenAI's completion count
            prompt_tokens=prompt,
            completion_tokens=token_count(_first(raw, "candidates_token_count", "candidatesTokenCount")) + thoughts,
            cache_read_tokens=read,
            reasoning_tokens=thoughts,
        )
    prompt = token_count(_get(raw, "prompt_tokens"))
    details = _get(raw, "prompt_tokens_details")
    read = token_count(_get(details, "cached_tokens"))
    if not read:
        read = token_count(_get(raw, "cache_read_input_tokens")) or token_count(_get(raw, "prompt_cache_hit_tokens"))
    write = token_count(_get(details, "cache_write_tokens")) or token_count(_get(raw, "cache_creation_input_tokens"))
    if shape == "deepseek" and not prompt:
        prompt = token_count(_get(raw, "prompt_cache_hit_tokens")) + token_count(_get(raw, "prompt_cache_miss_tokens"))
    read, write = _clamp(prompt, read, write)
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=token_count(_get(raw, "completion_tokens")),
        cache_read_tokens=read,
        cache_write_tokens=write,
        reasoning_tokens=_reasoning(raw),
    )


def _clamp(prompt: int, read: int, write: int) -> tuple[int, int]:
    """Cache figures are subsets of the prompt; a provider reporting more is clamped, not trusted."""
    read = min(read, prompt)
    write = min(write, max(0, prompt - read))
    return read, write


def _reasoning(raw: Any) -> int:
    for holder in ("output_tokens_details", "completion_tokens_details"):
        value = _get(_get(raw, holder), "reasoning_tokens")
        if value:
            return token_count(value)
    return 0


def hermes_usage_dict(raw: Any, *, provider: str = "", api_mode: str = "") -> dict[str, int]:
    """The exact dict Hermes passes to ``update_from_response``."""
    return normalize_usage(raw, provider=provider, api_mode=api_mode).to_hermes_dict()
