"""Fixtures for the engine plugins: the Hermes modules they import, and Hermes-style loading.

The compatibility layer provides ``agent.*`` and ``hermes_constants`` (Hermes' own modules win
when installed); with no auxiliary endpoint configured, ``call_llm`` raises Hermes' "no
provider" error, so the engines take their deterministic fallback path.
"""

from __future__ import annotations

import atexit
import importlib.util
import shutil
import sys
import tempfile
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_ROOT = ROOT / "plugins" / "context_engine"


def _install_host_modules() -> None:
    """The inspector's stand-ins for Hermes' modules, homed in a throwaway HERMES_HOME."""
    from inspector.config import load_config
    from inspector.engines.compat import install_compat

    home = tempfile.mkdtemp(prefix="context-inspector-test-home-")
    atexit.register(shutil.rmtree, home, True)
    install_compat(load_config(None), home)


_install_host_modules()


def load_plugin(name: str) -> types.ModuleType:
    """Load ``plugins/context_engine/<name>`` the way Hermes does (plugins/context_engine/__init__.py:79-199 of hermes-agent 0.19.0).

    Parent packages are registered first, every sibling module is executed as
    ``plugins.context_engine.<name>.<stem>`` before ``__init__`` runs, then ``__init__`` itself.
    """
    full = f"plugins.context_engine.{name}"
    if full in sys.modules and getattr(sys.modules[full], "__file__", None):
        return sys.modules[full]
    for parent, path in (("plugins", ROOT / "plugins"), ("plugins.context_engine", PLUGIN_ROOT)):
        if parent not in sys.modules:
            mod = types.ModuleType(parent)
            mod.__path__ = [str(path)]  # type: ignore[attr-defined]
            sys.modules[parent] = mod
    directory = PLUGIN_ROOT / name
    spec = importlib.util.spec_from_file_location(
        full, directory / "__init__.py", submodule_search_locations=[str(directory)]
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[full] = module
    for sibling in sorted(directory.glob("*.py")):
        if sibling.stem == "__init__" or f"{full}.{sibling.stem}" in sys.modules:
            continue
        sub_spec = importlib.util.spec_from_file_location(f"{full}.{sibling.stem}", sibling)
        assert sub_spec and sub_spec.loader
        sub = importlib.util.module_from_spec(sub_spec)
        sys.modules[sub_spec.name] = sub
        sub_spec.loader.exec_module(sub)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def hermes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "hermes-home"
    monkeypatch.setenv("HERMES_HOME", str(home))
    return home


@pytest.fixture
def lcm_module() -> types.ModuleType:
    return load_plugin("lcm")


@pytest.fixture
def recall_module() -> types.ModuleType:
    return load_plugin("recall")
