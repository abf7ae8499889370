"""How well the cache simulator reproduced what the provider reported, per run.

Only requests that are the one the agent sent (the replay's usage model checks, see
``same_request`` in ``trace.meta["usage_model"]``) are compared: once an engine or the agent's
own compaction changed the request, the recorded figures describe another prompt.

- **hit rate** of a request: cached tokens read / prompt tokens (recorded: the provider's
  figures; simulated: the simulator's read over its whole request, head included).
- **error**: |simulated − recorded| hit rate, in percentage points; mean and 90th percentile.
- **real miss**: recorded hit rate below :data:`MISS_BELOW` (a request that read nothing is one);
  *caught* when the simulated hit rate is below it too. A **false alarm** is a simulated miss the
  provider did not have, counted per 100 compared requests.
"""

from __future__ import annotations

from typing import Any

MISS_BELOW = 0.80


def _recorded_hit(rec: dict[str, Any]) -> float | None:
    prompt = rec.get("prompt_tokens") or 0
    return (rec.get("cache_read_tokens") or 0) / prompt if prompt > 0 else None


def _simulated_total(cache: Any) -> int:
    return int(cache.read + cache.write + cache.uncached)


def _simulated_hit(cache: Any) -> float | None:
    total = _simulated_total(cache)
    return cache.read / total if total > 0 else None


def comparable(trace: Any) -> list[Any]:
    """The requests whose recorded and simulated figures describe the same prompt."""
    same = ((trace.meta.get("usage_model") or {}).get("same_request")) or []
    return [r for r in trace.requests
            if r.recorded and r.index < len(same) and same[r.index] and r.cache.reason_kind != "disabled"]


def recorded_vs_simulated(trace: Any) -> dict[str, Any]:
    """Prompt, read, written (5m/1h) and hit rate, recorded beside simulated, over the requests
    that carry recorded usage (all of them, compared or not: these are the run's totals)."""
    rec = {"requests": 0, "prompt": 0, "read": 0, "write": 0, "write_1h": 0}
    sim = {"requests": 0, "prompt": 0, "read": 0, "write": 0}
    for r in trace.requests:
        c = r.cache
        sim["requests"] += 1
        sim["prompt"] += _simulated_total(c)
        sim["read"] += c.read
        sim["write"] += c.write
        if r.recorded:
            rec["requests"] += 1
            rec["prompt"] += int(r.recorded.get("prompt_tokens") or 0)
            rec["read"] += int(r.recorded.get("cache_read_tokens") or 0)
            rec["write"] += int(r.recorded.get("cache_write_tokens") or 0)
            rec["write_1h"] += int(r.recorded.get("cache_write_1h_tokens") or 0)
    for side in (rec, sim):
        side["hit_rate"] = side["read"] / side["prompt"] if side["prompt"] else None
    rec["write_5m"] = rec["write"] - rec["write_1h"]
    sim["write_1h"] = sim["write"] if _ttl(trace) == "1h" else 0
    return {"recorded": rec if rec["requests"] else None, "simulated": sim}


def _ttl(trace: Any) -> str:
    return str((((trace.meta.get("config") or {}).get("prompt_caching")) or {}).get("cache_ttl") or "")


def accuracy(trace: Any, miss_below: float = MISS_BELOW) -> dict[str, Any] | None:
    """The simulator's accuracy block for one run; None when no request can be compared."""
    pairs = []
    for r in comparable(trace):
        real, simulated = _recorded_hit(r.recorded), _simulated_hit(r.cache)
        if real is not None and simulated is not None:
            pairs.append((r.index, real, simulated))
    if not pairs:
        return None
    errors = sorted(abs(s - h) * 100 for _, h, s in pairs)
    misses = [(i, h, s) for i, h, s in pairs if h < miss_below]
    caught = [i for i, _, s in misses if s < miss_below]
    alarms = [i for i, h, s in pairs if s < miss_below <= h]
    return {
        "compared": len(pairs),
        "requests": len(trace.requests),
        "mean_error_points": round(sum(errors) / len(errors), 2),
        "p90_error_points": round(errors[min(len(errors) - 1, int(0.9 * len(errors)))], 2),
        "miss_below": miss_below,
        "real_misses": len(misses),
        "caught": len(caught),
        "caught_pct": round(100 * len(caught) / len(misses), 1) if misses else None,
        "missed_requests": [i for i, _, s in misses if s >= miss_below],
        "false_alarms": len(alarms),
        "false_alarms_per_100": round(100 * len(alarms) / len(pairs), 2),
        "false_alarm_requests": alarms,
    }


def describe_accuracy(block: dict[str, Any] | None) -> list[str]:
    """The block in words, as the CLI prints it."""
    if block is None:
        return ["no request to compare (no recorded usage, or every request differs from the agent's)"]
    caught = (f"{block['caught']} of {block['real_misses']} real misses caught ({block['caught_pct']:.0f} %)"
              if block["real_misses"] else "no real miss")
    return [
        f"compared {block['compared']:,} of {block['requests']:,} requests (the others differ from what the agent sent)",
        f"hit-rate error: mean {block['mean_error_points']:.2f} points, p90 {block['p90_error_points']:.2f} points",
        f"{caught} (real miss: recorded hit rate < {block['miss_below'] * 100:.0f} %)",
        f"false alarms: {block['false_alarms']} ({block['false_alarms_per_100']:.2f} per 100 requests)",
    ]


def threshold_crossing(trace: Any) -> dict[str, Any] | None:
    """Where the recorded usage first reached the engine's threshold, and where the engine first
    compacted (the request a committed compression preceded); None without recorded usage."""
    from inspector.trace.summary import is_committed_compression

    first_cross = None
    threshold = None
    highest = (0, None)  # the recorded prompt's peak and its request: how far from the threshold it stayed
    for r in trace.requests:
        threshold = trace.state_at(r.event).get("threshold_tokens")
        prompt = (r.recorded or {}).get("prompt_tokens") or 0
        if prompt > highest[0]:
            highest = (prompt, r.index)
        if r.recorded and threshold and prompt >= threshold:
            first_cross = r.index
            break
    if not any(r.recorded for r in trace.requests):
        return None
    compacted = None
    for ev in trace.events:
        if is_committed_compression(ev):
            compacted = next((r.index for r in trace.requests if r.event > ev.index), len(trace.requests))
            break
    return {"threshold": threshold, "recorded_crossed_at": first_cross, "engine_compacted_before": compacted,
            "recorded_peak": highest[0], "recorded_peak_at": highest[1],
            "delta": (compacted - first_cross) if first_cross is not None and compacted is not None else None}


def describe_crossing(block: dict[str, Any] | None) -> str:
    if block is None:
        return ""
    rec, eng = block["recorded_crossed_at"], block["engine_compacted_before"]
    if rec is not None:
        said = f"recorded usage first reached the threshold ({block['threshold'] or 0:,}) at request {rec}"
    else:
        said = f"recorded usage never reached the threshold ({block['threshold'] or 0:,})"
        if block.get("recorded_peak_at") is not None:
            said += f"; its highest was {block['recorded_peak']:,} at request {block['recorded_peak_at']}"
    said += f"; the engine first compacted before request {eng}" if eng is not None else "; the engine never compacted"
    if block["delta"] is not None:
        said += f" ({block['delta']:+d} requests)"
    return said
