"""Engine doctor: load an engine the way Hermes would and say precisely what it gets wrong.

Each finding is pass / warn / fail with the reason. Static checks (loading path, host imports,
deep copy, ABC conformance, signatures) come first; then every hook runs over a small built-in
session whose token figures climb past any sane threshold so ``compress`` runs; everything the
engine returns is validated; last comes the thread contract (``compress`` on a pool thread,
and two sessions compressing at once on one shared instance).

Engines are untrusted: every call is guarded by a timeout on a daemon thread and every check
is wrapped, so a broken engine produces findings, never a crash. The per-hook driver
(:class:`HookDriver`) is our own small loop calling hooks as Hermes does (agent/turn_context.py:563-684, agent/conversation_loop.py:1110-5150 of hermes-agent 0.19.0); when
the host's ``replay`` is available it can take the driver's place (see :func:`run_doctor`).
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspector.config import cfg_get
from inspector.engines.contract import engine_overrides_hook
from inspector.engines.doctor_runtime import AgentThread, CallOutcome, call_on_new_thread
from inspector.engines.doctor_static import (
    check_import,
    imported_sources,
    scan_imports,
    source_files,
    validate_messages,
)
from inspector.engines.duck import describe as describe_duck

PASS, WARN, FAIL = "pass", "warn", "fail"
TOKEN_ATTRS = ("last_prompt_tokens", "last_completion_tokens", "last_total_tokens", "threshold_tokens",
               "context_length", "compression_count")
TIMEOUTS_BEFORE_SKIP = 2  # as HOOK_TIMEOUTS_BEFORE_SKIP in the host
SESSION_ID = "20260101_120000_d0c70r"


@dataclass
class Finding:
    status: str
    check: str
    message: str
    details: str = ""
    count: int = 1  # the same finding seen this many times (e.g. on every turn)

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "check": self.check, "message": self.message, "details": self.details,
                "count": self.count}


@dataclass
class DoctorReport:
    engine: str
    findings: list[Finding] = field(default_factory=list)
    source: str = ""
    path: str = ""
    profile: str = ""  # the host profile whose Hermes the checks follow

    @property
    def failed(self) -> bool:
        return any(f.status == FAIL for f in self.findings)

    def counts(self) -> dict[str, int]:
        return {s: sum(f.status == s for f in self.findings) for s in (PASS, WARN, FAIL)}

    def add(self, status: str, check: str, message: str, details: str = "") -> Finding:
        for existing in self.findings:
            if (existing.status, existing.check, existing.message) == (status, check, message) and status != PASS:
                existing.count += 1
                return existing
        finding = Finding(status, check, message, details)
        self.findings.append(finding)
        return finding

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "source": self.source, "path": self.path, "host_profile": self.profile,
                "failed": self.failed,
                "counts": self.counts(), "findings": [f.to_json() for f in self.findings]}


# -- the built-in session -----------------------------------------------------------------------
def doctor_session(marker: str = "", turns: int = 8) -> list[list[dict[str, Any]]]:
    """Turns of a small coding session: user asks, assistant calls tools, results, answer.

    ``marker`` tags every text so results of concurrently compressed sessions can be told apart.
    """
    tag = f" [{marker}]" if marker else ""
    out = []
    for t in range(turns):
        cid = f"call_{marker or 'x'}_{t}_"
        body = "\n".join(f"{t}:{i} def handler_{t}_{i}(x): return x * {i}  # {marker or 'src'} line" for i in range(40))
        out.append([
            {"role": "user", "content": f"Step {t}{tag}: read module_{t}.py and fix the failing test."},
            {"role": "assistant", "content": f"Reading module_{t}.py{tag}.", "tool_calls": [
                {"id": cid + "a", "type": "function", "function": {"name": "read_file", "arguments": json.dumps({"path": f"module_{t}.py"})}},
                {"id": cid + "b", "type": "function", "function": {"name": "run_tests", "arguments": json.dumps({"k": f"test_{t}"})}},
            ]},
            {"role": "tool", "tool_call_id": cid + "a", "content": body + tag},
            {"role": "tool", "tool_call_id": cid + "b", "content": f"FAILED test_{t} - AssertionError{tag}\n" * 5},
            {"role": "assistant", "content": f"Fixed handler_{t}_3 in module_{t}.py; tests pass now{tag}."},
        ])
    return out


def _usage(prompt: int, completion: int = 120) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "input_tokens": prompt, "output_tokens": completion, "cache_read_tokens": 0, "cache_write_tokens": 0,
            "reasoning_tokens": 0}


def compress_kwargs(engine: Any, current_tokens: int, *, focus_topic: str | None = None, force: bool = False,
                    memory_context: str = "") -> dict[str, Any]:
    """Hermes' signature filter, the host's one implementation (agent/conversation_compression.py:195-235)."""
    from inspector.host.host import supported_compress_kwargs

    candidates: dict[str, Any] = {"current_tokens": current_tokens, "focus_topic": focus_topic, "force": force}
    if memory_context:  # only a non-empty memory context is offered (conversation_compression.py:215)
        candidates["memory_context"] = memory_context
    return supported_compress_kwargs(engine.compress, candidates)


# -- the driver -------------------------------------------------------------------------------
class HookDriver:
    """Calls every hook over the doctor session the way the Hermes host does, and checks results."""

    def __init__(self, loaded: Any, report: DoctorReport, timeout: float, agent: AgentThread) -> None:
        self.loaded = loaded
        self.engine = loaded.engine
        self.report = report
        self.timeout = timeout
        self.agent = agent
        self.config = loaded.config
        from inspector.host.profiles import profile_for

        self.profile = profile_for(self.config or {})  # which hooks the checked Hermes calls, and how
        self.compressed = False
        self.called: dict[str, int] = {}
        self._bad_attrs: set[str] = set()
        self._timeouts: dict[str, int] = {}  # per hook; two and it is not called again (as in a replay)

    # helpers ---------------------------------------------------------------------------------
    def call(self, hook: str, *args: Any, pool: bool = False, **kwargs: Any) -> CallOutcome:
        fn = getattr(self.engine, hook, None)
        if not callable(fn):
            out = CallOutcome(error=f"engine has no callable {hook}", error_type="AttributeError",
                              error_message=f"no callable {hook}")
            return out
        if self._timeouts.get(hook, 0) >= TIMEOUTS_BEFORE_SKIP:
            # A hook stuck for good would cost the timeout (and a thread) at every later call.
            return CallOutcome(error=f"not called: {hook} already timed out {TIMEOUTS_BEFORE_SKIP} times",
                               error_type="Skipped", error_message=f"{hook} timed out {TIMEOUTS_BEFORE_SKIP} times before")
        self.called[hook] = self.called.get(hook, 0) + 1
        if pool:
            out = call_on_new_thread(fn, *args, timeout=self.timeout, **kwargs)
        else:
            out = self.agent.call(fn, *args, timeout=self.timeout, **kwargs)
        if out.timed_out:
            self._timeouts[hook] = self._timeouts.get(hook, 0) + 1
        return out

    def fault(self, hook: str, out: CallOutcome, *, status: str = FAIL, context: str = "") -> None:
        msg = f"{hook}{context} {out.describe()}"
        if out.timed_out:
            msg += f" (timeout {self.timeout:g}s)"
        self.report.add(status, f"hook:{hook}", msg, out.error or "")

    def check_attrs(self, after: str) -> None:
        for attr in TOKEN_ATTRS:
            if attr in self._bad_attrs:
                continue
            try:
                value = getattr(self.engine, attr)
            except Exception as exc:
                self._bad_attrs.add(attr)
                self.report.add(FAIL, "tokens", f"reading {attr} after {after} raised {type(exc).__name__}: {exc}")
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                self._bad_attrs.add(attr)
                self.report.add(FAIL, "tokens", f"{attr} is {value!r} ({type(value).__name__}) after {after}; the host needs an int")

    def validate(self, hook: str, result: Any, *, request: bool = False) -> bool:
        """Each problem graded by what Hermes does with it; False when Hermes could not use the result."""
        problems = validate_messages(result, request=request)
        for status, text in problems:
            self.report.add(status, f"validate:{hook}", f"{hook} result: {text}")
        if not problems:
            self.report.add(PASS, f"validate:{hook}", f"{hook} returned {len(result)} valid OpenAI messages"
                            + (" (request)" if request else ""))
        return not any(status == FAIL for status, _ in problems)

    def mutation(self, hook: str, label: str, before: Any, after: Any, *, status: str = WARN, why: str = "") -> None:
        if before != after:
            self.report.add(status, f"mutation:{hook}", f"{hook} mutated its {label} in place" + (f" ({why})" if why else ""))

    # the session ------------------------------------------------------------------------------
    def run(self) -> list[dict[str, Any]]:
        from inspector.engines.loading import model_runtime

        rt = model_runtime(self.config)
        ctx_len = max(int(rt.context_length or 0), 64_000)
        engine = self.engine
        if self.loaded.info.source != "built-in":
            thresholds = cfg_get(self.config, "compression.model_thresholds", {}) or {}
            with contextlib.suppress(Exception):
                engine.model_thresholds = dict(thresholds)
        out = self.call("update_model", model=rt.model, context_length=ctx_len, base_url=rt.base_url,
                        api_key="", provider=rt.provider, api_mode=rt.api_mode)
        if not out.ok:
            self.fault("update_model", out)
        else:
            ok = True
            if getattr(engine, "context_length", None) != ctx_len:
                ok = False
                self.report.add(WARN, "hook:update_model", f"context_length is {getattr(engine, 'context_length', None)!r} after update_model(context_length={ctx_len})")
            tt = getattr(engine, "threshold_tokens", None)
            if not isinstance(tt, int) or isinstance(tt, bool) or tt <= 0 or tt > ctx_len:
                ok = False
                self.report.add(WARN, "hook:update_model", f"threshold_tokens is {tt!r} after update_model (expected 0 < t <= {ctx_len})")
            if ok:
                self.report.add(PASS, "hook:update_model", f"context_length={ctx_len}, threshold_tokens={tt}")
        self.check_attrs("update_model")

        schemas: list[Any] = []
        out = self.call("get_tool_schemas")
        if not out.ok:
            self.fault("get_tool_schemas", out)
        elif not isinstance(out.value, list):
            self.report.add(FAIL, "hook:get_tool_schemas", f"get_tool_schemas returned {type(out.value).__name__}, not a list")
        else:
            for s in out.value:
                fn = s.get("function", s) if isinstance(s, dict) and s.get("type") == "function" else s
                if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                    self.report.add(WARN, "hook:get_tool_schemas", f"schema {str(s)[:80]!r} has no string name; Hermes skips it")
                else:
                    schemas.append(fn)
            self.report.add(PASS, "hook:get_tool_schemas", f"{len(schemas)} engine tool(s)" + (": " + ", ".join(s["name"] for s in schemas) if schemas else ""))

        home = str(self.loaded.sandbox.path)
        out = self.call("on_session_start", SESSION_ID, hermes_home=home, platform="cli", model=rt.model,
                        context_length=ctx_len, conversation_id=None)
        if not out.ok:
            self.fault("on_session_start", out, status=WARN, context=" (Hermes swallows this)")

        turns = doctor_session()
        messages: list[dict[str, Any]] = []
        system = {"role": "system", "content": "You are a coding agent. Use tools to read and fix code."}
        n = len(turns)
        for t, turn in enumerate(turns):
            user, call_msg, *results, final = turn
            messages.append(copy.deepcopy(user))
            prompt = int(ctx_len * min(0.97, 0.2 + 0.8 * t / max(1, n - 1)))
            self._select(system, messages, user, ctx_len, t)
            self._response(prompt, t)
            messages += copy.deepcopy([call_msg, *results])
            if t == 1 and schemas:
                self._engine_tool(schemas[0]["name"], messages)
            messages = self._post_tool(messages, t, prompt)
            self._response(prompt + 500, t)
            messages.append(copy.deepcopy(final))
            self._turn_complete(messages, prompt, t)
        if not self.compressed:
            self.report.add(WARN, "hook:should_compress", f"should_compress never returned True, even at 97% of a {ctx_len}-token window; calling compress(force=True) as /compress would")
            messages = self._compress(messages, int(ctx_len * 0.97), force=True)
        self._finish(messages)
        return messages

    def _select(self, system: dict, messages: list, user: dict, ctx_len: int, t: int) -> None:
        if not self.profile.has("select_context"):
            if t == 0:
                self.report.add(PASS, "hook:select_context", f"not called: {self.profile.name} has no select_context")
            return
        if not engine_overrides_hook(self.engine, "select_context"):
            if t == 0:
                self.report.add(PASS, "hook:select_context", "not overridden: the host skips it (no call, no copies)")
            return
        request = [copy.deepcopy(system)] + copy.deepcopy(messages)
        conv = copy.deepcopy(messages)
        incoming = copy.deepcopy(user)
        snap_conv, snap_inc, snap_req = copy.deepcopy(conv), copy.deepcopy(incoming), copy.deepcopy(request)
        out = self.call("select_context", request, conversation_messages=conv, incoming_message=incoming, budget_tokens=ctx_len)
        if not out.ok:
            self.fault("select_context", out, context=f" (turn {t}; Hermes logs it and sends the unmodified request)")
            return
        value = out.value
        if t == 0 or value is not None:
            self.mutation("select_context", "conversation_messages (clones; harmless, but a sign of confusion)", snap_conv, conv)
            self.mutation("select_context", "incoming_message", snap_inc, incoming)
            if value is not request:
                self.mutation("select_context", "request_messages (this changes the request in place)", snap_req, request)
        if value is None:
            if t == 0:
                self.report.add(PASS, "hook:select_context", "returned None (request unchanged)")
            return
        if not isinstance(value, list) or not value or not all(isinstance(m, dict) for m in value):
            self.report.add(FAIL, "validate:select_context", f"select_context returned {type(value).__name__}"
                            f"{' (empty)' if value == [] else ''}; Hermes ignores it as 'not a non-empty list of dicts'")
            return
        if t == 0 or self.called.get("select_context") == 1:
            self.validate("select_context", value, request=True)

    def _response(self, prompt: int, t: int) -> None:
        usage = _usage(prompt)
        snap = dict(usage)
        out = self.call("update_from_response", usage)
        if not out.ok:
            self.fault("update_from_response", out, context=f" (turn {t})")
            return
        self.mutation("update_from_response", "usage dict", snap, usage)
        got = getattr(self.engine, "last_prompt_tokens", None)
        if got != prompt and "update_from_response" not in self._bad_attrs:
            self._bad_attrs.add("update_from_response")
            self.report.add(WARN if isinstance(got, int) else FAIL, "tokens",
                            f"last_prompt_tokens is {got!r} after update_from_response(prompt_tokens={prompt})")
        self.check_attrs("update_from_response")

    def _engine_tool(self, name: str, messages: list) -> None:
        out = self.call("handle_tool_call", name, {}, messages=messages)
        if out.timed_out:
            self.fault("handle_tool_call", out)
        elif not out.ok:
            self.report.add(WARN, "hook:handle_tool_call", f"handle_tool_call({name!r}, {{}}) {out.describe()}; Hermes turns this into an error result", out.error or "")
        elif not isinstance(out.value, str):
            self.report.add(FAIL, "hook:handle_tool_call", f"handle_tool_call({name!r}) returned {type(out.value).__name__}; the result must be a string")
        else:
            self.report.add(PASS, "hook:handle_tool_call", f"handle_tool_call({name!r}, {{}}) returned a string")

    def _post_tool(self, messages: list, t: int, prompt: int) -> list:
        # Hermes (agent/conversation_loop.py:5115-5146 of hermes-agent 0.19.0): last_prompt_tokens when positive, 0 for the -1 sentinel, else its rough
        # estimate of the request, which for this synthetic session is the prompt size fed in.
        raw = getattr(self.engine, "last_prompt_tokens", 0)
        tokens = raw if isinstance(raw, int) and raw > 0 else (0 if raw == -1 else prompt)
        out = self.call("should_compress", tokens)
        if not out.ok:
            self.fault("should_compress", out, context=f"({tokens})")
            return messages
        if not isinstance(out.value, bool) and "should_compress-type" not in self._bad_attrs:
            self._bad_attrs.add("should_compress-type")
            self.report.add(WARN, "hook:should_compress", f"should_compress returned {type(out.value).__name__}, not bool (Hermes uses its truth value)")
        if self.profile.has("should_compress_info") and callable(getattr(self.engine, "should_compress_info", None)):
            self._compress_info(tokens)  # Hermes looks before it calls
        if out.value:
            return self._compress(messages, tokens)
        if self.profile.has("prune_tool_results_only") and engine_overrides_hook(self.engine, "prune_tool_results_only"):
            snap = copy.deepcopy(messages)
            pr = self.call("prune_tool_results_only", messages, current_tokens=tokens)
            if not pr.ok:
                self.fault("prune_tool_results_only", pr, status=WARN, context=" (Hermes swallows this)")
            elif not (isinstance(pr.value, tuple) and len(pr.value) == 2 and isinstance(pr.value[1], int)):
                self.report.add(FAIL, "hook:prune_tool_results_only", f"returned {type(pr.value).__name__}; expected (list, int)")
            else:
                pruned, count = pr.value
                if pruned is not messages:
                    self.mutation("prune_tool_results_only", "input list", snap, messages)
                if count and pruned is not messages and self.validate("prune_tool_results_only", pruned):
                    return list(pruned)
                if pruned is messages:
                    return messages
        return messages

    def _compress_info(self, tokens: int) -> None:
        info = self.call("should_compress_info", tokens)
        if not info.ok:
            self.fault("should_compress_info", info)
        elif not (isinstance(info.value, tuple) and len(info.value) == 2 and (info.value[1] is None or isinstance(info.value[1], str))):
            if "info-shape" not in self._bad_attrs:
                self._bad_attrs.add("info-shape")
                self.report.add(FAIL, "hook:should_compress_info", f"should_compress_info returned {info.value!r}; expected (bool, str | None)")

    def _compress(self, messages: list, tokens: int, *, force: bool = False) -> list:
        # [M]: a private deep snapshot on a pooled thread; 0.19.0: the live list on the agent's
        # thread (agent/conversation_compression.py:1059-1060), an in-place edit then commits.
        live = self.profile.gates.compress_input == "live"
        snapshot = messages if live else copy.deepcopy(messages)
        before = copy.deepcopy(snapshot)
        kwargs = compress_kwargs(self.engine, tokens, force=force)
        pool = self.profile.on_pool("compress")
        out = self.call("compress", snapshot, pool=pool, **kwargs)
        self.compressed = True
        if not out.ok:
            if live and snapshot != before:
                messages[:] = before
            self.fault("compress", out, context=" (Hermes discards the attempt)")
            return messages
        if pool:
            self.report.add(PASS, "thread:pool", f"compress ran on pool thread {out.thread_name}, not the thread that built the engine")
        if live:
            if out.value is snapshot and snapshot != before:
                self.report.add(PASS, "hook:compress", f"compress edited the live list in place and returned it: "
                                f"{self.profile.name} commits that")
        elif snapshot != before:
            self.report.add(WARN, "mutation:compress", "compress mutated its input list in place (Hermes [M] passes a private snapshot, "
                            "but Hermes 0.19.0 passes the live transcript and restores it only if the result equals the input)")
        result = out.value
        if getattr(self.engine, "_last_compress_aborted", False):
            self.report.add(WARN, "hook:compress", "compress set _last_compress_aborted: Hermes keeps the original messages")
            return messages
        if isinstance(result, list) and result == before:
            if live and snapshot != before:
                messages[:] = before  # Hermes puts the live list back (conversation_compression.py:1104-1106)
            self.report.add(WARN, "hook:compress", "compress made no progress (result equals the input)")
            return messages
        if result is snapshot and not live:
            self.report.add(FAIL, "hook:compress", f"compress returned its own (changed) input list: Hermes [M] treats "
                            f"returning the snapshot object as a no-op and keeps the original, so the {len(before)} → "
                            f"{len(result)} messages are never committed; return a new list")
            return messages
        if not self.validate("compress", result):
            return messages
        n_before, n_after = len(before), len(result)
        self.report.add(PASS, "hook:compress", f"compress({', '.join(f'{k}=' for k in kwargs)}…) {n_before} → {n_after} messages"
                        f" in {out.duration_s:.2f}s; compression_count={getattr(self.engine, 'compression_count', '?')!r}")
        # Hermes' bookkeeping after a committed boundary (agent/conversation_compression.py:1450-1480) and the boundary hook (1375-1395).
        for attr, value in (("last_prompt_tokens", -1), ("last_completion_tokens", 0), ("awaiting_real_usage_after_compression", True)):
            with contextlib.suppress(Exception):
                setattr(self.engine, attr, value)
        sess = self.call("on_session_start", SESSION_ID, boundary_reason="compression", old_session_id=SESSION_ID,
                         platform="cli", conversation_id=None)
        if not sess.ok:
            self.fault("on_session_start", sess, status=WARN, context=" (boundary after compression; Hermes swallows this)")
        return list(result)

    def _turn_complete(self, messages: list, prompt: int, t: int) -> None:
        if not self.profile.has("on_turn_complete") or not engine_overrides_hook(self.engine, "on_turn_complete"):
            return
        clone = copy.deepcopy(messages)
        snap = copy.deepcopy(clone)
        out = self.call("on_turn_complete", clone, usage=_usage(prompt), turn_id=f"turn-{t}", task_id=None,
                        api_call_count=2, interrupted=False, failed=False, turn_exit_reason="completed")
        if not out.ok:
            self.fault("on_turn_complete", out, status=WARN, context=" (Hermes logs a warning)")
        elif t == 0:
            self.mutation("on_turn_complete", "messages (a clone; harmless)", snap, clone)
            self.report.add(PASS, "hook:on_turn_complete", "accepted the transcript clone, usage and turn metadata")

    def _finish(self, messages: list) -> None:
        out = self.call("update_from_response", {})
        if not out.ok:
            self.fault("update_from_response", out, context=" with an empty usage dict (Hermes sends {} while awaiting real usage)")
        if not callable(getattr(self.engine, "get_status", None)):
            self.report.add(WARN, "hook:get_status", "no get_status: Hermes' host never calls it, but the inspector "
                            "shows no engine status for this engine")
        elif not (out := self.call("get_status")).ok:
            self.fault("get_status", out)
        elif not isinstance(out.value, dict):
            self.report.add(FAIL, "hook:get_status", f"get_status returned {type(out.value).__name__}, not a dict")
        else:
            self.report.add(PASS, "hook:get_status", f"get_status keys: {', '.join(map(str, out.value))}")
        out = self.call("on_session_end", SESSION_ID, copy.deepcopy(messages))
        if not out.ok:
            self.fault("on_session_end", out, status=WARN, context=" (Hermes swallows this)")
        out = self.call("on_session_reset")
        if not out.ok:
            self.fault("on_session_reset", out)
        else:
            left = {a: getattr(self.engine, a, None) for a in ("last_prompt_tokens", "last_completion_tokens", "last_total_tokens", "compression_count")}
            nonzero = {a: v for a, v in left.items() if v != 0}
            if nonzero:
                self.report.add(WARN, "hook:on_session_reset", f"on_session_reset left {nonzero} (Hermes' default zeroes them)")
            else:
                self.report.add(PASS, "hook:on_session_reset", "token counters and compression_count zeroed")
        self.check_attrs("the session")
        if not any(f.check == "tokens" for f in self.report.findings):
            self.report.add(PASS, "tokens", "token attributes stayed ints; last_prompt_tokens followed update_from_response")


# -- static checks ------------------------------------------------------------------------------
def _check_loading(loaded: Any, report: DoctorReport) -> None:
    info = loaded.info
    path = {"built-in": "built-in engine (no plugin needed)",
            "directory": f"directory engine: plugins/context_engine/{info.name}/ (context.engine: {info.name})",
            "general-plugin": f"general plugin {info.plugin!r} registering it through ctx.register_context_engine",
            "entry-point": f"installed package entry point {info.plugin!r} (group hermes_agent.plugins)"}.get(info.source, info.source)
    report.add(PASS, "load", f"loads as a {path}" + (f"; engine obtained by {info.how}" if info.source != "built-in" else ""))
    from inspector.engines.compat.plugins import DIRECTORY_COLLECTOR_METHODS

    if info.source == "directory":
        extra = sorted({c for c in loaded.ctx_calls if c not in DIRECTORY_COLLECTOR_METHODS})
        if extra:
            report.add(WARN, "load", f"register(ctx) used {', '.join(extra)}, which Hermes' directory-engine collector lacks: "
                       "register raised AttributeError there and the engine came from the subclass scan instead",)
    for w in loaded.warnings:
        status = WARN
        report.add(status, "load", w.splitlines()[0], w)


def _check_imports(loaded: Any, report: DoctorReport) -> None:
    info = loaded.info
    if info.source == "built-in":
        report.add(PASS, "imports", "built-in engine: no host modules needed")
        return
    base = Path(info.path) if info.path and Path(info.path).exists() else None
    if base is None and info.source == "entry-point":
        import importlib.util

        spec = importlib.util.find_spec(str(info.metadata.get("entry_point", "")).partition(":")[0])
        if spec and spec.origin:
            base = Path(spec.origin).parent if spec.submodule_search_locations else Path(spec.origin)
    if base is None:
        report.add(WARN, "imports", "source not found; host imports not checked")
        return
    files = imported_sources(base)
    skipped = len(source_files(base)) - len(files) if base.is_dir() else 0
    if skipped > 0:
        report.add(PASS, "imports", f"{skipped} file(s) no module of the plugin imports (scripts, benchmarks, …) "
                   "not checked: Hermes never imports them")
    uses, errors = scan_imports(files)
    for e in errors:
        report.add(FAIL, "imports", f"does not parse: {e}")
    own = loaded.module_name or None
    problems = []
    host = set()
    for use in uses:
        if use.module.partition(".")[0] in ("agent", "hermes_cli", "hermes_constants"):
            host.add(use.module)
        found = check_import(use, hermes_installed=loaded.compat.hermes_installed, own_package=own)
        if found:
            problems.append(found)
    for status, text in problems:
        report.add(status, "imports", text)
    if not any(s == FAIL for s, _ in problems):
        origin = "Hermes" if loaded.compat.hermes_installed else "inspector stand-ins"
        report.add(PASS, "imports", f"{len(uses)} import(s) resolve; host modules ({origin}): {', '.join(sorted(host)) or 'none'}")


def _check_deepcopy(loaded: Any, report: DoctorReport) -> None:
    try:
        copy.deepcopy(loaded.engine)
    except (Exception, SystemExit) as exc:  # not KeyboardInterrupt: the user stops us
        general = loaded.info.source in ("general-plugin", "entry-point")
        status = FAIL if general else WARN
        why = ("Hermes deep-copies general-plugin engines per agent and falls back to the built-in compressor when that fails"
               if general else "only matters if it is ever shipped as a general plugin")
        report.add(status, "deepcopy", f"copy.deepcopy(engine) raised {type(exc).__name__}: {exc} ({why})")
        return
    report.add(PASS, "deepcopy", "copy.deepcopy(engine) works")


def _check_available(loaded: Any, report: DoctorReport, timeout: float, agent: AgentThread) -> None:
    """The engine's is_available(): shown, never a failure, since Hermes activates the engine regardless."""
    from inspector.engines.availability import UNKNOWN, YES, Availability, probe, unavailable_note

    out = agent.call(probe, loaded.engine, timeout, timeout=timeout + 5)
    availability = out.value if out.ok else Availability(UNKNOWN, f"asking it failed: {out.describe()}")
    if availability.state == YES:
        report.add(PASS, "available", availability.reason)
    else:
        report.add(WARN, "available", unavailable_note(loaded.info.name, availability) or availability.describe())


def _check_abc(loaded: Any, report: DoctorReport, name: str) -> bool:
    from inspector.engines.compat.plugins import is_context_engine

    engine = loaded.engine
    duck = not is_context_engine(engine)
    if duck and loaded.info.source != "directory":
        report.add(FAIL, "abc", f"{type(engine).__name__} is not a ContextEngine subclass: Hermes' "
                   "ctx.register_context_engine refuses it and falls back to the built-in compressor")
        ok = False
    elif duck:
        findings = describe_duck(engine)
        for status, text in findings:
            report.add(status, "abc", text)
        ok = not any(status == FAIL for status, _ in findings)
    else:
        abstract = sorted(getattr(type(engine), "__abstractmethods__", ()) or ())
        ok = not abstract
        report.add(PASS if ok else FAIL, "abc", "subclasses ContextEngine with every abstract method implemented"
                   if ok else f"abstract methods not implemented: {', '.join(abstract)}")
    try:
        ename = engine.name
        if not isinstance(ename, str) or not ename:
            report.add(FAIL, "abc", f"name is {ename!r}; must be a non-empty string")
        elif ename != name:
            report.add(WARN, "abc", f"engine.name is {ename!r} but it was selected as {name!r}")
    except Exception as exc:
        report.add(FAIL, "abc", f"reading engine.name raised {type(exc).__name__}: {exc}")
    sigs = [
        ("update_from_response", ((_usage(1),), {})),
        ("should_compress", ((1,), {})),
        ("compress", (([],), {})),
        ("update_model", ((), {"model": "m", "context_length": 1, "base_url": "", "api_key": "", "provider": "", "api_mode": ""})),
        ("on_session_start", (("s",), {"hermes_home": "", "platform": "cli", "model": "m", "context_length": 1, "conversation_id": None})),
        ("on_session_end", (("s", []), {})),
    ]
    if engine_overrides_hook(engine, "select_context"):
        sigs.append(("select_context", (([],), {"conversation_messages": [], "incoming_message": None, "budget_tokens": 0})))
    if engine_overrides_hook(engine, "on_turn_complete"):
        sigs.append(("on_turn_complete", (([],), {"usage": None, "turn_id": "t", "task_id": None, "api_call_count": 1,
                                                  "interrupted": False, "failed": False, "turn_exit_reason": "completed"})))
    for hook, (args, kwargs) in sigs:
        fn = getattr(engine, hook, None)
        if not callable(fn):
            if not duck:  # a duck-typed engine's missing hooks are judged above, as Hermes treats each
                report.add(FAIL, "signature", f"{hook} is missing or not callable")
                ok = False
            continue
        try:
            inspect.signature(fn).bind(*args, **kwargs)
        except TypeError as exc:
            report.add(FAIL, "signature", f"{hook} cannot be called the way Hermes calls it: {exc}")
            ok = False
        except ValueError:
            pass
    accepted = compress_kwargs(engine, 0, focus_topic="x", memory_context="m")
    missing = [k for k in ("current_tokens", "focus_topic", "force", "memory_context") if k not in accepted]
    if missing:
        report.add(WARN, "signature", f"compress does not accept {', '.join(missing)}; the host filters them out (older signature)")
    return ok


# -- thread contract ------------------------------------------------------------------------------
def _check_concurrent(loaded: Any, report: DoctorReport, timeout: float) -> None:
    engine = loaded.engine
    markers = ("ALPHA-7f3c", "BRAVO-19ad")
    sessions = [[m for turn in doctor_session(mk, turns=8) for m in turn] for mk in markers]
    ctx_len = int(getattr(engine, "context_length", 0) or 128_000)
    tokens = int(ctx_len * 0.97)
    barrier = threading.Barrier(2)

    def one(msgs: list) -> Any:
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(timeout)
        return engine.compress(msgs, **compress_kwargs(engine, tokens))

    results: list[CallOutcome | None] = [None, None]

    def run(i: int) -> None:
        results[i] = call_on_new_thread(one, copy.deepcopy(sessions[i]), timeout=timeout, name=f"compress-ctx-timeout-{markers[i][:5].lower()}")

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout + 5)
    crossed = []
    for i, out in enumerate(results):
        if out is None or not out.ok:
            desc = out.describe() if out else "did not finish"
            report.add(FAIL, "thread:concurrent", f"compress of session {markers[i]} running concurrently with another session {desc}",
                       out.error or "" if out else "")
            continue
        text = json.dumps(out.value, default=repr)
        other = markers[1 - i]
        if other in text:
            crossed.append(f"session {markers[i]}'s result contains content of session {other}")
    if crossed:
        report.add(FAIL, "thread:concurrent", "results crossed between sessions compressing at once on one shared instance: "
                   + "; ".join(crossed) + " (Hermes may run passes for different sessions concurrently on pool threads)")
    elif all(o is not None and o.ok for o in results):
        report.add(PASS, "thread:concurrent", "two sessions compressed at once on one shared instance without their results crossing")


# -- entry point --------------------------------------------------------------------------------------
def run_doctor(
    name: str,
    config: dict[str, Any],
    plugin_dirs: Any = (),
    *,
    timeout: float = 10.0,
    include_project: bool = True,
    include_entry_points: bool = True,
    driver: Callable[..., Any] | None = None,
) -> DoctorReport:
    """Diagnose engine ``name``. Never raises for a broken engine; returns the findings.

    ``driver(loaded, report, timeout, agent)`` replaces the built-in per-hook driver (e.g. a
    wrapper around the host's ``replay`` once it exists).
    """
    from inspector.engines.discovery import EngineLoadError, load_engine
    from inspector.engines.run_context import RunContext, offline_stand_in_for, running
    from inspector.host.profiles import profile_for
    from inspector.llm.aux import AuxCallLog, recording

    report = DoctorReport(engine=name)
    profile = profile_for(config)  # which checks apply follows the Hermes the user runs (inspector.host_profile)
    report.profile = profile.name
    agent = AgentThread()
    loaded = None
    try:
        out = agent.call(load_engine, name, config, plugin_dirs, include_project=include_project,
                         include_entry_points=include_entry_points, ask_availability=False, hermes_fallbacks=False,
                         timeout=max(timeout, 30.0))
        if out.timed_out:
            report.add(FAIL, "load", f"loading {name!r} did not finish within {max(timeout, 30.0):g}s")
            return report
        if not out.ok:
            err = out.error or ""
            if out.error_type == EngineLoadError.__name__:
                headline, _, rest = (out.error_message or "").partition("\n")
                report.add(FAIL, "load", headline, rest.strip("\n"))  # the details go on from the headline
            else:
                report.add(FAIL, "load", f"loading raised {out.error_type}: {out.error_message}", err)
            return report
        loaded = out.value
        report.source, report.path = loaded.info.source, loaded.info.path
        for check in (_check_loading, _check_imports, _check_deepcopy):
            _guarded_check(report, check.__name__, check, loaded, report)
        with loaded.activate():
            _guarded_check(report, "available", _check_available, loaded, report, timeout, agent)
        abc_ok = _guarded_check(report, "abc", _check_abc, loaded, report, name)
        log = AuxCallLog()
        # The hooks run as in a replay: compressors follow the config's offline rule (wall clock).
        with loaded.activate(), recording(log), running(RunContext(offline_stand_in=offline_stand_in_for(config))):
            if abc_ok is False and not callable(getattr(loaded.engine, "compress", None)):
                report.add(FAIL, "hooks", "hooks not exercised: the engine lacks the required methods")
            else:
                run_driver = driver or (lambda ld, rp, to, ag: HookDriver(ld, rp, to, ag).run())
                _guarded_check(report, "hooks", run_driver, loaded, report, timeout, agent)
                if profile.gates.compress_input == "live":
                    # 0.19.0 deep-copies the engine for each agent (agent/agent_init.py:1851-1870) and
                    # compresses on the agent's thread: no two sessions ever share an instance.
                    report.add(PASS, "thread:concurrent", f"not checked under host profile {profile.name}: each "
                               "agent has its own copy of the engine, so sessions never compress on a shared "
                               "instance")
                else:
                    _guarded_check(report, "thread:concurrent", _check_concurrent, loaded, report, timeout)
        _report_side_effects(loaded, report, log)
        return report
    finally:
        agent.close()
        if loaded is not None:
            loaded.close()


def _guarded_check(report: DoctorReport, label: str, fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:  # a doctor bug or an engine raising from an attribute access
        import traceback

        report.add(FAIL, label, f"check could not complete: {type(exc).__name__}: {exc}", traceback.format_exc())
        return None


def _report_side_effects(loaded: Any, report: DoctorReport, log: Any) -> None:
    from inspector.engines.sandbox import list_written_files

    records = log.records
    if records:
        errors = [r for r in records if r.error]
        report.add(PASS, "aux", f"engine called call_llm {len(records)} time(s)"
                   + (f"; {len(errors)} raised (e.g. {errors[0].error}) and the engine carried on" if errors else ""))
    files = list_written_files(loaded.sandbox)
    if files:
        report.add(PASS, "sandbox", f"wrote {len(files)} file(s) under HERMES_HOME (sandboxed): "
                   + ", ".join(f"{p} ({s} B)" for p, s in files[:8]))
