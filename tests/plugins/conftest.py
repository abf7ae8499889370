"""Fixtures for the engine plugins: the Hermes modules they import, and Hermes-style loading.

Until the compatibility layer is wired into every test session, ``agent.context_engine`` is
mapped onto our own contract here (only when nothing else provides it), and
``agent.auxiliary_client.call_llm`` raises the "no provider" error Hermes raises offline, so
the engines take their deterministic fallback path.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_ROOT = ROOT / "plugins" / "context_engine"


def _ensure_hermes_modules() -> None:
    try:
        importlib.import_module("agent.context_engine")
    except ImportError:
        from inspector.engines import contract

        agent = sys.modules.get("agent") or types.ModuleType("agent")
        agent.__path__ = []  # type: ignore[attr-defined]
        sys.modules["agent"] = agent
        sys.modules["agent.context_engine"] = contract
        agent.context_engine = contract  # type: ignore[attr-defined]
    try:
        importlib.import_module("agent.auxiliary_client")
    except ImportError:
        aux = types.ModuleType("agent.auxiliary_client")

        def call_llm(task=None, **kwargs):  # noqa: ANN001, ANN003 - mirrors Hermes' signature
            raise RuntimeError("No LLM provider configured")

        aux.call_llm = call_llm  # type: ignore[attr-defined]
        sys.modules["agent.auxiliary_client"] = aux
        sys.modules["agent"].auxiliary_client = aux  # type: ignore[attr-defined]


_ensure_hermes_modules()


def load_plugin(name: str) -> types.ModuleType:
    """Load ``plugins/context_engine/<name>`` the way Hermes does (hermes-host.md §10.1).

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
