"""The differential jobs, run identically against Hermes' compressor and ours.

This module is imported by two interpreters: the Hermes venv's (through ``hermes_driver.py``,
in a subprocess) and the main one (in-process, against our built-in compressor). It uses the
standard library only and never imports Hermes or the inspector: each side hands it a
:class:`Side` (how to build a compressor, how to estimate tokens, how to make the summariser
answer in a mode). Running the same code on both sides is what makes the comparison fair: any
difference in the results comes from the compressors, not from two drivers.

Only our own summary prose is normalised (:func:`encode_list`): a message carrying the
``_compressed_summary`` flag becomes ``<summary>`` (or ``<merged>`` plus the tail row's own text
it wraps), and the note appended to the system prompt becomes ``<compaction-note>``. Everything
else — pruning placeholders, their number formats, tool calls, ids, keys — is compared exactly.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MODES = ("fixed", "error", "no_provider")
FIXED_SUMMARY = (
    "## Historical Task Snapshot\nThe user wanted the work done.\n\n## Goal\nFinish the task.\n\n"
    "## Completed Actions\n1. READ a file — fine [tool: read_file]"
)
ERROR_TEXT = "summariser failed (differential error mode)"
NO_PROVIDER_TEXT = "No LLM provider configured for task 'compression' (differential mode)"

# Hermes' merge markers (agent/context_compressor.py:190-191 of hermes-agent 0.19.0): the tail
# row's own text sits between them; both sides write them, so they mark structure, not prose.
MERGED_HEADER = "[PRIOR CONTEXT — for reference only; not a new message]"
MERGED_DELIMITER = "[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]"
SUMMARY_FLAG = "_compressed_summary"
INLINE_LIMIT = 400  # longer strings travel as a digest


@dataclass
class Side:
    """What the jobs need from one implementation."""

    make: Callable[..., Any]  # ContextCompressor(model, **kwargs)
    estimate: Callable[[list], int]  # estimate_messages_tokens_rough
    set_mode: Callable[[str], None]  # make the summariser answer as in MODES


# ----------------------------------------------------------------------------------------------
# Encoding and normalisation
# ----------------------------------------------------------------------------------------------


def _short(value: Any) -> Any:
    """The value itself when short, else a digest with the length (diffs stay readable)."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    if len(text) <= INLINE_LIMIT:
        return value if isinstance(value, str) else text
    return f"sha1:{hashlib.sha1(text.encode('utf-8', 'surrogatepass')).hexdigest()}:{len(text)}"


def _merged_prior(content: Any) -> Any:
    """The tail row's own content inside a merged summary, or None when not merged."""
    if isinstance(content, str) and content.startswith(MERGED_HEADER + "\n"):
        body = content[len(MERGED_HEADER) + 1:]
        cut = body.find("\n\n" + MERGED_DELIMITER)
        return body[:cut] if cut >= 0 else body
    if isinstance(content, list) and content and isinstance(content[0], dict) \
            and content[0].get("text") == MERGED_HEADER + "\n":
        return content[1:-1]
    return None


def _normalise_system(content: Any, original: Any) -> Any:
    if content == original:
        return content
    if isinstance(original, str) and original and isinstance(content, str) and content.startswith(original):
        return [original, "<compaction-note>"]
    if not original and isinstance(content, str):
        return ["", "<compaction-note>"]
    if isinstance(original, list) and isinstance(content, list) and content[:-1] == original:
        return [original, "<compaction-note>"]
    return content


def encode_message(msg: Any, original_system: Any = None, is_head_system: bool = False) -> Any:
    if not isinstance(msg, dict):
        return {"not_a_dict": repr(type(msg))}
    content = msg.get("content")
    if msg.get(SUMMARY_FLAG):
        prior = _merged_prior(content)
        content = "<summary>" if prior is None else ["<merged>", prior]
    elif is_head_system:
        content = _normalise_system(content, original_system)
    return {
        "role": msg.get("role"),
        "content": _short(content),
        "tool_calls": _short(msg.get("tool_calls")),
        "tool_call_id": msg.get("tool_call_id"),
        "keys": sorted(msg),
    }


def encode_list(messages: Any, inputs: list) -> Any:
    if not isinstance(messages, list):
        return {"not_a_list": repr(type(messages))}
    system = inputs[0].get("content") if inputs and isinstance(inputs[0], dict) and inputs[0].get("role") == "system" else None
    return [encode_message(m, system, i == 0 and system is not None and m.get("role") == "system")
            for i, m in enumerate(messages)]


# ----------------------------------------------------------------------------------------------
# State the host and subclasses read
# ----------------------------------------------------------------------------------------------

PUBLIC_STATE = (
    "context_length", "threshold_tokens", "threshold_percent", "tail_token_budget", "max_summary_tokens",
    "compression_count", "last_prompt_tokens", "last_completion_tokens", "last_total_tokens",
    "last_real_prompt_tokens", "last_compression_rough_tokens", "last_rough_tokens_when_real_prompt_fit",
    "awaiting_real_usage_after_compression",
)
VERDICT_STATE = (
    "_ineffective_compression_count", "_fallback_compression_streak", "_last_compress_aborted",
    "_last_summary_fallback_used", "_last_summary_dropped_count", "_last_compression_made_progress",
    "_verify_compaction_cleared_threshold", "_consecutive_timeout_failures",
)


def snapshot(c: Any) -> dict[str, Any]:
    out = {name: getattr(c, name, "<missing>") for name in PUBLIC_STATE + VERDICT_STATE}
    out["_consecutive_timeout_failures"] = getattr(c, "_consecutive_timeout_failures", 0)  # Hermes sets it lazily
    out["cooldown_active"] = bool(c.get_active_compression_failure_cooldown())
    out["has_previous_summary"] = bool(getattr(c, "_previous_summary", None))
    return out


# ----------------------------------------------------------------------------------------------
# Jobs
# ----------------------------------------------------------------------------------------------


def _build(side: Side, job: dict) -> Any:
    return side.make(job.get("model", "differential/test-model"), quiet_mode=True,
                     config_context_length=job["context_length"], **job.get("kwargs", {}))


def run_compress_job(side: Side, job: dict, sessions: dict[str, list]) -> dict:
    """One compress() on a fresh compressor: the returned list and the flags left behind."""
    messages = sessions[job["session"]][: job["cut"]]
    side.set_mode(job["mode"])
    c = _build(side, job)
    try:
        out = c.compress(list(messages), current_tokens=job.get("current_tokens"))
    except Exception as exc:  # reported, compared like any other result
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"messages": encode_list(out, messages), "state": snapshot(c)}


def script_ops(seed: int, length: int = 40) -> list[dict]:
    """A random but reproducible sequence of host calls on the token-tracking API."""
    rng = random.Random(seed)
    ops: list[dict] = []
    for _ in range(length):
        kind = rng.choice(("usage", "usage", "usage", "defer", "defer", "should", "should", "should_none",
                           "compressed", "model", "start", "end", "reset", "record"))
        if kind == "usage":
            usage: dict[str, Any] = {"prompt_tokens": rng.choice((0, rng.randint(1, 200_000))),
                                     "completion_tokens": rng.randint(0, 4000)}
            pick = rng.random()
            if pick < 0.2:
                usage["total_tokens"] = None
            elif pick < 0.4:
                usage.pop("completion_tokens")
            elif pick < 0.6:
                usage["total_tokens"] = usage["prompt_tokens"] + usage.get("completion_tokens", 0) + 7
            ops.append({"op": "usage", "usage": usage})
        elif kind in ("defer", "should"):
            ops.append({"op": kind, "tokens": rng.randint(1, 250_000)})
        elif kind == "should_none":
            ops.append({"op": "should", "tokens": None})
        elif kind == "compressed":  # what the host sets after a compaction (conversation_compression.py:1457)
            ops.append({"op": "compressed", "rough": rng.randint(1000, 150_000)})
        elif kind == "model":
            ops.append({"op": "model", "model": rng.choice(("differential/test-model", "other/model")),
                        "context_length": rng.choice((16_000, 64_000, 128_000, 200_000, 1_000_000)),
                        "max_tokens": rng.choice((None, 4096, 32_000))})
        elif kind == "start":
            ops.append({"op": "start", "session_id": f"s{rng.randint(1, 3)}",
                        "boundary_reason": rng.choice((None, "compression", "new"))})
        elif kind == "end":
            ops.append({"op": "end", "session_id": "s1"})
        elif kind == "reset":
            ops.append({"op": "reset"})
        else:
            ops.append({"op": "record", "used_fallback": rng.random() < 0.5})
    return ops


def _apply(c: Any, op: dict) -> Any:
    kind = op["op"]
    if kind == "usage":
        return c.update_from_response(dict(op["usage"]))
    if kind == "defer":
        return c.should_defer_preflight_to_real_usage(op["tokens"])
    if kind == "should":
        return c.should_compress(op["tokens"]) if op["tokens"] is not None else c.should_compress()
    if kind == "compressed":
        c.last_compression_rough_tokens = op["rough"]
        c.last_prompt_tokens = -1
        c.last_completion_tokens = 0
        c.awaiting_real_usage_after_compression = True
        return None
    if kind == "model":
        return c.update_model(op["model"], op["context_length"], max_tokens=op["max_tokens"])
    if kind == "start":
        kwargs = {"boundary_reason": op["boundary_reason"]} if op["boundary_reason"] else {}
        return c.on_session_start(op["session_id"], **kwargs)
    if kind == "end":
        return c.on_session_end(op["session_id"], [])
    if kind == "reset":
        return c.on_session_reset()
    if kind == "record":
        return c.record_completed_compaction(used_fallback=op["used_fallback"])
    raise ValueError(f"unknown op {kind!r}")


def run_script_job(side: Side, job: dict, sessions: dict[str, list]) -> dict:
    """A scripted sequence of token-tracking calls: every step's answer and state."""
    side.set_mode("fixed")
    c = _build(side, job)
    steps = []
    for op in job["ops"]:
        try:
            result = _apply(c, op)
        except Exception as exc:
            result = f"raised {type(exc).__name__}: {exc}"
        steps.append({"result": result, "state": snapshot(c)})
    return {"steps": steps}


def turn_ends(messages: list) -> list[int]:
    """Cut points: before every user row (a turn boundary) and at the end."""
    cuts = [i for i, m in enumerate(messages) if i > 0 and isinstance(m, dict) and m.get("role") == "user"]
    return [*cuts, len(messages)]


def run_replay_job(side: Side, job: dict, sessions: dict[str, list], adopt: list | None = None) -> dict:
    """A host-like replay: per turn, preflight check, compaction, real usage, post-response check.

    After a compaction both sides continue from ``adopt`` (Hermes' own output, handed back by
    the caller) when given, so a difference at one step does not snowball into the next; the
    Hermes side, which produces those lists, passes None and continues from its own.
    """
    messages = sessions[job["session"]]
    overhead = job.get("overhead", 1500)
    side.set_mode(job["mode"])
    c = _build(side, job)
    live: list = []
    done = 0
    steps: list[dict] = []
    outputs: list[list] = []

    def compact(reason: str, tokens: int) -> None:
        nonlocal live
        before = list(live)
        out = c.compress(list(live), current_tokens=tokens)
        k = len(outputs)
        outputs.append(out)
        live = list(adopt[k]) if adopt is not None and k < len(adopt) else list(out)
        progressed = bool(getattr(c, "_last_compression_made_progress", False))
        if progressed:
            c.last_compression_rough_tokens = side.estimate(live) + overhead
            c.last_prompt_tokens = -1
            c.last_completion_tokens = 0
            c.awaiting_real_usage_after_compression = True
            c.record_completed_compaction(used_fallback=bool(getattr(c, "_last_summary_fallback_used", False)))
        steps.append({"op": f"compress:{reason}", "messages": encode_list(out, before), "state": snapshot(c)})

    for end in turn_ends(messages)[:job.get("max_turns", 10_000)]:
        live.extend(messages[done:end])
        done = end
        rough = side.estimate(live) + overhead
        defer = c.should_defer_preflight_to_real_usage(rough)
        should = c.should_compress(rough)
        steps.append({"op": "preflight", "result": [defer, should], "state": snapshot(c)})
        if should and not defer:
            compact("preflight", rough)
        prompt = side.estimate(live) + overhead
        c.update_from_response({"prompt_tokens": prompt, "completion_tokens": 200, "total_tokens": prompt + 200})
        should = c.should_compress()
        steps.append({"op": "response", "result": should, "state": snapshot(c)})
        if should:
            compact("response", prompt)
    return {"steps": steps, "outputs": outputs if adopt is None else []}


RUNNERS = {"compress": run_compress_job, "script": run_script_job}


def run_jobs(side: Side, request: dict, adopt: dict[str, list] | None = None) -> dict:
    """Every job of ``request`` on one side; results keyed like the jobs."""
    sessions = request["sessions"]
    results: dict[str, Any] = {}
    for key, job in request["jobs"].items():
        if job["kind"] == "replay":
            results[key] = run_replay_job(side, job, sessions, None if adopt is None else adopt.get(key))
        else:
            results[key] = RUNNERS[job["kind"]](side, job, sessions)
    return results
