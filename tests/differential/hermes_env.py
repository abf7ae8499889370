"""Where the real Hermes 0.19.0 lives for the differential tests, or why it is not there.

``make test`` installs ``hermes-agent==0.19.0`` into ``.venv-hermes`` (see the Makefile), never into
the main environment, which must keep testing our stand-ins of Hermes' modules. Tests run Hermes
code in that interpreter as a subprocess and skip, with the install's own reason, when it is absent.
``INSPECTOR_HERMES_PYTHON`` points at another interpreter that has the wheel (a worktree sharing one).
"""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERMES_VERSION = "0.19.0"


def _venv() -> Path:
    return REPO / ".venv-hermes"


@functools.lru_cache(maxsize=1)
def _probe() -> tuple[Path | None, str]:
    """(interpreter, "") when Hermes imports there, else (None, the reason)."""
    named = os.environ.get("INSPECTOR_HERMES_PYTHON")
    python = Path(named) if named else _venv() / "bin" / "python"
    if not python.exists():
        failed = _venv() / ".failed"
        why = failed.read_text(errors="replace").strip() if failed.exists() else "run `make hermes-env`"
        return None, f"hermes-agent=={HERMES_VERSION} is not installed at {python.parent.parent}: {why}"
    probe = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m, agent.context_compressor; "
         "print(m.version('hermes-agent'))"],
        capture_output=True, text=True, timeout=120,
    )
    if probe.returncode != 0:
        return None, f"Hermes does not import in {python}: {probe.stderr.strip().splitlines()[-1:]}"
    version = probe.stdout.strip()
    if version != HERMES_VERSION:
        return None, f"{python} has hermes-agent {version}, the differential tests pin {HERMES_VERSION}"
    return python, ""


def hermes_python() -> Path:
    """The interpreter that imports Hermes 0.19.0; skips the calling test with the reason otherwise."""
    python, why = _probe()
    if python is None:
        pytest.skip(why)
    return python
