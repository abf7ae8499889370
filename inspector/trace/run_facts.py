"""What a run was, in words: the facts about it the window and the HTML report show beside its figures.

A replay is only as truthful as its settings, and several of them are chosen for the user: the
host profile (which Hermes the host played, ``inspector.host_profile``), the engine that really
ran (Hermes falls back to its built-in compressor for a plugin it would not load, see
``inspector/engines/discovery.py``), a bundled example shadowed by the user's engine of the same
name, the transcript defaults assumed (``meta.assumed``, ``inspector/host/transcript_defaults.py``)
and how the engine was fed usage (``meta.usage_model``, ``inspector/host/calibration.py``). The CLI
prints each of these (``inspector/host/cli.py``); this module says them once for every other view,
from the trace alone, so a saved trace shows what its run was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: what the host notes for each engine-loading warning (inspector.host.replay.replay)
LOADING_NOTE = "engine loading: "

OK, WARN = "ok", "warn"


@dataclass(frozen=True)
class Fact:
    """One line about a run: what it is (``label``), the words, and whether it calls for attention."""

    label: str
    text: str
    level: str = OK


def host_profile(trace: Any) -> str:
    """The Hermes the host played (``hermes-0.19.0``, ``hermes-main``); older traces do not say."""
    return str(trace.meta.get("host_profile") or "not recorded")


def engine_fallback(trace: Any) -> str | None:
    """Why the run used Hermes' built-in compressor instead of the engine asked for, if it did."""
    engine = trace.meta.get("engine") or {}
    why = engine.get("fallback") if isinstance(engine, dict) else None
    if not why:
        return None
    requested = engine.get("requested") or "the engine asked for"
    return f"{requested!s} did not run: {why}; Hermes falls back to its built-in compressor, and so did this run"


def loading_notes(trace: Any, word: str) -> list[str]:
    """The host's engine-loading notes that mention ``word`` (each once, in order)."""
    seen: list[str] = []
    for ev in trace.events:
        note = ev.note or ""
        if note.startswith(LOADING_NOTE) and word in note:
            text = note[len(LOADING_NOTE):].splitlines()[0]
            if text not in seen:
                seen.append(text)
    return seen


def shadowing(trace: Any) -> list[str]:
    """Engines of the same name the one that ran hid (a bundled example behind the user's own)."""
    return loading_notes(trace, "shadowed")


def assumed(trace: Any) -> str | None:
    """The replay settings taken from the transcript or defaults (model, window, cache profile, TTL)."""
    from inspector.host.transcript_defaults import describe

    chosen = trace.meta.get("assumed")
    return describe(chosen) if isinstance(chosen, dict) and chosen else None


def usage(trace: Any) -> str | None:
    """How the engine was fed usage, with the calibration's fitted numbers and method."""
    from inspector.host.cli import describe_usage_model

    um = trace.meta.get("usage_model")
    return describe_usage_model(um) if isinstance(um, dict) and um else None


def run_facts(trace: Any) -> list[Fact]:
    """Every fact about the run, most important first; the fallback and shadowing only when they happened."""
    facts = [Fact("host profile", host_profile(trace), WARN if "host_profile" not in trace.meta else OK)]
    fallback = engine_fallback(trace)
    if fallback:
        facts.append(Fact("engine fallback", fallback, WARN))
    facts += [Fact("shadowed", text, WARN) for text in shadowing(trace)]
    said = assumed(trace)
    if said:
        facts.append(Fact("settings", said.removeprefix("replay settings: ")))
    fed = usage(trace)
    if fed:
        facts.append(Fact("usage", fed.removeprefix("usage ")))
    cal = (trace.meta.get("usage_model") or {}).get("calibration") or {}
    facts += [Fact("calibration", str(w), WARN) for w in cal.get("warnings") or ()]
    return facts


def cache_facts(trace: Any) -> list[Fact]:
    """Recorded cache figures beside the simulator's, its accuracy and the compaction timing, as the
    CLI prints them (``print_cache_truth``); empty when the source recorded no usage."""
    from inspector.cache.accuracy import (
        accuracy,
        describe_accuracy,
        describe_crossing,
        recorded_vs_simulated,
        threshold_crossing,
    )

    both = recorded_vs_simulated(trace)
    rec, sim = both["recorded"], both["simulated"]
    if rec is None:
        return []

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v * 100:.1f} %"

    facts = [
        Fact("recorded (provider)", f"{rec['requests']:,} requests · prompt {rec['prompt']:,} · read {rec['read']:,} · "
                                    f"written {rec['write']:,} (5m {rec['write_5m']:,} · 1h {rec['write_1h']:,}) · "
                                    f"hit {pct(rec['hit_rate'])}"),
        Fact("simulated", f"{sim['requests']:,} requests · prompt {sim['prompt']:,} · read {sim['read']:,} · "
                          f"written {sim['write']:,} (1h {sim['write_1h']:,}) · hit {pct(sim['hit_rate'])}"),
    ]
    block = accuracy(trace)
    lines = describe_accuracy(block)
    level = OK
    if block is not None and (block["mean_error_points"] > 2 or block["false_alarms_per_100"] > 1
                              or (block["caught_pct"] is not None and block["caught_pct"] < 85)):
        level = WARN  # outside what a calibrated replay is held to: ≤ 2 points, ≥ 85 % caught, ≤ 1 per 100
    facts += [Fact("simulator accuracy" if i == 0 else "", line, level) for i, line in enumerate(lines)]
    crossing = describe_crossing(threshold_crossing(trace))
    if crossing:
        facts.append(Fact("compaction timing", crossing))
    return facts


def brief(trace: Any) -> Fact:
    """The run in one line (host profile, usage mode and fit, a fallback or shadowing): for the counters."""
    um = trace.meta.get("usage_model") or {}
    text = f"{host_profile(trace)} · usage {um.get('mode') or 'not recorded'}"
    cal = um.get("calibration")
    if isinstance(cal, dict) and "hidden_tokens" in cal:
        text += f" (head {int(cal['hidden_tokens']):,} + {float(cal['ratio']):.2f} × ours)"
    level = OK
    if engine_fallback(trace):
        text += " · Hermes fell back to its built-in compressor"
        level = WARN
    if shadowing(trace):
        text += " · an engine of the same name was shadowed"
        level = WARN
    return Fact("run", text, level)


# What the engine's usage was for a request (meta.usage_model.fed_per_request), in the window's
# count vocabulary (inspector/ui/explain.py: "simulated", "provider-reported").
FED_WORDS = {"tokenizer": "simulated", "calibrated": "calibrated", "recorded": "recorded", "provider": "provider-reported"}


def fed_kind(trace: Any, request: int | None, default: str) -> str:
    """What the usage the engine got for request ``request`` was: simulated, calibrated (our count
    in the provider's units), recorded (the transcript's) or provider-reported (live); ``default``
    for a trace that does not say (saved before usage was recorded per request)."""
    fed = (trace.meta.get("usage_model") or {}).get("fed_per_request") or []
    if request is not None and 0 <= request < len(fed):
        return FED_WORDS.get(str(fed[request]), str(fed[request]))
    return default
