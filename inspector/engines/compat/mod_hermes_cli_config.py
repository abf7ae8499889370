"""Stand-in for ``hermes_cli.config``: the config the user chose, read from the sandbox home."""

from __future__ import annotations

from typing import Any

from inspector.engines.compat.mod_hermes_constants import get_config_path, get_hermes_home
from inspector.engines.compat.state import active_config


def load_config() -> dict[str, Any]:
    """Defaults deep-merged with ``<HERMES_HOME>/config.yaml`` (what an engine wrote wins)."""
    from inspector.config import DEFAULTS, ConfigError, deep_merge
    from inspector.config import load_config as _load

    path = get_config_path()
    if path.is_file():
        try:
            return _load(path)
        except ConfigError:
            pass
    return deep_merge(DEFAULTS, active_config())


def load_config_readonly() -> dict[str, Any]:
    return load_config()


def cfg_get(config: Any, *keys: str, default: Any = None) -> Any:
    """``cfg_get(cfg, "compression", "threshold")`` or ``cfg_get(cfg, "compression.threshold")``."""
    parts: list[str] = []
    for key in keys:
        parts.extend(str(key).split(".") if len(keys) == 1 else [str(key)])
    node = config
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


__all__ = ["get_hermes_home", "get_config_path", "load_config", "load_config_readonly", "cfg_get"]
