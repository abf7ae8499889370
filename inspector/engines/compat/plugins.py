"""Stand-in for ``hermes_cli.plugins``, and the ``ctx`` every ``register(ctx)`` receives.

One :class:`PluginManager` per loaded engine collects what plugins register (hooks, tools,
commands, …); the host fires the hooks during replay through :meth:`PluginManager.invoke_hook`
and records them. ``get_plugin_manager()`` returns the manager active in the current context,
so plugin code that reaches for the global manager sees the one for its own replay.

Hermes gives directory engines a smaller collector than general plugins (plugins/context_engine/__init__.py:199
of hermes-agent 0.19.0): ``register_hook``/``register_tool``/``register_cli_command`` are no-ops there and any
other method raises. The context here accepts everything but records which methods were used,
so discovery can apply Hermes' rule and the doctor can explain it. ``ctx.llm`` (Hermes'
``agent.plugin_llm`` facade) likewise exists only for general and entry-point plugins.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# Hermes 0.19.0's plugin hook names, exactly (hermes_cli/plugins.py:135-215 of hermes-agent 0.19.0).
VALID_HOOKS = frozenset(
    {
        "pre_tool_call",
        "post_tool_call",
        "transform_terminal_output",
        "transform_tool_result",
        "transform_llm_output",
        "pre_llm_call",
        "post_llm_call",
        "pre_verify",
        "pre_api_request",
        "post_api_request",
        "api_request_error",
        "on_session_start",
        "on_session_end",
        "on_session_finalize",
        "on_session_reset",
        "subagent_start",
        "subagent_stop",
        "pre_gateway_dispatch",
        "pre_approval_request",
        "post_approval_response",
        "kanban_task_claimed",
        "kanban_task_completed",
        "kanban_task_blocked",
    }
)
# The hooks the inspector's host fires in a replay (the host's ``_fire_plugin_hook`` calls); the
# tool hooks fire around the engine's own tools, the only tool calls a replay runs.
REPLAY_FIRED_HOOKS = frozenset({"pre_llm_call", "post_llm_call", "pre_tool_call", "post_tool_call", "on_session_end"})
# Why each other Hermes hook never fires in a replay; a plugin that registers one is told so.
NOT_FIRED_IN_REPLAY: dict[str, str] = {
    "subagent_start": "a replay has no subagents",
    "subagent_stop": "a replay has no subagents",
    "transform_terminal_output": "tool results are replayed from the transcript, not produced",
    "transform_tool_result": "tool results are replayed from the transcript, not produced",
    "transform_llm_output": "the model's answers are replayed from the transcript, not shown to a user",
    "pre_verify": "a replay has no verification loop",
    "pre_api_request": "a replay assembles and counts requests without sending them (live chats do not fire it either)",
    "post_api_request": "a replay assembles and counts requests without sending them (live chats do not fire it either)",
    "api_request_error": "a replay assembles and counts requests without sending them (live chats do not fire it either)",
    "on_session_start": "the inspector fires the engine's session hooks, not this plugin hook",
    "on_session_finalize": "the inspector fires the engine's session hooks, not this plugin hook",
    "on_session_reset": "the inspector fires the engine's session hooks, not this plugin hook",
    "pre_gateway_dispatch": "a replay has no messaging gateway",
    "pre_approval_request": "a replay runs no commands, so nothing asks for approval",
    "post_approval_response": "a replay runs no commands, so nothing asks for approval",
    "kanban_task_claimed": "a replay has no kanban board",
    "kanban_task_completed": "a replay has no kanban board",
    "kanban_task_blocked": "a replay has no kanban board",
}
# What Hermes' directory-engine collector supports; anything else raises AttributeError there.
DIRECTORY_COLLECTOR_METHODS = frozenset(
    {
        "register_context_engine",
        "register_command",
        "register_tool",
        "register_hook",
        "register_cli_command",
        "register_memory_provider",
    }
)
DIRECTORY_NOOP_METHODS = frozenset({"register_tool", "register_hook", "register_cli_command", "register_memory_provider"})


@dataclass
class PluginManifest:
    """``plugin.yaml`` as Hermes exposes it on ``ctx.manifest`` (attributes + dict access)."""

    name: str
    version: str = ""
    description: str = ""
    author: str = ""
    kind: str = "standalone"
    path: str = ""
    raw: dict[str, Any] = field(default_factory=dict)
    key: str = ""  # Hermes' registry key (a general plugin's directory name); empty → ``name``

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, getattr(self, key, default))

    def __getitem__(self, key: str) -> Any:
        if key in self.raw:
            return self.raw[key]
        return getattr(self, key)

    @classmethod
    def from_yaml(cls, name: str, data: dict[str, Any] | None, path: str | Path = "") -> PluginManifest:
        data = data if isinstance(data, dict) else {}
        return cls(
            name=str(data.get("name") or name),
            version=str(data.get("version") or ""),
            description=str(data.get("description") or ""),
            author=str(data.get("author") or ""),
            kind=str(data.get("kind") or "standalone"),
            path=str(path),
            raw=dict(data),
        )


@dataclass
class ToolRegistration:
    name: str
    toolset: str | None
    schema: Any
    handler: Any
    plugin: str
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class HookCall:
    """One firing of one registered callback (the host turns these into trace events)."""

    hook: str
    plugin: str
    kwargs_keys: list[str]
    result: Any = None
    error: str | None = None


class PluginManager:
    """What plugins registered, for one engine load; Hermes' private attribute names kept."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._hooks: dict[str, list[Callable[..., Any]]] = {}
        self._hook_owners: dict[int, str] = {}
        self._plugin_commands: dict[str, dict[str, Any]] = {}
        self._tools: dict[str, ToolRegistration] = {}
        self._cli_commands: dict[str, dict[str, Any]] = {}
        self._auxiliary_tasks: list[dict[str, Any]] = []
        self._skills: list[dict[str, Any]] = []
        self._middleware: list[dict[str, Any]] = []
        self._memory_providers: list[Any] = []
        self._context_engine: Any = None
        self._context_engine_plugin: str | None = None
        self.warnings: list[str] = []
        self.observer: Callable[[HookCall], None] | None = None

    # -- queries ---------------------------------------------------------------------------
    @property
    def tools(self) -> list[ToolRegistration]:
        return list(self._tools.values())

    def hook_names(self) -> list[str]:
        return sorted(name for name, cbs in self._hooks.items() if cbs)

    def get_plugin_context_engine(self) -> Any:
        return self._context_engine

    def warn(self, message: str) -> None:
        with self._lock:
            self.warnings.append(message)
        log.warning("%s", message)

    # -- firing ----------------------------------------------------------------------------
    def invoke_hook(self, hook_name: str, **kwargs: Any) -> list[Any]:
        """Call every callback for ``hook_name``; errors are recorded, never raised (as Hermes)."""
        with self._lock:
            callbacks = list(self._hooks.get(hook_name, ()))
        results: list[Any] = []
        for cb in callbacks:
            call = HookCall(hook=hook_name, plugin=self._hook_owners.get(id(cb), "?"), kwargs_keys=sorted(kwargs))
            try:
                value = cb(**kwargs)
                call.result = value
                if value is not None:
                    results.append(value)
            except Exception as exc:
                call.error = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
                self.warn(f"plugin hook {hook_name} ({call.plugin}) raised {type(exc).__name__}: {exc}")
            observer = self.observer
            if observer is not None:
                try:
                    observer(call)
                except Exception:
                    pass
        return results


class PluginContext:
    """The ``ctx`` passed to ``register(ctx)``; records every method the plugin used."""

    def __init__(
        self, manager: PluginManager, manifest: PluginManifest, *, kind: str = "general"
    ) -> None:
        self._manager = manager
        self._manifest = manifest
        self._kind = kind  # "general" | "directory" | "entry-point"
        self.calls: list[str] = []
        self.engines_offered: list[Any] = []
        self.refused: list[str] = []
        self._llm: Any = None  # built on first use of ``llm``; tests may preseed it

    @property
    def manifest(self) -> PluginManifest:
        self._note("manifest")
        return self._manifest

    @property
    def plugin_name(self) -> str:
        return self._manifest.name

    @property
    def plugin_id(self) -> str:
        """Hermes' registry id: what ``plugins.entries.<id>`` (e.g. the ``ctx.llm`` trust gate) is keyed by."""
        return self._manifest.key or self._manifest.name

    @property
    def llm(self) -> Any:
        """Hermes' ``ctx.llm``: a ``PluginLlm`` for this plugin, made on first use.

        Hermes' own ``agent.plugin_llm`` when it is installed, else the inspector's (whose calls
        go through the inspector's ``call_llm`` and so into the trace). Hermes' directory-engine
        collector has no ``llm``: there ``getattr(ctx, "llm", None)`` is ``None`` and
        ``ctx.llm`` raises. Not recorded as a call, since the ``getattr`` probe is harmless.
        """
        if self._kind == "directory":
            raise AttributeError("llm: Hermes' directory-engine collector has no llm (only general plugins get ctx.llm)")
        if self._llm is None:
            try:
                from agent.plugin_llm import PluginLlm
            except ImportError:  # no Hermes and no stand-ins installed (a bare PluginContext)
                from inspector.engines.compat.mod_plugin_llm import PluginLlm
            self._llm = PluginLlm(plugin_id=self.plugin_id)
        return self._llm

    def _note(self, method: str) -> bool:
        """Record the call; True when Hermes would ignore it for a directory engine.

        Hermes' directory-engine collector has no other methods, so there the call raises
        ``AttributeError`` exactly as it would in Hermes (``register`` then fails and the
        loader falls back to the subclass scan).
        """
        self.calls.append(method)
        if self._kind != "directory":
            return False
        if method not in DIRECTORY_COLLECTOR_METHODS:
            raise AttributeError(
                f"{method}: Hermes' directory-engine collector has no such method "
                "(only general plugins get the full PluginContext)"
            )
        return method in DIRECTORY_NOOP_METHODS

    def register_context_engine(self, engine: Any) -> None:
        self._note("register_context_engine")
        self.engines_offered.append(engine)
        if self._kind == "directory":
            return  # Hermes' collector just stores it (the loader uses the last one if truthy)
        if not is_context_engine(engine):
            msg = f"plugin {self.plugin_name}: refused register_context_engine({type(engine).__name__}): not a ContextEngine"
            self.refused.append(msg)
            self._manager.warn(msg)
            return
        with self._manager._lock:
            if self._manager._context_engine is not None:
                msg = (
                    f"plugin {self.plugin_name}: refused a second context engine "
                    f"({_engine_label(engine)}); {_engine_label(self._manager._context_engine)} "
                    f"from {self._manager._context_engine_plugin} was registered first"
                )
                self.refused.append(msg)
                self._manager.warn(msg)
                return
            self._manager._context_engine = engine
            self._manager._context_engine_plugin = self.plugin_name

    def register_hook(self, hook_name: str, callback: Callable[..., Any]) -> None:
        if self._note("register_hook"):
            self._manager.warn(f"{self.plugin_name}: register_hook({hook_name!r}) is a no-op for directory engines in Hermes; not fired")
            return
        if hook_name not in VALID_HOOKS:
            self._manager.warn(f"{self.plugin_name}: unknown hook {hook_name!r} (registered, but Hermes never fires it)")
        elif hook_name in NOT_FIRED_IN_REPLAY:
            self._manager.warn(f"{self.plugin_name}: hook {hook_name!r} registered as in Hermes, but never fired in a "
                               f"replay: {NOT_FIRED_IN_REPLAY[hook_name]}")
        with self._manager._lock:
            self._manager._hooks.setdefault(hook_name, []).append(callback)
            self._manager._hook_owners[id(callback)] = self.plugin_name

    def register_tool(
        self, name: str | None = None, toolset: str | None = None, schema: Any = None, handler: Any = None, **kwargs: Any
    ) -> None:
        if self._note("register_tool"):
            return
        tool_name = str(name or (schema.get("name") if isinstance(schema, dict) else "") or "")
        with self._manager._lock:
            self._manager._tools[tool_name] = ToolRegistration(tool_name, toolset, schema, handler, self.plugin_name, kwargs)

    def register_command(self, name: str, handler: Callable[..., Any] | None = None, description: str = "", args_hint: str = "", **kwargs: Any) -> None:
        self._note("register_command")
        owner = f"context-engine:{self.plugin_name}" if self._kind == "directory" else self.plugin_name
        with self._manager._lock:
            if name in self._manager._plugin_commands:
                self._manager.warn(f"{self.plugin_name}: command /{name} clashes with an existing plugin command; rejected")
                return
            self._manager._plugin_commands[name] = {
                "handler": handler, "description": description, "args_hint": args_hint, "plugin": owner, **kwargs
            }

    def register_cli_command(self, *args: Any, **kwargs: Any) -> None:
        if self._note("register_cli_command"):
            return
        name = str(kwargs.get("name") or (args[0] if args else ""))
        with self._manager._lock:
            self._manager._cli_commands[name] = {"args": args, "kwargs": kwargs, "plugin": self.plugin_name}

    def register_memory_provider(self, provider: Any) -> None:
        if self._note("register_memory_provider"):
            return
        with self._manager._lock:
            self._manager._memory_providers.append(provider)

    def register_auxiliary_task(self, *args: Any, **kwargs: Any) -> None:
        self._note("register_auxiliary_task")
        with self._manager._lock:
            self._manager._auxiliary_tasks.append({"args": args, "kwargs": kwargs, "plugin": self.plugin_name})

    def register_skill(self, *args: Any, **kwargs: Any) -> None:
        self._note("register_skill")
        with self._manager._lock:
            self._manager._skills.append({"args": args, "kwargs": kwargs, "plugin": self.plugin_name})

    def register_middleware(self, *args: Any, **kwargs: Any) -> None:
        self._note("register_middleware")
        with self._manager._lock:
            self._manager._middleware.append({"args": args, "kwargs": kwargs, "plugin": self.plugin_name})

    def unsupported_in_directory_collector(self) -> list[str]:
        """Methods this plugin used that Hermes' directory-engine collector does not have."""
        return sorted({c for c in self.calls if c not in DIRECTORY_COLLECTOR_METHODS})


def is_context_engine(obj: Any) -> bool:
    """An instance of our ABC, or of Hermes' own when Hermes is installed."""
    import sys

    from inspector.engines.contract import ContextEngine

    if isinstance(obj, ContextEngine):
        return True
    hermes = sys.modules.get("agent.context_engine")
    other = getattr(hermes, "ContextEngine", None)
    return isinstance(other, type) and isinstance(obj, other)


def _engine_label(engine: Any) -> str:
    try:
        return repr(engine.name)
    except Exception:
        return type(engine).__name__


def get_plugin_manager() -> PluginManager:
    from inspector.engines.compat.state import active_plugin_manager

    return active_plugin_manager()


def invoke_hook(hook_name: str, **kwargs: Any) -> list[Any]:
    return get_plugin_manager().invoke_hook(hook_name, **kwargs)


def get_plugin_context_engine() -> Any:
    return get_plugin_manager().get_plugin_context_engine()


__all__ = [
    "PluginContext",
    "PluginManager",
    "PluginManifest",
    "VALID_HOOKS",
    "get_plugin_manager",
    "invoke_hook",
    "get_plugin_context_engine",
]
