"""What the host reads from config.yaml: the model, its window, compression and watchdog settings."""

from __future__ import annotations

import re
from typing import Any

from inspector.engines.loading import window_for
from inspector.host.values import as_int

API_MODES = ("chat_completions", "codex_responses", "anthropic_messages", "bedrock_converse", "codex_app_server")


def resolved_api_mode(configured: str, provider: str, base_url: str) -> str:
    """The api_mode Hermes gives the agent, and so ``update_model`` (agent/agent_init.py:440-471):
    a known configured mode, else one derived from the provider or endpoint, else chat_completions."""
    if configured in API_MODES:
        return configured
    url = base_url.lower().rstrip("/")
    host = re.sub(r"^[a-z]+://", "", url).split("/", 1)[0].split(":", 1)[0]
    if provider in ("openai-codex", "xai", "xai-oauth") or host == "api.x.ai" or (
            host == "chatgpt.com" and "/backend-api/codex" in url):
        return "codex_responses"
    if provider == "anthropic" or host == "api.anthropic.com" or url.endswith("/anthropic"):
        return "anthropic_messages"
    if provider == "bedrock" or (host.startswith("bedrock-runtime.") and host.endswith("amazonaws.com")):
        return "bedrock_converse"
    return "chat_completions"


class HostSettings:
    """What the host needs from config.yaml, read once."""

    def __init__(self, config: dict[str, Any], *, model: str | None = None) -> None:
        model_cfg = config.get("model", {}) or {}
        comp = config.get("compression", {}) or {}
        insp = config.get("inspector", {}) or {}
        self.model = model or str(model_cfg.get("default") or model_cfg.get("model") or "")
        self.provider = str(model_cfg.get("provider") or "")
        self.base_url = str(model_cfg.get("base_url") or "")
        self.api_mode = resolved_api_mode(str(model_cfg.get("api_mode") or ""), self.provider, self.base_url)
        self.context_length = window_for(config, self.model)
        self.compression_enabled = str(comp.get("enabled", True)).lower() not in ("false", "0", "no", "off", "")
        self.max_attempts = max(1, min(10, as_int(comp.get("max_attempts", 3)) or 3))
        self.model_thresholds = dict(comp.get("model_thresholds") or {})
        timeout = comp.get("context_timeout_seconds", 120)
        self.compress_timeout = float(timeout) if timeout is not None else 120.0
        self.hook_timeout = float(insp.get("hook_timeout_seconds", 30) or 0)

        self.platform = "cli"
