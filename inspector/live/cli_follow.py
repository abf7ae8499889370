"""``context-inspector follow SOURCE``: replay a session through an engine while it is being written.

Prints one line per newly replayed turn (prompt tokens the engine's request had, the engine's
compression count, the simulated cache read and, when the source recorded usage, the real
figures beside them), so a running Hermes session can be watched from a terminal.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import threading
from typing import Any, TextIO

from inspector.config import add_config_arguments
from inspector.engines.stdout_guard import stdout_to_stderr

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
    try:
        with stdout_to_stderr():
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
    from inspector.engines.discovery import EngineLoadError, load_engine
    from inspector.live.follow import Follower

    plugin_dirs = list(args.plugin_dir) + list((config.get("inspector") or {}).get("plugin_dirs") or [])
    try:
        loaded = load_engine(args.engine, config, plugin_dirs=plugin_dirs)
    except EngineLoadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    follower = Follower(args.source, loaded, config, format=args.format, session_id=args.session_id,
                        interval=args.interval, settle=args.settle, label=args.engine)
    printed = {"turns": 0, "error": None}
    name = getattr(loaded.info, "name", None) or args.engine or "engine"
    print(f"following {args.source} with engine {name} every {follower.interval:g} s, settling {follower.settle:g} s "
          "(Ctrl+C to stop)", file=sys.stderr)

    def on_update(trace: Any, added: int) -> None:
        for turn in range(printed["turns"], printed["turns"] + added):
            print(turn_line(trace, turn), file=out, flush=True)
        printed["turns"] += added

    def on_error(message: str | None) -> None:
        if message is None:
            print("the source is readable again", file=sys.stderr, flush=True)
        elif follower.refused:
            print(f"error: {message}", file=sys.stderr, flush=True)
        elif follower.played:
            print(f"warning: cannot read {args.source}: {message} (still polling)", file=sys.stderr, flush=True)
        else:  # nothing played yet: say what it waits for (each different reason once)
            print(f"waiting: cannot read {args.source}: {message} (still polling)", file=sys.stderr, flush=True)

    stop = threading.Event()
    try:
        follower.run(stop, on_update, max_seconds=args.max_seconds, on_error=on_error)
    finally:
        final = follower.close()
        close = getattr(loaded, "close", None)
        if callable(close):
            close()
        if args.out and final is not None:  # Ctrl+C is how a follow usually ends: save then too
            from inspector.trace.io import save_trace

            try:
                save_trace(final, args.out)
                print(f"trace written: {args.out}", file=sys.stderr)
            except OSError as exc:
                print(f"error: {args.out}: cannot write the trace: {exc.strerror or exc}", file=sys.stderr)
    if follower.refused:
        return 2  # said as it happened
    if follower.last_error:
        ended = "error" if not follower.played else f"replayed {follower.played} turn(s), then the source broke"
        print(f"{ended}: {follower.last_error}", file=sys.stderr)
        return 1
    print(f"replayed {follower.played} turn(s)", file=sys.stderr)
    return 0
