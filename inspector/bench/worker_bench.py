"""Worker-boundary benchmark (a script that prints figures, not a test).

- ``replay`` of :mod:`inspector.bench.host_bench`'s 2,000-turn session read from a file, as the
  command does it: in process (read, load the engine, replay) and through a worker process (the
  worker starts and loads its engine while the file is read, gets the session as JSON and streams
  the trace back; all included), as the growth of host_bench's ratio (host time / tokenising
  baseline); the target is at most 5 %.
- A 3-engine comparison run with one worker at a time and with three at once (wall clock).

Each figure is the median of ``--repeat`` alternating runs (the machine is shared: other load
adds time to either side at random).

With ``--memory-turns N`` it also replays an N-turn session file in a fresh process, in process
and through a worker, and prints the peak memory of each process: the supervisor holds the
trace the worker streams back, so issue 23's memory target applies to it as well.

With ``--before PATH`` (a checkout of the inspector from before the worker boundary, e.g. the main
branch) it also times the whole ``context-inspector replay`` command end to end, in a fresh
process each time, with that checkout and with this one: both pay the interpreter's start, the
imports and the tokenizer's load, which the in-process figure above gets for free.

Usage: python -m inspector.bench.worker_bench [--turns 2000] [--repeat 5] [--before PATH] [--no-compare]
                                              [--memory-turns 10000]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from inspector.bench.host_bench import make_session
from inspector.config import load_config

PLUGIN = "from inspector.bench.host_bench import DropOldest  # noqa: F401 - found by the subclass scan\n"

# One replay of a session file in a fresh process; prints the peak RSS (MB) of it and of its workers.
_PEAK = """
import resource, sys
from inspector.config import load_config
from inspector.sessions import load_session
config = load_config(None, {"model": {"context_length": 128000}})
session = load_session(sys.argv[1])
if sys.argv[3] == "worker":
    from inspector.worker.replays import RunRequest, StartedReplays
    outcome = StartedReplays([RunRequest("drop-oldest", config, "drop-oldest")], [sys.argv[2]]).send(session)[0]
    assert outcome.ok, outcome.describe()
else:
    from inspector.engines.discovery import load_engine
    from inspector.host.replay import replay
    replay(session, load_engine("drop-oldest", config, plugin_dirs=[sys.argv[2]]), config)
own, workers = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(own.ru_maxrss / 1024, workers.ru_maxrss / 1024)
"""


def _peaks(turns: int, plugins: str) -> dict[str, tuple[float, float]]:
    """Peak RSS (MB) of a fresh process replaying a ``turns``-turn session file, and of its workers."""
    from inspector.sessions.model import wire_message

    path = os.path.join(plugins, f"memory-{turns}.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"messages": [wire_message(m) for m in make_session(turns).messages]}, fh)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = {}
    for mode in ("process", "worker"):
        done = subprocess.run([sys.executable, "-c", _PEAK, path, plugins, mode], capture_output=True,
                              text=True, check=True, env={**os.environ, "PYTHONPATH": root})
        own, workers = (float(x) for x in done.stdout.split()[-2:])
        out[mode] = (own, workers)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before", help="a checkout of the inspector before the worker boundary (end-to-end timing)")
    parser.add_argument("--no-compare", action="store_true", help="skip the 3-engine comparison")
    parser.add_argument("--memory-turns", type=int, default=0,
                        help="also the peak memory of one replay of this many turns, in process and through a worker")
    args = parser.parse_args()
    # Both sides tokenise cold, as host_bench's ratio does (a warm persistent cache would favour whichever
    # side can write it: the sandboxed worker cannot).
    os.environ.setdefault("CONTEXT_INSPECTOR_TOKEN_CACHE", "off")

    from inspector.engines.discovery import load_engine
    from inspector.host.replay import replay
    from inspector.sessions import load_session
    from inspector.sessions.model import wire_message
    from inspector.tokens.counter import TokenCounter
    from inspector.worker.replays import RunRequest, StartedReplays, replay_in_workers

    session = make_session(args.turns)
    config = load_config(None, {"model": {"context_length": 128000}})
    distinct = {repr(sorted(m.items())): m for m in session.messages}
    with tempfile.TemporaryDirectory() as tmp:
        engine_dir = os.path.join(tmp, "context_engine", "drop-oldest")
        os.makedirs(engine_dir)
        with open(os.path.join(engine_dir, "__init__.py"), "w", encoding="utf-8") as fh:
            fh.write(PLUGIN)
        plugins = [tmp]
        session_path = os.path.join(tmp, "session.json")
        with open(session_path, "w", encoding="utf-8") as fh:
            json.dump({"messages": [wire_message(m) for m in session.messages]}, fh)

        def baseline() -> float:
            counter = TokenCounter("cl100k_base")
            gc.collect()
            start, c = time.perf_counter(), cpu_now()
            for msg in distinct.values():
                counter.count_message(msg)
            cpu["baseline"].append(cpu_now() - c)
            return time.perf_counter() - start

        host_seconds: dict[str, list[float]] = {"process": [], "worker": []}
        cpu: dict[str, list[float]] = {"baseline": [], "process": [], "worker": []}

        def cpu_now() -> float:
            """CPU seconds of this process (every thread) and of its children that have ended (workers)."""
            own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
            return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

        def in_process() -> float:
            start, c = time.perf_counter(), cpu_now()
            read = load_session(session_path)
            loaded = load_engine("drop-oldest", config, plugin_dirs=plugins)
            trace = replay(read, loaded, config)
            loaded.close()
            cpu["process"].append(cpu_now() - c)
            host_seconds["process"].append(float(trace.meta["host_seconds"]))
            return time.perf_counter() - start

        def replay_command_in_worker() -> float:
            start, c = time.perf_counter(), cpu_now()
            started = StartedReplays([RunRequest("drop-oldest", config, "drop-oldest")], plugins)
            outcome = started.send(load_session(session_path))[0]
            took = time.perf_counter() - start
            cpu["worker"].append(cpu_now() - c)
            assert outcome.ok, outcome.describe()
            host_seconds["worker"].append(float(outcome.trace.meta["host_seconds"]))
            return took

        def in_worker(runs: int = 1, parallel: int = 1, engines: tuple[str, ...] = ("drop-oldest",)) -> float:
            start = time.perf_counter()
            outcomes = replay_in_workers(session, [RunRequest(engines[i % len(engines)], config, f"r{i}")
                                                   for i in range(runs)], plugins, parallel=parallel)
            took = time.perf_counter() - start
            assert all(o.ok for o in outcomes), [o.describe() for o in outcomes]
            return took

        TokenCounter("cl100k_base")
        rows = []
        for _ in range(max(1, args.repeat)):
            rows.append((baseline(), in_process(), replay_command_in_worker()))
        base = statistics.median(r[0] for r in rows)
        host = statistics.median(r[1] for r in rows)
        worker = statistics.median(r[2] for r in rows)
        per_pair = [(r[2] / r[0]) / (r[1] / r[0]) - 1 for r in rows]
        print(f"session: {args.turns} turns, {len(session.messages):,} messages; medians of {len(rows)} runs")
        print(f"baseline (tokenise each distinct message once): {base:.2f} s")
        print(f"replay in process (read, engine load, replay): {host:.2f} s -> ratio {host / base:.2f}")
        print(f"replay in a worker (started while the file is read, session out, trace back): {worker:.2f} s "
              f"-> ratio {worker / base:.2f}")
        print(f"ratio growth from the worker boundary: {worker / host - 1:+.1%} (median per pair "
              f"{statistics.median(per_pair):+.1%}; target <= +5%)")
        cb, cp, cw = (statistics.median(cpu[k]) for k in ("baseline", "process", "worker"))
        print(f"CPU seconds (this process and the worker, every thread; the machine's load does not count): "
              f"baseline {cb:.2f}, in process {cp:.2f} (ratio {cp / cb:.2f}), through a worker {cw:.2f} "
              f"(ratio {cw / cb:.2f}) -> {cw / cp - 1:+.1%}")
        inside, alone = statistics.median(host_seconds["worker"]), statistics.median(host_seconds["process"])
        print(f"the host's own time (meta.host_seconds): in process {alone:.2f} s, inside the worker {inside:.2f} s "
              f"(hook tracking, heartbeats and streaming included) -> {inside / alone - 1:+.1%}")

        if args.memory_turns:
            peaks = _peaks(args.memory_turns, tmp)
            print(f"a {args.memory_turns:,}-turn replay of a session file, peak memory of a fresh process: in process "
                  f"{peaks['process'][0]:.0f} MB; through a worker, supervisor {peaks['worker'][0]:.0f} MB and worker "
                  f"{peaks['worker'][1]:.0f} MB (issue 23's target: 250 MB)")

        if args.before:
            here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

            def command(root: str) -> float:
                argv = [sys.executable, "-c", "import sys; from inspector.cli import main; sys.exit(main())", "replay",
                        session_path, "--engine", "drop-oldest", "--plugin-dir", tmp, "--quiet",
                        "--out", os.path.join(tmp, "out.json")]
                start = time.perf_counter()
                subprocess.run(argv, env={**os.environ, "PYTHONPATH": root}, check=True, capture_output=True)
                return time.perf_counter() - start

            ends = [(command(args.before), command(here)) for _ in range(max(1, args.repeat))]
            before, after = statistics.median(e[0] for e in ends), statistics.median(e[1] for e in ends)
            print(f"replay command end to end: before {before:.2f} s, with workers {after:.2f} s -> "
                  f"{after / before - 1:+.1%} (median per pair {statistics.median(b / a - 1 for a, b in ends):+.1%})")

        if args.no_compare:
            return 0
        seq, par = [], []
        for _ in range(max(1, args.repeat)):
            seq.append(in_worker(3, parallel=1, engines=("drop-oldest", "compressor", "drop-oldest")))
            par.append(in_worker(3, parallel=3, engines=("drop-oldest", "compressor", "drop-oldest")))
        print(f"3-engine compare: one worker at a time {statistics.median(seq):.2f} s, three at once "
              f"{statistics.median(par):.2f} s -> speed-up {statistics.median(seq) / statistics.median(par):.2f}x "
              f"on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
