"""The jobs a worker runs: each is engine code that once ran in the command's own process.

Every job reports through its :class:`~inspector.worker.runtime.Runtime`: ``note`` frames for
what the command says on stderr, ``progress`` and trace ``batch`` frames while it runs, and one
``done`` frame with its result. An exception that escapes a job is reported by the worker's
entry point (``raised``), then the worker exits.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

from inspector.tokens.persistent import worker_counts
from inspector.worker.codec import TraceStreamer, session_from_json
from inspector.worker.runtime import Runtime

BATCH_SECONDS = 0.2  # trace batches at most this often (and after the last turn)


def _session(job: dict[str, Any]) -> Any:
    spec = job["session"]
    if "data" in spec:
        return session_from_json(spec["data"])
    from inspector.sessions import load_session, require_conversation

    return require_conversation(load_session(spec["path"], format=spec.get("format"), session_id=spec.get("session_id")))


@contextlib.contextmanager
def tracked_imports(rt: Runtime, allowed: float) -> Iterator[None]:
    """Each plugin's import as the worker's phase (``plugin:NAME`` and its folder), under ``allowed`` seconds."""
    from inspector.engines import discovery

    produce = discovery._produce

    def tracked_produce(cand: Any, manager: Any) -> Any:
        rt.phase(f"plugin:{cand.name}\t{cand.path or ''}", allowed)
        try:
            return produce(cand, manager)
        finally:
            rt.idle()

    discovery._produce = tracked_produce
    try:
        yield
    finally:
        discovery._produce = produce


def _session_frame(rt: Runtime, config: dict[str, Any]) -> Any:
    """The session the supervisor sends once it has read it; None when cancelled first.

    While it is not here yet (the supervisor is still reading the transcript), the run's
    tokenizer is loaded: a tenth of a second the replay would otherwise spend at its start.
    """
    if rt.inbox.empty():
        try:
            from inspector.tokens.counter import TokenCounter

            TokenCounter((config.get("inspector") or {}).get("tokenizer") or "cl100k_base")  # loads what it counts with
        except Exception:  # noqa: BLE001 - the replay reports an unusable tokenizer itself
            pass
    frame = rt.inbox.get()
    if frame.get("type") != "session":
        return None
    return session_from_json(frame["data"])


def _load(rt: Runtime, job: dict[str, Any], name: str | None) -> Any:
    from inspector.engines.discovery import load_engine

    allowed = float(job.get("load_timeout") or 0)
    with tracked_imports(rt, allowed):
        rt.phase(f"loading engine {name or 'from context.engine'!r}", allowed)
        try:
            return load_engine(name, job["config"], plugin_dirs=job.get("plugin_dirs") or [])
        finally:
            rt.idle()


def _error(rt: Runtime, kind: str, exc: BaseException) -> None:
    import traceback

    from inspector.host.cli import innermost_frame

    rt.send("error", kind=kind, exception=type(exc).__name__, message=str(exc), where=innermost_frame(exc),
            traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))


def replay_job(rt: Runtime, job: dict[str, Any]) -> None:
    """``replay`` of one engine over one session; the trace streams back turn by turn."""
    from inspector.cli import _is_user_error
    from inspector.engines.availability import unavailable_note
    from inspector.engines.discovery import EngineLoadError
    from inspector.host.replay import ReplayCancelled, StuckWatch, replay

    try:  # the engine first: a job can start before its session is read (see ``replays.start_replays``)
        loaded = _load(rt, job, job.get("engine") or None)
    except EngineLoadError as exc:
        _error(rt, "load", exc)
        return
    try:
        session = _session(job) if "later" not in job["session"] else _session_frame(rt, job["config"])
    except Exception as exc:
        loaded.close()
        _error(rt, "session", exc)
        return
    if session is None:  # cancelled before the session came
        loaded.close()
        rt.send("done", status="cancelled", batch=None)
        return
    rt.send("loaded", warnings=[str(w) for w in getattr(loaded, "warnings", None) or []])
    name = job.get("label") or job.get("engine") or "engine"
    unavailable = unavailable_note(name, loaded.availability)
    if unavailable:
        rt.send("note", text=unavailable)
    for warning in getattr(loaded, "warnings", None) or ():  # a fallback to the built-in compressor, a shadowed example
        if getattr(loaded, "fallback", None) or "shadowed" in str(warning):
            rt.send("note", text=f"{name}: {str(warning).splitlines()[0]}")
    state: dict[str, Any] = {"streamer": None, "sent": 0.0}

    class Watch(StuckWatch):
        """Hands over the replay's trace as soon as it exists: the supervisor has its meta from then on."""

        def __setattr__(self, name: str, value: Any) -> None:
            super().__setattr__(name, value)
            if name == "trace" and value is not None and state["streamer"] is None:
                state["streamer"] = TraceStreamer(value, session.messages)
                rt.send("meta", meta=value.meta)

    watch = Watch()

    def progress(done: int, total: int) -> None:
        streamer = state["streamer"]
        now = time.monotonic()
        if streamer is not None and (now - state["sent"] >= BATCH_SECONDS or done == total):
            state["sent"] = now
            rt.send("batch", batch=streamer.batch(), done=done, total=total)

    status = "ok"
    try:
        replay(session, loaded, job["config"], progress=progress, cancel=rt.cancel, label=job.get("label"),
               watch=watch)
    except ReplayCancelled:
        status = "cancelled"
    except Exception as exc:
        status = "crashed"
        _error(rt, "user" if _is_user_error(exc) else "crash", exc)
    finally:
        try:
            loaded.close()
        except Exception:
            pass
    streamer = state["streamer"]
    rt.send("done", status=status, batch=streamer.batch(final=True) if streamer is not None else None,
            token_counts=worker_counts())


def discover_job(rt: Runtime, job: dict[str, Any]) -> None:
    """``engines``: every engine, each plugin imported under the tracker so one that hangs or
    exits is a fault of that plugin only (the supervisor restarts the job without it)."""
    from inspector.engines import discovery

    skip = set(job.get("skip") or ())
    scan = discovery._scan

    def skipping_scan(dirs: Any, include_entry_points: bool) -> list[Any]:
        found = scan(dirs, include_entry_points)
        rt.send("candidates", names=[[c.name, str(c.path or ""), c.kind] for c in found])
        return [c for c in found if c.name not in skip]

    discovery._scan = skipping_scan
    try:
        with tracked_imports(rt, float(job.get("load_timeout") or 0)):
            infos = discovery.discover_engines(job["config"], job.get("plugin_dirs") or [])
    finally:
        discovery._scan = scan
    rt.send("done", status="ok", engines=[i.to_json() for i in infos])


def doctor_job(rt: Runtime, job: dict[str, Any]) -> None:
    from inspector.engines.doctor import run_doctor

    report = run_doctor(job["engine"], job["config"], job.get("plugin_dirs") or [], timeout=float(job["timeout"]))
    rt.send("done", status="ok", report=report.to_json())


def follow_job(rt: Runtime, job: dict[str, Any]) -> None:
    """``follow``: the follower polls and replays here; each update streams the trace's new part."""
    from inspector.engines.discovery import EngineLoadError
    from inspector.live.follow import Follower

    try:
        loaded = _load(rt, job, job.get("engine") or None)
    except EngineLoadError as exc:
        _error(rt, "load", exc)
        return
    follower = Follower(job["source"], loaded, job["config"], format=job.get("format"),
                        session_id=job.get("session_id"), interval=float(job.get("interval") or 1.0),
                        settle=job.get("settle"), label=job.get("engine"))
    rt.send("following", engine=getattr(loaded.info, "name", None), interval=follower.interval,
            settle=follower.settle)
    streamer: TraceStreamer | None = None

    def stream() -> dict[str, Any] | None:
        nonlocal streamer
        trace = follower.host.trace if follower.host is not None else None
        if trace is None:
            return None
        if streamer is None or streamer.trace is not trace:
            streamer = TraceStreamer(trace)
            rt.send("meta", meta=trace.meta)
        batch = streamer.batch()
        batch["meta"] = follower.trace.meta  # as of this poll: how usage was fed and fitted so far (meta.usage_model)
        return batch

    def on_update(_snapshot: Any, added: int) -> None:
        rt.send("update", added=added, batch=stream())

    def on_error(message: str | None) -> None:
        rt.send("source_error", message=message, refused=follower.refused, played=follower.played)

    stop = threading.Event()
    threading.Thread(target=lambda: (rt.cancel.wait(), stop.set()), daemon=True).start()
    try:
        follower.run(stop, on_update, max_seconds=job.get("max_seconds"), on_error=on_error)
    finally:
        final = follower.close()
        try:
            loaded.close()
        except Exception:
            pass
    batch = None
    if final is not None:
        if streamer is None or streamer.trace is not final:
            streamer = TraceStreamer(final)
            rt.send("meta", meta=final.meta)
        batch = streamer.batch(final=True)
    rt.send("done", status="ok", batch=batch, refused=follower.refused, last_error=follower.last_error,
            played=follower.played, token_counts=worker_counts())


def chat_job(rt: Runtime, job: dict[str, Any]) -> None:
    """Live chat: :mod:`inspector.worker.chat`."""
    from inspector.worker.chat import chat_job as run

    run(rt, job)


JOBS = {"replay": replay_job, "discover": discover_job, "doctor": doctor_job, "follow": follow_job, "chat": chat_job}
