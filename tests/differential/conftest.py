"""The differential suite in the test summary: what it compared, or why it did not run."""

from __future__ import annotations


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
