"""The real agent's runs, made once per test session (each takes a few seconds in the Hermes
interpreter), and the differential suite in the test summary: what it compared, or why it did not run."""

from __future__ import annotations

import pytest

from .agent_scenarios import RUNS, run_real_agent


@pytest.fixture(scope="session")
def real_runs(tmp_path_factory):
    cache: dict[str, dict] = {}

    def get(name: str) -> dict:
        if name not in cache:
            cache[name] = run_real_agent(RUNS[name], tmp_path_factory.mktemp(name))
        return cache[name]

    return get


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001 (pytest's hook signature)
    from tests.differential.hermes_env import FIGURES

    skipped = [r for r in terminalreporter.stats.get("skipped", []) if "tests/differential" in r.nodeid]
    if not FIGURES and not skipped:
        return
    terminalreporter.write_sep("-", "Hermes 0.19.0 differential")
    for key, value in FIGURES.items():
        terminalreporter.write_line(f"{key}: {value}")
    reasons = sorted({str(r.longrepr[2]) if isinstance(r.longrepr, tuple) else str(r.longrepr) for r in skipped})
    for reason in reasons:
        terminalreporter.write_line(f"skipped ({len(skipped)} tests): {reason}")
