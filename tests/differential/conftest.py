"""The differential suite's figures, printed in the test summary (how much was compared)."""

from __future__ import annotations


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001 (pytest's hook signature)
    from tests.differential.test_compressor_differential import FIGURES

    if FIGURES:
        terminalreporter.write_sep("-", "Hermes 0.19.0 differential")
        for key, value in FIGURES.items():
            terminalreporter.write_line(f"{key}: {value}")
