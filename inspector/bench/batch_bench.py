"""Batch benchmark (a script that prints figures, not a test).

Writes S generated sessions (the host benchmark's coding sessions) to a temporary folder and
measures, ``--repeat`` times each (medians reported, with the spread):

- the single replays: every session × engine task run alone, one after another, in this process
  (:func:`inspector.batch.runner.replay_task`, the function the workers run), summed;
- the cold batch: ``context-inspector batch`` over the same tasks on P workers, with an empty
  result store and an empty token-count cache; its wall time as a ratio to (sum of single
  replays ÷ P) (target: at most 1.25). It includes starting the worker processes;
- the CPU time of both (this process and the batch's finished workers): on a machine other work
  keeps busy the wall-time ratio shows the share of the cores the batch got, the CPU ratio
  what the batch costs beyond the replays;
- the rerun: the same command again (every result reused), as a ratio to the cold batch
  (target: at most 0.05);
- the batch with ``--fresh`` and the token cache warm (every task replayed, no message
  tokenised), as a ratio to the cold batch.

Each side starts from the same state (a fresh token cache for the singles and for each cold
batch), so the singles benefit from the cache exactly as the batch does: counts of a session
made by its first engine's task are read by its second's. The machine's load is printed: on a
shared machine the batch's speed-up is only as good as the cores other work leaves free.

Usage: python -m inspector.bench.batch_bench [--sessions 6] [--turns 200] [--engine compressor --engine recall]
       [--workers P] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import statistics
import tempfile
import time


def _write_sessions(folder: str, count: int, turns: int) -> list[str]:
    from inspector.bench.host_bench import make_session
    from inspector.sessions.model import wire_message

    paths = []
    for i in range(count):
        session = make_session(turns + 17 * i, seed=100 + i)
        path = os.path.join(folder, f"session_{i}.json")
        with open(path, "w", encoding="utf-8") as fh:
            json.dump({"messages": [wire_message(m) for m in session.messages]}, fh)
        paths.append(path)
    return paths


def _cpu() -> float:
    """CPU time of this process and of its finished children (the batch's workers, once shut down)."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def _batch(argv: list[str]) -> tuple[float, dict, float]:
    from inspector.cli import main

    out = io.StringIO()
    start, cpu = time.perf_counter(), _cpu()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["batch", *argv, "--json", "--quiet"])
    seconds, cpu = time.perf_counter() - start, _cpu() - cpu
    if code != 0:
        raise SystemExit(f"batch failed with exit code {code}")
    return seconds, json.loads(out.getvalue()), cpu


def _singles(tasks: list[dict]) -> tuple[float, float]:
    from inspector.batch.runner import replay_task

    start, cpu = time.perf_counter(), _cpu()
    for task in tasks:
        result = replay_task(task)
        if result.get("error"):
            raise SystemExit(f"task failed: {result['error']}")
    return time.perf_counter() - start, _cpu() - cpu


def _tasks(paths: list[str], engines: list[str]) -> list[dict]:
    """The batch's own tasks (same keys), built the way the command builds them."""
    from inspector.batch.cli import _engine_identity
    from inspector.batch.sources import SessionRef
    from inspector.batch.tasks import make_task, session_hash
    from inspector.config import load_config
    from inspector.sessions import load_session

    config = load_config(None)
    identities = [_engine_identity(name, config, []) for name in engines]
    tasks = []
    for path in paths:
        digest = session_hash(load_session(path))
        for engine in identities:
            tasks.append(make_task(SessionRef(spec=path, path=path), digest, engine, {}, config, []))
    return tasks


def _spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f} (range {min(values):.2f}-{max(values):.2f}, n={len(values)})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--engine", action="append", default=[])
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from inspector.batch.backends import default_workers
    from inspector.tokens import persistent

    engines = args.engine or ["compressor", "recall"]
    workers = args.workers or default_workers()
    load_before = os.getloadavg()
    singles, cold, rerun, fresh = [], [], [], []
    singles_cpu, cold_cpu = [], []
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "sessions")
        os.mkdir(folder)
        paths = _write_sessions(folder, args.sessions, args.turns)
        tasks = _tasks(paths, engines)
        for r in range(max(1, args.repeat)):
            os.environ[persistent.ENV_VAR] = os.path.join(tmp, f"singles-{r}.sqlite")
            persistent.forget_open_caches()
            seconds, cpu = _singles(tasks)
            singles.append(seconds)
            singles_cpu.append(cpu)
            os.environ[persistent.ENV_VAR] = os.path.join(tmp, f"batch-{r}.sqlite")
            persistent.forget_open_caches()
            out = os.path.join(tmp, f"out-{r}")
            argv = [folder, *sum((["--engine", e] for e in engines), []), "--out", out, "--workers", str(workers)]
            seconds, doc, cpu = _batch(argv)
            if len(doc["tasks"]) != len(tasks) or any(t["reused"] for t in doc["tasks"]):
                raise SystemExit("the cold batch did not run every task")
            cold.append(seconds)
            cold_cpu.append(cpu)
            seconds, doc, _ = _batch(argv)
            if not all(t["reused"] for t in doc["tasks"]):
                raise SystemExit("the rerun replayed tasks")
            rerun.append(seconds)
            seconds, _, _ = _batch([*argv, "--fresh"])
            fresh.append(seconds)
    load_after = os.getloadavg()
    ideal = [s / workers for s in singles]
    print(f"{args.sessions} sessions (~{args.turns}+ turns) × {len(engines)} engines ({', '.join(engines)}) = "
          f"{len(tasks)} tasks on {workers} workers; {os.cpu_count()} CPUs, load average "
          f"{load_before[0]:.1f} before, {load_after[0]:.1f} after")
    print(f"sum of single replays: {_spread(singles)} s")
    print(f"cold batch: {_spread(cold)} s -> ratio to (sum ÷ {workers}): "
          f"{_spread([c / i for c, i in zip(cold, ideal)])} (target <= 1.25)")
    print(f"CPU time: singles {_spread(singles_cpu)} s, cold batch (parent and workers) {_spread(cold_cpu)} s "
          f"-> ratio {_spread([b / a for a, b in zip(singles_cpu, cold_cpu)])}: what the batch costs beyond the "
          "replays themselves (worker start-up, session hashing), whatever the machine's load")
    print(f"rerun (every result reused): {_spread(rerun)} s -> ratio to cold: "
          f"{_spread([r / c for r, c in zip(rerun, cold)])} (target <= 0.05)")
    print(f"--fresh with the token cache warm: {_spread(fresh)} s -> ratio to cold: "
          f"{_spread([f / c for f, c in zip(fresh, cold)])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
