"""One batch task, run wherever a backend puts it: :func:`replay_task`.

The function is the whole contract between a batch and its backends: a JSON-able task dict in,
a small JSON-able result dict out (the figures of :func:`inspector.trace.summary.summarise` and
the recorded usage beside them), the trace saved to disk when the task asks. It loads the
session and a fresh engine itself (engines are stateful; nothing is shared with the caller), so
it runs the same in a spawned process, a Ray worker or the caller's own thread.
"""

from __future__ import annotations

import gc
import time
from typing import Any

# The result fields that measure time: they differ from run to run, everything else must not.
TIMING_FIELDS = ("seconds", "engine_seconds")


def replay_task(task: dict[str, Any]) -> dict[str, Any]:
    """Replay ``task["session"]`` with ``task["engine"]`` under ``task["config"]``; never raises
    for a bad session, engine or replay (the result says what failed), only for an interrupt."""
    started = time.perf_counter()
    result = {**task_identity(task), "ok": False, "error": None}
    # Automatic collection stays off until the trace is dropped: re-enabled at the end of the
    # replay (inspector.gc_pause), its first pass would walk the whole trace, which a
    # task only summarises and frees. The replay still collects young garbage between batches.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(task, result, started)
    finally:
        if collecting:
            gc.enable()


def _run(task: dict[str, Any], result: dict[str, Any], started: float) -> dict[str, Any]:
    try:
        trace = _replay(task)
    except Exception as exc:
        result.update(ok=False, error=_error_text(exc))
    else:
        result.update(_figures(trace))
        result["ok"] = not result.get("stopped")
        if task.get("trace_path"):
            from inspector.trace.io import save_trace

            try:
                save_trace(trace, task["trace_path"])
                result["trace_path"] = task["trace_path"]
            except OSError as exc:
                result["trace_error"] = f"cannot write the trace: {exc.strerror or exc}"
        del trace
    result["seconds"] = round(time.perf_counter() - started, 4)
    return result


def task_identity(task: dict[str, Any]) -> dict[str, Any]:
    """The fields of a result that name its task (a reused result takes the current task's)."""
    session = task["session"]
    return {"key": task["key"], "session": session["spec"], "session_hash": session["hash"],
            "engine": task["engine"], "engine_version": task["engine_id"].get("version") or "",
            "setting": task["setting_label"]}


def failed_result(task: dict[str, Any], error: str) -> dict[str, Any]:
    return {**task_identity(task), "ok": False, "error": error}


def _replay(task: dict[str, Any]) -> Any:
    """The replay in a worker process of its own, as every command runs engines (inspector.worker):
    an engine that hangs in C, exits or eats memory fails this task alone."""
    from inspector.host.cli import run_engines
    from inspector.sessions import load_session, require_conversation

    session = require_conversation(load_session(task["session"]["spec"]))
    (trace,) = run_engines(session, [task["engine"]], task["config"], task.get("plugin_dirs") or [], quiet=True)
    return trace


def _figures(trace: Any) -> dict[str, Any]:
    from inspector.trace.summary import summarise

    summary = summarise(trace)
    recorded = [r.recorded for r in trace.requests if r.recorded and r.recorded.get("prompt_tokens")]
    rec_prompt = sum(int(r.get("prompt_tokens") or 0) for r in recorded)
    rec_read = sum(int(r.get("cache_read_tokens") or 0) for r in recorded)
    session = trace.meta.get("session") or {}
    return {
        "session_id": session.get("id"), "format": session.get("format"), "turns": summary.pop("turns"),
        **summary,
        "recorded_requests": len(recorded),
        "recorded_prompt": rec_prompt if recorded else None,
        "recorded_cache_read": rec_read if recorded else None,
        "recorded_hit_rate": (rec_read / rec_prompt) if rec_prompt else None,
        "stopped": trace.meta.get("stopped") or trace.meta.get("stopped_by_worker") or None,
    }


def _error_text(exc: BaseException) -> str:
    from inspector.sessions.model import ReaderError

    text = str(exc).strip() or type(exc).__name__
    if not isinstance(exc, ReaderError) and type(exc).__name__ not in ("ReplayCrashed", "EngineLoadError"):
        text = f"{type(exc).__name__}: {text}"
    return text[:2000]
