"""A throw-away HERMES_HOME per replay, so engines never touch the user's real ``~/.hermes``.

Engines read ``config.yaml`` from ``get_hermes_home()`` and some write state there (indexes,
caches, logs). Each replay gets a temp directory holding the config the user chose; what the
engine writes is listed in the trace afterwards. Using the real home is possible, but only when
the caller passes it explicitly, and then only files new or changed since the start are listed.
"""

from __future__ import annotations

import atexit
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

CONFIG_NAME = "config.yaml"

# Temporary sandboxes not cleaned up yet. An interrupt can land between creating one and the
# ``try`` that would delete it; whatever is left is deleted when the interpreter exits.
_LIVE: set[Path] = set()


@atexit.register
def _remove_leftovers() -> None:
    for path in list(_LIVE):
        shutil.rmtree(path, ignore_errors=True)
    _LIVE.clear()


_SHIELD: Path | None = None


def shield_real_home() -> Path:
    """Point ``HERMES_HOME`` at a private folder for the rest of the process; returns it.

    ``get_hermes_home()`` already gives each run its own sandbox, but plugins often resolve the
    home themselves (``$HERMES_HOME``, else ``~/.hermes``) and would write to the user's real one.
    Called before any plugin code runs. The variable is process-wide, so runs share this folder;
    it is deleted when the process exits.
    """
    global _SHIELD
    if _SHIELD is None or not _SHIELD.is_dir():
        from inspector.engines.home_mirror import make_mirror, set_process_mirror

        mirror = make_mirror(None, _LIVE)  # ~ for engine code outside a run: its .hermes is this folder
        _SHIELD = mirror / ".hermes"
        set_process_mirror(mirror)
    os.environ["HERMES_HOME"] = str(_SHIELD)
    return _SHIELD


@dataclass
class Sandbox:
    path: Path
    temporary: bool
    baseline: dict[str, tuple[int, int]] = field(default_factory=dict)
    user_home: Path | None = None  # what ``~`` is for the engine (see inspector.engines.home_mirror)

    @property
    def config_path(self) -> Path:
        return self.path / CONFIG_NAME

    def cleanup(self) -> None:
        """Delete a temporary sandbox; a real home given by the user is never deleted."""
        if self.temporary:
            shutil.rmtree(self.path, ignore_errors=True)
            _LIVE.discard(self.path)
        if self.user_home is not None:
            shutil.rmtree(self.user_home, ignore_errors=True)  # links only besides the sandbox: targets stay
            _LIVE.discard(self.user_home)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


def create_sandbox(config: dict[str, Any], *, real_home: str | Path | None = None) -> Sandbox:
    """A temp HERMES_HOME with ``config.yaml`` = ``config``; or ``real_home`` when asked for."""
    from inspector.engines.home_mirror import make_mirror, real_expanduser

    if real_home is not None:
        path = real_expanduser(real_home)
        path.mkdir(parents=True, exist_ok=True)
        mirror = make_mirror(path, _LIVE)
        return Sandbox(path=path, temporary=False, baseline=_snapshot(path), user_home=mirror)
    mirror = make_mirror(None, _LIVE)  # the sandbox is the mirror's .hermes: ~/.hermes/.. stays private
    path = mirror / ".hermes"
    from inspector.llm.secrets import public_value

    # Without its keys: a copy with a key would outlive a crash or a SIGKILL in the temp folder.
    # The endpoints' keys reach the calls from the config in memory, never from this file.
    text = yaml.safe_dump(_plain(public_value(config, drop=True)), sort_keys=False, allow_unicode=True)
    (path / CONFIG_NAME).write_text(text, encoding="utf-8")
    return Sandbox(path=path, temporary=True, baseline=_snapshot(path), user_home=mirror)


def list_written_files(sandbox: Sandbox) -> list[tuple[str, int]]:
    """Files created or changed since the sandbox was made: ``(relative path, size)``, sorted."""
    out = []
    for rel, (size, mtime) in sorted(_snapshot(sandbox.path).items()):
        if sandbox.baseline.get(rel) != (size, mtime):
            out.append((rel, size))
    return out


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    found: dict[str, tuple[int, int]] = {}
    if not root.is_dir():
        return found
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            try:
                st = p.stat()
            except OSError:
                continue
            found[p.relative_to(root).as_posix()] = (st.st_size, st.st_mtime_ns)
    return found


def _plain(value: Any) -> Any:
    """Only YAML-safe types reach ``safe_dump`` (tuples → lists, other objects → str)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
