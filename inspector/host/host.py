"""The agent loop around one engine: a session's turns and requests, the way Hermes runs them.

Which Hermes is a host profile (:mod:`inspector.host.profiles`): ``hermes-0.19.0``, checked
against the release's ``AIAgent`` by ``tests/differential/``, or ``hermes-main``, the development
line's contract (``select_context`` at assembly, pre-API gate on the selected list, compression on
a pooled daemon thread over a private deep copy with a timeout, ``on_turn_complete``). The loop
is incremental (``play_turn``) so replay, follow and live sessions share it, and it is built from
parts that each own one kind of state:

- :class:`~inspector.host.recorder.HookRecorder`: every hook called under guard as the profile's
  hook table says, recorded as a trace event;
- :class:`~inspector.host.assembly.RequestAssembly`: the history, the request built from it and
  its token figures;
- :class:`~inspector.host.gates.CompactionGates` and :class:`~inspector.host.compaction.Compaction`:
  when to compress, and the pass itself;
- this module: agent start and end, the turn, the request cycle, the provider's reply, tools.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

from inspector.engines.run_context import RunContext, offline_stand_in_for, running
from inspector.host import capture
from inspector.host.assembly import RequestAssembly
from inspector.host.calibration import UsageModel
from inspector.host.clock import SessionClock
from inspector.host.compaction import Compaction, supported_compress_kwargs  # noqa: F401  (imported from here)
from inspector.host.differences import HOST_DIFFERENCES  # noqa: F401
from inspector.host.gates import CompactionGates, reported_context_limit  # noqa: F401
from inspector.host.guard import CallOutcome, HookAbandoned
from inspector.host.profiles import HostProfile, profile_for
from inspector.host.recorder import HOOK_TIMEOUTS_BEFORE_SKIP, HookRecorder  # noqa: F401
from inspector.host.responders import ProviderResponse, Responder
from inspector.host.settings import HostSettings, resolved_api_mode  # noqa: F401
from inspector.host.values import as_int, clone, jsonable
from inspector.llm.secrets import config_secrets
from inspector.trace.model import (
    EV_COMPRESS,
    EV_PRUNE,
    EV_REQUEST,
    EV_SELECT,
    EV_TURN,
    KEY_SCHEME,
    NO_BLOCKS,
    CacheInfo,
    Event,
    Fault,
    Request,
    Trace,
    hold_request,
)
from inspector.trace.packed import LIST, VALUE, pack_usage, shape_of

MIN_CONTEXT_LENGTH = 64_000

# Arguments of the host's most frequent events, held packed (inspector.trace.packed).
_USAGE_ARGS = shape_of(("usage",))
_REQUEST_TOKENS = shape_of(("tiktoken", "rough", "tools", "completion"))
_TURN_ARGS = shape_of(("inputs", "timestamp"), (LIST, VALUE))
_TURN_NO_INPUTS = shape_of(("inputs", "timestamp"))

_Method = TypeVar("_Method", bound=Callable[..., Any])


def _in_run(method: _Method) -> _Method:
    """A host entry point runs with the host's run current (:mod:`inspector.engines.run_context`):
    every compressor the engine holds or builds, now, in a hook or on the compress pool, reads this
    run's clock and offline rule, and a comparison's other run on another thread is not affected."""

    @functools.wraps(method)
    def entry(self: Host, *args: Any, **kwargs: Any) -> Any:
        with running(self.run):
            return method(self, *args, **kwargs)

    return entry  # type: ignore[return-value]


class Host:
    """One engine, one session: the Hermes agent loop, recording a trace."""

    def __init__(
        self,
        engine: Any,
        config: dict[str, Any],
        *,
        session_id: str,
        system_prompt: str | None,
        session_tools: list[dict[str, Any]] | None = None,
        counter: Any,
        simulator: Any = None,
        trace: Trace | None = None,
        plugin_manager: Any = None,
        engine_is_builtin: bool = False,
        hermes_home: str = "",
        model: str | None = None,
        session_clock: bool = False,
        profile: HostProfile | None = None,
        usage_model: Any = None,
    ) -> None:
        self.engine = engine
        # Which Hermes this host plays (inspector.host_profile); raises ProfileError for an unknown name.
        self.profile = profile if profile is not None else profile_for(config)
        rules = self.profile.gates
        # Usage as the provider counted it (inspector/host/calibration.py): the one place that
        # decides what update_from_response gets and how big each request's unrecorded head is.
        self.usage_model = usage_model if usage_model is not None else UsageModel()
        self.clock = SessionClock() if session_clock else None
        self.run = RunContext(clock=self.clock or time.monotonic, offline_stand_in=offline_stand_in_for(config))
        self.config = config
        self.settings = HostSettings(config, model=model)
        self.session_id = session_id
        self.counter = counter
        self.simulator = simulator
        self.trace = trace if trace is not None else Trace()
        self.store = self.trace.store
        self.engine_is_builtin = engine_is_builtin
        self.hermes_home = hermes_home
        self.rec = HookRecorder(engine, self.profile, self.trace, hook_timeout=self.settings.hook_timeout,
                                secrets=tuple(config_secrets(config)), plugin_manager=plugin_manager)
        self.asm = RequestAssembly(self.rec, counter=counter, usage_model=self.usage_model,
                                   pre_api_tokens=rules.pre_api_tokens, system_prompt=system_prompt,
                                   tools=[t for t in (session_tools or []) if isinstance(t, dict)])
        self.compaction = Compaction(self.rec, self.asm, self.settings, rules, config=config, session_id=session_id)
        self.gates = CompactionGates(self.rec, self.asm, self.compaction, self.settings, rules,
                                     usage_model=self.usage_model)
        self.rules = rules
        self.engine_tool_names: set[str] = set()
        self.trace.meta.setdefault("message_keys", KEY_SCHEME)
        self.trace.meta["host_profile"] = self.profile.name
        if isinstance(self.trace.meta.get("host_differences"), list):
            told = self.trace.meta["host_differences"]
            told[:0] = [d for d in self.profile.differences if d not in told]
        # The model the engine is told of (update_model) and the window, cache minimum and prices
        # follow; model.default wins over the transcript's, so reports must say which it was.
        self.trace.meta["assumed_model"] = self.settings.model
        self._write_1h = 0
        self._turn_user: dict[str, Any] | None = None
        self._turn_calls = 0
        self._last_usage: dict[str, int] | None = None
        self._recorded_dicts: dict[tuple[int, ...], dict[str, int]] = {}

    # -- what callers read and the parts share ----------------------------------------------
    @property
    def turn(self) -> int:
        return self.rec.turn

    @turn.setter
    def turn(self, value: int) -> None:
        self.rec.turn = value

    @property
    def history(self) -> list[dict[str, Any]]:
        return self.asm.history

    @history.setter
    def history(self, value: list[dict[str, Any]]) -> None:
        self.asm.history = value

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self.asm.tools

    @property
    def system_message(self) -> dict[str, Any] | None:
        return self.asm.system_message

    @property
    def plugin_manager(self) -> Any:
        return self.rec.plugin_manager

    def _now(self) -> float:
        return self.rec.now()

    def _state(self) -> tuple[int, ...]:
        return self.rec.state()

    def note(self, text: str, **args: Any) -> Event:
        return self.rec.note(text, **args)

    def fault(self, kind: str, message: str, **args: Any) -> Event:
        return self.rec.fault(kind, message, **args)

    def aux_sink(self, record: Any) -> None:
        """Recorder for ``call_llm``: any thread may call it (compress runs on the pool)."""
        self.rec.aux_sink(record)

    def prepare(self, messages: list[dict[str, Any]], measured: dict[int, tuple[str, int | None]] | None = None) -> None:
        """Compute the per-message forms of messages about to join the history (only a speed-up)."""
        self.asm.prepare(messages, measured)

    # -- session lifecycle ---------------------------------------------------------------
    @_in_run
    def start(self) -> bool:
        """Hermes' agent construction (agent/agent_init.py:1819-2039 of hermes-agent 0.19.0). False when the host must stop (as Hermes would)."""
        engine = self.engine
        rec = self.rec
        s = self.settings
        if not self.engine_is_builtin:
            if s.model_thresholds:
                try:
                    engine.model_thresholds = dict(s.model_thresholds)
                except Exception as exc:
                    rec.fault("exception", f"setting model_thresholds failed: {exc}")
            ev, out = rec.hook(
                "update_model",
                record_args={"model": s.model, "context_length": s.context_length, "base_url": s.base_url,
                             "provider": s.provider, "api_mode": s.api_mode, "model_thresholds": jsonable(s.model_thresholds)},
                model=s.model, context_length=s.context_length, base_url=s.base_url, api_key="",
                provider=s.provider, api_mode=s.api_mode,
            )
            if out.fault is not None and out.fault.kind in ("exception", "timeout"):
                # Hermes calls it unguarded while building the agent (agent/agent_init.py:1899-1906): no agent, no session.
                what = "raised" if out.fault.kind == "exception" else "did not return"
                why = (f"update_model {what} at agent start ({out.fault.message}); Hermes cannot build the agent "
                       "with this engine, so the replay stops here.")
                return self._stop(why)
        else:
            ev = rec.note(
                "built-in compressor constructed from config (Hermes does not call update_model at init for it)",
                model=s.model, context_length=s.context_length,
            )
            ev.status = rec.status()
        if rec.wants("bind_session_state"):
            rec.hook("bind_session_state", record_args={"session_id": self.session_id},
                     session_db=None, session_id=self.session_id)
        ctx = as_int(getattr(engine, "context_length", 0))
        if ctx and ctx < MIN_CONTEXT_LENGTH:
            return self._stop(f"context_length {ctx} is below Hermes' minimum of {MIN_CONTEXT_LENGTH}; "
                              "Hermes refuses to start an agent with this engine, so the replay stops here.")
        if not rec.has("get_tool_schemas"):
            return self._stop("the engine has no get_tool_schemas(), which Hermes calls unchecked while building the "
                              "agent; Hermes cannot start an agent with this engine, so the replay stops here.")
        ev, out = rec.hook("get_tool_schemas")
        self._inject_tools(ev, out)
        if rec.wants("on_session_start"):
            rec.hook(
                "on_session_start", self.session_id,
                record_args={"session_id": self.session_id, "platform": s.platform, "model": s.model,
                             "context_length": ctx, "hermes_home": self.hermes_home},
                hermes_home=self.hermes_home, platform=s.platform, model=s.model, context_length=ctx,
                conversation_id=None,
            )
        self.asm.refresh_tools()
        return True

    def _stop(self, why: str) -> bool:
        """Hermes could not build the agent: the run did not happen, and callers report it as not completed."""
        self.rec.fault("host_error", why)
        self.trace.meta["stopped"] = why
        return False

    def _inject_tools(self, ev: Event, out: CallOutcome) -> None:
        """Normalise and add engine tool schemas (agent/agent_init.py:1991-2025 of hermes-agent 0.19.0): bare or wrapped, deduplicated by name."""
        if not out.ok:
            return
        schemas = out.value
        if schemas is None:
            schemas = []
        if not isinstance(schemas, list):
            ev.fault = Fault("invalid_return", f"get_tool_schemas returned {type(schemas).__name__}, expected a list")
            return
        tools = self.asm.tools
        existing = {(t.get("function") or t).get("name") for t in tools if isinstance(t, dict)}
        added, skipped = [], []
        for schema in schemas:
            fn = schema.get("function") if isinstance(schema, dict) and schema.get("type") == "function" else schema
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                skipped.append(repr(schema)[:120])
                continue
            if fn["name"] in existing:
                skipped.append(f"{fn['name']} (duplicate)")
                continue
            tools.append({"type": "function", "function": fn})
            self.engine_tool_names.add(fn["name"])
            existing.add(fn["name"])
            added.append(fn["name"])
        ev.result = {"added": added, "skipped": skipped}
        self.trace.tool_schemas = list(tools)
        if skipped and any("duplicate" not in s for s in skipped):
            ev.fault = Fault("invalid_return", "schemas without a string name were skipped: " + "; ".join(skipped))

    @_in_run
    def end(self) -> Trace:
        rec = self.rec
        if self.trace.meta.get("stopped"):  # no agent was built: there is no session to end
            return self.trace.finish()
        rec.fire_plugin_hook("on_session_end", session_id=self.session_id, completed=True, interrupted=False,
                             model=self.settings.model, platform=self.settings.platform)
        if rec.wants("on_session_end"):
            rec.hook(
                "on_session_end", self.session_id, list(self.asm.history),
                record_args={"session_id": self.session_id, "messages": self.asm.history_ref()},
            )
        run_output = rec.output
        if run_output.over:
            rec.note(f"engine output: {run_output.over:,} characters were not recorded once the run's "
                     f"{capture.TRACE_CHARS:,} were (each event that lost some says so)")
        if run_output.late:
            rec.note(f"engine output: {run_output.late:,} characters written by a compress pass after it timed out "
                     "were not recorded (shown on the terminal only)")
        return self.trace.finish()

    # -- a turn ------------------------------------------------------------------------
    @_in_run
    def play_turn(self, inputs: list[dict[str, Any]], responder: Responder, *, timestamp: float | None = None,
                  interrupted: bool = False) -> None:
        """One user turn: append the inputs, preflight, then provider calls until the responder stops.

        ``interrupted``: the transcript says the user stopped this turn, so it is finalised as
        Hermes finalises an interrupted turn (``interrupted=True``), not as completed.
        """
        rec = self.rec
        rec.turn += 1
        if self.clock is not None and timestamp is not None:
            self.clock.observe(timestamp)
        self.gates.begin_turn()
        self._turn_calls = 0
        self._last_usage = None
        user = next((m for m in inputs if m.get("role") == "user"), None)
        self._turn_user = user
        inputs_id = self.asm.inputs_list(inputs)  # {"inputs": {"$list": id} or None, "timestamp": …}
        ev = Event(index=0, kind=EV_TURN, turn=rec.turn, t=rec.now(),
                   args=(_TURN_ARGS, inputs_id, timestamp) if inputs_id is not None else (_TURN_NO_INPUTS, None, timestamp))
        ev.state = rec.state()
        rec.add(ev)
        self.asm.history.extend(inputs)
        self.gates.preflight()
        # After the preflight, with the history it left (agent/turn_context.py:686-700).
        if rec.wants_plugin_hook("pre_llm_call"):  # the arguments cost a copy of the message
            rec.fire_plugin_hook("pre_llm_call", session_id=self.session_id, task_id=self.session_id,
                                 turn_id=self._turn_id(), user_message=jsonable(user),
                                 conversation_history=list(self.asm.history), is_first_turn=rec.turn == 0,
                                 model=self.settings.model, platform=self.settings.platform, sender_id="")
        last_assistant = None
        try:
            while True:
                pending = responder.pending_inputs()
                if pending:
                    self.asm.history.extend(pending)
                if not responder.wants_request():
                    break
                response = self._request_cycle(responder)
                if response is None:
                    break
                last_assistant = response.message
        except HookAbandoned:
            raise  # the run's trace is no longer ours to finish
        except BaseException as exc:
            interrupted = not isinstance(exc, Exception) or type(exc).__name__ in ("LiveCancelled", "ReplayCancelled")
            if interrupted:  # an interrupted turn is still finalised
                self._finish_turn(user, last_assistant, failed=False, interrupted=True, reason="interrupted")
            else:  # a terminal provider failure returns early: no post_llm_call, no on_turn_complete (docs/host-contract.md §2.10)
                rec.note(f"the provider failed ({type(exc).__name__}); Hermes ends the turn early and skips "
                         "on_turn_complete")
            raise
        exit_reason = self.compaction.turn_exit or ("interrupted" if interrupted else "completed")
        self._finish_turn(user, last_assistant, failed=exit_reason not in ("completed", "interrupted"),
                          interrupted=interrupted, reason=exit_reason)

    def _turn_id(self) -> str:
        return f"turn-{self.rec.turn}"

    def _finish_turn(self, user: Any, last_assistant: Any, *, failed: bool, interrupted: bool, reason: str) -> None:
        rec = self.rec
        history = self.asm.history
        # Once per turn with a final response, never on an interrupted one (agent/turn_finalizer.py:477-495).
        final = last_assistant.get("content") if isinstance(last_assistant, dict) else None
        if final and not interrupted and rec.wants_plugin_hook("post_llm_call"):
            rec.fire_plugin_hook("post_llm_call", session_id=self.session_id, task_id=self.session_id,
                                 turn_id=self._turn_id(), user_message=jsonable(user),
                                 assistant_response=final, conversation_history=list(history),
                                 model=self.settings.model, platform=self.settings.platform)
        if rec.wants("on_turn_complete"):
            clones = [clone(m) for m in history]
            rec.hook(
                "on_turn_complete", clones,
                record_args={"messages": self.asm.history_ref(), "usage": self._last_usage,
                             "api_call_count": self._turn_calls, "turn_exit_reason": reason},
                usage=dict(self._last_usage) if self._last_usage else None,
                turn_id=self._turn_id(), task_id=self.session_id, api_call_count=self._turn_calls,
                interrupted=interrupted, failed=failed, turn_exit_reason=reason,
            )

    @_in_run
    def compress_now(self, focus_topic: str | None = None) -> bool:
        """Manual ``/compress [topic]``: force=True, focus passed through."""
        return self.gates.compress_now(focus_topic)

    # -- a request -----------------------------------------------------------------------
    def _request_cycle(self, responder: Responder) -> ProviderResponse | None:
        """Assemble, select, gate, call the provider, feed usage, run tools. None = turn over."""
        asm_part = self.asm
        gates = self.gates
        while True:
            if self.rules.repair_history:
                asm_part.repair_history()
            asm = asm_part.assembled()
            keys = tuple(asm.keys)  # one copy per request, shared by the trace's list and the simulator
            selected, sel_keys, by_engine = asm_part.select(asm, keys, self._turn_user)
            if not by_engine and not asm.clean:
                selected, sel_keys = asm_part.sanitised(asm, keys)
            pressure, tik = asm_part.pressure(asm, sel_keys, sel_keys is not keys)
            if gates.pre_api(pressure, asm_part.figure):
                continue
            if gates.overflow(tik, pressure):
                continue
            break
        try:
            response = responder.respond(list(selected), asm_part.tools)
        except Exception as exc:
            if getattr(exc, "kind", None) == "context_overflow" and gates.provider_overflow(exc, pressure):
                return self._request_cycle(responder)  # compacted: re-assemble and select again
            raise
        if response is None:
            return None
        if self.clock is not None:
            self.clock.observe(response.timestamp)
        self._turn_calls += 1
        return self._record_response(response, responder, keys, sel_keys, by_engine, pressure, tik)

    def _recorded_dict(self, response: ProviderResponse) -> dict[str, int] | None:
        """The call's recorded usage, one dict per distinct figure (read-only, shared by requests).

        An aggregate-only transcript records the same all-zero usage on every call; tens of
        thousands of equal dicts were a tenth of a long replay's requests (issue 23).
        """
        if response.recorded is None:
            return None
        figures = response.recorded.to_recorded_dict()
        return self._recorded_dicts.setdefault(tuple(figures.values()), figures)

    def _record_response(
        self,
        response: ProviderResponse,
        responder: Responder,
        keys: tuple[str, ...],
        sel_keys: tuple[str, ...],
        by_engine: bool,
        pressure: int,
        tik: int,
    ) -> ProviderResponse:
        rec = self.rec
        asm_part = self.asm
        req_index = len(self.trace.requests)
        assistant = response.message
        # Through the per-message cache: the assistant joins the history next, already shaped.
        a_key = asm_part.forms(assistant)[2]
        rows = self.store.tokens.rows  # (shape, tiktoken, rough_chars[, images]): inspector.trace.token_table
        completion = rows[a_key][1]
        differs = sel_keys is not keys  # chosen by the engine or changed by the sanitiser
        if differs:
            messages = self.store.messages
            block_tokens = [rows[k][1] for k in sel_keys]
            roles = [messages[k].get("role", "?") for k in sel_keys]
        else:
            asm = asm_part.assembled()
            block_tokens, roles = asm.tiks, asm.roles
        sent = response.sent_at if response.sent_at is not None else response.timestamp
        cache = self._simulate(sel_keys, block_tokens, sent, roles, response.source_index)
        tools_tokens = asm_part.tools_tokens
        usage = self.usage_model.usage(response, tik=tik, tools_tokens=tools_tokens, completion=completion,
                                       cache=cache, write_1h=self._write_1h)
        usage_dict = usage.to_hermes_dict()
        if self.simulator is not None:
            # Priced from the usage the engine was given (reply priming and tool schemas included),
            # so the cost agrees with the token figures shown beside it.
            try:
                cache.cost = self.simulator.cost(usage_dict["cache_read_tokens"], usage_dict["cache_write_tokens"],
                                                 usage_dict["input_tokens"], usage_dict["completion_tokens"])
            except Exception:
                cache.cost = None
        assembled_id = self.store.put_list(keys)
        selected_id = assembled_id if not differs else self.store.put_list(sel_keys)
        request = Request(
            index=req_index, turn=rec.turn, call=self._turn_calls - 1, event=0,
            assembled=assembled_id, selected=selected_id, selected_by_engine=by_engine,
            tokens=(_REQUEST_TOKENS, tik, pressure, tools_tokens, completion),  # held packed (inspector.trace.packed)
            usage=usage_dict,
            recorded=self._recorded_dict(response),
            cache=cache, timestamp=response.timestamp, response_key=a_key,
        )
        self.trace.requests.append(request)
        # Its args and result, {"messages": {"$list": selected_id}} and {"$msg": a_key}, held as the request.
        ev = Event(index=0, kind=EV_REQUEST, turn=rec.turn, request=req_index, t=rec.now(), args=request,
                   result=request)
        ev.state = rec.state()
        rec.add(ev)
        request.event = ev.index
        rec.events_since_request = []

        ev, _ = rec.hook("update_from_response", usage_dict, record_args=(_USAGE_ARGS, usage_dict), request=req_index)
        self._last_usage = dict(usage_dict)
        # Both kept as read now, packed: the request's usage and the call's {"usage": …} made of it.
        request.usage = pack_usage(usage_dict)
        hold_request(ev, request)  # its args read as {"usage": request.usage}
        history = asm_part.history
        history.append(assistant)
        asm_part.set_anchor(usage.prompt_tokens)
        calls = [c for c in (assistant.get("tool_calls") or []) if isinstance(c, dict)]
        one_by_one = getattr(responder, "tool_result", None)
        if self.rules.tool_results_each and callable(one_by_one) and any(
                (c.get("function") or {}).get("name") in self.engine_tool_names for c in calls):
            # Each result joins the history before the next call of the batch, so an engine tool
            # sees the results before it (agent/tool_executor.py:1028, the sequential path).
            for call in calls:
                result = self._dispatch_engine_tools([call], req_index).get(str(call.get("id")))
                row = one_by_one(assistant, call, result)
                if row is not None:
                    asm_part.history.append(row)
        else:
            engine_results = self._dispatch_engine_tools(calls, req_index)
            asm_part.history.extend(responder.tool_results(assistant, engine_results))
        if calls:
            self.gates.after_tools()
        return response

    def _dispatch_engine_tools(self, calls: list[dict[str, Any]], req_index: int) -> dict[str, str]:
        rec = self.rec
        out: dict[str, str] = {}
        for call in calls:
            fn = call.get("function") or {}
            name = fn.get("name")
            if name not in self.engine_tool_names:
                continue
            raw = fn.get("arguments")
            try:
                args = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw or {})
            except ValueError:
                args = {}
            if not isinstance(args, dict):
                args = {}
            rec.fire_plugin_hook("pre_tool_call", tool_name=name, args=args, task_id=self.session_id,
                                 session_id=self.session_id)
            history = self.asm.history
            before = [dict(m) for m in history]
            ev, res = rec.hook("handle_tool_call", name, args,
                               record_args={"name": name, "args": jsonable(args), "call_id": call.get("id")},
                               request=req_index, messages=history)
            if res.ok and isinstance(res.value, str):
                result = res.value
            elif res.ok:
                result = json.dumps({"error": f"Context engine tool '{name}' returned {type(res.value).__name__}, not a string"})
                ev.fault = Fault("invalid_return", f"handle_tool_call returned {type(res.value).__name__}, expected str")
            else:  # Hermes quotes str(exc), without the exception's type
                detail = res.fault.message.split(": ", 1)[-1] if res.fault.kind == "exception" else res.fault.message
                result = json.dumps({"error": f"Context engine tool '{name}' failed: {detail}"})
            if len(before) != len(history) or any(a != b for a, b in zip(before, history)):
                ev.fault = ev.fault or Fault("mutated_input", "handle_tool_call mutated the live transcript it was given")
                self.asm.forget_all()
            ev.result = {"$msg": self.store.put({"role": "tool", "tool_call_id": call.get("id"), "content": result})}
            out[str(call.get("id"))] = result
            rec.fire_plugin_hook("post_tool_call", tool_name=name, args=args, result=result,
                                 task_id=self.session_id, session_id=self.session_id)
        return out

    # -- cache ------------------------------------------------------------------------------
    def _simulate(self, sel_keys: tuple[str, ...], block_tokens: list[int], timestamp: float | None,
                  roles: list[str], source_index: int | None = None) -> CacheInfo:
        # block_tokens stays empty: it is derivable from the selected list and per-key counts.
        info = CacheInfo(reason_kind="disabled", reason="no cache simulator", block_tokens=NO_BLOCKS)
        asm = self.asm
        if self.simulator is None:
            info.uncached = sum(block_tokens) + asm.tools_tokens
            return info
        has_system = bool(roles) and roles[0] == "system"
        tools_key, tools_tokens, block_tokens = self.usage_model.cache_view(asm.tools_key, asm.tools_tokens,
                                                                            block_tokens, source_index)
        try:
            # The simulator copies what it keeps, so the host's own lists are passed as they are.
            res = self.simulator.simulate(
                block_keys=sel_keys, block_tokens=block_tokens, tools_key=tools_key,
                tools_tokens=tools_tokens, timestamp=timestamp, has_system=has_system,
                block_roles=roles,
            )
        except Exception as exc:
            info.uncached = sum(block_tokens) + asm.tools_tokens
            info.reason = f"cache simulator failed: {exc}"
            return info
        info.read, info.write, info.uncached = res.read, res.write, res.uncached
        # As held: a hit's reason is words made when read, from the figures just copied (inspector.cache.reasons).
        try:
            held = res.reason_held
        except AttributeError:  # a stand-in simulator's result: words only
            held = res.reason
        info.break_index, info.reason_kind, info.reason = res.break_index, res.reason_kind, held
        self._write_1h = getattr(res, "write_1h", 0)
        diverge = getattr(res, "diverge_index", None)
        if diverge is not None and res.reason_kind not in ("hit", "cold", "disabled"):
            cause = self._break_cause(diverge)
            if cause is not None:
                info.cause_event = cause.index
                info.reason = f"{res.reason} — message {diverge} changed by {cause.kind} at event {cause.index}"
        return info

    def _break_cause(self, break_index: int) -> Event | None:
        """Which engine action since the previous request changed the message at the break point."""
        since = self.rec.events_since_request
        for ev in reversed(since):
            if ev.kind in (EV_COMPRESS, EV_PRUNE) and isinstance(ev.result, dict) and "$list" in ev.result and not ev.result.get("unchanged"):
                return ev
            if ev.kind == EV_SELECT and isinstance(ev.result, dict) and "$list" in ev.result:
                return ev
        for ev in reversed(since):
            if ev.kind == EV_SELECT:
                # select_context shaped the previous request and returned None this time.
                return ev
        return None
