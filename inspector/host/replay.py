"""Replay a recorded session through one engine and return its trace.

This is the headless entry point the CLI, the window's worker thread, the comparison runner and
the doctor share. It builds the tokenizer and cache model from config, feeds each turn of the
session to :class:`~inspector.host.host.Host` with a teacher-forcing responder, and marks where
the original agent compacted.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from inspector import __version__
from inspector.engines.availability import unavailable_note
from inspector.gc_pause import collect_batch, collection_in_batches
from inspector.host.guard import ABANDON_GRACE, StuckHook, abandon_hook, stuck_hooks
from inspector.host.host import HOST_DIFFERENCES, Host
from inspector.host.responders import ReplayResponder, WireMessages
from inspector.host.shaping import sanitize_message, shape_message
from inspector.sessions.model import ApiCall, Compaction, Session, Turn, is_replayable, wire_message
from inspector.trace.model import EV_MARKER, EV_NOTE, Event, Fault, Trace

ProgressFn = Callable[[int, int], None]


class ReplayCancelled(Exception):
    """The user cancelled; the partial trace is attached."""

    def __init__(self, trace: Trace) -> None:
        super().__init__("replay cancelled")
        self.trace = trace


class StuckWatch:
    """Lets the thread that waits for a replay on a worker thread give up on it when a hook is stuck.

    A hook blocked inside a C call on a worker thread cannot be interrupted (see
    :mod:`inspector.host.guard`). The worker calls :meth:`attach` first thing and the replay
    hands over its trace; the waiting thread calls :meth:`abandon_if_stuck` now and then. Once
    abandoned, the partial trace ends with the timeout fault and belongs to the waiting thread:
    the worker unwinds with :class:`~inspector.host.guard.HookAbandoned` if the hook ever returns.
    """

    def __init__(self) -> None:
        self.thread: int | None = None
        self.trace: Trace | None = None
        self.stuck: StuckHook | None = None

    def attach(self) -> None:
        """Watch the calling thread (the worker)."""
        self.thread = threading.get_ident()

    @property
    def abandoned(self) -> bool:
        return self.stuck is not None

    def abandon_if_stuck(self, grace: float = ABANDON_GRACE) -> bool:
        """True once the worker's hook has been blocked ``grace`` seconds past its timeout (then never again)."""
        if self.stuck is not None or self.thread is None:
            return self.stuck is not None
        for stuck in stuck_hooks(grace, (self.thread,)):
            if abandon_hook(stuck):
                self.stuck = stuck
                if self.trace is not None:
                    record_abandonment(self.trace, stuck)
                return True
        return False


def record_abandonment(trace: Trace, stuck: StuckHook) -> Trace:
    """End a partial trace with the stuck hook, as a timeout fault carrying its stack at the deadline."""
    last = trace.events[-1] if trace.events else None
    trace.add_event(Event(index=0, kind=stuck.hook, turn=last.turn if last else None, t=last.t if last else 0.0,
                          duration=stuck.timeout + stuck.overdue, state=last.state if last else None,
                          fault=Fault("timeout", stuck.message(), stuck.stack),
                          note="the replay was abandoned here: the hook never returned"))
    trace.meta["abandoned"] = stuck.message()
    return trace.finish()


def make_counter(config: dict[str, Any]) -> Any:
    """The run's tokenizer, backed by the persistent token-count cache (see inspector.tokens.persistent)."""
    from inspector.tokens.counter import TokenCounter
    from inspector.tokens.persistent import open_cache

    return TokenCounter((config.get("inspector") or {}).get("tokenizer") or "cl100k_base", persistent=open_cache(config))


def make_simulator(config: dict[str, Any], model: str = "") -> Any:
    """The cache simulator ``config`` asks for (raises RulesError for a bad rule table or profile)."""
    from inspector.cache.rules import load_rules
    from inspector.cache.simulator import CacheSimulator, normalise_ttl

    insp = config.get("inspector") or {}
    rules_path = insp.get("cache_rules") or None
    rules = load_rules(os.path.expanduser(str(rules_path))) if rules_path else None
    ttl = normalise_ttl((config.get("prompt_caching") or {}).get("cache_ttl"))  # falsy = caching off, as in Hermes
    return CacheSimulator(insp.get("cache_profile") or "anthropic", rules=rules, ttl=ttl, model=model)


def price_meta(simulator: Any, model: str) -> dict[str, Any]:
    """The price row a run's costs come from, or that there is none ("no price for <model>")."""
    rules = getattr(simulator, "rules", None)
    price = rules.price_for(model) if rules is not None and model else None
    if price is None:
        return {"model": model, "found": False, "note": f"no price for {model or 'an unnamed model'}: costs are not estimated"}
    return {"model": model, "found": True, "match": list(price.match), "input": price.input, "output": price.output}


def models_differ(recorded: str | None, model: str | None) -> bool:
    """Both models are named and are not the same one (a provider prefix or spelling aside).

    The CLI's note and the HTML report decide with this, so they always agree.
    """
    from inspector.cache.rules import normalise_model

    recorded, model = (recorded or "").strip(), (model or "").strip()
    if not recorded or not model:
        return False
    a, b = normalise_model(recorded), normalise_model(model)
    return not (a == b or a.endswith("/" + b) or b.endswith("/" + a))


def model_note(session: Session, model: str) -> str | None:
    """Say so when the replay assumes another model than the transcript used (window, cache, prices)."""
    recorded = (session.model or "").strip()
    if not models_differ(recorded, model):
        return None
    return (f"the transcript's model is {recorded!r} but the replay uses {model!r} (config model.default) for "
            f"update_model, the cache minimum and prices; --set model.default={recorded} replays it as recorded")


def session_identifier(session: Session) -> str:
    """Session id for hooks: the transcript's own, else a stable Hermes-shaped one."""
    if session.id:
        return str(session.id)
    digest = hashlib.sha256(repr([m.get("content") for m in session.messages[:3]]).encode()).hexdigest()
    return time.strftime("%Y%m%d_%H%M%S_", time.gmtime(session.started_at or 0)) + digest[:6]


def _engine_name(engine: Any) -> str | None:
    """The engine's ``name``, or None when reading it fails (a property may raise)."""
    try:
        name = engine.name
    except Exception:
        return None
    return name if isinstance(name, str) else None


def engine_meta(loaded: Any, engine: Any) -> dict[str, Any]:
    info = getattr(loaded, "info", None)
    meta: dict[str, Any] = {}
    if info is not None:
        for field in ("name", "description", "version", "source", "path", "metadata"):
            value = getattr(info, field, None)
            if value is not None:
                meta[field] = str(value) if field == "path" else value
    try:
        meta.setdefault("name", engine.name)
    except Exception as exc:
        meta.setdefault("name", f"<name raised {type(exc).__name__}>")
    meta["class"] = f"{type(engine).__module__}.{type(engine).__qualname__}"
    fallback = getattr(loaded, "fallback", "")
    if isinstance(fallback, str) and fallback:
        # Hermes would not run the engine asked for: this run is its built-in compressor, as Hermes' would be.
        meta["fallback"] = fallback
        meta["requested"] = str(getattr(loaded, "requested", "") or "")
    sandbox = getattr(loaded, "sandbox", None)
    if sandbox is not None:
        meta["hermes_home"] = str(getattr(sandbox, "path", sandbox))
    return meta


def public_config(config: dict[str, Any]) -> dict[str, Any]:
    """The config as recorded in a trace: every credential masked whatever its nesting (see
    :func:`inspector.llm.secrets.public_value`); the name of a key's environment variable is kept."""
    from inspector.llm.secrets import public_value

    return public_value(config, drop=True)


def replayable_indices(session: Session, turn: Turn) -> list[int]:
    """The turn's message indices a replay feeds to the host (not the leading system prompt)."""
    messages = session.messages
    return [i for i in range(turn.start, turn.end)
            if (i > 0 or messages[i].get("role") != "system") and is_replayable(messages[i])]


def play_session_turn(
    host: Host,
    session: Session,
    turn: Turn,
    calls: dict[int, ApiCall],
    markers: list[Compaction],
    marker_pos: int,
    wire: WireMessages | None = None,
    kept: list[int] | None = None,
    make_responder: Callable[..., ReplayResponder] | None = None,
) -> int:
    """Feed one recorded turn to the host (teacher forcing); returns the next marker position.

    Shared by replay and follow mode so both play a transcript the same way: the original
    agent's summaries, compaction copies and rewound rows are skipped (they are artefacts of its
    own engine), and its compactions become marker events where they happened. ``kept`` is
    :func:`replayable_indices` of the turn when the caller already has it; ``make_responder`` builds
    the responder in place of :class:`ReplayResponder` (follow mode's waits for a turn still being written).
    """
    messages = session.messages
    if kept is None:
        kept = replayable_indices(session, turn)
    pending = []
    playing = [False]  # inside play_turn the host's turn counter already names this turn
    while marker_pos < len(markers) and markers[marker_pos].message_index < turn.end:
        pending.append(markers[marker_pos])
        marker_pos += 1
    closing = None
    if len(kept) >= 2 and is_interrupt_closing(messages[kept[-1]], messages[kept[-2]]):
        closing, kept = kept[-1], kept[:-1]

    def reach(index: int) -> None:
        """Markers up to the transcript message about to be fed go in now: a compaction the
        original agent made between two requests of a turn lands at that request, not at the
        turn's start."""
        while pending and pending[0].message_index <= index:
            _marker(host, pending.pop(0), host.turn if playing[0] else host.turn + 1)

    first_assistant = next((j for j, i in enumerate(kept) if messages[i].get("role") == "assistant"), len(kept))
    wire = wire if wire is not None else WireMessages(session)
    inputs = [wire[i] for i in kept[:first_assistant]]
    if first_assistant:
        reach(kept[first_assistant - 1])
    stamps = [t for i in kept[:first_assistant] if isinstance(t := messages[i].get("x_timestamp"), int | float)]
    responder = (make_responder or ReplayResponder)(session, kept[first_assistant:], calls, wire,
                                                    sent_hint=max(stamps, default=None), on_reach=reach)
    ts = messages[kept[0]].get("x_timestamp") if kept else None
    # Hermes makes at least one provider call per turn unless the user stops it first, so a
    # turn the transcript records no reply to was interrupted before its first call.
    unanswered = bool(inputs) and first_assistant == len(kept)
    playing[0] = True
    host.play_turn(inputs, responder, timestamp=ts, interrupted=turn.interrupted or unanswered or closing is not None)
    if closing is not None:
        # Not a provider reply: the row Hermes appends itself when a stopped turn ends on a tool result.
        host.history.append(wire[closing])
        host.note("the user stopped this turn during its tools; Hermes closed it with its own assistant row "
                  f"({messages[closing].get('content')!r}), which joins the history without a provider call")
    if unanswered:
        host.note("the transcript has no reply to this turn: it was finalised as interrupted before its "
                  "first provider call")
    while pending:  # compacted after the turn's last message
        _marker(host, pending.pop(0), host.turn + 1)
    return marker_pos


INTERRUPT_CLOSING = "Operation interrupted"


def is_interrupt_closing(message: dict[str, Any], previous: dict[str, Any]) -> bool:
    """The assistant row Hermes appends when a stopped turn ends on a tool result
    (agent/message_sanitization.py:282-311): no tool calls, no finish reason, after a tool row."""
    content = message.get("content")
    return (message.get("role") == "assistant" and previous.get("role") == "tool" and not message.get("tool_calls")
            and message.get("finish_reason") is None and message.get("x_finish_reason") is None
            and isinstance(content, str) and content.startswith(INTERRUPT_CLOSING))


def _marker(host: Host, c: Compaction, turn: int) -> None:
    """A marker event where the original agent compacted, with what it recorded about it."""
    summary = {"$msg": host.trace.store.put({"role": "user", "content": c.summary})} if c.summary else None
    ev = Event(index=0, kind=EV_MARKER, turn=turn, t=host._now(),
               args={"kind": c.kind, "message_index": c.message_index, "tokens_before": c.tokens_before,
                     "summary": summary, "before_request": len(host.trace.requests)},
               note=f"the original agent compacted here ({c.kind})")
    ev.state = host._state()
    host.trace.add_event(ev)


def wire_form(message: dict[str, Any]) -> dict[str, Any]:
    """What the host counts of a transcript message: shaped and sanitised (both pure functions)."""
    return sanitize_message(shape_message(wire_message(message)))


def _activated(loaded: Any) -> contextlib.AbstractContextManager:
    """The engine's sandbox HERMES_HOME, config and plugin manager, for this thread's context."""
    activate = getattr(loaded, "activate", None)
    return activate() if callable(activate) else contextlib.nullcontext()


# Turns whose messages the host prepares in one batch ahead of playing them: tokenising and
# hashing in a tight loop runs markedly faster than interleaved with hook calls, and a batch this
# size keeps the progress bar moving.
PREPARE_TURNS = 64


def _play_all(host: Host, session: Session, wire: WireMessages, progress: ProgressFn | None,
              cancel: threading.Event | None) -> bool:
    """Every turn of the session through the host; True when the user cancelled."""
    if not host.start():
        return False
    total = len(session.turns)
    markers = sorted(session.compactions, key=lambda c: c.message_index)
    marker_pos = 0
    calls_by_index = {c.message_index: c for c in session.api_calls}
    ahead: list[list[int]] = []
    for n, turn in enumerate(session.turns):
        if cancel is not None and cancel.is_set():
            host.trace.add_event(Event(index=0, kind=EV_NOTE, turn=host.turn, t=host._now(),
                                       note="replay cancelled by the user"))
            return True
        if n % PREPARE_TURNS == 0:
            collect_batch()
            ahead = [replayable_indices(session, t) for t in session.turns[n:n + PREPARE_TURNS]]
            host.prepare([wire[i] for kept in ahead for i in kept], wire.measured)
        kept = ahead[n % PREPARE_TURNS]
        marker_pos = play_session_turn(host, session, turn, calls_by_index, markers, marker_pos, wire, kept)
        wire.release(range(turn.start, turn.end))
        if progress is not None:
            progress(n + 1, total)
    return False


def is_builtin_engine(loaded: Any, engine: Any) -> bool:
    """Hermes calls ``update_model`` at init only for plugin engines; the host needs to know which this is."""
    if getattr(getattr(loaded, "info", None), "source", "") == "built-in":
        return True
    return _engine_name(engine) == "compressor" and type(engine).__module__.startswith("inspector.")


def builtin_for_transcript(loaded: Any, config: dict[str, Any]) -> Any:
    """The built-in compressor as Hermes' agent builds it for this session: with the agent's model
    and window (``ContextCompressor(model=…, config_context_length=…)``, agent/agent_init.py:1910
    of hermes-agent 0.19.0), which here are the transcript's (``settle``).

    An engine loaded before the session was read (a worker starts loading at once; a caller loads
    with its own config) was built for the config's default model; Hermes never calls
    ``update_model`` on the built-in at start, so it would keep that window. Rebuilt from the
    settled config when its model or window differ (``loaded.engine`` follows). Any other engine is
    returned as it is: a plugin learns the window from the host's ``update_model`` at start, and a
    bare engine (not a loading) was built by the caller as they meant it.
    """
    engine = getattr(loaded, "engine", loaded)
    if (engine is loaded or getattr(getattr(loaded, "info", None), "source", "") != "built-in"
            or not type(engine).__module__.startswith("inspector.")):
        return engine
    from inspector.engines.loading import build_builtin_compressor

    fresh = build_builtin_compressor(config)
    if (getattr(fresh, "model", None), getattr(fresh, "context_length", None)) == (
            getattr(engine, "model", None), getattr(engine, "context_length", None)):
        return engine
    loaded.engine = fresh
    return fresh


def host_for(loaded: Any, config: dict[str, Any], **kwargs: Any) -> Host:
    """The one way replay, follow and live build a host for a loaded engine (a LoadedEngine or a bare one).

    What the host needs from the loading (its plugin manager, whether it is the built-in
    compressor, its sandbox as Hermes' home) comes from ``loaded``; the rest is passed through
    to :class:`Host` (``session_id``, ``system_prompt``, ``counter``, ``trace``, ``profile`` …).
    """
    engine = getattr(loaded, "engine", loaded)
    sandbox = getattr(loaded, "sandbox", None)
    kwargs.setdefault("plugin_manager", getattr(loaded, "plugin_manager", None))
    kwargs.setdefault("engine_is_builtin", is_builtin_engine(loaded, engine))
    kwargs.setdefault("hermes_home", str(getattr(sandbox, "path", sandbox) or ""))
    return Host(engine, config, **kwargs)


def _pin_summary_date(engine: Any, session: Session) -> None:
    """Summaries carry "today's" date; pin it to the session's so a replay is reproducible."""
    if not hasattr(engine, "_now") or getattr(engine, "_now", None) is not None:
        return
    ts = session.started_at
    if ts is None:
        ts = next((m.get("x_timestamp") for m in session.messages if m.get("x_timestamp") is not None), None)
    if ts is None:
        return
    try:
        engine._now = datetime.datetime.fromtimestamp(float(ts), tz=datetime.timezone.utc).date()
    except (TypeError, ValueError, OverflowError, OSError):
        pass


def replay(
    session: Session,
    loaded: Any,
    config: dict[str, Any],
    *,
    counter: Any = None,
    simulator: Any = None,
    progress: ProgressFn | None = None,
    cancel: threading.Event | None = None,
    label: str | None = None,
    watch: StuckWatch | None = None,
) -> Trace:
    """Replay ``session`` through the engine in ``loaded`` (a LoadedEngine or a bare engine).

    ``watch``: on a worker thread, lets the waiting thread abandon the run if a hook gets stuck.
    """
    from inspector.host.transcript_defaults import settle

    config = settle(config, session)  # the transcript's model, window and cache profile unless the user set them
    engine = builtin_for_transcript(loaded, config)
    model = None  # the host reads the settled config's model.default
    counter = counter or make_counter(config)
    host_model = str((config.get("model") or {}).get("default") or "")
    simulator = simulator if simulator is not None else make_simulator(config, host_model)
    name = _engine_name(engine)
    sandbox = getattr(loaded, "sandbox", None)
    trace = Trace(
        meta={
            "inspector_version": __version__,
            "label": label or name or "engine",
            "engine": engine_meta(loaded, engine),
            "session": {
                "id": session.id, "format": session.source_format, "path": session.source_path,
                "title": session.title, "model": session.model, "turns": len(session.turns),
                "messages": len(session.messages), "warnings": list(session.warnings[:50]),
                "context_window": session.context_window,
            },
            "config": public_config(config),
            "tokenizer": getattr(counter, "name", "?"),
            "cache_profile": (config.get("inspector") or {}).get("cache_profile", "anthropic"),
            "assumed": config.get("x_assumed"),
            "price": price_meta(simulator, host_model),
            "host_differences": list(HOST_DIFFERENCES),
            "mode": "replay",
        }
    )
    if watch is not None:
        watch.attach()
        watch.trace = trace
    from inspector.host.calibration import usage_model_for

    wire = WireMessages(session)  # the calibration's sent forms keep their keys for the replay
    usage_model = usage_model_for(config, session, counter, simulator, sent_form=wire.sent_form)
    trace.meta["usage_model"] = usage_model.to_json()
    if usage_model.calibration is not None:  # shown with the reader's warnings wherever the session is
        trace.meta["session"]["warnings"].extend(usage_model.calibration.warnings)
    host = host_for(loaded, config, session_id=session_identifier(session), system_prompt=session.system_prompt(),
                    session_tools=session.tools, counter=counter, simulator=simulator, trace=trace, model=model,
                    session_clock=True, usage_model=usage_model)
    _pin_summary_date(engine, session)
    for warning in getattr(loaded, "warnings", None) or ():
        host.note(f"engine loading: {warning}")  # what Hermes would have done differently, in the trace
    availability = getattr(loaded, "availability", None)
    unavailable = unavailable_note(name or label or "engine", availability)
    if unavailable:
        host.note(unavailable, available=availability.available)
    assumed = model_note(session, host_model)
    if assumed:
        host.note(assumed)
    started = time.perf_counter()
    from inspector.llm import aux

    prefetch = getattr(counter, "prefetch", None)
    if callable(prefetch) and getattr(counter, "count_ahead", False):
        prefetch(session.messages, wire_form)  # tokenising ahead on another core (see TokenCounter.prefetch)
    try:
        with _activated(loaded), aux.recording(host.aux_sink), collection_in_batches():
            cancelled = _play_all(host, session, wire, progress, cancel)
            trace = host.end()
            if not cancelled and (config.get("inspector") or {}).get("probe_tools"):
                # --probe-tools: a dry run of the engine's retrieval tools needs it live, in its sandbox
                from inspector.engines.run_context import running
                from inspector.quality.probes import probe_retrieval_tools

                with running(host.run):
                    probe_retrieval_tools(trace, engine, timeout=host.settings.hook_timeout)
    finally:
        stop = getattr(counter, "stop_prefetch", None)
        if callable(stop):
            stop()
    trace.meta["host_seconds"] = round(time.perf_counter() - started, 4)
    trace.meta["usage_model"] = usage_model.to_json()
    if sandbox is not None:
        from inspector.engines.sandbox import list_written_files

        try:
            trace.meta["engine_files"] = [list(f) for f in list_written_files(sandbox)]
        except Exception as exc:
            trace.meta["engine_files_error"] = str(exc)
    if cancelled:
        raise ReplayCancelled(trace)
    return trace
