"""Where the real Hermes 0.19.0 lives for the differential tests, or why it is not there.

``make test`` installs ``hermes-agent==0.19.0`` into ``.venv-hermes`` (see the Makefile), never into
the main environment, which must keep testing our stand-ins of Hermes' modules. Tests run Hermes
code in that interpreter as a subprocess and skip, with the install's own reason, when it is absent.
``INSPECTOR_HERMES_PYTHON`` points at another interpreter that has the wheel (a worktree sharing one).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
HERMES_VERSION = "0.19.0"
FIGURES: dict[str, Any] = {}  # what the differential compared, printed in the test summary (conftest.py)


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


DRIVERS = Path(__file__).resolve().parent


class HermesRun:
    """``tests/differential/<script>`` running in the Hermes interpreter: JSON in, JSON out.

    It starts at once, in the background, so the caller can do its own half of a comparison
    meanwhile; :meth:`result` waits for the answer. ``HERMES_HOME`` is a fresh temporary folder
    (removed afterwards) and provider keys of the calling environment are not passed on unless
    given in ``env``; drivers install their own no-egress audit hook. Skips the calling test
    when Hermes is not installed; fails with the driver's stderr when it crashes.
    """

    def __init__(self, script: str, request: Any, *, timeout: float = 600, env: dict[str, str] | None = None):
        python = hermes_python()
        self.script, self.python = script, python
        self._home = tempfile.TemporaryDirectory(prefix="hermes-home-")
        child_env = {k: v for k, v in os.environ.items() if not _looks_secret(k)}
        child_env.update({"HERMES_HOME": self._home.name, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"})
        child_env.update(env or {})
        self._proc = subprocess.Popen(
            [str(python), str(DRIVERS / script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=child_env, cwd=self._home.name,
        )
        self._answer: tuple[str, str] | None = None
        self._thread = threading.Thread(target=self._talk, args=(json.dumps(request), timeout), daemon=True)
        self._thread.start()

    def _talk(self, payload: str, timeout: float) -> None:
        try:
            self._answer = self._proc.communicate(payload, timeout=timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._answer = ("", f"timed out after {timeout:.0f} s")

    def result(self) -> Any:
        self._thread.join()
        self._home.cleanup()
        out, err = self._answer or ("", "no answer")
        if self._proc.returncode != 0:
            pytest.fail(f"{self.script} failed in {self.python} (exit {self._proc.returncode}):\n{err[-4000:]}")
        return json.loads(out)


def run_in_hermes(script: str, request: Any, *, timeout: float = 600, env: dict[str, str] | None = None) -> Any:
    """:class:`HermesRun`, waited for."""
    return HermesRun(script, request, timeout=timeout, env=env).result()


def _looks_secret(name: str) -> bool:
    upper = name.upper()
    return upper.endswith(("_API_KEY", "_TOKEN", "_SECRET")) or upper in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
