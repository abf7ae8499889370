"""The compaction gates: where in a turn Hermes asks whether to compress, with which token figure.

- the turn-start preflight (agent/turn_context.py:199-206, 664-700);
- the pre-API gate before every request (agent/conversation_loop.py:1087-1090), after
  ``should_defer_preflight_to_real_usage`` and the failure cooldown;
- the check after a tool round (agent/conversation_loop.py:5121-5150 under 0.19.0; [M]
  ``compress_after_tool_results`` with ``should_compress_info`` and ``prune_tool_results_only``);
- the context-overflow path (agent/conversation_loop.py:3618-3830): the provider rejects a request over the window, Hermes
  compresses and retries up to 3 times a turn.

Which figure each gate tests is the profile's rule (:class:`inspector.host.profiles.GateRules`);
the pass itself is :class:`inspector.host.compaction.Compaction`. This part owns the per-turn
attempt counters and what it has already said (a blocked reason, a window that differs).
"""

from __future__ import annotations

import re
from typing import Any

from inspector.host.assembly import RequestAssembly
from inspector.host.compaction import Compaction
from inspector.host.profiles import GateRules
from inspector.host.recorder import HookRecorder
from inspector.host.settings import HostSettings
from inspector.host.shaping import validate_messages
from inspector.host.values import as_int, jsonable
from inspector.tokens.rough import estimate_request_tokens_rough
from inspector.trace.model import Fault
from inspector.trace.packed import made_shape, shape_of

# Arguments of the gates' hook events, held packed (inspector.trace.packed): tens of thousands per long replay.
_SHOULD_KEYS = ("prompt_tokens", "site", "figure")
_SHOULD_ARGS = shape_of(_SHOULD_KEYS)
_SHOULD_AT: dict[tuple[str, str], bytes] = {}  # (site, figure) -> a shape holding only the tokens


def _should_at(tokens: int, site: str, figure: str) -> tuple[Any, ...]:
    """should_compress's recorded arguments, packed: the few sites and figures are the shape's
    own (made here once each), so each call holds only its token figure (35,000 calls in a
    10,000-turn replay)."""
    if type(site) is not str or type(figure) is not str:
        return (_SHOULD_ARGS, tokens, site, figure)
    handle = _SHOULD_AT[(site, figure)] = made_shape(
        f"should_compress at {site} by {figure}", _SHOULD_KEYS,
        lambda held, s=site, f=figure: {"prompt_tokens": held[1], "site": s, "figure": f})
    return (handle, tokens)
_DEFER_ARGS = shape_of(("rough_tokens",))
_INFO_ARGS = shape_of(("prompt_tokens",))

_REPORTED_LIMIT = [
    re.compile(p, re.I) for p in (
        r"maximum context length is (\d[\d,]*)",
        r"context (?:length|window|limit)(?: is| of|:)? (\d[\d,]*) tokens",
        r"tokens? > (\d[\d,]*) maximum",
        r"(?:limit|maximum) (?:is |of )?(\d[\d,]*) tokens",
    )
]


def reported_context_limit(text: str) -> int | None:
    """The window a provider's overflow error states ("maximum context length is 8192 tokens")."""
    for pattern in _REPORTED_LIMIT:
        match = pattern.search(text)
        if match:
            value = int(match.group(1).replace(",", ""))
            if value >= 1024:
                return value
    return None


class CompactionGates:
    """Asks the engine whether to compress at each of Hermes' gates, and runs the pass when it says so."""

    def __init__(self, recorder: HookRecorder, assembly: RequestAssembly, compaction: Compaction,
                 settings: HostSettings, rules: GateRules, *, usage_model: Any) -> None:
        self.rec = recorder
        self.asm = assembly
        self.compaction = compaction
        self.engine = recorder.engine
        self.settings = settings
        self.rules = rules
        self.usage_model = usage_model
        self._compress_attempts = 0
        self._overflow_attempts = 0
        self._window_noted = 0  # the engine context length the last "window differs" note named
        self._last_blocked_reason = ""

    def begin_turn(self) -> None:
        """Each turn has its own attempts at the pre-API gate and on overflow."""
        self._compress_attempts = 0
        self._overflow_attempts = 0
        self.compaction.turn_exit = None

    # -- the engine's answers ----------------------------------------------------------------
    def cooldown_active(self) -> bool:
        getter = getattr(self.engine, "get_active_compression_failure_cooldown", None)
        if not callable(getter):
            return False
        out = self.rec.inline(getter, timeout=self.settings.hook_timeout)
        return bool(out.value) if out.ok else False

    def cooldown_blocks(self, tokens: int) -> bool:
        """The pre-API gate's cooldown check; over the threshold it says why, once per reason ([M])."""
        if not self.cooldown_active():
            return False
        threshold = as_int(getattr(self.engine, "threshold_tokens", 0))
        if threshold and tokens >= threshold:
            reason = self.compaction.blocked_reason(tokens)
            if reason != self._last_blocked_reason:
                self._last_blocked_reason = reason
                self.rec.note(f"over threshold ({tokens:,} ≥ {threshold:,}) but compression is blocked: {reason}",
                              site="pre_api")
        return True

    def defer(self, tokens: int) -> bool:
        if not self.rec.wants("should_defer_preflight_to_real_usage"):
            return False
        ev, out = self.rec.hook("should_defer_preflight_to_real_usage", tokens, record_args=(_DEFER_ARGS, tokens))
        ev.result = bool(out.value) if out.ok else None
        return bool(out.value) if out.ok else False

    def should_compress(self, tokens: int, site: str, figure: str = "rough") -> bool:
        at = _SHOULD_AT.get((site, figure))  # the call's arguments packed (see _should_at)
        ev, out = self.rec.hook("should_compress", tokens,
                                record_args=(at, tokens) if at is not None else _should_at(tokens, site, figure))
        if not out.ok:
            return False
        if not isinstance(out.value, bool):
            ev.fault = Fault("invalid_return", f"should_compress returned {type(out.value).__name__}, expected bool; "
                             "Hermes uses its truthiness")
        ev.result = jsonable(out.value)
        return bool(out.value)

    # -- the gates -------------------------------------------------------------------------------
    def preflight(self) -> None:
        """Turn-prologue preflight compression (agent/turn_context.py:563-684 of hermes-agent 0.19.0)."""
        asm = self.asm
        if not self.settings.compression_enabled or not asm.history:
            return
        e = self.engine
        pf, pl = as_int(getattr(e, "protect_first_n", 3)), as_int(getattr(e, "protect_last_n", 6))
        threshold = as_int(getattr(e, "threshold_tokens", 0))
        history_rough = asm.history_rough()
        if not (len(asm.history) > pf + pl + 1 or history_rough >= threshold):
            return
        t = asm.request_rough(history_rough)
        deferred = self.defer(t)
        last = as_int(getattr(e, "last_prompt_tokens", 0))
        if not deferred and 0 <= last < t:
            try:
                e.last_prompt_tokens = t
            except Exception:
                pass
        if deferred or self.cooldown_active():
            return
        if not self.should_compress(t, "preflight"):
            return
        for _ in range(3):
            before_rows, before_t = len(asm.history), t
            self.compaction.run(t, site="preflight")
            t = asm.request_rough()
            # Progress = fewer rows or under 95 % of the tokens (agent/turn_context.py:199-206, 664-666).
            progress = len(asm.history) < before_rows or (before_t > 0 and t < before_t * 0.95)
            if not progress or not self.should_compress(t, "preflight"):
                break

    def pre_api(self, pressure: int, figure: str) -> bool:
        """The gate before a request. True when a compaction committed and the request must be assembled again."""
        s = self.settings
        if (
            s.compression_enabled
            and len(self.asm.history) > 1
            and self._compress_attempts < s.max_attempts
            and not self.defer(pressure)
            and not self.cooldown_blocks(pressure)
            and self.should_compress(pressure, "pre_api", figure)
        ):
            self._compress_attempts += 1
            return self.compaction.run(pressure, site="pre_api")
        return False

    def overflow(self, tik: int, rough: int) -> bool:
        """The simulated provider rejects a request over the window (the context-overflow path, agent/conversation_loop.py:3618-3830 of hermes-agent 0.19.0).

        Hermes then compresses (up to 3 attempts a turn, success = fewer rows or < 95 % of the
        rough tokens) and retries; when that fails the turn ends with ``compression_exhausted``.
        The replay records that verdict and goes on with the transcript (teacher forcing).
        True when a compression committed and the request must be re-assembled.
        """
        # The provider's window is the model's, whatever the engine believes its context length is.
        believed = as_int(getattr(self.engine, "context_length", 0))
        ctx = self.settings.context_length or believed
        sent = self.usage_model.provider_tokens(tik)  # as the provider counts it (the head included)
        if not ctx or sent <= ctx:
            return False
        rec = self.rec
        if believed and believed != ctx and believed != self._window_noted:
            self._window_noted = believed
            rec.note(f"the engine's context_length is {believed:,} but the model's window is {ctx:,}: the provider "
                     "rejects what exceeds the model's window", site="overflow")
        if not self.settings.compression_enabled:
            rec.fault("context_overflow", f"request of {sent:,} tokens exceeds the {ctx:,}-token window and "
                      "compression is disabled: Hermes would end the turn with an error here")
            return False
        if self._overflow_attempts >= 3:
            rec.fault("compression_exhausted", f"request of {sent:,} tokens still exceeds the {ctx:,}-token window "
                      "after 3 compression attempts: Hermes would end this turn (compression_exhausted); "
                      "the replay continues with the transcript")
            return False
        self._overflow_attempts += 1
        rec.fault("context_overflow", f"the provider would reject this request: {sent:,} tokens > {ctx:,}-token "
                  f"window; Hermes compresses and retries (attempt {self._overflow_attempts} of 3)")
        rows = len(self.asm.history)
        committed = self.compaction.run(rough, site="overflow")
        if committed and (len(self.asm.history) < rows or self.asm.history_rough() < 0.95 * rough):
            return True
        if committed:
            return True
        self._overflow_attempts = 3
        return self.overflow(tik, rough)

    def provider_overflow(self, exc: Exception, rough: int) -> bool:
        """A real provider rejected the request as too long (agent/conversation_loop.py:3618-3830 of hermes-agent 0.19.0): compress and retry, 3 times at most."""
        if not self.settings.compression_enabled or self._overflow_attempts >= 3:
            return False
        self._overflow_attempts += 1
        self.rec.fault("context_overflow", f"the provider rejected the request as too long ({exc}); Hermes compresses "
                       f"and retries (attempt {self._overflow_attempts} of 3)")
        limit = reported_context_limit(str(exc))
        current = as_int(getattr(self.engine, "context_length", 0)) or self.settings.context_length
        if limit is not None and limit < current:
            # The error names the real window: Hermes adopts it before compressing (agent/conversation_loop.py:3754).
            s = self.settings
            s.context_length = limit
            self.rec.hook("update_model",
                          record_args={"model": s.model, "context_length": limit, "base_url": s.base_url,
                                       "provider": s.provider, "api_mode": s.api_mode,
                                       "reason": "provider-reported limit"},
                          model=s.model, context_length=limit, base_url=s.base_url, api_key="",
                          provider=s.provider, api_mode=s.api_mode)
        return self.compaction.run(rough, site="overflow")

    def after_tools(self) -> None:
        """Post-tool compression or proactive prune (agent/conversation_loop.py:5115-5146 of hermes-agent 0.19.0; docs/host-contract.md §2.7)."""
        e = self.engine
        if self.rules.post_tool_tokens == "last_prompt":
            self._after_tools_last_prompt()
            return
        if self.rules.post_tool_waits_for_usage and getattr(e, "awaiting_real_usage_after_compression", False):
            return
        asm = self.asm
        last = as_int(getattr(e, "last_prompt_tokens", 0))
        figure = "rough"
        if asm.anchor is not None:
            real, length = asm.anchor
            t, figure = real + asm.rough_tail(length), "anchored"
        elif last > 0:
            t, figure = last, "last_prompt"
        elif last == -1:
            t, figure = 0, "reset"
        else:
            t = estimate_request_tokens_rough(asm.history, tools=asm.tools)
        if self.settings.compression_enabled and self.should_compress(t, "post_tool", figure):
            self.compaction.run(t, site="post_tool")
            return
        if not self.settings.compression_enabled:
            return
        rec = self.rec
        if rec.wants("should_compress_info"):
            ev, out = rec.hook("should_compress_info", t, record_args=(_INFO_ARGS, t))
            ev.result = jsonable(out.value) if out.ok else None
        if rec.wants("prune_tool_results_only"):
            before = asm.history
            ev, out = rec.hook("prune_tool_results_only", before, record_args={
                "messages": asm.history_ref(), "current_tokens": t}, current_tokens=t)
            if not out.ok:
                return
            value = out.value
            if not (isinstance(value, tuple) and len(value) == 2):
                ev.fault = Fault("invalid_return", f"prune_tool_results_only returned {type(value).__name__}, expected (list, int)")
                return
            new_list, count = value
            ev.result = {"count": jsonable(count)}
            if count and new_list is not before:
                problem = validate_messages(new_list)
                if problem:
                    ev.fault = Fault("invalid_return", problem)
                    return
                asm.history = list(new_list)
                asm.anchor = None
                ev.result["$list"] = asm.history_ref()["$list"]

    def _after_tools_last_prompt(self) -> None:
        """0.19.0's check after a tool round (agent/conversation_loop.py:5121-5150): the engine's
        last_prompt_tokens (0 right after a compaction, the rough request estimate when it is 0),
        and compress is then given last_prompt_tokens as its current_tokens."""
        if not self.settings.compression_enabled:
            return
        last = as_int(getattr(self.engine, "last_prompt_tokens", 0))
        if last > 0:
            t = last
        elif last == -1:
            t = 0
        else:
            t = estimate_request_tokens_rough(self.asm.history, tools=self.asm.tools or None)
        if self.should_compress(t, "post_tool"):
            self.compaction.run(as_int(getattr(self.engine, "last_prompt_tokens", 0)), site="post_tool")

    def compress_now(self, focus_topic: str | None = None) -> bool:
        """Manual ``/compress [topic]``: force=True, focus passed through."""
        asm = self.asm
        t = estimate_request_tokens_rough(asm.history, system_prompt=asm.system_text, tools=asm.tools)
        return self.compaction.run(t, site="manual", focus_topic=focus_topic, force=True)
