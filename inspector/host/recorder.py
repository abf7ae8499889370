"""The guarded-call recorder: every engine hook called under guard, as the profile's hook table says.

A hook's row in the table (:class:`inspector.host.profiles.HookRow`) gives the event kind it is
recorded as, whether the host calls it unchecked, only when the engine has it, or only when the
engine overrides the base class's no-op, whether it runs on the host thread or a pool thread, and
which of its arguments the trace records. Each call becomes an event with its inputs, duration,
fault, the engine's token attributes and ``get_status()`` after it, and what the engine printed or
logged meanwhile (:mod:`inspector.host.capture`); auxiliary LLM calls it made follow as their own
events. The recorder owns the trace's event stream and the run's watchdog bookkeeping, nothing of
the transcript.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable
from typing import Any

from inspector.engines.contract import ContextEngine, base_status, engine_overrides_hook
from inspector.host import capture
from inspector.host.guard import CallOutcome, call_inline, call_on_pool, locate_in_engine
from inspector.host.profiles import CHECKED, OVERRIDDEN, POOL, HookRow, HostProfile
from inspector.host.values import SCALARS, as_int, jsonable
from inspector.trace.model import (
    EV_AUX_LLM,
    EV_FAULT,
    EV_NOTE,
    EV_PLUGIN_HOOK,
    STATE_FIELDS,
    STATUS_FROM_STATE,
    Event,
    Fault,
    Trace,
)
from inspector.trace.packed import keys_of, pack, unpack

_STATE_GETTER = operator.attrgetter(*STATE_FIELDS)
_INT_ONLY = frozenset({int})

# An inline hook that ran past its timeout this many times is not called again in the run: a
# hook stuck for good would otherwise cost the timeout at every request.
HOOK_TIMEOUTS_BEFORE_SKIP = 2


def _plain_attributes(engine: Any, names: tuple[str, ...]) -> bool:
    """Whether reading ``names`` from ``engine`` runs none of its code: no ``__getattribute__``
    of its own and no descriptor (a property) for any of them on its class."""
    cls = type(engine)
    if cls.__getattribute__ is not object.__getattribute__:
        return False
    for name in names:
        for klass in cls.__mro__:
            if name in vars(klass):
                if hasattr(type(vars(klass)[name]), "__get__"):
                    return False
                break
    return True


class HookRecorder:
    """Calls one engine's hooks under guard and records each call as a trace event."""

    def __init__(self, engine: Any, profile: HostProfile, trace: Trace, *, hook_timeout: float,
                 secrets: tuple[str, ...] = (), plugin_manager: Any = None) -> None:
        self.engine = engine
        self.profile = profile
        self.trace = trace
        self.store = trace.store
        self.hook_timeout = hook_timeout
        self.plugin_manager = plugin_manager
        self.turn = -1  # the loop's current turn, stamped on every event
        # Called before each hook while set: the compaction part settles a timed-out pass that
        # finished in the background before anything else touches the engine.
        self.before_call: Callable[[], None] | None = None
        # How an inline hook is called: on this thread under the watchdog, or (the doctor) on the
        # thread that loaded the engine, abandoned when it hangs.
        self.inline: Callable[..., CallOutcome] = call_inline
        # Told before and after every engine hook (the doctor's checking observer, see
        # inspector/engines/doctor_observer.py): ``before(hook, args, kwargs) -> token`` and
        # ``after(hook, args, kwargs, event, outcome, token)``.
        self.observer: Any = None
        self._rows: dict[str, HookRow] = {row.hook: row for row in profile.hooks}
        self._recorded = {row.hook: frozenset(row.records) for row in profile.hooks}
        # Skipped unless overridden: decided once, as Hermes checks the class (agent/context_engine.py).
        self._overrides = {row.hook: engine_overrides_hook(engine, row.hook)
                           for row in profile.hooks if row.call == OVERRIDDEN}
        self._t0 = time.perf_counter()
        self._timeouts: dict[str, int] = {}  # inline hook kind -> timeouts so far (see HOOK_TIMEOUTS_BEFORE_SKIP)
        self._output = capture.RunOutput(secrets=secrets)
        self._aux_pending: list[Any] = []
        self.events_since_request: list[Event] = []
        # get_status() inside the loop: only where the profile's Hermes would, or where it is the base
        # class's (our own code reading token attributes, which no engine can tell apart).
        self._status_anytime = profile.gates.status_in_loop
        self._status_from_state = getattr(type(engine), "get_status", None) is ContextEngine.get_status
        # ... and when the attributes are plain (no property, no __getattribute__ of the engine's
        # own), that status is a function of what state() read: built from it, not called again.
        self._status_built = self._status_from_state and _plain_attributes(engine, STATE_FIELDS)
        self._raw_ints = False  # whether the attributes state() last read were all ints
        own = getattr(engine, "__dict__", None)
        self._engine_dict: dict[str, Any] = own if type(own) is dict else {}  # the live dict: later writes show
        self._status_prev: dict[str, Any] | None = None
        self._status_failed = False
        self._status_raw: tuple[Any, ...] | None = None
        self._raw_state: tuple[Any, ...] | None = None  # the attributes state() last read
        self._status_seen: dict[str, Any] | None = None  # the status last packed, and its packed form
        self._status_held: Any = None
        # Per hook, the shapes of packed record_args whose keys its row records (checked once each).
        self._kept_shapes: dict[str, set[bytes]] = {row.hook: set() for row in profile.hooks}

    @property
    def output(self) -> capture.RunOutput:
        return self._output

    # -- the hook table --------------------------------------------------------------------
    def row(self, hook: str) -> HookRow | None:
        return self._rows.get(hook)

    def wants(self, hook: str) -> bool:
        """Whether the host calls ``hook`` at all: in the profile's table, and by the row's rule
        (unchecked; when the engine has it; when the engine overrides the base class's no-op)."""
        row = self._rows.get(hook)
        if row is None:
            return False
        if row.call == OVERRIDDEN:
            return self._overrides[hook]
        if row.call == CHECKED:
            return self.has(hook)
        return True

    def has(self, name: str) -> bool:
        """Whether the engine has ``name`` at all: Hermes checks before calling these, so an engine
        that does not subclass ContextEngine and lacks one runs without it (plugins/context_engine/__init__.py:199 of hermes-agent 0.19.0)."""
        try:
            return callable(getattr(self.engine, name, None))
        except Exception:  # a __getattr__ that raises something else: treat as absent
            return False

    def hook(self, hook: str, /, *args: Any, record_args: Any = None, request: int | None = None,
             on_pool: bool | None = None, timeout: float | None = None, **kwargs: Any) -> tuple[Event, CallOutcome]:
        """Call engine hook ``hook`` as its row says and record it; the trace keeps only the row's arguments
        (``record_args``: a dict, or one packed by the caller, :mod:`inspector.trace.packed`)."""
        row = self._rows[hook]
        if record_args:
            keep = self._recorded[hook]
            if type(record_args) is dict:
                if not keep.issuperset(record_args):
                    record_args = {k: v for k, v in record_args.items() if k in keep}
            elif record_args[0] not in self._kept_shapes[hook]:  # packed: its keys checked once per shape
                if keep.issuperset(keys_of(record_args)):
                    self._kept_shapes[hook].add(record_args[0])
                else:
                    record_args = {k: v for k, v in unpack(record_args).items() if k in keep}
        fn = getattr(self.engine, hook)
        pooled = row.thread == POOL if on_pool is None else on_pool
        observer = self.observer
        if observer is None:
            return self.call(row.event, fn, *args, record_args=record_args, request=request, on_pool=pooled,
                             timeout=timeout, **kwargs)
        token = observer.before(hook, args, kwargs)
        event, outcome = self.call(row.event, fn, *args, record_args=record_args, request=request, on_pool=pooled,
                                   timeout=timeout, **kwargs)
        observer.after(hook, args, kwargs, event, outcome, token)
        return event, outcome

    # -- recording -------------------------------------------------------------------------
    def now(self) -> float:
        return time.perf_counter() - self._t0

    def state(self) -> tuple[int, ...]:
        try:
            values = self._raw_state = _STATE_GETTER(self.engine)
        except Exception:
            self._raw_state = None
            self._raw_ints = False
            return tuple(as_int(getattr(self.engine, name, 0)) for name in STATE_FIELDS)
        if _INT_ONLY.issuperset(map(type, values)):
            self._raw_ints = True
            return values
        self._raw_ints = False
        return tuple(as_int(v) for v in values)

    def status(self) -> dict[str, Any] | None:
        """``get_status()`` now; call right after :meth:`state`, whose attribute read it reuses."""
        if self._status_failed:
            return self._status_prev
        if not (self._status_anytime or self._status_from_state):
            return None
        if self._status_from_state:
            # The base class's get_status() reads only token attributes: unchanged attributes,
            # unchanged status, so the call is skipped (tens of thousands of events per replay).
            raw = self._raw_state
            if raw is not None and raw == self._status_raw and self._status_prev is not None:
                return self._status_prev
            self._status_raw = raw
            if self._status_built and self._raw_ints and "get_status" not in self._engine_dict:
                status = self._status_prev = base_status(raw[0], raw[3], raw[4], raw[5])
                return status
        if not self.has("get_status"):  # Hermes never calls it: a duck engine may lack it
            self._status_failed = True
            return self._status_prev
        out = self.inline(self.engine.get_status, timeout=self.hook_timeout)
        if not out.ok:  # recorded once; a broken get_status must not flood the trace or stall the run
            self._status_failed = True
            fault = out.fault or Fault("exception", "get_status() failed")
            fault.message = f"get_status(): {fault.message}; not called again in this run"
            self.add(Event(index=0, kind=EV_FAULT, turn=self.turn if self.turn >= 0 else None, t=self.now(),
                           fault=fault))
            return self._status_prev
        status = out.value
        if self._status_from_state and type(status) is dict:
            self._status_prev = status  # the base class builds a new flat dict on every call
            return status
        if not isinstance(status, dict):
            status = {"value": jsonable(status)}
        if status == self._status_prev:
            return self._status_prev
        if SCALARS.issuperset(map(type, status.values())) and all(type(k) is str for k in status):
            self._status_prev = dict(status)  # what jsonable gives for a flat dict, without the recursion
        else:
            self._status_prev = jsonable(status)
        return self._status_prev

    def add(self, event: Event) -> Event:
        self.trace.add_event(event)
        self.events_since_request.append(event)
        return event

    def call(
        self,
        kind: str,
        fn: Any,
        *args: Any,
        record_args: Any = None,
        request: int | None = None,
        on_pool: bool = False,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> tuple[Event, CallOutcome]:
        """Call ``fn`` under guard and record it as an event of ``kind``."""
        if self.before_call is not None:
            self.before_call()
        t = time.perf_counter() - self._t0
        # What the engine prints or logs from here on (get_status() included) is this event's.
        previous = self._output.begin(pooled=on_pool)
        try:
            if on_pool:
                outcome = call_on_pool(self._output.job(lambda: fn(*args, **kwargs)), timeout)
                if outcome.fault is not None and outcome.fault.kind == "exception":
                    locate_in_engine(outcome.fault, fn)
            elif self._timeouts and self._timeouts.get(kind, 0) >= HOOK_TIMEOUTS_BEFORE_SKIP:
                outcome = CallOutcome(fault=Fault("timeout", f"not called: {kind} already ran past its timeout "
                                                  f"{HOOK_TIMEOUTS_BEFORE_SKIP} times; treated as timed out from here "
                                                  "(Hermes, which has no timeout, would hang)"))
            else:
                outcome = self.inline(fn, *args, timeout=self.hook_timeout if timeout is None else timeout,
                                      **kwargs)
                if outcome.fault is not None and outcome.fault.kind == "timeout":
                    self._timeouts[kind] = self._timeouts.get(kind, 0) + 1
            state = self.state()
            if (self._status_built and self._raw_ints and not self._status_failed
                    and "get_status" not in self._engine_dict):
                # The base class's status of these int attributes: the event reads it from its
                # state (STATUS_FROM_STATE), so it is neither built nor kept (see status()).
                held_status = STATUS_FROM_STATE
            else:
                status = self.status()  # reuses what state() read
                if status is not None and status is not self._status_seen:
                    # Packed once per distinct status: a run of events with an unchanged status
                    # shares one packed value, as it shared the dict (inspector.trace.packed).
                    self._status_seen, self._status_held = status, pack(status)
                held_status = self._status_held if status is not None else None
            event = Event(
                index=0,
                kind=kind,
                turn=self.turn if self.turn >= 0 else None,
                request=request,
                t=t,
                duration=outcome.duration,
                args=record_args or {},
                state=state,
                status=held_status,
                fault=outcome.fault,
                thread=outcome.thread if on_pool else None,  # inline hooks run on the host thread
            )
        finally:
            event_output = self._output.end(previous, pooled=on_pool)
        if event_output is not None:
            event.output = event_output
        self.trace.add_event(event)
        self.events_since_request.append(event)
        if self._aux_pending:
            self._drain_aux(event)
        return event, outcome

    def inline_into(self, ev: Event, fn: Any, *args: Any, **kwargs: Any) -> CallOutcome:
        """An engine method the host calls on its own behalf after hook ``ev``: its output joins ``ev``'s."""
        previous = self._output.begin()
        try:
            return self.inline(fn, *args, timeout=self.hook_timeout, **kwargs)
        finally:
            text = self._output.end(previous)
            if text is not None:
                ev.output = text if ev.output is None else ev.output + ("" if ev.output.endswith("\n") else "\n") + text

    def aux_sink(self, record: Any) -> None:
        """Recorder for ``call_llm``: any thread may call it (compress runs on the pool)."""
        self._aux_pending.append(record)

    def _drain_aux(self, parent: Event) -> None:
        """Auxiliary LLM calls made during a hook become events right after it."""
        while self._aux_pending:
            rec = self._aux_pending.pop(0)
            prompt = [m for m in (getattr(rec, "prompt", None) or []) if isinstance(m, dict)]
            reply = getattr(rec, "reply", None)
            error = getattr(rec, "error", None)
            ev = Event(
                index=0, kind=EV_AUX_LLM, turn=parent.turn, request=None, t=self.now(),
                duration=float(getattr(rec, "duration_s", 0.0) or 0.0),
                args={"task": getattr(rec, "task", None), "during": parent.index, "hook": parent.kind,
                      "model": getattr(rec, "model", None), "base_url": getattr(rec, "base_url", None),
                      "offline": bool(getattr(rec, "offline", False)),
                      "kwargs": jsonable(getattr(rec, "kwargs", {}) or {}),
                      "unknown_kwargs": list(getattr(rec, "unknown_kwargs", []) or []),
                      "prompt": self.list_ref(prompt) if prompt else None},
                result={"reply": {"$msg": self.store.put({"role": "assistant", "content": reply})} if reply else None,
                        "usage": jsonable(getattr(rec, "usage", None)), "error": str(error) if error else None},
                # Not a fault: call_llm raising (e.g. no provider offline) is Hermes' normal signal,
                # and what the engine does about it is what the trace shows next.
                note=f"call_llm raised: {error}" if error else None,
                thread=getattr(rec, "thread", None) or None,
            )
            ev.state = self.state()
            self.add(ev)

    def note(self, text: str, **args: Any) -> Event:
        ev = Event(index=0, kind=EV_NOTE, turn=self.turn if self.turn >= 0 else None, t=self.now(), note=text, args=args)
        ev.state = self.state()
        return self.add(ev)

    def fault(self, kind: str, message: str, **args: Any) -> Event:
        ev = Event(index=0, kind=EV_FAULT, turn=self.turn if self.turn >= 0 else None, t=self.now(),
                   fault=Fault(kind, message), args=args)
        ev.state = self.state()
        return self.add(ev)

    def list_ref(self, messages: list[dict[str, Any]]) -> dict[str, int]:
        return {"$list": self.store.put_messages(messages)}

    # -- plugin hooks (general plugins' pre_llm_call, post_tool_call, …) -------------------
    def wants_plugin_hook(self, name: str) -> bool:
        pm = self.plugin_manager
        return pm is not None and bool(getattr(pm, "_hooks", None)) and bool(pm._hooks.get(name))

    def fire_plugin_hook(self, name: str, **kwargs: Any) -> None:
        if not self.wants_plugin_hook(name):
            return
        pm = self.plugin_manager
        ev, out = self.call(EV_PLUGIN_HOOK, pm.invoke_hook, name, record_args={"hook": name}, **kwargs)
        ev.result = jsonable(out.value) if out.ok else None
