"""Shared fixtures: the fixture plugin directories and a fresh config per test."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from inspector.config import load_config

FIXTURES = Path(__file__).resolve().parents[1] / "plugins_fixtures"
BASIC = FIXTURES / "basic"
GENERAL = FIXTURES / "general"

HAS_COMPRESSOR = importlib.util.find_spec("inspector.engines.compressor") is not None
needs_compressor = pytest.mark.skipif(not HAS_COMPRESSOR, reason="inspector/engines/compressor.py not there yet")


@pytest.fixture
def config():
    return load_config(None)


HERMES_NAMES = ("agent", "hermes_cli", "hermes_constants")


@pytest.fixture(autouse=True)
def clean_host_modules(monkeypatch):
    """Each test starts without Hermes-named modules (other suites may put fakes there).

    Whatever was there is restored afterwards, so other test packages are unaffected.
    """
    import sys

    for name in [n for n in sys.modules if n.partition(".")[0] in HERMES_NAMES]:
        monkeypatch.delitem(sys.modules, name)


@pytest.fixture
def compat(config, tmp_path):
    from inspector.engines.compat import install_compat

    return install_compat(config, tmp_path)
