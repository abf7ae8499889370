"""Where batch tasks run: local worker processes, or the workers of a Ray cluster.

A backend takes task dicts and yields result dicts as they complete, in any order; each runs
:func:`inspector.batch.runner.replay_task`, so every backend gives the same results. Closing the
iterator (Ctrl+C, an error) stops the work: queued tasks are dropped and running ones ended, so
nothing outlives the command.

Local workers are started with the ``spawn`` method: a fresh interpreter imports only what a
replay needs, and no lock or thread of the parent (a tokenizer's pool, an SQLite handle) is
copied half-held into the child as ``fork`` would. Workers ignore SIGINT: the terminal sends
Ctrl+C to the whole process group, and it is the parent's to handle, once.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import signal
import sys
from collections.abc import Iterator
from typing import Any

from inspector.batch.runner import failed_result, replay_task


class BackendError(Exception):
    """A backend cannot start (Ray not installed, a cluster not reachable): said in one line."""


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _worker_init(log_path: str | None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Stopping the pool (``_stop_pool``) terminates its workers: ending by an exception lets a
    # task's engine worker be killed and its folder removed (inspector.worker.supervisor), where
    # the default action left the folder behind.
    signal.signal(signal.SIGTERM, _exit_on_term)
    if log_path:
        # What engines and libraries print in a worker goes to the batch's log, not across the
        # progress bar (the host already records each hook's own output in the trace).
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)


def _exit_on_term(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


class LocalBackend:
    """``workers`` spawned processes (one task at a time each)."""

    name = "local"

    def __init__(self, workers: int | None = None, log_path: str | None = None) -> None:
        self.workers = workers or default_workers()
        self.log_path = log_path

    def run(self, tasks: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        if not tasks:
            return
        pool = cf.ProcessPoolExecutor(max_workers=min(self.workers, len(tasks)),
                                      mp_context=multiprocessing.get_context("spawn"),
                                      initializer=_worker_init, initargs=(self.log_path,))
        finished = False
        try:
            futures = {pool.submit(replay_task, task): task for task in tasks}
            for future in cf.as_completed(futures):
                yield _result_of(future, futures[future])
            finished = True
        finally:
            if finished:
                pool.shutdown(wait=True)
            else:
                _stop_pool(pool)


def _result_of(future: cf.Future, task: dict[str, Any]) -> dict[str, Any]:
    """The task's result; a worker that died (killed, out of memory) is the task's error."""
    try:
        return future.result()
    except cf.process.BrokenProcessPool as exc:
        return failed_result(task, f"the worker process died: {exc}")


def _stop_pool(pool: cf.ProcessPoolExecutor) -> None:
    """Drop queued tasks and end the running ones now (a replay may take minutes)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        if proc.is_alive():
            proc.terminate()
    for proc in processes:
        proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=1)


class RayBackend:
    """The same tasks as Ray tasks, on the cluster at ``address`` (or a local one Ray starts).

    Every node must have the inspector installed (``pip install '.[ray]'``) and see the session
    paths: tasks name files, they do not carry them.
    """

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None) -> None:
        try:
            import ray  # noqa: F401
        except ImportError:
            raise BackendError("the ray backend needs Ray: pip install 'context-engine-inspector[ray]' "
                               "(or pip install ray)") from None
        self.address = address
        self.num_cpus = num_cpus
        self._started = False

    def _init(self) -> Any:
        import ray

        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
            if self.address:
                kwargs["address"] = self.address
            else:
                kwargs.update(num_cpus=self.num_cpus, include_dashboard=False)
            try:
                ray.init(**kwargs)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise BackendError(f"cannot start or reach the Ray cluster{f' at {self.address}' if self.address else ''}: "
                                   f"{exc}") from None
            self._started = True
        return ray

    def run(self, tasks: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        if not tasks:
            return
        ray = self._init()
        remote = ray.remote(num_cpus=1, max_retries=0)(replay_task)
        pending = {remote.remote(task): task for task in tasks}
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                task = pending.pop(done[0])
                try:
                    yield ray.get(done[0])
                except ray.exceptions.RayError as exc:
                    yield failed_result(task, f"the Ray task failed: {str(exc).splitlines()[0]}")
        finally:
            for ref in pending:
                try:
                    ray.cancel(ref, force=True)
                except Exception as exc:  # the task may have just finished
                    print(f"note: ray.cancel: {exc}", file=sys.stderr)

    def shutdown(self) -> None:
        if self._started:
            import ray

            ray.shutdown()
            self._started = False


def make_backend(name: str, *, workers: int | None = None, address: str | None = None,
                 log_path: str | None = None) -> LocalBackend | RayBackend:
    if name == "ray":
        return RayBackend(address, num_cpus=workers)
    if name != "local":
        raise BackendError(f"unknown backend {name!r}: choose local or ray")
    return LocalBackend(workers, log_path)
