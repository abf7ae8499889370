"""The `ContextEngine` contract as Hermes defines it (newest superset: agent/context_engine.py:56-263 of hermes-agent 0.19.0 plus docs/host-contract.md §1).

Plugins import this as ``agent.context_engine`` through the compatibility layer when Hermes
itself is not installed; when it is, Hermes' own module wins and this class is only used by
the inspector's built-in engines. Behaviour (defaults, status clamping, the one-time percent
snapshot in ``update_model``) follows the reference, so an engine sees the same base class
here as in Hermes.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any

MEMORY_CONTEXT_MAX_CHARS = 6000
MEMORY_CONTEXT_HEAD_CHARS = 4000
MEMORY_CONTEXT_TAIL_CHARS = 1500
MEMORY_CONTEXT_TRUNCATION_MARKER = "\n...[memory provider context truncated]...\n"


def sanitize_memory_context(memory_context: Any) -> str:
    """Redact and bound memory-provider text before it reaches an engine's ``compress``."""
    from inspector.engines.redact import redact_sensitive_text

    if memory_context is None:
        return ""
    cleaned = redact_sensitive_text(str(memory_context).strip(), force=True, redact_url_credentials=True)
    if len(cleaned) > MEMORY_CONTEXT_MAX_CHARS:
        cleaned = (
            cleaned[:MEMORY_CONTEXT_HEAD_CHARS]
            + MEMORY_CONTEXT_TRUNCATION_MARKER
            + cleaned[-MEMORY_CONTEXT_TAIL_CHARS:]
        )
    return cleaned


def resolve_model_threshold(
    model: str, thresholds: dict | None, default: float, provider: str = ""
) -> float:
    """Pick the per-model threshold percent: longest substring key wins (docs/host-contract.md §1.5).

    Keys may be scoped to a provider as ``"<provider>:<substring>"``; a scoped key only applies
    on that provider's route. Rank is (substring length, scoped), so a longer bare key beats a
    shorter scoped one and scope only breaks ties.
    """
    if not thresholds or not model:
        return default
    route = (provider or "").strip().lower()
    best_rank: tuple[int, int] | None = None
    best_value: Any = None
    for raw_key, value in thresholds.items():
        key = str(raw_key)
        scoped = 0
        needle = key
        if ":" in key:
            scope, _, rest = key.partition(":")
            if scope.strip().lower() != route or not rest:
                # A "provider:substr" key for another route never applies; keys whose part
                # before the colon is not a provider would also land here, which matches the
                # reference (scope must equal the route).
                continue
            needle = rest
            scoped = 1
        if not needle or needle not in model:
            continue
        rank = (len(needle), scoped)
        if best_rank is None or rank > best_rank:
            best_rank, best_value = rank, value
    if best_rank is None:
        return default
    try:
        return float(best_value)
    except (TypeError, ValueError):
        return default


def base_status(last_prompt_tokens: Any, threshold_tokens: Any, context_length: Any,
                compression_count: Any) -> dict[str, Any]:
    """What the base class's ``get_status()`` reports for these token attributes.

    A function of the attributes alone, so the host can build it from the attributes it has
    just read for the trace instead of calling the hook again (inspector/host/recorder.py).
    """
    last = max(0, int(last_prompt_tokens or 0))
    ctx = int(context_length or 0)
    usage = min(100.0, last / ctx * 100) if ctx else 0
    return {
        "last_prompt_tokens": last,
        "threshold_tokens": threshold_tokens,
        "context_length": ctx,
        "usage_percent": usage,
        "compression_count": compression_count,
    }


class ContextEngine(ABC):
    """Base class for context engines (Hermes' ``agent.context_engine.ContextEngine``)."""

    last_prompt_tokens: int = 0
    last_completion_tokens: int = 0
    last_total_tokens: int = 0
    threshold_tokens: int = 0
    context_length: int = 0
    compression_count: int = 0
    threshold_percent: float = 0.75
    protect_first_n: int = 3
    protect_last_n: int = 6
    emit_automatic_compaction_status: bool = True

    # -- required -----------------------------------------------------------------------
    @property
    @abstractmethod
    def name(self) -> str:
        """Identifier used by ``context.engine`` in config.yaml."""

    @abstractmethod
    def update_from_response(self, usage: dict) -> None:
        """Record the usage dict of the latest provider response (may be ``{}``)."""

    @abstractmethod
    def should_compress(self, prompt_tokens: int = None) -> bool:  # type: ignore[assignment]
        """Decide whether the context must be compacted now."""

    @abstractmethod
    def compress(
        self,
        messages: list,
        current_tokens: int = None,  # type: ignore[assignment]
        focus_topic: str = None,  # type: ignore[assignment]
        force: bool = False,
        memory_context: str = "",
    ) -> list[dict[str, Any]]:
        """Return the compacted transcript (a new list)."""

    # -- optional hooks with Hermes' defaults ----------------------------------------------
    def should_compress_info(self, prompt_tokens: int = None):  # type: ignore[assignment]
        return self.should_compress(prompt_tokens), None

    def prune_tool_results_only(self, messages: list, current_tokens: int = None):  # type: ignore[assignment]
        return messages, 0

    def select_context(
        self,
        request_messages: list,
        *,
        conversation_messages: list | None = None,
        incoming_message: dict | None = None,
        budget_tokens: int = 0,
    ) -> list | None:
        return None

    def on_turn_complete(self, messages: list, usage: dict | None = None, **kwargs) -> None:
        return None

    def should_compress_preflight(self, messages: list) -> bool:
        return False

    def pending_compression_operation(self, messages: list) -> str | None:
        return None

    def should_defer_preflight_to_real_usage(self, rough_tokens: int) -> bool:
        return False

    def get_automatic_compaction_status_message(self, *, phase: str, default_message: str, **context):
        if not self.emit_automatic_compaction_status:
            return None
        return default_message

    def has_content_to_compress(self, messages: list) -> bool:
        return True

    def on_session_start(self, session_id: str, **kwargs) -> None:
        return None

    def on_session_end(self, session_id: str, messages: list) -> None:
        return None

    def on_session_reset(self) -> None:
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self.compression_count = 0

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return []

    def handle_tool_call(self, name: str, args: dict, **kwargs) -> str:
        return json.dumps({"error": f"Unknown context engine tool: {name}"})

    def get_status(self) -> dict[str, Any]:
        return base_status(self.last_prompt_tokens, self.threshold_tokens, self.context_length,
                           self.compression_count)

    def update_model(
        self,
        model: str,
        context_length: int,
        base_url: str = "",
        api_key: str = "",
        provider: str = "",
        api_mode: str = "",
    ) -> None:
        self.context_length = context_length
        if "_config_threshold_percent" not in vars(self):
            # Snapshot once: a later model without an override returns to the configured
            # value, never to the previous model's override.
            self._config_threshold_percent = self.threshold_percent
        self._base_threshold_percent = resolve_model_threshold(
            model, getattr(self, "model_thresholds", {}) or {}, self._config_threshold_percent, provider
        )
        self.threshold_percent = self._base_threshold_percent
        self.threshold_tokens = int(context_length * self.threshold_percent)


def engine_overrides_hook(engine: Any, name: str) -> bool:
    """Hermes' skip check: is ``name`` overridden, so the host must call it?

    Inherited ABC no-ops are never called (zero cost, no copies). Duck-typed engines, instance
    attributes, staticmethods and partials have no ``__func__`` and are treated as overridden;
    any error during the check counts as overridden too.
    """
    try:
        if engine is None:
            return False
        hook = getattr(engine, name, None)
        if hook is None or not callable(hook):
            return False
        func = getattr(hook, "__func__", None)
        return all(func is not getattr(base, name, object()) for base in _known_bases())
    except Exception:
        return True


def _known_bases() -> list[type]:
    """Our ABC plus Hermes' own when it is importable under ``agent.context_engine``."""
    import sys

    bases: list[type] = [ContextEngine]
    hermes = sys.modules.get("agent.context_engine")
    other = getattr(hermes, "ContextEngine", None)
    if isinstance(other, type) and other is not ContextEngine:
        bases.append(other)
    return bases
