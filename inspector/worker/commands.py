"""What the commands and the window ask of workers besides replays: the doctor, the engine
listing and following a growing session (replays: :mod:`inspector.worker.replays`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from inspector.worker.replays import _absolute
from inspector.worker.supervisor import Outcome, Worker, run_worker, run_workers


def doctor_in_worker(engine: str, config: dict[str, Any], plugin_dirs: list[str], timeout: float) -> Any:
    """The doctor's checks in a worker process: an engine that freezes, exits or raises past the
    host's guards fails the report (with where it was), never the command."""
    from inspector.engines.doctor import FAIL, DoctorReport, Finding

    job = {"job": "doctor", "engine": engine, "config": config, "plugin_dirs": _absolute(plugin_dirs),
           "timeout": timeout}
    outcome = run_worker(job, config)
    data = (outcome.done or {}).get("report") if outcome.ok else None
    if isinstance(data, dict):
        report = DoctorReport(engine=str(data.get("engine") or engine), source=str(data.get("source") or ""),
                              path=str(data.get("path") or ""))
        report.findings = [Finding(f["status"], f["check"], f["message"], f.get("details", ""), int(f.get("count", 1)))
                           for f in data.get("findings") or []]
        return report
    report = DoctorReport(engine=engine)
    if outcome.error is not None:
        report.add(FAIL, "worker", f"the doctor crashed: {outcome.error.get('exception')}: {outcome.error.get('message')}",
                   str(outcome.error.get("traceback") or ""))
    else:
        report.add(FAIL, "worker", outcome.describe(), (outcome.fault.traceback or "") if outcome.fault else "")
    return report


def _info(data: dict[str, Any]) -> Any:
    from inspector.engines.availability import Availability
    from inspector.engines.discovery import EngineInfo

    availability = None
    described = data.get("availability")
    if isinstance(described, str) and ": " in described:
        state, _, reason = described.partition(": ")
        availability = Availability(state, reason)
    return EngineInfo(name=str(data["name"]), description=str(data.get("description") or ""),
                      version=str(data.get("version") or ""), source=str(data.get("source") or ""),
                      path=str(data.get("path") or ""), loads=bool(data.get("loads")), error=data.get("error"),
                      metadata=dict(data.get("metadata") or {}), warnings=list(data.get("warnings") or []),
                      how=str(data.get("how") or ""), plugin=str(data.get("plugin") or ""), availability=availability)


def discover_in_workers(config: dict[str, Any], plugin_dirs: list[str]) -> list[Any]:
    """Discovery in a worker process. A plugin whose import freezes, exits the process or outlives
    ``inspector.load_timeout_seconds`` is listed as not loading, with what happened, and the
    listing starts again in a fresh worker without it (each such plugin costs one restart)."""
    from inspector.engines.discovery import EngineInfo

    failed: dict[str, EngineInfo] = {}
    candidates: dict[str, tuple[str, str]] = {}

    def on_frame(_worker: Any, frame: dict[str, Any]) -> None:
        if frame.get("type") == "candidates":
            for name, path, kind in frame.get("names") or []:
                candidates.setdefault(str(name), (str(path), str(kind)))

    while True:
        job = {"job": "discover", "config": config, "plugin_dirs": _absolute(plugin_dirs), "skip": sorted(failed)}
        outcome = run_worker(job, config, on_frame=on_frame)
        engines = (outcome.done or {}).get("engines") if outcome.ok else None
        if isinstance(engines, list):
            infos = [_info(e) for e in engines]
            return infos + [failed[n] for n in sorted(failed)]
        culprit = _plugin_at_fault(outcome)
        if culprit is None or culprit in failed:
            raise RuntimeError(f"listing engines failed: {outcome.describe()}")
        path, kind = candidates.get(culprit, ("", ""))
        tb = (outcome.fault.traceback or "") if outcome.fault else ""
        failed[culprit] = EngineInfo(culprit, "", "", kind or "plugin", path, False,
                                     error=f"importing it {outcome.describe()}\n\n{tb}".rstrip())


def _plugin_at_fault(outcome: Any) -> str | None:
    """The plugin whose import the worker was in when it froze or died (the tracker's phase)."""
    fault = outcome.fault
    text = fault.message if fault is not None else ""
    marker = "plugin:"
    if marker not in text:
        return None
    return text.split(marker, 1)[1].split("\t", 1)[0].split(" ", 1)[0].strip() or None


def follow_in_worker(job: dict[str, Any], config: dict[str, Any], *, stop: threading.Event,
                     on_frame: Callable[[Worker, dict[str, Any]], None] | None = None) -> Outcome:
    """Follow a growing session in a worker until ``stop`` (or the job's ``max_seconds``).

    ``job`` holds ``source``, ``engine``, ``format``, ``session_id``, ``interval``, ``settle``,
    ``max_seconds`` and ``plugin_dirs``; frames: ``following``, ``update`` (the trace so far is
    ``worker.assembler.trace``), ``source_error``. Setting ``stop`` ends the engine's session in the
    worker, which sends the final trace (a worker deaf to it is killed a second later).
    """
    job = {**job, "job": "follow", "config": config, "plugin_dirs": _absolute(job.get("plugin_dirs") or [])}
    return run_workers([Worker(job, config, label=str(job.get("engine") or "engine"), on_frame=on_frame)],
                       cancel=stop)[0]
