"""The built-in ``compressor`` engine: our own implementation of Hermes' ``ContextCompressor``.

It reproduces the observable behaviour of ``agent/context_compressor.py`` of hermes-agent 0.19.0 (cited as
``context_compressor.py:N``; the host's side is ``agent/conversation_compression.py``) so that replays with the default engine compact at the
same moments, keep the same head and tail, and leave the same flags for the host as Hermes
would. Third-party engines subclass Hermes' class and call its helpers, so the method names,
signatures and attribute names here are Hermes' own; the compatibility layer exposes this class
as ``agent.context_compressor.ContextCompressor``.

The reference is the released ``hermes-agent==0.19.0`` (``agent/context_compressor.py``): the
differential suite (``tests/differential``) runs both on the corpus and the demo and requires the
returned lists and the token/decision state to be identical. Only the prose is ours (summary
prompt, prefix, fallback summary, system-prompt note); docstrings cite the wheel's lines.

Summaries come from ``inspector.llm.aux.call_llm`` when an auxiliary endpoint is configured
(answers are cached on disk by request hash), otherwise from the deterministic fallback Hermes
writes without an LLM, so offline replays are reproducible.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from inspector.engines import compressor_summary as _summary
from inspector.engines.compressor_prune import (
    IMAGE_PART_TYPES,
    build_call_map,
    is_placeholder,
    prunable_boundary,
    prune_old_tool_results,
    summarize_tool_result,
    tool_call_id_of,
)
from inspector.engines.compressor_summary import (
    END_MARKER,
    HISTORICAL_IN_PROGRESS_HEADING,
    HISTORICAL_PENDING_ASKS_HEADING,
    HISTORICAL_REMAINING_WORK_HEADING,
    HISTORICAL_TASK_HEADING,
    LEGACY_SUMMARY_PREFIX,
    MERGED_PRIOR_CLOSE,
    MERGED_PRIOR_OPEN,
    SUMMARY_PREFIX,
    SYSTEM_COMPACTION_NOTE,
    content_text_for_contains,
    is_actionable_user_message,
    is_context_summary_content,
    is_real_user_message,
    message_text,
    summary_body_from_text,
)
from inspector.engines.contract import ContextEngine, resolve_model_threshold, sanitize_memory_context
from inspector.engines.redact import redact_sensitive_text
from inspector.engines.run_context import current_run, effective_clock, run_clock
from inspector.tokens.rough import estimate_messages_tokens_rough, message_rough_chars

__all__ = [
    "COMPRESSED_SUMMARY_METADATA_KEY",
    "HISTORICAL_TASK_HEADING",
    "HISTORICAL_IN_PROGRESS_HEADING",
    "HISTORICAL_PENDING_ASKS_HEADING",
    "HISTORICAL_REMAINING_WORK_HEADING",
    "SUMMARY_PREFIX",
    "LEGACY_SUMMARY_PREFIX",
    "END_MARKER",
    "ContextCompressor",
    "lookup_context_length",
    "compute_threshold_tokens",
    "effective_threshold_percent",
]

logger = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------
# Constants (context_compressor.py:269-317, 1249-1321, 2439-2613; model_metadata.py:194)
# --------------------------------------------------------------------------------------------

MINIMUM_CONTEXT_LENGTH = 64_000
SMALL_CONTEXT_LIMIT = 512_000
SMALL_CONTEXT_PERCENT_FLOOR = 0.75
THRESHOLD_TOKENS_FLOOR = 64_000
THRESHOLD_CEILING_RATIO = 0.85
DEFAULT_CONTEXT_LENGTH = 256_000
SUMMARY_RATIO_MIN = 0.10
SUMMARY_RATIO_MAX = 0.80
MAX_SUMMARY_TOKENS_CAP = 10_000
SUMMARY_BUDGET_MIN = 2000
SUMMARY_BUDGET_RATIO = 0.20

COOLDOWN_NO_PROVIDER = 600.0
COOLDOWN_TIMEOUT_LADDER = (60.0, 300.0, 900.0)
COOLDOWN_TRANSIENT = 30.0
COOLDOWN_OTHER = 60.0
ANTI_THRASH_LIMIT = 2

NO_PROVIDER_ERROR = "no auxiliary LLM provider configured"
TOOL_CALL_REMOVED = "(tool call removed)"
IMAGE_STRIPPED_TEXT = "[Attached image — stripped after compression]"
# The flag on a summary row, so frontends tell it from real turns (context_compressor.py:132).
COMPRESSED_SUMMARY_METADATA_KEY = "_compressed_summary"

AUTO_FOCUS_HEADER = "Recent user focus:"
AUTO_FOCUS_ITEMS = 3
AUTO_FOCUS_ITEM_CHARS = 260
AUTO_FOCUS_TOTAL_CHARS = 700

_REASONING_KEYS = ("reasoning", "reasoning_content", "reasoning_details", "codex_reasoning_items", "codex_message_items")
_IMAGE_BUDGET_TOKENS_CHARS = 6400

# A small, offline table of context windows (longest matching substring wins). Hermes asks
# endpoints and metadata services; the inspector must not, so unknown models get Hermes' final
# default of 256 000 and users set ``model.context_length`` for anything else.
_CONTEXT_TABLE: dict[str, int] = {
    "claude": 200_000,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-5": 400_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "gemini": 1_048_576,
    "deepseek": 128_000,
    "qwen": 131_072,
    "llama": 131_072,
    "mistral": 128_000,
    "kimi": 262_144,
    "glm": 128_000,
    "grok-4": 256_000,
}


def lookup_context_length(model: str, config_context_length: Any = None) -> int:
    """Context window for ``model``: explicit config first, else the offline table, else 256 000."""
    explicit = _positive_int(config_context_length)
    if explicit:
        return explicit
    name = (model or "").lower()
    best = ""
    for key in _CONTEXT_TABLE:
        if key in name and len(key) > len(best):
            best = key
    return _CONTEXT_TABLE[best] if best else DEFAULT_CONTEXT_LENGTH


def effective_threshold_percent(percent: float, context_length: int) -> float:
    """Below a 512K window Hermes never compacts before 75 % (raise-only floor)."""
    if context_length < SMALL_CONTEXT_LIMIT:
        return max(float(percent), SMALL_CONTEXT_PERCENT_FLOOR)
    return float(percent)


def compute_threshold_tokens(context_length: int, percent: float, max_tokens: int | None = None) -> int:
    """Hermes' trigger point: percent of the window left after output, at least 64K, below the window.

    When the 64K minimum reaches the usable window itself, the trigger drops to 85 % of it so
    there is still room to compact (64K window -> 54 400).
    """
    usable = context_length - max_tokens if max_tokens else context_length
    if usable <= 0:
        usable = context_length
    value = int(usable * percent)
    floored = max(value, THRESHOLD_TOKENS_FLOOR)
    if floored >= usable:
        return max(1, min(int(usable * THRESHOLD_CEILING_RATIO), usable - 1))
    return floored


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if value > 0 else None


def _as_int(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _content_length_for_budget(content: Any) -> int:
    """Characters of a row's content for the tail budget (context_compressor.py:360)."""
    if isinstance(content, str):
        return len(content)
    if not isinstance(content, list):
        return len(str(content or ""))
    total = 0
    for part in content:
        if isinstance(part, str):
            total += len(part)
        elif not isinstance(part, dict):
            total += len(str(part))
        elif part.get("type") in IMAGE_PART_TYPES:
            total += _IMAGE_BUDGET_TOKENS_CHARS
        else:
            text = part.get("text", "") or ""
            total += len(text) if isinstance(text, str) else len(str(text))
    return total


def _serialized_length_for_budget(value: Any) -> int:
    """Characters of a replay field (reasoning blobs) as it would be serialised."""
    if value is None or value == "":
        return 0
    if isinstance(value, str):
        return len(value)
    try:
        return len(json.dumps(value, ensure_ascii=False, sort_keys=True, default=str))
    except (TypeError, ValueError):
        return len(str(value))


def _role(message: Any) -> str | None:
    return message.get("role") if isinstance(message, dict) else None


def _error_text(exc: BaseException) -> str:
    """An exception as the one-line error Hermes keeps (at most 220 characters)."""
    text = str(exc).strip() or exc.__class__.__name__
    return text[:217].rstrip() + "..." if len(text) > 220 else text


def _copy_row(message: dict[str, Any]) -> dict[str, Any]:
    out = dict(message)
    out.pop("_db_persisted", None)
    return out


class _EmptySummaryError(RuntimeError):
    """The summariser answered with nothing usable."""


# --------------------------------------------------------------------------------------------
# The engine
# --------------------------------------------------------------------------------------------


class ContextCompressor(ContextEngine):
    """Hermes' default engine: prune old tool output, summarise the middle, keep head and tail."""

    # Hermes' class constants (context_compressor.py:1229, 1826-1833): how much of each row the
    # summariser reads, and the trigger ratio for windows at or below the 64K minimum.
    _CONTENT_MAX = _summary.SERIALIZE_MAX_CHARS
    _CONTENT_HEAD = _summary.SERIALIZE_HEAD_CHARS
    _CONTENT_TAIL = _summary.SERIALIZE_TAIL_CHARS
    _TOOL_ARGS_MAX = _summary.TOOL_ARGS_MAX_CHARS
    _TOOL_ARGS_HEAD = _summary.TOOL_ARGS_KEEP_CHARS
    _MIN_CTX_TRIGGER_RATIO = THRESHOLD_CEILING_RATIO

    def __init__(
        self,
        model: str,
        threshold_percent: float = 0.50,
        protect_first_n: int = 3,
        protect_last_n: int = 20,
        summary_target_ratio: float = 0.20,
        quiet_mode: bool = False,
        summary_model_override: str | None = None,
        base_url: str = "",
        api_key: str = "",
        config_context_length: int | None = None,
        provider: str = "",
        api_mode: str = "",
        abort_on_summary_failure: bool = False,
        max_tokens: int | None = None,
        *,
        now: Any = None,
        clock: Callable[[], float] | None = None,
        offline_stand_in: bool | None = None,
        model_thresholds: dict[str, Any] | None = None,
        proactive_prune_tokens: int = 0,
        proactive_prune_min_result_chars: int = 8000,
        proactive_prune_min_reclaim_tokens: int = 4096,
        threshold_tokens_cap: Any = None,
        min_tail_user_messages: int = 1,
        tail_mode: str = "legacy",
    ):
        """Arguments and defaults are Hermes' (context_compressor.py:1306-1321); keyword-only extras exist for the inspector.

        ``now`` (a date, datetime, string or a callable returning one) fixes the date in the
        summary prompt's TEMPORAL ANCHORING line so replays are reproducible; ``clock`` and
        ``offline_stand_in`` fix the failure-cooldown clock and the offline rule, which otherwise
        follow the current run (:mod:`inspector.engines.run_context`), so a compressor a plugin
        builds behaves as the built-in; ``model_thresholds`` is ``compression.model_thresholds``;
        the ``proactive_prune_*`` values are the [M] knobs. The [M] keywords Hermes' agent passes
        are accepted too, so plugins that build or subclass Hermes' class with them load:
        ``threshold_tokens_cap`` (``compression.threshold_tokens``) is an absolute ceiling on
        ``threshold_tokens``; ``min_tail_user_messages`` is how many real user asks the kept tail
        must hold; ``tail_mode`` is recorded, but only the ``"legacy"`` tail is modelled (a
        ``"lean"`` request is logged and compacts as legacy).
        """
        self.model = model or ""
        self.base_url = base_url or ""
        self.api_key = api_key or ""
        self.provider = provider or ""
        self.api_mode = api_mode or ""
        self.quiet_mode = bool(quiet_mode)
        self.summary_model = summary_model_override or ""
        self.protect_first_n = max(0, int(protect_first_n))
        self.protect_last_n = max(0, int(protect_last_n))
        self.summary_target_ratio = min(SUMMARY_RATIO_MAX, max(SUMMARY_RATIO_MIN, float(summary_target_ratio)))
        self.abort_on_summary_failure = bool(abort_on_summary_failure)
        self.max_tokens = self._coerce_max_tokens(max_tokens)
        self.config_context_length = config_context_length
        if model_thresholds is not None or "_model_thresholds" not in vars(self):
            self._model_thresholds: dict[str, Any] = dict(model_thresholds or {})
        self.proactive_prune_tokens = max(0, _as_int(proactive_prune_tokens))
        self.proactive_prune_min_result_chars = max(200, _as_int(proactive_prune_min_result_chars))
        self.proactive_prune_min_reclaim_tokens = max(0, _as_int(proactive_prune_min_reclaim_tokens))
        self.threshold_tokens_cap = self._coerce_threshold_tokens_cap(threshold_tokens_cap)
        self.min_tail_user_messages = min_tail_user_messages
        self.tail_mode = tail_mode if tail_mode in ("legacy", "lean") else "legacy"
        if self.tail_mode == "lean":
            logger.warning("tail_mode 'lean' is not modelled by the inspector: this compressor keeps the legacy tail")
        self._now = now
        self._clock: Callable[[], float] = clock or run_clock
        self.offline_stand_in = offline_stand_in
        self._last_summary_offline_stand_in = False

        # The configured percent is snapshotted once; every recomputation starts from it.
        self._config_threshold_percent = float(threshold_percent)
        self.context_length = lookup_context_length(self.model, config_context_length)
        self._apply_thresholds()

        # Token tracking (the host reads and writes these: conversation_compression.py:1458-1460).
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self.last_real_prompt_tokens = 0
        self.last_compression_rough_tokens = 0
        self.last_rough_tokens_when_real_prompt_fit = 0
        self.awaiting_real_usage_after_compression = False

        self.compression_count = 0
        self._previous_summary: str | None = None

        # Per-call flags the host reads after compress().
        self._last_compress_aborted = False
        self._last_summary_error: str | None = None
        self._last_summary_fallback_used = False
        self._last_summary_dropped_count = 0
        self._last_compression_made_progress = False
        self._last_summary_from_cache = False
        self._last_summary_prompt: str | None = None
        self._last_summary_auth_failure = False
        self._last_summary_network_failure = False
        self._last_aux_model_failure_model: str | None = None
        self._last_aux_model_failure_error: str | None = None
        self._summary_model_fallen_back = False
        self._last_compression_savings_pct = 100.0

        # Anti-thrash and cooldowns (context_compressor.py:1013-1141).
        self._ineffective_compression_count = 0
        self._fallback_compression_streak = 0
        self._verify_compaction_cleared_threshold = False
        self._failure_cooldown_deadline = 0.0  # on the clock above; 0.0 = no cooldown
        self._cooldown_persist_failed = False
        self._summary_failure_kind: str | None = None
        self._consecutive_timeout_failures = 0

        self._proactive_prune_watermark: int | None = None
        self._session_db: Any = None
        self._session_id = ""
        self._compress_lock = threading.RLock()

    # Locks cannot be copied; Hermes deep-copies general-plugin engines (and subclasses of this
    # class) per agent, so the copy gets a fresh lock.
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_compress_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._compress_lock = threading.RLock()

    @property
    def name(self) -> str:
        return "compressor"

    @property
    def model_thresholds(self) -> dict[str, Any]:
        """``compression.model_thresholds``; assigning it re-derives the thresholds at once.

        Hermes' host sets the map before the first ``update_model``; the inspector's loader sets
        it right after construction, so the assignment itself must take effect.
        """
        return self._model_thresholds

    @model_thresholds.setter
    def model_thresholds(self, value: dict[str, Any] | None) -> None:
        self._model_thresholds = dict(value or {})
        if "_config_threshold_percent" in vars(self):
            self._apply_thresholds()

    @property
    def offline_stand_in(self) -> bool:
        """Inspector offline mode: with no auxiliary provider at all, the deterministic summary
        stands in for the one Hermes' ``auxiliary.compression: auto`` would get from the main
        model, so it triggers neither the no-provider cooldown nor the fallback streak.

        Unless set on the instance, the current run decides (``inspector.offline_fallback_counts``);
        outside a run it is off, Hermes' strict rule.
        """
        fixed = self.__dict__.get("_offline_stand_in")
        if fixed is not None:
            return fixed
        run = current_run()
        return run.offline_stand_in if run is not None else False

    @offline_stand_in.setter
    def offline_stand_in(self, value: bool | None) -> None:
        self._offline_stand_in = None if value is None else bool(value)

    @property
    def _summary_failure_cooldown_until(self) -> float:
        """Hermes' attribute: when the cooldown ends on ``time.monotonic()`` (0.0: none).

        Subclasses read and write it against ``time.monotonic()`` (``now < until``, ``until =
        time.monotonic() + 60``), as Hermes' own code does. The cooldown itself runs on this
        instance's clock, which during a replay is the transcript's and runs hours ahead of
        the wall clock, so the value is translated through the time left: such code then sees
        a cooldown last its seconds of transcript time, as the built-in's gate does.
        """
        deadline = self.__dict__.get("_failure_cooldown_deadline", 0.0)
        clock = effective_clock(self.__dict__.get("_clock") or run_clock)
        if not deadline or clock is time.monotonic:
            return deadline
        return time.monotonic() + (deadline - clock())

    @_summary_failure_cooldown_until.setter
    def _summary_failure_cooldown_until(self, value: float) -> None:
        value = float(value or 0.0)
        clock = effective_clock(self.__dict__.get("_clock") or run_clock)
        if value > 0 and clock is not time.monotonic:
            value = clock() + (value - time.monotonic())
        self._failure_cooldown_deadline = value

    # ----------------------------------------------------------------------------------------
    # Thresholds and model switches (context_compressor.py:1143-1305)
    # ----------------------------------------------------------------------------------------

    def _apply_thresholds(self) -> None:
        """Configured percent → per-model override → small-window floor → tokens and budgets."""
        self._base_threshold_percent = resolve_model_threshold(
            self.model, self.model_thresholds, self._config_threshold_percent, self.provider
        )
        self.threshold_percent = self._effective_threshold_percent(self.context_length, self._base_threshold_percent)
        self.threshold_tokens = self._compute_threshold_tokens(self.context_length, self.threshold_percent, self.max_tokens)
        self._apply_threshold_tokens_cap()
        self.tail_token_budget = int(self.threshold_tokens * self.summary_target_ratio)
        self.max_summary_tokens = min(int(self.context_length * 0.05), MAX_SUMMARY_TOKENS_CAP)

    @staticmethod
    def _coerce_threshold_tokens_cap(value: Any) -> int | None:
        """Hermes' rule for ``compression.threshold_tokens``: anything ``int()`` turns into a
        positive number is a cap; anything else means no cap, never a cap of zero."""
        if value is None:
            return None
        try:
            cap = int(value)
        except (TypeError, ValueError, OverflowError):
            return None
        return cap if cap > 0 else None

    def _apply_threshold_tokens_cap(self) -> None:
        """Lower ``threshold_tokens`` to the absolute cap, which the window bounds.

        It runs after the per-model percent, the small-window floor and the 64K minimum, so a
        cap below 64 000 still wins; a cap above the window changes nothing. Hermes re-applies it
        on every recomputation (construction, ``update_model``), so it survives model switches.
        """
        cap = self._coerce_threshold_tokens_cap(getattr(self, "threshold_tokens_cap", None))
        if cap is not None:
            self.threshold_tokens = min(self.threshold_tokens, cap, self.context_length)

    @staticmethod
    def _effective_threshold_percent(context_length: int, threshold_percent: float) -> float:
        """Hermes' name and argument order for :func:`effective_threshold_percent` (no window: no floor)."""
        if not context_length:
            return float(threshold_percent)
        return effective_threshold_percent(threshold_percent, context_length)

    @staticmethod
    def _compute_threshold_tokens(context_length: int, threshold_percent: float, max_tokens: int | None = None) -> int:
        """Hermes' name for :func:`compute_threshold_tokens`, so a subclass can change the trigger."""
        return compute_threshold_tokens(context_length, threshold_percent, max_tokens)

    def update_model(
        self,
        model: str,
        context_length: int,
        base_url: str = "",
        api_key: str = "",
        provider: str = "",
        api_mode: str = "",
        max_tokens: int | None = None,
    ) -> None:
        """Re-derive every threshold for a new model/window and forget token state of the old one.

        A change of route (model, provider, base URL or API mode) also resets the fallback
        streak and clears summary cooldowns: failures on the old route say nothing about the new.
        ``max_tokens=None`` keeps the current output reservation.
        """
        route_changed = (
            (model or "") != self.model
            or (provider or "") != self.provider
            or (base_url or "") != self.base_url
            or (api_mode or "") != self.api_mode
        )
        self.model = model or ""
        self.base_url = base_url or ""
        self.api_key = api_key or ""
        self.provider = provider or ""
        self.api_mode = api_mode or ""
        if max_tokens is not None:
            self.max_tokens = self._coerce_max_tokens(max_tokens)
        self.context_length = _positive_int(context_length) or lookup_context_length(self.model)
        self._apply_thresholds()
        # What the provider proved about the old model says nothing about the new one
        # (context_compressor.py:1193-1220); 0 (not -1) means "no real usage yet".
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self.last_real_prompt_tokens = 0
        self.last_rough_tokens_when_real_prompt_fit = 0
        self.last_compression_rough_tokens = 0
        self.awaiting_real_usage_after_compression = False
        self._ineffective_compression_count = 0
        self._proactive_prune_watermark = None
        if route_changed:
            self._fallback_compression_streak = 0
            self._clear_compression_failure_cooldown()
        self._verify_compaction_cleared_threshold = False
        self._last_compression_made_progress = False

    # ----------------------------------------------------------------------------------------
    # Usage and gating (context_compressor.py:1459-1567)
    # ----------------------------------------------------------------------------------------

    def update_from_response(self, usage: dict):  # no return annotation, as Hermes' override
        """Store the real counts and settle the verdict on the last compaction (anti-thrash).

        As context_compressor.py:1459-1513: ``total_tokens`` is taken as given (a ``None`` the
        provider sent stays ``None``); a real count under the threshold proves the prompt fits,
        so the rough estimate of the compacted transcript becomes the defer baseline and the
        ineffective-compaction count restarts; a count at or over it clears the baseline. The
        verdict on a just-completed compaction is judged here, on real usage, once.
        """
        usage = usage if isinstance(usage, dict) else {}
        prompt = usage.get("prompt_tokens", 0)
        prompt = prompt if isinstance(prompt, int) else _as_int(prompt)
        completion = usage.get("completion_tokens", 0)
        completion = completion if isinstance(completion, int) else _as_int(completion)
        self.last_prompt_tokens = prompt
        self.last_completion_tokens = completion
        self.last_total_tokens = usage.get("total_tokens", prompt + completion)
        if prompt > 0:
            self.last_real_prompt_tokens = prompt
            if prompt < self.threshold_tokens:
                if self.awaiting_real_usage_after_compression and self.last_compression_rough_tokens > 0:
                    self.last_rough_tokens_when_real_prompt_fit = self.last_compression_rough_tokens
                self._ineffective_compression_count = 0
            else:
                self.last_rough_tokens_when_real_prompt_fit = 0
            if self._verify_compaction_cleared_threshold:
                if prompt >= self.threshold_tokens:
                    self._ineffective_compression_count += 1
                else:
                    self._ineffective_compression_count = 0
        self._verify_compaction_cleared_threshold = False
        self.awaiting_real_usage_after_compression = False

    def should_compress(self, prompt_tokens: int = None) -> bool:  # type: ignore[assignment]
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        if tokens < self.threshold_tokens:
            return False
        return not self._automatic_compression_blocked()

    def should_compress_info(self, prompt_tokens: int = None) -> tuple[bool, str | None]:  # type: ignore[assignment]
        """Like ``should_compress`` but says why an over-threshold context is not compacted."""
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        if tokens < self.threshold_tokens:
            return False, None
        reason = self._blocked_reason()
        if reason is not None:
            return False, reason
        return True, None

    def should_defer_preflight_to_real_usage(self, rough_tokens: int) -> bool:
        """Trust the provider's last real count over a rough estimate that barely moved since.

        As context_compressor.py:1515-1555: right after a compaction (awaiting real usage) the
        check always defers; otherwise only when the last real prompt fitted under the threshold
        and the estimate grew by at most max(4096, 5 % of the threshold) since the baseline,
        which is the rough size of the compacted transcript once real usage proved it fits.
        There is no baseline before the first compaction, so nothing is deferred until then.
        """
        rough = _as_int(rough_tokens)
        threshold = self.threshold_tokens
        if rough < threshold:
            return False
        if self.awaiting_real_usage_after_compression:
            return True
        real = self.last_real_prompt_tokens
        if real <= 0 or real >= threshold:
            return False
        baseline = self.last_rough_tokens_when_real_prompt_fit or self.last_compression_rough_tokens
        if baseline <= 0:
            return False
        if max(0, rough - baseline) > max(4096, int(threshold * 0.05)):
            return False
        self.last_rough_tokens_when_real_prompt_fit = max(baseline, rough)
        return True

    def _blocked_reason(self) -> str | None:
        state = self.get_active_compression_failure_cooldown()
        if state:
            return f"cooldown:{math.ceil(state['remaining_seconds'])}"
        if self._ineffective_compression_count >= ANTI_THRASH_LIMIT:
            return f"anti_thrash:ineffective_compressions={self._ineffective_compression_count}"
        if self._fallback_compression_streak >= ANTI_THRASH_LIMIT:
            return f"anti_thrash:fallback_streak={self._fallback_compression_streak}"
        return None

    def _automatic_compression_blocked_locally(self) -> bool:
        """Cooldown active, or two ineffective compactions, or two fallback summaries in a row."""
        return self._blocked_reason() is not None

    def _automatic_compression_blocked(self) -> bool:
        """The local gate; when a cooldown or the fallback streak blocks, a bound session store may
        have cleared them since, so they are re-read first (context_compressor.py:1587)."""
        if not self._automatic_compression_blocked_locally():
            return False
        if self._cooldown_remaining() <= 0 and self._fallback_compression_streak < ANTI_THRASH_LIMIT:
            return True  # only the in-memory ineffective count blocks: nothing durable to re-read
        self._refresh_durable_guards()
        return self._automatic_compression_blocked_locally()

    def _refresh_durable_guards(self) -> None:
        """Re-read the cooldown and the fallback streak from a bound session store that keeps them."""
        try:
            self.get_active_compression_failure_cooldown(refresh=True)
        except Exception as exc:
            logger.debug("cooldown refresh failed: %s", exc)
        try:
            self._load_fallback_compression_streak()
        except Exception as exc:
            logger.debug("fallback streak refresh failed: %s", exc)

    @staticmethod
    def _coerce_max_tokens(value: Any) -> int | None:
        """Only a positive integer reserves output space; anything else means no reservation."""
        if value is None:
            return None
        try:
            number = int(value)
        except (TypeError, ValueError):
            return None
        return number if number > 0 else None

    # ----------------------------------------------------------------------------------------
    # Cooldowns and verdicts (context_compressor.py:1013-1141, 1587-1647)
    # ----------------------------------------------------------------------------------------

    def _cooldown_remaining(self) -> float:
        """Seconds left in the summary-failure cooldown on this instance's clock (0.0: none)."""
        return max(0.0, self._failure_cooldown_deadline - self._clock())

    def get_active_compression_failure_cooldown(self, *, refresh: bool = False) -> dict[str, Any] | None:
        """The live cooldown as Hermes describes it, or None (context_compressor.py:1028-1092).

        ``{"cooldown_until": wall-clock end, "remaining_seconds": ..., "error": ...}``. The time
        left runs on this instance's clock (the transcript's during a replay). With ``refresh``,
        a bound session store that can keep cooldowns (``get_compression_failure_cooldown``) is
        re-read: an empty row there clears the local cooldown unless that cooldown failed to be
        stored in the first place; the inspector's host binds none.
        """
        remaining = self._cooldown_remaining()
        local = None
        if remaining > 0:
            local = {"cooldown_until": time.time() + remaining, "remaining_seconds": remaining,
                     "error": self._last_summary_error}
            if not refresh:
                return local
        session_db = self.__dict__.get("_session_db")
        session_id = self.__dict__.get("_session_id")
        getter = getattr(session_db, "get_compression_failure_cooldown", None) if session_db and session_id else None
        if not callable(getter):
            return local
        try:
            stored = getter(session_id)
        except Exception as exc:
            logger.debug("session store get_compression_failure_cooldown failed: %s", exc)
            return local
        stored_remaining = float((stored or {}).get("remaining_seconds") or 0.0) if isinstance(stored, dict) else 0.0
        if stored_remaining <= 0:
            if refresh:
                if local is not None and self.__dict__.get("_cooldown_persist_failed"):
                    return local
                self._failure_cooldown_deadline = 0.0
                self._last_summary_error = None
            return None
        self._failure_cooldown_deadline = self._clock() + stored_remaining
        self._last_summary_error = stored.get("error")
        self._cooldown_persist_failed = False
        return {"cooldown_until": float(stored.get("cooldown_until") or 0.0), "remaining_seconds": stored_remaining,
                "error": self._last_summary_error}

    def _record_compression_failure_cooldown(self, cooldown_seconds: float, error: str | None) -> None:
        """Hermes' name: no summary attempt for ``cooldown_seconds``, remembering why.

        Like Hermes it also hands the cooldown to a bound session store that can keep one
        (``record_compression_failure_cooldown(session_id, wall-clock end, error)``); the
        inspector's host binds none.
        """
        self._failure_cooldown_deadline = self._clock() + float(cooldown_seconds)
        self._last_summary_error = error
        recorder = getattr(self.__dict__.get("_session_db"), "record_compression_failure_cooldown", None)
        if self.__dict__.get("_session_db") is not None and self.__dict__.get("_session_id"):
            self._cooldown_persist_failed = not (callable(recorder) and self._tell_session_db(
                "record_compression_failure_cooldown", time.time() + float(cooldown_seconds), error))

    def _clear_compression_failure_cooldown(self) -> None:
        """Hermes' name: end the cooldown and forget its error and the timeout ladder's climb."""
        self._failure_cooldown_deadline = 0.0
        self._summary_failure_kind = None
        self._last_summary_error = None
        self._consecutive_timeout_failures = 0
        self._cooldown_persist_failed = False
        self._tell_session_db("clear_compression_failure_cooldown")

    def _tell_session_db(self, method: str, *args: Any) -> bool:
        """Best effort, as in Hermes: a store that lacks the method or fails is not an error.

        True when the store took the call.
        """
        session_db = self.__dict__.get("_session_db")
        session_id = self.__dict__.get("_session_id")
        call = getattr(session_db, method, None) if session_db is not None and session_id else None
        if callable(call):
            try:
                call(session_id, *args)
                return True
            except Exception as exc:
                logger.debug("session store %s failed: %s", method, exc)
        return False

    def _set_failure_cooldown(self, seconds: float, kind: str, error: str | None = None) -> None:
        """A cooldown of one failure class (``kind``); ``error`` None keeps the current message."""
        self._record_compression_failure_cooldown(seconds, self._last_summary_error if error is None else error)
        self._summary_failure_kind = kind

    def record_timeout_failure(self, reason: str, failure_kind: str = "stalled") -> None:
        """The host gave up waiting for compress(): climb the 60 → 300 → 900 s ladder."""
        self._apply_timeout_cooldown(f"{failure_kind}: {reason}" if reason else failure_kind)

    def _apply_timeout_cooldown(self, error: str) -> None:
        self._consecutive_timeout_failures += 1
        step = min(self._consecutive_timeout_failures, len(COOLDOWN_TIMEOUT_LADDER)) - 1
        self._set_failure_cooldown(COOLDOWN_TIMEOUT_LADDER[step], "timeout", error)

    def record_completed_compaction(self, *, used_fallback: bool = False) -> None:
        """Called by the host after a committed boundary; arms the next real-usage verdict."""
        self._verify_compaction_cleared_threshold = True
        if used_fallback and self._last_summary_offline_stand_in:
            pass  # an offline stand-in is neither a healthy summary nor a failed one
        elif used_fallback:
            self._fallback_compression_streak += 1
        else:
            self._fallback_compression_streak = 0
        self._persist_fallback_compression_streak()

    def _persist_fallback_compression_streak(self) -> None:
        """Hand the fallback streak to a bound session store that keeps it (best effort)."""
        self._tell_session_db("set_compression_fallback_streak", self._fallback_compression_streak)

    # ----------------------------------------------------------------------------------------
    # Token budgets and boundaries (context_compressor.py:360-446, 2876-3295)
    # ----------------------------------------------------------------------------------------

    def _estimate_msg_budget_tokens(self, msg: dict[str, Any]) -> int:
        """Per-row budget estimate of the tail walks (context_compressor.py:419-446).

        Content characters / 4 + 10 (an image part counts 6 400 characters), plus the whole
        envelope of each tool call and the provider replay fields (reasoning blobs), which ride
        on every request though they are not content.
        """
        if not isinstance(msg, dict):
            return 10
        tokens = _content_length_for_budget(msg.get("content") or "") // 4 + 10
        for call in msg.get("tool_calls") or []:
            if isinstance(call, dict):
                tokens += len(str(call)) // 4
        for key in _REASONING_KEYS:
            tokens += _serialized_length_for_budget(msg.get(key)) // 4
        return tokens

    def _prune_old_tool_results(
        self,
        messages: list[dict[str, Any]],
        protect_tail_count: int,
        protect_tail_tokens: int | None = None,
    ) -> tuple[list[dict[str, Any]], int]:
        """Three-pass tool-output prune on copies of the rows; returns ``(new_list, results_pruned)``."""
        return prune_old_tool_results(messages, protect_tail_count, protect_tail_tokens, self._estimate_msg_budget_tokens)

    def _effective_protect_first_n(self) -> int:
        """Head protection only applies before the first compaction of a conversation
        (context_compressor.py:2886): afterwards the summary carries the early turns."""
        if self.compression_count >= 1 or self._previous_summary:
            return 0
        return self.protect_first_n

    def _protect_head_size(self, messages: list[dict[str, Any]]) -> int:
        """The system prompt (always) plus ``_effective_protect_first_n`` rows (context_compressor.py:2903)."""
        head = 1 if messages and _role(messages[0]) == "system" else 0
        return head + self._effective_protect_first_n()

    def _align_boundary_forward(self, messages: list[dict[str, Any]], idx: int) -> int:
        """Never start a slice on a tool result: skip forward past them."""
        while idx < len(messages) and _role(messages[idx]) == "tool":
            idx += 1
        return idx

    def _align_boundary_backward(self, messages: list[dict[str, Any]], idx: int) -> int:
        """A cut just after an assistant's tool calls (or among their results) moves back to
        that assistant, so the call and its results are summarised together
        (context_compressor.py:2928)."""
        if idx <= 0 or idx >= len(messages):
            return idx
        j = idx - 1
        while j >= 0 and _role(messages[j]) == "tool":
            j -= 1
        if j >= 0 and _role(messages[j]) == "assistant" and messages[j].get("tool_calls"):
            return j
        return idx

    def _find_tail_cut_by_tokens(
        self, messages: list[dict[str, Any]], head_end: int, token_budget: int | None = None
    ) -> int:
        """Index where the protected tail starts (context_compressor.py:3177-3295).

        Walk back under 1.5x the budget, keeping at least a short floor of rows; when everything
        fits, walk again under the plain budget, keeping the row that overflows it. Then keep the
        floor, move off tool groups, and make sure the newest user row and the newest assistant
        reply stay in the tail; the cut never goes back into the head.
        """
        n = len(messages)
        budget = self.tail_token_budget if token_budget is None else token_budget
        available = max(0, n - head_end - 1)
        floor = max(3, min(self.protect_last_n, 8))
        cap = max(3, available - 2)
        min_tail = min(floor, cap, available) if available > 1 else 0
        soft_ceiling = int(budget * 1.5)

        acc = 0
        cut = n
        for i in range(n - 1, head_end - 1, -1):
            tokens = self._estimate_msg_budget_tokens(messages[i])
            if acc + tokens > soft_ceiling and (n - i) >= min_tail:
                break
            acc += tokens
            cut = i
        if cut <= head_end and 0 < acc <= soft_ceiling:
            raw = 0
            for j in range(n - 1, head_end - 1, -1):
                tokens = self._estimate_msg_budget_tokens(messages[j])
                if raw + tokens > budget and (n - j) >= min_tail:
                    cut = j
                    break
                raw += tokens
                cut = j

        fallback = n - min_tail
        cut = min(cut, fallback)
        if cut <= head_end:
            cut = max(fallback, head_end + 1)
        cut = self._align_boundary_backward(messages, cut)
        cut = self._ensure_last_user_message_in_tail(messages, cut, head_end)
        cut = self._ensure_last_assistant_message_in_tail(messages, cut, head_end)

        # Only beyond the default of one: the single-ask anchor already ran above, and running
        # it again after the assistant anchor could push the cut forward again.
        wanted = _as_int(getattr(self, "min_tail_user_messages", 1))
        if wanted > 1:
            cut = self._ensure_last_n_user_messages_in_tail(messages, cut, head_end, wanted)

        return self._align_boundary_forward(messages, max(cut, head_end + 1))

    def _find_turn_pair_end(self, messages: list[dict[str, Any]], user_idx: int) -> int:
        """The index after ``user -> assistant [-> tool results]`` starting at ``user_idx``."""
        n = len(messages)
        idx = user_idx + 1
        if idx >= n or _role(messages[idx]) != "assistant":
            return idx
        idx += 1
        while idx < n and _role(messages[idx]) == "tool":
            idx += 1
        return idx

    def _ensure_last_user_message_in_tail(self, messages: list[dict[str, Any]], cut_idx: int, head_end: int) -> int:
        """Move the cut back so the newest user row stays verbatim in the tail.

        When that row is the first compressible one it cannot stay: the whole exchange (the
        ask, its reply and the reply's tool results) is summarised instead, so the summary
        never records an answered ask as pending (context_compressor.py:3076-3148).
        """
        user_idx = self._find_last_user_message_idx(messages, head_end)
        if user_idx < 0 or user_idx >= cut_idx:
            return cut_idx
        adjusted = max(user_idx, head_end + 1)
        if adjusted > user_idx:
            return max(self._find_turn_pair_end(messages, user_idx), head_end + 1)
        return adjusted

    def _find_last_assistant_message_idx(self, messages: list[dict[str, Any]], head_end: int) -> int:
        """The newest assistant row with visible text at or after ``head_end``; failing that the
        newest assistant row of any kind there, or -1 (context_compressor.py:2977)."""
        last_any = -1
        for i in range(len(messages) - 1, head_end - 1, -1):
            msg = messages[i]
            if _role(msg) != "assistant":
                continue
            if last_any < 0:
                last_any = i
            content = msg.get("content")
            if isinstance(content, str) and content.strip():
                return i
            if isinstance(content, list):
                for part in content:
                    if isinstance(part, dict):
                        text = part.get("text") or part.get("content")
                        if isinstance(text, str) and text.strip():
                            return i
        return last_any

    def _ensure_last_assistant_message_in_tail(
        self, messages: list[dict[str, Any]], cut_idx: int, head_end: int
    ) -> int:
        """Move the cut back so the reply the user last read is not rolled into the summary."""
        idx = self._find_last_assistant_message_idx(messages, head_end)
        if idx < 0 or idx >= cut_idx:
            return cut_idx
        return max(self._align_boundary_backward(messages, idx), head_end + 1)

    def _ensure_last_n_user_messages_in_tail(
        self, messages: list[dict[str, Any]], cut_idx: int, head_end: int, n: int
    ) -> int:
        """Move the cut back so the newest ``n`` user asks (``compression.min_tail_user_messages``)
        stay verbatim, however much tool output sits between them.

        Only real asks count (not summaries, synthetic rows or blank echoes); with fewer than
        ``n`` the oldest one is kept. A user row starts no tool group, so no re-alignment is
        needed, and the cut never moves into the head.
        """
        if n <= 1:
            return self._ensure_last_user_message_in_tail(messages, cut_idx, head_end)
        asks = [i for i in range(len(messages) - 1, max(head_end, 0) - 1, -1) if is_actionable_user_message(messages[i])]
        if not asks:
            return cut_idx
        target = asks[min(n, len(asks)) - 1]
        if target >= cut_idx:
            return cut_idx
        return max(target, head_end + 1)

    def _find_last_user_message_idx(self, messages: list[dict[str, Any]], head_end: int) -> int:
        """Index of the newest user row at or after ``head_end`` that is not a summary, or -1.

        Any other user row counts, a blank one included (context_compressor.py:2956).
        """
        for i in range(len(messages) - 1, head_end - 1, -1):
            msg = messages[i]
            if _role(msg) == "user" and not self._is_context_summary_content(msg.get("content")):
                return i
        return -1

    def has_content_to_compress(self, messages: list[dict[str, Any]]) -> bool:
        start = self._align_boundary_forward(messages, self._protect_head_size(messages))
        return start < self._find_tail_cut_by_tokens(messages, start)

    # ----------------------------------------------------------------------------------------
    # Summaries (context_compressor.py:1815-2775)
    # ----------------------------------------------------------------------------------------

    def _today(self) -> str:
        value = self._now() if callable(self._now) else self._now
        if value is None:
            value = _dt.date.today()
        if isinstance(value, (_dt.date, _dt.datetime)):
            return value.strftime("%Y-%m-%d")
        return str(value)

    def _compute_summary_budget(self, turns_to_summarize: list[dict[str, Any]]) -> int:
        tokens = estimate_messages_tokens_rough(turns_to_summarize)
        return max(SUMMARY_BUDGET_MIN, min(int(tokens * SUMMARY_BUDGET_RATIO), self.max_summary_tokens))

    def _serialize_for_summary(self, turns: list[dict[str, Any]]) -> str:
        return _summary.serialize_turns(turns)

    @classmethod
    def _derive_auto_focus_topic(cls, messages: list[dict[str, Any]]) -> str | None:
        """The newest user asks, so automatic compactions also know what matters now.

        Up to three asks, newest last, each redacted, whitespace-collapsed and cut to 260
        characters; the whole text is cut to 700 characters. None without any ask.
        """
        picked: list[str] = []
        for msg in reversed(messages):
            if not is_real_user_message(msg):
                continue
            text = " ".join(redact_sensitive_text(message_text(msg).strip()).split())
            if not text:
                continue
            if len(text) > AUTO_FOCUS_ITEM_CHARS:
                text = text[: AUTO_FOCUS_ITEM_CHARS - 1].rstrip() + "…"
            picked.append(text)
            if len(picked) >= AUTO_FOCUS_ITEMS:
                break
        if not picked:
            return None
        focus = AUTO_FOCUS_HEADER + "".join(f"\n- {t}" for t in reversed(picked))
        if len(focus) > AUTO_FOCUS_TOTAL_CHARS:
            focus = focus[: AUTO_FOCUS_TOTAL_CHARS - 1].rstrip() + "…"
        return focus

    _auto_focus_topic = _derive_auto_focus_topic  # the name this class used before Hermes' was known

    def _build_summary_prompt(
        self, turns: list[dict[str, Any]], focus_topic: str | None = None, memory_context: str = ""
    ) -> str:
        return _summary.build_summary_prompt(
            self._serialize_for_summary(turns),
            previous_summary=self._previous_summary,
            budget_tokens=self._compute_summary_budget(turns),
            today=self._today(),
            focus=focus_topic,
            memory_context=sanitize_memory_context(memory_context) if memory_context else "",
        )

    @staticmethod
    def _load_aux() -> Any:
        try:
            from inspector.llm import aux
        except ImportError:
            return None
        return aux

    def _summary_cache_identity(self, aux: Any) -> str | None:
        """What the cache key names as "the model": the real endpoint, or None (do not cache).

        With the inspector's LLM layer this is the resolved ``auxiliary.compression`` endpoint
        (model @ base URL); when nothing is configured there is no identity, so offline runs
        never read the cache and always produce the fallback. Other ``aux`` providers (test
        fakes) fall back to the summary/main model name.
        """
        resolve = getattr(aux, "resolve_endpoint", None)
        active = getattr(aux, "active_aux_config", None)
        if not (callable(resolve) and callable(active)):
            return self.summary_model or self.model
        try:
            endpoint = resolve(
                "compression",
                active(),
                model=self.summary_model or None,
                main_runtime=self._main_runtime(),
            )
        except Exception:
            return None
        if endpoint is None:
            return None
        return f"{getattr(endpoint, 'model', '')}@{getattr(endpoint, 'base_url', '')}"

    def _main_runtime(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "provider": self.provider,
            "base_url": self.base_url,
            "api_key": self.api_key,
            "api_mode": self.api_mode,
        }

    def _call_summary_llm(self, prompt: str) -> str:
        """One call to the auxiliary summariser; raises on any failure, returns the reply text."""
        aux = self._load_aux()
        if aux is None:
            raise RuntimeError("No LLM provider configured (inspector.llm.aux is unavailable)")
        kwargs: dict[str, Any] = {
            "task": "compression",
            "main_runtime": self._main_runtime(),
            "messages": [{"role": "user", "content": prompt}],
        }
        if self.summary_model:
            kwargs["model"] = self.summary_model
        protection = getattr(aux, "aux_interrupt_protection", None)
        with protection() if callable(protection) else nullcontext():
            response = aux.call_llm(**kwargs)
        stand_in = getattr(aux, "OFFLINE_MODEL", None)
        if stand_in and getattr(response, "model", None) == stand_in:
            # The opt-in offline stand-in echoes the prompt; Hermes' built-in would have had no
            # provider here, so it writes its own deterministic fallback instead.
            raise RuntimeError("No LLM provider configured (only the offline stand-in answered)")
        text = _summary.extract_response_text(response)
        if not text.strip():
            raise _EmptySummaryError("summary model returned empty content")
        return text

    def _generate_summary(
        self, turns_to_summarize: list[dict[str, Any]], focus_topic: str | None = None, memory_context: str = ""
    ) -> str | None:
        """``SUMMARY_PREFIX + "\\n" + body`` from the summariser, or None (caller falls back).

        As context_compressor.py:2144-2613: nothing is asked during a cooldown; a failure of a
        dedicated summary model is retried once on the main model; any other failure starts the
        cooldown of its class and leaves its message in ``_last_summary_error``. The auth and
        network flags persist until a summary succeeds (compress() does not reset them).
        """
        turns = turns_to_summarize
        if self._cooldown_remaining() > 0:
            return None
        prompt = self._build_summary_prompt(turns, focus_topic, memory_context)
        self._last_summary_prompt = prompt
        self._last_summary_from_cache = False

        aux = self._load_aux()
        identity = self._summary_cache_identity(aux) if aux is not None else None
        key = _summary.cache_key(identity, prompt) if identity else None
        raw = _summary.cache_get(key) if key else None
        if raw is not None:
            self._last_summary_from_cache = True
        else:
            try:
                raw = self._call_summary_llm(prompt)
            except Exception as exc:
                kind = self._classify_summary_failure(exc)
                if kind == "auth":
                    self._last_summary_auth_failure = True
                if kind != "no_provider" and self.summary_model and self.summary_model != self.model \
                        and not self._summary_model_fallen_back:
                    self._fallback_to_main_for_compression(exc, kind)
                    return self._generate_summary(turns, focus_topic=focus_topic, memory_context=memory_context)
                self._record_summary_failure(exc, kind)
                return None
            if key and identity:
                _summary.cache_put(key, raw, model=identity)

        body = _summary.postprocess_summary(raw, turns)
        self._previous_summary = body
        self._clear_compression_failure_cooldown()
        self._summary_model_fallen_back = False
        self._last_summary_auth_failure = False
        self._last_summary_network_failure = False
        return self._with_summary_prefix(body)

    def _fallback_to_main_for_compression(self, e: Exception, reason: str) -> None:
        """The dedicated summary model failed (``reason``): remember why, use the main model from
        now on, and retry at once (context_compressor.py:2117)."""
        exc = e
        if not self.quiet_mode:
            logger.warning("Summary model %r failed (%s: %s); falling back to the main model %r",
                           self.summary_model, reason, exc, self.model)
        self._summary_model_fallen_back = True
        self._last_aux_model_failure_error = _error_text(exc)
        self._last_aux_model_failure_model = self.summary_model
        self.summary_model = ""
        self._clear_compression_failure_cooldown()

    @staticmethod
    def _classify_summary_failure(exc: BaseException) -> str:
        """Map an exception onto Hermes' failure classes (context_compressor.py:57-79, 2439-2613)."""
        message = str(exc).lower()
        cls = type(exc).__name__.lower()
        status = getattr(exc, "status_code", None)
        if status is None:
            status = getattr(getattr(exc, "response", None), "status_code", None)
        if not isinstance(status, int):
            match = re.search(r"(?:error code|status(?: code)?|http)[:\s]*([45]\d\d)\b", message)
            status = int(match.group(1)) if match else None
        if isinstance(exc, RuntimeError) and "no llm provider configured" in message:
            return "no_provider"
        quota = ("insufficient_quota", "quota", "billing", "credit balance", "payment required")
        if (
            status in (401, 402, 403)
            or "authentication" in cls
            or "permissiondenied" in cls
            or "no api key" in message
            or "invalid api key" in message
            or "invalid_api_key" in message
            or "unauthorized" in message
            or any(marker in message for marker in quota)
        ):
            return "auth"
        if status in (408, 429, 502, 504) or "timeout" in cls or "timeout" in message or "timed out" in message:
            return "timeout"
        if isinstance(exc, json.JSONDecodeError) or "jsondecode" in cls:
            return "json"
        stream_markers = ("stream closed", "connection closed", "incomplete chunked", "peer closed",
                          "server disconnected", "remote end closed", "connection reset", "connection error",
                          "connection aborted")
        if "connection" in cls or "remoteprotocol" in cls or any(m in message for m in stream_markers):
            return "connection"
        return "other"

    def _record_summary_failure(self, exc: BaseException, kind: str | None = None) -> None:
        """The cooldown of the failure's class, with the exception's own text as the error
        (context_compressor.py:2421-2613): 600 s without a provider, 60 → 300 → 900 s for
        timeouts, 30 s for malformed replies and dropped connections, 60 s otherwise."""
        kind = kind or self._classify_summary_failure(exc)
        if kind == "no_provider" and self.offline_stand_in:
            self._last_summary_offline_stand_in = True
            self._last_summary_error = NO_PROVIDER_ERROR + " (offline replay: the deterministic summary stands in)"
        elif kind == "no_provider":
            self._set_failure_cooldown(COOLDOWN_NO_PROVIDER, kind, NO_PROVIDER_ERROR)
        elif kind == "timeout":
            self._apply_timeout_cooldown(_error_text(exc))
        elif kind in ("json", "connection"):
            if kind == "connection":
                self._last_summary_network_failure = True
            self._set_failure_cooldown(COOLDOWN_TRANSIENT, kind, _error_text(exc))
        else:
            self._set_failure_cooldown(COOLDOWN_OTHER, kind, _error_text(exc))
        if not self.quiet_mode:
            logger.warning("Context summary failed (%s): %s", kind, self._last_summary_error)

    def _build_static_fallback_summary(self, turns_to_summarize: list[dict[str, Any]], reason: str | None = None) -> str:
        """Hermes' no-LLM summary (context_compressor.py:1923-2115), prefixed; deterministic for identical turns and reason."""
        body = _summary.build_fallback_body(
            turns_to_summarize,
            previous_summary_existed=bool(self._previous_summary),
            failure_reason=reason,
        )
        return self._with_summary_prefix(body)

    def _build_fallback_summary(self, turns: list[dict[str, Any]]) -> str:
        """The fallback summary for the last failure. Like Hermes' it does not become the running
        summary: the next compaction reads it back from the transcript (context_compressor.py:3556)."""
        return self._build_static_fallback_summary(turns, reason=self._last_summary_error)

    @staticmethod
    def _strip_summary_prefix(summary: str) -> str:
        """The body of a summary: merge wrapper, any known prefix and the end marker (and what
        follows it) removed, so a body is never prefixed twice or carries an old prefix on."""
        return summary_body_from_text(summary)

    @classmethod
    def _with_summary_prefix(cls, summary: str) -> str:
        """``SUMMARY_PREFIX + "\\n" + body`` for any summary text (just the prefix when empty)."""
        body = cls._strip_summary_prefix(summary)
        return f"{SUMMARY_PREFIX}\n{body}" if body else SUMMARY_PREFIX

    # ----------------------------------------------------------------------------------------
    # Assembly helpers (context_compressor.py:3540-3727)
    # ----------------------------------------------------------------------------------------

    @staticmethod
    def _get_tool_call_id(tc: Any) -> str:
        """A tool call's id: ``call_id`` (Responses API) or ``id``, dict or object."""
        return tool_call_id_of(tc)

    def _sanitize_tool_pairs(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Drop results whose call is gone and calls whose result is gone (context_compressor.py:2798).

        A tool row without a ``tool_call_id`` references nothing and is kept. An assistant row
        losing calls is a new dict; the rows given are not mutated.
        """
        call_ids = {cid for m in messages if _role(m) == "assistant"
                    for cid in (self._get_tool_call_id(tc) for tc in m.get("tool_calls") or []) if cid}
        result_ids = {m.get("tool_call_id") for m in messages if _role(m) == "tool" and m.get("tool_call_id")}
        orphaned = result_ids - call_ids
        if orphaned:
            messages = [m for m in messages if not (_role(m) == "tool" and m.get("tool_call_id") in orphaned)]
        missing = call_ids - result_ids
        if not missing:
            return messages
        out = []
        for msg in messages:
            calls = msg.get("tool_calls") if _role(msg) == "assistant" else None
            kept = [tc for tc in calls if self._get_tool_call_id(tc) not in missing] if calls else None
            if kept is None or len(kept) == len(calls):
                out.append(msg)
                continue
            msg = dict(msg)
            if kept:
                msg["tool_calls"] = kept
            else:
                msg.pop("tool_calls", None)
                content = msg.get("content")
                if not content or (isinstance(content, str) and not content.strip()):
                    msg["content"] = TOOL_CALL_REMOVED
            out.append(msg)
        return out

    @staticmethod
    def _has_image(message: dict[str, Any]) -> bool:
        content = message.get("content")
        return isinstance(content, list) and any(
            isinstance(p, dict) and p.get("type") in IMAGE_PART_TYPES for p in content
        )

    def _strip_historical_media(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Images before the newest image-bearing user message become a short text part
        (context_compressor.py:612); a rewritten row loses its stale ``api_content``."""
        anchor = next(
            (i for i in range(len(messages) - 1, -1, -1) if _role(messages[i]) == "user" and self._has_image(messages[i])),
            -1,
        )
        if anchor <= 0:
            return messages
        out = list(messages)
        for i in range(anchor):
            msg = out[i]
            if isinstance(msg, dict) and self._has_image(msg):
                new = dict(msg)
                new["content"] = [
                    {"type": "text", "text": IMAGE_STRIPPED_TEXT}
                    if isinstance(p, dict) and p.get("type") in IMAGE_PART_TYPES
                    else p
                    for p in msg["content"]
                ]
                new.pop("api_content", None)
                out[i] = new
        return out

    @staticmethod
    def _summary_role(messages: list[dict[str, Any]], start: int, end: int) -> tuple[str, bool]:
        """``(role, merge)`` for the summary between ``messages[:start]`` and ``messages[end:]``.

        The summary must not sit between two rows of its own role (strict providers reject
        consecutive same-role rows), must be a user row after a system prompt, and must be one
        when no user row survives; when neither role fits, it is merged into the first tail row
        instead of standing alone (context_compressor.py:3556-3620).
        """
        last_head_role = messages[start - 1].get("role", "user") if start > 0 else "user"
        first_tail_role = messages[end].get("role", "user") if end < len(messages) else "user"
        force_user = last_head_role == "system" or not any(
            _role(m) == "user" for m in list(messages[:start]) + list(messages[end:])
        )
        role = "user" if (last_head_role in ("assistant", "tool") or force_user) else "assistant"
        if role == first_tail_role:
            flipped = "assistant" if role == "user" else "user"
            if flipped != last_head_role and not force_user:
                return flipped, False
            return role, True
        return role, False

    @staticmethod
    def _merge_summary_into(message: dict[str, Any], summary: str) -> dict[str, Any]:
        """The merged form: the first tail row keeps its text as prior context, summary below."""
        merged = dict(message)
        merged.pop("api_content", None)
        closing = MERGED_PRIOR_CLOSE + summary + "\n\n" + END_MARKER
        content = message.get("content", "")
        if isinstance(content, list):
            merged["content"] = (
                [{"type": "text", "text": MERGED_PRIOR_OPEN}] + list(content) + [{"type": "text", "text": closing}]
            )
        else:
            old = "" if content is None else (content if isinstance(content, str) else str(content))
            merged["content"] = MERGED_PRIOR_OPEN + old + closing
        merged[COMPRESSED_SUMMARY_METADATA_KEY] = True
        return merged

    @staticmethod
    def _with_compaction_note(message: dict[str, Any]) -> dict[str, Any]:
        """The system prompt with our note that earlier turns were compacted (once)."""
        content = message.get("content")
        if SYSTEM_COMPACTION_NOTE.strip()[:40] in content_text_for_contains(content):
            return message
        note = SYSTEM_COMPACTION_NOTE.strip()
        if content is None:
            message["content"] = note
        elif isinstance(content, str):
            message["content"] = content + "\n\n" + note if content else note
        elif isinstance(content, list):
            message["content"] = [*content, {"type": "text", "text": note}]
        else:
            message["content"] = str(content) + note
        return message

    @staticmethod
    def _is_context_summary_content(content: Any) -> bool:
        """Hermes' test for a summary (standalone or merged) by its text."""
        return is_context_summary_content(content)

    @classmethod
    def _latest_user_task_snapshot(cls, messages: list[dict[str, Any]]) -> str | None:
        """The grounding lines for the newest real user ask among ``messages``, or None."""
        ask = _summary.latest_user_ask(messages)
        return _summary.grounding_block(ask) if ask else None

    @classmethod
    def _ground_historical_task_snapshot(cls, summary: str, messages: list[dict[str, Any]]) -> str:
        """The summary body with its task snapshot section pinned to the real newest ask."""
        return _summary.ground_snapshot(cls._strip_summary_prefix(summary), _summary.latest_user_ask(messages))

    @staticmethod
    def _has_compressed_summary_metadata(message: Any) -> bool:
        """True for a row flagged as a compaction summary (``COMPRESSED_SUMMARY_METADATA_KEY``)."""
        return isinstance(message, dict) and bool(message.get(COMPRESSED_SUMMARY_METADATA_KEY))

    @classmethod
    def _find_latest_context_summary(
        cls, messages: list[dict[str, Any]], start: int, end: int
    ) -> tuple[int | None, str]:
        """``(index, body)`` of the newest summary in ``messages[start:end]``, or ``(None, "")``."""
        for idx in range(end - 1, start - 1, -1):
            content = messages[idx].get("content")
            if cls._is_context_summary_content(content):
                return idx, cls._strip_summary_prefix(content_text_for_contains(content))
        return None, ""

    # ----------------------------------------------------------------------------------------
    # compress (context_compressor.py:3312-3727)
    # ----------------------------------------------------------------------------------------

    def compress(
        self,
        messages: list,
        current_tokens: int = None,  # type: ignore[assignment]
        focus_topic: str = None,  # type: ignore[assignment]
        force: bool = False,
        memory_context: str = "",
    ) -> list[dict[str, Any]]:
        """Prune, cut head/window/tail, summarise the window, reassemble. Never mutates input.

        One pass at a time per instance: an instance shared by two sessions (which Hermes'
        pooled compression allows) serialises them instead of mixing their running summaries.
        """
        lock = self.__dict__.get("_compress_lock")
        if lock is None:
            lock = self._compress_lock = threading.RLock()
        with lock:
            return self._compress_locked(messages, current_tokens, focus_topic, force, memory_context)

    def _compress_locked(
        self,
        messages: list,
        current_tokens: int | None,
        focus_topic: str | None,
        force: bool,
        memory_context: str,
    ) -> list:
        """The steps of context_compressor.py:3312-3727, in its order."""
        # 1. per-call flags (the auth/network flags persist until a summary succeeds)
        self._last_summary_dropped_count = 0
        self._last_summary_fallback_used = False
        self._last_summary_error = None
        self._last_aux_model_failure_error = None
        self._last_aux_model_failure_model = None
        self._last_compress_aborted = False
        self._last_compression_made_progress = False
        self._last_summary_offline_stand_in = False
        self._last_summary_from_cache = False
        if force:
            self._clear_compression_failure_cooldown()

        original = messages
        # 2. the minimum size: head plus three rows plus one
        n = len(messages)
        if n <= self._protect_head_size(messages) + 4:
            self._ineffective_compression_count += 1
            self._last_compression_savings_pct = 0.0
            return original

        # 3. tool-output prune
        messages, pruned = self._prune_old_tool_results(
            messages, protect_tail_count=self.protect_last_n, protect_tail_tokens=self.tail_token_budget
        )
        if pruned and not self.quiet_mode:
            logger.info("Pre-compression: pruned %d old tool result(s)", pruned)

        # 4. window
        start = self._align_boundary_forward(messages, self._protect_head_size(messages))
        end = self._find_tail_cut_by_tokens(messages, start)
        # Nothing between head and tail: the pruned list, as Hermes returns it. A cut past the end
        # (a transcript of head rows and tool results only) makes Hermes 0.19.0 raise IndexError
        # (context_compressor.py:2782); ours treats it as the same no-op (meta.host_differences).
        if start >= end or end > n:
            self._ineffective_compression_count += 1
            self._last_compression_savings_pct = 0.0
            return messages

        # 5. an existing summary (from the head on) continues: the one in memory if any, else
        #    the transcript's; none in the transcript means the memory is another conversation's
        turns = messages[start:end]
        search_from = 1 if _role(messages[0]) == "system" else 0
        summary_idx, body = self._find_latest_context_summary(messages, search_from, end)
        if summary_idx is not None:
            if body and not self._previous_summary:
                self._previous_summary = body
            turns = messages[max(start, summary_idx + 1) : end]
        elif self._previous_summary:
            self._previous_summary = None

        # 6-8. focus, summary, abort or fallback
        focus = focus_topic or self._derive_auto_focus_topic(messages)
        summary = self._generate_summary(turns, focus_topic=focus, memory_context=memory_context)
        if not summary:
            # Offline, the deterministic summary stands in for the answer the main model would have
            # given (README): that is not a failure, so abort_on_summary_failure does not apply.
            failed = not self._last_summary_offline_stand_in
            if failed and self.abort_on_summary_failure or self._last_summary_auth_failure \
                    or self._last_summary_network_failure:
                self._last_summary_dropped_count = 0
                self._last_summary_fallback_used = False
                self._last_compress_aborted = True
                if not self.quiet_mode:
                    logger.warning("Compression aborted: %s", self._last_summary_error)
                return messages  # the pruned list, as Hermes returns it

        # 9. head rows (the system prompt gets the compaction note)
        head_rows = [_copy_row(m) for m in messages[:start]]
        if head_rows and head_rows[0].get("role") == "system":
            self._with_compaction_note(head_rows[0])
        if not summary:
            summary = self._build_fallback_summary(turns)
            self._last_summary_fallback_used = True
            self._last_summary_dropped_count = end - start

        # 10-12. role of the summary; a standalone row, or merged into the first tail row. With
        #        no tail row to merge into, Hermes inserts no summary at all (reproduced).
        role, merge = self._summary_role(messages, start, end)
        assembled = head_rows
        if not merge:
            assembled.append({"role": role, "content": summary + "\n\n" + END_MARKER,
                              COMPRESSED_SUMMARY_METADATA_KEY: True})
        for i in range(end, n):
            row = _copy_row(messages[i])
            if merge and i == end:
                row = self._merge_summary_into(row, summary)
            assembled.append(row)
        self.compression_count += 1

        # 13-14. tool pairs, historical media
        assembled = self._sanitize_tool_pairs(assembled)
        assembled = self._strip_historical_media(assembled)

        # 15. diagnostics: savings of the message list given to the window step
        before_tokens = estimate_messages_tokens_rough(messages)
        after_tokens = estimate_messages_tokens_rough(assembled)
        self._last_compression_savings_pct = (
            (before_tokens - after_tokens) / before_tokens * 100 if before_tokens > 0 else 0
        )
        if not self.quiet_mode:
            logger.info(
                "Compressed %d -> %d messages (~%d -> ~%d tokens, %.1f%% saved; current_tokens=%s)",
                len(original), len(assembled), before_tokens, after_tokens,
                self._last_compression_savings_pct, current_tokens,
            )
        for row in assembled:
            row.pop("_db_persisted", None)
        self._last_compression_made_progress = True
        self._proactive_prune_watermark = None
        return assembled

    # ----------------------------------------------------------------------------------------
    # [M] proactive prune (docs/host-contract.md §6.10)
    # ----------------------------------------------------------------------------------------

    def prune_tool_results_only(
        self, messages: list, current_tokens: int = None  # type: ignore[assignment]
    ) -> tuple[list, int]:
        """Shrink big old tool results without summarising; ``(new_list, reclaimed_tokens)``.

        Off unless ``proactive_prune_tokens`` is set and the pressure exceeds it. Only results
        longer than ``proactive_prune_min_result_chars`` outside the protected tail qualify, and
        the prune is only returned when it reclaims at least ``proactive_prune_min_reclaim_tokens``
        (otherwise the same list object and 0, which the host ignores). After a prune, the next
        one waits until the pressure rises above the level this one ran at, so a prune that
        leaves the context above the trigger does not fire again on the very next round.
        """
        trigger = self.proactive_prune_tokens
        if trigger <= 0 or current_tokens is None or current_tokens <= trigger:
            return messages, 0
        if self._proactive_prune_watermark is not None and current_tokens <= self._proactive_prune_watermark:
            return messages, 0
        boundary = prunable_boundary(
            messages, self.protect_last_n, self.tail_token_budget, self._estimate_msg_budget_tokens
        )
        call_map = build_call_map(messages)
        result = list(messages)
        saved_chars = 0
        for i in range(boundary):
            msg = messages[i]
            if _role(msg) != "tool":
                continue
            content = msg.get("content")
            if not isinstance(content, str) or len(content) <= self.proactive_prune_min_result_chars:
                continue
            if is_placeholder(content):
                continue
            name, args = call_map.get(str(msg.get("tool_call_id") or ""), (msg.get("name") or "tool", None))
            new = dict(msg)
            new["content"] = summarize_tool_result(name, args, content)
            saved_chars += message_rough_chars(msg)[0] - message_rough_chars(new)[0]
            result[i] = new
        reclaimed = saved_chars // 4
        if reclaimed <= 0 or reclaimed < self.proactive_prune_min_reclaim_tokens:
            return messages, 0
        self._proactive_prune_watermark = int(current_tokens)
        return result, reclaimed

    # ----------------------------------------------------------------------------------------
    # Lifecycle and status
    # ----------------------------------------------------------------------------------------

    def bind_session_state(self, session_db: Any = None, session_id: str = "") -> None:
        """Bind the session row; a new binding starts without cooldown, error or fallback streak
        (context_compressor.py:941), then reads what a store that keeps them has for the row."""
        self._session_db = session_db
        self._session_id = session_id or ""
        self._failure_cooldown_deadline = 0.0
        self._summary_failure_kind = None
        self._cooldown_persist_failed = False
        self._last_summary_error = None
        self._consecutive_timeout_failures = 0
        self._fallback_compression_streak = 0
        self.get_active_compression_failure_cooldown()
        self._load_fallback_compression_streak()

    def _load_fallback_compression_streak(self) -> None:
        getter = getattr(self._session_db, "get_compression_fallback_streak", None)
        if not self._session_id or not callable(getter):
            return
        try:
            stored = getter(self._session_id)
            self._fallback_compression_streak = max(0, int(stored) if isinstance(stored, (int, float, str)) else 0)
        except Exception as exc:
            logger.debug("session store get_compression_fallback_streak failed: %s", exc)

    def on_session_start(self, session_id: str, **kwargs: Any) -> None:
        """Bind the new or resumed session (context_compressor.py:953-979).

        A rotation for compression continues the same conversation, so its fallback streak
        carries over (from the parent row when the store keeps one); any other boundary starts
        the streak, the cooldown and the last error afresh.
        """
        super().on_session_start(session_id, **kwargs)
        reason = kwargs.get("boundary_reason")
        session_db = kwargs.get("session_db", self.__dict__.get("_session_db"))
        streak = self._fallback_compression_streak
        old_session_id = kwargs.get("old_session_id")
        getter = getattr(session_db, "get_compression_fallback_streak", None)
        if reason == "compression" and old_session_id and callable(getter):
            try:
                stored = getter(old_session_id)
                if isinstance(stored, (int, float, str)):
                    streak = max(0, int(stored))
            except Exception as exc:
                logger.debug("parent fallback streak lookup failed: %s", exc)
        self.bind_session_state(session_db, session_id)
        if reason == "compression":
            self._fallback_compression_streak = streak

    def _reset_session_state(self) -> None:
        """Every per-session field of the anti-thrash and summary machinery, as Hermes resets them."""
        self._previous_summary = None
        self._last_summary_error = None
        self._consecutive_timeout_failures = 0
        self._last_summary_dropped_count = 0
        self._last_summary_fallback_used = False
        self._last_aux_model_failure_error = None
        self._last_aux_model_failure_model = None
        self._last_compression_savings_pct = 100.0
        self._ineffective_compression_count = 0
        self._fallback_compression_streak = 0
        self._verify_compaction_cleared_threshold = False
        self._last_compression_made_progress = False
        self._failure_cooldown_deadline = 0.0
        self._summary_failure_kind = None
        self._cooldown_persist_failed = False
        self._last_compress_aborted = False
        self.last_real_prompt_tokens = 0
        self.last_compression_rough_tokens = 0
        self.last_rough_tokens_when_real_prompt_fit = 0
        self.awaiting_real_usage_after_compression = False
        self._proactive_prune_watermark = None

    def on_session_end(self, session_id: str, messages: list) -> None:
        """A real session boundary: nothing of this session's compaction state may leak into the
        next one (context_compressor.py:900-939)."""
        self._reset_session_state()

    def on_session_reset(self) -> None:
        """``/new`` or ``/reset``: token counts and the compaction count too (context_compressor.py:874)."""
        super().on_session_reset()
        self._reset_session_state()

    def get_status(self) -> dict[str, Any]:
        status = super().get_status()
        status.update(
            {
                "threshold_percent": self.threshold_percent,
                "failure_cooldown_seconds": self._cooldown_remaining(),
                "ineffective_compression_count": self._ineffective_compression_count,
                "fallback_compression_streak": self._fallback_compression_streak,
                "last_summary_fallback_used": self._last_summary_fallback_used,
            }
        )
        return status
