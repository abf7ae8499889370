"""Large-session benchmark (a script that prints figures, not a test).

Writes a Claude Code session JSONL of about ``--mb`` megabytes (150 by default: the size of the
longest real sessions) in a temporary folder, shaped like the real ones in the corpus: each turn
is a prompt, a few tool rounds (``tool_use`` then a ``tool_result`` of a few to tens of KB:
file reads, command output), a final answer with Anthropic usage, and the ``progress`` and
``file-history-snapshot`` records Claude Code interleaves. Then it runs, each in its own process:

- ``sessions FILE``: wall time and peak RSS;
- ``replay FILE --out TRACE``: wall time and peak RSS;
- reopening the trace (``load_trace``): wall time and peak RSS.

The figures are what issue 20 sets targets for (replay ≤ 25 s and ≤ 1 GiB, reopen ≤ 3 s); they
are printed, never asserted. The generated files are deleted afterwards (``--keep`` keeps them).

Usage: python -m inspector.bench.large_session [--mb 150] [--engine compressor] [--keep] [--profile]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

WORDS = ("parser token buffer cache index module request handler config schema value stream window context "
         "engine summary message result error retry budget threshold import return def class self").split()
SESSION = "b1e9c0de-0000-4000-8000-000000000150"


def _chunks(rng: random.Random, n: int) -> list[str]:
    """Pieces of code-like text that tool outputs are assembled from (fast to generate)."""
    out = []
    for k in range(n):
        lines = [f"{'    ' * rng.randint(0, 3)}{rng.choice(WORDS)}_{k}_{i} = {rng.choice(WORDS)}"
                 f"({rng.randint(0, 9999)}, {rng.choice(WORDS)!r})" for i in range(60)]
        out.append("\n".join(lines))
    return out


def _record(kind: str, parent: str | None, t: float, **extra: Any) -> dict[str, Any]:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/dev/project",
            "sessionId": SESSION, "version": "2.1.38", "gitBranch": "main", "type": kind,
            "uuid": str(uuid.UUID(int=random.getrandbits(128), version=4)), "timestamp": stamp, **extra}


def write_session(path: str, megabytes: float, seed: int = 150) -> int:
    """Write the session; returns its number of turns."""
    rng = random.Random(seed)
    random.seed(seed)
    pool = _chunks(rng, 300)
    target = int(megabytes * 1024**2)
    written, turn, t, parent, context = 0, 0, 1_760_000_000.0, None, 20_000
    with open(path, "w", encoding="utf-8") as fh:
        def put(rec: dict[str, Any]) -> str:
            nonlocal written
            line = json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n"
            fh.write(line)
            written += len(line)
            return rec.get("uuid", "")

        while written < target:
            t += rng.uniform(20, 200)
            prompt = f"turn {turn}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 60)))
            parent = put(_record("user", parent, t, message={"role": "user", "content": prompt}))
            for r in range(rng.randint(1, 6)):
                t += rng.uniform(1, 10)
                call_id = f"toolu_{turn:05d}_{r}"
                tool = rng.choice(("Read", "Bash", "Grep"))
                usage = {"input_tokens": 3, "cache_creation_input_tokens": rng.randint(200, 4000),
                         "cache_read_input_tokens": context, "output_tokens": rng.randint(20, 300)}
                parent = put(_record("assistant", parent, t, requestId=f"req_{turn}_{r}", message={
                    "model": "claude-opus-4-6", "id": f"msg_{turn}_{r}", "type": "message", "role": "assistant",
                    "content": [{"type": "tool_use", "id": call_id, "name": tool,
                                 "input": {"file_path": f"/home/dev/project/src/{rng.choice(WORDS)}_{turn}.py"}}],
                    "stop_reason": "tool_use", "usage": usage}))
                body = f"# {tool} output of turn {turn} round {r}\n" + "\n".join(
                    rng.choice(pool) for _ in range(rng.choice((1, 1, 2, 3, 5, 8))))
                context += len(body) // 4
                parent = put(_record("user", parent, t + 0.5, toolUseResult={"stdout": "", "interrupted": False},
                                     message={"role": "user", "content": [
                                         {"type": "tool_result", "tool_use_id": call_id, "content": body}]}))
                if rng.random() < 0.3:
                    put(_record("progress", parent, t + 0.6, data={"type": "hook_progress", "hookEvent": "PostToolUse"},
                                toolUseID=call_id, parentToolUseID=call_id))
            t += rng.uniform(2, 20)
            answer = " ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 300)))
            parent = put(_record("assistant", parent, t, requestId=f"req_{turn}_end", message={
                "model": "claude-opus-4-6", "id": f"msg_{turn}_end", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": answer}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 3, "cache_creation_input_tokens": 500, "cache_read_input_tokens": context,
                          "output_tokens": 400}}))
            if turn % 10 == 0:
                put({"type": "file-history-snapshot", "messageId": parent, "isSnapshotUpdate": False,
                     "snapshot": {"messageId": parent, "trackedFileBackups": {}, "timestamp": "2026-02-10T22:57:54.764Z"}})
            context = min(context, 150_000) if context < 180_000 else 30_000  # Claude Code compacts too
            turn += 1
    return turn


_MEASURE = """
import resource, sys, time
t = time.perf_counter()
{body}
u, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{{time.perf_counter() - t:.2f}} {{u.ru_maxrss / 1024**2:.2f}} {{u.ru_utime + u.ru_stime:.2f}} "
      f"{{c.ru_maxrss / 1024**2:.2f}} {{c.ru_utime + c.ru_stime:.2f}}", file=sys.stderr)
"""


def _run(body: str, label: str, profile: str | None = None) -> tuple[float, ...]:
    """Run ``body`` in a fresh interpreter: (wall seconds, peak RSS in GiB, CPU seconds), each
    process's own and its children's (the worker a replay runs in): peak is the larger of the two
    (they run side by side), CPU the sum.

    On a shared machine the wall clock includes waiting for a core; the CPU time does not."""
    code = _MEASURE.format(body=body)
    cmd = [sys.executable, "-c", code]
    if profile:
        cmd = [sys.executable, "-m", "pyinstrument", "-o", profile, "-r", "text", "-c", code]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    last = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()][-1:] or ["nan nan nan nan nan"]
    try:
        seconds, gib, cpu, child_gib, child_cpu = (float(x) for x in last[0].split()[:5])
    except ValueError:
        print(f"{label}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
        return (float("nan"),) * 5
    if proc.returncode:
        print(f"{label}: exit {proc.returncode}\n{proc.stderr[-2000:]}", file=sys.stderr)
    return seconds, gib, cpu, child_gib, child_cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=150.0)
    parser.add_argument("--engine", default="compressor")
    parser.add_argument("--keep", action="store_true", help="keep the generated session and trace")
    parser.add_argument("--profile", action="store_true", help="also write pyinstrument profiles (text) beside them")
    args = parser.parse_args(argv)
    folder = tempfile.mkdtemp(prefix="inspector-large-")
    try:
        session = os.path.join(folder, "large.jsonl")
        trace = os.path.join(folder, "large.trace.json.gz")
        t = time.perf_counter()
        turns = write_session(session, args.mb)
        size = os.path.getsize(session) / 1024**2
        print(f"session: {size:.0f} MB, {turns:,} turns, written in {time.perf_counter() - t:.1f} s ({session})")
        quoted = json.dumps
        prof = (lambda name: os.path.join(folder, f"{name}.prof.txt")) if args.profile else (lambda name: None)
        rows = [
            ("sessions", _run(f"from inspector.cli import main; main(['sessions', {quoted(session)}])", "sessions",
                              prof("sessions")), None),
            ("replay --out", _run(f"from inspector.cli import main; main(['replay', {quoted(session)}, '--engine', "
                                  f"{quoted(args.engine)}, '--quiet', '--out', {quoted(trace)}])", "replay",
                                  prof("replay")), (25.0, 1.0)),
            ("reopen trace", _run(f"from inspector.trace.io import load_trace; load_trace({quoted(trace)})", "reopen",
                                  prof("reopen")), (3.0, None)),
        ]
        if os.path.exists(trace):
            print(f"trace: {os.path.getsize(trace) / 1024**2:.1f} MB")
        print(f"{'step':<14}{'seconds':>9}{'CPU s':>8}{'peak GiB':>10}{'(worker CPU, GiB)':>20}   target")
        for name, (seconds, gib, cpu, child_gib, child_cpu), target in rows:
            goal = "" if target is None else f"≤ {target[0]:g} s" + (f", ≤ {target[1]:g} GiB" if target[1] else "")
            ratio = "" if target is None else f"  (CPU ×{(cpu + child_cpu) / target[0]:.2f} of the time target)"
            worker = f"({child_cpu:.2f} s, {child_gib:.2f})" if child_cpu else ""
            print(f"{name:<14}{seconds:>9.2f}{cpu + child_cpu:>8.2f}{max(gib, child_gib):>10.2f}{worker:>20}   "
                  f"{goal}{ratio}")
        if args.profile:
            print(f"profiles: {folder}/*.prof.txt")
    finally:
        if args.keep or args.profile:
            print(f"kept: {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
