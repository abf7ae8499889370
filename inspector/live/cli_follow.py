"""``context-inspector follow SOURCE``: replay a session through an engine while it is being written.

Prints one line per newly replayed turn (prompt tokens the engine's request had, the engine's
compression count, the simulated cache read and, when the source recorded usage, the real
figures beside them), so a running Hermes session can be watched from a terminal. Each time the
usage calibration is fitted again on the recorded calls seen so far, stderr says so.
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import sys
import threading
from typing import Any, TextIO

from inspector.config import add_config_arguments
from inspector.terminal import printable

HELP = "Follow a session another program is writing (Hermes state.db[#id] or a growing JSONL) and replay new turns"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", help="Hermes state.db (optionally state.db#SESSION_ID) or a JSONL transcript")
    parser.add_argument("--engine", default=None, help="engine to replay with (default: context.engine from config)")
    add_config_arguments(parser)
    parser.add_argument("--plugin-dir", action="append", default=[], help="extra plugin directory")
    parser.add_argument("--format", default=None, help="source format, when detection needs help")
    parser.add_argument("--session-id", "--session", dest="session_id", default=None,
                        help="session id inside a state.db (same as SOURCE#ID); --session is an alias")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between polls (default 1)")
    parser.add_argument("--settle", type=float, default=None,
                        help="seconds the source must stay unchanged before a last turn it marks no end for "
                             "(no turn_duration, final stop reason, task_complete...) is replayed "
                             "(default 10, or two poll intervals if longer)")
    parser.add_argument("--max-seconds", type=float, default=None, help="stop after this many seconds")
    parser.add_argument("--out", default=None,
                        help="write the trace here when following ends (also on Ctrl+C); .json or .json.gz")


def turn_line(trace: Any, turn: int) -> str:
    """``turn N: prompt P tok, compressions C, cache read R`` for the last request of ``turn``."""
    requests = [r for r in trace.requests if r.turn == turn]
    state = None
    for ev in reversed(trace.events):
        if ev.turn == turn and ev.state is not None:
            state = ev.state
            break
    from inspector.trace.model import STATE_FIELDS

    compressions = dict(zip(STATE_FIELDS, state)).get("compression_count", 0) if state else 0
    if not requests:
        return f"turn {turn}: no provider call, compressions {compressions}"
    last = requests[-1]
    prompt = last.usage.get("prompt_tokens", 0)
    parts = [f"turn {turn}: prompt {prompt:,} tok", f"requests {len(requests)}", f"compressions {compressions}",
             f"cache read {last.cache.read:,}"]
    if last.recorded:
        parts.append(f"recorded prompt {last.recorded.get('prompt_tokens', 0):,} / cache read "
                     f"{last.recorded.get('cache_read_tokens', 0):,}")
    return ", ".join(parts)


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from inspector.config import command_config
    from inspector.outputs import output_problem

    out = out or sys.stdout
    config = command_config(args)
    if config is None:
        return 2
    if args.settle is not None and not args.settle >= 0:
        print(f"error: --settle {args.settle:g}: must be zero or more seconds", file=sys.stderr)
        return 2
    problem = output_problem(args.out, inputs=[args.source, args.config or ""]) if args.out else None
    if problem:
        print(f"error: --out {args.out}: {problem}", file=sys.stderr)
        return 2
    turn_out = _own_stream(out)  # the per-turn rows stay on stdout; what engines print goes to stderr
    try:  # engines run in a worker: what they print reaches stderr, never the per-turn rows
        return _follow(args, config, turn_out)
    finally:
        if turn_out is not out:
            turn_out.close()


def _own_stream(out: TextIO) -> TextIO:
    """``out`` on a descriptor of its own, so it still reaches stdout once fd 1 points at stderr."""
    try:
        fd = os.dup(out.fileno())
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return out  # not a real file (a test's capture): redirecting sys.stdout leaves it alone
    return os.fdopen(fd, "w", buffering=1, encoding=getattr(out, "encoding", None) or "utf-8", closefd=True)


def _follow(args: argparse.Namespace, config: dict[str, Any], out: TextIO) -> int:
    """The follower runs in a worker process; this process prints its turns and writes ``--out``.

    Ctrl+C asks the worker to stop (it ends the engine's session and sends the final trace, which
    is saved); a worker that does not stop within a second is killed, and what it streamed is saved.
    """
    from inspector.worker.commands import follow_in_worker
    from inspector.worker.supervisor import STATUS_CANCELLED, STATUS_OK, Worker

    plugin_dirs = list(args.plugin_dir) + list((config.get("inspector") or {}).get("plugin_dirs") or [])
    job = {"source": args.source, "engine": args.engine, "plugin_dirs": plugin_dirs, "format": args.format,
           "session_id": args.session_id, "interval": args.interval, "settle": args.settle,
           "max_seconds": args.max_seconds}
    printed = {"turns": 0, "played": 0, "refused": False, "events": 0}

    def on_frame(worker: Worker, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        if kind == "following":
            name = frame.get("engine") or args.engine or "engine"
            print(f"following {args.source} with engine {name} every {frame.get('interval', 0):g} s, settling "
                  f"{frame.get('settle', 0):g} s (Ctrl+C to stop)", file=sys.stderr)
        elif kind == "update" and worker.assembler is not None:
            trace = worker.assembler.trace
            added = int(frame.get("added") or 0)
            for ev in trace.events[printed["events"]:]:  # the follower's usage fits (inspector.live.follow)
                if ev.note and ev.note.startswith("follow: usage"):
                    print(printable(ev.note.removeprefix("follow: ")), file=sys.stderr, flush=True)
            printed["events"] = len(trace.events)
            for turn in range(printed["turns"], printed["turns"] + added):
                print(turn_line(trace, turn), file=out, flush=True)
            printed["turns"] += added
        elif kind == "source_error":
            message = frame.get("message")
            printed["refused"] = bool(frame.get("refused"))
            if message is None:
                print("the source is readable again", file=sys.stderr, flush=True)
            elif frame.get("refused"):
                print(f"error: {printable(str(message))}", file=sys.stderr, flush=True)
            elif frame.get("played"):
                print(f"warning: cannot read {args.source}: {printable(str(message))} (still polling)",
                      file=sys.stderr, flush=True)
            else:  # nothing played yet: say what it waits for (each different reason once)
                print(f"waiting: cannot read {args.source}: {printable(str(message))} (still polling)",
                      file=sys.stderr, flush=True)

    stop = threading.Event()
    previous = _on_ctrl_c(stop)
    try:
        outcome = follow_in_worker(job, config, stop=stop, on_frame=on_frame)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    error = outcome.error
    if error is not None and error.get("kind") == "load":
        print(f"error: {error.get('message')}", file=sys.stderr)
        return 2
    final = outcome.trace
    if args.out and final is not None:  # Ctrl+C is how a follow usually ends: save then too
        from inspector.trace.io import save_trace

        try:
            save_trace(final, args.out)
            print(f"trace written: {args.out}", file=sys.stderr)
        except OSError as exc:
            print(f"error: {args.out}: cannot write the trace: {exc.strerror or exc}", file=sys.stderr)
    done = outcome.done or {}
    if outcome.status not in (STATUS_OK, STATUS_CANCELLED) or outcome.fault is not None or error is not None:
        print(f"error: the follow's worker ended: {printable(outcome.describe())}", file=sys.stderr)
        return 2
    if done.get("refused"):
        return 2  # said as it happened
    played = int(done.get("played") or 0)
    if done.get("last_error"):
        ended = "error" if not played else f"replayed {played} turn(s), then the source broke"
        print(f"{ended}: {printable(str(done['last_error']))}", file=sys.stderr)
        return 1
    print(f"replayed {played} turn(s)", file=sys.stderr)
    return 0


def _on_ctrl_c(stop: threading.Event) -> Any:
    """Ctrl+C sets ``stop`` (the worker then ends cleanly); returns the handler it replaced."""
    try:
        return signal.signal(signal.SIGINT, lambda _sig, _frame: stop.set())
    except ValueError:  # not the main thread
        return None
