"""The agent loop around one engine, calling every hook the way Hermes does.

Which Hermes is a host profile (:mod:`inspector.host.profiles`): ``hermes-0.19.0``, checked
against the release's ``AIAgent`` by ``tests/differential/``, or ``hermes-main``, the development
line's contract (``select_context`` at assembly, pre-API gate on the selected list, compression on
a pooled daemon thread over a private deep copy with a timeout, ``on_turn_complete``); the profile's
hook table and gate rules decide which hooks run and how. Every call becomes
a trace event with its inputs, outputs, duration, the engine's token attributes and
``get_status()`` after it, any fault, and what the engine printed and logged meanwhile
(:mod:`inspector.host.capture`). The loop is incremental (``play_turn``) so replay and
live sessions share it.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import operator
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from inspector.engines.contract import ContextEngine, engine_overrides_hook
from inspector.engines.loading import window_for
from inspector.engines.run_context import RunContext, offline_stand_in_for, running
from inspector.host import capture
from inspector.host.calibration import UsageModel
from inspector.host.guard import CallOutcome, HookAbandoned, call_inline, call_on_pool, locate_in_engine
from inspector.host.profiles import HostProfile, profile_for
from inspector.host.repair import needs_repair, repair_sequence
from inspector.host.responders import ProviderResponse, Responder
from inspector.host.shaping import (
    VALID_ROLES,
    call_id,
    describe_sanitised,
    refused_roles,
    sanitize_message,
    sanitize_request,
    shape_message,
    validate_messages,
    validate_selection,
)
from inspector.llm.secrets import config_secrets
from inspector.tokens.rough import (
    estimate_request_tokens_rough,
    estimate_tools_tokens_rough,
    is_plain,
    message_rough_chars,
    rough_chars_from,
    rough_from_chars,
)
from inspector.trace.model import (
    EV_AUX_LLM,
    EV_COMPRESS,
    EV_DEFER,
    EV_FAULT,
    EV_NOTE,
    EV_PLUGIN_HOOK,
    EV_PRUNE,
    EV_REQUEST,
    EV_RESPONSE,
    EV_SELECT,
    EV_SESSION_END,
    EV_SESSION_START,
    EV_SHOULD,
    EV_SHOULD_INFO,
    EV_TOOL,
    EV_TOOL_SCHEMAS,
    EV_TURN,
    EV_TURN_COMPLETE,
    EV_UPDATE_MODEL,
    KEY_SCHEME,
    STATE_FIELDS,
    CacheInfo,
    Event,
    Fault,
    Request,
    Trace,
)

_STATE_GETTER = operator.attrgetter(*STATE_FIELDS)
_INT_ONLY = frozenset({int})
# Leaf types _jsonable returns unchanged: a dict of only these (with str keys) is copied as is.
_SCALARS = frozenset({str, int, float, bool, type(None)})
SUMMARY_PREFIXES = ("[CONTEXT COMPACTION", "[CONTEXT SUMMARY]", "[PRIOR CONTEXT")
CONTINUE_MARKER = (
    "Continue from the compressed conversation context above. "
    "This marker exists because no human user turn was available."
)
MIN_CONTEXT_LENGTH = 64_000
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

HOST_DIFFERENCES = [
    "Provider calls are simulated: the transcript's assistant and tool messages are replayed as recorded "
    "(teacher forcing); what changes with the engine is the history and the request the provider would have seen.",
    "Usage passed to update_from_response (inspector.usage): calibrated (the default when the transcript has usage) "
    "is the recorded usage where the engine's request is the one the agent sent, else a count calibrated on the "
    "recorded calls (an unrecorded head of system prompt and tool schemas plus the provider's tokenizer ratio); "
    "tokenizer is our count of the request (plus tool schemas) with cache read/write from the cache simulator; "
    "the transcript's recorded usage is kept beside it.",
    "No SessionDB: bind_session_state gets session_db=None, and compaction is emulated in place the way Hermes "
    "compacts with a session database (on_session_end, then on_session_start with boundary_reason='compression'; "
    "without a database Hermes 0.19.0 calls only on_session_start); no session rotation, no durable cooldowns "
    "or locks.",
    "No memory provider, todo store, MoA or ephemeral system prompt; the system prompt never changes on compaction.",
    "Engine tool calls found in the transcript are dispatched to the engine; the transcript's recorded result "
    "stays in the history and the engine's result is recorded beside it.",
    "Compaction summaries written by the original agent are not replayed into the history; they appear as markers.",
    "With no auxiliary provider at all, the deterministic summary of every ContextCompressor (the built-in, and "
    "those plugins subclass or build inside themselves) stands in for the LLM summary Hermes' "
    "`auxiliary.compression: auto` would obtain from the main model: no no-provider cooldown, no fallback streak "
    "(inspector.offline_fallback_counts: true restores Hermes' strict rule).",
    "During a replay, the failure-cooldown clock of every ContextCompressor (the built-in, and those plugins "
    "subclass or build inside themselves) follows the transcript's timestamps (30 s per request without them); "
    "_summary_failure_cooldown_until is translated so code comparing it with time.monotonic() agrees. Other "
    "time.monotonic() or time.time() readings in plugin code are the wall clock.",
    "Inline hooks run under a watchdog (inspector.hook_timeout_seconds); Hermes has no such timeout. A hook "
    "that times out twice is not called again in the run (treated as timed out).",
    "A compress that timed out keeps running in the background, as in Hermes; the next pass waits up to one "
    "more timeout for it (a replay reaches it in milliseconds, the agent after a provider call), and while it "
    "still runs every pass is skipped: two passes never overlap. What it changes in the engine when it "
    "finishes is undone.",
    "Each run has its own sandbox as Hermes' home (get_hermes_home); the HERMES_HOME environment variable "
    "points at one private folder shared by all runs of the process, so engines that read the variable "
    "directly share state across the runs of a comparison and their files there are not listed. For "
    "engine code, ~ is a private mirror of the home folder whose .hermes is the run's sandbox (code that "
    "reads $HOME directly sees the real home).",
    "The summariser's window for Hermes' first-compaction feasibility check comes only from "
    "auxiliary.compression.context_length (Hermes also looks it up from the provider); without it the "
    "check is skipped.",
    "The built-in compressor returns Hermes 0.19.0's lists (tests/differential), but the wording of its "
    "summary prompt, summary prefix, no-LLM fallback summary and system-prompt note is its own; where Hermes "
    "raises IndexError (a transcript of head rows and tool results only) it leaves the list unchanged.",
]


# An inline hook that ran past its timeout this many times is not called again in the run: a
# hook stuck for good would otherwise cost the timeout at every request.
HOOK_TIMEOUTS_BEFORE_SKIP = 2


def _clone(value: Any) -> Any:
    """Hermes' structural clone: dicts and lists copied recursively, scalar leaves shared.

    Hermes clones the whole transcript for ``on_turn_complete`` and every request for
    ``select_context``; most messages are flat, and a flat dict is copied in one C call.
    """
    t = type(value)
    if t is dict:
        if _SCALARS.issuperset(map(type, value.values())):
            return dict(value)
        return {k: _clone(v) for k, v in value.items()}
    if t is list:
        return [v if type(v) in _SCALARS else _clone(v) for v in value]
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clone(v) for v in value]
    return value


def _snapshot(value: Any, memo: dict[int, Any] | None = None) -> Any:
    """``copy.deepcopy`` of a transcript, with the JSON containers copied directly.

    Same result as ``copy.deepcopy`` (new dicts and lists, shared immutable leaves, aliasing
    preserved through the shared memo); anything that is not a plain dict, list or scalar is
    handed to ``copy.deepcopy`` itself. It skips deepcopy's per-object dispatch, which is most
    of the cost of copying a long history before every compression.
    """
    if memo is None:
        memo = {}
    t = type(value)
    if t in _SCALARS:
        return value
    if t is dict:
        done = memo.get(id(value))
        if done is not None:
            return done
        out: dict[Any, Any] = {}
        memo[id(value)] = out
        for k, v in value.items():
            if type(k) not in _SCALARS:
                k = copy.deepcopy(k, memo)
            out[k] = v if type(v) in _SCALARS else _snapshot(v, memo)
        return out
    if t is list:
        done = memo.get(id(value))
        if done is not None:
            return done
        items: list[Any] = []
        memo[id(value)] = items
        for v in value:
            items.append(v if type(v) in _SCALARS else _snapshot(v, memo))
        return items
    return copy.deepcopy(value, memo)


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


def _as_int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _jsonable(value: Any, depth: int = 0) -> Any:
    """Small JSON-safe rendering of a hook argument or result for the trace."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if depth > 6:
        return repr(value)[:200]
    if isinstance(value, dict):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, depth + 1) for v in value]
    return repr(value)[:500]


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


API_MODES = ("chat_completions", "codex_responses", "anthropic_messages", "bedrock_converse", "codex_app_server")


def resolved_api_mode(configured: str, provider: str, base_url: str) -> str:
    """The api_mode Hermes gives the agent, and so ``update_model`` (agent/agent_init.py:440-471):
    a known configured mode, else one derived from the provider or endpoint, else chat_completions."""
    if configured in API_MODES:
        return configured
    url = base_url.lower().rstrip("/")
    host = re.sub(r"^[a-z]+://", "", url).split("/", 1)[0].split(":", 1)[0]
    if provider in ("openai-codex", "xai", "xai-oauth") or host == "api.x.ai" or (
            host == "chatgpt.com" and "/backend-api/codex" in url):
        return "codex_responses"
    if provider == "anthropic" or host == "api.anthropic.com" or url.endswith("/anthropic"):
        return "anthropic_messages"
    if provider == "bedrock" or (host.startswith("bedrock-runtime.") and host.endswith("amazonaws.com")):
        return "bedrock_converse"
    return "chat_completions"


class HostSettings:
    """What the host needs from config.yaml, read once."""

    def __init__(self, config: dict[str, Any], *, model: str | None = None) -> None:
        model_cfg = config.get("model", {}) or {}
        comp = config.get("compression", {}) or {}
        insp = config.get("inspector", {}) or {}
        self.model = model or str(model_cfg.get("default") or model_cfg.get("model") or "")
        self.provider = str(model_cfg.get("provider") or "")
        self.base_url = str(model_cfg.get("base_url") or "")
        self.api_mode = resolved_api_mode(str(model_cfg.get("api_mode") or ""), self.provider, self.base_url)
        self.context_length = window_for(config, self.model)
        self.compression_enabled = str(comp.get("enabled", True)).lower() not in ("false", "0", "no", "off", "")
        self.max_attempts = max(1, min(10, _as_int(comp.get("max_attempts", 3)) or 3))
        self.model_thresholds = dict(comp.get("model_thresholds") or {})
        timeout = comp.get("context_timeout_seconds", 120)
        self.compress_timeout = float(timeout) if timeout is not None else 120.0
        self.hook_timeout = float(insp.get("hook_timeout_seconds", 30) or 0)

        self.platform = "cli"


class SessionClock:
    """Time as the transcript lived it, for engines' failure cooldowns during a replay.

    A replay runs a two-hour session in seconds, so a cooldown measured on the wall clock would
    outlast the whole replay. The clock follows the transcript's timestamps (or advances a fixed
    step per request when there are none), keeping monotonic semantics.

    It reads ``time.monotonic()`` when the host is built and from then on runs ahead of it by
    however much the transcript's time outruns the replay (hours, in a fast replay), so a deadline
    taken on one of the two clocks means nothing on the other; the compressor translates the one
    deadline plugins compare with ``time.monotonic()`` (``_summary_failure_cooldown_until``).
    """

    STEP_WITHOUT_TIMESTAMPS = 30.0

    def __init__(self) -> None:
        self._base = time.monotonic()
        self._first: float | None = None
        self._offset = 0.0

    def observe(self, timestamp: float | None) -> None:
        if timestamp is None:
            self._offset += self.STEP_WITHOUT_TIMESTAMPS
            return
        try:
            ts = float(timestamp)
        except (TypeError, ValueError):
            return
        if self._first is None:
            self._first = ts
        self._offset = max(self._offset, ts - self._first)

    def __call__(self) -> float:
        return self._base + self._offset


class _Assembly:
    """The request forms of one history list, with running token sums."""

    __slots__ = ("history", "n", "shaped", "wire", "keys", "tiks", "roles", "chars", "images", "tik", "raw_chars",
                 "raw_images", "open_calls", "open_results", "bad_roles")

    def __init__(self, history: list[dict[str, Any]]) -> None:
        self.history = history
        self.n = 0
        self.shaped: list[dict] = []
        self.wire: list[dict] = []
        self.keys: list[str] = []
        self.tiks: list[int] = []
        self.roles: list[str] = []  # for the cache simulator's reasons, kept so a request costs no lookups
        self.chars = self.images = self.tik = self.raw_chars = self.raw_images = 0
        # Tool calls without a result and results without a call so far, and refused roles: while
        # all are empty Hermes' request sanitiser has nothing to do, which a request checks in O(1).
        self.open_calls: set[str] = set()
        self.open_results: set[str] = set()
        self.bad_roles = 0

    @property
    def clean(self) -> bool:
        return not (self.open_calls or self.open_results or self.bad_roles)

    def add(self, shaped: dict, wire: dict, key: str, tokens: dict[str, int], raw_chars: int, raw_images: int) -> None:
        self.shaped.append(shaped)
        self.wire.append(wire)
        self.keys.append(key)
        role = wire.get("role", "?")
        self.roles.append(role)
        if role == "tool":
            cid = wire.get("tool_call_id")
            if cid:
                if cid in self.open_calls:
                    self.open_calls.discard(cid)
                else:
                    self.open_results.add(cid)
        elif role == "assistant":
            for call in wire.get("tool_calls") or ():
                cid = call_id(call)
                if cid:
                    if cid in self.open_results:
                        self.open_results.discard(cid)
                    else:
                        self.open_calls.add(cid)
        elif role not in VALID_ROLES:
            self.bad_roles += 1
        self.tiks.append(tokens["tiktoken"])
        self.chars += tokens["rough_chars"]
        self.images += tokens["images"]
        self.tik += tokens["tiktoken"]
        self.raw_chars += raw_chars
        self.raw_images += raw_images


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
        self.gates = self.profile.gates
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
        self.plugin_manager = plugin_manager
        self.engine_is_builtin = engine_is_builtin
        self.hermes_home = hermes_home
        self.history: list[dict[str, Any]] = []
        self.system_message = {"role": "system", "content": system_prompt} if system_prompt else None
        self.tools: list[dict[str, Any]] = [t for t in (session_tools or []) if isinstance(t, dict)]
        self.engine_tool_names: set[str] = set()
        self.turn = -1
        self._t0 = time.perf_counter()
        self._status_prev: dict[str, Any] | None = None
        self._status_failed = False
        self._timeouts: dict[str, int] = {}
        self._feasibility_checked = False  # §2.9 runs once, at the first compaction
        self._abandoned_compress: Any = None  # a timed-out compress still running on the pool
        self._abandoned_noted = False
        # The engine's fields as the timeout left them: the pass can never commit, so what it
        # changes when it finishes late is put back (§4.3).
        self._abandoned_fields: dict[str, Any] = {}
        self._last_sanitised: dict[str, int] | None = None
        self._turn_exit: str | None = None  # why Hermes would have ended the current turn early  # inline hook kind -> timeouts so far (see HOOK_TIMEOUTS_BEFORE_SKIP)
        self._output = capture.RunOutput(secrets=tuple(config_secrets(config)))
        self.trace.meta.setdefault("message_keys", KEY_SCHEME)
        self.trace.meta["host_profile"] = self.profile.name
        if isinstance(self.trace.meta.get("host_differences"), list):
            told = self.trace.meta["host_differences"]
            told[:0] = [d for d in self.profile.differences if d not in told]
        # get_status() inside the loop: only where the profile's Hermes would, or where it is the base
        # class's (our own code reading token attributes, which no engine can tell apart).
        self._status_anytime = self.gates.status_in_loop
        # The model the engine is told of (update_model) and the window, cache minimum and prices
        # follow; model.default wins over the transcript's, so reports must say which it was.
        self.trace.meta["assumed_model"] = self.settings.model
        self._status_from_state = getattr(type(engine), "get_status", None) is ContextEngine.get_status
        self._status_raw: tuple[Any, ...] | None = None
        self._raw_state: tuple[Any, ...] | None = None  # the attributes _state() last read
        # id(message) -> (message, shaped, wire, key, raw rough chars, raw images)
        self._form_cache: dict[int, tuple[dict, dict, dict, str, int, int]] = {}
        self._asm: _Assembly | None = None
        self._repair_list: list[dict[str, Any]] | None = None  # the history the last sequence check saw
        self._repair_checked = 0
        self._aux_pending: list[Any] = []
        self._last_blocked_reason = ""
        # id(message) -> (message, rough chars, images) for history rows not yet assembled
        self._rough_cache: dict[int, tuple[dict, int, int]] = {}
        # id(copy) -> (copy, original) for the top-level messages of the last compress snapshot
        self._snapshot_of: dict[int, tuple[dict, dict]] = {}
        self._write_1h = 0
        self._system_key: str | None = None
        self._system_forms: tuple[dict, dict, str] | None = None
        self._last_usage: dict[str, int] | None = None
        self._anchor: tuple[int, int] | None = None  # (real prompt tokens, history length then)
        self._figure = "rough"  # the source of the last pre-API pressure figure ("rough" or "anchored")
        self._prev_selected: tuple[str, ...] = ()
        self._events_since_request: list[Event] = []
        self._tools_key = ""
        self._tools_tokens = 0
        self._tools_rough = 0
        self._compress_attempts = 0
        self._overflow_attempts = 0
        self._window_noted = 0  # the engine context length the last "window differs" note named
        self._turn_user: dict[str, Any] | None = None
        self._turn_calls = 0
        self._overrides = {
            name: self.profile.has(name) and engine_overrides_hook(engine, name)
            for name in (
                "select_context",
                "on_turn_complete",
                "should_compress_info",
                "prune_tool_results_only",
                "should_defer_preflight_to_real_usage",
            )
        }

    # -- recording -------------------------------------------------------------------
    def _now(self) -> float:
        return time.perf_counter() - self._t0

    def _state(self) -> tuple[int, ...]:
        try:
            values = self._raw_state = _STATE_GETTER(self.engine)
        except Exception:
            self._raw_state = None
            return tuple(_as_int(getattr(self.engine, name, 0)) for name in STATE_FIELDS)
        if _INT_ONLY.issuperset(map(type, values)):
            return values
        return tuple(_as_int(v) for v in values)

    def _optional_hook(self, name: str) -> bool:
        """Whether the engine has ``name`` at all: Hermes checks before calling these, so an engine
        that does not subclass ContextEngine and lacks one runs without it (§10.1)."""
        try:
            return callable(getattr(self.engine, name, None))
        except Exception:  # a __getattr__ that raises something else: treat as absent
            return False

    def _status(self) -> dict[str, Any] | None:
        """``get_status()`` now; call right after :meth:`_state`, whose attribute read it reuses."""
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
        if not self._optional_hook("get_status"):  # Hermes never calls it: a duck engine may lack it
            self._status_failed = True
            return self._status_prev
        out = call_inline(self.engine.get_status, timeout=self.settings.hook_timeout)
        if not out.ok:  # recorded once; a broken get_status must not flood the trace or stall the run
            self._status_failed = True
            fault = out.fault or Fault("exception", "get_status() failed")
            fault.message = f"get_status(): {fault.message}; not called again in this run"
            self._add(Event(index=0, kind=EV_FAULT, turn=self.turn if self.turn >= 0 else None, t=self._now(),
                            fault=fault))
            return self._status_prev
        status = out.value
        if self._status_from_state and type(status) is dict:
            self._status_prev = status  # the base class builds a new flat dict on every call
            return status
        if not isinstance(status, dict):
            status = {"value": _jsonable(status)}
        if status == self._status_prev:
            return self._status_prev
        if _SCALARS.issuperset(map(type, status.values())) and all(type(k) is str for k in status):
            self._status_prev = dict(status)  # what _jsonable gives for a flat dict, without the recursion
        else:
            self._status_prev = _jsonable(status)
        return self._status_prev

    def _add(self, event: Event) -> Event:
        self.trace.add_event(event)
        self._events_since_request.append(event)
        return event

    def _call(
        self,
        kind: str,
        fn: Any,
        *args: Any,
        record_args: dict[str, Any] | None = None,
        request: int | None = None,
        on_pool: bool = False,
        timeout: float | None = None,
        **kwargs: Any,
    ) -> tuple[Event, CallOutcome]:
        """Call an engine hook under guard and record it as an event."""
        if self._abandoned_compress is not None and self._abandoned_compress.done():
            self._settle_abandoned()
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
                outcome = call_inline(fn, *args, timeout=self.settings.hook_timeout if timeout is None else timeout,
                                      **kwargs)
                if outcome.fault is not None and outcome.fault.kind == "timeout":
                    self._timeouts[kind] = self._timeouts.get(kind, 0) + 1
            event = Event(
                index=0,
                kind=kind,
                turn=self.turn if self.turn >= 0 else None,
                request=request,
                t=t,
                duration=outcome.duration,
                args=record_args or {},
                fault=outcome.fault,
                thread=outcome.thread if on_pool else None,  # inline hooks run on the host thread
            )
            event.state = self._state()
            event.status = self._status()
        finally:
            event_output = self._output.end(previous, pooled=on_pool)
        if event_output is not None:
            event.output = event_output
        self.trace.add_event(event)
        self._events_since_request.append(event)
        if self._aux_pending:
            self._drain_aux(event)
        return event, outcome

    def _inline_into(self, ev: Event, fn: Any, *args: Any, **kwargs: Any) -> CallOutcome:
        """An engine method the host calls on its own behalf after hook ``ev``: its output joins ``ev``'s."""
        previous = self._output.begin()
        try:
            return call_inline(fn, *args, timeout=self.settings.hook_timeout, **kwargs)
        finally:
            text = self._output.end(previous)
            if text is not None:
                ev.output = text if ev.output is None else ev.output + ("" if ev.output.endswith("\n") else "\n") + text

    def _settle_abandoned(self) -> None:
        """A timed-out compress pass finished in the background: undo what it did to the engine."""
        restore, self._abandoned_fields = self._abandoned_fields, {}
        self._abandoned_compress, self._abandoned_noted = None, False
        changed = []
        for name, value in restore.items():
            try:
                if getattr(self.engine, name, None) != value:
                    changed.append(name)
                    setattr(self.engine, name, value)
            except Exception:
                pass
        if changed:
            self.note("the compress pass that timed out finished in the background; it can never commit, so its "
                      f"changes to the engine were undone ({', '.join(changed)})")

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
                index=0, kind=EV_AUX_LLM, turn=parent.turn, request=None, t=self._now(),
                duration=float(getattr(rec, "duration_s", 0.0) or 0.0),
                args={"task": getattr(rec, "task", None), "during": parent.index, "hook": parent.kind,
                      "model": getattr(rec, "model", None), "base_url": getattr(rec, "base_url", None),
                      "offline": bool(getattr(rec, "offline", False)),
                      "kwargs": _jsonable(getattr(rec, "kwargs", {}) or {}),
                      "unknown_kwargs": list(getattr(rec, "unknown_kwargs", []) or []),
                      "prompt": self._list_ref(prompt) if prompt else None},
                result={"reply": {"$msg": self.store.put({"role": "assistant", "content": reply})} if reply else None,
                        "usage": _jsonable(getattr(rec, "usage", None)), "error": str(error) if error else None},
                # Not a fault: call_llm raising (e.g. no provider offline) is Hermes' normal signal,
                # and what the engine does about it is what the trace shows next.
                note=f"call_llm raised: {error}" if error else None,
                thread=getattr(rec, "thread", None) or None,
            )
            ev.state = self._state()
            self._add(ev)

    def note(self, text: str, **args: Any) -> Event:
        ev = Event(index=0, kind=EV_NOTE, turn=self.turn if self.turn >= 0 else None, t=self._now(), note=text, args=args)
        ev.state = self._state()
        return self._add(ev)

    def fault(self, kind: str, message: str, **args: Any) -> Event:
        ev = Event(index=0, kind=EV_FAULT, turn=self.turn if self.turn >= 0 else None, t=self._now(),
                   fault=Fault(kind, message), args=args)
        ev.state = self._state()
        return self._add(ev)

    def _list_ref(self, messages: list[dict[str, Any]]) -> dict[str, int]:
        return {"$list": self.store.put_messages(messages)}

    def _inputs_ref(self, inputs: list[dict[str, Any]]) -> dict[str, int] | None:
        """The turn's inputs as the wire-form keys they will have in requests (already computed)."""
        if not inputs:
            return None
        return {"$list": self.store.put_list([self._forms(m)[2] for m in inputs])}

    def _history_ref(self) -> dict[str, int]:
        """The current history as a list id of wire-form keys (shared with requests, so diffs align)."""
        asm = self._assembly()
        keys = asm.keys[1:] if self.system_message is not None else asm.keys
        return {"$list": self.store.put_list(keys)}

    def _wants_plugin_hook(self, name: str) -> bool:
        pm = self.plugin_manager
        return pm is not None and bool(getattr(pm, "_hooks", None)) and bool(pm._hooks.get(name))

    def _fire_plugin_hook(self, name: str, **kwargs: Any) -> None:
        if not self._wants_plugin_hook(name):
            return
        pm = self.plugin_manager
        ev, out = self._call(EV_PLUGIN_HOOK, pm.invoke_hook, name, record_args={"hook": name}, **kwargs)
        ev.result = _jsonable(out.value) if out.ok else None

    # -- per-message forms, cached per history object ------------------------------------
    def _forms(self, message: dict[str, Any]) -> tuple[dict, dict, str, int, int]:
        """(shaped, wire, key, raw rough chars, raw images) of a history message, computed once.

        The raw figures are Hermes' rough estimate of the message as it sits in the history
        (``str(message)``); when shaping and sanitising changed nothing they equal the wire
        form's, so the repr is taken once.
        """
        entry = self._form_cache.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[1], entry[2], entry[3], entry[4], entry[5]
        copied = self._snapshot_of.get(id(message))
        if copied is not None and copied[0] is message:
            # A message of a compress result that is still an unchanged copy of a history
            # message: its forms are the original's (equal dicts give equal forms).
            original = self._form_cache.get(id(copied[1]))
            if original is not None and original[0] is copied[1] and message == copied[1]:
                entry = (message, *original[1:])
                self._form_cache[id(message)] = entry
                return entry[1], entry[2], entry[3], entry[4], entry[5]
        shaped = shape_message(message)
        wire = sanitize_message(shaped)
        key, chars = self.store.put_measured(wire)
        figures = self._count(key, wire, chars)
        raw_chars, raw_images = rough_chars_from(wire, figures["rough_chars"], message), 0
        if raw_chars is None:
            if len(wire) == len(message) and all(a is b and wire[a] is message[b] for a, b in zip(wire, message)):
                raw_chars, raw_images = figures["rough_chars"], figures["images"]
            else:
                raw_chars, raw_images = self._raw_rough(message)
        self._form_cache[id(message)] = (message, shaped, wire, key, raw_chars, raw_images)
        return shaped, wire, key, raw_chars, raw_images

    def prepare(self, messages: list[dict[str, Any]]) -> None:
        """Compute the per-message forms of messages about to join the history, in one batch.

        Only ever a speed-up: the same objects must be what is later appended, and the forms
        are exactly what ``_forms`` would compute on demand.
        """
        for message in messages:
            self._forms(message)

    def _raw_rough(self, message: dict[str, Any]) -> tuple[int, int]:
        """``message_rough_chars`` of a history message, computed once per message object."""
        entry = self._form_cache.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[4], entry[5]
        cached = self._rough_cache.get(id(message))
        if cached is not None and cached[0] is message:
            return cached[1], cached[2]
        chars, images = message_rough_chars(message)
        self._rough_cache[id(message)] = (message, chars, images)
        return chars, images

    def _rough_tail(self, start: int) -> int:
        """``estimate_messages_tokens_rough(self.history[start:])`` from per-message figures."""
        chars = images = 0
        for msg in self.history[start:]:
            c, i = self._raw_rough(msg)
            chars += c
            images += i
        return rough_from_chars(chars, images)

    def _count(self, key: str, wire: dict[str, Any], chars: int | None = None) -> dict[str, int]:
        """Token figures of a wire message; ``chars`` is its repr length when hashing measured it."""
        figures = self.store.tokens.get(key)
        if figures is None:
            if chars is not None and is_plain(wire):
                images = 0  # nothing for Hermes' estimator to strip: the repr is what it measures
            else:
                chars, images = message_rough_chars(wire)
            figures = self.store.tokens[key] = {
                "tiktoken": self.counter.count_message(wire, key=key),
                "rough_chars": chars,
                "images": images,
            }
        return figures

    def _system(self) -> tuple[dict, dict, str] | None:
        if self.system_message is None:
            return None
        if self._system_forms is None:
            shaped = dict(self.system_message)
            wire = sanitize_message(shaped)
            key = self.store.put(wire)
            self._count(key, wire)
            self._system_forms = (shaped, wire, key)
        return self._system_forms

    # -- session lifecycle ---------------------------------------------------------------
    @_in_run
    def start(self) -> bool:
        """Hermes' agent construction (§2.2, §13.1). False when the host must stop (as Hermes would)."""
        engine = self.engine
        s = self.settings
        if not self.engine_is_builtin:
            if s.model_thresholds:
                try:
                    engine.model_thresholds = dict(s.model_thresholds)
                except Exception as exc:
                    self.fault("exception", f"setting model_thresholds failed: {exc}")
            ev, out = self._call(
                EV_UPDATE_MODEL, engine.update_model,
                record_args={"model": s.model, "context_length": s.context_length, "base_url": s.base_url,
                             "provider": s.provider, "api_mode": s.api_mode, "model_thresholds": _jsonable(s.model_thresholds)},
                model=s.model, context_length=s.context_length, base_url=s.base_url, api_key="",
                provider=s.provider, api_mode=s.api_mode,
            )
            if out.fault is not None and out.fault.kind in ("exception", "timeout"):
                # Hermes calls it unguarded while building the agent (§2.2 step 2): no agent, no session.
                what = "raised" if out.fault.kind == "exception" else "did not return"
                why = (f"update_model {what} at agent start ({out.fault.message}); Hermes cannot build the agent "
                       "with this engine, so the replay stops here.")
                self.fault("host_error", why)
                self.trace.meta["stopped"] = why
                return False
        else:
            ev = self.note(
                "built-in compressor constructed from config (Hermes does not call update_model at init for it)",
                model=s.model, context_length=s.context_length,
            )
            ev.status = self._status()
        bind = getattr(engine, "bind_session_state", None)
        if callable(bind):
            self._call("bind_session_state", bind, record_args={"session_id": self.session_id},
                       session_db=None, session_id=self.session_id)
        ctx = _as_int(getattr(engine, "context_length", 0))
        if ctx and ctx < MIN_CONTEXT_LENGTH:
            why = (f"context_length {ctx} is below Hermes' minimum of {MIN_CONTEXT_LENGTH}; "
                   "Hermes refuses to start an agent with this engine, so the replay stops here.")
            self.fault("host_error", why)
            self.trace.meta["stopped"] = why  # the run did not happen: callers report it as not completed
            return False
        if not self._optional_hook("get_tool_schemas"):
            why = ("the engine has no get_tool_schemas(), which Hermes calls unchecked while building the agent; "
                   "Hermes cannot start an agent with this engine, so the replay stops here.")
            self.fault("host_error", why)
            self.trace.meta["stopped"] = why
            return False
        ev, out = self._call(EV_TOOL_SCHEMAS, engine.get_tool_schemas)
        self._inject_tools(ev, out)
        if self._optional_hook("on_session_start"):
            self._call(
                EV_SESSION_START, engine.on_session_start, self.session_id,
                record_args={"session_id": self.session_id, "platform": s.platform, "model": s.model,
                             "context_length": ctx, "hermes_home": self.hermes_home},
                hermes_home=self.hermes_home, platform=s.platform, model=s.model, context_length=ctx,
                conversation_id=None,
            )
        self._refresh_tools()
        return True

    def _inject_tools(self, ev: Event, out: CallOutcome) -> None:
        """Normalise and add engine tool schemas (§9): bare or wrapped, deduplicated by name."""
        if not out.ok:
            return
        schemas = out.value
        if schemas is None:
            schemas = []
        if not isinstance(schemas, list):
            ev.fault = Fault("invalid_return", f"get_tool_schemas returned {type(schemas).__name__}, expected a list")
            return
        existing = {(t.get("function") or t).get("name") for t in self.tools if isinstance(t, dict)}
        added, skipped = [], []
        for schema in schemas:
            fn = schema.get("function") if isinstance(schema, dict) and schema.get("type") == "function" else schema
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                skipped.append(repr(schema)[:120])
                continue
            if fn["name"] in existing:
                skipped.append(f"{fn['name']} (duplicate)")
                continue
            self.tools.append({"type": "function", "function": fn})
            self.engine_tool_names.add(fn["name"])
            existing.add(fn["name"])
            added.append(fn["name"])
        ev.result = {"added": added, "skipped": skipped}
        self.trace.tool_schemas = list(self.tools)
        if skipped and any("duplicate" not in s for s in skipped):
            ev.fault = Fault("invalid_return", "schemas without a string name were skipped: " + "; ".join(skipped))

    def _refresh_tools(self) -> None:
        self.trace.tool_schemas = list(self.tools)
        self._tools_key = self.store.put({"role": "tools", "tools": self.tools}) if self.tools else ""
        self._tools_tokens = self.counter.count_tools(self.tools) if self.tools else 0
        self._tools_rough = estimate_tools_tokens_rough(self.tools)

    @_in_run
    def end(self) -> Trace:
        self.turn = self.turn if self.turn >= 0 else -1
        if self.trace.meta.get("stopped"):  # no agent was built: there is no session to end
            return self.trace.finish()
        self._fire_plugin_hook("on_session_end", session_id=self.session_id, completed=True, interrupted=False,
                               model=self.settings.model, platform=self.settings.platform)
        if self._optional_hook("on_session_end"):
            self._call(
                EV_SESSION_END, self.engine.on_session_end, self.session_id, list(self.history),
                record_args={"session_id": self.session_id, "messages": self._history_ref()},
            )
        run_output = self._output
        if run_output.over:
            self.note(f"engine output: {run_output.over:,} characters were not recorded once the run's "
                      f"{capture.TRACE_CHARS:,} were (each event that lost some says so)")
        if run_output.late:
            self.note(f"engine output: {run_output.late:,} characters written by a compress pass after it timed out "
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
        self.turn += 1
        if self.clock is not None and timestamp is not None:
            self.clock.observe(timestamp)
        self._compress_attempts = 0
        self._overflow_attempts = 0
        self._turn_exit = None
        self._turn_calls = 0
        self._last_usage = None
        user = next((m for m in inputs if m.get("role") == "user"), None)
        self._turn_user = user
        ev = Event(index=0, kind=EV_TURN, turn=self.turn, t=self._now(),
                   args={"inputs": self._inputs_ref(inputs), "timestamp": timestamp})
        ev.state = self._state()
        self._add(ev)
        self.history.extend(inputs)
        self._preflight()
        # After the preflight, with the history it left (agent/turn_context.py:686-700).
        if self._wants_plugin_hook("pre_llm_call"):  # the arguments cost a copy of the message
            self._fire_plugin_hook("pre_llm_call", session_id=self.session_id, task_id=self.session_id,
                                   turn_id=self._turn_id(), user_message=_jsonable(user),
                                   conversation_history=list(self.history), is_first_turn=self.turn == 0,
                                   model=self.settings.model, platform=self.settings.platform, sender_id="")
        last_assistant = None
        try:
            while True:
                pending = responder.pending_inputs()
                if pending:
                    self.history.extend(pending)
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
            else:  # a terminal provider failure returns early: no post_llm_call, no on_turn_complete (§2.10)
                self.note(f"the provider failed ({type(exc).__name__}); Hermes ends the turn early and skips "
                          "on_turn_complete")
            raise
        exit_reason = self._turn_exit or ("interrupted" if interrupted else "completed")
        self._finish_turn(user, last_assistant, failed=exit_reason not in ("completed", "interrupted"),
                          interrupted=interrupted, reason=exit_reason)

    def _turn_id(self) -> str:
        return f"turn-{self.turn}"

    def _finish_turn(self, user: Any, last_assistant: Any, *, failed: bool, interrupted: bool, reason: str) -> None:
        # Once per turn with a final response, never on an interrupted one (agent/turn_finalizer.py:477-495).
        final = last_assistant.get("content") if isinstance(last_assistant, dict) else None
        if final and not interrupted and self._wants_plugin_hook("post_llm_call"):
            self._fire_plugin_hook("post_llm_call", session_id=self.session_id, task_id=self.session_id,
                                   turn_id=self._turn_id(), user_message=_jsonable(user),
                                   assistant_response=final, conversation_history=list(self.history),
                                   model=self.settings.model, platform=self.settings.platform)
        if self._overrides["on_turn_complete"]:
            clones = [_clone(m) for m in self.history]
            self._call(
                EV_TURN_COMPLETE, self.engine.on_turn_complete, clones,
                record_args={"messages": self._history_ref(), "usage": self._last_usage,
                             "api_call_count": self._turn_calls, "turn_exit_reason": reason},
                usage=dict(self._last_usage) if self._last_usage else None,
                turn_id=self._turn_id(), task_id=self.session_id, api_call_count=self._turn_calls,
                interrupted=interrupted, failed=failed, turn_exit_reason=reason,
            )

    def _cooldown_active(self) -> bool:
        getter = getattr(self.engine, "get_active_compression_failure_cooldown", None)
        if not callable(getter):
            return False
        out = call_inline(getter, timeout=self.settings.hook_timeout)
        return bool(out.value) if out.ok else False

    def _cooldown_blocks(self, tokens: int) -> bool:
        """The pre-API gate's cooldown check; over the threshold it says why, once per reason ([M])."""
        if not self._cooldown_active():
            return False
        threshold = _as_int(getattr(self.engine, "threshold_tokens", 0))
        if threshold and tokens >= threshold:
            reason = self._blocked_reason(tokens)
            if reason != self._last_blocked_reason:
                self._last_blocked_reason = reason
                self.note(f"over threshold ({tokens:,} ≥ {threshold:,}) but compression is blocked: {reason}",
                          site="pre_api")
        return True

    def _defer(self, tokens: int) -> bool:
        if not self._overrides["should_defer_preflight_to_real_usage"]:
            return False
        ev, out = self._call(EV_DEFER, self.engine.should_defer_preflight_to_real_usage, tokens,
                             record_args={"rough_tokens": tokens})
        ev.result = bool(out.value) if out.ok else None
        return bool(out.value) if out.ok else False

    def _should_compress(self, tokens: int, site: str, figure: str = "rough") -> bool:
        ev, out = self._call(EV_SHOULD, self.engine.should_compress, tokens,
                             record_args={"prompt_tokens": tokens, "site": site, "figure": figure})
        if not out.ok:
            return False
        if not isinstance(out.value, bool):
            ev.fault = Fault("invalid_return", f"should_compress returned {type(out.value).__name__}, expected bool; "
                             "Hermes uses its truthiness")
        ev.result = _jsonable(out.value)
        return bool(out.value)

    def _preflight(self) -> None:
        """Turn-prologue preflight compression (§2.3)."""
        if not self.settings.compression_enabled or not self.history:
            return
        e = self.engine
        pf, pl = _as_int(getattr(e, "protect_first_n", 3)), _as_int(getattr(e, "protect_last_n", 6))
        threshold = _as_int(getattr(e, "threshold_tokens", 0))
        history_rough = self._history_rough()
        if not (len(self.history) > pf + pl + 1 or history_rough >= threshold):
            return
        system = self.system_message["content"] if self.system_message else ""
        t = self._request_rough(history_rough, system)
        deferred = self._defer(t)
        last = _as_int(getattr(e, "last_prompt_tokens", 0))
        if not deferred and 0 <= last < t:
            try:
                e.last_prompt_tokens = t
            except Exception:
                pass
        if deferred or self._cooldown_active():
            return
        if not self._should_compress(t, "preflight"):
            return
        for _ in range(3):
            before_rows, before_t = len(self.history), t
            self._compress(t, site="preflight")
            t = self._request_rough(self._history_rough(), system)
            # Progress = fewer rows or under 95 % of the tokens (agent/turn_context.py:199-206, 664-666).
            progress = len(self.history) < before_rows or (before_t > 0 and t < before_t * 0.95)
            if not progress or not self._should_compress(t, "preflight"):
                break

    def _request_rough(self, history_rough: int, system: str) -> int:
        """estimate_request_tokens_rough(history, system_prompt, tools) from cached parts."""
        return (len(system or "") + 3) // 4 + history_rough + self._tools_rough

    def _assembly(self) -> _Assembly:
        """Per-message forms and running sums for the current history, extended on append.

        The history only grows by appending between compactions, so each request costs the new
        messages, not the whole context; a replaced list (compress, prune) starts over.
        """
        asm = self._asm
        history = self.history
        if asm is None or asm.history is not history or asm.n > len(history):
            asm = _Assembly(history)
            system = self._system()
            if system is not None:
                asm.add(system[0], system[1], system[2], self.store.tokens[system[2]], 0, 0)
            asm.n = 0
            self._asm = asm
        tokens = self.store.tokens
        for msg in history[asm.n:]:
            shaped, wire, key, raw_chars, raw_images = self._forms(msg)
            asm.add(shaped, wire, key, tokens[key], raw_chars, raw_images)
        asm.n = len(history)
        return asm

    def _history_rough(self) -> int:
        """estimate_messages_tokens_rough(history) from the cached per-message figures."""
        asm = self._assembly()
        return rough_from_chars(asm.raw_chars, asm.raw_images)

    def _select(self, asm: _Assembly, keys: tuple[str, ...]) -> tuple[list[dict], tuple[str, ...], bool]:
        """``select_context`` with Hermes' skip check and validation table (§3)."""
        wire = asm.wire
        if not self._overrides["select_context"]:
            return wire, keys, False
        shaped = asm.shaped
        request_arg = [_clone(m) for m in shaped]  # Hermes hands the hook structural clones
        snapshot = list(request_arg)
        user = self._turn_user
        incoming = _clone(user) if isinstance(user, dict) else user
        conv = [_clone(m) for m in self.history]
        ev, out = self._call(
            EV_SELECT, self.engine.select_context, request_arg,
            record_args={"request_messages": {"$list": self.store.put_list(keys)},
                          "budget_tokens": _as_int(getattr(self.engine, "context_length", 0))},
            conversation_messages=conv, incoming_message=incoming,
            budget_tokens=_as_int(getattr(self.engine, "context_length", 0)) or 0,
        )
        # Scalars are shared with the cached forms, so this deep comparison is cheap.
        mutated = len(request_arg) != len(snapshot) or any(
            a is not b or a != c for a, b, c in zip(request_arg, snapshot, shaped))
        if not out.ok:
            ev.result = None
            ev.note = "select_context failed; using unmodified request messages (as Hermes does)"
            return wire, keys, False
        result = out.value
        problem = validate_selection(result)
        if problem:
            ev.fault = Fault("invalid_return", problem + "; Hermes uses the unmodified request")
            ev.result = _jsonable(type(result).__name__)
            return wire, keys, False
        if result is None:
            if not mutated:
                ev.result = None
                return wire, keys, False
            ev.fault = Fault("mutated_input", "select_context returned None but mutated request_messages in place; "
                             "Hermes would send the mutated list")
            result = request_arg
        elif result is request_arg and mutated:
            ev.note = "engine edited request_messages in place and returned it"
        # A message the engine passed through unchanged keeps the forms it already has (no new
        # hash or sanitising); anything it built or edited is sanitised and stored.
        origin = {id(c): i for i, c in enumerate(snapshot)}
        known: dict[int, str] = {}
        wires = []
        for m in result:
            i = origin.get(id(m))
            if i is not None and m == shaped[i]:
                wire_form = asm.wire[i]
                known[id(wire_form)] = keys[i]
            else:
                wire_form = sanitize_message(m)
            wires.append(wire_form)
        selected, done = sanitize_request(wires)
        new_keys = tuple(known.get(id(m)) or self.store.put(m) for m in selected)
        for k, m in zip(new_keys, selected):
            if id(m) not in known:
                self._count(k, m)
        ev.result = {"$list": self.store.put_list(new_keys)}
        if any(done.values()):
            ev.note = describe_sanitised(done)
        if new_keys == keys:
            return wire, keys, False
        return selected, new_keys, True

    def _sanitised(self, asm: _Assembly, keys: tuple[str, ...]) -> tuple[list[dict], tuple[str, ...]]:
        """The assembled request after Hermes' sanitiser, for a history with unpaired tool calls or
        results or refused roles (a compress result, a damaged transcript)."""
        selected, done = sanitize_request(asm.wire)
        if selected is asm.wire:
            return selected, keys
        key_of = {id(w): k for w, k in zip(asm.wire, keys)}
        sel_keys = []
        for m in selected:
            k = key_of.get(id(m))
            if k is None:  # a stub result
                k = self.store.put(m)
                self._count(k, m)
            sel_keys.append(k)
        if done != self._last_sanitised:  # said when it changes, not at every request
            self._last_sanitised = done
            self.note(describe_sanitised(done))
        return selected, tuple(sel_keys)

    def _pressure(self, asm: _Assembly, keys: tuple[str, ...], differs: bool) -> tuple[int, int]:
        """(rough pressure for the pre-API gate, tokenizer count) of the request being sent."""
        if differs:
            chars = images = tik = 0
            tokens = self.store.tokens
            for k in keys:
                t = tokens[k]
                chars += t["rough_chars"]
                images += t["images"]
                tik += t["tiktoken"]
        else:
            chars, images, tik = asm.chars, asm.images, asm.tik
        rough = rough_from_chars(chars, images) + self._tools_rough + self.usage_model.hidden_tokens
        self._figure = "rough"  # what the pre-API gate's figure is, recorded with the gate (issue 21)
        if self._anchor is not None and self.gates.pre_api_tokens == "usage_anchor":
            real, length = self._anchor
            if length <= len(self.history):
                # [M] usage anchor: the last real prompt plus what was appended since.
                rough = real + self._rough_tail(length)
                self._figure = "anchored"
        return rough, tik + self._tools_tokens + 3

    def _request_cycle(self, responder: Responder) -> ProviderResponse | None:
        """Assemble, select, gate, call the provider, feed usage, run tools. None = turn over."""
        while True:
            if self.gates.repair_history:
                self._repair_history()
            asm = self._assembly()
            keys = tuple(asm.keys)  # one copy per request, shared by the trace's list and the simulator
            selected, sel_keys, by_engine = self._select(asm, keys)
            if not by_engine and not asm.clean:
                selected, sel_keys = self._sanitised(asm, keys)
            pressure, tik = self._pressure(asm, sel_keys, sel_keys is not keys)
            s = self.settings
            if (
                s.compression_enabled
                and len(self.history) > 1
                and self._compress_attempts < s.max_attempts
                and not self._defer(pressure)
                and not self._cooldown_blocks(pressure)
                and self._should_compress(pressure, "pre_api", self._figure)
            ):
                self._compress_attempts += 1
                committed = self._compress(pressure, site="pre_api")
                if committed:
                    continue
            if self._overflow(tik, pressure):
                continue
            break
        try:
            response = responder.respond(list(selected), self.tools)
        except Exception as exc:
            if getattr(exc, "kind", None) == "context_overflow" and self._provider_overflow(exc, pressure):
                return self._request_cycle(responder)  # compacted: re-assemble and select again
            raise
        if response is None:
            return None
        if self.clock is not None:
            self.clock.observe(response.timestamp)
        self._turn_calls += 1
        return self._record_response(response, responder, keys, sel_keys, by_engine, pressure, tik)

    def _repair_history(self) -> None:
        """Hermes' role-sequence repair of the live history before a request (:mod:`inspector.host.repair`).

        Checked from where the last check ended (backed up to an assistant message, where the
        pass's bookkeeping restarts), so a growing history costs its new messages only.
        """
        history = self.history
        checked = self._repair_checked if self._repair_list is history else 0
        if checked > len(history):
            checked = 0
        if checked == len(history):
            return
        start = max(0, checked - 1)
        while start > 0 and not (isinstance(history[start], dict) and history[start].get("role") == "assistant"):
            start -= 1
        if needs_repair(history, start):
            repaired, count = repair_sequence(history)
            if count:
                dropped = len(history) - len(repaired)
                history[:] = repaired
                self._asm = None
                self.note(f"Hermes repaired the history's role sequence before this request ({count} repair(s), "
                          f"{dropped} message(s) fewer): merged consecutive user or assistant messages, dropped "
                          "tool results without their call", site="repair")
        self._repair_list, self._repair_checked = history, len(history)

    def _overflow(self, tik: int, rough: int) -> bool:
        """The simulated provider rejects a request over the window (§2.7 context-overflow path).

        Hermes then compresses (up to 3 attempts a turn, success = fewer rows or < 95 % of the
        rough tokens) and retries; when that fails the turn ends with ``compression_exhausted``.
        The replay records that verdict and goes on with the transcript (teacher forcing).
        True when a compression committed and the request must be re-assembled.
        """
        # The provider's window is the model's, whatever the engine believes its context length is.
        believed = _as_int(getattr(self.engine, "context_length", 0))
        ctx = self.settings.context_length or believed
        sent = self.usage_model.provider_tokens(tik)  # as the provider counts it (the head included)
        if not ctx or sent <= ctx:
            return False
        if believed and believed != ctx and believed != self._window_noted:
            self._window_noted = believed
            self.note(f"the engine's context_length is {believed:,} but the model's window is {ctx:,}: the provider "
                      "rejects what exceeds the model's window", site="overflow")
        if not self.settings.compression_enabled:
            self.fault("context_overflow", f"request of {sent:,} tokens exceeds the {ctx:,}-token window and "
                       "compression is disabled: Hermes would end the turn with an error here")
            return False
        if self._overflow_attempts >= 3:
            self.fault("compression_exhausted", f"request of {sent:,} tokens still exceeds the {ctx:,}-token window "
                       "after 3 compression attempts: Hermes would end this turn (compression_exhausted); "
                       "the replay continues with the transcript")
            return False
        self._overflow_attempts += 1
        self.fault("context_overflow", f"the provider would reject this request: {sent:,} tokens > {ctx:,}-token "
                   f"window; Hermes compresses and retries (attempt {self._overflow_attempts} of 3)")
        rows = len(self.history)
        committed = self._compress(rough, site="overflow")
        if committed and (len(self.history) < rows or self._history_rough() < 0.95 * rough):
            return True
        if committed:
            return True
        self._overflow_attempts = 3
        return self._overflow(tik, rough)

    def _provider_overflow(self, exc: Exception, rough: int) -> bool:
        """A real provider rejected the request as too long (§2.7): compress and retry, 3 times at most."""
        if not self.settings.compression_enabled or self._overflow_attempts >= 3:
            return False
        self._overflow_attempts += 1
        self.fault("context_overflow", f"the provider rejected the request as too long ({exc}); Hermes compresses "
                   f"and retries (attempt {self._overflow_attempts} of 3)")
        limit = reported_context_limit(str(exc))
        current = _as_int(getattr(self.engine, "context_length", 0)) or self.settings.context_length
        if limit is not None and limit < current:
            # The error names the real window: Hermes adopts it before compressing (§2.7).
            s = self.settings
            s.context_length = limit
            self._call(EV_UPDATE_MODEL, self.engine.update_model,
                       record_args={"model": s.model, "context_length": limit, "base_url": s.base_url,
                                    "provider": s.provider, "api_mode": s.api_mode, "reason": "provider-reported limit"},
                       model=s.model, context_length=limit, base_url=s.base_url, api_key="",
                       provider=s.provider, api_mode=s.api_mode)
        return self._compress(rough, site="overflow")

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
        req_index = len(self.trace.requests)
        assistant = response.message
        # Through the per-message cache: the assistant joins the history next, already shaped.
        a_key = self._forms(assistant)[2]
        completion = self.store.tokens[a_key]["tiktoken"]
        differs = sel_keys is not keys  # chosen by the engine or changed by the sanitiser
        if differs:
            tokens, messages = self.store.tokens, self.store.messages
            block_tokens = [tokens[k]["tiktoken"] for k in sel_keys]
            roles = [messages[k].get("role", "?") for k in sel_keys]
        else:
            asm = self._assembly()
            block_tokens, roles = asm.tiks, asm.roles
        sent = response.sent_at if response.sent_at is not None else response.timestamp
        cache = self._simulate(sel_keys, block_tokens, sent, roles, response.source_index)
        usage = self.usage_model.usage(response, tik=tik, tools_tokens=self._tools_tokens, completion=completion,
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
            index=req_index, turn=self.turn, call=self._turn_calls - 1, event=0,
            assembled=assembled_id, selected=selected_id, selected_by_engine=by_engine,
            tokens={"tiktoken": tik, "rough": pressure, "tools": self._tools_tokens, "completion": completion},
            usage=usage_dict,
            recorded=response.recorded.to_recorded_dict() if response.recorded is not None else None,
            cache=cache, timestamp=response.timestamp, response_key=a_key,
        )
        self.trace.requests.append(request)
        ev = Event(index=0, kind=EV_REQUEST, turn=self.turn, request=req_index, t=self._now(),
                   args={"messages": {"$list": selected_id}}, result={"$msg": a_key})
        ev.state = self._state()
        self._add(ev)
        request.event = ev.index
        self._events_since_request = []
        self._prev_selected = tuple(sel_keys)

        ev, _ = self._call(EV_RESPONSE, self.engine.update_from_response, usage_dict,
                           record_args={"usage": usage_dict}, request=req_index)
        self._last_usage = dict(usage_dict)
        self.history.append(assistant)
        if usage.prompt_tokens > 0:
            self._anchor = (usage.prompt_tokens, len(self.history) - 1)
        calls = [c for c in (assistant.get("tool_calls") or []) if isinstance(c, dict)]
        one_by_one = getattr(responder, "tool_result", None)
        if self.gates.tool_results_each and callable(one_by_one) and any(
                (c.get("function") or {}).get("name") in self.engine_tool_names for c in calls):
            # Each result joins the history before the next call of the batch, so an engine tool
            # sees the results before it (agent/tool_executor.py:1028, the sequential path).
            for call in calls:
                result = self._dispatch_engine_tools([call], req_index).get(str(call.get("id")))
                row = one_by_one(assistant, call, result)
                if row is not None:
                    self.history.append(row)
        else:
            engine_results = self._dispatch_engine_tools(calls, req_index)
            self.history.extend(responder.tool_results(assistant, engine_results))
        if calls:
            self._after_tools()
        return response

    def _dispatch_engine_tools(self, calls: list[dict[str, Any]], req_index: int) -> dict[str, str]:
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
            self._fire_plugin_hook("pre_tool_call", tool_name=name, args=args, task_id=self.session_id,
                                   session_id=self.session_id)
            before = [dict(m) for m in self.history]
            ev, res = self._call(EV_TOOL, self.engine.handle_tool_call, name, args,
                                 record_args={"name": name, "args": _jsonable(args), "call_id": call.get("id")},
                                 request=req_index, messages=self.history)
            if res.ok and isinstance(res.value, str):
                result = res.value
            elif res.ok:
                result = json.dumps({"error": f"Context engine tool '{name}' returned {type(res.value).__name__}, not a string"})
                ev.fault = Fault("invalid_return", f"handle_tool_call returned {type(res.value).__name__}, expected str")
            else:  # Hermes quotes str(exc), without the exception's type
                detail = res.fault.message.split(": ", 1)[-1] if res.fault.kind == "exception" else res.fault.message
                result = json.dumps({"error": f"Context engine tool '{name}' failed: {detail}"})
            if len(before) != len(self.history) or any(a != b for a, b in zip(before, self.history)):
                ev.fault = ev.fault or Fault("mutated_input", "handle_tool_call mutated the live transcript it was given")
                self._form_cache.clear()
                self._rough_cache.clear()
                self._asm = None
            ev.result = {"$msg": self.store.put({"role": "tool", "tool_call_id": call.get("id"), "content": result})}
            out[str(call.get("id"))] = result
            self._fire_plugin_hook("post_tool_call", tool_name=name, args=args, result=result,
                                   task_id=self.session_id, session_id=self.session_id)
        return out

    def _after_tools(self) -> None:
        """Post-tool compression or proactive prune ([M] compress_after_tool_results, §2.7)."""
        e = self.engine
        if self.gates.post_tool_tokens == "last_prompt":
            self._after_tools_last_prompt()
            return
        if self.gates.post_tool_waits_for_usage and getattr(e, "awaiting_real_usage_after_compression", False):
            return
        last = _as_int(getattr(e, "last_prompt_tokens", 0))
        figure = "rough"
        if self._anchor is not None:
            real, length = self._anchor
            t, figure = real + self._rough_tail(length), "anchored"
        elif last > 0:
            t, figure = last, "last_prompt"
        elif last == -1:
            t, figure = 0, "reset"
        else:
            t = estimate_request_tokens_rough(self.history, tools=self.tools)
        if self.settings.compression_enabled and self._should_compress(t, "post_tool", figure):
            self._compress(t, site="post_tool")
            return
        if not self.settings.compression_enabled:
            return
        if self._overrides["should_compress_info"]:
            ev, out = self._call(EV_SHOULD_INFO, e.should_compress_info, t, record_args={"prompt_tokens": t})
            ev.result = _jsonable(out.value) if out.ok else None
        if self._overrides["prune_tool_results_only"]:
            before = self.history
            ev, out = self._call(EV_PRUNE, e.prune_tool_results_only, before, record_args={
                "messages": self._history_ref(), "current_tokens": t}, current_tokens=t)
            if not out.ok:
                return
            value = out.value
            if not (isinstance(value, tuple) and len(value) == 2):
                ev.fault = Fault("invalid_return", f"prune_tool_results_only returned {type(value).__name__}, expected (list, int)")
                return
            new_list, count = value
            ev.result = {"count": _jsonable(count)}
            if count and new_list is not before:
                problem = validate_messages(new_list)
                if problem:
                    ev.fault = Fault("invalid_return", problem)
                    return
                self.history = list(new_list)
                self._anchor = None
                ev.result["$list"] = self._history_ref()["$list"]

    def _after_tools_last_prompt(self) -> None:
        """0.19.0's check after a tool round (agent/conversation_loop.py:5121-5150): the engine's
        last_prompt_tokens (0 right after a compaction, the rough request estimate when it is 0),
        and compress is then given last_prompt_tokens as its current_tokens."""
        if not self.settings.compression_enabled:
            return
        last = _as_int(getattr(self.engine, "last_prompt_tokens", 0))
        if last > 0:
            t = last
        elif last == -1:
            t = 0
        else:
            t = estimate_request_tokens_rough(self.history, tools=self.tools or None)
        if self._should_compress(t, "post_tool"):
            self._compress(_as_int(getattr(self.engine, "last_prompt_tokens", 0)), site="post_tool")

    # -- compression -----------------------------------------------------------------------
    def _compress(self, approx_tokens: int, *, site: str, focus_topic: str | None = None, force: bool = False) -> bool:
        """Hermes' compress_context around ``engine.compress`` (§4). True when a boundary committed."""
        e = self.engine
        if not force:
            blocked_fn = getattr(type(e), "_automatic_compression_blocked", None)
            if callable(blocked_fn):
                out = call_inline(blocked_fn, e, timeout=self.settings.hook_timeout)
                if out.ok and out.value:
                    self.note(f"automatic compression blocked by the engine: {self._blocked_reason(approx_tokens)}",
                              site=site)
                    return False
        if not self._feasibility_checked:
            self._feasibility_checked = True
            self._check_aux_feasibility()
        stale = self._abandoned_compress
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
                    self.note("compression skipped: the pass that timed out is still running in the background "
                              "(Hermes never runs two passes for one session at once); later attempts are skipped "
                              "at once until it ends", site=site)
                return False
            except Exception:
                pass
            self._settle_abandoned()
        candidates = {"current_tokens": approx_tokens, "focus_topic": focus_topic, "force": force}
        kwargs = supported_compress_kwargs(e.compress, candidates)
        before = self.history
        # 0.19.0 hands compress the live list and compares the result with a deep copy taken first
        # (agent/conversation_compression.py:1059-1060, 1104); [M] hands a deep copy to a pool thread.
        live = self.gates.compress_input == "live"
        try:
            snapshot = _snapshot(before)
        except Exception as exc:
            self.fault("host_error", f"could not deep-copy the transcript for compress: {exc}")
            return False
        handed = before if live else snapshot
        pre = snapshot if live else before  # the history as it was before the call
        before_objs = list(before) if live else []
        self._snapshot_of = {} if live else {id(c): (c, o) for c, o in zip(snapshot, before) if type(c) is dict}
        saved = {k: copy.deepcopy(v) for k, v in vars(e).items() if k in TIMEOUT_RESTORE_FIELDS} if hasattr(e, "__dict__") else {}
        host_thread = threading.current_thread().name
        timeout = self.settings.compress_timeout
        on_pool = self.profile.on_pool("compress") and timeout > 0
        # Inline (0.19.0 has no compress timeout at all), the watchdog allows the longer of the two
        # timeouts, so a summariser call that takes a while is not cut short.
        inline_timeout = max(self.settings.hook_timeout, timeout) if timeout > 0 else self.settings.hook_timeout
        ev, out = self._call(
            EV_COMPRESS, e.compress, handed,
            record_args={"messages": self._history_ref(), "site": site, "kwargs": _jsonable(kwargs),
                         "tokens_before": approx_tokens, "host_thread": host_thread},
            on_pool=on_pool, timeout=timeout if on_pool else inline_timeout, **kwargs,
        )
        if live:
            self._forget_edited(before_objs, snapshot)
        if not out.ok:
            if live and (before != snapshot or (out.fault is not None and out.fault.kind == "timeout")):
                # A hook still running past the watchdog could go on editing the list: continue on a copy.
                self.history = snapshot
                ev.note = "compress failed after editing the live transcript; the host restored it"
            if out.fault and out.fault.kind == "timeout" and on_pool:
                for k, v in saved.items():
                    try:
                        setattr(e, k, v)
                    except Exception:
                        pass
                rec = getattr(e, "record_timeout_failure", None)
                if callable(rec):
                    self._inline_into(ev, rec, out.fault.message, failure_kind="stalled")
                ev.note = "compression timed out before commit: discarded, transcript unchanged"
                ev.state = self._state()
                self._abandoned_compress = out.abandoned
                if out.abandoned is not None:
                    self._abandoned_fields = {k: copy.deepcopy(v) for k, v in vars(e).items()
                                              if k in TIMEOUT_RESTORE_FIELDS} if hasattr(e, "__dict__") else {}
                if site in ("pre_api", "preflight"):
                    # Hermes ends the turn here (§4.3); the replay goes on with the transcript.
                    self._turn_exit = "context_compression_timeout"
                    self.fault("context_compression_timeout",
                               "Hermes would end this turn here (failed, context_compression_timeout); "
                               "the replay continues with the transcript", site=site)
            return False
        result = out.value
        if getattr(e, "_last_compress_aborted", False):
            ev.note = f"compression aborted by the engine: {getattr(e, '_last_summary_error', '') or 'no reason given'}"
            ev.result = None
            return False
        if result is handed and not self.gates.in_place_commits:
            if len(snapshot) != len(before) or snapshot != before:
                ev.note = (f"compress changed its input list in place ({len(before)} → {len(snapshot)} messages) and "
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
                before[:] = _snapshot(pre)
                self._asm = None
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
        compressed = self._ensure_user_turn(list(result), pre)
        self.history = compressed
        after_id = self._history_ref()["$list"]
        system = self.system_message["content"] if self.system_message else ""
        rough_after = self._request_rough(self._history_rough(), system)  # from the per-message figures
        ev.result = {"$list": after_id, "tokens_after": rough_after, "count_after": len(compressed),
                     "count_before": len(pre)}
        # Commit: the boundary notifications Hermes sends with a session store, in place (§4.5).
        if self._optional_hook("on_session_end"):
            self._call(EV_SESSION_END, e.on_session_end, self.session_id, before,
                       record_args={"session_id": self.session_id, "messages": ev.args["messages"],
                                    "reason": "compression"})
        if self._optional_hook("on_session_start"):
            self._call(EV_SESSION_START, e.on_session_start, self.session_id,
                       record_args={"session_id": self.session_id, "boundary_reason": "compression"},
                       boundary_reason="compression", old_session_id=self.session_id,
                       platform=self.settings.platform, conversation_id=None)
        self._anchor = None
        for name, value in (("last_compression_rough_tokens", rough_after), ("last_prompt_tokens", -1),
                            ("last_completion_tokens", 0), ("awaiting_real_usage_after_compression", True)):
            try:
                setattr(e, name, value)
            except Exception:
                pass
        if getattr(e, "_last_compression_made_progress", False):
            rec = getattr(type(e), "record_completed_compaction", None)
            if callable(rec):
                self._inline_into(ev, rec, e, used_fallback=bool(getattr(e, "_last_summary_fallback_used", False)))
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
        commit = self.note("compaction committed: the host set last_prompt_tokens to -1 until the next "
                           "response (Hermes' sentinel after every boundary)", site=site)
        commit.status = self._status()
        count = _as_int(getattr(e, "compression_count", 0))
        if count >= 2:
            self.note(f"Session compressed {count} times — accuracy may degrade (Hermes warns here)")
        return True

    def _forget_edited(self, objects: list[dict[str, Any]], copies: list[Any]) -> None:
        """Drop the cached forms of history messages compress edited in place (it had the live list)."""
        if len(objects) != len(self.history) or any(a is not b for a, b in zip(objects, self.history)):
            self._asm = None
        for obj, copied in zip(objects, copies):
            if obj != copied:
                self._form_cache.pop(id(obj), None)
                self._rough_cache.pop(id(obj), None)
                self._asm = None

    def _check_aux_feasibility(self) -> None:
        """Hermes' once-per-agent check of the summariser's window, at the first compaction (§2.9)."""
        aux = (self.config.get("auxiliary") or {}).get("compression") or {}
        window = _as_int(aux.get("context_length")) if isinstance(aux, dict) else 0
        if window <= 0:
            return
        e = self.engine
        if window < 64_000:
            self.fault("aux_context_too_small", f"the summariser's window ({window:,} tokens, "
                       "auxiliary.compression.context_length) is below 64,000: Hermes raises ValueError here; "
                       "the replay compresses anyway")
            return
        threshold = _as_int(getattr(e, "threshold_tokens", 0))
        if threshold and window < threshold:
            ctx = _as_int(getattr(e, "context_length", 0)) or self.settings.context_length
            try:
                e.threshold_tokens = window
                e.threshold_percent = window / ctx if ctx else getattr(e, "threshold_percent", 0)
            except Exception as exc:
                self.fault("host_error", f"could not lower the engine's threshold to the summariser's window: {exc}")
                return
            self.note(f"the summariser's window ({window:,} tokens) is below the compression threshold "
                      f"({threshold:,}): Hermes lowers threshold_tokens to {window:,} "
                      f"(threshold_percent {e.threshold_percent:.3f}) and warns", previous_threshold=threshold)

    def _blocked_reason(self, tokens: int) -> str:
        """Why the engine refuses to compress, in its own words where it gives any."""
        info = getattr(self.engine, "should_compress_info", None)
        if callable(info) and self._overrides["should_compress_info"]:
            out = call_inline(info, tokens, timeout=self.settings.hook_timeout)
            if out.ok and isinstance(out.value, tuple) and len(out.value) == 2 and out.value[1]:
                return str(out.value[1])
        e = self.engine
        parts = []
        if _as_int(getattr(e, "_fallback_compression_streak", 0)) >= 2:
            parts.append(f"{e._fallback_compression_streak} compactions in a row used the fallback summary "
                         "(no auxiliary LLM answered)")
        if _as_int(getattr(e, "_ineffective_compression_count", 0)) >= 2:
            parts.append("the last compactions did not bring the prompt under the threshold")
        return "; ".join(parts) or "_automatic_compression_blocked() returned True"

    def _ensure_user_turn(self, compressed: list[dict[str, Any]], before: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Hermes' _ensure_compressed_has_user_turn (§4.4 step 5)."""
        if any(is_real_user(m) for m in compressed):
            return compressed
        latest = next((m for m in reversed(before) if is_real_user(m)), None)
        if latest is None:
            compressed.append({"role": "user", "content": CONTINUE_MARKER})
            self.note("no real user message survived compression: host appended Hermes' continue marker")
            return compressed
        for i, m in enumerate(compressed):
            if m.get("role") == "assistant" and not (i > 0 and compressed[i - 1].get("role") == "user"):
                compressed.insert(i, copy.deepcopy(latest))
                break
        else:
            compressed.append(copy.deepcopy(latest))
        self.note("no real user message survived compression: host re-inserted the latest user message")
        return compressed

    @_in_run
    def compress_now(self, focus_topic: str | None = None) -> bool:
        """Manual ``/compress [topic]``: force=True, focus passed through."""
        system = self.system_message["content"] if self.system_message else ""
        t = estimate_request_tokens_rough(self.history, system_prompt=system, tools=self.tools)
        return self._compress(t, site="manual", focus_topic=focus_topic, force=True)

    # -- cache ------------------------------------------------------------------------------
    def _simulate(self, sel_keys: tuple[str, ...], block_tokens: list[int], timestamp: float | None,
                  roles: list[str], source_index: int | None = None) -> CacheInfo:
        # block_tokens stays empty: it is derivable from the selected list and per-key counts.
        info = CacheInfo(reason_kind="disabled", reason="no cache simulator")
        if self.simulator is None:
            info.uncached = sum(block_tokens) + self._tools_tokens
            return info
        has_system = bool(roles) and roles[0] == "system"
        tools_key, tools_tokens, block_tokens = self.usage_model.cache_view(self._tools_key, self._tools_tokens,
                                                                            block_tokens, source_index)
        try:
            # The simulator copies what it keeps, so the host's own lists are passed as they are.
            res = self.simulator.simulate(
                block_keys=sel_keys, block_tokens=block_tokens, tools_key=tools_key,
                tools_tokens=tools_tokens, timestamp=timestamp, has_system=has_system,
                block_roles=roles,
            )
        except Exception as exc:
            info.uncached = sum(block_tokens) + self._tools_tokens
            info.reason = f"cache simulator failed: {exc}"
            return info
        info.read, info.write, info.uncached = res.read, res.write, res.uncached
        info.break_index, info.reason_kind, info.reason = res.break_index, res.reason_kind, res.reason
        self._write_1h = getattr(res, "write_1h", 0)
        diverge = getattr(res, "diverge_index", None)
        if diverge is not None and res.reason_kind not in ("hit", "cold", "disabled"):
            cause = self._break_cause(sel_keys, diverge)
            if cause is not None:
                info.cause_event = cause.index
                info.reason = f"{res.reason} — message {diverge} changed by {cause.kind} at event {cause.index}"
        return info

    def _break_cause(self, sel_keys: tuple[str, ...], break_index: int) -> Event | None:
        """Which engine action since the previous request changed the message at the break point."""
        for ev in reversed(self._events_since_request):
            if ev.kind in (EV_COMPRESS, EV_PRUNE) and isinstance(ev.result, dict) and "$list" in ev.result and not ev.result.get("unchanged"):
                return ev
            if ev.kind == EV_SELECT and isinstance(ev.result, dict) and "$list" in ev.result:
                return ev
        for ev in reversed(self._events_since_request):
            if ev.kind == EV_SELECT:
                # select_context shaped the previous request and returned None this time.
                return ev
        return None
