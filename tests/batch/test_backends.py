"""Backends run :func:`replay_task` and give the same results wherever it runs."""

from __future__ import annotations

import pytest

from inspector.batch.backends import BackendError, LocalBackend, RayBackend, make_backend
from inspector.batch.runner import TIMING_FIELDS, replay_task
from inspector.batch.sources import discover
from inspector.batch.tasks import make_task, session_hash
from inspector.config import load_config
from inspector.sessions import load_session


def _tasks(corpus, engines=("compressor",), thresholds=(0.5, 0.3)):
    config = load_config(None)
    from inspector.batch.tasks import setting_config

    tasks = []
    for ref in discover([str(corpus)]).sessions:
        digest = session_hash(load_session(ref.spec))
        for name in engines:
            for value in thresholds:
                setting = {"compression.threshold": value}
                tasks.append(make_task(ref, digest, {"name": name, "version": "", "code": ""}, setting,
                                       setting_config(config, setting), []))
    return tasks


def _comparable(results):
    return sorted(({k: v for k, v in r.items() if k not in TIMING_FIELDS} for r in results), key=lambda r: r["key"])


def test_the_local_backend_gives_what_the_task_function_gives_in_this_process(corpus):
    tasks = _tasks(corpus, thresholds=(0.5,))[:3]
    here = [replay_task(t) for t in tasks]
    assert all(r["ok"] for r in here)
    assert _comparable(LocalBackend(workers=2).run(tasks)) == _comparable(here)


def test_a_task_whose_session_vanished_is_a_failed_result_not_a_crash(corpus):
    [task] = _tasks(corpus, thresholds=(0.5,))[:1]
    (corpus / "a.json").unlink()
    task["session"]["spec"] = str(corpus / "a.json")
    [result] = list(LocalBackend(workers=1).run([task]))
    assert result["ok"] is False and "no such file" in result["error"]


def test_an_unknown_backend_is_refused():
    with pytest.raises(BackendError, match="unknown backend"):
        make_backend("cloud")


def test_the_ray_backend_gives_the_local_backends_results(corpus):
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install '.[ray]'")
    tasks = _tasks(corpus)
    local = _comparable(LocalBackend(workers=2).run(tasks))
    backend = RayBackend(num_cpus=2)
    try:
        remote = _comparable(backend.run(tasks))
        assert ray.is_initialized()
    finally:
        backend.shutdown()
    assert len(remote) == len(tasks) and all(r["ok"] for r in remote)
    assert remote == local
