"""What the stand-in host modules answer with: the active config, HERMES_HOME, plugin manager.

A process default (set by :func:`inspector.engines.compat.install_compat`) plus context-local
overrides, so two engines replayed side by side each see their own sandbox and config. The host
must carry the context into worker threads (``contextvars.copy_context().run``), as Hermes does
for its compression pool.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_lock = threading.Lock()
_defaults: dict[str, Any] = {"config": None, "home": None, "plugin_manager": None}
_ctx_config: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("compat_config", default=None)
_ctx_home: contextvars.ContextVar[Path | None] = contextvars.ContextVar("compat_home", default=None)
_ctx_pm: contextvars.ContextVar[Any] = contextvars.ContextVar("compat_plugin_manager", default=None)


def set_defaults(*, config: dict[str, Any] | None = None, home: str | Path | None = None) -> None:
    with _lock:
        if config is not None:
            _defaults["config"] = config
        if home is not None:
            _defaults["home"] = Path(home)


def active_config() -> dict[str, Any]:
    """The config the engine should see (never ``None``: Hermes' defaults at worst)."""
    cfg = _ctx_config.get()
    if cfg is None:
        with _lock:
            cfg = _defaults["config"]
    if cfg is None:
        from inspector.config import load_config

        cfg = load_config(None)
    return cfg


def active_home() -> Path:
    """Context override → installed sandbox → ``HERMES_HOME`` → ``~/.hermes`` (Hermes' order)."""
    home = _ctx_home.get()
    if home is None:
        with _lock:
            home = _defaults["home"]
    if home is None:
        env = os.environ.get("HERMES_HOME", "").strip()
        home = Path(env).expanduser() if env else Path.home() / ".hermes"
    return home


def active_plugin_manager() -> Any:
    pm = _ctx_pm.get()
    if pm is None:
        with _lock:
            pm = _defaults["plugin_manager"]
            if pm is None:
                from inspector.engines.compat.plugins import PluginManager

                pm = _defaults["plugin_manager"] = PluginManager()
    return pm


@contextlib.contextmanager
def activate(
    *, config: dict[str, Any] | None = None, home: str | Path | None = None, plugin_manager: Any = None,
    user_home: Path | None = None,
) -> Iterator[None]:
    """Make the stand-ins answer with these values in this context; restores on exit.

    ``user_home``: what ``~`` expands to for engine code here (see ``home_mirror``).
    """
    from inspector.engines.home_mirror import using
    from inspector.llm.aux import use_aux_config

    tokens = []
    if config is not None:
        tokens.append((_ctx_config, _ctx_config.set(config)))
    if home is not None:
        tokens.append((_ctx_home, _ctx_home.set(Path(home))))
    if plugin_manager is not None:
        tokens.append((_ctx_pm, _ctx_pm.set(plugin_manager)))
    try:
        with using(user_home), use_aux_config(config) if config is not None else contextlib.nullcontext():
            yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)
