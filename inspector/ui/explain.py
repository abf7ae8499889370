"""Why a hook decided what it did: its arguments, its return value and, for a gate, the figure it
compared, the threshold it compared it with, and where both came from. Qt-free.

The host records every hook's arguments and result in the event (``inspector.host.recorder``:
the hook table's recorded arguments); this module turns them into lines a person reads, in the one
vocabulary every panel uses for token counts (:data:`COUNT_KINDS`).

Where the gate's figure came from follows the host's three call sites (hermes-host.md §2.3):
the preflight check of a turn uses Hermes' rough estimate of the whole request
(``estimate_request_tokens_rough``, ``agent/model_metadata.py:2688`` of hermes-agent 0.19.0,
called from ``agent/turn_context.py:574``), the pre-API check uses the last
provider-reported prompt plus a rough estimate of what was appended since (the usage anchor)
or the rough estimate when there is no anchor, and the post-tool check uses
``last_prompt_tokens`` as ``update_from_response`` left it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from inspector.trace import model as tm
from inspector.trace.model import Event, Trace

# What a token count is. Every count a panel or the report shows names one of these.
SENT = "sent"  # the tokenizer's count of the request the engine produced (messages + tool schemas)
MESSAGES_ONLY = "messages only"  # the tokenizer's count of the messages, without tool schemas
PROVIDER = "provider-reported"  # usage the provider returned (recorded in the transcript, or live)
SIMULATED = "simulated"  # usage the host synthesised for update_from_response during a replay
HIDDEN_PREFIX = "hidden prefix"  # provider-reported minus what the messages account for
ROUGH = "rough"  # Hermes' chars/4 estimate (what the gates compare)
ANCHORED = "anchored"  # last reported prompt + rough estimate of the messages appended since
COUNT_KINDS = (SENT, MESSAGES_ONLY, PROVIDER, SIMULATED, HIDDEN_PREFIX, ROUGH, ANCHORED)

GATE_KINDS = frozenset({tm.EV_SHOULD, tm.EV_DEFER, tm.EV_SHOULD_INFO})

_SITE_WORDS = {
    "preflight": "preflight check at the start of the turn",
    "pre_api": "pre-API check before the provider call",
    "post_tool": "post-tool check after the tool results joined the history",
    "overflow": "the provider would reject the request (over the window)",
    "manual": "a manual /compress",
}


@dataclass(frozen=True, slots=True)
class Line:
    """One line of an explanation: a label and its value (plain text)."""

    label: str
    value: str


def is_live(trace: Trace) -> bool:
    """A live chat's trace: its usage came from a real provider, not from the host's tokenizer."""
    return trace.meta.get("mode") == "live" or (trace.meta.get("session") or {}).get("format") == "live"


def usage_kind(trace: Trace) -> str:
    """What the usage handed to ``update_from_response`` is in this trace."""
    return PROVIDER if is_live(trace) else SIMULATED


def describe_value(trace: Trace, value: Any, limit: int = 120) -> str:
    """An argument or result in words: message lists by size and tokens, messages by role and text."""
    if isinstance(value, dict):
        if isinstance(value.get("$list"), int) and len(value) <= 2:
            list_id = value["$list"]
            if 0 <= list_id < len(trace.store.lists):
                keys = trace.store.lists[list_id]
                tok = sum(trace.store.tokens.get(k, {}).get("tiktoken", 0) for k in keys)
                extra = " (unchanged)" if value.get("unchanged") else ""
                return f"{len(keys)} messages · {tok:,} tok{extra}"
        if isinstance(value.get("$msg"), str) and len(value) == 1:
            msg = trace.store.messages.get(value["$msg"])
            if isinstance(msg, dict):
                from inspector.ui.derive import message_preview

                return f"{msg.get('role', '?')}: {message_preview(msg, 80)}"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return f"{value:,}"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def arguments(trace: Trace, ev: Event) -> list[Line]:
    """The recorded arguments of the call, one line each."""
    args = ev.args if isinstance(ev.args, dict) else {}
    return [Line(str(k), describe_value(trace, v)) for k, v in args.items() if k != "figure"]


def result_text(trace: Trace, ev: Event) -> str:
    """The return value as recorded ('raised' when the call faulted)."""
    if ev.fault is not None and ev.result is None:
        return f"(no value: {ev.fault.kind})"
    if ev.kind in (tm.EV_TURN, tm.EV_REQUEST) or (ev.result is None and ev.kind not in GATE_KINDS):
        return ""
    if isinstance(ev.result, dict) and len(ev.result) > 1:
        return ", ".join(describe_value(trace, {k: v}) if k in ("$list", "$msg") else f"{k}: {describe_value(trace, v, 60)}"
                         for k, v in ev.result.items())
    return describe_value(trace, ev.result)


def gate_figure(ev: Event) -> int | None:
    """The token figure a gate (or a compress call) was given."""
    args = ev.args if isinstance(ev.args, dict) else {}
    for key in ("prompt_tokens", "rough_tokens", "current_tokens", "approx_tokens", "tokens_before"):
        value = args.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def figure_source(trace: Trace, ev: Event) -> str:
    """Where a gate's figure came from, in words (the host records ``figure`` since issue 21)."""
    args = ev.args if isinstance(ev.args, dict) else {}
    if ev.kind == tm.EV_DEFER and ev.index + 1 < len(trace.events):
        gate_after = trace.events[ev.index + 1]  # the host asks should_compress with the same figure next
        if gate_after.kind == tm.EV_SHOULD and gate_figure(gate_after) == gate_figure(ev):
            return figure_source(trace, gate_after)
    site = args.get("site")
    figure = args.get("figure")
    reported = "provider-reported" if is_live(trace) else "simulated provider usage"
    if figure == ANCHORED:
        return f"{ANCHORED}: last {reported} prompt + rough estimate of the messages appended since"
    if figure == "reset":
        return "0: last_prompt_tokens is -1 (reset by a compression; known again after the next response)"
    if figure == "last_prompt":
        return f"last_prompt_tokens: the {reported} prompt of the last response"
    if figure == ROUGH or site == "preflight":
        return f"{ROUGH}: Hermes' chars ÷ 4 estimate of system prompt + history + tool schemas"
    if site == "post_tool":
        return f"last_prompt_tokens ({reported}) or the usage anchor"
    if site == "pre_api":
        return f"{ANCHORED} or {ROUGH} estimate of the request about to be sent"
    return "as the host passed it"


def threshold_derivation(trace: Trace, k: int) -> list[Line]:
    """How the engine's ``threshold_tokens`` at event ``k`` follows from the config and the window.

    For an engine that reports ``threshold_percent`` (Hermes' ContextCompressor and its
    subclasses) the steps are Hermes' own (``agent/context_compressor.py:1328-1362`` and
    ``_compute_threshold_tokens`` at ``:1266`` of hermes-agent 0.19.0; our
    ``inspector/engines/compressor.py`` ``_apply_thresholds``): the configured percent, a
    per-model override, the 75 % floor below a 512K window, the 64K minimum (85 % of a window
    that small), then the absolute cap. The constants are the engine module's, not copies.
    """
    from inspector.engines.compressor import (
        SMALL_CONTEXT_LIMIT,
        SMALL_CONTEXT_PERCENT_FLOOR,
        THRESHOLD_CEILING_RATIO,
        THRESHOLD_TOKENS_FLOOR,
    )

    state = trace.state_at(k)
    threshold, window = state["threshold_tokens"], state["context_length"]
    if not threshold:
        return [Line("threshold", "none (the engine reports threshold_tokens = 0)")]
    lines = [Line("threshold", f"{threshold:,} tok ({threshold / window:.0%} of the {window:,}-token window)"
                  if window else f"{threshold:,} tok")]
    status = trace.status_at(k) or {}
    percent = status.get("threshold_percent")
    compression = (trace.meta.get("config") or {}).get("compression") or {}
    configured = compression.get("threshold")
    if not isinstance(percent, int | float) or not window:
        lines.append(Line("derived", "as the engine reports it (it does not report threshold_percent)"))
        return lines
    steps = []
    if isinstance(configured, int | float):
        steps.append(f"configured compression.threshold {configured:.0%}")
    per_model = compression.get("model_thresholds") or {}
    if per_model:
        steps.append(f"per-model table {json.dumps(per_model)}")
    if window < SMALL_CONTEXT_LIMIT and percent == SMALL_CONTEXT_PERCENT_FLOOR and configured != percent:
        steps.append(f"raised to the {SMALL_CONTEXT_PERCENT_FLOOR:.0%} floor (window < {SMALL_CONTEXT_LIMIT:,})")
    max_tokens = ((trace.meta.get("config") or {}).get("model") or {}).get("max_tokens")
    usable = window - max_tokens if isinstance(max_tokens, int) and 0 < max_tokens < window else window
    raw = int(usable * float(percent))
    steps.append(f"{usable:,} × {float(percent):.0%} = {raw:,}" + (" (window − max_tokens)" if usable != window else ""))
    if raw < THRESHOLD_TOKENS_FLOOR <= threshold:
        steps.append(f"raised to the {THRESHOLD_TOKENS_FLOOR:,} minimum")
    if threshold == max(1, min(int(usable * THRESHOLD_CEILING_RATIO), usable - 1)) and raw != threshold:
        steps.append(f"the minimum reaches the window: {THRESHOLD_CEILING_RATIO:.0%} of it")
    cap = compression.get("threshold_tokens")
    if isinstance(cap, int) and cap > 0 and threshold == min(cap, window) and raw != threshold:
        steps.append(f"capped at compression.threshold_tokens {cap:,}")
    lines.append(Line("derived", " → ".join(steps)))
    return lines


# Hooks that prepare the next provider call (hermes-host.md §2.3): from the first of these after a
# call (or at a turn's start), every event up to the next call's marker belongs to that call.
_PREPARING_KINDS = frozenset({tm.EV_SELECT, tm.EV_DEFER})
_PREPARING_SITES = frozenset({"pre_api", "preflight", "overflow"})


def prepares(ev: Event) -> bool:
    """Whether ``ev`` is a hook the host calls to prepare the next provider call."""
    if ev.kind in _PREPARING_KINDS:
        return True
    return ev.kind in (tm.EV_SHOULD, tm.EV_COMPRESS) and isinstance(ev.args, dict) and ev.args.get("site") in _PREPARING_SITES


def prepared_request(trace: Trace, k: int) -> int | None:
    """The request a hook at event ``k`` prepares: the next provider call, if it is in the same turn."""
    import numpy as np

    from inspector.ui.derive import figures

    markers = figures(trace).request_event
    pos = int(np.searchsorted(markers, k, side="right"))
    if pos >= markers.shape[0]:
        return None
    marker = int(markers[pos])
    next_turn = trace.next_turn(k)
    return pos if next_turn is None or next_turn > marker else None


def gate(trace: Trace, ev: Event) -> list[Line]:
    """For a gate: the figure, its source, the threshold, the comparison, and what was sent next."""
    figure = gate_figure(ev)
    if figure is None:
        return []
    lines = [Line("figure tested", f"{figure:,} tok"), Line("figure from", figure_source(trace, ev))]
    state = trace.state_at(ev.index - 1 if ev.index else 0)
    threshold = state["threshold_tokens"]
    if threshold:
        rel = "≥" if figure >= threshold else "<"
        lines.append(Line("compared", f"{figure:,} {rel} threshold {threshold:,} ({figure / threshold:.0%} of it)"))
    lines.extend(line for line in threshold_derivation(trace, ev.index) if line.label == "derived")
    r = prepared_request(trace, ev.index) if ev.kind != tm.EV_SHOULD_INFO else None
    if r is not None and 0 <= r < len(trace.requests):
        req = trace.requests[r]
        sent = req.tokens.get("tiktoken")
        if isinstance(sent, int):
            lines.append(Line("then sent", f"request #{r}: {sent:,} tok ({SENT}, tokenizer)"))
    return lines


def explain(trace: Trace, k: int) -> list[Line]:
    """Everything that explains event ``k``: call, arguments, return value, and the gate's reasoning."""
    if not len(trace):
        return []
    ev = trace.events[trace.clamp(k)]
    lines = [Line("event", f"{ev.index} · {ev.kind}" + (f" · turn {ev.turn}" if ev.turn is not None else ""))]
    if ev.kind == tm.EV_REQUEST and ev.request is not None and ev.request < len(trace.requests):
        return lines + request_counts(trace, ev.request)
    lines += arguments(trace, ev)
    result = result_text(trace, ev)
    if result:
        lines.append(Line("returned", result))
    if ev.kind in GATE_KINDS or ev.kind == tm.EV_COMPRESS:
        lines += gate(trace, ev)
    if ev.fault is not None:
        lines.append(Line("fault", f"{ev.fault.kind}: {ev.fault.message}"))
        if ev.fault.where:
            lines.append(Line("at", ev.fault.where))
        if ev.fault.traceback:  # in full: the Decision panel is where it is read and copied
            lines.append(Line("traceback", ev.fault.traceback.rstrip()))
    if ev.note:
        lines.append(Line("note", ev.note))
    return lines


def request_counts(trace: Trace, r: int) -> list[Line]:
    """Every count of one request, each saying what it is."""
    req = trace.requests[r]
    lines = []
    sent = req.tokens.get("tiktoken")
    tools = req.tokens.get("tools", 0)
    if isinstance(sent, int):
        lines.append(Line(f"{SENT} (tokenizer)", f"{sent:,} tok"))
        lines.append(Line(MESSAGES_ONLY, f"{sent - tools:,} tok (without {tools:,} tok of tool schemas)"))
    rough = req.tokens.get("rough")
    if isinstance(rough, int):
        lines.append(Line(f"{ROUGH} (Hermes' estimate)", f"{rough:,} tok"))
    fed = req.usage.get("prompt_tokens") if req.usage else None
    if isinstance(fed, int):
        lines.append(Line(f"{usage_kind(trace)} usage", f"{fed:,} prompt tok (given to update_from_response)"))
    if req.recorded and isinstance(req.recorded.get("prompt_tokens"), int):
        rec = req.recorded["prompt_tokens"]
        lines.append(Line(f"{PROVIDER} (transcript)", f"{rec:,} prompt tok, as the original agent's provider counted"))
    return lines
