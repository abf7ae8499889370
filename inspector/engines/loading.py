"""How one plugin becomes one engine instance, following Hermes' rules (agent/agent_init.py:1819-1918, plugins/context_engine/__init__.py:79-199 of hermes-agent 0.19.0).

Primitives used by :mod:`inspector.engines.discovery`: executing a directory engine the way
``plugins.context_engine.load_context_engine`` does (siblings first, ``register(ctx)`` first,
then the first ``ContextEngine`` subclass), a general plugin's ``register(ctx)``, an entry
point, and the built-in compressor built from ``compression.*`` like ``agent_init`` does.
Failures carry the plugin's traceback; nothing here falls back silently.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import inspect
import re
import sys
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspector.config import cfg_get
from inspector.engines.compat.plugins import PluginContext, PluginManager, PluginManifest, is_context_engine

DIRECTORY_PACKAGE = "plugins.context_engine"
# Hooks the host calls on every engine (the abstract ones plus what the base class supplies).
# The hooks Hermes calls without checking they exist (on_session_start/end are looked up first).
ENGINE_HOOKS = ("update_from_response", "should_compress", "compress", "update_model", "get_tool_schemas")
GENERAL_PACKAGE = "hermes_plugins"


class PluginFailure(Exception):
    """A plugin could not produce an engine; ``details`` holds the traceback(s)."""

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.details = details


@dataclass
class Produced:
    """What loading one plugin produced."""

    engine: Any
    how: str
    warnings: list[str] = field(default_factory=list)
    ctx: PluginContext | None = None
    module_name: str = ""


def format_exc(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def exc_line(exc: BaseException) -> str:
    """``Type: first line of the message``: the reason a one-line finding can show without a traceback."""
    text = str(exc).strip().partition("\n")[0]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# -- module execution -------------------------------------------------------------------------
def _ensure_package(name: str) -> None:
    """Register empty parent packages (``plugins``, ``plugins.context_engine``) if absent."""
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        pkg = ".".join(parts[:i])
        if pkg not in sys.modules:
            mod = types.ModuleType(pkg, "Inspector namespace for plugins loaded from user-chosen directories.")
            mod.__path__ = []
            mod.__spec__ = importlib.machinery.ModuleSpec(pkg, None, is_package=True)
            sys.modules[pkg] = mod


def load_package(module_name: str, directory: Path, *, preload_siblings: bool) -> tuple[types.ModuleType, list[str]]:
    """Execute ``directory/__init__.py`` as package ``module_name``; re-use it if already loaded.

    With ``preload_siblings`` every sibling ``*.py`` runs first as ``<module_name>.<stem>``
    (Hermes does this for directory engines so relative imports resolve); their errors are
    returned as warnings, not raised, as in Hermes.
    """
    from inspector.engines.home_mirror import process_mirror, using
    from inspector.engines.sandbox import shield_real_home

    shield_real_home()  # before any plugin code runs
    with using(process_mirror()):  # module-level ~ paths outlive any one run, as the module does
        return _exec_package(module_name, directory, preload_siblings=preload_siblings)


def _exec_package(module_name: str, directory: Path, *, preload_siblings: bool) -> tuple[types.ModuleType, list[str]]:
    init = directory / "__init__.py"
    existing = sys.modules.get(module_name)
    if existing is not None and _same_file(getattr(existing, "__file__", None), init):
        return existing, []
    for key in [k for k in sys.modules if k == module_name or k.startswith(module_name + ".")]:
        del sys.modules[key]
    _ensure_package(module_name.rpartition(".")[0])
    spec = importlib.util.spec_from_file_location(module_name, init, submodule_search_locations=[str(directory)])
    if spec is None or spec.loader is None:
        raise PluginFailure(f"cannot load {init}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    warnings: list[str] = []
    if preload_siblings:
        for path in sorted(directory.glob("*.py")):
            if path.name == "__init__.py":
                continue
            sub_name = f"{module_name}.{path.stem}"
            if sub_name in sys.modules:
                continue
            try:
                sub_spec = importlib.util.spec_from_file_location(sub_name, path)
                assert sub_spec is not None and sub_spec.loader is not None
                sub = importlib.util.module_from_spec(sub_spec)
                sys.modules[sub_name] = sub
                sub_spec.loader.exec_module(sub)
                setattr(module, path.stem, sub)
            except (Exception, SystemExit) as exc:  # not KeyboardInterrupt: the user stops us - a plugin may raise anything, even SystemExit
                sys.modules.pop(sub_name, None)
                warnings.append(f"sibling module {path.name} failed to import ({exc_line(exc)}; Hermes ignores this):\n"
                                f"{format_exc(exc)}")
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # not KeyboardInterrupt: the user stops us
        for key in [k for k in sys.modules if k == module_name or k.startswith(module_name + ".")]:
            del sys.modules[key]
        raise PluginFailure(f"{init} failed to import: {type(exc).__name__}: {exc}", format_exc(exc)) from None
    return module, warnings


def _same_file(a: Any, b: Path) -> bool:
    try:
        return a is not None and Path(a).resolve() == b.resolve()
    except OSError:
        return False


# -- producing engines ------------------------------------------------------------------------
def engine_bases() -> tuple[type, ...]:
    from inspector.engines.contract import ContextEngine

    bases: list[type] = [ContextEngine]
    hermes = sys.modules.get("agent.context_engine")
    other = getattr(hermes, "ContextEngine", None)
    if isinstance(other, type) and other is not ContextEngine:
        bases.append(other)
    return tuple(bases)


def load_directory_engine(name: str, directory: Path, manifest: PluginManifest, manager: PluginManager) -> Produced:
    """Hermes' ``load_context_engine(name)``: register(ctx) first, then the subclass scan."""
    module_name = f"{DIRECTORY_PACKAGE}.{name}"
    module, warnings = load_package(module_name, directory, preload_siblings=True)
    register = getattr(module, "register", None)
    ctx = None
    if callable(register):
        ctx = PluginContext(manager, manifest, kind="directory")
        try:
            register(ctx)
        except (Exception, SystemExit) as exc:  # not KeyboardInterrupt: the user stops us
            warnings.append(
                f"register(ctx) raised {exc_line(exc)}; Hermes falls back to the first ContextEngine subclass:\n"
                + format_exc(exc)
            )
        else:
            if len(ctx.engines_offered) > 1:
                warnings.append(
                    f"register(ctx) registered {len(ctx.engines_offered)} engines; Hermes' directory collector keeps the last"
                )
            if ctx.engines_offered and ctx.engines_offered[-1]:
                offered = ctx.engines_offered[-1]
                if not is_context_engine(offered):
                    missing = [h for h in ENGINE_HOOKS if not callable(getattr(offered, h, None))]
                    warnings.append(
                        f"register(ctx) registered a {type(offered).__name__}, which is not a ContextEngine; Hermes "
                        "uses it anyway" + (f", and fails at its first missing hook ({', '.join(missing)})"
                                            if missing else ""))
                return Produced(offered, "register(ctx)", warnings, ctx, module_name)
    bases = engine_bases()
    failures = []
    for attr in dir(module):  # alphabetical, as Hermes scans it
        obj = getattr(module, attr, None)
        if not (isinstance(obj, type) and issubclass(obj, bases) and obj not in bases):
            continue
        try:
            engine = obj()
        except (Exception, SystemExit) as exc:  # not KeyboardInterrupt: the user stops us
            failures.append(f"{attr}() failed ({exc_line(exc)}), trying the next subclass:\n{format_exc(exc)}")
            continue
        return Produced(engine, f"subclass scan: {attr}()", warnings + failures, ctx, module_name)
    details = "\n".join(warnings + failures)
    raise PluginFailure(
        f"directory engine {name!r} ({directory}) produced no engine: register(ctx) registered none and no "
        "ContextEngine subclass in the module could be constructed with no arguments",
        details,
    )


def run_register(obj: Any, manifest: PluginManifest, manager: PluginManager, kind: str) -> PluginContext:
    """Call a general plugin's ``register(ctx)`` (module attribute or the callable itself)."""
    register = getattr(obj, "register", None) if isinstance(obj, types.ModuleType) else obj
    if not callable(register):
        raise PluginFailure(f"plugin {manifest.name!r} has no register(ctx)")
    ctx = PluginContext(manager, manifest, kind=kind)
    try:
        register(ctx)
    except (Exception, SystemExit) as exc:  # not KeyboardInterrupt: the user stops us
        raise PluginFailure(f"plugin {manifest.name!r}: register(ctx) raised {type(exc).__name__}: {exc}", format_exc(exc)) from None
    return ctx


def accepted_engine(ctx: PluginContext, manager: PluginManager) -> Any:
    """The engine this ctx registered that the manager kept (first wins), or ``None``."""
    kept = manager.get_plugin_context_engine()
    return next((e for e in ctx.engines_offered if e is kept), None)


def load_general_plugin(name: str, directory: Path, manifest: PluginManifest, manager: PluginManager) -> PluginContext:
    safe = re.sub(r"\W", "_", name)
    module, warnings = load_package(f"{GENERAL_PACKAGE}.{safe}", directory, preload_siblings=False)
    ctx = run_register(module, manifest, manager, "general")
    for w in warnings:
        manager.warn(w)
    return ctx


# -- the built-in compressor ------------------------------------------------------------------
@dataclass
class ModelRuntime:
    """The main model as Hermes' agent init sees it (``model:`` section of config.yaml)."""

    model: str
    provider: str = ""
    base_url: str = ""
    api_key: str = ""
    api_mode: str = ""
    context_length: int = 0
    max_tokens: int | None = None


def window_for(config: dict[str, Any], model: str) -> int:
    """The context window Hermes would use for ``model`` (agent/model_metadata.py:2084 of hermes-agent 0.19.0), offline and deterministic.

    An explicit ``model.context_length``, then a custom provider's per-model value, then the
    family defaults, then 256,000: never a default of our own that would hide the model's.
    """
    from inspector.engines.compat.mod_model_metadata import _from_custom_providers, _positive
    from inspector.engines.compressor import lookup_context_length

    raw = config.get("model")
    section = raw if isinstance(raw, dict) else {}
    configured = section.get("context_length")
    if _positive(configured):
        return int(configured)
    found = _from_custom_providers(model, str(section.get("base_url") or ""), str(section.get("provider") or ""),
                                   config.get("custom_providers"))
    return found or lookup_context_length(model)


def model_runtime(config: dict[str, Any]) -> ModelRuntime:
    """Model, route and (offline, deterministic) context length from config."""
    raw = config.get("model")
    section = raw if isinstance(raw, dict) else {}
    model = str(raw if isinstance(raw, str) else section.get("default") or section.get("model") or section.get("name") or "")
    provider = str(section.get("provider") or "")
    base_url = str(section.get("base_url") or "")
    ctx = window_for(config, model)
    max_tokens = section.get("max_tokens")
    return ModelRuntime(
        model=model, provider=provider, base_url=base_url, api_key=str(section.get("api_key") or ""),
        api_mode=str(section.get("api_mode") or ""), context_length=int(ctx),
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
    )


def builtin_threshold_percent(config: dict[str, Any], rt: ModelRuntime) -> float:
    """``compression.threshold`` → per-model code autoraise (agent/auxiliary_client.py:435 of hermes-agent 0.19.0): the percent the compressor snapshots.

    ``model_thresholds`` is not folded in: the engine resolves it per model against this value,
    so switching to a model without an override falls back to it, never to the previous model's
    override. The small-context floor (0.75 below 512K) belongs to the compressor itself.
    """
    try:
        pct = float(cfg_get(config, "compression.threshold", 0.50))
    except (TypeError, ValueError):
        pct = 0.50
    model = rt.model.lower()
    route = rt.provider.strip().lower()
    if "trinity-large-thinking" in model:
        pct = 0.75
    if route == "openai-codex":
        if re.search(r"gpt-5\.[456]", model) and cfg_get(config, "compression.codex_gpt55_autoraise", True):
            pct = max(pct, 0.85)
        if "gpt-5.3-codex-spark" in model:
            pct = max(pct, 0.70)
    return pct


def _threshold_tokens_cap(raw: Any) -> int | None:
    """``compression.threshold_tokens`` as Hermes' agent reads it: a positive ``int()``, else no cap."""
    try:
        value = int(raw) if raw is not None else None
    except (TypeError, ValueError, OverflowError):
        return None
    return value if value is not None and value > 0 else None


def _min_tail_user_messages(raw: Any) -> int:
    """``compression.min_tail_user_messages`` as Hermes' agent reads it: a whole number (an
    integral float or a numeric string will do, a boolean will not), at least 1, else 1."""
    if isinstance(raw, bool):
        return 1
    if isinstance(raw, float):
        value = int(raw) if raw.is_integer() else 1
    else:
        try:
            value = int(str(raw).strip())
        except (TypeError, ValueError):
            value = 1
    return max(1, value)


def build_builtin_compressor(config: dict[str, Any]) -> Any:
    """``ContextCompressor(...)`` with the arguments ``agent_init`` passes (agent/agent_init.py:1599-1672 of hermes-agent 0.19.0)."""
    from inspector.engines.compressor import ContextCompressor

    rt = model_runtime(config)

    def num(key: str, default: Any, cast: Any) -> Any:
        try:
            return cast(cfg_get(config, key, default))
        except (TypeError, ValueError):
            return default

    kwargs: dict[str, Any] = {
        "model": rt.model,
        "threshold_percent": builtin_threshold_percent(config, rt),
        "protect_first_n": max(0, num("compression.protect_first_n", 3, int)),
        "protect_last_n": num("compression.protect_last_n", 20, int),
        "summary_target_ratio": num("compression.target_ratio", 0.20, float),
        "summary_model_override": None,
        "quiet_mode": True,
        "base_url": rt.base_url,
        "api_key": rt.api_key,
        "config_context_length": rt.context_length or None,
        "provider": rt.provider,
        "api_mode": rt.api_mode,
        "abort_on_summary_failure": bool(cfg_get(config, "compression.abort_on_summary_failure", False)),
        "max_tokens": rt.max_tokens,
        "threshold_tokens_cap": _threshold_tokens_cap(cfg_get(config, "compression.threshold_tokens", None)),
        "min_tail_user_messages": _min_tail_user_messages(cfg_get(config, "compression.min_tail_user_messages", 1)),
    }
    try:
        params = inspect.signature(ContextCompressor).parameters
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            kwargs = {k: v for k, v in kwargs.items() if k in params}
    except (TypeError, ValueError):
        pass
    engine = ContextCompressor(**kwargs)
    thresholds = cfg_get(config, "compression.model_thresholds", {}) or {}
    try:
        engine.model_thresholds = dict(thresholds) if isinstance(thresholds, dict) else {}
    except Exception:
        pass
    return engine


def is_engine(obj: Any) -> bool:
    return is_context_engine(obj)
