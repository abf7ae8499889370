"""Finding engines and loading the one ``context.engine`` names (agent/agent_init.py:1819-1918 of hermes-agent 0.19.0).

Sources, searched only where the user chose: the project's ``plugins/`` directory, extra
directories from ``--plugin-dir`` or ``inspector.plugin_dirs``, and installed packages exposing
the ``hermes_agent.plugins`` entry point group. Inside a plugin directory:

- ``context_engine/<name>/__init__.py`` (or ``<name>/`` when the directory itself is called
  ``context_engine``): a directory engine, loaded as ``plugins.context_engine.<name>``;
- ``<name>/plugin.yaml`` + ``<name>/__init__.py``: a general plugin whose ``register(ctx)`` may
  call ``ctx.register_context_engine``.

Selection order for a name: the built-in ``compressor`` (plugins never replace it), then
directory engines, then general plugins, then entry points; within each, command-line
directories before config directories before the project's. A plugin is never activated unless
named, and an unknown or broken one is an :class:`EngineLoadError` naming what is available.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from inspector import yaml_safe
from inspector.config import cfg_get
from inspector.engines.availability import Availability, hook_timeout, probe
from inspector.engines.compat import CompatReport, activate, install_compat
from inspector.engines.compat.plugins import PluginManager, PluginManifest, ToolRegistration
from inspector.engines.home_mirror import real_expanduser
from inspector.engines.loading import (
    PluginFailure,
    Produced,
    accepted_engine,
    build_builtin_compressor,
    format_exc,
    load_directory_engine,
    load_general_plugin,
    run_register,
)
from inspector.engines.sandbox import Sandbox, create_sandbox

DEFAULT_ENGINE = "compressor"
ENTRY_POINT_GROUP = "hermes_agent.plugins"
SOURCE_BUILTIN = "built-in"
SOURCE_DIRECTORY = "directory"
SOURCE_GENERAL = "general-plugin"
SOURCE_ENTRY_POINT = "entry-point"
BUILTIN_DESCRIPTION = "Hermes' built-in ContextCompressor: summarises the middle of the conversation"


class EngineLoadError(Exception):
    """An engine could not be selected or loaded; the message names what is available."""

    def __init__(self, message: str, *, available: list[str] | None = None, details: str = "") -> None:
        self.available = list(available or [])
        self.details = details
        text = message
        if self.available:
            text += "\nAvailable engines: " + ", ".join(self.available)
        if details:
            text += "\n\n" + details.rstrip()
        super().__init__(text)


@dataclass
class EngineInfo:
    name: str
    description: str
    version: str
    source: str
    path: str
    loads: bool
    error: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    how: str = ""
    plugin: str = ""
    availability: Availability | None = None  # the engine's is_available(), when it loads and was asked

    def to_json(self) -> dict[str, Any]:
        availability = self.availability.to_json() if self.availability else {"available": None, "availability": None}
        return {
            "name": self.name,
            "description": self.description,
            "version": self.version,
            "source": self.source,
            "path": self.path,
            "loads": self.loads,
            "error": self.error,
            "metadata": _plain(self.metadata),
            "warnings": list(self.warnings),
            "how": self.how,
            "plugin": self.plugin,
            **availability,
        }


@dataclass
class LoadedEngine:
    """An engine ready for the host, with everything its plugin registered."""

    engine: Any
    info: EngineInfo
    plugin_manager: PluginManager
    tools: list[ToolRegistration]
    warnings: list[str]
    sandbox: Sandbox
    config: dict[str, Any]
    compat: CompatReport
    deepcopy_error: str | None = None
    ctx_calls: list[str] = field(default_factory=list)
    module_name: str = ""
    availability: Availability | None = None
    # Set when Hermes would not run the requested plugin engine but its built-in compressor: why,
    # and which engine was asked for (the engine here is then the built-in compressor).
    fallback: str = ""
    requested: str = ""
    registered: str = ""  # the general plugin whose register() already ran for the engine (never run twice)

    @contextlib.contextmanager
    def activate(self) -> Iterator[LoadedEngine]:
        """Stand-in host modules answer with this engine's config, sandbox and plugin manager."""
        with activate(config=self.config, home=self.sandbox.path, plugin_manager=self.plugin_manager,
                      user_home=self.sandbox.user_home):
            yield self

    def close(self) -> None:
        self.sandbox.cleanup()


@dataclass
class _Candidate:
    kind: str  # SOURCE_DIRECTORY | SOURCE_GENERAL | SOURCE_ENTRY_POINT
    name: str  # directory / plugin / entry point name
    path: Path | None
    manifest: PluginManifest
    manifest_error: str | None = None
    entry_point: Any = None


# -- where to look ------------------------------------------------------------------------------
def project_plugin_dir() -> Path | None:
    """The project's own ``plugins/`` (next to the ``inspector`` package), if present."""
    path = Path(__file__).resolve().parents[2] / "plugins"
    return path if path.is_dir() else None


def plugin_search_dirs(config: dict[str, Any], plugin_dirs: Any = (), *, include_project: bool = True) -> list[Path]:
    dirs: list[Path] = [real_expanduser(d) for d in plugin_dirs or ()]
    configured = cfg_get(config, "inspector.plugin_dirs", []) or []
    if isinstance(configured, str):
        configured = [configured]
    dirs += [real_expanduser(str(d)) for d in configured]
    if include_project and (proj := project_plugin_dir()) is not None:
        dirs.append(proj)
    out: list[Path] = []
    for d in dirs:
        r = d.resolve()
        if r not in out:
            out.append(r)
    return out


def plugin_dir_problems(config: dict[str, Any], plugin_dirs: Any = ()) -> list[str]:
    """Why a plugin directory the user named offers nothing (a typo, or the wrong level)."""
    named = [real_expanduser(d) for d in plugin_dirs or ()]
    configured = cfg_get(config, "inspector.plugin_dirs", []) or []
    named += [real_expanduser(str(d)) for d in ([configured] if isinstance(configured, str) else configured)]
    problems = []
    for d in named:
        if not d.exists():
            problems.append(f"plugin directory {d} does not exist")
        elif not d.is_dir():
            problems.append(f"plugin directory {d} is not a directory")
        elif not _scan([d.resolve()], False):
            hint = (f"; it looks like one engine's folder: give its grandparent {d.parent.parent}"
                    if (d / "__init__.py").is_file() and d.parent.name == "context_engine" else "")
            problems.append(f"plugin directory {d} holds no plugins (expected context_engine/<name>/__init__.py, "
                            f"or <name>/ with plugin.yaml and __init__.py){hint}")
    return problems


def _read_manifest(name: str, directory: Path) -> tuple[PluginManifest, str | None]:
    path = directory / "plugin.yaml"
    if not path.is_file():
        return PluginManifest(name=name, path=str(directory)), None
    try:
        data = yaml_safe.load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(data, dict):
            return PluginManifest(name=name, path=str(directory)), f"{path}: expected a mapping"
        manifest = PluginManifest.from_yaml(name, data, directory)
        return manifest, None
    except (OSError, yaml.YAMLError) as exc:
        return PluginManifest(name=name, path=str(directory)), f"{path}: {exc}"


def _scan(dirs: list[Path], include_entry_points: bool) -> list[_Candidate]:
    directory: list[_Candidate] = []
    general: list[_Candidate] = []
    for root in dirs:
        if not root.is_dir():
            continue
        engine_roots = [root / "context_engine"] if (root / "context_engine").is_dir() else []
        if root.name == "context_engine":
            engine_roots.append(root)
        for eroot in engine_roots:
            for sub in sorted(p for p in eroot.iterdir() if p.is_dir() and (p / "__init__.py").is_file()):
                manifest, err = _read_manifest(sub.name, sub)
                manifest.name = sub.name  # directory engines are selected by directory name
                directory.append(_Candidate(SOURCE_DIRECTORY, sub.name, sub, manifest, err))
        if root.name == "context_engine":
            continue
        for sub in sorted(p for p in root.iterdir() if p.is_dir() and p.name != "context_engine"):
            if (sub / "plugin.yaml").is_file() and (sub / "__init__.py").is_file():
                manifest, err = _read_manifest(sub.name, sub)
                manifest.key = sub.name  # Hermes keys a flat plugin by its directory
                general.append(_Candidate(SOURCE_GENERAL, manifest.name or sub.name, sub, manifest, err))
    eps = _entry_point_candidates() if include_entry_points else []
    return directory + general + eps


def _entry_point_candidates() -> list[_Candidate]:
    from importlib.metadata import entry_points

    try:
        found = entry_points(group=ENTRY_POINT_GROUP)
    except Exception:
        return []
    out = []
    for ep in sorted(found, key=lambda e: e.name):
        dist = getattr(ep, "dist", None)
        meta = getattr(dist, "metadata", None)
        manifest = PluginManifest(
            name=ep.name,
            version=str(getattr(dist, "version", "") or ""),
            description=str(meta.get("Summary", "") if meta is not None else ""),
            path=str(ep.value),
            raw={"entry_point": ep.value, "distribution": getattr(dist, "name", "") if dist else ""},
        )
        out.append(_Candidate(SOURCE_ENTRY_POINT, ep.name, None, manifest, None, ep))
    return out


# -- producing one engine from one candidate ---------------------------------------------------
def _produce(cand: _Candidate, manager: PluginManager) -> Produced:
    if cand.kind == SOURCE_DIRECTORY:
        assert cand.path is not None
        return load_directory_engine(cand.name, cand.path, cand.manifest, manager)
    if cand.kind == SOURCE_GENERAL:
        assert cand.path is not None
        ctx = load_general_plugin(cand.name, cand.path, cand.manifest, manager)
    else:
        try:
            obj = cand.entry_point.load()
        except (Exception, SystemExit) as exc:  # not KeyboardInterrupt: the user stops us
            raise PluginFailure(f"entry point {cand.name!r} ({cand.entry_point.value}) failed to load: {exc}", format_exc(exc)) from None
        ctx = run_register(obj, cand.manifest, manager, "entry-point")
    engine = accepted_engine(ctx, manager)
    warnings = list(ctx.refused)
    if engine is None:
        why = "; ".join(ctx.refused) if ctx.refused else "register(ctx) did not call ctx.register_context_engine"
        return Produced(None, "", warnings + [why], ctx)
    return Produced(engine, "ctx.register_context_engine", warnings, ctx)


def _engine_name(engine: Any, fallback: str) -> str:
    try:
        name = engine.name
        return name if isinstance(name, str) and name else fallback
    except Exception:
        return fallback


def _info_for(cand: _Candidate, produced: Produced | None, error: str | None) -> EngineInfo:
    m = cand.manifest
    name = cand.name
    if produced is not None and produced.engine is not None and cand.kind != SOURCE_DIRECTORY:
        name = _engine_name(produced.engine, cand.name)
    info = EngineInfo(
        name=name,
        description=m.description,
        version=m.version,
        source=cand.kind,
        path=str(cand.path) if cand.path is not None else m.path,
        loads=produced is not None and produced.engine is not None and error is None,
        error=error,
        metadata=dict(m.raw),
        warnings=list(produced.warnings if produced else []),
        how=produced.how if produced else "",
        plugin=m.name,
    )
    if cand.manifest_error:
        info.warnings.append(f"plugin.yaml unreadable: {cand.manifest_error}")
    if produced is not None and produced.engine is None and error is None:
        info.error = produced.warnings[-1] if produced.warnings else "no engine registered"
    return info


def _builtin_info(config: dict[str, Any], construct: bool, timeout: float | None = None) -> EngineInfo:
    info = EngineInfo(DEFAULT_ENGINE, BUILTIN_DESCRIPTION, "", SOURCE_BUILTIN, "inspector.engines.compressor", True, how="built-in")
    try:
        if construct:
            engine = build_builtin_compressor(config)
            if timeout is not None:
                info.availability = probe(engine, timeout)
        else:
            import inspector.engines.compressor  # noqa: F401
    except (Exception, SystemExit) as exc:  # not KeyboardInterrupt: the user stops us
        info.loads = False
        info.error = f"{type(exc).__name__}: {exc}\n\n{format_exc(exc)}"
    return info


def discover_engines(
    config: dict[str, Any],
    plugin_dirs: Any = (),
    *,
    include_project: bool = True,
    include_entry_points: bool = True,
    ask_availability: bool = True,
) -> list[EngineInfo]:
    """Every engine the chosen places offer, each loaded once to say whether it works.

    With ``ask_availability`` each engine that loads is asked ``is_available()`` (under the hook
    timeout), as Hermes' own listing does.
    """
    timeout = hook_timeout(config) if ask_availability else None
    sandbox = create_sandbox(config)
    try:
        install_compat(config, sandbox.path)
        infos = [_builtin_info(config, construct=True, timeout=timeout)]
        seen: dict[str, EngineInfo] = {DEFAULT_ENGINE: infos[0]}
        found = _scan(plugin_search_dirs(config, plugin_dirs, include_project=include_project), include_entry_points)
        # In the order load_engine prefers them, so "shadowed" names the one that loses: the user's
        # plugins before the bundled examples.
        for cand in [c for c in found if not _bundled(c)] + [c for c in found if _bundled(c)]:
            manager = PluginManager()
            produced: Produced | None = None
            error = None
            with activate(config=config, home=sandbox.path, plugin_manager=manager,
                          user_home=sandbox.user_home):
                try:
                    produced = _produce(cand, manager)
                except PluginFailure as exc:
                    error = f"{exc}\n\n{exc.details}".rstrip()
                except (Exception, SystemExit) as exc:  # not KeyboardInterrupt: the user stops us
                    error = f"{type(exc).__name__}: {exc}\n\n{format_exc(exc)}"
                info = _info_for(cand, produced, error)
                if info.loads and produced is not None and timeout is not None:
                    info.availability = probe(produced.engine, timeout)
            if produced is not None and produced.engine is not None and cand.kind != SOURCE_DIRECTORY:
                copy_error = _deepcopy_error(produced.engine)
                if copy_error:
                    info.warnings.append(f"cannot be deep-copied (Hermes would fall back to the built-in compressor): {copy_error}")
            if info.name in seen:
                first = seen[info.name]
                info.warnings.append(f"shadowed: {first.source} engine at {first.path} has the same name and is selected first")
            else:
                seen[info.name] = info
            infos.append(info)
        return infos
    finally:
        sandbox.cleanup()


def _deepcopy_error(engine: Any) -> str | None:
    try:
        copy.deepcopy(engine)
    except (Exception, SystemExit) as exc:  # not KeyboardInterrupt: the user stops us
        return f"{type(exc).__name__}: {exc}"
    return None


# -- loading the selected engine ---------------------------------------------------------------
def load_engine(
    name: str | None,
    config: dict[str, Any],
    plugin_dirs: Any = (),
    *,
    include_project: bool = True,
    include_entry_points: bool = True,
    hermes_home: str | Path | None = None,
    ask_availability: bool = True,
    hermes_fallbacks: bool = True,
) -> LoadedEngine:
    """Load the engine ``name`` (``None`` → ``context.engine`` → ``compressor``) the way Hermes would.

    Plugin engines are returned as constructed: the host sets ``model_thresholds`` and calls
    ``update_model``. The user's plugins win over the bundled examples of the same name (said in
    the warnings). General-plugin and entry-point engines are deep-copied per agent, as Hermes
    does (agent/agent_init.py:1851-1870), and load only when ``plugins.enabled`` lists them
    (hermes_cli/plugins.py:1449-1470); where Hermes would therefore run its built-in compressor,
    so does the run (``fallback`` says why), unless ``hermes_fallbacks`` is False (the doctor,
    which examines the plugin itself). ``hermes_home`` uses that directory instead of a temporary
    sandbox (only when the user asks for their real home). ``ask_availability`` records the
    engine's ``is_available()`` answer; like Hermes, loading never depends on it.
    """
    name = name or str(cfg_get(config, "context.engine", "") or DEFAULT_ENGINE)
    sandbox = create_sandbox(config, real_home=hermes_home)
    try:
        report = install_compat(config, sandbox.path)
        manager = PluginManager()
        with activate(config=config, home=sandbox.path, plugin_manager=manager,
                          user_home=sandbox.user_home):
            loaded = _load_selected(name, config, plugin_dirs, include_project, include_entry_points, sandbox, report, manager,
                                    hermes_fallbacks)
            _load_enabled_hook_plugins(loaded, config, plugin_dirs, include_project)
            if ask_availability:
                loaded.availability = probe(loaded.engine, hook_timeout(config))
        loaded.tools = loaded.plugin_manager.tools
        loaded.warnings.extend(w for w in manager.warnings if w not in loaded.warnings)
        return loaded
    except BaseException:
        sandbox.cleanup()
        raise


def _load_selected(
    name: str,
    config: dict[str, Any],
    plugin_dirs: Any,
    include_project: bool,
    include_entry_points: bool,
    sandbox: Sandbox,
    report: CompatReport,
    manager: PluginManager,
    hermes_fallbacks: bool = True,
) -> LoadedEngine:
    def make(engine: Any, info: EngineInfo, warnings: list[str], **kw: Any) -> LoadedEngine:
        return LoadedEngine(engine, info, manager, [], list(warnings), sandbox, config, report, **kw)

    def fall_back(why: str, warnings: list[str]) -> LoadedEngine:
        """Hermes' built-in compressor in place of the plugin engine it would not run."""
        engine = build_builtin_compressor(config)
        note = f"Hermes would not run engine {name!r}: {why}; it runs its built-in compressor instead, and so does this run"
        return make(engine, _builtin_info(config, construct=False), [*warnings, note], fallback=why, requested=name)

    if name == DEFAULT_ENGINE:
        info = _builtin_info(config, construct=False)
        try:
            engine = build_builtin_compressor(config)
        except (Exception, SystemExit) as exc:  # not KeyboardInterrupt: the user stops us
            raise EngineLoadError(
                "the built-in 'compressor' engine failed to load", available=_available(config, plugin_dirs, include_project),
                details=format_exc(exc),
            ) from None
        return make(engine, info, [])

    dirs = plugin_search_dirs(config, plugin_dirs, include_project=include_project)
    candidates = _scan(dirs, include_entry_points)
    # The user's plugins (their directories, installed entry points) before the project's bundled
    # examples; within each, directory engines by directory name, then general plugins and entry
    # points by the name their engine reports, likely providers (named like the engine) first.
    users = [c for c in candidates if not _bundled(c)]
    bundled = [c for c in candidates if _bundled(c)]
    ordered = _ranked(users, name) + _ranked(bundled, name)
    failures: list[str] = []
    for cand in ordered:
        trial = manager if cand.kind == SOURCE_DIRECTORY else PluginManager()
        try:
            with activate(plugin_manager=trial):
                produced = _produce(cand, trial)
        except PluginFailure as exc:
            if cand.kind == SOURCE_DIRECTORY:
                raise EngineLoadError(
                    f"engine {name!r} ({cand.path}) failed to load: {exc}. Hermes would not stop: it logs a "
                    f"warning (\"Context engine '{name}' not found — falling back to built-in compressor\") and "
                    "runs the session with the built-in compressor",
                    available=_available(config, plugin_dirs, include_project, exclude=name),
                    details=exc.details,
                ) from None
            failures.append(f"{cand.kind} {cand.name!r} ({cand.path or cand.manifest.path}) failed: {exc}\n{exc.details}")
            continue
        if produced.engine is None:
            continue
        info = _info_for(cand, produced, None)
        if cand.kind != SOURCE_DIRECTORY and info.name != name:
            continue
        shadow = [f"bundled example engine {name!r} at {b.path} is shadowed by yours at {info.path}: yours runs"
                  for b in bundled if b is not cand and b.kind == SOURCE_DIRECTORY and b.name == name
                  and not _bundled(cand)]
        if cand.kind == SOURCE_DIRECTORY:
            engine_name = _engine_name(produced.engine, name)
            if engine_name != name:
                produced.warnings.append(f"engine reports name {engine_name!r} but is selected as {name!r} (its directory name)")
            return make(produced.engine, info, shadow + produced.warnings,
                        ctx_calls=list(produced.ctx.calls if produced.ctx else []), module_name=produced.module_name)
        warnings = shadow + produced.warnings
        not_enabled = _not_enabled(cand, config)
        if not_enabled:
            if hermes_fallbacks:
                return fall_back(not_enabled, warnings)  # Hermes never imports it: nothing it registered exists
            warnings.append(f"{not_enabled}: Hermes would use the built-in compressor; checked anyway because "
                            "you named it")
        _adopt(manager, trial)
        engine, copy_error = produced.engine, None
        try:
            engine = copy.deepcopy(produced.engine)
        except (Exception, SystemExit) as exc:  # not KeyboardInterrupt: the user stops us
            copy_error = f"{type(exc).__name__}: {exc}"
            why = f"the engine cannot be deep-copied per agent ({copy_error})"
            if hermes_fallbacks:
                loaded = fall_back(why, warnings)  # the plugin loaded (its hooks stand), its engine is not used
                loaded.deepcopy_error, loaded.registered = copy_error, info.plugin
                return loaded
            warnings.append(f"{why}; Hermes would fall back to the built-in compressor here. The inspector uses "
                            "the original instance.")
        return make(engine, info, warnings, deepcopy_error=copy_error, registered=info.plugin,
                    ctx_calls=list(produced.ctx.calls if produced.ctx else []))
    details = "\n".join(failures)
    prefix = "these plugins failed to load and may provide it:\n" if failures else ""
    dirs = plugin_dir_problems(config, plugin_dirs)
    raise EngineLoadError(
        f"unknown context engine {name!r}" + "".join(f"\n{problem}" for problem in dirs),
        available=_available(config, plugin_dirs, include_project),
        details=prefix + details,
    )


def _bundled(cand: _Candidate) -> bool:
    """A candidate from the project's own ``plugins/`` (the bundled examples), not one the user chose."""
    proj = project_plugin_dir()
    if proj is None or cand.path is None:
        return False
    try:
        Path(cand.path).resolve().relative_to(proj.resolve())
    except ValueError:
        return False
    return True


def _ranked(cands: list[_Candidate], name: str) -> list[_Candidate]:
    first = [c for c in cands if c.kind == SOURCE_DIRECTORY and c.name == name]
    others = [c for c in cands if c.kind != SOURCE_DIRECTORY]
    return first + sorted(others, key=lambda c: (c.name != name and c.manifest.name != name))


def _not_enabled(cand: _Candidate, config: dict[str, Any]) -> str:
    """Why Hermes would not load this general or entry-point plugin (hermes_cli/plugins.py:1386-1470), or ""."""
    if cand.kind not in (SOURCE_GENERAL, SOURCE_ENTRY_POINT):
        return ""
    enabled = cfg_get(config, "plugins.enabled", []) or []
    disabled = cfg_get(config, "plugins.disabled", []) or []
    enabled = enabled if isinstance(enabled, list) else []
    disabled = disabled if isinstance(disabled, list) else []
    keys = {k for k in (cand.manifest.key, cand.manifest.name, cand.name) if k}
    kind = "general plugin" if cand.kind == SOURCE_GENERAL else "entry-point plugin"
    if keys & set(disabled):
        return f"{kind} {cand.manifest.name or cand.name!r} is in plugins.disabled"
    if not keys & set(enabled):
        return (f"{kind} {cand.manifest.name or cand.name!r} is not in plugins.enabled (Hermes loads only the "
                "plugins listed there)")
    return ""


def _adopt(target: PluginManager, source: PluginManager) -> None:
    """Move what one plugin registered into the engine's manager."""
    with target._lock:
        for hook, cbs in source._hooks.items():
            target._hooks.setdefault(hook, []).extend(cbs)
        target._hook_owners.update(source._hook_owners)
        target._plugin_commands.update(source._plugin_commands)
        target._tools.update(source._tools)
        target._cli_commands.update(source._cli_commands)
        target._auxiliary_tasks += source._auxiliary_tasks
        target._skills += source._skills
        target._middleware += source._middleware
        target._memory_providers += source._memory_providers
        if target._context_engine is None:
            target._context_engine = source._context_engine
            target._context_engine_plugin = source._context_engine_plugin
        target.warnings += source.warnings


def _load_enabled_hook_plugins(loaded: LoadedEngine, config: dict[str, Any], plugin_dirs: Any, include_project: bool) -> None:
    """General plugins listed in ``plugins.enabled`` also register their hooks (Hermes' opt-in)."""
    enabled = cfg_get(config, "plugins.enabled", []) or []
    disabled = set(cfg_get(config, "plugins.disabled", []) or [])
    if not isinstance(enabled, list) or not enabled:
        return
    own = loaded.registered or (loaded.info.plugin if loaded.info.source == SOURCE_GENERAL else None)
    for cand in _scan(plugin_search_dirs(config, plugin_dirs, include_project=include_project), False):
        if cand.kind != SOURCE_GENERAL or cand.manifest.name not in enabled or cand.manifest.name in disabled:
            continue
        if cand.manifest.name == own:
            continue
        try:
            assert cand.path is not None
            load_general_plugin(cand.name, cand.path, cand.manifest, loaded.plugin_manager)
        except PluginFailure as exc:
            loaded.warnings.append(f"enabled plugin {cand.manifest.name!r} failed to load: {exc}\n{exc.details}")


def _available(config: dict[str, Any], plugin_dirs: Any, include_project: bool, exclude: str | None = None) -> list[str]:
    """Names that would load, for error messages (a discovery pass over the folders the user chose;
    installed entry-point plugins are only named, never imported, for a message)."""
    try:
        infos = discover_engines(config, plugin_dirs, include_project=include_project, include_entry_points=False,
                                 ask_availability=False)
    except (Exception, SystemExit):  # not KeyboardInterrupt: the user stops us
        return [DEFAULT_ENGINE]
    names = []
    for info in infos:
        if info.loads and info.name not in names and info.name != exclude:
            names.append(info.name)
    for cand in _entry_point_candidates():
        if cand.name not in names and cand.name != exclude:
            names.append(cand.name)
    return names


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
