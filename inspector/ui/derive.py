"""Per-trace figures the panels plot, derived once from the Trace and memoised.

Several panels need the same arrays (prompt tokens per request, compression positions, cache
figures). Computing them once per trace keeps ``set_trace`` fast and cursor moves free of
per-request Python loops. Qt-free: only numpy and the trace model.

Nothing here is host logic: these are read-outs of what the host recorded.
"""

from __future__ import annotations

import json
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from inspector.sessions.model import message_text
from inspector.trace import model as tm
from inspector.trace.model import Event, Request, Trace
from inspector.trace.summary import is_committed_compression

# Request.tokens keys that are not a prompt-token figure of the whole request.
_NON_PROMPT_KEYS = frozenset({"tools", "system", "images", "completion", "output", "reasoning"})


def list_ref(value: Any) -> int | None:
    """The list id inside ``{"$list": id}`` (or a dict holding one under ``messages``)."""
    if isinstance(value, dict):
        if "$list" in value and isinstance(value["$list"], int):
            return value["$list"]
        inner = value.get("messages")
        if isinstance(inner, dict) and isinstance(inner.get("$list"), int):
            return inner["$list"]
    return None


def event_lists(ev: Event) -> tuple[int | None, int | None]:
    """(before, after) message-list ids of a select_context / compress / prune event, if recorded.

    ``select_context`` records its input under Hermes' parameter name, ``request_messages``.
    """
    before = None
    if isinstance(ev.args, dict):
        before = list_ref(ev.args.get("messages"))
        if before is None:
            before = list_ref(ev.args.get("request_messages"))
    after = list_ref(ev.result)
    return before, after


def list_tokens(trace: Trace, list_id: int | None, tokenizer: str = "tiktoken") -> int:
    """Sum of per-message token counts of an interned list (0 when unknown)."""
    if list_id is None or list_id < 0 or list_id >= len(trace.store.lists):
        return 0
    tokens = trace.store.tokens
    return sum(tokens.get(k, {}).get(tokenizer, 0) for k in trace.store.lists[list_id])


def tool_call_names(message: dict[str, Any]) -> list[str]:
    """Names of the tool calls an assistant message makes (for previews)."""
    names = []
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            fn = call.get("function") or {}
            names.append(str(fn.get("name") or call.get("name") or "?"))
    return names


def message_preview(message: dict[str, Any], limit: int = 160) -> str:
    """One-line preview: text, or the tool calls when the message has no text."""
    text = " ".join(message_text(message).split())
    if not text:
        names = tool_call_names(message)
        if names:
            text = "→ " + ", ".join(names)
        elif message.get("tool_call_id"):
            text = f"(result of {message['tool_call_id']})"
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Compression:
    """One compress event, with the token figures shown on hover in the compression timeline."""

    event: int
    x: float
    before_tokens: int
    after_tokens: int
    before_messages: int
    after_messages: int
    count_after: int
    faulted: bool
    committed: bool  # the host kept the result; False for faults, aborts and calls that made no progress
    unit: str = "tok"  # "rough tok" when the figures are the host's (Hermes' estimate), as recorded


@dataclass
class TraceFigures:
    """Arrays indexed by request (x = request index as float64) plus per-event lookups."""

    x: np.ndarray
    request_event: np.ndarray
    prompt: dict[str, np.ndarray]
    recorded: np.ndarray
    threshold: np.ndarray
    context_length: np.ndarray
    compression_count: np.ndarray
    cache_read: np.ndarray
    cache_write: np.ndarray
    cache_uncached: np.ndarray
    hit_rate: np.ndarray
    cost: np.ndarray
    compressions: list[Compression] = field(default_factory=list)
    event_request: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    event_x: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: per event, the index of the latest event at or before it that recorded get_status() (-1: none)
    status_event: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: every should_compress call: where on the request axis (the request it prepares, or between
    #: calls for the post-tool check), the figure it tested, what it answered, and its event
    gate_x: np.ndarray = field(default_factory=lambda: np.zeros(0))
    gate_y: np.ndarray = field(default_factory=lambda: np.zeros(0))
    gate_fired: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    gate_event: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def n(self) -> int:
        return int(self.x.shape[0])

    def cursor_x(self, k: int) -> float | None:
        """Where event k sits on the request axis (between requests after a compression)."""
        if not self.event_x.shape[0]:
            return None
        k = max(0, min(k, self.event_x.shape[0] - 1))
        value = float(self.event_x[k])
        return None if np.isnan(value) else value

    def status_at(self, trace: Trace, k: int) -> dict[str, Any] | None:
        """``get_status()`` in force at event k, by array lookup (Trace.status_at scans back)."""
        if not self.status_event.shape[0]:
            return None
        idx = int(self.status_event[max(0, min(k, self.status_event.shape[0] - 1))])
        return trace.events[idx].status if idx >= 0 else None

    def last_committed_before(self, k: int) -> Compression | None:
        """The latest compression the host kept at or before event k (what the header counts)."""
        return next((c for c in reversed(self.compressions) if c.committed and c.event <= k), None)

    def request_for_x(self, x: float) -> int | None:
        """Nearest request index for a plot position (clicks and cursor drags)."""
        if self.n == 0:
            return None
        return int(max(0, min(self.n - 1, round(x))))


def committed_counts(points: list[tuple[float, bool]], n: int) -> tuple[np.ndarray, list[float]]:
    """(committed compressions before each of ``n`` requests, the count after each point).

    ``points`` are (x, committed) of every compress call in event order. An engine may bump
    ``compression_count`` on a call that kept nothing (512 such calls are a ramp to 512 on the
    engine's own counter); counting only what the host committed keeps the axis what it says,
    and a call that made no progress sits on the count it left unchanged.
    """
    done = 0
    after = []
    xs = []
    for x, committed in points:
        if committed:
            done += 1
            xs.append(x)
        after.append(float(done))
    steps = np.searchsorted(np.asarray(xs, dtype=np.float64), np.arange(n, dtype=np.float64), side="left")
    return steps.astype(np.float64), after


def step_points(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A few-point polyline for a piecewise-constant series (threshold, context length).

    Only change points are kept, so a threshold that moves twice in 10,000 requests costs a
    handful of vertices instead of 20,000.
    """
    if x.shape[0] == 0:
        return np.zeros(0), np.zeros(0)
    change = np.flatnonzero(np.diff(y) != 0) + 1
    xs = [x[0] - 0.5]
    ys = [y[0]]
    for i in change:
        edge = x[i] - 0.5
        xs += [edge, edge]
        ys += [ys[-1], y[i]]
    xs.append(x[-1] + 0.5)
    ys.append(ys[-1])
    return np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)


def _compression(trace: Trace, ev: Event, x: float) -> Compression:
    """Before and after in one unit: the host's rough figures when it recorded both, else the lists'
    token counts. A call Hermes kept nothing of leaves the transcript as it was: after = before."""
    committed = is_committed_compression(ev)
    before, after = event_lists(ev)
    recorded_before = ev.args.get("tokens_before") if isinstance(ev.args, dict) else None
    if committed:
        recorded_after = ev.result.get("tokens_after")
    else:
        after, recorded_after = before, recorded_before
    rough = isinstance(recorded_before, int) and isinstance(recorded_after, int)
    return Compression(
        event=ev.index,
        x=x,
        before_tokens=recorded_before if rough else list_tokens(trace, before),
        after_tokens=recorded_after if rough else list_tokens(trace, after),
        before_messages=len(trace.store.lists[before]) if before is not None else 0,
        after_messages=len(trace.store.lists[after]) if after is not None else 0,
        unit="rough tok" if rough else "tok",
        count_after=int(trace.state_at(ev.index)["compression_count"]),
        faulted=ev.fault is not None,
        committed=committed,
    )


def _build(trace: Trace) -> TraceFigures:
    reqs: list[Request] = trace.requests
    n = len(reqs)
    x = np.arange(n, dtype=np.float64)
    request_event = np.fromiter((r.event for r in reqs), dtype=np.int64, count=n)

    keys: list[str] = []
    for r in reqs[: min(n, 64)] + reqs[-min(n, 64) :]:
        for key in r.tokens:
            if key not in keys and key not in _NON_PROMPT_KEYS:
                keys.append(key)
    prompt = {
        key: np.fromiter((float(r.tokens.get(key, np.nan)) for r in reqs), dtype=np.float64, count=n)
        for key in keys
    }
    recorded = np.fromiter(
        (float(r.recorded.get("prompt_tokens", np.nan)) if r.recorded else np.nan for r in reqs),
        dtype=np.float64,
        count=n,
    )

    threshold = np.zeros(n)
    context_length = np.zeros(n)
    compression_count = np.zeros(n)
    for i, r in enumerate(reqs):
        st = trace.state_at(r.event)
        threshold[i] = st["threshold_tokens"]
        context_length[i] = st["context_length"]
        compression_count[i] = st["compression_count"]

    read = np.fromiter((float(r.cache.read) for r in reqs), dtype=np.float64, count=n)
    write = np.fromiter((float(r.cache.write) for r in reqs), dtype=np.float64, count=n)
    uncached = np.fromiter((float(r.cache.uncached) for r in reqs), dtype=np.float64, count=n)
    total = read + write + uncached
    with np.errstate(invalid="ignore", divide="ignore"):
        hit_rate = np.where(total > 0, read / total, np.nan)
    cost = np.fromiter(
        (float(r.cache.cost) if r.cache.cost is not None else np.nan for r in reqs), dtype=np.float64, count=n
    )

    # Per-event request index and x position (request index, +0.5 once a compression happened
    # after that request's provider call, so the cursor sits on the compression marker).
    m = len(trace.events)
    event_request = np.full(m, -1, dtype=np.int64)
    event_x = np.full(m, np.nan)
    current = -1
    half = 0.0
    compressions: list[Compression] = []
    status_event = np.full(m, -1, dtype=np.int64)
    last_status = -1
    for ev in trace.events:
        if ev.status is not None:
            last_status = ev.index
        status_event[ev.index] = last_status
        if ev.request is not None and ev.request != current:
            current = ev.request
            half = 0.0
        if ev.kind == tm.EV_COMPRESS:
            half = 0.5 if current >= 0 else -0.5
            compressions.append(_compression(trace, ev, max(current, 0) + half if current >= 0 else -0.5))
        event_request[ev.index] = current
        if current >= 0:
            event_x[ev.index] = current + half
        elif n:
            event_x[ev.index] = -0.5 if half else 0.0

    gate_x, gate_y, gate_fired, gate_event = _gates(trace, event_x)
    return TraceFigures(
        gate_x=gate_x,
        gate_y=gate_y,
        gate_fired=gate_fired,
        gate_event=gate_event,
        x=x,
        request_event=request_event,
        prompt=prompt,
        recorded=recorded,
        threshold=threshold,
        context_length=context_length,
        compression_count=compression_count,
        cache_read=read,
        cache_write=write,
        cache_uncached=uncached,
        hit_rate=hit_rate,
        cost=cost,
        compressions=compressions,
        event_request=event_request,
        event_x=event_x,
        status_event=status_event,
    )


def _gates(trace: Trace, event_x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The should_compress calls as points: a check that prepares a call sits on that call's x."""
    from inspector.ui.explain import gate_figure, prepares

    next_request = -1
    prepared: dict[int, int] = {}
    for ev in reversed(trace.events):
        if ev.kind == tm.EV_REQUEST and ev.request is not None:
            next_request = ev.request
        elif ev.kind == tm.EV_TURN:
            next_request = -1
        elif ev.kind == tm.EV_SHOULD and next_request >= 0 and prepares(ev):
            prepared[ev.index] = next_request
    xs, ys, fired, events = [], [], [], []
    for ev in trace.events:
        if ev.kind != tm.EV_SHOULD:
            continue
        y = gate_figure(ev)
        if y is None:
            continue
        x = prepared.get(ev.index)
        if x is None:  # the post-tool check, between this call and the next
            here = float(event_x[ev.index])
            xs.append(float(np.floor(here)) + 0.5 if np.isfinite(here) else -0.5)
        else:
            xs.append(float(x))
        ys.append(float(y))
        fired.append(ev.result is True)
        events.append(ev.index)
    return (np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64), np.asarray(fired, dtype=bool),
            np.asarray(events, dtype=np.int64))


_CACHE: weakref.WeakKeyDictionary[Trace, tuple[tuple[int, int], TraceFigures]] = weakref.WeakKeyDictionary()


def figures(trace: Trace) -> TraceFigures:
    """The figures of ``trace``; rebuilt only when events or requests were appended (live mode)."""
    stamp = (len(trace.events), len(trace.requests))
    hit = _CACHE.get(trace)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    built = _build(trace)
    _CACHE[trace] = (stamp, built)
    return built


def calibration(trace: Trace) -> dict[str, Any] | None:
    """The fitted relation between our count and the provider's (``meta.usage_model.calibration``), if any."""
    cal = (trace.meta.get("usage_model") or {}).get("calibration")
    return cal if isinstance(cal, dict) and "hidden_tokens" in cal and "ratio" in cal else None


def calibrated_prompt(trace: Trace, fig: TraceFigures) -> np.ndarray | None:
    """Each request's tokenizer count in the provider's units (the fitted head + ratio × ours), as
    the host counts it for the window check and feeds it where the request is not the agent's
    (``Calibration.provider_tokens`` in inspector/host/calibration.py); None without a calibration."""
    cal = calibration(trace)
    ours = fig.prompt.get("tiktoken")
    if cal is None or ours is None:
        return None
    return np.round(float(cal["hidden_tokens"]) + float(cal["ratio"]) * ours)


@dataclass(frozen=True)
class TranscriptCompaction:
    """Where the original agent compacted (a marker event), on the request axis."""

    event: int
    x: float  # between the request before it and the one after
    kind: str
    tokens_before: int | None


def transcript_compactions(trace: Trace) -> list[TranscriptCompaction]:
    """The transcript's own compactions (the host's marker events, inspector/host/replay.py ``_marker``)."""
    out = []
    for ev in trace.events:
        if ev.kind != tm.EV_MARKER or not isinstance(ev.args, dict):
            continue
        before = ev.args.get("before_request")
        if not isinstance(before, int):
            continue
        tokens = ev.args.get("tokens_before")
        out.append(TranscriptCompaction(ev.index, before - 0.5, str(ev.args.get("kind") or "compaction"),
                                        tokens if isinstance(tokens, int) else None))
    return out


# -- event labels (event list and its text filter) -----------------------------------------
def event_label(trace: Trace, ev: Event) -> str:
    """One line describing an event, in the words the event list shows and the filter searches."""
    kind = ev.kind
    if kind == tm.EV_TURN:
        text = f"Turn {ev.turn}" if ev.turn is not None else "Turn"
        preview = _turn_preview(trace, ev)
        if preview:
            text += " · " + preview
    elif kind == tm.EV_REQUEST and ev.request is not None and ev.request < len(trace.requests):
        r = trace.requests[ev.request]
        tok = r.tokens.get("tiktoken") or next((v for k, v in r.tokens.items() if k not in _NON_PROMPT_KEYS), 0)
        n_msgs = len(trace.store.lists[r.selected]) if 0 <= r.selected < len(trace.store.lists) else 0
        text = f"Request #{r.index} · {n_msgs} msgs · {tok:,} tok sent"
        c = r.cache
        if c.reason_kind and c.reason_kind not in ("hit", "disabled"):
            text += f" · cache miss ({c.reason_kind})"
        elif c.reason_kind == "hit":
            text += " · cache hit"
    elif kind in (tm.EV_COMPRESS, tm.EV_SELECT, tm.EV_PRUNE):
        before, after = event_lists(ev)
        text = kind
        if before is not None and after is not None:
            text += f" · {len(trace.store.lists[before])} → {len(trace.store.lists[after])} msgs"
        if ev.args.get("focus_topic") if isinstance(ev.args, dict) else None:
            text += f" · focus: {ev.args['focus_topic']}"
    elif kind == tm.EV_TOOL:
        name = ev.args.get("name") if isinstance(ev.args, dict) else None
        text = f"tool call · {name}" if name else "tool call"
    elif kind in (tm.EV_SHOULD, tm.EV_SHOULD_INFO, tm.EV_DEFER):
        text = f"{kind} → {_short(ev.result)}"
    elif kind == tm.EV_UPDATE_MODEL:
        model = ev.args.get("model") if isinstance(ev.args, dict) else None
        ctx = ev.args.get("context_length") if isinstance(ev.args, dict) else None
        text = "update_model" + (f" · {model}" if model else "") + (f" · {ctx:,} ctx" if isinstance(ctx, int) else "")
    else:
        text = kind
    if ev.note:
        text += f" · {ev.note}"
    if ev.fault is not None:
        text = f"FAULT {ev.fault.kind}: {text} · {ev.fault.message}"
    return text


def _turn_preview(trace: Trace, ev: Event) -> str:
    """What the user said at a turn start: the recorded message, or the first user input."""
    args = ev.args if isinstance(ev.args, dict) else {}
    keys: tuple[str, ...] = ()
    msg = args.get("message")
    if isinstance(msg, dict) and isinstance(msg.get("$msg"), str):
        keys = (msg["$msg"],)
    else:
        list_id = list_ref(args.get("inputs"))
        if list_id is not None and 0 <= list_id < len(trace.store.lists):
            keys = trace.store.lists[list_id]
    messages = [trace.store.messages[k] for k in keys if k in trace.store.messages]
    chosen = next((m for m in messages if m.get("role") == "user"), messages[0] if messages else None)
    return message_preview(chosen, 90) if chosen is not None else ""


def _short(value: Any, limit: int = 40) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_cache_miss(trace: Trace, ev: Event) -> bool:
    """True for a request marker whose simulated cache lookup missed (what F3 jumps to)."""
    if ev.kind != tm.EV_REQUEST or ev.request is None or ev.request >= len(trace.requests):
        return False
    return trace.requests[ev.request].cache.reason_kind not in ("hit", "disabled", "")
