"""Stand-in for ``agent.model_metadata``: rough estimators and an offline context length.

Hermes probes endpoints and metadata services for a model's window; a replay must be
deterministic and offline, so the answer comes from config only (the first rung of agent/model_metadata.py:2118 of hermes-agent 0.19.0), then
Hermes' final fallback.
"""

from __future__ import annotations

from typing import Any

from inspector.config import cfg_get
from inspector.tokens.rough import (
    estimate_messages_tokens_rough,
    estimate_request_tokens_rough,
    estimate_tokens_rough,
    estimate_tools_tokens_rough,
)

MINIMUM_CONTEXT_LENGTH = 64_000
DEFAULT_FALLBACK_CONTEXT = 256_000


def get_model_context_length(
    model: str,
    base_url: str = "",
    api_key: str = "",
    config_context_length: int | None = None,
    provider: str = "",
    custom_providers: Any = None,
    **_ignored: Any,
) -> int:
    """Explicit value → custom provider per-model value → config ``model.context_length`` → the
    offline family table (Hermes' hard-coded family defaults) → 256 000."""
    if _positive(config_context_length):
        return int(config_context_length)  # type: ignore[arg-type]
    found = _from_custom_providers(model, base_url, provider, custom_providers)
    if found:
        return found
    from inspector.engines.compat.state import active_config

    cfg = active_config()
    configured = cfg_get(cfg, "model.context_length")
    if _positive(configured):
        return int(configured)
    from inspector.engines.compressor import lookup_context_length

    return lookup_context_length(model or str(cfg_get(cfg, "model.default", "") or ""))


def _positive(value: Any) -> bool:
    try:
        return value is not None and not isinstance(value, bool) and int(value) > 0
    except (TypeError, ValueError):
        return False


def _from_custom_providers(model: str, base_url: str, provider: str, custom: Any) -> int | None:
    """Hermes' ``custom_providers`` list entries may carry ``models: {name: {context_length}}``."""
    if not isinstance(custom, list):
        return None
    for entry in custom:
        if not isinstance(entry, dict):
            continue
        if base_url and entry.get("base_url") and str(entry["base_url"]).rstrip("/") != base_url.rstrip("/"):
            continue
        if provider and entry.get("name") and str(entry["name"]) != provider and not base_url:
            continue
        models = entry.get("models")
        if isinstance(models, dict) and isinstance(models.get(model), dict):
            value = models[model].get("context_length")
            if _positive(value):
                return int(value)
        if _positive(entry.get("context_length")):
            return int(entry["context_length"])
    return None


__all__ = [
    "MINIMUM_CONTEXT_LENGTH",
    "DEFAULT_FALLBACK_CONTEXT",
    "estimate_tokens_rough",
    "estimate_messages_tokens_rough",
    "estimate_request_tokens_rough",
    "estimate_tools_tokens_rough",
    "get_model_context_length",
]
