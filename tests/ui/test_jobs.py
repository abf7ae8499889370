"""The one background-job runner: results, failures, progress, superseding and shutdown.

Every dock (follow, doctor, live chat) and the window's replay, load and compare runners submit
their work here; these tests pin the rules they all rely on.
"""

from __future__ import annotations

import threading

import pytest

from inspector.ui.jobs import JobError, JobRunner


@pytest.fixture
def runner(qapp):  # noqa: ANN001, ANN201
    jobs = JobRunner()
    yield jobs
    jobs.shutdown(2_000)


def test_a_result_and_the_progress_reach_the_gui_thread(qtbot, runner: JobRunner) -> None:
    gui = threading.get_ident()
    seen: list[tuple[str, object, int]] = []

    def work(job):  # noqa: ANN001, ANN202
        job.report(1, "one")
        job.report(2, "two")
        return threading.get_ident()

    job = runner.submit(work, lambda worker: seen.append(("done", worker, threading.get_ident())),
                        on_progress=lambda n, text: seen.append((text, n, threading.get_ident())))
    qtbot.waitUntil(lambda: job.finished, timeout=5_000)
    assert [s[0] for s in seen] == ["one", "two", "done"]
    assert all(s[2] == gui for s in seen)  # every callback on the GUI thread
    assert seen[-1][1] != gui  # the work itself ran elsewhere
    assert not runner.running()


def test_a_failure_goes_to_on_error_with_the_traceback(qtbot, runner: JobRunner) -> None:
    errors: list[tuple[str, str]] = []

    def boom(job):  # noqa: ANN001, ANN202
        raise ValueError("the engine broke")

    runner.submit(boom, on_error=lambda message, details: errors.append((message, details)))
    qtbot.waitUntil(lambda: bool(errors), timeout=5_000)
    assert errors[0][0] == "ValueError: the engine broke"
    assert "Traceback" in errors[0][1] and "boom" in errors[0][1]


def test_a_failure_without_on_error_is_reported_by_the_runner(qtbot, runner: JobRunner) -> None:
    def fail(job):  # noqa: ANN001, ANN202
        raise JobError("the source cannot be read", "details here")

    with qtbot.waitSignal(runner.error, timeout=5_000) as blocker:
        runner.submit(fail, name="follow")
    assert blocker.args == ["follow failed: the source cannot be read", "details here"]


def test_a_newer_job_with_the_same_key_supersedes_the_running_one(qtbot, runner: JobRunner) -> None:
    release = threading.Event()
    results: list[str] = []
    progress: list[str] = []

    def slow(job):  # noqa: ANN001, ANN202
        release.wait(5)
        job.report("old progress")  # after being superseded: dropped
        return "old"

    old = runner.submit(slow, results.append, key="cursor", on_progress=progress.append)
    new = runner.submit(lambda job: "new", results.append, key="cursor")
    assert old.cancelled.is_set() and old.superseded  # told to stop at once
    assert runner.current("cursor") is new
    qtbot.waitUntil(lambda: new.finished, timeout=5_000)
    release.set()
    assert old.wait(5)
    qtbot.wait(50)  # let anything the old job queued arrive
    assert results == ["new"] and progress == []


def test_other_keys_and_cancelled_jobs_still_deliver(qtbot, runner: JobRunner) -> None:
    results: list[object] = []

    def until_cancelled(job):  # noqa: ANN001, ANN202
        job.cancelled.wait(5)
        return "partial"

    a = runner.submit(until_cancelled, results.append, key="a")
    runner.submit(lambda job: "b", results.append, key="b")
    qtbot.waitUntil(lambda: results == ["b"], timeout=5_000)
    assert runner.running("a")
    runner.cancel("a")
    qtbot.waitUntil(lambda: a.finished, timeout=5_000)
    assert results == ["b", "partial"]  # a cancel asks the job to stop; what it returns is still shown


def test_shutdown_cancels_and_waits_and_refuses_new_jobs(qtbot, qapp) -> None:
    runner = JobRunner()
    stopped: list[bool] = []

    def loop(job):  # noqa: ANN001, ANN202
        job.cancelled.wait(10)
        stopped.append(job.cancelled.is_set())

    job = runner.submit(loop)
    assert runner.shutdown(5_000)
    assert stopped == [True] and not job.alive
    with pytest.raises(RuntimeError, match="shut down"):
        runner.submit(loop)


def test_a_job_that_ignores_cancel_is_abandoned_at_shutdown(qtbot, qapp) -> None:
    runner = JobRunner()
    release = threading.Event()
    results: list[object] = []
    job = runner.submit(lambda job: release.wait(10), results.append)
    assert not runner.shutdown(200)  # it did not stop in time: left behind, a daemon thread
    assert job.superseded and not runner.running()
    release.set()
    assert job.wait(5)
    qtbot.wait(50)
    assert results == []  # its result is dropped


def test_wait_delivers_the_outcome_before_returning(qtbot, runner: JobRunner) -> None:
    results: list[object] = []
    job = runner.submit(lambda job: 42, results.append)
    assert runner.wait(job, 5_000)
    assert results == [42]
