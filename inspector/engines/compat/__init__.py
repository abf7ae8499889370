"""Run real Hermes plugins unmodified: stand-ins for the host modules they import.

Plugins do ``from agent.context_engine import ContextEngine``, call
``agent.auxiliary_client.call_llm`` (or ``ctx.llm``, ``agent.plugin_llm``), read ``hermes_cli.config``
or keep state through ``plugins.plugin_storage``. When Hermes is installed its
modules win, with their LLM entry points and compressor routed through the inspector
(:mod:`inspector.engines.compat.hermes_routing`); otherwise :func:`install_compat` puts stand-in modules into ``sys.modules`` under
Hermes' names, backed by the inspector. They are created at run time and never shipped as
top-level packages, so they cannot shadow Hermes (or anything else called ``agent``) on disk.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import threading
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspector.engines.compat.state import activate, active_config, active_home, set_defaults

# Hermes module name → implementation module (inside this package).
STAND_INS: dict[str, str] = {
    "agent.context_engine": "inspector.engines.compat.mod_context_engine",
    "agent.redact": "inspector.engines.compat.mod_redact",
    "agent.auxiliary_client": "inspector.engines.compat.mod_auxiliary_client",
    "agent.error_classifier": "inspector.engines.compat.mod_error_classifier",
    "agent.context_compressor": "inspector.engines.compat.mod_context_compressor",
    "agent.model_metadata": "inspector.engines.compat.mod_model_metadata",
    "agent.plugin_llm": "inspector.engines.compat.mod_plugin_llm",
    "hermes_constants": "inspector.engines.compat.mod_hermes_constants",
    "hermes_cli.config": "inspector.engines.compat.mod_hermes_cli_config",
    "hermes_cli.plugins": "inspector.engines.compat.plugins",
    "plugins.plugin_storage": "inspector.engines.compat.mod_plugin_storage",
}
STAND_IN_PACKAGES = ("agent", "hermes_cli", "plugins")
HERMES_TOP_LEVEL = ("agent", "hermes_cli", "hermes_constants")
MARKER = "__inspector_stand_in__"

_install_lock = threading.Lock()


@dataclass
class CompatReport:
    """Which Hermes modules are stand-ins, which came from Hermes, and what looked odd."""

    stood_in: list[str] = field(default_factory=list)
    from_hermes: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    provided_elsewhere: list[str] = field(default_factory=list)  # already in sys.modules, not a file (test fakes)
    routed: list[str] = field(default_factory=list)  # real Hermes entry points now going through the inspector
    hermes_home: str = ""

    @property
    def hermes_installed(self) -> bool:
        return bool(self.from_hermes)

    def to_json(self) -> dict[str, Any]:
        return {
            "stood_in": list(self.stood_in),
            "from_hermes": list(self.from_hermes),
            "conflicts": list(self.conflicts),
            "provided_elsewhere": list(self.provided_elsewhere),
            "routed": list(self.routed),
            "hermes_home": self.hermes_home,
        }


def is_stand_in(module: Any) -> bool:
    return bool(getattr(module, MARKER, None))


def install_compat(config: dict[str, Any] | None, hermes_home: str | Path | None) -> CompatReport:
    """Install stand-ins for Hermes modules that do not import; set the default config/home.

    Idempotent. ``hermes_home`` is what ``get_hermes_home()`` answers by default (normally the
    replay's sandbox); per-replay values are set with :func:`activate`.
    """
    from inspector.llm.aux import set_aux_config

    set_defaults(config=config, home=hermes_home)
    if config is not None:
        set_aux_config(config)
    report = CompatReport(hermes_home=str(active_home()))
    with _install_lock:
        for name, impl in STAND_INS.items():
            status = _module_status(name)
            if status == "hermes":
                report.from_hermes.append(name)
                continue
            if status == "elsewhere":
                report.provided_elsewhere.append(name)
                continue
            parent = name.rpartition(".")[0]
            if parent and _is_foreign_module(sys.modules.get(parent)):
                report.conflicts.append(
                    f"{parent!r} is importable but is not Hermes (no {name}); the stand-in is registered under it"
                )
            if status != "stand-in":
                _install_one(name, impl)
            report.stood_in.append(name)
        if report.from_hermes:
            from inspector.engines.compat.hermes_routing import route_hermes

            report.routed = route_hermes()
    return report


def _module_status(name: str) -> str:
    """'stand-in' (ours), 'hermes' (a real module imports), 'elsewhere' (a module object someone
    put into ``sys.modules`` by hand, e.g. a test fake: left alone) or 'missing'."""
    existing = sys.modules.get(name)
    if existing is not None:
        if is_stand_in(existing):
            return "stand-in"
        origin = getattr(getattr(existing, "__spec__", None), "origin", None) or getattr(existing, "__file__", None)
        from_hermes = origin and getattr(existing, "__name__", "") == name
        return "hermes" if from_hermes else "elsewhere"
    top = name.partition(".")[0]
    top_mod = sys.modules.get(top)
    if top_mod is not None and is_stand_in(top_mod):
        return "missing"
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):
        spec = None
    return "hermes" if spec is not None else "missing"


def _is_foreign_module(module: Any) -> bool:
    """A module with its own code that is not ours. A namespace package (``plugins/`` folders on
    the path, such as the project's own) or the loader's empty shell holds no code to conflict with."""
    return module is not None and not is_stand_in(module) and bool(getattr(module, "__file__", None))


def _install_one(name: str, impl_name: str) -> types.ModuleType:
    parent_name, _, child = name.rpartition(".")
    if parent_name and parent_name not in sys.modules:
        parent = types.ModuleType(parent_name, f"Inspector stand-in package for Hermes' {parent_name}.")
        parent.__path__ = []  # a package with no location: unknown submodules fail to import
        parent.__spec__ = importlib.machinery.ModuleSpec(parent_name, None, is_package=True)
        setattr(parent, MARKER, "package")
        sys.modules[parent_name] = parent
    impl = importlib.import_module(impl_name)
    module = types.ModuleType(name, impl.__doc__)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None)
    eager = getattr(impl, "EAGER", None)
    exported = list(getattr(impl, "__all__", []))
    for attr in exported if eager is None else eager:
        setattr(module, attr, getattr(impl, attr))
    if hasattr(impl, "__getattr__"):
        module.__getattr__ = impl.__getattr__  # type: ignore[attr-defined]  # PEP 562, for lazy names
    module.__all__ = exported  # type: ignore[attr-defined]
    setattr(module, MARKER, impl_name)
    sys.modules[name] = module
    if parent_name:
        setattr(sys.modules[parent_name], child, module)
    return module


def uninstall_compat() -> list[str]:
    """Remove our stand-ins from ``sys.modules`` (tests); Hermes' own modules are untouched."""
    removed = []
    with _install_lock:
        for name in list(STAND_INS) + list(STAND_IN_PACKAGES):
            module = sys.modules.get(name)
            if module is not None and is_stand_in(module):
                del sys.modules[name]
                removed.append(name)
    return removed


def provided_names(module_name: str) -> set[str] | None:
    """Names a stand-in exports (for the doctor's import check); ``None`` if we provide no such module."""
    if module_name in STAND_IN_PACKAGES:
        return {n.partition(".")[2] for n in STAND_INS if n.startswith(module_name + ".")}
    impl = STAND_INS.get(module_name)
    if impl is None:
        return None
    return set(getattr(importlib.import_module(impl), "__all__", []))


__all__ = [
    "CompatReport",
    "STAND_INS",
    "HERMES_TOP_LEVEL",
    "activate",
    "active_config",
    "active_home",
    "install_compat",
    "uninstall_compat",
    "is_stand_in",
    "provided_names",
]
