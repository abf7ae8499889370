"""Engine doctor: load an engine the way Hermes would and say precisely what it gets wrong.

Each finding is pass / warn / fail with the reason. Static checks (loading path, host imports,
deep copy, ABC conformance, signatures) come first; then every hook runs over a small built-in
session whose token figures climb past any sane threshold so ``compress`` runs; everything the
engine returns is validated; last comes the thread contract (``compress`` on a pool thread,
and two sessions compressing at once on one shared instance).

The session is played by the one host loop (:class:`inspector.host.host.Host`, built by
:func:`inspector.host.replay.host_for` under the user's host profile), so the hooks run exactly
where, when and how a replay runs them; a checking observer on the host's recorder
(:mod:`inspector.engines.doctor_observer`) judges each call. Engines are untrusted: every inline
hook runs on the thread that loaded the engine under a timeout and is abandoned there when it
hangs, and every check is wrapped, so a broken engine produces findings, never a crash.
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

from inspector.engines.contract import engine_overrides_hook
from inspector.engines.doctor_runtime import AgentThread, CallOutcome, call_on_new_thread
from inspector.engines.doctor_static import (
    check_import,
    imported_sources,
    scan_imports,
    source_files,
)
from inspector.engines.duck import describe as describe_duck

PASS, WARN, FAIL = "pass", "warn", "fail"
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
    from inspector.host.compaction import supported_compress_kwargs

    candidates: dict[str, Any] = {"current_tokens": current_tokens, "focus_topic": focus_topic, "force": force}
    if memory_context:  # only a non-empty memory context is offered (conversation_compression.py:215)
        candidates["memory_context"] = memory_context
    return supported_compress_kwargs(engine.compress, candidates)


# -- the session, played by the host ------------------------------------------------------------
SYSTEM_PROMPT = "You are a coding agent. Use tools to read and fix code."


# The provider reports a full window (97 %) for a request of this many messages: the system prompt
# and four turns of the doctor session, so over eight turns the window fills, is compacted and
# fills again: the engine compacts more than once, as in a long session.
MESSAGES_TO_FILL = 21


def prompt_tokens(context_length: int, sent: int) -> int:
    """The prompt size the provider reports for a request of ``sent`` messages: from 20 % of the
    window up to 97 %, so any sane threshold is crossed and ``compress`` runs, and a compacted
    request is small again, as a provider counts it."""
    return int(context_length * min(0.97, 0.2 + 0.8 * sent / MESSAGES_TO_FILL))


class DoctorResponder:
    """One turn of :func:`doctor_session` as a provider answers it: the tool call, then the answer.

    Its usage follows the size of the request it was sent (:func:`prompt_tokens`), and
    ``engine_tool`` adds a call of the engine's own tool to the turn's tool batch.
    """

    def __init__(self, turn: list[dict[str, Any]], context_length: int, engine_tool: str | None = None) -> None:
        _user, call_msg, *results, final = copy.deepcopy(turn)
        self._results = {r["tool_call_id"]: r for r in results}
        if engine_tool:
            call_id = f"{call_msg['tool_calls'][0]['id']}engine"
            call_msg["tool_calls"].append({"id": call_id, "type": "function",
                                           "function": {"name": engine_tool, "arguments": "{}"}})
        self._replies = [call_msg, final]
        self._window = context_length

    def wants_request(self) -> bool:
        return bool(self._replies)

    def pending_inputs(self) -> list[dict[str, Any]]:
        return []

    def respond(self, request: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        from inspector.host.responders import ProviderResponse
        from inspector.sessions.model import Usage

        usage = Usage(prompt_tokens=prompt_tokens(self._window, len(request)), completion_tokens=120)
        return ProviderResponse(message=self._replies.pop(0), usage=usage)

    def tool_result(self, assistant: dict[str, Any], call: dict[str, Any], engine_result: str | None) -> dict[str, Any]:
        if engine_result is not None:
            return {"role": "tool", "tool_call_id": call["id"], "content": engine_result}
        return copy.deepcopy(self._results[call["id"]])

    def tool_results(self, assistant: dict[str, Any], engine_results: dict[str, str]) -> list[dict[str, Any]]:
        return [self.tool_result(assistant, c, engine_results.get(str(c["id"]))) for c in assistant.get("tool_calls") or ()]


def _on_agent_thread(agent: AgentThread, default_timeout: float) -> Callable[..., Any]:
    """The host's inline calls, made on the thread that loaded the engine (Hermes' agent thread) and
    abandoned there when they hang, so a hook stuck even in C never holds the doctor."""
    from inspector.host.guard import CallOutcome as HostOutcome
    from inspector.trace.model import Fault

    def call(fn: Callable[..., Any], *args: Any, timeout: float | None = None, **kwargs: Any) -> HostOutcome:
        out = agent.call(fn, *args, timeout=timeout if timeout and timeout > 0 else default_timeout, **kwargs)
        if out.timed_out:
            return HostOutcome(fault=Fault("timeout", f"still running on thread {out.thread_name}"),
                               duration=out.duration_s, thread=out.thread_name)
        if out.error is not None:
            return HostOutcome(fault=Fault("exception", f"{out.error_type}: {out.error_message}", out.error),
                               duration=out.duration_s, thread=out.thread_name)
        return HostOutcome(value=out.value, duration=out.duration_s)

    return call


def drive_host(loaded: Any, report: DoctorReport, timeout: float, agent: AgentThread) -> None:
    """Play the doctor session through the host loop, with the checking observer on its recorder."""
    from inspector.config import cfg_set
    from inspector.engines.doctor_observer import ContractObserver
    from inspector.engines.loading import model_runtime
    from inspector.host.profiles import profile_for
    from inspector.host.replay import host_for, make_counter

    config = copy.deepcopy(loaded.config or {})
    rt = model_runtime(config)
    ctx_len = max(int(rt.context_length or 0), 64_000)
    cfg_set(config, "model.context_length", ctx_len)
    cfg_set(config, "inspector.hook_timeout_seconds", timeout)
    cfg_set(config, "compression.context_timeout_seconds", timeout)
    profile = profile_for(config)
    host = host_for(loaded, config, session_id=SESSION_ID, system_prompt=SYSTEM_PROMPT,
                    counter=make_counter(config), profile=profile)
    observer = ContractObserver(loaded.engine, report, profile, timeout=timeout, context_length=ctx_len,
                                recorder=host.rec)
    host.rec.inline = _on_agent_thread(agent, timeout)
    host.rec.observer = observer
    if host.engine_is_builtin:
        report.add(PASS, "hook:update_model", "built-in compressor: constructed from config (Hermes does not call "
                   f"update_model at init for it); context_length={getattr(loaded.engine, 'context_length', None)!r}")
    if not host.start():
        report.add(FAIL, "hooks", f"the host stopped at agent start: {host.trace.meta.get('stopped')}")
        return
    observer.started()
    engine_tool = next((t["function"]["name"] for t in host.tools
                        if t["function"].get("name") in host.engine_tool_names), None)
    turns = doctor_session()
    for t, turn in enumerate(turns):
        host.play_turn([copy.deepcopy(turn[0])], DoctorResponder(turn, ctx_len, engine_tool if t == 1 else None))
    if not observer.compressed:
        report.add(WARN, "hook:should_compress", f"should_compress never returned True, even at 97% of a {ctx_len}-token "
                   "window; calling compress(force=True) as /compress would")
        host.compress_now()
    host.end()
    _after_session(loaded.engine, report, observer, agent, timeout)


def _runtime_fault(report: DoctorReport, hook: str, out: CallOutcome, timeout: float, *, status: str = FAIL,
                   context: str = "") -> None:
    msg = f"{hook}{context} {out.describe()}"
    if out.timed_out:
        msg += f" (timeout {timeout:g}s)"
    report.add(status, f"hook:{hook}", msg, out.error or "")


def _after_session(engine: Any, report: DoctorReport, observer: Any, agent: AgentThread, timeout: float) -> None:
    """What the doctor asks once the session is over: Hermes' empty usage, get_status, on_session_reset."""
    out = agent.call(engine.update_from_response, {}, timeout=timeout)
    if not out.ok:
        _runtime_fault(report, "update_from_response", out, timeout,
                       context=" with an empty usage dict (Hermes sends {} while awaiting real usage)")
    if not callable(getattr(engine, "get_status", None)):
        report.add(WARN, "hook:get_status", "no get_status: Hermes' host never calls it, but the inspector "
                   "shows no engine status for this engine")
    elif not (out := agent.call(engine.get_status, timeout=timeout)).ok:
        _runtime_fault(report, "get_status", out, timeout)
    elif not isinstance(out.value, dict):
        report.add(FAIL, "hook:get_status", f"get_status returned {type(out.value).__name__}, not a dict")
    else:
        report.add(PASS, "hook:get_status", f"get_status keys: {', '.join(map(str, out.value))}")
    reset = getattr(engine, "on_session_reset", None)
    out = agent.call(reset, timeout=timeout) if callable(reset) else CallOutcome(
        error="engine has no callable on_session_reset", error_type="AttributeError",
        error_message="no callable on_session_reset")
    if not out.ok:
        _runtime_fault(report, "on_session_reset", out, timeout)
    else:
        left = {a: getattr(engine, a, None) for a in ("last_prompt_tokens", "last_completion_tokens",
                                                      "last_total_tokens", "compression_count")}
        nonzero = {a: v for a, v in left.items() if v != 0}
        if nonzero:
            report.add(WARN, "hook:on_session_reset", f"on_session_reset left {nonzero} (Hermes' default zeroes them)")
        else:
            report.add(PASS, "hook:on_session_reset", "token counters and compression_count zeroed")
    observer.check_attrs("the session")
    if not any(f.check == "tokens" for f in report.findings):
        report.add(PASS, "tokens", "token attributes stayed ints; last_prompt_tokens followed update_from_response")


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
                run_driver = driver or drive_host
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
