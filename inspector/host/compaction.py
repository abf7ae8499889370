"""One compaction pass: Hermes' ``compress_context`` around ``engine.compress`` (§4).

The gates (:mod:`inspector.host.gates`) decide when to compress; this part runs the pass: the
engine's own block, the summariser-window feasibility check at the first compaction (§2.9), the
rule that two passes never overlap (a timed-out pass still running in the background), the
signature filter on ``compress``'s keyword arguments, the call itself (inline with the live list
under hermes-0.19.0, agent/conversation_compression.py:1034-1060; on a pool thread over a deep copy
with a timeout under [M]), the validation of what it returns, and the commit: the new history,
a real user turn kept (§4.4), the boundary hooks (§4.5) and Hermes' bookkeeping (§4.6).
"""

from __future__ import annotations

import copy
import inspect
import json
import threading
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from inspector.host.assembly import RequestAssembly
from inspector.host.profiles import POOL, GateRules
from inspector.host.recorder import HookRecorder
from inspector.host.settings import HostSettings
from inspector.host.shaping import refused_roles, validate_messages
from inspector.host.values import as_int, jsonable, snapshot
from inspector.trace.model import Fault

SUMMARY_PREFIXES = ("[CONTEXT COMPACTION", "[CONTEXT SUMMARY]", "[PRIOR CONTEXT")
CONTINUE_MARKER = (
    "Continue from the compressed conversation context above. "
    "This marker exists because no human user turn was available."
)
# Fields Hermes restores when a compression attempt is cancelled by its timeout.
TIMEOUT_RESTORE_FIELDS = (
    "_previous_summary",
    "compression_count",
    "_ineffective_compression_count",
    "_fallback_compression_streak",
    "_summary_failure_cooldown_until",
    "_failure_cooldown_deadline",  # where the built-in class keeps the cooldown (on the run's clock)
    "_summary_failure_kind",
    "_consecutive_timeout_failures",
    "_last_summary_error",
    "summary_model",
)


def supported_compress_kwargs(fn: Any, candidates: dict[str, Any]) -> dict[str, Any]:
    """Hermes' signature filter (§4.1): pass only what ``compress`` declares, all with **kwargs."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return {"current_tokens": candidates.get("current_tokens")}
    params = sig.parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return dict(candidates)
    return {k: v for k, v in candidates.items() if k in params}


def is_real_user(message: dict[str, Any]) -> bool:
    if message.get("role") != "user" or message.get("_compressed_summary") or message.get("_todo_snapshot_synthetic"):
        return False
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content) if content else ""
    text = text.strip()
    return bool(text) and not text.startswith(SUMMARY_PREFIXES)


class Compaction:
    """Runs compaction passes for one session and owns what outlives a pass (a timed-out one)."""

    def __init__(self, recorder: HookRecorder, assembly: RequestAssembly, settings: HostSettings, rules: GateRules,
                 *, config: dict[str, Any], session_id: str) -> None:
        self.rec = recorder
        self.asm = assembly
        self.engine = recorder.engine
        self.settings = settings
        self.rules = rules
        self.config = config
        self.session_id = session_id
        self.turn_exit: str | None = None  # why Hermes would have ended the current turn early
        self._feasibility_checked = False  # §2.9 runs once, at the first compaction
        self._abandoned: Any = None  # a timed-out compress still running on the pool
        self._abandoned_noted = False
        # The engine's fields as the timeout left them: the pass can never commit, so what it
        # changes when it finishes late is put back (§4.3).
        self._abandoned_fields: dict[str, Any] = {}

    # -- a pass that timed out ---------------------------------------------------------------
    def _settle_if_done(self) -> None:
        if self._abandoned is not None and self._abandoned.done():
            self._settle_abandoned()

    def _settle_abandoned(self) -> None:
        """A timed-out compress pass finished in the background: undo what it did to the engine."""
        restore, self._abandoned_fields = self._abandoned_fields, {}
        self._abandoned, self._abandoned_noted = None, False
        self.rec.before_call = None
        changed = []
        for name, value in restore.items():
            try:
                if getattr(self.engine, name, None) != value:
                    changed.append(name)
                    setattr(self.engine, name, value)
            except Exception:
                pass
        if changed:
            self.rec.note("the compress pass that timed out finished in the background; it can never commit, so its "
                          f"changes to the engine were undone ({', '.join(changed)})")

    def _abandon(self, future: Any) -> None:
        self._abandoned = future
        self.rec.before_call = self._settle_if_done if future is not None else None

    # -- the pass ------------------------------------------------------------------------------
    def run(self, approx_tokens: int, *, site: str, focus_topic: str | None = None, force: bool = False) -> bool:
        """Hermes' compress_context around ``engine.compress`` (§4). True when a boundary committed."""
        e = self.engine
        rec = self.rec
        asm = self.asm
        if not force:
            blocked_fn = getattr(type(e), "_automatic_compression_blocked", None)
            if callable(blocked_fn):
                out = rec.inline(blocked_fn, e, timeout=self.settings.hook_timeout)
                if out.ok and out.value:
                    rec.note(f"automatic compression blocked by the engine: {self.blocked_reason(approx_tokens)}",
                             site=site)
                    return False
        if not self._feasibility_checked:
            self._feasibility_checked = True
            self._check_aux_feasibility()
        stale = self._abandoned
        if stale is not None:
            # Two passes never overlap for one session (§4.3). A replay reaches the next attempt
            # in milliseconds where the agent would take a provider call's time: give the pass
            # that timed out up to one more timeout to finish, then skip this attempt.
            try:
                # Waited for once; a pass still running after that is stuck, and waiting again at
                # every later gate would only stall the replay.
                stale.result(timeout=0 if self._abandoned_noted else max(0.0, self.settings.compress_timeout))
            except FutureTimeout:
                if not self._abandoned_noted:
                    self._abandoned_noted = True
                    rec.note("compression skipped: the pass that timed out is still running in the background "
                             "(Hermes never runs two passes for one session at once); later attempts are skipped "
                             "at once until it ends", site=site)
                return False
            except Exception:
                pass
            self._settle_abandoned()
        candidates = {"current_tokens": approx_tokens, "focus_topic": focus_topic, "force": force}
        kwargs = supported_compress_kwargs(e.compress, candidates)
        before = asm.history
        # 0.19.0 hands compress the live list and compares the result with a deep copy taken first
        # (agent/conversation_compression.py:1059-1060, 1104); [M] hands a deep copy to a pool thread.
        live = self.rules.compress_input == "live"
        try:
            copied = snapshot(before)
        except Exception as exc:
            rec.fault("host_error", f"could not deep-copy the transcript for compress: {exc}")
            return False
        handed = before if live else copied
        pre = copied if live else before  # the history as it was before the call
        before_objs = list(before) if live else []
        asm.snapshot_of = {} if live else {id(c): (c, o) for c, o in zip(copied, before) if type(c) is dict}
        saved = {k: copy.deepcopy(v) for k, v in vars(e).items() if k in TIMEOUT_RESTORE_FIELDS} if hasattr(e, "__dict__") else {}
        host_thread = threading.current_thread().name
        timeout = self.settings.compress_timeout
        row = rec.row("compress")
        on_pool = row is not None and row.thread == POOL and timeout > 0
        # Inline (0.19.0 has no compress timeout at all), the watchdog allows the longer of the two
        # timeouts, so a summariser call that takes a while is not cut short.
        inline_timeout = max(self.settings.hook_timeout, timeout) if timeout > 0 else self.settings.hook_timeout
        ev, out = rec.hook(
            "compress", handed,
            record_args={"messages": asm.history_ref(), "site": site, "kwargs": jsonable(kwargs),
                         "tokens_before": approx_tokens, "host_thread": host_thread},
            on_pool=on_pool, timeout=timeout if on_pool else inline_timeout, **kwargs,
        )
        if live:
            asm.forget_edited(before_objs, copied)
        if not out.ok:
            if live and (before != copied or (out.fault is not None and out.fault.kind == "timeout")):
                # A hook still running past the watchdog could go on editing the list: continue on a copy.
                asm.history = copied
                ev.note = "compress failed after editing the live transcript; the host restored it"
            if out.fault and out.fault.kind == "timeout" and on_pool:
                for k, v in saved.items():
                    try:
                        setattr(e, k, v)
                    except Exception:
                        pass
                record = getattr(e, "record_timeout_failure", None)
                if callable(record):
                    rec.inline_into(ev, record, out.fault.message, failure_kind="stalled")
                ev.note = "compression timed out before commit: discarded, transcript unchanged"
                ev.state = rec.state()
                self._abandon(out.abandoned)
                if out.abandoned is not None:
                    self._abandoned_fields = {k: copy.deepcopy(v) for k, v in vars(e).items()
                                              if k in TIMEOUT_RESTORE_FIELDS} if hasattr(e, "__dict__") else {}
                if site in ("pre_api", "preflight"):
                    # Hermes ends the turn here (§4.3); the replay goes on with the transcript.
                    self.turn_exit = "context_compression_timeout"
                    rec.fault("context_compression_timeout",
                              "Hermes would end this turn here (failed, context_compression_timeout); "
                              "the replay continues with the transcript", site=site)
            return False
        result = out.value
        if getattr(e, "_last_compress_aborted", False):
            ev.note = f"compression aborted by the engine: {getattr(e, '_last_summary_error', '') or 'no reason given'}"
            ev.result = None
            return False
        if result is handed and not self.rules.in_place_commits:
            if len(copied) != len(before) or copied != before:
                ev.note = (f"compress changed its input list in place ({len(before)} → {len(copied)} messages) and "
                           "returned that same list: Hermes' worker treats returning its snapshot object as a no-op "
                           "and keeps the original (§4.3); return a new list to commit")
            else:
                ev.note = "compress returned its input unchanged (no-op)"
            ev.result = {"$list": ev.args["messages"]["$list"], "unchanged": True}
            return False
        if not result:
            ev.fault = Fault("invalid_return", f"compress returned an empty or falsy value ({result!r:.40}); transcript unchanged")
            return False
        problem = validate_messages(result)
        if problem:
            ev.fault = Fault("invalid_return", problem + "; transcript unchanged")
            return False
        if result == pre:
            if live and before != pre:  # Hermes puts the live list back (conversation_compression.py:1104-1106)
                before[:] = snapshot(pre)
                asm.invalidate()
            ev.note = "compress made no progress (result equals the input); transcript unchanged"
            ev.result = {"$list": ev.args["messages"]["$list"], "unchanged": True}
            return False
        if result is before:
            ev.note = (f"compress edited the live list in place ({len(pre)} → {len(before)} messages) and returned it: "
                       "Hermes 0.19.0 commits it")
        refused = refused_roles(result)
        if refused:
            ev.note = (f"committed with {len(refused)} message(s) in roles providers refuse ({', '.join(refused[:5])}): "
                       "Hermes' request sanitiser drops them from every request")
        self._commit(ev, self._ensure_user_turn(list(result), pre), before, pre, site)
        return True

    def _commit(self, ev: Any, compressed: list[dict[str, Any]], before: list[dict[str, Any]],
                pre: list[dict[str, Any]], site: str) -> None:
        """The compacted history becomes the session's; boundary hooks and Hermes' bookkeeping follow."""
        e = self.engine
        rec = self.rec
        asm = self.asm
        asm.history = compressed
        after_id = asm.history_ref()["$list"]
        rough_after = asm.request_rough()  # from the per-message figures
        ev.result = {"$list": after_id, "tokens_after": rough_after, "count_after": len(compressed),
                     "count_before": len(pre)}
        # Commit: the boundary notifications Hermes sends with a session store, in place (§4.5).
        if rec.wants("on_session_end"):
            rec.hook("on_session_end", self.session_id, before,
                     record_args={"session_id": self.session_id, "messages": ev.args["messages"],
                                  "reason": "compression"})
        if rec.wants("on_session_start"):
            rec.hook("on_session_start", self.session_id,
                     record_args={"session_id": self.session_id, "boundary_reason": "compression"},
                     boundary_reason="compression", old_session_id=self.session_id,
                     platform=self.settings.platform, conversation_id=None)
        asm.anchor = None
        for name, value in (("last_compression_rough_tokens", rough_after), ("last_prompt_tokens", -1),
                            ("last_completion_tokens", 0), ("awaiting_real_usage_after_compression", True)):
            try:
                setattr(e, name, value)
            except Exception:
                pass
        if getattr(e, "_last_compression_made_progress", False):
            record = getattr(type(e), "record_completed_compaction", None)
            if callable(record):
                rec.inline_into(ev, record, e, used_fallback=bool(getattr(e, "_last_summary_fallback_used", False)))
            else:
                try:
                    e._verify_compaction_cleared_threshold = True
                except Exception:
                    pass
        if getattr(e, "_last_summary_from_cache", False) is True:
            ev.note = ("summary from the on-disk summary cache (an earlier replay asked the summariser with "
                       "this exact prompt), so no call_llm this time")
        # The compress event keeps the state compress() left; the writes above get their own
        # event, after the boundary hooks, so the counters move forward through the list.
        commit = rec.note("compaction committed: the host set last_prompt_tokens to -1 until the next "
                          "response (Hermes' sentinel after every boundary)", site=site)
        commit.status = rec.status()
        count = as_int(getattr(e, "compression_count", 0))
        if count >= 2:
            rec.note(f"Session compressed {count} times — accuracy may degrade (Hermes warns here)")

    def _check_aux_feasibility(self) -> None:
        """Hermes' once-per-agent check of the summariser's window, at the first compaction (§2.9)."""
        aux = (self.config.get("auxiliary") or {}).get("compression") or {}
        window = as_int(aux.get("context_length")) if isinstance(aux, dict) else 0
        if window <= 0:
            return
        e = self.engine
        if window < 64_000:
            self.rec.fault("aux_context_too_small", f"the summariser's window ({window:,} tokens, "
                           "auxiliary.compression.context_length) is below 64,000: Hermes raises ValueError here; "
                           "the replay compresses anyway")
            return
        threshold = as_int(getattr(e, "threshold_tokens", 0))
        if threshold and window < threshold:
            ctx = as_int(getattr(e, "context_length", 0)) or self.settings.context_length
            try:
                e.threshold_tokens = window
                e.threshold_percent = window / ctx if ctx else getattr(e, "threshold_percent", 0)
            except Exception as exc:
                self.rec.fault("host_error", f"could not lower the engine's threshold to the summariser's window: {exc}")
                return
            self.rec.note(f"the summariser's window ({window:,} tokens) is below the compression threshold "
                          f"({threshold:,}): Hermes lowers threshold_tokens to {window:,} "
                          f"(threshold_percent {e.threshold_percent:.3f}) and warns", previous_threshold=threshold)

    def blocked_reason(self, tokens: int) -> str:
        """Why the engine refuses to compress, in its own words where it gives any."""
        info = getattr(self.engine, "should_compress_info", None)
        if callable(info) and self.rec.wants("should_compress_info"):
            out = self.rec.inline(info, tokens, timeout=self.settings.hook_timeout)
            if out.ok and isinstance(out.value, tuple) and len(out.value) == 2 and out.value[1]:
                return str(out.value[1])
        e = self.engine
        parts = []
        if as_int(getattr(e, "_fallback_compression_streak", 0)) >= 2:
            parts.append(f"{e._fallback_compression_streak} compactions in a row used the fallback summary "
                         "(no auxiliary LLM answered)")
        if as_int(getattr(e, "_ineffective_compression_count", 0)) >= 2:
            parts.append("the last compactions did not bring the prompt under the threshold")
        return "; ".join(parts) or "_automatic_compression_blocked() returned True"

    def _ensure_user_turn(self, compressed: list[dict[str, Any]], before: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Hermes' _ensure_compressed_has_user_turn (§4.4 step 5)."""
        if any(is_real_user(m) for m in compressed):
            return compressed
        latest = next((m for m in reversed(before) if is_real_user(m)), None)
        if latest is None:
            compressed.append({"role": "user", "content": CONTINUE_MARKER})
            self.rec.note("no real user message survived compression: host appended Hermes' continue marker")
            return compressed
        for i, m in enumerate(compressed):
            if m.get("role") == "assistant" and not (i > 0 and compressed[i - 1].get("role") == "user"):
                compressed.insert(i, copy.deepcopy(latest))
                break
        else:
            compressed.append(copy.deepcopy(latest))
        self.rec.note("no real user message survived compression: host re-inserted the latest user message")
        return compressed
