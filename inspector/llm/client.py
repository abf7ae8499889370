"""OpenAI-compatible clients for auxiliary and live calls.

One place builds ``openai.OpenAI`` clients so the key handling is uniform: the key comes from
config or an environment variable, is never logged, and local endpoints that need no key get a
placeholder (the SDK refuses to build a client without one).
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

NO_KEY_PLACEHOLDER = "not-needed"

_lock = threading.Lock()
_cache: dict[tuple[str, str, float | None, int], Any] = {}


def _key_digest(api_key: str) -> str:
    # Cache by a digest so the key itself never sits in a dict key that might be printed.
    return hashlib.sha256(api_key.encode("utf-8")).hexdigest()[:16]


def make_client(base_url: str, api_key: str | None = None, *, timeout: float | None = None, max_retries: int = 1):
    """A cached ``openai.OpenAI`` for ``base_url`` (one per endpoint, key and timeout)."""
    import openai

    key = api_key or NO_KEY_PLACEHOLDER
    cache_key = (base_url, _key_digest(key), timeout, max_retries)
    with _lock:
        client = _cache.get(cache_key)
        if client is None:
            kwargs: dict[str, Any] = {"api_key": key, "base_url": base_url, "max_retries": max_retries}
            if timeout is not None:
                kwargs["timeout"] = timeout
            client = openai.OpenAI(**kwargs)
            _cache[cache_key] = client
        return client


def clear_client_cache() -> None:
    """Drop cached clients (tests, or after the user edits endpoints)."""
    with _lock:
        _cache.clear()
