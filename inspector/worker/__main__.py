"""``python -m inspector.worker FD WORKDIR``: run one job from stdin, report on descriptor FD."""

from __future__ import annotations

import os
import sys


def main() -> None:
    fd, work = int(sys.argv[1]), sys.argv[2]
    from inspector.worker.protocol import FrameWriter
    from inspector.worker.runtime import Runtime, read_job

    writer = FrameWriter(fd)
    code = 0
    try:
        job = read_job(sys.stdin.fileno())
        from inspector.llm.secrets import register_config

        # The config reaches the worker as data, not through load_config: the one scrubber must
        # still know which variables it names as holding a key (api_key_env: LOCALTOKEN).
        register_config(job.get("config"))
        if job.get("egress"):  # in bubblewrap with an endpoint: the only way out, set up before any engine code
            from inspector.worker.egress import serve_in_sandbox

            serve_in_sandbox(job["egress"])
        from inspector.tokens.persistent import serve_worker

        serve_worker(job.get("token_cache"))  # read-only; the supervisor writes what the job counted
        rt = Runtime(writer, work)
        rt.start(job.get("memory_mb"))
        writer.send({"type": "hello", "pid": os.getpid()})
        from inspector.worker.jobs import JOBS

        profile = os.environ.get("CONTEXT_INSPECTOR_WORKER_PROFILE")
        if profile:  # a folder: the job's cProfile statistics go there (benchmarks; needs inspector.sandbox off)
            import cProfile

            with cProfile.Profile() as prof:
                JOBS[job["job"]](rt, job)
            try:
                prof.dump_stats(os.path.join(profile, f"worker-{job['job']}-{os.getpid()}.prof"))
            except OSError:
                pass  # inside the OS sandbox only the worker's own folder is writable
        else:
            JOBS[job["job"]](rt, job)
    except BaseException as exc:  # noqa: BLE001 - engine code can raise anything; the supervisor records it
        import traceback

        writer.send({"type": "raised", "exception": type(exc).__name__, "message": str(exc)[:2000],
                     "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))})
        code = 70
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
    os._exit(code)  # threads an engine started (printing forever, non-daemon) do not keep the worker alive


if __name__ == "__main__":
    main()
