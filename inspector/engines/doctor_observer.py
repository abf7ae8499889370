"""The doctor's checking observer: the contract checked at each hook the host calls.

``doctor`` drives the one host loop (:class:`inspector.host.host.Host`, built by
:func:`inspector.host.replay.host_for`) over its small built-in session, and attaches this
observer to the host's recorder (:class:`inspector.host.recorder.HookRecorder`): it is told
before and after every engine hook the profile's hook table calls, with the hook's arguments and
outcome, and turns what it sees into findings graded by what Hermes does with each problem. The
host decides which hooks run, when and on which thread; the observer only judges.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from inspector.engines.doctor_static import validate_messages
from inspector.host.guard import CallOutcome
from inspector.host.profiles import HostProfile
from inspector.host.recorder import HOOK_TIMEOUTS_BEFORE_SKIP
from inspector.trace.model import Event

PASS, WARN, FAIL = "pass", "warn", "fail"
TOKEN_ATTRS = ("last_prompt_tokens", "last_completion_tokens", "last_total_tokens", "threshold_tokens",
               "context_length", "compression_count")
# What a hook's result is compared with afterwards: a deep copy of the arguments it may mutate.
_SNAPSHOT = {
    "select_context": lambda a, k: (copy.deepcopy(a[0]), copy.deepcopy(k.get("conversation_messages")),
                                    copy.deepcopy(k.get("incoming_message"))),
    "update_from_response": lambda a, k: copy.deepcopy(a[0]),
    "compress": lambda a, k: copy.deepcopy(a[0]),
    "prune_tool_results_only": lambda a, k: copy.deepcopy(a[0]),
    "on_turn_complete": lambda a, k: copy.deepcopy(a[0]),
}


def describe(outcome: CallOutcome) -> str:
    """What went wrong with a hook call, in the words the doctor's findings use."""
    fault = outcome.fault
    if fault is None:
        return "ok"
    if fault.kind == "timeout":
        if fault.message.startswith("not called"):
            return f"not called: it already timed out {HOOK_TIMEOUTS_BEFORE_SKIP} times (as in a replay)"
        return f"did not return within the timeout ({fault.message})"
    if fault.kind == "exception":
        return f"raised {fault.message}"
    return fault.message


class ContractObserver:
    """Judges every hook call the host makes, adding findings to a doctor report."""

    def __init__(self, engine: Any, report: Any, profile: HostProfile, *, timeout: float, context_length: int,
                 recorder: Any) -> None:
        self.engine = engine
        self.report = report
        self.profile = profile
        self.timeout = timeout
        self.context_length = context_length
        self.rec = recorder
        self.compressed = False
        self.called: dict[str, int] = {}
        self._bad: set[str] = set()  # findings said once per session

    # -- the recorder's calls ------------------------------------------------------------
    def before(self, hook: str, args: tuple, kwargs: dict[str, Any]) -> Any:
        self.called[hook] = self.called.get(hook, 0) + 1
        snap = _SNAPSHOT.get(hook)
        try:
            return snap(args, kwargs) if snap is not None else None
        except Exception:  # an argument deepcopy refuses: nothing to compare with
            return None

    def after(self, hook: str, args: tuple, kwargs: dict[str, Any], event: Event, outcome: CallOutcome,
              before: Any) -> None:
        check = getattr(self, "_" + hook, None)
        if check is not None:
            check(args, kwargs, event, outcome, before)
        elif not outcome.ok:
            self.fault(hook, outcome, status=WARN)

    # -- helpers -----------------------------------------------------------------------------
    def fault(self, hook: str, out: CallOutcome, *, status: str = FAIL, context: str = "") -> None:
        msg = f"{hook}{context} {describe(out)}"
        if out.fault is not None and out.fault.kind == "timeout" and not out.fault.message.startswith("not called"):
            msg += f" (timeout {self.timeout:g}s)"
        self.report.add(status, f"hook:{hook}", msg, (out.fault.traceback or "") if out.fault else "")

    def check_attrs(self, after: str) -> None:
        for attr in TOKEN_ATTRS:
            if attr in self._bad:
                continue
            try:
                value = getattr(self.engine, attr)
            except Exception as exc:
                self._bad.add(attr)
                self.report.add(FAIL, "tokens", f"reading {attr} after {after} raised {type(exc).__name__}: {exc}")
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                self._bad.add(attr)
                self.report.add(FAIL, "tokens", f"{attr} is {value!r} ({type(value).__name__}) after {after}; "
                                "the host needs an int")

    def validate(self, hook: str, result: Any, *, request: bool = False) -> bool:
        """Each problem graded by what Hermes does with it; False when Hermes could not use the result."""
        problems = validate_messages(result, request=request)
        for status, text in problems:
            self.report.add(status, f"validate:{hook}", f"{hook} result: {text}")
        if not problems:
            self.report.add(PASS, f"validate:{hook}", f"{hook} returned {len(result)} valid OpenAI messages"
                            + (" (request)" if request else ""))
        return not any(status == FAIL for status, _ in problems)

    def mutation(self, hook: str, label: str, before: Any, after: Any, *, status: str = WARN) -> None:
        if before != after:
            self.report.add(status, f"mutation:{hook}", f"{hook} mutated its {label} in place")

    # -- the session's start --------------------------------------------------------------------
    def started(self) -> None:
        """What the profile's host skips entirely is said once, at the start."""
        for hook in ("on_session_start", "on_session_end"):
            if not self.rec.has(hook):  # a duck engine: Hermes looks before it calls these
                self.report.add(WARN, f"hook:{hook}", f"{hook} (Hermes swallows this) not called: the engine has no "
                                f"callable {hook}, which Hermes checks for before calling it")
        if not self.profile.has("select_context"):
            self.report.add(PASS, "hook:select_context", f"not called: {self.profile.name} has no select_context")
        elif not self.rec.wants("select_context"):
            self.report.add(PASS, "hook:select_context", "not overridden: the host skips it (no call, no copies)")

    def _update_model(self, args: tuple, kwargs: dict, ev: Event, out: CallOutcome, before: Any) -> None:
        ctx_len = kwargs.get("context_length")
        if not out.ok:
            self.fault("update_model", out)
        else:
            ok = True
            if getattr(self.engine, "context_length", None) != ctx_len:
                ok = False
                self.report.add(WARN, "hook:update_model", f"context_length is {getattr(self.engine, 'context_length', None)!r} "
                                f"after update_model(context_length={ctx_len})")
            tt = getattr(self.engine, "threshold_tokens", None)
            if not isinstance(tt, int) or isinstance(tt, bool) or tt <= 0 or tt > ctx_len:
                ok = False
                self.report.add(WARN, "hook:update_model", f"threshold_tokens is {tt!r} after update_model "
                                f"(expected 0 < t <= {ctx_len})")
            if ok:
                self.report.add(PASS, "hook:update_model", f"context_length={ctx_len}, threshold_tokens={tt}")
        self.check_attrs("update_model")

    def _bind_session_state(self, args: tuple, kwargs: dict, ev: Event, out: CallOutcome, before: Any) -> None:
        if not out.ok:  # agent/agent_init.py:1926-1931 calls it in try/except: pass
            self.fault("bind_session_state", out, status=WARN, context=" (Hermes swallows this)")

    def _get_tool_schemas(self, args: tuple, kwargs: dict, ev: Event, out: CallOutcome, before: Any) -> None:
        if not out.ok:
            self.fault("get_tool_schemas", out)
            return
        if not isinstance(out.value, list):
            self.report.add(FAIL, "hook:get_tool_schemas", f"get_tool_schemas returned {type(out.value).__name__}, not a list")
            return
        names = []
        for s in out.value:
            fn = s.get("function", s) if isinstance(s, dict) and s.get("type") == "function" else s
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                self.report.add(WARN, "hook:get_tool_schemas", f"schema {str(s)[:80]!r} has no string name; Hermes skips it")
            else:
                names.append(fn["name"])
        self.report.add(PASS, "hook:get_tool_schemas", f"{len(names)} engine tool(s)" + (": " + ", ".join(names) if names else ""))

    def _on_session_start(self, args: tuple, kwargs: dict, ev: Event, out: CallOutcome, before: Any) -> None:
        if out.ok:
            return
        if kwargs.get("boundary_reason"):
            self.fault("on_session_start", out, status=WARN, context=" (boundary after compression; Hermes swallows this)")
        else:
            self.fault("on_session_start", out, status=WARN, context=" (Hermes swallows this)")

    # -- each request ---------------------------------------------------------------------------
    def _select_context(self, args: tuple, kwargs: dict, ev: Event, out: CallOutcome, before: Any) -> None:
        first = self.called.get("select_context") == 1
        if not out.ok:
            self.fault("select_context", out, context=f" (turn {self.rec.turn}; Hermes logs it and sends the unmodified request)")
            return
        value = out.value
        if before is not None and (first or value is not None):
            snap_req, snap_conv, snap_inc = before
            self.mutation("select_context", "conversation_messages (clones; harmless, but a sign of confusion)",
                          snap_conv, kwargs.get("conversation_messages"))
            self.mutation("select_context", "incoming_message", snap_inc, kwargs.get("incoming_message"))
            if value is not args[0]:
                self.mutation("select_context", "request_messages (this changes the request in place)", snap_req, args[0])
        if value is None:
            if first:
                self.report.add(PASS, "hook:select_context", "returned None (request unchanged)")
            return
        if not isinstance(value, list) or not value or not all(isinstance(m, dict) for m in value):
            self.report.add(FAIL, "validate:select_context", f"select_context returned {type(value).__name__}"
                            f"{' (empty)' if value == [] else ''}; Hermes ignores it as 'not a non-empty list of dicts'")
            return
        if first:
            self.validate("select_context", value, request=True)

    def _update_from_response(self, args: tuple, kwargs: dict, ev: Event, out: CallOutcome, before: Any) -> None:
        if not out.ok:
            self.fault("update_from_response", out, context=f" (turn {self.rec.turn})")
            return
        usage = args[0]
        self.mutation("update_from_response", "usage dict", before, usage)
        prompt = (before or {}).get("prompt_tokens")
        got = getattr(self.engine, "last_prompt_tokens", None)
        if got != prompt and "update_from_response" not in self._bad:
            self._bad.add("update_from_response")
            self.report.add(WARN if isinstance(got, int) else FAIL, "tokens",
                            f"last_prompt_tokens is {got!r} after update_from_response(prompt_tokens={prompt})")
        self.check_attrs("update_from_response")

    def _handle_tool_call(self, args: tuple, kwargs: dict, ev: Event, out: CallOutcome, before: Any) -> None:
        name, tool_args = args[0], json.dumps(args[1]) if len(args) > 1 else "{}"
        if out.fault is not None and out.fault.kind == "timeout":
            self.fault("handle_tool_call", out)
        elif not out.ok:
            self.report.add(WARN, "hook:handle_tool_call", f"handle_tool_call({name!r}, {tool_args}) {describe(out)}; "
                            "Hermes turns this into an error result", out.fault.traceback or "")
        elif not isinstance(out.value, str):
            self.report.add(FAIL, "hook:handle_tool_call", f"handle_tool_call({name!r}) returned "
                            f"{type(out.value).__name__}; the result must be a string")
        else:
            self.report.add(PASS, "hook:handle_tool_call", f"handle_tool_call({name!r}, {tool_args}) returned a string")

    # -- the gates and the pass --------------------------------------------------------------------
    def _should_compress(self, args: tuple, kwargs: dict, ev: Event, out: CallOutcome, before: Any) -> None:
        if not out.ok:
            self.fault("should_compress", out, context=f"({args[0]})")
            return
        if not isinstance(out.value, bool) and "should_compress-type" not in self._bad:
            self._bad.add("should_compress-type")
            self.report.add(WARN, "hook:should_compress", f"should_compress returned {type(out.value).__name__}, "
                            "not bool (Hermes uses its truth value)")

    def _should_compress_info(self, args: tuple, kwargs: dict, ev: Event, out: CallOutcome, before: Any) -> None:
        if not out.ok:
            self.fault("should_compress_info", out)
        elif not (isinstance(out.value, tuple) and len(out.value) == 2
                  and (out.value[1] is None or isinstance(out.value[1], str))):
            if "info-shape" not in self._bad:
                self._bad.add("info-shape")
                self.report.add(FAIL, "hook:should_compress_info", f"should_compress_info returned {out.value!r}; "
                                "expected (bool, str | None)")

    def _prune_tool_results_only(self, args: tuple, kwargs: dict, ev: Event, out: CallOutcome, before: Any) -> None:
        messages = args[0]
        if not out.ok:
            self.fault("prune_tool_results_only", out, status=WARN, context=" (Hermes swallows this)")
        elif not (isinstance(out.value, tuple) and len(out.value) == 2 and isinstance(out.value[1], int)):
            self.report.add(FAIL, "hook:prune_tool_results_only", f"returned {type(out.value).__name__}; expected (list, int)")
        else:
            pruned, count = out.value
            if pruned is not messages:
                self.mutation("prune_tool_results_only", "input list", before, messages)
                if count:
                    self.validate("prune_tool_results_only", pruned)

    def _compress(self, args: tuple, kwargs: dict, ev: Event, out: CallOutcome, before: Any) -> None:
        # [M]: a private deep snapshot on a pooled thread; 0.19.0: the live list on the agent's
        # thread (agent/conversation_compression.py:1059-1060), an in-place edit then commits.
        self.compressed = True
        handed = args[0]
        live = self.profile.gates.compress_input == "live"
        if not out.ok:
            self.fault("compress", out, context=" (Hermes discards the attempt)")
            return
        if ev.thread:
            self.report.add(PASS, "thread:pool", f"compress ran on pool thread {ev.thread}, not the thread that built "
                            "the engine")
        if live:
            if out.value is handed and handed != before:
                self.report.add(PASS, "hook:compress", "compress edited the live list in place and returned it: "
                                f"{self.profile.name} commits that")
        elif handed != before:
            self.report.add(WARN, "mutation:compress", "compress mutated its input list in place (Hermes [M] passes a "
                            "private snapshot, but Hermes 0.19.0 passes the live transcript and restores it only if "
                            "the result equals the input)")
        result = out.value
        if getattr(self.engine, "_last_compress_aborted", False):
            self.report.add(WARN, "hook:compress", "compress set _last_compress_aborted: Hermes keeps the original messages")
            return
        if isinstance(result, list) and result == before:
            self.report.add(WARN, "hook:compress", "compress made no progress (result equals the input)")
            return
        if result is handed and not live:
            self.report.add(FAIL, "hook:compress", "compress returned its own (changed) input list: Hermes [M] treats "
                            "returning the snapshot object as a no-op and keeps the original, so the "
                            f"{len(before or ())} → {len(result)} messages are never committed; return a new list")
            return
        if not self.validate("compress", result):
            return
        self.report.add(PASS, "hook:compress", f"compress({', '.join(f'{k}=' for k in kwargs)}…) {len(before or ())} → "
                        f"{len(result)} messages in {out.duration:.2f}s; "
                        f"compression_count={getattr(self.engine, 'compression_count', '?')!r}")

    # -- the turn's end and the session's -----------------------------------------------------------
    def _on_turn_complete(self, args: tuple, kwargs: dict, ev: Event, out: CallOutcome, before: Any) -> None:
        if not out.ok:
            self.fault("on_turn_complete", out, status=WARN, context=" (Hermes logs a warning)")
        elif self.called.get("on_turn_complete") == 1:
            self.mutation("on_turn_complete", "messages (a clone; harmless)", before, args[0])
            self.report.add(PASS, "hook:on_turn_complete", "accepted the transcript clone, usage and turn metadata")

    def _on_session_end(self, args: tuple, kwargs: dict, ev: Event, out: CallOutcome, before: Any) -> None:
        if not out.ok:
            self.fault("on_session_end", out, status=WARN, context=" (Hermes swallows this)")
