"""Stand-in for ``hermes_constants``: HERMES_HOME resolves to the replay's sandbox."""

from __future__ import annotations

from pathlib import Path

from inspector.engines.compat.state import active_home


def get_hermes_home() -> Path:
    return active_home()


def get_config_path() -> Path:
    return active_home() / "config.yaml"


def display_hermes_home() -> str:
    """``~/…`` form when under the user's home (as Hermes prints it), else the full path."""
    home = active_home()
    try:
        return "~/" + str(home.relative_to(Path.home()))
    except ValueError:
        return str(home)


__all__ = ["get_hermes_home", "get_config_path", "display_hermes_home"]
